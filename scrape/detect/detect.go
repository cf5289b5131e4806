// Package detect tells what a response is from its media type, its URL
// and its bytes, the same way on every path a page is taken (the Go
// client, a tab's network layer, fetch() in a tab, an upload): a document
// for package parse, a text body, HTML a server rendered completely or an
// app shell that needs rendering; and it decodes a body to UTF-8 as a
// browser would.
package detect

import (
	"bytes"
	"mime"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/net/html"

	"github.com/trawler-dev/trawler/parse"
)

// DocumentKind names the document parser for a response ("pdf", "docx",
// ...), or "" for a page the browser renders: by its media type, or by the
// URL's extension when the server does not say what the bytes are.
func DocumentKind(contentType, rawURL string) string {
	if k := parse.FormatOfMediaType(contentType); k != "" && k != "html" {
		return k
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt == "" || slices.Contains(unlabelledTypes, mt) {
		if u, err := url.Parse(rawURL); err == nil {
			if k := parse.FormatOfName(u.Path); k != "" && k != "html" {
				return k
			}
		}
	}
	return ""
}

// unlabelledTypes are media types that say only "some bytes": the URL's
// extension names the document then.
var unlabelledTypes = []string{"application/octet-stream", "binary/octet-stream", "application/zip",
	"application/x-zip-compressed", "application/download", "application/force-download", "application/x-download"}

// DocumentTypesJS and DocumentExtensionsJS are regular expressions (as
// JavaScript source) for the media types and URL paths DocumentKind takes
// as documents, for a tab's fetch script.
var (
	DocumentTypesJS      = jsAlternation(parse.MediaTypes(), `^\s*(`, `)\s*(;|$)`)
	DocumentExtensionsJS = jsAlternation(parse.DocumentExtensions(), `(`, `)$`)
	UnlabelledTypesJS    = jsAlternation(unlabelledTypes, `^\s*(`, `)\s*(;|$)`)
)

func jsAlternation(items []string, open, close string) string {
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = regexp.QuoteMeta(s)
	}
	return "/" + open + strings.ReplaceAll(strings.Join(quoted, "|"), "/", `\/`) + close + "/i"
}

// TextType names what a response of contentType is when the browser shows
// it as text (what a tab's fetch script calls kind "text"): "json", "xml",
// "markdown" or "plain"; "" for anything else (HTML, documents, media).
// Such a body is kept as it came, in UTF-8.
func TextType(contentType string) string {
	mt, _, _ := mime.ParseMediaType(contentType)
	sub, isApp := strings.CutPrefix(mt, "application/")
	switch {
	case IsHTML(contentType):
		return ""
	case mt == "application/json" || isApp && strings.HasSuffix(sub, "+json"):
		return "json"
	case mt == "application/xml" || mt == "text/xml" || isApp && strings.HasSuffix(sub, "+xml"):
		return "xml"
	case mt == "text/markdown":
		return "markdown"
	case strings.HasPrefix(mt, "text/") || mt == "application/javascript":
		return "plain"
	}
	return ""
}

// IsHTML says whether a response of contentType is a web page, whatever
// its charset (Decode reads that).
func IsHTML(contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	return mt == "text/html" || mt == "application/xhtml+xml"
}

// appShells are marks of a page a script builds, in lower case as the
// body is searched: an empty mount point, an AngularJS app, a notice that
// the page needs JavaScript.
var appShells = [][]byte{
	[]byte(`<div id="root"></div>`), []byte(`<div id="app"></div>`), []byte(`<div id="__next"></div>`),
	[]byte(`<div id="root"/>`), []byte(`<app-root></app-root>`), []byte(`<div id="svelte"></div>`),
	[]byte(` ng-app=`), []byte(` ng-app>`), []byte(` ng-app `), []byte(` data-ng-app`), []byte(`data-reactroot=""></div>`), []byte(`you need to enable javascript`),
	[]byte(`enable javascript to run this app`),
}

