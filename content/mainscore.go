package content

import (
	"net/url"
	"slices"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Where the main content is: the filter scores where the text is. The
// extractors that do this best (go-trafilatura, go-readability) are
// served as Go modules, but each costs several times Trawler's whole
// transform a page (they parse, clone and walk the page again for
// metadata and language), and onlyMainContent is on for every scrape by
// default; so the filter applies the same kinds of rule, written here,
// to the tree Trawler already has:
//
//   - a container the page marks as the article's body (itemprop
//     articleBody, or the class or id names publishing systems give it:
//     entry-content, post-body, article__body, story-body) is the content:
//     the one holding most of the marked prose, or the element holding
//     them all when the body is split over several;
//   - otherwise the <main> (or the body), narrowed to its one <article>,
//     or to the <article> that holds most of the prose (not the first of a
//     feed of teaser cards), or to the element whose paragraphs hold most
//     of the prose;
//   - inside it, comment threads, related reading, share and tag bars,
//     bylines, captions, forms and other boilerplate blocks go by their
//     class, id or links, and blocks that are mostly link text (menus
//     built of plain divs, teaser lists, tickers) by their link density.
//
// package content/quality scores the result on a public corpus, beside
// those two libraries (make bench, phase quality).
//
// Prose is the text of an element outside links; a block's link density
// is its link text over its text.

// bodyMarkers are class and id substrings that publishing systems give
// the element holding an article's body.
var bodyMarkers = []string{
	"articlebody", "article-body", "article_body", "article__body", "article-content", "article__content",
	"article-text", "articletext", "entry-content", "entry_content", "entrycontent", "post-content",
	"post_content", "postcontent", "post-body", "post_body", "postbody", "post-text", "post-entry",
	"story-body", "storybody", "story-content", "storycontent", "single-content", "blog-content",
	"content-body", "body-text", "text-content", "page-content", "main-content", "field-body",
	"rich-text", "richtext", "articlecontent", "bodycontent", "contentbody",
}

// boilerplateMarkers are class and id substrings of blocks that are not
// the article even inside it. The first kind name what a block is
// (related and recommended reading, sharing, sign-ups, navigation
// between posts, ratings, disclosures); the second kind are as often
// names of a layout's parts (a sidebar, a widget, a footer, the meta
// line), so a block they mark stays when it holds half the root's prose.
var boilerplateMarkers = []string{
	"related", "recommend", "more-stories", "read-more", "readmore",
	"share", "sharing", "social", "sociable", "syndication", "newsletter", "subscribe",
	"breadcrumb", "pagination", "pager", "post-nav", "nav-links", "next-post", "nextstory", "prev-next", "next-prev",
	"post-navigation", "rating", "cta-", "-cta", "call-to-action", "disclosure", "disclaimer", "affiliate",
	"paywall",
}

var layoutMarkers = []string{
	"contact", "popular", "teaser", "promo", "tags", "tag-list", "tagcloud", "tag-cloud", "category", "categories",
	"byline", "author", "post-meta", "postmeta", "entry-meta", "entry-footer", "post-footer", "article-footer",
	"post-info", "postinfo", "article-info", "timestamp", "dateline", "navigation", "subnav", "menu",
	"widget", "sidebar", "banner", "footer", "toolbar", "entry-utility", "meta",
	"embed", "tweet", "instagram", "fb-post", "user-info", "signature",
}

// shareTargets are the link targets of share buttons: a block whose links
// go there is a share bar, whatever its class.
var shareTargets = []string{
	"facebook.com/sharer", "facebook.com/share.php", "twitter.com/intent", "twitter.com/share", "x.com/intent",
	"linkedin.com/sharearticle", "linkedin.com/share", "pinterest.com/pin/create", "reddit.com/submit",
	"wa.me/?", "api.whatsapp.com/send", "whatsapp://send", "t.me/share", "xing.com/spi/shares",
	"mailto:?", "plus.google.com/share",
}

// captionMarkers are class and id substrings of image captions and
// credits.
var captionMarkers = []string{"caption", "credit", "copyright", "legend"}

// commentMarkers are class and id substrings of comment threads and the
// forms to join them. A thread is removed however long it is: under a
// short post it holds most of the page's prose.
var commentMarkers = []string{"comment", "respond", "disqus", "pingback", "trackback", "reply"}

// markedBy reports whether one of n's class tokens contains one of
// markers, or a word of its id starts with one ("comments",
// "post-comments"; not "corresponding", nor a section's or a long id:
// ids are often made from headings). A class token
// is judged without its BEM modifier ("report__section--ads" is a
// report's section that has ads beside it), and WordPress's taxonomy
// classes ("category-recipes", "tag-winter") say what a post is filed
// under, not that the element lists tags.
func markedBy(n *html.Node, markers []string) bool {
	return markedByExcept(n, markers, nil)
}

// markerToken is a class token as markedBy reads it: lower case, without
// its BEM modifier; "" for a taxonomy class or a genre.
func markerToken(tok string) string {
	tok = lower(tok)
	if i := strings.Index(tok, "--"); i > 0 {
		tok = tok[:i]
	}
	if strings.HasPrefix(tok, "category-") || strings.HasPrefix(tok, "tag-") || genres[tok] {
		return ""
	}
	return tok
}

// genres are class tokens that say what kind of piece an article is, and
// hold a marker by chance: a commentary is an opinion column, not a
// comment thread.
var genres = map[string]bool{"commentary": true, "commentaries": true}

// markedByExcept is markedBy with the class tokens in except read as no
// marker (a page's layout vocabulary: see vocabulary).
func markedByExcept(n *html.Node, markers []string, except map[string]bool) bool {
	for _, a := range n.Attr {
		if a.Namespace != "" || a.Val == "" {
			continue
		}
		switch a.Key {
		case "class":
			for _, tok := range strings.Fields(a.Val) {
				tok = markerToken(tok)
				if tok == "" || except[tok] {
					continue
				}
				for _, m := range markers {
					if strings.Contains(tok, m) {
						return true
					}
				}
			}
		case "id":
			// A section's id, and a long one, are made from its heading
			// ("how-do-i-share-global-variables").
			id := strings.ReplaceAll(lower(strings.TrimSpace(a.Val)), "_", "-")
			if n.DataAtom == atom.Section || strings.Count(id, "-") > 2 {
				continue
			}
			words := strings.Split(id, "-")
			for _, m := range markers {
				m = strings.Trim(m, "-")
				if strings.Contains(m, "-") {
					if strings.Contains("-"+id+"-", "-"+m+"-") {
						return true
					}
					continue
				}
				for _, w := range words {
					if strings.HasPrefix(w, m) {
						return true // "comments", "commentlist"
					}
				}
			}
		}
	}
	return false
}

// isBlockContainer reports whether n is an element the boilerplate and
// link-density rules judge as a block: not inline text or a heading
// (judged as part of their block), not a table's rows or cells.
func isBlockContainer(n *html.Node) bool {
	switch n.DataAtom {
	case atom.Div, atom.Section, atom.Ul, atom.Ol, atom.Dl, atom.Aside, atom.Form, atom.Table, atom.Blockquote,
		atom.Header, atom.Footer, atom.Nav, atom.Span, atom.Li, atom.P, atom.Figure:
		return true
	}
	return n.DataAtom == 0 && n.Type == html.ElementNode // custom elements
}

// isBoilerplate reports whether block n, under root, goes by the
// boilerplate or the link-density rule. A marked block that holds half
// the root's prose or more stays: a class names a layout as often as what
// it holds ("elementor-widget-wrap", "l-sidebar-fixed article-body"). A
// paragraph or a list item that is one link is a sentence of the text,
// not a menu.
func isBoilerplate(n *html.Node, root scope) bool {
	rootProse, rootText := root.prose, root.text
	if adLabel(n) {
		return true
	}
	if (n.DataAtom == atom.Figcaption || markedBy(n, captionMarkers) && !isHeading(n)) && !holdsMedia(n) {
		// A caption and a credit are the picture's, not the text's: the
		// image stays, with its alt text.
		t, _ := prose(n)
		return t < 400
	}
	if root.page != nil && upLink(n, root.page) {
		return true
	}
	if isHeading(n) {
		// A heading of the comment thread ("3 comments", "Leave a reply")
		// goes with the thread.
		return markedBy(n, commentMarkers)
	}
	if !isBlockContainer(n) {
		return false
	}
	t, _ := prose(n)
	// A paragraph's class styles its text: it says what the text is only
	// of a short one. A span is a word of a sentence, unless it stands as
	// a block of its own, straight under a division (a rating widget).
	if n.DataAtom == atom.Span {
		return t < 150 && n.Parent != nil && (n.Parent.DataAtom == atom.Div || n.Parent.DataAtom == atom.Section) &&
			markedByExcept(n, boilerplateMarkers, root.vocabulary)
	}
	if n.DataAtom == atom.P {
		return t < 150 && (markedBy(n, commentMarkers) || markedByExcept(n, boilerplateMarkers, root.vocabulary) ||
			markedByExcept(n, layoutMarkers, root.vocabulary))
	}
	if markedBy(n, commentMarkers) {
		return true
	}
	if markedByExcept(n, boilerplateMarkers, root.vocabulary) {
		return 5*t < 4*rootProse && 3*paragraphs(n) < 2*root.paragraphs
	}
	// A form in the text is a sign-up, a search or a comment box (unless
	// it wraps the page, as ASP.NET's does).
	// An embedded post (a quoted tweet) is a quote of the text's.
	if n.DataAtom == atom.Form || n.DataAtom != atom.Blockquote && markedByExcept(n, layoutMarkers, root.vocabulary) {
		return 2*t < rootProse
	}
	if shareBar(n) {
		return true
	}
	// Only a division is judged by its links: a list, a table or a
	// definition list of links is an index, a reading list or an API's
	// reference as often as a menu, a quote is the text's, and a section
	// (whose heading may be a link back to the contents) is the text's.
	// In a dated article, though, a list or a section of links is what
	// to read next: only a table stays whatever it links.
	switch n.DataAtom {
	case atom.Div, atom.Aside, atom.Nav, atom.Header, atom.Footer:
	case atom.Ul, atom.Ol, atom.Dl, atom.Section:
		if !root.article {
			return false
		}
	default:
		if n.DataAtom != 0 {
			return false
		}
	}
	// A block of links that is most of the root is the page itself: an
	// index, a documentation chapter's contents.
	_, links := prose(n)
	return 2*(t+links) < rootText && !wrapsTable(n, t+links) && linkDense(n)
}

// adLabels are the words a page sets over an advertisement's slot, in
// the languages of the web's largest publishing markets.
var adLabels = map[string]bool{
	"advertisement": true, "advertising": true, "ad": true, "sponsored": true, "anzeige": true, "werbung": true,
	"reklama": true, "publicité": true, "publicite": true, "publicidad": true, "pubblicità": true, "publicidade": true,
	"advertentie": true, "annons": true, "mainos": true, "reklame": true, "реклама": true, "広告": true, "广告": true,
}

// adLabel reports whether n is a block that holds nothing but an ad
// label ("Advertisement", "- Anzeige -"): the slot's ad is gone, its label
// is not the text's.
func adLabel(n *html.Node) bool {
	switch n.DataAtom {
	case atom.Div, atom.P, atom.Center, atom.Aside, atom.Section:
	default:
		return false
	}
	if textLen(n) > 20 {
		return false
	}
	word := strings.Trim(lower(strings.TrimSpace(textOf(n))), " -–—:|·•*[]()")
	return adLabels[word]
}

// scope is what the rules compare a block with: the root's prose, all
// its text, its paragraphs' prose, and whether the page is an article.
type scope struct {
	prose, text, paragraphs int
	article                 bool
	page                    *url.URL // the page's own URL; nil when unknown
	vocabulary              map[string]bool
}

// vocabulary returns the class tokens that a marker names but that mark
// most of root's prose between them: the page's layout vocabulary, not a
// sign of boilerplate (a page builder's "elementor-widget-wrap" around
// every block of the article, a "content__sharingContainer" around its
// body). A token counts where it first appears on the way down. Half the
// prose makes a layout marker's token vocabulary, four fifths a
// boilerplate marker's (a long related-reading block under a short post
// is still one).
func vocabulary(root *html.Node, rootProse int) map[string]bool {
	held := map[string]int{}
	marker := map[string]string{} // a class token's markerToken, "" when it holds no marker
	markerOf := func(tok string) string {
		m, ok := marker[tok]
		if !ok {
			if m = markerToken(tok); m != "" && !containsAny(m, layoutMarkers) && !containsAny(m, boilerplateMarkers) {
				m = ""
			}
			marker[tok] = m
		}
		return m
	}
	var walk func(n *html.Node, above map[string]bool)
	walk = func(n *html.Node, above map[string]bool) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			here := above
			var mine []string
			for _, tok := range strings.Fields(attr(c, "class")) {
				tok = markerOf(tok)
				if tok != "" && !above[tok] && !slices.Contains(mine, tok) {
					mine = append(mine, tok)
				}
			}
			if len(mine) > 0 {
				t, _ := prose(c)
				here = make(map[string]bool, len(above)+len(mine))
				for k := range above {
					here[k] = true
				}
				for _, tok := range mine {
					held[tok] += t
					here[tok] = true
				}
			}
			walk(c, here)
		}
	}
	walk(root, nil)
	var vocab map[string]bool
	for tok, t := range held {
		common := 2*t >= rootProse
		if !containsAny(tok, layoutMarkers) {
			common = 5*t >= 4*rootProse
		}
		if common && t > 0 {
			if vocab == nil {
				vocab = map[string]bool{}
			}
			vocab[tok] = true
		}
	}
	return vocab
}

