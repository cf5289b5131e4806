package discover

import (
	"bytes"
	"net/url"

	"golang.org/x/net/html"
)

// Links returns the targets of the <a href> and <area href> elements of the
// HTML document fetched from base, resolved with Resolve (so fragments,
// javascript:, mailto: and the like are gone) and without duplicates, in
// document order. A <base href> in the document is honoured.
//
// It runs on every crawled page, so it streams through the tokenizer
// instead of building a DOM, and copies only the href values it keeps.
func Links(base *url.URL, doc []byte) []*url.URL {
	var (
		hrefs    []string
		docBase  string
		haveBase bool
		rawSeen  = map[string]bool{}
	)
	z := html.NewTokenizer(bytes.NewReader(doc))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break // io.EOF, or a read error that cannot happen on a byte slice
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		name, hasAttr := z.TagName()
		if !hasAttr {
			continue
		}
		isBase := string(name) == "base" // the conversion does not allocate
		if !isBase && string(name) != "a" && string(name) != "area" {
			continue
		}
		for hasAttr {
			var key, val []byte
			key, val, hasAttr = z.TagAttr()
			if string(key) != "href" {
				continue
			}
			switch {
			case !isBase:
				// Menus and footers repeat the same hrefs on every page;
				// the lookup does not allocate, so repeats cost nothing.
				if !rawSeen[string(val)] {
					h := string(val)
					rawSeen[h] = true
					hrefs = append(hrefs, h)
				}
			case !haveBase:
				// Only the first <base href> counts, as in browsers.
				docBase, haveBase = string(val), true
			}
			break
		}
	}

	// Resolution waits until the whole document has been read because a
	// <base href> applies to links that come before it too.
	if haveBase {
		if b, ok := Resolve(base, docBase); ok {
			base = b
		}
	}
	seen := make(map[string]bool, len(hrefs))
	links := make([]*url.URL, 0, len(hrefs))
	for _, h := range hrefs {
		u, ok := Resolve(base, h)
		if !ok {
			continue
		}
		s := u.String()
		if seen[s] {
			continue
		}
		seen[s] = true
		links = append(links, u)
	}
	return links
}
