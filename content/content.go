// Package content turns a page's HTML into model-ready content: the
// main-content filter, include/exclude selectors, cleaned HTML, Markdown,
// links, images, page metadata and the publication date. It never fetches
// anything.
//
// Transform parses the page once and works on that one tree: metadata,
// links, images and the publication date are collected from the whole
// page, then the selectors and the main-content filter prune the body, and
// the pruned tree is rendered to HTML and handed to the Markdown converter
// as it is. A page nested deeper than the HTML parser takes is parsed
// again, flattened past a depth (see parseHTML), and lists and quotes
// nested past a bound are flattened before the Markdown conversion (see
// flattenIndents); either says so in Result.Warning.
package content

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/andybalholm/cascadia"
	"golang.org/x/net/html"
)

// ErrInvalidSelector is wrapped by Transform's error when an include or
// exclude tag is not a valid CSS selector.
var ErrInvalidSelector = errors.New("invalid CSS selector")

// Options selects the filters Transform applies and the outputs it computes.
// The zero value filters nothing and computes only metadata; DefaultOptions
// gives the spec's defaults.
type Options struct {
	// OnlyMainContent drops page chrome (headers, navigation, footers,
	// sidebars, cookie and newsletter popups, share widgets, ads, hidden
	// elements) and,
	// when the page marks its main content (<main>, [role=main], a single
	// <article>), keeps only that. It is skipped when IncludeTags is set:
	// an explicit selection wins.
	OnlyMainContent bool
	// IncludeTags are CSS selectors; when set, only the matching elements
	// (with their subtrees) are kept, in document order.
	IncludeTags []string
	// ExcludeTags are CSS selectors; matching elements are removed.
	ExcludeTags []string
	// RemoveBase64Images replaces the URL of every data: image in the
	// Markdown by the placeholder <Base64-Image-Removed>, keeping its alt
	// text. The HTML output is not affected.
	RemoveBase64Images bool
	// Want lists the outputs to compute; the others are left empty.
	Want Want
}

// Want lists the outputs Transform computes. Metadata and the publication
// date are always computed.
type Want struct {
	Markdown bool
	HTML     bool
	Links    bool
	Images   bool
	// ImageDetails asks for Result.ImageDetails.
	ImageDetails bool
}

// DefaultOptions returns the spec's defaults: main content only, base64
// images removed from the Markdown, and Markdown as the only output.
func DefaultOptions() Options {
	return Options{OnlyMainContent: true, RemoveBase64Images: true, Want: Want{Markdown: true}}
}

// Result is what Transform makes of a page. Members not asked for in
// Options.Want are empty.
type Result struct {
	// HTML is the cleaned <body> after the filters: scripts, styles,
	// noscript, templates, comments and the head's metadata are removed
	// (hidden elements too, with OnlyMainContent) and relative URLs are
	// made absolute.
	HTML string
	// Markdown is the cleaned body as Markdown.
	Markdown string
	// Links are the page's http(s) links, absolute, without #fragments,
	// deduplicated, in document order, taken from the whole page (not only
	// the main content).
	Links []string
	// Images are the page's image URLs, absolute and deduplicated: each
	// img src and its largest srcset candidate, <picture> sources and
	// og:image, from the whole page.
	Images []string
	// ImageDetails describes the page's images, one entry per distinct
	// absolute image URL, og:image first and then in document order (as
	// Images), from the whole page: each <img> (its src, or its largest
	// srcset candidate when it has no src), <picture> source and og:image.
	// Tracking pixels (both sizes given and at most 2) are left out. An
	// image that appears again fills the alt text and the size its first
	// entry lacks.
	ImageDetails []ImageRef
	// Metadata holds the page metadata in Firecrawl's shape: title,
	// description, language, favicon, og* and dc* members, and every
	// <meta name|property|itemprop> under its own name (a name that
	// repeats with different values gives a []string).
	Metadata map[string]any
	// Published is the article's publication date in UTC, as the page's
	// metadata, structured data or <time> elements give it (see
	// Transform); zero when the page gives none. It is always computed.
	Published time.Time
	// Warning says what Transform had to change in the page to read it:
	// a page nested deeper than the HTML parser takes is flattened past a
	// depth (its text, headings, links and images kept), and lists and
	// quotes nested more than 8 deep are flattened in the Markdown (their
	// text, links and images kept). Empty when the page was read as it is.
	Warning string
}

// ImageRef is one image of a page, as Result.ImageDetails gives it.
type ImageRef struct {
	// URL is the image's absolute http(s) URL.
	URL string
	// Alt is the image's alt text (og:image:alt for an og:image; a
	// <picture> source shares its <img>'s); empty when there is none.
	Alt string
	// Width and Height are the size in pixels the page gives (width and
	// height attributes as plain integers or "NNNpx", og:image:width and
	// og:image:height); 0 when not given.
	Width, Height int
}