// containsAny reports whether s contains one of subs.
func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// upLink reports whether n is a link back up the site, alone in its
// block (or the block holding only it): to the home page or to a
// directory above the page ("Back to all news", "Zur Übersicht"). It is
// the site's navigation wherever it stands, where a link inside a
// sentence, or to another page, is the text's.
func upLink(n *html.Node, page *url.URL) bool {
	a := n
	switch n.DataAtom {
	case atom.A:
		if n.Parent == nil || textLen(n.Parent) != textLen(n) {
			return false
		}
	case atom.P, atom.Div:
		a = nil
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch {
			case c.Type == html.ElementNode && c.DataAtom == atom.A && a == nil:
				a = c
			case c.Type == html.TextNode && strings.TrimSpace(c.Data) == "":
			case c.Type == html.CommentNode:
			default:
				return false
			}
		}
		if a == nil {
			return false
		}
	default:
		return false
	}
	if t := textLen(a); t == 0 || t > 60 {
		return false
	}
	u, err := page.Parse(strings.TrimSpace(attr(a, "href")))
	if err != nil || u.Host != page.Host || u.RawQuery != "" {
		return false
	}
	up, here := strings.TrimSuffix(u.Path, "/"), strings.TrimSuffix(page.Path, "/")
	return up != here && strings.HasPrefix(here, up+"/")
}

