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

var appShells = [][]byte{
	[]byte(`<div id="root"></div>`), []byte(`<div id="app"></div>`), []byte(`<div id="__next"></div>`),
	[]byte(`<div id="root"/>`), []byte(`<app-root></app-root>`), []byte(`<div id="svelte"></div>`),
	[]byte(` ng-app=`), []byte(` ng-app>`), []byte(` ng-app `), []byte(` data-ng-app`), []byte(`data-reactroot=""></div>`), []byte(`You need to enable JavaScript`),
	[]byte(`enable JavaScript to run this app`), []byte(`window.location.replace(`), []byte(`http-equiv="refresh"`),
}

// ServerRendered reports whether an HTML document (in UTF-8: see
// Decode) already holds its content, so that it may be taken without
// rendering: enough visible text, and no sign of a client-rendered app
// shell or a script redirect. When in doubt it says no, and the page is
// rendered.
func ServerRendered(body []byte, contentType string) bool {
	if !IsHTML(contentType) || len(body) == 0 {
		return false
	}
	lower := bytes.ToLower(body)
	for _, m := range appShells {
		if bytes.Contains(lower, bytes.ToLower(m)) {
			return false
		}
	}
	return visibleText(lower, 200) >= 200
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
