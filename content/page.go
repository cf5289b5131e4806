package content

import (
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// page is one parsed document and what a single walk over it found.
type page struct {
	root *html.Node
	html *html.Node
	head *html.Node
	body *html.Node

	pageURL  string
	base     *url.URL // pageURL with <base href> applied; nil when unknown
	baseHref string

	title string
	lang  string
	metas []metaTag
	icons []iconLink

	hrefs []string    // raw a/area hrefs, document order
	imgs  []pageImage // <img> and <picture> images, document order

	// Where the page may give its publication date (see published).
	itemDates []string // itemprop=datePublished values, document order
	jsonLD    []string // JSON-LD scripts that mention datePublished
	timeDates []string // datetime of <time>s in <article> or <main> or with pubdate

	// Elements the main-content filter builds on.
	mains    []*html.Node // <main> and [role=main]
	idMains  []*html.Node // #main
	articles []*html.Node // outermost <article>s
	hidden   []*html.Node // [hidden], display:none, visibility:hidden
}

type metaTag struct{ name, content string }

type iconLink struct{ rel, href string }

// pageImage is one image reference as the page writes it, with what the
// page says about the image.
type pageImage struct {
	url           string // raw: resolved by pageImages
	alt           string
	width, height int  // 0 unless given as a plain number of pixels
	pixel         bool // both sizes given and at most 2: a tracking pixel
	// variant marks an <img>'s largest srcset candidate next to its src:
	// listed in Images, while ImageDetails describes the src.
	variant bool
}

// newPageImage makes the pageImage of url from its width and height
// attributes.
func newPageImage(url, alt, width, height string) pageImage {
	w, wok := imageSize(width)
	h, hok := imageSize(height)
	return pageImage{url: url, alt: alt, width: w, height: h, pixel: wok && hok && w <= 2 && h <= 2}
}

// imageSize reads a width or height attribute: a plain integer of pixels,
// "NNN" or "NNNpx". ok is false for anything else ("50%", "auto", "").
func imageSize(v string) (n int, ok bool) {
	v = strings.TrimSuffix(lower(strings.TrimSpace(v)), "px")
	if v == "" {
		return 0, false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(v)
	if err != nil { // out of range
		return 0, false
	}
	return n, true
}

func newPage(root *html.Node, pageURL string) *page {
	p := &page{root: root, pageURL: pageURL}
	for c := root.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.DataAtom == atom.Html {
			p.html = c
		}
	}
	if p.html == nil { // html.Parse always makes one; be safe anyway
		p.html = &html.Node{Type: html.ElementNode, Data: "html", DataAtom: atom.Html}
		root.AppendChild(p.html)
	}
	for c := p.html.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode {
			continue
		}
		switch c.DataAtom {
		case atom.Head:
			p.head = c
		case atom.Body:
			p.body = c
		}
	}
	if p.body == nil { // a frameset document
		p.body = &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body}
		p.html.AppendChild(p.body)
	}
	return p
}

// walkState is what collect knows about a node's ancestors.
type walkState struct {
	inSVG     bool
	inArticle bool
	inMain    bool
}

// collect walks the whole document once: it gathers metadata, links and
// images, records the elements the main-content filter needs, and removes
// what never belongs in the output (scripts, styles, comments, head
// metadata, permalink anchors).
func (p *page) collect() {
	p.lang = strings.TrimSpace(attr(p.html, "lang"))
	p.walk(p.html, walkState{})
	if p.head != nil {
		detach(p.head)
	}
	p.resolveBase()
}

func (p *page) walk(n *html.Node, st walkState) {
	var next *html.Node
	for c := n.FirstChild; c != nil; c = next {
		next = c.NextSibling
		switch c.Type {
		case html.CommentNode, html.DoctypeNode:
			n.RemoveChild(c)
			continue
		case html.ElementNode:
		default:
			continue
		}
		if p.element(c, st) {
			n.RemoveChild(c)
			continue
		}
		cst := st
		switch c.DataAtom {
		case atom.Svg:
			cst.inSVG = true
		case atom.Article:
			cst.inArticle = true
		case atom.Main:
			cst.inMain = true
		}
		p.walk(c, cst)
	}
}

