package parse

import (
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// buildPDF writes a PDF whose objects 1..n are objs, with a correct
// cross-reference table; object 1 must be the catalog.
func buildPDF(objs ...string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.7\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

func stream(dict, data string) string {
	return fmt.Sprintf("<< %s /Length %d >>\nstream\n%s\nendstream", dict, len(data), data)
}

func deflated(dict string, data []byte) string {
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	w.Write(data)
	w.Close()
	return fmt.Sprintf("<< %s /Filter /FlateDecode /Length %d >>\nstream\n%s\nendstream", dict, z.Len(), z.String())
}

const helvetica = "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"

// xrefStreamPDF builds a file whose cross-reference stream holds the given
// entries (type, field 2) for objects 4 and up, after objects 1-3.
func xrefStreamPDF(prevLoop bool, extra ...[2]int) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.7\n")
	var offs []int
	for i, o := range []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R >>",
	} {
		offs = append(offs, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	var rows []byte
	row := func(t, a int) { rows = append(rows, byte(t), byte(a>>24), byte(a>>16), byte(a>>8), byte(a), 0, 0) }
	row(0, 0)
	for _, o := range offs {
		row(1, o)
	}
	for _, e := range extra {
		row(e[0], e[1])
	}
	xoff := b.Len()
	row(1, xoff)
	n := 4 + len(extra) + 1
	prev := ""
	if prevLoop {
		prev = fmt.Sprintf("/Prev %d", xoff)
	}
	fmt.Fprintf(&b, "%d 0 obj\n<< /Type /XRef /Size %d /W [1 4 2] /Root 1 0 R %s /Length %d >>\nstream\n%s\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n",
		n-1, n, prev, len(rows), rows, xoff)
	return b.Bytes()
}

// TestPDFHostile runs documents built to exhaust a naive parser. Each must
// finish quickly, without a panic, and keep what text it can.
func TestPDFHostile(t *testing.T) {
	t.Parallel()
	selfForm := stream("/Type /XObject /Subtype /Form /BBox [0 0 10 10] /Resources << /XObject << /F 4 0 R >> >>",
		strings.Repeat("/F Do ", 50))
	tests := []struct {
		name  string
		data  []byte
		want  string // in the Markdown
		pages int
		err   error
	}{
		{"form drawing itself", buildPDF(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
			"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 5 0 R /Resources << /XObject << /F 4 0 R >> /Font << /H 6 0 R >> >> >>",
			selfForm,
			stream("", "BT /H 12 Tf 20 100 Td (still here) Tj ET /F Do"),
			helvetica,
		), "still here", 1, nil},
		{"page tree cycle", buildPDF(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [3 0 R 2 0 R] /Count 2 >>",
			"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R /Resources << /Font << /H 5 0 R >> >> >>",
			stream("", "BT /H 12 Tf 20 100 Td (one page) Tj ET"),
			helvetica,
		), "one page", 1, nil},
		{"parent cycle", buildPDF(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [3 0 R] /Count 1 /Parent 3 0 R >>",
			"<< /Type /Page /Parent 2 0 R /Contents 4 0 R >>",
			stream("", "BT 20 100 Td (no font) Tj ET"),
		), "", 0, nil},
		{"compression bomb", buildPDF(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [3 0 R 6 0 R] /Count 2 >>",
			"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R >>",
			deflated("", bytes.Repeat([]byte("0 0 m "), 20<<20)),
			helvetica,
			"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 7 0 R /Resources << /Font << /H 5 0 R >> >> >>",
			stream("", "BT /H 12 Tf 20 100 Td (second page) Tj ET"),
		), "second page", 2, nil},
		// Object 4 inside object stream 5, which is inside object stream 4:
		// the reader would recurse until the stack overflows.
		{"object streams inside each other", xrefStreamPDF(false, [2]int{2, 5}, [2]int{2, 4}), "", 0, errStructure},
		{"cross-reference sections in a loop", xrefStreamPDF(true), "", 0, errStructure},
		{"huge object number", []byte("%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\nxref\n999999999999 1\n0000000009 00000 n \ntrailer\n<< /Size 2 /Root 1 0 R >>\nstartxref\n45\n%%EOF\n"), "", 0, errStructure},
		// A broken table sends the file to the pdfcpu fallback, which would
		// loop over every object number up to the huge one.
		{"huge object number, broken table", []byte("%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n533333333 0 obj\n<< >>\nendobj\nxref\nbroken\nstartxref\n100\n%%EOF\n"), "", 0, errStructure},
		{"huge numbers", buildPDF(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [3 0 R] /Count 99999999999 >>",
			"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 1e300 1e300] /Contents 4 0 R /Resources << /Font << /H 5 0 R >> >> >>",
			stream("", "BT /H 1e300 Tf 1e300 0 0 1e300 0 0 Tm (big) Tj /H 12 Tf 1 0 0 1 20 100 Tm (small) Tj ET"),
			"<< /Type /Font /Subtype /Type0 /BaseFont /X /Encoding /Identity-H /DescendantFonts [<< /W [0 99999999 500] >>] >>",
		), "", 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			start := time.Now()
			doc, err := PDF(ctx, tc.data)
			if d := time.Since(start); d > time.Minute {
				t.Errorf("took %v: the caps did not hold", d)
			}
			if tc.err != nil {
				if !errors.Is(err, ErrMalformed) {
					t.Errorf("err = %v, want ErrMalformed", err)
				}
				return
			}
			if tc.want == "" {
				return // any outcome but a panic or a hang
			}
			if err != nil {
				t.Fatalf("PDF: %v", err)
			}
			if !strings.Contains(doc.Markdown, tc.want) || doc.Pages != tc.pages {
				t.Errorf("%d pages, markdown %q; want %d pages and %q (warnings %q)", doc.Pages, doc.Markdown, tc.pages, tc.want, doc.Warnings)
			}
			t.Logf("warnings: %q", doc.Warnings)
		})
	}
}

// TestContentLexer feeds the content-stream lexer what real and hostile
// streams hold: inline images whose data looks like operators, strings
// with brackets and escapes, nested and unterminated arrays, dictionaries,
// comments and junk.
func TestContentLexer(t *testing.T) {
	t.Parallel()
	type step struct {
		op   string
		args string // the operands, summarised
	}
	lex := func(src string) []step {
		lx := &contentLexer{cmapLexer: cmapLexer{data: []byte(src)}, budget: maxArrayItems}
		var out []step
		var args []string
		var show func(o operand) string
		show = func(o operand) string {
			switch o.kind {
			case opdNumber:
				return fmt.Sprint(o.num)
			case opdName:
				return "/" + o.s
			case opdString:
				return fmt.Sprintf("%q", o.s)
			case opdArray:
				var parts []string
				for _, e := range o.arr {
					parts = append(parts, show(e))
				}
				return "[" + strings.Join(parts, " ") + "]"
			}
			return "?"
		}
		for i := 0; i < 1000; i++ {
			o, op, ok := lx.next(0)
			if !ok {
				break
			}
			if op == "" {
				args = append(args, show(o))
				continue
			}
			out = append(out, step{op, strings.Join(args, " ")})
			args = nil
		}
		return out
	}
	tests := []struct {
		src  string
		want []step
	}{
		{"BT /F1 12 Tf 72 700 Td (Hello \\(world\\)\\n) Tj ET",
			[]step{{"BT", ""}, {"Tf", "/F1 12"}, {"Td", "72 700"}, {"Tj", `"Hello (world)\n"`}, {"ET", ""}}},
		{"[(A) -120 (B) <4344> 3.5] TJ", []step{{"TJ", `["A" -120 "B" "CD" 3.5]`}}},
		// Inline image data that holds "Tj" and "EI" inside words.
		{"q BI /W 2 /H 1 /BPC 8 /CS /G ID \x00Tj EIx\xff EI Q (after) Tj",
			[]step{{"q", ""}, {"BI", ""}, {"Q", ""}, {"Tj", `"after"`}}},
		{"/A#20B 1 0 0 1 .5 -.5 cm % comment Tj\n--3 Tw", []step{{"cm", "/A B 1 0 0 1 0.5 -0.5"}, {"Tw", "-3"}}},
		{"/P << /MCID 0 /Nested << /A [1 2] >> >> BDC (x) Tj EMC",
			[]step{{"?", "/P ?"}, {"Tj", `"x"`}, {"?", ""}}},
		{"[[[[ 1 ] TJ", []step{}},
		{") ] > } { (unterminated", []step{}},
		{"true false null 1.2.3 Tc", []step{{"Tc", "? ? ? 1.2"}}},
	}
	for _, tc := range tests {
		got := lex(tc.src)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
			t.Errorf("lex(%q) = %v, want %v", tc.src, got, tc.want)
		}
	}
	// Deep nesting and huge arrays stay bounded.
	deep := strings.Repeat("[", 100_000) + "1" + strings.Repeat("]", 100_000) + " TJ"
	if got := lex(deep); len(got) != 1 || got[0].op != "TJ" {
		t.Errorf("deep array: %v", got)
	}
	lx := &contentLexer{cmapLexer: cmapLexer{data: []byte("[" + strings.Repeat("[1 2 3] ", 200_000) + "] TJ")}, budget: maxArrayItems}
	o, _, _ := lx.next(0)
	kept := len(o.arr)
	for _, e := range o.arr {
		kept += len(e.arr)
	}
	if kept > maxArrayItems {
		t.Errorf("kept %d array elements, budget %d", kept, maxArrayItems)
	}
}