const (
	// enoughText is the visible text a page must show to be taken as it
	// came: more than a "Loading…" or a bare list of links.
	enoughText = 200
	// enoughBesideRedirect is the text a page whose script may send the
	// browser elsewhere must show: a redirect notice ("redirecting; if
	// nothing happens, follow this link") is a line or two, while a page
	// with paragraphs of its own holds its content whatever such a script
	// does later (drops a tracking parameter and reloads, sends an old
	// browser or another country elsewhere).
	enoughBesideRedirect = 1000
	// soonRefresh is the longest delay, in seconds, of a meta refresh that
	// is a redirect: the browser leaves before anyone reads the page, and a
	// render may wait for it. A longer one is an auto-reload (a news front
	// page every few minutes), and the page shows its content meanwhile.
	soonRefresh = 5
)

// ServerRendered reports whether an HTML document (in UTF-8: see
// Decode) already holds its content, so that it may be taken without
// rendering: enough visible text, no sign of a client-rendered app shell,
// no meta refresh due soon, and more than a redirect notice's text when a
// script may set the page's location. When in doubt it says no, and the
// page is rendered.
func ServerRendered(body []byte, contentType string) bool {
	if !IsHTML(contentType) || len(body) == 0 {
		return false
	}
	lower := lowerASCII(body)
	for _, m := range appShells {
		if bytes.Contains(lower, m) {
			return false
		}
	}
	text := visibleText(lower, enoughBesideRedirect)
	if text < enoughText {
		return false
	}
	scripted := text < enoughBesideRedirect && navigates(lower)
	if !scripted && !hasRefresh(lower) {
		return true
	}
	soon, scripted := redirects(body)
	return !soon && (!scripted || text >= enoughBesideRedirect)
}

// hasRefresh says whether lower-case HTML may hold a meta refresh: an
// http-equiv attribute of "refresh", wherever it is (redirects reads it as
// the browser does).
func hasRefresh(lower []byte) bool {
	for off := 0; ; {
		i := bytes.Index(lower[off:], []byte("http-equiv"))
		if i < 0 {
			return false
		}
		off += i + len("http-equiv")
		v := bytes.TrimLeft(lower[off:], " \t\n\r\f")
		if v, ok := bytes.CutPrefix(v, []byte("=")); ok {
			v = bytes.TrimLeft(v, " \t\n\r\f\"'")
			if bytes.HasPrefix(v, []byte("refresh")) {
				return true
			}
		}
	}
}

// navigates says whether lower-case script text navigates the page:
// location, or its href, set, or its replace or assign called; not another
// window's (an iframe's contentWindow.location, as lazy-loading libraries
// set it), nor a property of another object named location.
func navigates(lower []byte) bool {
	for off := 0; ; {
		i := bytes.Index(lower[off:], []byte("location"))
		if i < 0 {
			return false
		}
		i += off
		off = i + len("location")
		before := lower[:i]
		for _, w := range []string{"window.", "document.", "self.", "top."} {
			if b, ok := bytes.CutSuffix(before, []byte(w)); ok {
				before = b
				break
			}
		}
		if len(before) > 0 && isIdentOrDot(before[len(before)-1]) {
			continue
		}
		after := lower[off:]
		if a, ok := bytes.CutPrefix(after, []byte(".href")); ok {
			after = a
		} else if a, ok := cutMethod(after); ok {
			if bytes.HasPrefix(bytes.TrimLeft(a, " \t\n\r"), []byte("(")) {
				return true
			}
			continue
		}
		after = bytes.TrimLeft(after, " \t\n\r")
		if len(after) > 0 && after[0] == '=' && (len(after) == 1 || after[1] != '=') {
			return true
		}
	}
}

// cutMethod cuts .replace or .assign, location's navigating methods, off
// the front of b.
func cutMethod(b []byte) ([]byte, bool) {
	if a, ok := bytes.CutPrefix(b, []byte(".replace")); ok {
		return a, true
	}
	return bytes.CutPrefix(b, []byte(".assign"))
}

