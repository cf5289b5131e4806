package content

import (
	"encoding/json"
	"iter"
	"slices"
	"strings"
	"time"
)

// published returns the page's publication date in UTC, zero when it
// gives none: the first value, in the order Transform documents, that
// reads as a date no more than a day after now. Clocks and time zones
// differ, hence the day; a date further ahead is a placeholder or an
// event's date, not the article's.
func (p *page) published(now time.Time) time.Time {
	latest := now.Add(24 * time.Hour)
	sources := []iter.Seq[string]{
		p.metaValues("article:published_time"),
		p.metaValues("og:published_time", "og:article:published_time"),
		slices.Values(p.itemDates),
		p.jsonLDDates,
		p.metaValues("date"),
		p.metaValues("DC.date.issued", "dcterms.issued"),
		p.metaValues("DC.date"),
		p.metaValues("parsely-pub-date"),
		p.metaValues("sailthru.date"),
		slices.Values(p.timeDates),
	}
	for _, values := range sources {
		for v := range values {
			if t, ok := parseDate(v); ok && !t.After(latest) {
				return t.UTC()
			}
		}
	}
	return time.Time{}
}

// metaValues yields, in document order, the content of the metas named
// one of names, matched case-insensitively (pages write DC.date and
// dc.date alike).
func (p *page) metaValues(names ...string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for _, m := range p.metas {
			for _, n := range names {
				if strings.EqualFold(m.name, n) {
					if !yield(m.content) {
						return
					}
					break
				}
			}
		}
	}
}

// jsonLDDates yields the datePublished strings of the page's JSON-LD
// scripts, in document order. The scripts are decoded only when asked:
// the metas usually answer first. A script that is not valid JSON is
// passed over.
func (p *page) jsonLDDates(yield func(string) bool) {
	for _, text := range p.jsonLD {
		var doc any
		if err := json.Unmarshal([]byte(text), &doc); err != nil {
			continue
		}
		if !jsonLDDate(doc, yield) {
			return
		}
	}
}

// jsonLDDate yields the datePublished of the JSON-LD value v: an object's
// own, then those of the objects in its @graph; each object's of an array.
// Other nested objects (an article's author, its publisher) are not
// searched: their dates are not the article's. It returns false when
// yield asks to stop.
func jsonLDDate(v any, yield func(string) bool) bool {
	switch v := v.(type) {
	case map[string]any:
		if s, ok := v["datePublished"].(string); ok {
			if !yield(s) {
				return false
			}
		}
		if g, ok := v["@graph"]; ok {
			return jsonLDDate(g, yield)
		}
	case []any:
		for _, item := range v {
			if !jsonLDDate(item, yield) {
				return false
			}
		}
	}
	return true
}

// dateLayouts are the date forms parseDate reads: RFC 3339 with and
// without seconds and zone (and with a zone written without a colon, as
// many pages do), a plain date, a date and time, and RFC 1123. A value
// without a zone is taken as UTC.
var dateLayouts = []string{
	"2006-01-02T15:04:05Z07:00",
	"2006-01-02T15:04:05Z0700",
	"2006-01-02T15:04:05",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04Z0700",
	"2006-01-02T15:04",
	"2006-01-02",
	"2006-01-02 15:04:05",
	time.RFC1123,
	time.RFC1123Z,
}

// parseDate reads v in one of dateLayouts; ok is false when it is none
// of them or gives the zero time (a placeholder such as
// 0001-01-01T00:00:00).
func parseDate(v string) (t time.Time, ok bool) {
	v = strings.TrimSpace(v)
	for _, layout := range dateLayouts {
		if t, err := time.Parse(layout, v); err == nil && !t.IsZero() {
			return t, true
		}
	}
	return time.Time{}, false
}

// ogArticle reports whether the page's Open Graph type is an article.
func (p *page) ogArticle() bool {
	for v := range p.metaValues("og:type") {
		if strings.EqualFold(strings.TrimSpace(v), "article") {
			return true
		}
	}
	return false
}
