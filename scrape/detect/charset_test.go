package detect

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/unicode"
)

func encode(e encoding.Encoding, s string) string {
	b, err := e.NewEncoder().String(s)
	if err != nil {
		panic(err)
	}
	return b
}

// TestDecodeBody: a body is read in the encoding a browser would read it
// in, and one that names none and is not UTF-8 is left to the browser.
func TestDecodeBody(t *testing.T) {
	t.Parallel()
	type tc struct {
		name, ct, body string
		want           string // "" with ok false
	}
	var cases []tc
	for _, l := range []struct {
		label string
		enc   encoding.Encoding
		text  string
	}{
		{"Shift_JIS", japanese.ShiftJIS, "日本語"}, {"EUC-KR", korean.EUCKR, "한국어"}, {"GBK", simplifiedchinese.GBK, "中文"},
		{"windows-1251", charmap.Windows1251, "Русский"}, {"ISO-8859-1", charmap.ISO8859_1, "Café"},
	} {
		html := func(head string) string {
			return "<html><head>" + head + "</head><body><p>" + l.text + "</p></body></html>"
		}
		cases = append(cases,
			tc{l.label + " by header", "text/html; charset=" + l.label, encode(l.enc, html("")), html("")},
			tc{l.label + " by meta charset", "text/html", encode(l.enc, html(`<meta charset="`+l.label+`">`)), html(`<meta charset="` + l.label + `">`)},
			tc{l.label + " by http-equiv", "text/html", encode(l.enc, html(`<meta http-equiv="content-type" content="text/html; charset=`+l.label+`">`)),
				html(`<meta http-equiv="content-type" content="text/html; charset=` + l.label + `">`)})
	}
	cases = append(cases,
		tc{"unlabelled UTF-8", "text/html", "<p>Café</p>", "<p>Café</p>"},
		tc{"unlabelled, not UTF-8", "text/html", "<p>Caf\xe9</p>", ""},
		tc{"a label for windows-1252 is a label", "text/html", `<meta charset="windows-1252"><p>Caf` + "\xe9</p>", `<meta charset="windows-1252"><p>Café</p>`},
		tc{"the header before the meta", "text/html; charset=windows-1251", encode(charmap.Windows1251, `<meta charset="Shift_JIS"><p>Русский</p>`), `<meta charset="Shift_JIS"><p>Русский</p>`},
		tc{"an unknown header label gives way to the meta", "text/html; charset=x-unknown", `<meta charset="iso-8859-1"><p>Caf` + "\xe9</p>", `<meta charset="iso-8859-1"><p>Café</p>`},
		tc{"the byte order mark first", "text/html; charset=windows-1252", "\uFEFF<p>Café</p>", "<p>Café</p>"},
		tc{"UTF-16 by its byte order mark", "text/html", encode(unicode.UTF16(unicode.LittleEndian, unicode.UseBOM), "<p>Café</p>"), "<p>Café</p>"},
		tc{"UTF-8 by header, with a stray byte", "text/html; charset=utf-8", "<p>Caf\xe9</p>", "<p>Caf\uFFFD</p>"},
		tc{"plain text by header", "text/plain; charset=windows-1251", encode(charmap.Windows1251, "Русский"), "Русский"},
		tc{"a meta tag does not label JSON", "application/json", `{"a": "<meta charset=Shift_JIS>日本"}`, `{"a": "<meta charset=Shift_JIS>日本"}`},
		tc{"JSON is UTF-8", "application/json", "{\"a\": \"Caf\xe9\"}", "{\"a\": \"Caf\uFFFD\"}"},
		tc{"UTF-8 JSON whatever the header says", "application/json; charset=utf-16", `{"a": "Café"}`, `{"a": "Café"}`},
		tc{"JSON that is not UTF-8 by the header", "application/json; charset=windows-1251", encode(charmap.Windows1251, `{"a": "Русский"}`), `{"a": "Русский"}`},
		tc{"a meta tag past the first 1024 bytes is not read, as browsers read it", "text/html",
			strings.Repeat(" ", 1100) + `<meta charset="Shift_JIS">` + encode(japanese.ShiftJIS, "日本"), ""},
		tc{"a quoted, upper-case header label", `text/html; charset="SHIFT_JIS"`, encode(japanese.ShiftJIS, "<p>日本</p>"), "<p>日本</p>"},
		tc{"XML with no declaration is UTF-8", "application/xml", "<a>Caf\xe9</a>", "<a>Caf\uFFFD</a>"},
		tc{"unlabelled plain text, not UTF-8", "text/plain", "Caf\xe9", ""},
		tc{"XML by its declaration", "application/xml", encode(japanese.ShiftJIS, `<?xml version="1.0" encoding="Shift_JIS"?><a>日本</a>`), `<?xml version="1.0" encoding="Shift_JIS"?><a>日本</a>`},
		tc{"XML by header before its declaration", "text/xml; charset=windows-1251", encode(charmap.Windows1251, `<?xml version="1.0" encoding="Shift_JIS"?><a>Русский</a>`),
			`<?xml version="1.0" encoding="Shift_JIS"?><a>Русский</a>`},
	)
	for _, c := range cases {
		got, ok := Decode([]byte(c.body), c.ct)
		assert.Equal(t, c.want != "", ok, "%s: ok", c.name)
		assert.Equal(t, c.want, string(got), c.name)
	}
}

func TestTextType(t *testing.T) {
	t.Parallel()
	for ct, want := range map[string]string{
		"application/json": "json", "application/ld+json; charset=utf-8": "json", "application/problem+json": "json",
		"application/xml": "xml", "text/xml": "xml", "application/rss+xml": "xml", "application/xhtml+xml": "", "image/svg+xml": "",
		"text/plain; charset=utf-8": "plain", "text/csv": "plain", "application/javascript": "plain", "text/markdown": "markdown",
		"text/html": "", "application/pdf": "", "application/json-patch": "", "": "",
	} {
		assert.Equal(t, want, TextType(ct), "TextType(%q)", ct)
	}
}
