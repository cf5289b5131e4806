package content

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLinks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		html    string
		pageURL string
		want    []string
	}{
		{
			name:    "relative resolution",
			html:    `<a href="b.html">b</a><a href="/c">c</a><a href="../d?x=1">d</a><a href="//cdn.example.org/e">e</a>`,
			pageURL: "https://example.com/dir/page.html",
			want:    []string{"https://example.com/dir/b.html", "https://example.com/c", "https://example.com/d?x=1", "https://cdn.example.org/e"},
		},
		{
			name:    "fragments stripped and deduplicated",
			html:    `<a href="/a#one">1</a><a href="/a#two">2</a><a href="/a">3</a><a href="https://example.com/a">4</a>`,
			pageURL: "https://example.com/",
			want:    []string{"https://example.com/a"},
		},
		{
			name:    "links to the page itself left out",
			html:    `<a href="#top">top</a><a href="">self</a><a href="/x">x</a>`,
			pageURL: "https://example.com/",
			want:    []string{"https://example.com/x"},
		},
		{
			name:    "non-http schemes dropped",
			html:    `<a href="mailto:a@example.com">m</a><a href="tel:+351">t</a><a href="javascript:void(0)">j</a><a href="ftp://example.com/f">f</a><a href="data:text/html,hi">d</a><a href="HTTPS://Example.com/Up">u</a>`,
			pageURL: "https://example.com/",
			want:    []string{"https://example.com/Up"},
		},
		{
			name:    "credentials never passed on",
			html:    `<a href="https://user:secret@example.com/private">p</a><a href="//admin@example.org/x">x</a>`,
			pageURL: "https://example.com/",
			want:    []string{"https://example.com/private", "https://example.org/x"},
		},
		{
			name:    "base href",
			html:    `<head><base href="/v2/"></head><a href="guide">g</a><a href="/root">r</a>`,
			pageURL: "https://example.com/docs/page",
			want:    []string{"https://example.com/v2/guide", "https://example.com/root"},
		},
		{
			name:    "whole page, document order, area too",
			html:    `<nav><a href="/nav">n</a></nav><main><a href="/main">m</a></main><map><area href="/area"></map><footer><a href="/foot">f</a></footer>`,
			pageURL: "https://example.com/",
			want:    []string{"https://example.com/nav", "https://example.com/main", "https://example.com/area", "https://example.com/foot"},
		},
		{
			name:    "no page URL keeps only absolute links",
			html:    `<a href="/rel">r</a><a href="https://example.com/abs">a</a>`,
			pageURL: "",
			want:    []string{"https://example.com/abs"},
		},
		{
			name:    "newlines inside an href",
			html:    "<a href=\"/long\n/path\">p</a>",
			pageURL: "https://example.com/",
			want:    []string{"https://example.com/long/path"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := Transform([]byte(tc.html), tc.pageURL, Options{OnlyMainContent: true, Want: Want{Links: true, Markdown: true}})
			require.NoError(t, err)
			assert.Equal(t, tc.want, res.Links, "links")
		})
	}
}

func TestImages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		html string
		want []string
	}{
		{
			name: "largest srcset candidate by width",
			html: `<img src="s.jpg" srcset="m.jpg 800w, l.jpg 1600w, s.jpg 400w">`,
			want: []string{"https://example.com/p/s.jpg", "https://example.com/p/l.jpg"},
		},
		{
			name: "largest srcset candidate by density",
			html: `<img src="a.png" srcset="a.png, a3.png 3x, a2.png 2x">`,
			want: []string{"https://example.com/p/a.png", "https://example.com/p/a3.png"},
		},
		{
			name: "picture sources",
			html: `<picture><source srcset="h1.avif 1x, h2.avif 2x"><source srcset="h.webp"><img src="h.jpg"></picture>`,
			want: []string{"https://example.com/p/h2.avif", "https://example.com/p/h.webp", "https://example.com/p/h.jpg"},
		},
		{
			name: "og:image first and deduplicated",
			html: `<head><meta property="og:image" content="/card.png"></head><img src="/card.png"><img src="/other.png">`,
			want: []string{"https://example.com/card.png", "https://example.com/other.png"},
		},
		{
			name: "data URLs left out, lazy source used",
			html: `<img src="data:image/gif;base64,R0lGOD=" data-src="/real.jpg"><img src="data:image/png;base64,AAAA">`,
			want: []string{"https://example.com/real.jpg"},
		},
		{
			name: "srcset only",
			html: `<img srcset="x.jpg 1x, y.jpg 2x">`,
			want: []string{"https://example.com/p/y.jpg"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := Transform([]byte(tc.html), "https://example.com/p/index.html", Options{Want: Want{Images: true}})
			require.NoError(t, err)
			assert.Equal(t, tc.want, res.Images, "images")
		})
	}
}

