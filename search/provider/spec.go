package provider

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// Kinds of Spec.
const (
	KindIndex   = "index"
	KindSearXNG = "searxng"
	KindHTTP    = "http"
)

// Spec is one entry of TRAWLER_SEARCH_PROVIDERS.
type Spec struct {
	// Kind is KindIndex, KindSearXNG or KindHTTP.
	Kind string
	// URL is the SearXNG base URL (no trailing slash) or the http URL
	// template without its fragment; empty for the index.
	URL string
	// Paths says where an http provider's answer keeps its hits; zero for
	// the other kinds.
	Paths Paths
}

// Paths locate hits in an http provider's JSON answer. Each is a path as
// described in the package comment, alternatives joined by '|'; empty means
// the field is not read.
type Paths struct {
	Results     string
	URL         string
	Title       string
	Description string
	Published   string
	Image       string
	Width       string
	Height      string
}

// defaultPaths are the paths of an http template whose fragment does not
// set them.
var defaultPaths = Paths{
	Results:     "results",
	URL:         "url",
	Title:       "title",
	Description: "description|content|snippet",
}

// String renders the entry as it would be written, with credentials in the
// URL masked.
func (s Spec) String() string {
	if s.Kind == KindIndex {
		return KindIndex
	}
	return s.Kind + ":" + redactTemplate(s.URL)
}

// placeholders are the names an http template may use.
var placeholders = map[string]bool{"query": true, "limit": true, "source": true, "lang": true, "country": true}

var placeholderRE = regexp.MustCompile(`\{([^{}]*)\}`)

// ParseSpecs parses TRAWLER_SEARCH_PROVIDERS: entries separated by ';' or
// newlines, surrounding whitespace ignored. An empty value (or one holding
// only separators) means the embedded index alone. Errors name each bad
// entry (by position, credentials masked) and the rule it breaks; the
// caller adds the setting's name.
func ParseSpecs(s string) ([]Spec, error) {
	entries := strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == '\n' || r == '\r' })
	var specs []Spec
	var errs []error
	for i, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		spec, err := parseSpec(e)
		if err != nil {
			errs = append(errs, fmt.Errorf("entry %d %q: %w", i+1, redactTemplate(e), err))
			continue
		}
		specs = append(specs, spec)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(specs) == 0 {
		return []Spec{{Kind: KindIndex}}, nil
	}
	return specs, nil
}

func parseSpec(e string) (Spec, error) {
	if strings.EqualFold(e, KindIndex) {
		return Spec{Kind: KindIndex}, nil
	}
	kind, rest, ok := strings.Cut(e, ":")
	if !ok {
		return Spec{}, errors.New(`unknown kind: want "index", "searxng:<base URL>" or "http:<URL template>"`)
	}
	rest = strings.TrimSpace(rest)
	switch strings.ToLower(strings.TrimSpace(kind)) {
	case KindIndex:
		return Spec{}, errors.New(`"index" takes no argument`)
	case KindSearXNG:
		base, err := parseSearXNGBase(rest)
		if err != nil {
			return Spec{}, err
		}
		return Spec{Kind: KindSearXNG, URL: base.String()}, nil
	case KindHTTP:
		if strings.HasPrefix(rest, "//") {
			// "http://host/..." read as kind http, template "//host/...".
			return Spec{}, errors.New(`the template must be an absolute http(s) URL after the kind: write "http:https://host/path?q={query}"`)
		}
		tmpl, paths, err := parseTemplate(rest)
		if err != nil {
			return Spec{}, err
		}
		return Spec{Kind: KindHTTP, URL: tmpl, Paths: paths}, nil
	}
	return Spec{}, fmt.Errorf(`unknown kind %q: want "index", "searxng" or "http"`, kind)
}

