// Package parse turns document bytes (PDF, DOCX, ODT, RTF, DOC, XLSX, XLS)
// into structured HTML and Markdown, each format read into one intermediate
// structure (Body) first. It owns the format-specific decoding and the
// layout analysis that recovers reading order, headings, lists and tables.
//
// It never fetches anything: callers hand it bytes they already hold, and it
// bounds its own time (through the context) and memory (through page, glyph
// and stream caps) so that a hostile document cannot take the service down.
package parse

import (
	"context"
	"errors"
	"fmt"
)

// Document is a parsed document.
type Document struct {
	// HTML is structured HTML: <h1>..<h6> for headings, <p> for paragraphs,
	// <ul>/<ol> for lists and <table> where a table was detected, with one
	// <section data-page="N"> per page.
	HTML string
	// Markdown is the same content as Markdown (tables as pipe tables).
	Markdown string
	// Pages is the number of pages the document has (not only those parsed).
	Pages int
	// Title comes from the document information dictionary, else from XMP.
	Title string
	// Author comes from the document information dictionary, else from XMP.
	Author string
	// Warnings are non-fatal problems a user may want to know about, such as
	// "page 3 has no text layer".
	Warnings []string
}

// MaxUpload is the largest document file Trawler takes to parse: an upload
// to POST /v2/parse, or a local file given to trawler parse.
const MaxUpload = 50 << 20

// Errors that callers branch on; all are client errors (the document, not the
// service, is at fault), so the API can map them to 4xx statuses.
var (
	// ErrMalformed means the bytes are not a document of the expected format
	// or are too damaged to read.
	ErrMalformed = errors.New("malformed document")
	// ErrEncrypted means the document is encrypted with a password we do not
	// have, or with an encryption scheme we cannot decrypt.
	ErrEncrypted = errors.New("encrypted document")
	// ErrTooLarge means the document exceeds a size limit before parsing
	// starts (limits reached while parsing produce warnings instead).
	ErrTooLarge = errors.New("document too large")
	// ErrUnsupported means the package has no reader for the format.
	ErrUnsupported = errors.New("unsupported document format")
)

// Parse reads data as the named format (as Sniff names it). HTML is not a
// format here: web pages go through the content package.
func Parse(ctx context.Context, format string, data []byte) (*Document, error) {
	read, ok := readers[format]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnsupported, format)
	}
	return read(ctx, data)
}

// Outputs names the renderings of a document to produce.
type Outputs struct {
	HTML, Markdown bool
}

// ParseOutputs is Parse producing only the renderings out names, leaving
// the others empty; what it produces is what Parse would. A rendering is
// about as large as the document's text, so a caller that needs only the
// Markdown spares the memory (and time) of the HTML.
func ParseOutputs(ctx context.Context, format string, data []byte, out Outputs) (*Document, error) {
	// The readers learn it from ctx, so that their signatures (and the
	// exported per-format functions, which produce both) stay as they are.
	return Parse(context.WithValue(ctx, outputsKey{}, out), format, data)
}

type outputsKey struct{}

// renderFor renders body as ParseOutputs asked through ctx, or both
// renderings when nothing was asked.
func renderFor(ctx context.Context, body *Body) (htmlOut, markdown string) {
	return body.render(outputsFor(ctx))
}

// outputsFor is what ParseOutputs asked for through ctx, or both
// renderings when nothing was asked.
func outputsFor(ctx context.Context) Outputs {
	out, ok := ctx.Value(outputsKey{}).(Outputs)
	if !ok {
		out = Outputs{HTML: true, Markdown: true}
	}
	return out
}

// readers maps a format to its reader.
var readers = map[string]func(context.Context, []byte) (*Document, error){
	"pdf":  PDF,
	"docx": DOCX,
	"odt":  ODT,
	"rtf":  RTF,
	"doc":  DOC,
	"xlsx": XLSX,
	"xls":  XLS,
}

// Supported reports whether Parse reads format.
func Supported(format string) bool { return readers[format] != nil }

// Limits on the work one document may cause. Reaching the page, glyph or text
// limit truncates the output with a warning; the input limit is an error.
const (
	// MaxInputBytes is the largest input PDF accepts.
	MaxInputBytes = 512 << 20
	// MaxPages is how many pages PDF parses; later pages are skipped.
	MaxPages = 2000
	// maxGlyphsPerPage caps the glyphs kept from one page.
	maxGlyphsPerPage = 200_000
	// maxTextRunes caps the text kept from the whole document.
	maxTextRunes = 20_000_000
	// maxStreamBytes caps the decoded size of one content stream, form or
	// CMap, which guards against compression bombs.
	maxStreamBytes = 64 << 20
	// maxFormDepth caps nesting of form XObjects.
	maxFormDepth = 8
)