func TestImageDetails(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		html string
		want []ImageRef
	}{
		{
			name: "alt and size from attributes",
			html: `<img src="a.jpg" alt=" A
  photo " width="640" height="480px"><img src="b.jpg" width="50%" height="auto"><img src="c.jpg" width="1.5" height="-3">`,
			want: []ImageRef{
				{URL: "https://example.com/p/a.jpg", Alt: "A photo", Width: 640, Height: 480},
				{URL: "https://example.com/p/b.jpg"},
				{URL: "https://example.com/p/c.jpg"},
			},
		},
		{
			name: "duplicates keep the first entry and fill its gaps",
			html: `<img src="x.jpg"><img src="/p/x.jpg" alt="Second" width="10" height="20"><img src="x.jpg" alt="Third" width="30" height="40">` +
				`<img src="y.jpg" alt="Why" width="100"><img src="y.jpg" width="300" height="200"><img src="y.jpg" width="100" height="50">`,
			want: []ImageRef{
				{URL: "https://example.com/p/x.jpg", Alt: "Second", Width: 10, Height: 20},
				{URL: "https://example.com/p/y.jpg", Alt: "Why", Width: 100, Height: 50},
			},
		},
		{
			name: "srcset only takes the largest candidate",
			html: `<img srcset="s.jpg 400w, l.jpg 1200w, m.jpg 800w" alt="Wide" width="1200" height="800">`,
			want: []ImageRef{{URL: "https://example.com/p/l.jpg", Alt: "Wide", Width: 1200, Height: 800}},
		},
		{
			name: "src wins over srcset",
			html: `<img src="a.png" srcset="a.png 1x, a2.png 2x" alt="Icon" width="32" height="32">`,
			want: []ImageRef{{URL: "https://example.com/p/a.png", Alt: "Icon", Width: 32, Height: 32}},
		},
		{
			name: "og:image with size and alt",
			html: `<head><meta property="og:image" content="/card.png"><meta property="og:image:width" content="1200"><meta property="og:image:height" content="630"><meta property="og:image:alt" content="The card">` +
				`<meta property="og:image" content="https://cdn.example.com/second.png"></head>` +
				`<img src="/card.png" alt="Inline card" width="600" height="315"><img src="https://cdn.example.com/second.png" alt="Second card">`,
			want: []ImageRef{
				{URL: "https://example.com/card.png", Alt: "The card", Width: 1200, Height: 630},
				{URL: "https://cdn.example.com/second.png", Alt: "Second card"},
			},
		},
		{
			name: "picture sources share the img's alt",
			html: `<picture><source srcset="h1.avif 1x, h2.avif 2x" width="800" height="600"><source srcset="h.webp"><img src="h.jpg" alt="Harbour"></picture>`,
			want: []ImageRef{
				{URL: "https://example.com/p/h2.avif", Alt: "Harbour", Width: 800, Height: 600},
				{URL: "https://example.com/p/h.webp", Alt: "Harbour"},
				{URL: "https://example.com/p/h.jpg", Alt: "Harbour"},
			},
		},
		{
			name: "data URLs and tracking pixels left out",
			html: `<img src="data:image/png;base64,AAAA" alt="inline"><img src="/pixel.gif" width="1" height="1"><img src="/beacon" width="0px" height="0px">` +
				`<img src="/spacer.gif" width="1"><img src="/rule.png" width="1" height="400">`,
			want: []ImageRef{
				{URL: "https://example.com/spacer.gif", Width: 1},
				{URL: "https://example.com/rule.png", Width: 1, Height: 400},
			},
		},
		{
			name: "lazy image takes its real URL",
			html: `<img src="data:image/gif;base64,R0lGOD=" data-src="/real.jpg" alt="Lazy" width="300" height="200">`,
			want: []ImageRef{{URL: "https://example.com/real.jpg", Alt: "Lazy", Width: 300, Height: 200}},
		},
		{
			name: "whole page, not only the main content",
			html: `<nav><img src="/logo.svg" alt="Logo"></nav><main><p>Text</p><img src="/figure.png" alt="Figure"></main><footer><img src="/badge.png"></footer>`,
			want: []ImageRef{
				{URL: "https://example.com/logo.svg", Alt: "Logo"},
				{URL: "https://example.com/figure.png", Alt: "Figure"},
				{URL: "https://example.com/badge.png"},
			},
		},
		{
			name: "no images",
			html: `<p>Text only</p>`,
			want: []ImageRef{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := Transform([]byte(tc.html), "https://example.com/p/index.html", Options{OnlyMainContent: true, Want: Want{ImageDetails: true, Markdown: true}})
			require.NoError(t, err)
			require.Equal(t, tc.want, res.ImageDetails, "image details")
		})
	}

	res, err := Transform([]byte(`<img src="/a.png">`), "https://example.com/", Options{Want: Want{Images: true}})
	require.NoError(t, err)
	require.Nil(t, res.ImageDetails, "image details not asked for")
}

func TestLargestCandidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		srcset, want string
	}{
		{"", ""},
		{"a.jpg", "a.jpg"},
		{"a.jpg 100w, b.jpg 300w, c.jpg 200w", "b.jpg"},
		{"a.jpg 1x, b.jpg 1.5x, c.jpg 2x", "c.jpg"},
		{"a.jpg, b.jpg 2x", "b.jpg"},
		{"a.jpg 2x, b.jpg 500w", "b.jpg"},
		{"a.jpg 100w,b.jpg 200w", "b.jpg"},
		{"https://i.example.com/c_fill,w_100/p.jpg 100w, https://i.example.com/c_fill,w_900/p.jpg 900w", "https://i.example.com/c_fill,w_900/p.jpg"},
		{"  a.jpg   640w  ,\n b.jpg 1280w ", "b.jpg"},
		{"a.jpg 100w 50h, b.jpg 90w (junk, more)", "a.jpg"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, largestCandidate(tc.srcset), "largestCandidate(%q)", tc.srcset)
	}
}

func TestMetadata(t *testing.T) {
	t.Parallel()
	page := `<html lang="de"><head>
<title>Titel</title>
<meta name="description" content="Erste">
<meta name="description" content="Zweite">
<meta property="og:title" content="OG Titel">
<meta property="og:locale:alternate" content="en_US">
<meta name="twitter:card" content="summary">
<meta name="keywords" content="">
<meta name="custom" content="a"><meta name="custom" content="b"><meta name="custom" content="a">
<meta name="DCTERMS.created" content="2020-01-01">
<meta charset="utf-8"><meta http-equiv="refresh" content="5">
<link rel="shortcut icon" href="/fav.png">
</head><body><svg><title>Icon</title></svg></body></html>`
	res, err := Transform([]byte(page), "https://example.de/a/b", Options{})
	require.NoError(t, err)
	want := map[string]any{
		"title":               "Titel",
		"language":            "de",
		"description":         "Erste",
		"og:title":            "OG Titel",
		"ogTitle":             "OG Titel",
		"og:locale:alternate": "en_US",
		"ogLocaleAlternate":   []string{"en_US"},
		"twitter:card":        "summary",
		"custom":              []string{"a", "b"},
		"DCTERMS.created":     "2020-01-01",
		"dcTermsCreated":      "2020-01-01",
		"favicon":             "https://example.de/fav.png",
	}
	assert.Equal(t, want, res.Metadata, "metadata")
	if res.Markdown != "" || res.HTML != "" || res.Links != nil || res.Images != nil {
		t.Error("outputs not asked for were computed")
	}
}

func TestInvalidSelector(t *testing.T) {
	t.Parallel()
	for _, opts := range []Options{
		{IncludeTags: []string{"article", "div[unclosed"}},
		{ExcludeTags: []string{">>"}},
	} {
		_, err := Transform([]byte("<p>x</p>"), "", opts)
		assert.ErrorIs(t, err, ErrInvalidSelector, "Transform(%v)", opts)
	}
}