// Transform turns rawHTML, a UTF-8 HTML page served at pageURL, into
// cleaned content. pageURL (with the page's <base href>) resolves relative
// URLs; it may be empty, in which case relative links cannot be made
// absolute and are left out of Links.
//
// Result.Published is taken from the first of these that holds a date no
// more than a day ahead of now: <meta property="article:published_time">;
// og:published_time or og:article:published_time; an itemprop=datePublished
// element's content or datetime; a JSON-LD datePublished (at the top level,
// in @graph or in an array of objects); <meta name="date">; DC.date.issued
// or dcterms.issued; DC.date; parsely-pub-date; sailthru.date; and the
// datetime of a <time> inside <article> or <main> or with pubdate, the
// first one first. Values are read as RFC 3339 (seconds and zone
// optional), 2006-01-02, "2006-01-02 15:04:05" or RFC 1123; a value that is
// none of them is passed over.
func Transform(rawHTML []byte, pageURL string, opts Options) (*Result, error) {
	include, err := compileSelectors(opts.IncludeTags)
	if err != nil {
		return nil, err
	}
	exclude, err := compileSelectors(opts.ExcludeTags)
	if err != nil {
		return nil, err
	}

	root, warning, err := parseHTML(rawHTML)
	if err != nil {
		return nil, fmt.Errorf("parsing html: %w", err)
	}
	p := newPage(root, pageURL)
	p.collect()

	res := &Result{Metadata: p.metadata(), Published: p.published(time.Now()), Warning: warning}
	if opts.Want.Links {
		res.Links = p.links()
	}
	if opts.Want.Images {
		res.Images = p.images()
	}
	if opts.Want.ImageDetails {
		res.ImageDetails = p.imageDetails()
	}
	if !opts.Want.HTML && !opts.Want.Markdown {
		return res, nil
	}

	body := p.body
	if include != nil {
		keepOnly(body, goquery.NewDocumentFromNode(body).FindMatcher(include).Nodes)
	}
	if exclude != nil {
		for _, n := range goquery.NewDocumentFromNode(body).FindMatcher(exclude).Nodes {
			detach(n)
		}
	}
	if opts.OnlyMainContent && include == nil {
		p.keepMainContent(!res.Published.IsZero())
	}

	if opts.Want.HTML {
		p.absolutize(body)
		var b strings.Builder
		if err := html.Render(&b, body); err != nil {
			return nil, fmt.Errorf("rendering html: %w", err)
		}
		res.HTML = b.String()
	}
	if opts.Want.Markdown {
		// The converter rewrites the tree it is given, so it runs last,
		// after flattenIndents bounds the lists and quotes whose nesting
		// costs it the square of their depth; the HTML, rendered above,
		// keeps them.
		if flattenIndents(body) && res.Warning == "" {
			res.Warning = indentWarning()
		}
		md, err := toMarkdown(body, p.baseString(), opts.RemoveBase64Images)
		if err != nil {
			return nil, fmt.Errorf("converting to markdown: %w", err)
		}
		res.Markdown = md
	}
	return res, nil
}

// compileSelectors compiles the selectors into one that matches any of
// them; nil when there are none.
func compileSelectors(sels []string) (cascadia.Selector, error) {
	var group []cascadia.Selector
	for _, s := range sels {
		if strings.TrimSpace(s) == "" {
			continue
		}
		m, err := cascadia.Compile(s)
		if err != nil {
			return nil, fmt.Errorf("%w %q: %v", ErrInvalidSelector, s, err)
		}
		group = append(group, m)
	}
	switch len(group) {
	case 0:
		return nil, nil
	case 1:
		return group[0], nil
	}
	return func(n *html.Node) bool {
		for _, m := range group {
			if m(n) {
				return true
			}
		}
		return false
	}, nil
}

// keepOnly makes the outermost of nodes (all descendants of body, in
// document order) body's only children.
func keepOnly(body *html.Node, nodes []*html.Node) {
	kept := make(map[*html.Node]bool, len(nodes))
	var outer []*html.Node
	for _, n := range nodes {
		inside := false
		for a := n.Parent; a != nil && a != body; a = a.Parent {
			if kept[a] {
				inside = true
				break
			}
		}
		if !inside {
			kept[n] = true
			outer = append(outer, n)
		}
	}
	for c := body.FirstChild; c != nil; c = body.FirstChild {
		body.RemoveChild(c)
	}
	for _, n := range outer {
		detach(n)
		body.AppendChild(n)
	}
}

// detach removes n from its parent, if it has one.
func detach(n *html.Node) {
	if n.Parent != nil {
		n.Parent.RemoveChild(n)
	}
}
