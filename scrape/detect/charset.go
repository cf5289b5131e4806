package detect

import (
	"bytes"
	"encoding/xml"
	"io"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
)

// Decode is a page's body as UTF-8, decoded as a browser decodes a
// response of contentType: by its byte order mark, else the header's
// charset, else what the body says of itself (an HTML page's <meta>, an
// XML document's declaration); JSON and XML that say nothing are UTF-8.
// Any other body that names no encoding is UTF-8 when it is valid UTF-8;
// otherwise ok is false, and the browser's own decoder (which may guess,
// as Go should not) says what the page shows. Every way a page is taken
// calls it: whatever is parsed, cached or handed to a tab as UTF-8 is.
func Decode(body []byte, contentType string) (_ []byte, ok bool) {
	if TextType(contentType) == "json" && utf8.Valid(body) {
		// JSON is UTF-8 (RFC 8259), as JSON.parse of a fetch reads it,
		// whatever charset the header names: only a body that is not
		// UTF-8 is read by the header's label.
		return bytes.TrimPrefix(body, utf8BOM), true
	}
	e, name, certain := charset.DetermineEncoding(body, contentType)
	if !certain {
		switch text := TextType(contentType); {
		case IsHTML(contentType) && e != encoding.Nop && e != charmap.Windows1252:
			// A <meta> label: DetermineEncoding's guesses, when the body
			// names nothing, are its bare defaults, which no label's
			// lookup returns.
		case text == "xml" || text == "json":
			// Either is UTF-8 unless it says otherwise (XML 1.0 §4.3.3,
			// RFC 8259), as the browser reads it.
			label := "utf-8"
			if text == "xml" {
				if l := xmlDeclared(body); l != "" {
					label = l
				}
			}
			e, name = charset.Lookup(label)
		default:
			e = nil
		}
	}
	if e == nil || name == "utf-8" {
		if utf8.Valid(body) {
			return bytes.TrimPrefix(body, utf8BOM), true
		}
		if e == nil {
			return nil, false
		}
	}
	out, err := e.NewDecoder().Bytes(body)
	if err != nil {
		return nil, false
	}
	return bytes.TrimPrefix(out, utf8BOM), true
}

var utf8BOM = []byte("\uFEFF")

// xmlDeclared is the encoding an XML declaration names, or "".
func xmlDeclared(body []byte) string {
	var label string
	d := xml.NewDecoder(bytes.NewReader(body))
	// The decoder asks for a reader only for an encoding other than UTF-8
	// that the declaration names: that is the label.
	d.CharsetReader = func(l string, r io.Reader) (io.Reader, error) {
		label = l
		return r, nil
	}
	d.Token()
	return label
}