func TestMainContentFilter(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("Real article text that matters to the reader. ", 8)
	tests := []struct {
		name          string
		html          string
		url           string // https://example.com/ when empty
		want, wantNot []string
	}{
		{
			name:    "whole class tokens only",
			html:    `<article><div class="inside"><p>` + long + `</p></div><div class="side">Side junk</div><div class="topic">Topic text</div><div class="top">Top junk</div></article>`,
			want:    []string{"Real article text", "Topic text"},
			wantNot: []string{"Side junk", "Top junk"},
		},
		{
			name:    "main element preferred",
			html:    `<div class="intro">Intro outside main</div><main><p>` + long + `</p></main><div>After main</div>`,
			want:    []string{"Real article text"},
			wantNot: []string{"Intro outside main", "After main"},
		},
		{
			name:    "role main preferred",
			html:    `<div>Outside</div><div role="main"><p>` + long + `</p></div>`,
			want:    []string{"Real article text"},
			wantNot: []string{"Outside"},
		},
		{
			name:    "a tiny main is not the content",
			html:    `<main><p>Hero</p></main><div class="content"><p>` + long + long + long + `</p></div><footer>Foot</footer>`,
			want:    []string{"Real article text"},
			wantNot: []string{"Foot"},
		},
		{
			name:    "chrome that contains main is kept",
			html:    `<div class="sidebar-layout"><nav>Menu</nav><header><main><p>` + long + `</p></main></header></div>`,
			want:    []string{"Real article text"},
			wantNot: []string{"Menu"},
		},
		{
			name:    "cookie substring in a big block is kept",
			html:    `<div class="cookie-recipes"><h1>Cookies</h1><p>` + long + `</p></div><div class="cookie-notice">We use cookies.</div>`,
			want:    []string{"# Cookies", "Real article text"},
			wantNot: []string{"We use cookies"},
		},
		{
			name: "ids made from headings are not chrome",
			html: `<article><section id="cookie-objects"><h2>Cookie objects</h2><p>Short section.</p></section><section><p>` + long + `</p></section></article>`,
			want: []string{"Cookie objects", "Short section."},
		},
		{
			name:    "ad iframe removed, others kept out of the Markdown",
			html:    `<p>` + long + `</p><iframe src="https://googleads.g.doubleclick.net/x"></iframe>`,
			want:    []string{"Real article text"},
			wantNot: []string{"doubleclick"},
		},
		{
			name:    "hidden elements removed, tab panels kept",
			html:    `<p>` + long + `</p><div hidden>Hidden menu</div><div style="DISPLAY: NONE">Hidden promo</div><div role="tabpanel" hidden>Second tab</div><div hidden="until-found">Collapsed answer</div>`,
			want:    []string{"Real article text", "Second tab", "Collapsed answer"},
			wantNot: []string{"Hidden menu", "Hidden promo"},
		},
		{
			name:    "header with the title inside the article kept",
			html:    `<header>Site name</header><article><header><h1>Post title</h1></header><p>` + long + `</p></article>`,
			want:    []string{"# Post title"},
			wantNot: []string{"Site name"},
		},
		{
			name:    "skip links removed",
			html:    `<a class="skip-link" href="#main">Skip to content</a><p>` + long + `</p>`,
			want:    []string{"Real article text"},
			wantNot: []string{"Skip to content"},
		},
		{
			name: "the marked article body is the content",
			html: `<div class="teasers"><p>` + long + `</p><p>` + long + `</p></div><div class="entry-content"><p>Story: ` + long + `</p></div>`,
			want: []string{"Story: Real article text"}, wantNot: []string{"\n\nReal article text"},
		},
		{
			name: "a comment thread longer than the post goes",
			html: `<article><p>The post. ` + long + `</p><div id="comments"><h2 class="comments-title">3 comments</h2><p>` + long + long + long + `</p></div></article>`,
			want: []string{"The post."}, wantNot: []string{"3 comments", "reader. Real article text that matters to the reader. Real article text that matters to the reader. Real article text that matters to the reader. Real article text that matters to the reader. Real article text that matters to the reader. Real article text that matters to the reader. Real article text that matters to the reader. Real article text that matters to the reader. Real"},
		},
		{
			name: "a share bar goes by its links, a caption goes and its image stays",
			html: `<article><p>` + long + `</p><div><a href="https://www.facebook.com/sharer.php?u=x">f</a> <a href="https://twitter.com/intent/tweet?u=x">t</a> Share it</div>` +
				`<figure><img src="/a.png" alt="A chart"><figcaption>Photo: Agency</figcaption></figure></article>`,
			want: []string{"Real article text", "![A chart](https://example.com/a.png)"}, wantNot: []string{"Share it", "Photo: Agency"},
		},
		{
			name: "a menu of divs goes, a list or a table of links stays",
			html: `<article><p>` + long + `</p><div class="x"><a href="/1">One</a> <a href="/2">Two</a> <a href="/3">Three</a></div>` +
				`<ul><li><a href="/a">Listed link A</a></li><li><a href="/b">Listed link B</a></li></ul>` +
				`<div class="wrap"><table><tr><td><a href="/c">Cell link C</a></td><td><a href="/d">Cell link D</a></td></tr></table></div></article>`,
			want: []string{"Listed link A", "Cell link C"}, wantNot: []string{"One", "Three"},
		},
		{
			name: "an id made from a heading is not a marker",
			html: `<article><section id="how-do-i-share-global-variables"><h2>How do I share globals?</h2><p>` + long + `</p></section>` +
				`<section id="corresponding-functions"><h2>Corresponding functions</h2><p>` + long + `</p></section></article>`,
			want: []string{"How do I share globals?", "Corresponding functions"},
		},
		{
			name: "a class that hides an element on every screen removes it",
			html: `<article><p>` + long + `</p><div class="hidden">Sign up for the newsletter</div>` +
				`<div class="hidden md:block">Shown on wide screens</div><span class="sr-only">Opens in a new window</span></article>`,
			want: []string{"Real article text", "Shown on wide screens"}, wantNot: []string{"Sign up for", "Opens in a new"},
		},
		{
			name: "a dated article's list of links is related reading",
			html: `<html><head><meta property="article:published_time" content="2024-01-02T10:00:00Z"></head><body><article><p>` + long + `</p>` +
				`<h2>Read more</h2><ul><li><a href="/1">Another story one</a></li><li><a href="/2">Another story two</a></li><li><a href="/3">Another story three</a></li></ul></article></body></html>`,
			want: []string{"Real article text"}, wantNot: []string{"Another story", "Read more"},
		},
		{
			name: "an undated page's list of links is its own",
			html: `<article><p>` + long + `</p>` +
				`<h2>Read more</h2><ul><li><a href="/1">Another story one</a></li><li><a href="/2">Another story two</a></li><li><a href="/3">Another story three</a></li></ul></article>`,
			want: []string{"Real article text", "Another story one", "Read more"},
		},
		{
			name: "a marked wrapper of the article's paragraphs stays",
			html: `<article><header class="has-sharing"><h1>` + strings.Repeat("A long headline of the story ", 12) + `</h1></header>` +
				`<p>Written by the desk of the newspaper, in the city, today, with the agencies' reports.</p>` +
				`<div class="content__sharingContainer"><p>` + long + `</p><p>` + long + `</p></div></article>`,
			want: []string{"Real article text"},
		},
		{
			name: "chrome inside removed chrome is counted once",
			html: `<div>` + strings.Repeat("Unmarked text outside the main element. ", 7) + `</div><main><div class="share-box"><nav>Navigation links of the share box</nav>Share this with friends</div>` +
				`<p>The short story of this page, told in one sentence or so.</p></main>`,
			want: []string{"The short story"}, wantNot: []string{"Unmarked text outside", "Share this"},
		},
		{
			name: "a contact box is not the text",
			html: `<article><p>` + long + `</p><div class="contact-person">Press office, call 555 0100</div></article>`,
			want: []string{"Real article text"}, wantNot: []string{"Press office"},
		},
		{
			name: "a heading whose section the rules emptied goes, wherever it stood",
			html: `<article><p>` + long + `</p><div class="box-header"><h2>More on this topic</h2></div>` +
				`<div class="related-list"><a href="/1">Another story one</a> <a href="/2">Another story two</a></div></article>`,
			want: []string{"Real article text"}, wantNot: []string{"More on this topic", "Another story"},
		},
		{
			name: "text set as headings stays when what followed it went",
			html: `<article><p>` + long + `</p><h1>Keep our waters clean</h1><blockquote><h2>A contest for children</h2>` +
				`<h3>Held for the sixth time this year: children from six to twelve are asked to send their posters in.</h3></blockquote>` +
				`<div class="entry-meta">Post views: 22</div></article>`,
			want: []string{"Keep our waters clean", "A contest for children", "Held for the sixth time"}, wantNot: []string{"Post views"},
		},
		{
			name: "a link alone back up the site is navigation",
			url:  "https://example.com/news/story-one",
			html: `<article><p>` + long + `</p><p><a href="/news/">Back to all news</a></p><p><a href="/">Home</a></p>` +
				`<p>See <a href="/news/">the news page</a> for more.</p><p><a href="/news/story-two">The next story</a></p></article>`,
			want: []string{"Real article text", "the news page", "The next story"}, wantNot: []string{"Back to all news", "Home"},
		},
		{
			name: "a marker on every block of the article is the page's layout",
			html: `<article><div class="elementor-widget-wrap"><p>` + long + `</p></div><div class="elementor-widget-wrap"><p>` + long + `</p></div>` +
				`<div class="elementor-widget-wrap"><p>` + long + `</p></div><div class="sidebar-box">Sidebar junk</div></article>`,
			want: []string{"Real article text"}, wantNot: []string{"Sidebar junk"},
		},
		{
			name: "a rating widget set as a span under a division goes; a marked span in a sentence stays",
			html: `<article><div class="entry-content"><p>` + long + ` It was <span class="rating-word">rated well</span> by all.</p>` +
				`<span class="post-ratings"><strong>Was this article useful?</strong> (No ratings yet)</span></div></article>`,
			want: []string{"Real article text", "rated well"}, wantNot: []string{"Was this article useful", "No ratings yet"},
		},
		{
			name: "a paywall's offer goes, the text it covers stays",
			html: `<article><div class="paywall-content"><p>` + long + `</p><p>` + long + `</p></div>` +
				`<aside class="gate" id="paywall"><h3>Choose your plan and read on:</h3><p>Subscribe for a dollar a week.</p></aside></article>`,
			want: []string{"Real article text"}, wantNot: []string{"Choose your plan", "a dollar a week"},
		},
		{
			name: "an ad slot's label goes",
			html: `<article><p>` + long + `</p><div class="slot">- Advertisement -</div><p>` + long + `</p><p>Ad</p>` +
				`<p>An ad for the shop ran in the paper.</p><pre><code>show(<span class="n">advertisement</span>)</code></pre></article>`,
			want: []string{"Real article text", "An ad for the shop", "show(advertisement)"}, wantNot: []string{"Advertisement -", "\nAd\n"},
		},
		{
			name: "a long comment thread does not hide the story's marked body",
			html: `<span class="body" role="main"><div class="story"><h1>The story</h1><div itemprop="articleBody"><p>` + long + `</p></div></div></span>` +
				`<span class="body" role="main"><div class="sect-comments">` + strings.Repeat(`<p>A reader's comment, which goes on about the story at some length.</p>`, 30) + `</div></span>`,
			want: []string{"Real article text"}, wantNot: []string{"A reader's comment"},
		},
		{
			name: "a commentary is an opinion column, not a comment thread",
			html: `<article><h1>Column</h1><div class="text commentary"><p>` + long + `</p></div><div class="comments"><p>A reader's comment on the column.</p></div></article>`,
			want: []string{"Real article text"}, wantNot: []string{"A reader's comment"},
		},
		{
			name: "a header in the content that holds paragraphs is the text",
			html: `<main><p>` + long + `</p><header class="description"><p>` + strings.Repeat("Prose set in a header tag by the site. ", 8) + `</p></header>` +
				`<header class="label">Section label</header></main>`,
			want: []string{"Real article text", "Prose set in a header tag"}, wantNot: []string{"Section label"},
		},
		{
			name: "an embedded post in a blockquote is a quote of the text's",
			html: `<article><p>` + long + `</p><blockquote class="twitter-tweet"><p>What the post said about it all.</p>— Someone (@someone)</blockquote>` +
				`<div class="tweet-button">Tweet this</div></article>`,
			want: []string{"Real article text", "What the post said"}, wantNot: []string{"Tweet this"},
		},
		{
			name: "an index page keeps its links",
			html: `<main><h1>Library</h1><p>The modules of this chapter.</p><div class="toctree"><ul>` +
				strings.Repeat(`<li><a href="/m">A module of the library</a></li>`, 12) + `</ul></div></main>`,
			want: []string{"A module of the library"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := tc.url
			if url == "" {
				url = "https://example.com/"
			}
			res, err := Transform([]byte(tc.html), url, DefaultOptions())
			require.NoError(t, err)
			for _, w := range tc.want {
				assert.Contains(t, res.Markdown, w, "markdown")
			}
			for _, w := range tc.wantNot {
				assert.NotContains(t, res.Markdown, w, "markdown")
			}
		})
	}
}

