package content

import (
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// The main-content filter first finds where the content is (the content
// root: mainscore.go), then removes what is not content under it, in
// four kinds of rule:
//
//   - semantic rules (nav, footer, landmark roles, ad iframes, and aside
//     and header outside the main content) remove an element outright;
//   - boilerplate rules (mainscore.go: comment threads, related reading,
//     share bars, captions, forms, blocks that are mostly links) remove a
//     block by what its class, id or links say it is;
//   - chrome class and id rules (whole class tokens such as "sidebar" or
//     "share", class substrings such as "cookie" or "newsletter", a few id
//     patterns, dialogs, hidden elements) are guarded: they never remove
//     an element holding half or more of the text the semantic rules left;
//   - no rule removes an element that contains the content root, nor the
//     page's <main>, [role=main], #main or its single <article>.
//
// Only the content root is kept, with what those rules leave of it. When
// they would leave (almost) no text, the next wider root is tried (the
// page's <main> or single <article>, then the body), and at last the
// whole body is kept unfiltered.

// classTokens are class names that mark chrome when they are a whole token.
var classTokens = setOf(
	// Firecrawl's list
	"header", "top", "navbar", "footer", "bottom", "sidebar", "side", "aside",
	"modal", "popup", "overlay", "ad", "ads", "advert", "lang-selector",
	"language", "social", "social-media", "social-links", "menu",
	"navigation", "breadcrumbs", "share", "widget", "cookie",
	// more of the same
	"nav", "breadcrumb", "site-header", "site-footer", "site-nav",
	"advertisement", "newsletter", "subscribe",
)

// classSubstrings mark chrome anywhere in a class attribute (classes are
// styling hooks, so "cookie-consent-banner" or "newsletter-popup" say what
// the element is).
var classSubstrings = []string{
	"cookie", "consent", "gdpr", "newsletter", "subscribe", "popup", "modal",
	"advert", "sidebar", "breadcrumb", "adsbygoogle", "share-", "-share",
	"sharing", "onetrust", "cookiebot",
}

// controlSubstrings mark copy-to-clipboard controls that documentation
// sites add with script (Sphinx's ">>>" toggle, MkDocs, Docusaurus): not
// content, and absent from the served HTML, so a rendered page and the
// same page taken unrendered would otherwise differ. They apply to every
// element, the span a control usually is included.
var controlSubstrings = []string{"copybutton", "copy-button", "copy-btn", "btn-copy", "clipboard"}

// skipLinks are the classes of "Skip to content" links.
var skipLinks = setOf("skip-link", "skiplink", "skip-to-content", "skip-to-main", "skip-nav")

// idTokens are ids that mark chrome (Firecrawl's list and a few more).
var idTokens = setOf(
	"header", "footer", "sidebar", "modal", "ad", "language-selector",
	"social", "nav", "navbar", "navigation", "menu", "breadcrumbs", "share",
	"widget", "cookie", "site-header", "site-footer",
)

// idSubstrings mark chrome anywhere in an id. They are narrower than the
// class ones because ids are often made from headings: a section titled
// "Cookie objects" gets id="cookie-objects".
var idSubstrings = []string{
	"cookie-banner", "cookie-consent", "cookie-notice", "cookie-bar",
	"cookie-popup", "cookiebanner", "cookieconsent", "cookienotice",
	"cookiebot", "onetrust", "consent-banner", "consent-manager",
	"gdpr-banner", "gdpr-consent", "newsletter-popup", "newsletter-modal",
	"newsletter-signup", "subscribe-popup", "subscribe-modal", "sidebar",
	"advert", "adsbygoogle", "ad-container", "ad-slot", "ad-wrapper",
	"google_ads",
}

// landmarkRoles are ARIA roles of page chrome.
var landmarkRoles = setOf("navigation", "banner", "contentinfo", "complementary", "search", "menu", "menubar")

// adHosts appear in the src of ad iframes.
var adHosts = []string{
	"doubleclick.net", "googlesyndication.com", "googleadservices.com",
	"adservice.google", "amazon-adsystem.com", "adnxs.com", "taboola.com",
	"outbrain.com", "criteo.", "pubmatic.com", "rubiconproject.com",
	"moatads.com", "adsrvr.org",
}

// keepMainContent applies the main-content filter to p.body; dated says
// the page gives a publication date.
func (p *page) keepMainContent(dated bool) {
	body := p.body
	bodyText := textLen(body)

	var single *html.Node
	if arts := attachedUnder(body, p.articles); len(arts) == 1 {
		single = arts[0]
	}
	// A page that dates itself (dated: it has a publication date) is an
	// article: a list of links in it is related reading, where in
	// documentation it is the text's index.
	article := dated || p.ogArticle()
	guard := make(map[*html.Node]bool)
	for _, list := range [][]*html.Node{p.mains, p.idMains, {single}} {
		for _, n := range list {
			for a := n; a != nil && !guard[a]; a = a.Parent {
				guard[a] = true
			}
		}
	}
	hidden := make(map[*html.Node]bool, len(p.hidden))
	for _, n := range p.hidden {
		hidden[n] = true
	}

	// A marked main element is used unless it holds (almost) no text: a
	// <main> that wraps only a hero banner is not the content.
	fair := func(n *html.Node) bool {
		return textLen(n) >= min(50, bodyText/20)
	}
	var roots []*html.Node
	if r := p.contentRoot(hidden); r != nil {
		roots = append(roots, r)
		for a := r; a != nil && !guard[a]; a = a.Parent {
			guard[a] = true
		}
	}
	if m := largest(attachedUnder(body, p.mains)); m != nil && fair(m) {
		roots = append(roots, m)
	} else if single != nil && fair(single) {
		roots = append(roots, single)
	}
	roots = append(roots, body)

	// "Almost no text": less than a tenth of the page, capped at 50
	// characters so that a short article among heavy chrome still counts.
	enough := min(50, bodyText/10)
	for _, root := range roots {
		f := filter{protected: guard, hidden: hidden, article: article, page: p.ownURL()}
		remaining := f.plan(root)
		if remaining < enough {
			continue
		}
		// The headings that title something, or stand just before what
		// the rules remove (an empty widget's heading): once the
		// removals leave them titling nothing, they go too.
		titling := titledHeadings(root)
		for _, n := range f.removed {
			for p := n.PrevSibling; p != nil; p = p.PrevSibling {
				if p.Type == html.ElementNode {
					titling[p] = titling[p] || isHeading(p)
					break
				}
			}
		}
		for _, n := range f.removed {
			detach(n)
		}
		dropOrphanHeadings(root, titling)
		if root != body {
			keepOnly(body, []*html.Node{root})
		}
		return
	}
	// Nothing sensible would be left: keep the whole body.
}

// filter plans the removals under one root.
type filter struct {
	protected map[*html.Node]bool
	hidden    map[*html.Node]bool
	article   bool     // the page is a dated article (see keepMainContent)
	page      *url.URL // the page's URL, nil when unknown
	removed   []*html.Node
	isRemoved map[*html.Node]bool
}

// plan records the elements to remove under root and returns how much
// text would be left.
func (f *filter) plan(root *html.Node) (remaining int) {
	f.isRemoved = make(map[*html.Node]bool)
	// Under the content root an <aside> is a callout or the footnotes, as
	// under a <main>.
	remaining = textLen(root) - f.semantic(root, isContent(root) || root.DataAtom != atom.Body)
	rootProse, rootLinks := prose(root)
	sc := scope{
		prose: rootProse, text: rootProse + rootLinks, paragraphs: paragraphs(root),
		article: f.article, page: f.page, vocabulary: vocabulary(root, rootProse),
	}
	remaining -= f.boilerplate(root, sc, false)
	return remaining - f.guarded(root, remaining)
}

// semantic marks the elements the semantic rules remove under n and
// returns their text length.
func (f *filter) semantic(n *html.Node, inContent bool) (removedText int) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode {
			continue
		}
		if !f.protected[c] && isChrome(c, inContent) {
			f.remove(c)
			removedText += textLen(c)
			continue
		}
		removedText += f.semantic(c, inContent || isContent(c))
	}
	return removedText
}