// parseSearXNGBase checks a SearXNG base URL: absolute http(s), no query or
// fragment (the adapter appends /search and its own parameters).
func parseSearXNGBase(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("base URL %q is not an absolute http(s) URL", redactTemplate(s))
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("base URL %q is not an absolute http(s) URL", u.Redacted())
	}
	if u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return nil, fmt.Errorf("base URL %q has a query or fragment: give the instance's root, the adapter adds /search and its parameters", u.Redacted())
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// parseTemplate checks an http URL template and reads the result paths in
// its fragment.
func parseTemplate(s string) (string, Paths, error) {
	tmpl, frag, _ := strings.Cut(s, "#")
	if tmpl == "" {
		return "", Paths{}, errors.New("empty URL template")
	}
	hasQuery := false
	for _, m := range placeholderRE.FindAllStringSubmatch(tmpl, -1) {
		if !placeholders[m[1]] {
			return "", Paths{}, fmt.Errorf("unknown placeholder {%s}: the template may use {query}, {limit}, {source}, {lang} and {country}", m[1])
		}
		hasQuery = hasQuery || m[1] == "query"
	}
	if !hasQuery {
		return "", Paths{}, errors.New("template without {query}: put {query} where the endpoint takes the search text")
	}
	sample := expand(tmpl, Query{Text: "q", Source: SourceWeb, Limit: 10, Language: "en", Country: "US"})
	u, err := url.Parse(sample)
	if err != nil {
		return "", Paths{}, fmt.Errorf("template is not a URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", Paths{}, errors.New("template is not an absolute http(s) URL")
	}
	paths, err := parsePaths(frag)
	if err != nil {
		return "", Paths{}, err
	}
	return tmpl, paths, nil
}

// parsePaths reads "results=data.items&url=link&..." over defaultPaths.
func parsePaths(frag string) (Paths, error) {
	p := defaultPaths
	if frag == "" {
		return p, nil
	}
	values, err := url.ParseQuery(frag)
	if err != nil {
		return Paths{}, fmt.Errorf("result paths after '#': %w", err)
	}
	fields := map[string]*string{
		"results": &p.Results, "url": &p.URL, "title": &p.Title, "description": &p.Description,
		"published": &p.Published, "image": &p.Image, "width": &p.Width, "height": &p.Height,
	}
	for k, vs := range values {
		f, ok := fields[k]
		if !ok {
			return Paths{}, fmt.Errorf("result paths after '#': unknown key %q: want results, url, title, description, published, image, width or height", k)
		}
		if len(vs) > 1 {
			return Paths{}, fmt.Errorf("result paths after '#': %q given %d times: join alternatives with '|'", k, len(vs))
		}
		v := strings.TrimSpace(vs[0])
		if v == "" {
			return Paths{}, fmt.Errorf("result paths after '#': %q is empty", k)
		}
		for _, alt := range strings.Split(v, "|") {
			if alt != "." && (alt == "" || strings.HasPrefix(alt, ".") || strings.HasSuffix(alt, ".") || strings.Contains(alt, "..")) {
				return Paths{}, fmt.Errorf("result paths after '#': %s=%q: a path is keys joined by single dots", k, v)
			}
		}
		*f = v
	}
	if p.URL == "." {
		return Paths{}, errors.New(`result paths after '#': url="." would take the whole hit as its URL`)
	}
	return p, nil
}

// redactTemplate masks user info and query values in a URL or template so
// that API keys stay out of errors and logs; placeholders stay readable.
func redactTemplate(s string) string {
	kind := ""
	if k, rest, ok := strings.Cut(s, ":"); ok && (k == KindSearXNG || k == KindHTTP) && !strings.HasPrefix(rest, "//") {
		kind, s = k+":", rest
	}
	s, _, _ = strings.Cut(s, "#")
	base, query, hasQuery := strings.Cut(s, "?")
	if u, err := url.Parse(base); err == nil && u.User != nil {
		base = u.Redacted()
	}
	if !hasQuery {
		return kind + base
	}
	parts := strings.Split(query, "&")
	for i, part := range parts {
		k, v, ok := strings.Cut(part, "=")
		if ok && !placeholderRE.MatchString(v) {
			parts[i] = k + "=xxxxx"
		}
	}
	return kind + base + "?" + strings.Join(parts, "&")
}

// New builds the provider a searxng or http Spec describes; client carries
// its requests (nil means a client of its own, bounded by each call's ctx).
// The index is not built here: the search package owns it.
func New(spec Spec, client *http.Client) (Provider, error) {
	if client == nil {
		client = &http.Client{}
	}
	switch spec.Kind {
	case KindSearXNG:
		return NewSearXNG(spec.URL, client)
	case KindHTTP:
		return NewHTTP(spec, client)
	case KindIndex:
		return nil, errors.New("the index provider is built by the search package, not provider.New")
	}
	return nil, fmt.Errorf("unknown provider kind %q", spec.Kind)
}