// element records what c contributes and reports whether it is to be
// removed. Its children are not visited yet.
func (p *page) element(c *html.Node, st walkState) (remove bool) {
	switch c.DataAtom {
	case atom.Script:
		if strings.EqualFold(strings.TrimSpace(attr(c, "type")), "application/ld+json") {
			if text := textOf(c); strings.Contains(text, "datePublished") {
				p.jsonLD = append(p.jsonLD, text)
			}
		}
		return true
	case atom.Style, atom.Noscript, atom.Template:
		return true
	case atom.Meta:
		p.meta(c)
		return true
	case atom.Link:
		if rel := strings.ToLower(attr(c, "rel")); strings.Contains(rel, "icon") {
			if href := strings.TrimSpace(attr(c, "href")); href != "" {
				p.icons = append(p.icons, iconLink{rel: rel, href: href})
			}
		}
		return true
	case atom.Base:
		if p.baseHref == "" {
			p.baseHref = strings.TrimSpace(attr(c, "href"))
		}
		return true
	case atom.Title:
		if !st.inSVG && p.title == "" {
			p.title = collapseSpace(textOf(c))
		}
	case atom.A, atom.Area:
		href, ok := attrOK(c, "href")
		if !ok {
			break
		}
		p.hrefs = append(p.hrefs, href)
		if isPermalink(c, href) {
			return true
		}
	case atom.Img:
		p.image(c)
	case atom.Source:
		if c.Parent != nil && c.Parent.DataAtom == atom.Picture {
			if best := largestCandidate(attr(c, "srcset")); best != "" {
				// A source is a rendition of the picture its <img>
				// describes: it shares that alt text.
				p.imgs = append(p.imgs, newPageImage(best, pictureAlt(c.Parent), attr(c, "width"), attr(c, "height")))
			}
		}
	case atom.Time:
		if dt := strings.TrimSpace(attr(c, "datetime")); dt != "" {
			if _, pubdate := attrOK(c, "pubdate"); pubdate || st.inArticle || st.inMain {
				p.timeDates = append(p.timeDates, dt)
			}
		}
	case atom.Pre:
		codeLanguage(c)
	case atom.Main:
		p.mains = append(p.mains, c)
	case atom.Article:
		if !st.inArticle {
			p.articles = append(p.articles, c)
		}
	}
	for _, a := range c.Attr {
		switch a.Key {
		case "role":
			if strings.EqualFold(strings.TrimSpace(a.Val), "main") && c.DataAtom != atom.Main {
				p.mains = append(p.mains, c)
			}
		case "itemprop":
			if hasToken(a.Val, "datePublished") {
				p.itemDates = append(p.itemDates, itemDate(c))
			}
		case "id":
			if a.Val == "main" {
				p.idMains = append(p.idMains, c)
			}
		case "hidden":
			// hidden="until-found" is collapsed content that find-in-page
			// opens: content.
			if !strings.EqualFold(a.Val, "until-found") {
				p.hidden = append(p.hidden, c)
			}
		case "style":
			if hiddenStyle(a.Val) {
				p.hidden = append(p.hidden, c)
			}
		case "class":
			if hiddenClass(a.Val) {
				p.hidden = append(p.hidden, c)
			}
		}
	}
	return false
}

// meta records a <meta name|property|itemprop content>.
func (p *page) meta(c *html.Node) {
	// name wins over property over itemprop, as in Firecrawl.
	name := strings.TrimSpace(attr(c, "name"))
	if name == "" {
		name = strings.TrimSpace(attr(c, "property"))
	}
	if name == "" {
		name = strings.TrimSpace(attr(c, "itemprop"))
	}
	content := strings.TrimSpace(attr(c, "content"))
	if name != "" && content != "" {
		p.metas = append(p.metas, metaTag{name: name, content: content})
	}
	if hasToken(attr(c, "itemprop"), "datePublished") {
		p.itemDates = append(p.itemDates, itemDate(c))
	}
}