// guarded marks the elements the class and id rules remove under n, as
// long as each holds less than half of the remaining text, and returns
// their text length.
func (f *filter) guarded(n *html.Node, remaining int) (removedText int) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode || f.isRemoved[c] {
			continue
		}
		if !f.protected[c] && (f.hidden[c] && attr(c, "role") != "tabpanel" || looksLikeChrome(c)) {
			if t := f.liveLen(c); t*2 < remaining {
				f.remove(c)
				removedText += t
				continue
			}
		}
		removedText += f.guarded(c, remaining)
	}
	return removedText
}

// boilerplate marks the blocks under n that the boilerplate and
// link-density rules remove (mainscore.go) and returns their text length.
// What a list or a table that stays holds is judged with it: a sublist is
// part of its item, and a cell of its table.
func (f *filter) boilerplate(n *html.Node, root scope, judged bool) (removedText int) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode || f.isRemoved[c] {
			continue
		}
		if !judged && !f.protected[c] && isBoilerplate(c, root) {
			removedText += f.liveLen(c)
			f.remove(c)
			continue
		}
		whole := c.DataAtom == atom.Ul || c.DataAtom == atom.Ol || c.DataAtom == atom.Dl || c.DataAtom == atom.Table
		removedText += f.boilerplate(c, root, judged || whole)
	}
	return removedText
}

