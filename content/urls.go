package content

import (
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// links returns the page's http(s) links: absolute, without fragments or
// credentials (user:password@ is never passed on), deduplicated, in document
// order. Links to the page itself (href="" or
// "#…") are left out, as Firecrawl does.
func (p *page) links() []string {
	out := make([]string, 0, len(p.hrefs))
	seen := make(map[string]bool, len(p.hrefs))
	for _, h := range p.hrefs {
		h = strings.TrimSpace(h)
		if h == "" || h[0] == '#' {
			continue
		}
		u := p.resolve(h)
		if u == nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			continue
		}
		u.Fragment, u.RawFragment = "", ""
		u.User = nil
		u.Host = lower(u.Host)
		s := u.String()
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// images returns the page's http(s) image URLs, absolute and deduplicated:
// og:image first (the head comes first), then each image in document
// order.
func (p *page) images() []string {
	imgs := p.pageImages()
	out := make([]string, 0, len(imgs))
	seen := make(map[string]bool, len(imgs))
	for _, im := range imgs {
		if !seen[im.url] {
			seen[im.url] = true
			out = append(out, im.url)
		}
	}
	return out
}

// imageDetails returns one ImageRef per distinct image URL, in the order
// of pageImages, leaving out tracking pixels and the srcset candidates
// that images lists next to an <img>'s src. An image met again fills the
// alt text and the size its first entry lacks.
func (p *page) imageDetails() []ImageRef {
	imgs := p.pageImages()
	out := make([]ImageRef, 0, len(imgs))
	at := make(map[string]int, len(imgs))
	for _, im := range imgs {
		if im.variant || im.pixel {
			continue
		}
		i, ok := at[im.url]
		if !ok {
			at[im.url] = len(out)
			out = append(out, ImageRef{URL: im.url, Alt: im.alt, Width: im.width, Height: im.height})
			continue
		}
		r := &out[i]
		if r.Alt == "" {
			r.Alt = im.alt
		}
		// A size is filled from one that agrees with what is known, so
		// that a width and a height never come from two renditions.
		switch {
		case r.Width == 0 && r.Height == 0:
			r.Width, r.Height = im.width, im.height
		case r.Width == 0 && r.Height == im.height:
			r.Width = im.width
		case r.Height == 0 && r.Width == im.width:
			r.Height = im.height
		}
	}
	return out
}

// pageImages returns the page's images with absolute http(s) URLs: the
// og:images first (the head comes first), then the <img> and <picture>
// images in document order. Those whose URL is not an http(s) one (data:
// URLs, relative URLs on a page of unknown address) are left out. It is
// the one source of both Images and ImageDetails.
func (p *page) pageImages() []pageImage {
	all := append(p.ogImages(), p.imgs...)
	out := all[:0]
	for _, im := range all {
		if hasScheme(im.url, "data") {
			continue
		}
		u := p.resolve(im.url)
		if u == nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			continue
		}
		u.User = nil
		u.Host = lower(u.Host)
		im.url = u.String()
		out = append(out, im)
	}
	return out
}

// ogImages returns the page's og:images with their og:image:alt,
// og:image:width and og:image:height: Open Graph's structured properties
// describe the og:image before them.
func (p *page) ogImages() []pageImage {
	type og struct{ url, alt, width, height string }
	var ogs []og
	for _, m := range p.metas {
		if m.name == "og:image" {
			ogs = append(ogs, og{url: m.content})
			continue
		}
		if len(ogs) == 0 {
			continue
		}
		last := &ogs[len(ogs)-1]
		var field *string
		switch m.name {
		case "og:image:alt":
			field = &last.alt
		case "og:image:width":
			field = &last.width
		case "og:image:height":
			field = &last.height
		default:
			continue
		}
		if *field == "" { // the first value wins
			*field = m.content
		}
	}
	out := make([]pageImage, 0, len(ogs))
	for _, o := range ogs {
		out = append(out, newPageImage(o.url, collapseSpace(o.alt), o.width, o.height))
	}
	return out
}

// ownURL is the page's URL, parsed; nil when it is not an absolute one.
func (p *page) ownURL() *url.URL {
	u, err := url.Parse(strings.TrimSpace(p.pageURL))
	if err != nil || !u.IsAbs() {
		return nil
	}
	return u
}

// resolve parses the raw URL and resolves it against the page's base;
// nil when it is invalid or stays relative.
func (p *page) resolve(raw string) *url.URL {
	raw = strings.TrimSpace(raw)
	if strings.ContainsAny(raw, "\t\n\r") {
		// Browsers drop ASCII tabs and newlines inside URLs.
		raw = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	if p.base != nil {
		u = p.base.ResolveReference(u)
	}
	if !u.IsAbs() {
		return nil
	}
	return u
}

// absolutize makes the relative URLs under n absolute, for the HTML output.
func (p *page) absolutize(n *html.Node) {
	if p.base == nil {
		return
	}
	if n.Type == html.ElementNode {
		for i := range n.Attr {
			a := &n.Attr[i]
			switch a.Key {
			case "href", "src", "poster", "action", "data-src":
				if v, ok := p.absolute(a.Val); ok {
					a.Val = v
				}
			case "srcset":
				if n.DataAtom == atom.Img || n.DataAtom == atom.Source {
					a.Val = p.absoluteSrcset(a.Val)
				}
			}
		}
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		p.absolutize(c)
	}
}

// absolute resolves a relative URL against the base; URLs with a scheme
// are left as they are.
func (p *page) absolute(raw string) (string, bool) {
	s := strings.TrimSpace(raw)
	if s == "" || schemeLen(s) > 0 {
		return "", false
	}
	u := p.resolve(s)
	if u == nil {
		return "", false
	}
	return u.String(), true
}

func (p *page) absoluteSrcset(srcset string) string {
	cands := parseSrcset(srcset)
	if len(cands) == 0 {
		return srcset
	}
	var b strings.Builder
	for i, c := range cands {
		if i > 0 {
			b.WriteString(", ")
		}
		if v, ok := p.absolute(c.url); ok {
			b.WriteString(v)
		} else {
			b.WriteString(c.url)
		}
		if c.descriptor != "" {
			b.WriteByte(' ')
			b.WriteString(c.descriptor)
		}
	}
	return b.String()
}

// schemeLen returns the length of s's "scheme:" prefix, or 0.
func schemeLen(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return i + 1
		default:
			return 0
		}
	}
	return 0
}