// paragraphs counts the prose of the paragraphs under n: the text of an
// article's body, where a header or a teaser holds headlines and lines.
func paragraphs(n *html.Node) int {
	if n.DataAtom == atom.P {
		t, _ := prose(n)
		return t
	}
	t := 0
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode {
			t += paragraphs(c)
		}
	}
	return t
}

// wrapsTable reports whether most of n's text, of length text, is in one
// table: n is the table's wrapper (a script's responsive container), and
// judged as the table is.
func wrapsTable(n *html.Node, text int) bool {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode {
			continue
		}
		if c.DataAtom == atom.Table {
			t, l := prose(c)
			return 5*(t+l) >= 4*text
		}
		if wrapsTable(c, text) {
			return true
		}
	}
	return false
}

// isMedia reports whether n is an image, a picture, a video or an audio
// element.
func isMedia(n *html.Node) bool {
	switch n.DataAtom {
	case atom.Img, atom.Picture, atom.Video, atom.Audio, atom.Svg:
		return true
	}
	return false
}

// holdsMedia reports whether n is or holds an image, a picture, a video
// or an audio element.
func holdsMedia(n *html.Node) bool {
	if isMedia(n) {
		return true
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && holdsMedia(c) {
			return true
		}
	}
	return false
}

// shareBar reports whether n is a short block holding two or more share
// links.
func shareBar(n *html.Node) bool {
	if t, _ := prose(n); t > 200 {
		return false
	}
	shares := 0
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil && shares < 2; c = c.NextSibling {
			if c.DataAtom == atom.A {
				href := lower(attr(c, "href"))
				for _, t := range shareTargets {
					if strings.Contains(href, t) {
						shares++
						break
					}
				}
				continue
			}
			walk(c)
		}
	}
	walk(n)
	return shares >= 2
}