// itemDate returns the value of an itemprop=datePublished element: its
// content, else its datetime.
func itemDate(c *html.Node) string {
	if v := strings.TrimSpace(attr(c, "content")); v != "" {
		return v
	}
	return strings.TrimSpace(attr(c, "datetime"))
}

// image records an <img>'s URLs, alt text and size and, for lazy-loaded
// images whose real URL sits in a data- attribute or only in srcset, sets
// src to it so that the Markdown shows the real image.
func (p *page) image(c *html.Node) {
	src := strings.TrimSpace(attr(c, "src"))
	if src == "" || hasScheme(src, "data") {
		for _, k := range [...]string{"data-src", "data-lazy-src", "data-original"} {
			if v := strings.TrimSpace(attr(c, k)); v != "" && !hasScheme(v, "data") {
				src = v
				setAttr(c, "src", v)
				break
			}
		}
	}
	srcset := attr(c, "srcset")
	if srcset == "" {
		srcset = attr(c, "data-srcset")
	}
	best := largestCandidate(srcset)
	if src == "" && best != "" {
		src = best
		setAttr(c, "src", best)
	}
	if src != "" {
		p.imgs = append(p.imgs, newPageImage(src, collapseSpace(attr(c, "alt")), attr(c, "width"), attr(c, "height")))
	}
	if best != "" && best != src {
		p.imgs = append(p.imgs, pageImage{url: best, variant: true})
	}
}

// pictureAlt returns the alt text of picture's <img>.
func pictureAlt(picture *html.Node) string {
	for c := picture.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.DataAtom == atom.Img {
			return collapseSpace(attr(c, "alt"))
		}
	}
	return ""
}

// isPermalink reports whether a is a heading's permalink anchor (Sphinx's
// ¶, GitHub's hover anchors): noise once the page is text.
func isPermalink(a *html.Node, href string) bool {
	if hasClass(a, "headerlink") || hasClass(a, "anchorjs-link") {
		return true
	}
	if !strings.HasPrefix(href, "#") {
		return false
	}
	inHeading := false
	for n, i := a.Parent, 0; n != nil && i < 3; n, i = n.Parent, i+1 {
		if isHeading(n) {
			inHeading = true
			break
		}
	}
	if !inHeading {
		return false
	}
	switch strings.TrimSpace(textOf(a)) {
	case "", "¶", "#", "§", "🔗":
		return true
	}
	return false
}

// codeLanguage copies the language of a highlighted block that is given on
// a wrapper (Sphinx's <div class="highlight-python3">, GitHub's
// <div class="highlight highlight-source-go">) onto the <pre> as
// language-X, where the Markdown converter looks for it.
func codeLanguage(pre *html.Node) {
	if hasLanguageClass(pre) {
		return
	}
	for c := pre.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.DataAtom == atom.Code && hasLanguageClass(c) {
			return
		}
	}
	for n, i := pre.Parent, 0; n != nil && i < 3; n, i = n.Parent, i+1 {
		for _, tok := range strings.Fields(attr(n, "class")) {
			lang, ok := strings.CutPrefix(tok, "highlight-")
			if !ok {
				continue
			}
			lang = strings.TrimPrefix(lang, "source-")
			switch lang {
			case "default":
				// Sphinx's default highlighting language is Python.
				lang = "python"
			case "none", "text", "plain", "":
				return
			}
			setAttr(pre, "class", strings.TrimSpace(attr(pre, "class")+" language-"+lang))
			return
		}
	}
}

func hasLanguageClass(n *html.Node) bool {
	c := attr(n, "class")
	return strings.Contains(c, "language-") || strings.Contains(c, "lang-")
}