func TestOnlyMainContentOff(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("testdata", "chrome.html"))
	require.NoError(t, err)
	res, err := Transform(raw, "https://news.example.com/", Options{Want: Want{Markdown: true}})
	require.NoError(t, err)
	for _, w := range []string{"Most read", "Example News Ltd.", "Fishing fleets", "Skip to content"} {
		if !strings.Contains(res.Markdown, w) {
			t.Errorf("markdown lacks %q", w)
		}
	}
	for _, w := range []string{"dataLayer", "analytics", "tracker"} {
		if strings.Contains(res.Markdown, w) {
			t.Errorf("markdown holds %q", w)
		}
	}
}

func TestHTMLOutput(t *testing.T) {
	t.Parallel()
	page := `<html><head><title>T</title><style>p{}</style></head><body>
<!-- a comment --><script>alert(1)</script><noscript>enable js</noscript>
<main><p><a href="x">x</a> <img src="data:image/png;base64,AAAA" alt="b"> <img src="i.png" srcset="i.png 1x, i2.png 2x"></p></main></body></html>`
	res, err := Transform([]byte(page), "https://example.com/d/", Options{
		OnlyMainContent: true, RemoveBase64Images: true, Want: Want{HTML: true, Markdown: true},
	})
	require.NoError(t, err)
	for _, w := range []string{
		`<a href="https://example.com/d/x">x</a>`,
		`src="data:image/png;base64,AAAA"`,
		`srcset="https://example.com/d/i.png 1x, https://example.com/d/i2.png 2x"`,
	} {
		assert.Contains(t, res.HTML, w, "html")
	}
	for _, w := range []string{"comment", "alert", "enable js", "<title>", "<style>"} {
		assert.NotContains(t, res.HTML, w, "html")
	}
	assert.Equal(t, "[x](https://example.com/d/x) ![b](<Base64-Image-Removed>) ![](https://example.com/d/i.png)", res.Markdown, "markdown")
}