// prose counts the non-space bytes of n's text outside links, and of its
// link text.
func prose(n *html.Node) (text, links int) {
	var walk func(*html.Node, bool)
	walk = func(n *html.Node, inLink bool) {
		if n.Type == html.TextNode {
			t := 0
			for i := 0; i < len(n.Data); i++ {
				if !isSpace(n.Data[i]) {
					t++
				}
			}
			if inLink {
				links += t
			} else {
				text += t
			}
			return
		}
		inLink = inLink || n.DataAtom == atom.A
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, inLink)
		}
	}
	walk(n, false)
	return text, links
}

// linkDense reports whether block n is mostly links: a menu, a list of
// teasers or of related articles, a ticker, a "see also" box. A long
// block is judged more leniently, as prose with many links is still prose.
func linkDense(n *html.Node) bool {
	text, links := prose(n)
	total := text + links
	if links == 0 || total == 0 {
		return false
	}
	share := float64(links) / float64(total)
	switch {
	case total < 200:
		return share >= 0.5
	case total < 1000:
		return share >= 0.6
	}
	return share >= 0.75
}

// contentRoot is the element that holds the page's main content, by the
// rules at the top of this file; nil when none stands out (the filter
// then works on the whole body).
func (p *page) contentRoot(hidden map[*html.Node]bool) *html.Node {
	body := p.body
	bodyProse, _ := prose(body)
	if bodyProse == 0 {
		return nil
	}
	// A comment thread is not the content: a long one under a short story
	// does not make the story's body a small part of the page. (A page
	// that is nearly all thread, a forum's, is its thread.)
	if t := threadProse(body); 10*(bodyProse-t) >= bodyProse {
		bodyProse -= t
	}
	fair := func(n *html.Node) bool {
		t, _ := prose(n)
		return t >= min(100, bodyProse/10)
	}
	// A marked body holds a fair share of the page's prose: a "text-content"
	// box of a few lines beside the story is not the story.
	major := func(n *html.Node) bool {
		t, _ := prose(n)
		return 5*t >= bodyProse
	}
	best := func(nodes []*html.Node) (*html.Node, int, int) {
		var top *html.Node
		first, second := 0, 0
		for _, n := range nodes {
			t, _ := prose(n)
			switch {
			case t > first:
				top, first, second = n, t, first
			case t > second:
				second = t
			}
		}
		return top, first, second
	}
	// A marked article body.
	var marked []*html.Node
	var find func(*html.Node)
	find = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode || hidden[c] {
				continue
			}
			if isChrome(c, false) || looksLikeChrome(c) {
				continue // a consent dialog's "main-content" is not the page's
			}
			if attr(c, "itemprop") == "articleBody" || (c.DataAtom == atom.Div || c.DataAtom == atom.Section ||
				c.DataAtom == atom.Article || c.DataAtom == atom.Main) && markedBy(c, bodyMarkers) {
				marked = append(marked, c)
			}
			find(c)
		}
	}
	find(body)
	if m := markedRoot(marked); m != nil && fair(m) && major(m) {
		return m
	}
	// Else the page's <main> (or #main), or the body, narrowed to its
	// <article> when it has one, or to the one that holds most of its
	// prose (a feed of teaser cards has no such one), or else to the
	// element whose paragraphs hold most of its prose.
	scope := body
	if m, _, _ := best(attachedUnder(body, slices.Concat(p.mains, p.idMains))); m != nil && fair(m) {
		scope = m
	}
	scopeProse, _ := prose(scope)
	articles := attachedUnder(scope, p.articles)
	if a, first, second := best(articles); a != nil && fair(a) && (len(articles) == 1 || first >= 2*second && 2*first >= scopeProse) {
		return a
	}
	// A page's own <main> is narrowed only to what holds most of its prose
	// and its title: a documentation page's sections share the prose, and
	// the first holds the page's heading.
	if d := densest(scope, hidden, scopeProse); d != nil {
		if t, _ := prose(d); scope == body || 3*t >= 2*scopeProse && holdsFirstHeading(scope, d) {
			return d
		}
	}
	if scope == body {
		return nil
	}
	return scope
}

