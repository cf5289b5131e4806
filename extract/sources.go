package extract

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Sources are what showSources reports, as Firecrawl does: for each field
// of the result, by its path (name, products[0].price), the URLs of the
// pages it was read from.
type Sources map[string][]string

// sourcesOf attributes each leaf of data to the pages whose text holds
// its value. The model reads every page in one call and does not say
// which one a value came from; a value no page's text holds (a number
// the model wrote another way, a boolean, a summary in its own words) is
// attributed to every page read.
func sourcesOf(data json.RawMessage, pages []page) Sources {
	var v any
	out := Sources{}
	if json.Unmarshal(data, &v) != nil {
		return out
	}
	texts := make([]string, len(pages))
	for i, p := range pages {
		texts[i] = normalizeText(p.markdown)
	}
	walkLeaves(v, "", func(path string, leaf any) {
		needle := leafText(leaf)
		var urls []string
		if needle != "" {
			for i, p := range pages {
				if strings.Contains(texts[i], needle) {
					urls = append(urls, p.url)
				}
			}
		}
		if len(urls) == 0 {
			for _, p := range pages {
				urls = append(urls, p.url)
			}
		}
		out[path] = urls
	})
	return out
}

// walkLeaves calls leaf for every scalar of v with its path.
func walkLeaves(v any, path string, leaf func(path string, v any)) {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			walkLeaves(t[k], p, leaf)
		}
	case []any:
		for i, e := range t {
			walkLeaves(e, fmt.Sprintf("%s[%d]", path, i), leaf)
		}
	default:
		if path != "" {
			leaf(path, v)
		}
	}
}

// leafText is what of a leaf a page's text would hold: "" for what no
// text shows as such (true, null, an empty string).
func leafText(v any) string {
	switch t := v.(type) {
	case string:
		return normalizeText(t)
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	}
	return ""
}

// normalizeText lower-cases s and collapses its runs of white space, so
// that a value matches the page's text across line breaks and case.
func normalizeText(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

// legacySources reads the sources an extract stored before they were kept
// by field: the list of pages read, attributed to every field.
func legacySources(raw []byte, result json.RawMessage) (Sources, bool) {
	var urls []string
	if json.Unmarshal(raw, &urls) != nil {
		return nil, false
	}
	pages := make([]page, len(urls))
	for i, u := range urls {
		pages[i] = page{url: u}
	}
	return sourcesOf(result, pages), true
}
