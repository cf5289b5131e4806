package parse

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestPDFGolden parses each fixture (built from testdata/src by build.sh)
// and compares its Markdown with testdata/NAME.md, and for a few its HTML
// with testdata/NAME.html. OCR is off, so that the goldens do not depend on
// whether Tesseract is installed (ocr_test.go reads the scans).
func TestPDFGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		html     bool
		title    string
		author   string
		pages    int
		warnings []string
	}{
		{name: "report", html: true, title: "Harbour Water Quality Report", author: "Marta Quinn", pages: 1},
		{name: "twocolumn", title: "Tidal Energy in Small Harbours", author: "Ines Abara", pages: 1},
		{name: "threepage", html: true, title: "Northwind Field Survey", author: "Survey Team", pages: 3},
		{name: "table", html: true, title: "Quarterly Sales", pages: 1},
		{name: "chromium", html: true, title: "Night Trains in Europe", pages: 1},
		// Bold headings at body size, first-line indents without paragraph
		// spacing, a nested list, a borderless table, three columns.
		{name: "features", html: true, title: "Snow Survey Handbook", pages: 1},
		{name: "scanned", title: "Scanned Appendix", pages: 2,
			warnings: []string{"page 2 has no text layer (it holds only images; OCR is not supported)"}},
		// Link annotations: inline, in list items, wrapped over two lines.
		{name: "links", html: true, title: "Ferry Timetable Sources", pages: 1},
		// Encrypted with an owner password only: opens like the report.
		{name: "encrypted", title: "Harbour Water Quality Report", author: "Marta Quinn", pages: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(filepath.Join("testdata", tc.name+".pdf"))
			if err != nil {
				t.Fatal(err)
			}
			doc, err := readPDF(context.Background(), data, nil)
			if err != nil {
				t.Fatalf("PDF: %v", err)
			}
			if doc.Title != tc.title || doc.Author != tc.author || doc.Pages != tc.pages {
				t.Errorf("metadata = %q, %q, %d pages; want %q, %q, %d", doc.Title, doc.Author, doc.Pages, tc.title, tc.author, tc.pages)
			}
			if strings.Join(doc.Warnings, "\n") != strings.Join(tc.warnings, "\n") {
				t.Errorf("warnings = %q, want %q", doc.Warnings, tc.warnings)
			}
			golden(t, tc.name+".md", doc.Markdown)
			if tc.html {
				golden(t, tc.name+".html", doc.HTML)
			}
		})
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./parse -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file:\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}

// TestPDFVariantsMatchReport checks that encrypted and damaged copies of the
// report read exactly like the report.
func TestPDFVariantsMatchReport(t *testing.T) {
	t.Parallel()
	plain, err := os.ReadFile("testdata/report.pdf")
	if err != nil {
		t.Fatal(err)
	}
	want, err := PDF(context.Background(), plain)
	if err != nil {
		t.Fatal(err)
	}
	file := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// startxref pointing nowhere: the pdfcpu fallback rebuilds the table.
	i := bytes.LastIndex(plain, []byte("startxref"))
	badXref := append(bytes.Clone(plain[:i]), "startxref\n12345\n%%EOF\n"...)
	tests := []struct {
		name string
		data []byte
	}{
		{"RC4 owner password only", file("encrypted.pdf")},
		{"AES-256 owner password only", file("aes256.pdf")},
		{"broken startxref", badXref},
		{"junk around the file", append(append([]byte("HTTP junk\n"), plain...), "\n<html>trailing junk</html>"...)},
		{"PDF 2.0 header", append([]byte("%PDF-2.0"), plain[8:]...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := PDF(context.Background(), tc.data)
			if err != nil {
				t.Fatal(err)
			}
			if got.Markdown != want.Markdown || got.Title != want.Title {
				t.Errorf("reads differently:\n%s\nwant:\n%s", got.Markdown, want.Markdown)
			}
		})
	}
}