// threadProse is the prose of the comment threads under body: the
// outermost blocks the comment markers mark that hold neither the page's
// title (an <h1>) nor a marked article body (a class on a wrapper of the
// whole page is not a thread).
func threadProse(body *html.Node) int {
	total := 0
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			if isBlockContainer(c) && markedBy(c, commentMarkers) && !holdsStory(c) {
				t, _ := prose(c)
				total += t
				continue
			}
			walk(c)
		}
	}
	walk(body)
	return total
}

// holdsStory reports whether n holds an <h1> or an itemprop="articleBody".
func holdsStory(n *html.Node) bool {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && (c.DataAtom == atom.H1 || attr(c, "itemprop") == "articleBody" || holdsStory(c)) {
			return true
		}
	}
	return false
}

// densest is the element whose paragraphs hold most of the page's prose,
// as Readability scores it: each paragraph's prose counts for its parent,
// and half for its grandparent. Nil when no element holds half of the
// paragraphs' prose (the text is spread over the page).
func densest(body *html.Node, hidden map[*html.Node]bool, bodyProse int) *html.Node {
	score := map[*html.Node]int{}
	total := 0
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode || hidden[c] {
				continue
			}
			switch c.DataAtom {
			case atom.P, atom.Pre, atom.Blockquote, atom.Dd:
				t, links := prose(c)
				if t < 25 || links > t {
					continue
				}
				total += t
				if par := c.Parent; par != nil {
					score[par] += 2 * t
					if g := par.Parent; g != nil {
						score[g] += t
					}
				}
				continue
			}
			walk(c)
		}
	}
	walk(body)
	var top *html.Node
	for n, sc := range score {
		switch n.DataAtom {
		case atom.Div, atom.Section, atom.Article, atom.Main, atom.Td:
		default:
			continue // a list's item or a definition is part of a text, not the text
		}
		if top == nil || sc > score[top] || sc == score[top] && contains(n, top) {
			top = n
		}
	}
	if top == nil || top == body || score[top] < total || 4*total < bodyProse ||
		isChrome(top, false) || looksLikeChrome(top) {
		return nil
	}
	// A text split over sibling blocks (a CMS's content elements) is
	// their parent's.
	for top.Parent != nil && top.Parent != body {
		siblings := 0
		for c := top.Parent.FirstChild; c != nil; c = c.NextSibling {
			if c != top {
				siblings += score[c]
			}
		}
		if 2*siblings < score[top] {
			break
		}
		top = top.Parent
	}
	return top
}