// liveLen is n's text length without what is already to be removed under
// it: counted twice, an element holding a removed block would make the
// text left look smaller than it is, down to nothing.
func (f *filter) liveLen(n *html.Node) int {
	if f.isRemoved[n] {
		return 0
	}
	if n.Type == html.TextNode {
		return textLen(n)
	}
	t := 0
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		t += f.liveLen(c)
	}
	return t
}

func (f *filter) remove(n *html.Node) {
	f.removed = append(f.removed, n)
	f.isRemoved[n] = true
}

// isContent reports whether n is a main-content container, inside which an
// <aside> or a <header> holding the title is part of the content.
func isContent(n *html.Node) bool {
	return n.DataAtom == atom.Main || n.DataAtom == atom.Article || strings.EqualFold(attr(n, "role"), "main")
}

// isChrome applies the semantic rules.
func isChrome(n *html.Node, inContent bool) bool {
	switch n.DataAtom {
	case atom.Nav, atom.Footer:
		return true
	case atom.Aside:
		// Inside the content an <aside> is a callout or the footnotes; the
		// class rules still catch a share box or a related-posts list.
		return !inContent
	case atom.Header:
		// Inside the content a header holding the title is the article's,
		// and one holding paragraphs of prose is the text in a misused tag.
		return !inContent || !hasTitle(n) && paragraphs(n) < 200
	case atom.Iframe:
		src := strings.ToLower(attr(n, "src"))
		for _, h := range adHosts {
			if strings.Contains(src, h) {
				return true
			}
		}
	}
	if role := attr(n, "role"); role != "" && landmarkRoles[strings.ToLower(strings.TrimSpace(role))] {
		return true
	}
	return false
}

// hasTitle reports whether n holds an h1 or h2.
func hasTitle(n *html.Node) bool {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode {
			continue
		}
		if c.DataAtom == atom.H1 || c.DataAtom == atom.H2 || hasTitle(c) {
			return true
		}
	}
	return false
}