// TestPDFErrors feeds inputs that must fail cleanly and fast.
func TestPDFErrors(t *testing.T) {
	t.Parallel()
	report, err := os.ReadFile("testdata/report.pdf")
	if err != nil {
		t.Fatal(err)
	}
	locked, err := os.ReadFile("testdata/locked.pdf")
	if err != nil {
		t.Fatal(err)
	}
	locked256, err := os.ReadFile("testdata/locked256.pdf")
	if err != nil {
		t.Fatal(err)
	}
	garbage := make([]byte, 64<<10)
	for i := range garbage {
		garbage[i] = byte(i*7919 + i>>3)
	}
	tests := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrMalformed},
		{"garbage", garbage, ErrMalformed},
		{"html", []byte("<!doctype html><p>hello</p>"), ErrMalformed},
		{"header only", []byte("%PDF-1.7\n"), ErrMalformed},
		{"truncated", report[:len(report)/2], ErrMalformed},
		{"garbage after header", append([]byte("%PDF-1.4\n"), garbage...), ErrMalformed},
		{"user password", locked, ErrEncrypted},
		{"user password, AES-256", locked256, ErrEncrypted},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			doc, err := PDF(context.Background(), tc.data)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v (doc %v), want %v", err, doc != nil, tc.want)
			}
			// Generous, so that a loaded machine does not fail it: what it
			// catches is a parse that hangs.
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("took %v to fail", d)
			}
		})
	}
}

// TestPDFCorruptedBytes flips bytes all over a valid file: every outcome is
// fine except a panic or a hang.
func TestPDFCorruptedBytes(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"report", "chromium", "table", "links"} {
		data, err := os.ReadFile(filepath.Join("testdata", name+".pdf"))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 200; i++ {
			b := bytes.Clone(data)
			for k := 0; k < 8; k++ {
				pos := (i*7919 + k*104729) % len(b)
				b[pos] ^= byte(0x55 + i + k)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, _ = PDF(ctx, b)
			cancel()
		}
	}
}

