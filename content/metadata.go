package content

import (
	"slices"
	"strings"
)

// namedMeta maps <meta> names to the camel-case members Firecrawl gives
// them. Each meta also appears under its own name.
var namedMeta = map[string]string{
	"description":            "description",
	"keywords":               "keywords",
	"robots":                 "robots",
	"og:title":               "ogTitle",
	"og:description":         "ogDescription",
	"og:url":                 "ogUrl",
	"og:image":               "ogImage",
	"og:audio":               "ogAudio",
	"og:determiner":          "ogDeterminer",
	"og:locale":              "ogLocale",
	"og:site_name":           "ogSiteName",
	"og:video":               "ogVideo",
	"dcterms.created":        "dcTermsCreated",
	"dc.date.created":        "dcDateCreated",
	"dc.date":                "dcDate",
	"dcterms.type":           "dcTermsType",
	"dc.type":                "dcType",
	"dcterms.audience":       "dcTermsAudience",
	"dcterms.subject":        "dcTermsSubject",
	"dc.subject":             "dcSubject",
	"dc.description":         "dcDescription",
	"dcterms.keywords":       "dcTermsKeywords",
	"article:modified_time":  "modifiedTime",
	"article:published_time": "publishedTime",
	"article:tag":            "articleTag",
	"article:section":        "articleSection",
}

// metadata builds the page metadata in Firecrawl's shape. Empty values are
// left out.
func (p *page) metadata() map[string]any {
	md := make(map[string]any, len(p.metas)+8)

	// Every meta under its own name; a name that repeats with different
	// values becomes a list.
	for _, m := range p.metas {
		switch prev := md[m.name].(type) {
		case nil:
			md[m.name] = m.content
		case string:
			if prev != m.content {
				md[m.name] = []string{prev, m.content}
			}
		case []string:
			if !slices.Contains(prev, m.content) {
				md[m.name] = append(prev, m.content)
			}
		}
	}

	// The named members take the first value of their meta (the Dublin Core
	// names are matched case-insensitively: pages write DC.date and
	// DCTERMS.created).
	var alternates []string
	named := make(map[string]bool)
	for _, m := range p.metas {
		name := m.name
		if strings.HasPrefix(name, "DC") || strings.HasPrefix(name, "Dc") || strings.HasPrefix(name, "dc") {
			name = strings.ToLower(name)
		}
		if name == "og:locale:alternate" {
			if !slices.Contains(alternates, m.content) {
				alternates = append(alternates, m.content)
			}
			continue
		}
		key, ok := namedMeta[name]
		if !ok {
			continue
		}
		if named[key] {
			continue // the first value wins
		}
		named[key] = true
		md[key] = m.content
	}
	if len(alternates) > 0 {
		md["ogLocaleAlternate"] = alternates
	}

	if p.title != "" {
		md["title"] = p.title
	}
	if p.lang != "" {
		md["language"] = p.lang
	}
	if fav := p.favicon(); fav != "" {
		md["favicon"] = fav
	}
	return md
}

// favicon returns the absolute URL of the page's icon: a rel="icon" link
// first, any other *icon* link (apple-touch-icon…) after.
func (p *page) favicon() string {
	pick := ""
	for _, ic := range p.icons {
		if hasToken(ic.rel, "icon") {
			pick = ic.href
			break
		}
		if pick == "" {
			pick = ic.href
		}
	}
	if pick == "" {
		return ""
	}
	if u := p.resolve(pick); u != nil {
		return u.String()
	}
	return pick
}

func hasToken(list, tok string) bool {
	for _, t := range strings.Fields(list) {
		if t == tok {
			return true
		}
	}
	return false
}