// isIdentOrDot says whether c, in lower-case script, may end a name or a
// property access.
func isIdentOrDot(c byte) bool {
	return c == '.' || c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c >= 0x80
}

// redirects reads what may take the browser off the page, as Chromium
// runs it: a meta refresh due within soonRefresh seconds (soon), or a
// script that sets the page's location (scripted). Comments (old IE's
// conditional ones among them), noscript and scripts of other types than
// JavaScript do not run, and are passed over.
func redirects(body []byte) (soon, scripted bool) {
	z := html.NewTokenizer(bytes.NewReader(body))
	inScript := false
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return false, scripted
		case html.StartTagToken, html.SelfClosingTagToken:
			name, more := z.TagName()
			switch string(name) {
			case "meta":
				var equiv, content string
				for more {
					var k, v []byte
					k, v, more = z.TagAttr()
					switch string(k) {
					case "http-equiv":
						equiv = string(v)
					case "content":
						content = string(v)
					}
				}
				if strings.EqualFold(strings.TrimSpace(equiv), "refresh") {
					if delay, ok := refreshDelay(content); ok && delay <= soonRefresh {
						return true, scripted
					}
				}
			case "script":
				typ := ""
				for more {
					var k, v []byte
					k, v, more = z.TagAttr()
					if string(k) == "type" {
						typ = string(v)
					}
				}
				inScript = tt == html.StartTagToken && isJavaScript(typ)
				continue
			}
		case html.TextToken:
			if inScript && navigates(lowerASCII(z.Raw())) {
				scripted = true
			}
		}
		inScript = false
	}
}

// refreshDelay is the delay in seconds of a meta refresh's content ("5",
// "0; url=/next"), read as the HTML standard's declarative refresh reads
// it: ok is false for content the browser ignores.
func refreshDelay(content string) (delay int, ok bool) {
	s := strings.TrimLeft(content, "\t\n\f\r ")
	digits := len(s) - len(strings.TrimLeft(s, "0123456789"))
	if digits == 0 && !strings.HasPrefix(s, ".") {
		return 0, false
	}
	for _, c := range s[:digits] {
		delay = min(delay*10+int(c-'0'), 1<<20)
	}
	return delay, true
}

// isJavaScript says whether a script of this type attribute runs: no type,
// a JavaScript media type or a module. Data blocks (JSON-LD, templates)
// and scripts held back until consent (type="text/plain") do not.
func isJavaScript(typ string) bool {
	t := strings.ToLower(strings.TrimSpace(typ))
	if i := strings.IndexByte(t, ';'); i >= 0 {
		t = strings.TrimSpace(t[:i])
	}
	return t == "" || t == "module" || strings.Contains(t, "javascript") || strings.Contains(t, "ecmascript") || t == "text/jscript"
}

// lowerASCII is b with its ASCII letters in lower case: what HTML's names
// and the marks above need, without bytes.ToLower's decoding of every
// rune of a page that is not all ASCII.
func lowerASCII(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

// visibleText estimates how many characters of text the body shows, outside
// tags, scripts and styles, counting no further than enough.
func visibleText(lower []byte, enough int) int {
	i := bytes.Index(lower, []byte("<body"))
	if i < 0 {
		i = 0
	}
	n, inTag := 0, false
	skip := []byte(nil)
	for j := i; j < len(lower); j++ {
		c := lower[j]
		if skip != nil {
			if c == '<' && bytes.HasPrefix(lower[j:], skip) {
				skip = nil
				inTag = true
			}
			continue
		}
		switch {
		case c == '<':
			inTag = true
			if bytes.HasPrefix(lower[j:], []byte("<script")) {
				skip = []byte("</script")
			} else if bytes.HasPrefix(lower[j:], []byte("<style")) {
				skip = []byte("</style")
			}
		case c == '>':
			inTag = false
		case !inTag && c > ' ':
			n++
			if n >= enough {
				return n
			}
		}
	}
	return n
}