// TestPDFPageLimit checks that pages past the limit are skipped with a
// warning while Pages still counts them all.
func TestPDFPageLimit(t *testing.T) {
	// Not parallel: it changes pageLimit.
	defer func(n int) { pageLimit = n }(pageLimit)
	pageLimit = 2
	data, err := os.ReadFile("testdata/threepage.pdf")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := PDF(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Pages != 3 || strings.Contains(doc.Markdown, "Birds and hedgerows") || !strings.Contains(doc.Markdown, "Soil and drainage") {
		t.Errorf("pages = %d, markdown:\n%s", doc.Pages, doc.Markdown)
	}
	if want := []string{"only the first 2 of 3 pages were parsed"}; strings.Join(doc.Warnings, "|") != want[0] {
		t.Errorf("warnings = %q, want %q", doc.Warnings, want)
	}
}

// TestPDFCancelled shows that a cancelled context stops parsing.
func TestPDFCancelled(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/threepage.pdf")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := PDF(ctx, data); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// countdownCtx reports cancellation from its n-th Err call on, so a test can
// stop a parse at each of its checkpoints in turn.
type countdownCtx struct {
	context.Context
	n int
}

func (c *countdownCtx) Err() error {
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}

// TestPDFCancelledMidway cancels at every checkpoint of a parse: each time
// PDF must return context.Canceled, or finish if the parse was already done.
func TestPDFCancelledMidway(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/features.pdf")
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; ; n++ {
		doc, err := PDF(&countdownCtx{Context: context.Background(), n: n}, data)
		if err == nil {
			if n == 0 || doc == nil {
				t.Fatalf("n=%d: finished without error (doc %v)", n, doc != nil)
			}
			return // every checkpoint was passed
		}
		if !errors.Is(err, context.Canceled) || doc != nil {
			t.Fatalf("n=%d: err = %v, doc %v; want context.Canceled", n, err, doc != nil)
		}
		if n > 10_000 {
			t.Fatal("never finished")
		}
	}
}

func TestParseXMP(t *testing.T) {
	t.Parallel()
	xmp := `<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/">
<dc:title><rdf:Alt><rdf:li xml:lang="x-default">Annual  Report
2025</rdf:li></rdf:Alt></dc:title>
<dc:creator><rdf:Seq><rdf:li>Ada Lovelace</rdf:li><rdf:li>Charles Babbage</rdf:li></rdf:Seq></dc:creator>
</rdf:Description></rdf:RDF></x:xmpmeta><?xpacket end="w"?>`
	title, author := parseXMP([]byte(xmp))
	if title != "Annual Report 2025" || author != "Ada Lovelace" {
		t.Errorf("parseXMP = %q, %q", title, author)
	}
}

// FuzzPDF checks that no input panics or hangs.
func FuzzPDF(f *testing.F) {
	for _, name := range []string{"report", "table", "chromium", "links"} {
		data, err := os.ReadFile(filepath.Join("testdata", name+".pdf"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = PDF(ctx, data)
	})
}

// BenchmarkPDF parses each fixture; a page of the report takes well under a
// millisecond.
func BenchmarkPDF(b *testing.B) {
	for _, name := range []string{"report", "twocolumn", "threepage", "table", "chromium", "features"} {
		data, err := os.ReadFile(filepath.Join("testdata", name+".pdf"))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := PDF(context.Background(), data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestPDFLinks checks link annotations on a built page: a link over a word
// hyphenated across two lines becomes one link, a javascript: link and an
// internal one stay plain text.
func TestPDFLinks(t *testing.T) {
	t.Parallel()
	link := func(rect, action string) string {
		return "<< /Type /Annot /Subtype /Link /Rect [" + rect + "] /A " + action + " >>"
	}
	data := buildPDF(
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 200] /Contents 4 0 R /Resources << /Font << /H 5 0 R >> >> /Annots [6 0 R 7 0 R 8 0 R 9 0 R] >>",
		stream("", "BT /H 12 Tf 20 150 Td (Read the docu-) Tj 0 -14 Td (mentation first, then run it.) Tj ET"),
		helvetica,
		link("70 145 105 165", "<< /S /URI /URI (https://example.org/doc) >>"),
		link("18 131 74 148", "<< /S /URI /URI (https://example.org/doc) >>"),
		link("130 131 160 148", "<< /S /URI /URI (javascript:alert\\(1\\)) >>"),
		link("0 0 300 20", "<< /S /GoTo /D [3 0 R /Fit] >>"),
	)
	doc, err := PDF(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	want := "Read the [documentation](https://example.org/doc) first, then run it.\n"
	if doc.Markdown != want {
		t.Errorf("markdown = %q, want %q", doc.Markdown, want)
	}
	if !strings.Contains(doc.HTML, `<a href="https://example.org/doc">documentation</a>`) || strings.Contains(doc.HTML, "javascript") {
		t.Errorf("html = %s", doc.HTML)
	}
}

// TestFontHelpers covers the decoding helpers for fonts that say little
// about themselves.
func TestFontHelpers(t *testing.T) {
	t.Parallel()
	for base, want := range map[string]string{
		"Times-Roman": "Times-Roman", "Helvetica-BoldOblique": "Helvetica-BoldOblique",
		"Arial": "Helvetica", "Arial,BoldItalic": "Helvetica-BoldOblique", "ArialMT": "Helvetica",
		"TimesNewRomanPS-ItalicMT": "Times-Italic", "TimesNewRoman,Bold": "Times-Bold",
		"CourierNewPSMT": "Courier", "Georgia": "", "CMR10": "",
	} {
		if got := coreFontName(base); got != want {
			t.Errorf("coreFontName(%q) = %q, want %q", base, got, want)
		}
	}
	for name, want := range map[string]string{
		"period": ".", "a": "a", "Z": "Z", "quotedblleft": "“", "fi": "ﬁ", "alpha": "α",
		"uni00E9": "é", "u1F600": "😀", "arrowright": "→", ".notdef": "", "g123": "", "uniD800": "",
	} {
		r, ok := glyphRune(name)
		if got := string(r); !ok && want != "" || ok && got != want {
			t.Errorf("glyphRune(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
	for text, want := range map[string]string{"\u0300": "`", "\u0301": "´", "e": "e", "e\u0301": "e\u0301", "\u20dd": "\u20dd"} {
		if got := spacingMark(text); got != want {
			t.Errorf("spacingMark(%q) = %q, want %q", text, got, want)
		}
	}
}

// TestType1BuiltinEncoding: a Type 1 font without /Encoding or ToUnicode
// (TeX's math fonts) is decoded by the encoding inside its font program,
// where code 58 is a period, not a colon.
func TestType1BuiltinEncoding(t *testing.T) {
	t.Parallel()
	program := "%!PS-AdobeFont-1.0: CMMI10\n/Encoding 256 array\n0 1 255 {1 index exch /.notdef put} for\n" +
		"dup 58 /period put\ndup 65 /A put\ndup 11 /alpha put\nreadonly def\ncurrentfile eexec\n\x8f\x00binary"
	data := buildPDF(
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R /Resources << /Font << /M 5 0 R >> >> >>",
		stream("", "BT /M 12 Tf 20 100 Td (A\\013:::::) Tj ET"),
		"<< /Type /Font /Subtype /Type1 /BaseFont /CMMI10 /FirstChar 0 /LastChar 127 /Widths [] /FontDescriptor 6 0 R >>",
		"<< /Type /FontDescriptor /FontName /CMMI10 /Flags 4 /FontFile 7 0 R >>",
		stream(fmt.Sprintf("/Length1 %d", strings.Index(program, "\x8f")), program),
	)
	doc, err := PDF(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Aα.....\n"; doc.Markdown != want {
		t.Errorf("markdown = %q, want %q", doc.Markdown, want)
	}
}