// srcCandidate is one image candidate of a srcset.
type srcCandidate struct {
	url        string
	descriptor string  // as written, e.g. "640w", "2x"; may be empty
	w          float64 // width descriptor, 0 when absent
	x          float64 // density descriptor, 1 when absent
}

// parseSrcset splits a srcset attribute into its candidates, following the
// HTML parsing rules closely enough for real pages: URLs may contain
// commas, descriptors end at a comma outside parentheses.
func parseSrcset(s string) []srcCandidate {
	var out []srcCandidate
	i := 0
	for i < len(s) {
		for i < len(s) && (isSpace(s[i]) || s[i] == ',') {
			i++
		}
		start := i
		for i < len(s) && !isSpace(s[i]) {
			i++
		}
		u := s[start:i]
		desc := ""
		if strings.HasSuffix(u, ",") {
			u = strings.TrimRight(u, ",")
		} else {
			ds, depth := i, 0
			for ; i < len(s); i++ {
				if s[i] == '(' {
					depth++
				} else if s[i] == ')' && depth > 0 {
					depth--
				} else if s[i] == ',' && depth == 0 {
					break
				}
			}
			desc = strings.TrimSpace(s[ds:i])
		}
		if u == "" {
			continue
		}
		c := srcCandidate{url: u, descriptor: desc, x: 1}
		for _, d := range strings.Fields(desc) {
			v, err := strconv.ParseFloat(d[:len(d)-1], 64)
			if err != nil || v <= 0 {
				continue
			}
			switch d[len(d)-1] {
			case 'w':
				c.w = v
			case 'x':
				c.x = v
			}
		}
		out = append(out, c)
	}
	return out
}

// largestCandidate returns the URL of the largest candidate of a srcset:
// the widest by w descriptor when there are any, else the densest by x
// descriptor. The first wins ties; "" when there is none.
func largestCandidate(srcset string) string {
	if strings.TrimSpace(srcset) == "" {
		return ""
	}
	cands := parseSrcset(srcset)
	best := -1
	for i, c := range cands {
		switch {
		case best < 0:
			best = i
		case c.w > 0 || cands[best].w > 0:
			if c.w > cands[best].w {
				best = i
			}
		case c.x > cands[best].x:
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	return cands[best].url
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
}