// hiddenStyle reports whether an inline style hides its element.
func hiddenStyle(style string) bool {
	style = lower(style)
	if !strings.Contains(style, "none") && !strings.Contains(style, "hidden") {
		return false
	}
	s := strings.ReplaceAll(style, " ", "")
	return strings.Contains(s, "display:none") || strings.Contains(s, "visibility:hidden")
}

// hiddenClasses are the class names that CSS frameworks and publishing
// systems give an element a reader does not see (Bootstrap's, Tailwind's,
// WordPress's, Foundation's) or that the site leaves out of a printed
// article: where a page says so, the element is not its content.
var hiddenClasses = map[string]bool{
	"hidden": true, "d-none": true, "is-hidden": true, "hide": true, "u-hidden": true,
	"sr-only": true, "visually-hidden": true, "visuallyhidden": true, "screen-reader-text": true,
	"noprint": true, "no-print": true, "hidden-print": true, "d-print-none": true, "print-hidden": true,
	"hide-print": true, "not-print": true, "hide-for-print": true,
}

// hiddenClass reports whether a class attribute hides its element on
// every screen: one of hiddenClasses, and no class that shows it from
// some width on ("hidden md:block", "d-none d-lg-flex").
func hiddenClass(class string) bool {
	// Most class attributes hold none of these: they are passed over
	// without splitting (class names are case-sensitive, and these are
	// lower case).
	if !strings.Contains(class, "hid") && !strings.Contains(class, "none") && !strings.Contains(class, "only") &&
		!strings.Contains(class, "print") && !strings.Contains(class, "screen-reader") {
		return false
	}
	hidden := false
	for _, tok := range strings.Fields(class) {
		if strings.Contains(tok, ":") || strings.HasPrefix(tok, "d-") && tok != "d-none" && tok != "d-print-none" ||
			strings.HasPrefix(tok, "visible-") || strings.HasPrefix(tok, "show-for-") {
			return false
		}
		hidden = hidden || hiddenClasses[tok]
	}
	return hidden
}

// resolveBase sets p.base from the page URL and the <base href>.
func (p *page) resolveBase() {
	u, err := url.Parse(strings.TrimSpace(p.pageURL))
	if err != nil || !u.IsAbs() {
		u = nil
	}
	if p.baseHref != "" {
		if b, err := url.Parse(p.baseHref); err == nil {
			if u != nil {
				u = u.ResolveReference(b)
			} else if b.IsAbs() {
				u = b
			}
		}
	}
	p.base = u
}

func (p *page) baseString() string {
	if p.base == nil {
		return ""
	}
	return p.base.String()
}

// attr returns n's attribute key, or "".
func attr(n *html.Node, key string) string {
	v, _ := attrOK(n, key)
	return v
}

func attrOK(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func setAttr(n *html.Node, key, val string) {
	for i := range n.Attr {
		if n.Attr[i].Namespace == "" && n.Attr[i].Key == key {
			n.Attr[i].Val = val
			return
		}
	}
	n.Attr = append(n.Attr, html.Attribute{Key: key, Val: val})
}

// hasClass reports whether n's class list holds the token cls.
func hasClass(n *html.Node, cls string) bool {
	c := attr(n, "class")
	if !strings.Contains(c, cls) {
		return false
	}
	for _, tok := range strings.Fields(c) {
		if tok == cls {
			return true
		}
	}
	return false
}

func isHeading(n *html.Node) bool {
	switch n.DataAtom {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		return true
	}
	return false
}

// hasScheme reports whether the raw URL s uses scheme (case-insensitively).
func hasScheme(s, scheme string) bool {
	s = strings.TrimSpace(s)
	return len(s) > len(scheme) && s[len(scheme)] == ':' && strings.EqualFold(s[:len(scheme)], scheme)
}

// textOf returns the text under n.
func textOf(n *html.Node) string {
	if n.Type == html.TextNode {
		return n.Data
	}
	var b strings.Builder
	var f func(*html.Node)
	f = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.TextNode {
				b.WriteString(c.Data)
			} else {
				f(c)
			}
		}
	}
	f(n)
	return b.String()
}

func collapseSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