// TestLibraryInternals checks what ocr.go and the font cache read from the
// PDF library by reflection: if an update of the library moves it, the
// fallbacks keep things working, slower, and this test says so.
func TestLibraryInternals(t *testing.T) {
	t.Parallel()
	data := buildPDF(
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R /Resources << /Font << /H 5 0 R >> >> >>",
		stream("/Filter /DCTDecode", "\xff\xd8 not really a jpeg"),
		helvetica,
	)
	r, file, err := openPDF(data)
	if err != nil {
		t.Fatal(err)
	}
	page := r.Trailer().Key("Root").Key("Pages").Key("Kids").Index(0)
	if id, ok := refID(page.Key("Resources").Key("Font"), "H"); !ok || id != 5<<16 {
		t.Errorf("refID = %d, %v; want object 5 generation 0", id, ok)
	}
	if _, ok := refID(page.Key("Resources"), "Font"); ok {
		t.Error("refID found a reference where the dictionary is direct")
	}
	if got := string(rawStream(page.Key("Contents"), file)); got != "\xff\xd8 not really a jpeg" {
		t.Errorf("rawStream = %q", got)
	}
}

// FuzzContentStream runs the walker over arbitrary content streams: no
// panic, no hang, and the lexer always moves on.
func FuzzContentStream(f *testing.F) {
	for _, s := range []string{
		"BT /F1 12 Tf 72 700 Td (Hello) Tj [(A) -120 (B)] TJ ET",
		"q 1 0 0 1 0 0 cm BI /W 1 /H 1 ID x EI Q 0 0 m 10 0 l S 0 0 10 10 re f",
		"/P << /MCID 0 >> BDC (x) ' 1 2 (y) \" EMC",
		"[[[[ <414> (\\(\\)\\\\\\101) ] ] T* T* TL --1 .5. Tz",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lx := &contentLexer{cmapLexer: cmapLexer{data: data}, budget: maxArrayItems}
		for steps := 0; ; steps++ {
			before := lx.pos
			if _, _, ok := lx.next(0); !ok {
				break
			}
			if lx.pos <= before || steps > len(data) {
				t.Fatalf("lexer stuck at %d", before)
			}
		}
		page := buildPDF(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
			"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
			stream("", string(data)),
			helvetica,
		)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = readPDF(ctx, page, nil)
	})
}