func TestMarkdownLinks(t *testing.T) {
	t.Parallel()
	page := `<p><a name="anchor">Named anchor</a>, <a href="javascript:go()">a script</a>, <a href="/ok">ok</a>, <a href="/icon"><svg><title>icon</title></svg></a>.</p>
<h2 id="s">Section<a class="headerlink" href="#s" title="Permalink">¶</a></h2><h3 id="t">Other <a href="#t">#</a></h3>`
	res, err := Transform([]byte(page), "https://example.com/", Options{Want: Want{Markdown: true}})
	require.NoError(t, err)
	want := "Named anchor, a script, [ok](https://example.com/ok), .\n\n## Section\n\n### Other"
	assert.Equal(t, want, res.Markdown, "markdown")
}

func TestTidy(t *testing.T) {
	t.Parallel()
	in := "- a\n  \n  b\n\n| x | p1<br /><br />p2 |\n\n```\n| x | <br /> |\n   \n```"
	want := "- a\n\n  b\n\n| x | p1 p2 |\n\n```\n| x | <br /> |\n   \n```"
	assert.Equal(t, want, tidy(in), "tidy")
}

// TestConcurrentTransforms runs the testdata pages through Transform from
// several goroutines at once (the Markdown converter is shared); go test
// -race checks it.
func TestConcurrentTransforms(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.html"))
	require.NoError(t, err)
	want := make(map[string]string, len(paths))
	pages := make(map[string][]byte, len(paths))
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		require.NoError(t, err)
		res, err := Transform(raw, "https://example.com/", DefaultOptions())
		require.NoError(t, err)
		pages[p], want[p] = raw, res.Markdown
	}
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for p, raw := range pages {
				res, err := Transform(raw, "https://example.com/", DefaultOptions())
				if err == nil && res.Markdown != want[p] {
					err = errors.New(p + ": markdown differs between runs")
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		assert.NoError(t, <-errs)
	}
}