// holdsFirstHeading reports whether d holds scope's first h1 (or, with
// none, its first heading), or scope has none.
func holdsFirstHeading(scope, d *html.Node) bool {
	var first *html.Node
	var find func(*html.Node, atom.Atom)
	find = func(n *html.Node, want atom.Atom) {
		for c := n.FirstChild; c != nil && first == nil; c = c.NextSibling {
			if c.Type == html.ElementNode && (c.DataAtom == want || want == 0 && isHeading(c)) {
				first = c
				return
			}
			find(c, want)
		}
	}
	if find(scope, atom.H1); first == nil {
		find(scope, 0)
	}
	return first == nil || contains(d, first)
}

// contains reports whether a is an ancestor of n.
func contains(a, n *html.Node) bool {
	for p := n.Parent; p != nil; p = p.Parent {
		if p == a {
			return true
		}
	}
	return false
}

// markedRoot is the content among the elements marked as an article's
// body: the outermost one holding most of their prose, or, when the body
// is split over several (a lead, the text, a gallery's captions), the
// element that holds them all.
func markedRoot(marked []*html.Node) *html.Node {
	in := make(map[*html.Node]bool, len(marked))
	for _, n := range marked {
		in[n] = true
	}
	var outer []*html.Node
	total := 0
	for _, n := range marked {
		nested := false
		for a := n.Parent; a != nil; a = a.Parent {
			if in[a] {
				nested = true
				break
			}
		}
		if !nested {
			outer = append(outer, n)
			t, _ := prose(n)
			total += t
		}
	}
	if len(outer) == 0 || total == 0 {
		return nil
	}
	for _, n := range outer {
		if t, _ := prose(n); 5*t >= 3*total {
			return n
		}
	}
	return commonAncestor(outer)
}