// classRuleExempt are elements the class and id rules never remove: text
// and media, which a styling class like "top" or "popup-image" does not
// make chrome.
var classRuleExempt = map[atom.Atom]bool{
	atom.A: true, atom.Abbr: true, atom.B: true, atom.Code: true, atom.Em: true,
	atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
	atom.I: true, atom.Img: true, atom.P: true, atom.Picture: true, atom.Pre: true,
	atom.Span: true, atom.Strong: true, atom.Table: true, atom.Tbody: true, atom.Thead: true,
	atom.Tfoot: true, atom.Tr: true, atom.Td: true, atom.Th: true, atom.Caption: true,
	atom.Time: true, atom.Video: true, atom.Audio: true, atom.Source: true,
	atom.Body: true, atom.Main: true, atom.Article: true,
}

// looksLikeChrome applies the class and id rules.
func looksLikeChrome(n *html.Node) bool {
	if n.DataAtom == atom.A {
		if c := attr(n, "class"); strings.Contains(c, "skip") {
			for _, tok := range strings.Fields(lower(c)) {
				if skipLinks[tok] {
					return true
				}
			}
		}
	}
	if c := lower(attr(n, "class")); c != "" {
		for _, s := range controlSubstrings {
			if strings.Contains(c, s) {
				return true
			}
		}
	}
	if classRuleExempt[n.DataAtom] {
		return false
	}
	if n.DataAtom == atom.Dialog {
		return true
	}
	for _, a := range n.Attr {
		if a.Namespace != "" || a.Val == "" {
			continue
		}
		switch a.Key {
		case "class":
			v := lower(a.Val)
			for _, tok := range strings.Fields(v) {
				if classTokens[tok] || isAdToken(tok) {
					return true
				}
			}
			for _, s := range classSubstrings {
				if strings.Contains(v, s) {
					return true
				}
			}
		case "id":
			v := lower(strings.TrimSpace(a.Val))
			if idTokens[v] {
				return true
			}
			for _, s := range idSubstrings {
				if strings.Contains(v, s) {
					return true
				}
			}
		case "role":
			switch lower(strings.TrimSpace(a.Val)) {
			case "dialog", "alertdialog":
				return true
			}
		case "aria-modal":
			if a.Val == "true" {
				return true
			}
		}
	}
	return false
}

// isAdToken reports whether a class token names an ad slot: "ad-slot",
// "top-ad", "sidebar-ads".
func isAdToken(tok string) bool {
	if i := strings.Index(tok, "--"); i > 0 {
		tok = tok[:i] // a BEM modifier says what is beside the block, not what it is
	}
	return strings.HasPrefix(tok, "ad-") || strings.HasPrefix(tok, "ads-") ||
		strings.HasSuffix(tok, "-ad") || strings.HasSuffix(tok, "-ads")
}

// textLen counts the non-space bytes of the text under n.
func textLen(n *html.Node) int {
	if n.Type == html.TextNode {
		t := 0
		for i := 0; i < len(n.Data); i++ {
			if !isSpace(n.Data[i]) {
				t++
			}
		}
		return t
	}
	t := 0
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		t += textLen(c)
	}
	return t
}

// attachedUnder returns the nodes still under root (the selectors may have
// removed some).
func attachedUnder(root *html.Node, nodes []*html.Node) []*html.Node {
	var out []*html.Node
	for _, n := range nodes {
		for a := n.Parent; a != nil; a = a.Parent {
			if a == root {
				out = append(out, n)
				break
			}
		}
	}
	return out
}

// largest returns the node with the most text; nil for none.
func largest(nodes []*html.Node) *html.Node {
	var best *html.Node
	bestLen := -1
	for _, n := range nodes {
		if t := textLen(n); t > bestLen {
			best, bestLen = n, t
		}
	}
	return best
}

func lower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}

func setOf(items ...string) map[string]bool {
	m := make(map[string]bool, len(items))
	for _, s := range items {
		m[s] = true
	}
	return m
}