// commonAncestor is the deepest element holding every one of nodes.
func commonAncestor(nodes []*html.Node) *html.Node {
	anc := map[*html.Node]bool{}
	for a := nodes[0]; a != nil; a = a.Parent {
		anc[a] = true
	}
	for _, n := range nodes[1:] {
		next := map[*html.Node]bool{}
		for a := n; a != nil; a = a.Parent {
			if anc[a] {
				next[a] = true
			}
		}
		anc = next
	}
	var deepest *html.Node
	depth := -1
	for a := range anc {
		d := 0
		for p := a; p != nil; p = p.Parent {
			d++
		}
		if d > depth {
			deepest, depth = a, d
		}
	}
	return deepest
}

// titledHeadings reports, for each heading under root, whether it titles
// anything: whether text, an image or a heading of a lower level follows
// it before the next heading of its level or above, or the end.
func titledHeadings(root *html.Node) map[*html.Node]bool {
	type item struct {
		n     *html.Node
		level int // a heading's; 0 for text
	}
	var items []item
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch {
			case c.Type == html.TextNode:
				if strings.TrimSpace(c.Data) != "" {
					items = append(items, item{c, 0})
				}
			case c.Type == html.ElementNode && isHeading(c):
				items = append(items, item{c, int(c.Data[1] - '0')})
			case c.Type == html.ElementNode && isMedia(c):
				items = append(items, item{c, 0})
			case c.Type == html.ElementNode:
				walk(c)
			}
		}
	}
	walk(root)
	titled := make(map[*html.Node]bool)
	for i, it := range items {
		if it.level == 0 {
			continue
		}
		// What comes next: text, or a heading of its section.
		titled[it.n] = i+1 < len(items) && (items[i+1].level == 0 || items[i+1].level > it.level)
	}
	return titled
}

// dropOrphanHeadings removes the headings under root that title nothing
// any more, of those in before (the headings that titled something
// before the rules removed anything, or stood just before what they
// removed): what they titled went by the rules (a related-reading list, a
// comment thread), wherever it stood. Another heading that titles nothing
// stays, and so does a page that is only a heading.
func dropOrphanHeadings(root *html.Node, before map[*html.Node]bool) {
	// Until none is left: a heading titled only by subheadings that went
	// titles nothing either.
	for dropped := true; dropped; {
		dropped = false
		for h, titled := range titledHeadings(root) {
			// A long "heading" is text that a page set large.
			if !titled && before[h] && textLen(h) < 80 {
				detach(h)
				delete(before, h)
				dropped = true
			}
		}
	}
}
