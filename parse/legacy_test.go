package parse

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLegacyGolden reads the RTF and DOC that LibreOffice writes from
// testdata/src/legacy.fodt (build-legacy.sh) and compares their Markdown
// with testdata/legacy.rtf.md and legacy.doc.md: headings, bold and italic,
// a footnote, a line break, non-ASCII text, nested bulleted and numbered
// lists, a table with a horizontal and a vertical merge, and a link.
func TestLegacyGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file string
		read func(context.Context, []byte) (*Document, error)
	}{
		{"legacy.rtf", RTF},
		{"legacy.doc", DOC},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			doc, err := tc.read(context.Background(), legacyFixture(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if doc.Title != "Lake Ferry Guide" || doc.Author != "Ada Novak" {
				t.Errorf("metadata = %q, %q", doc.Title, doc.Author)
			}
			if len(doc.Warnings) > 0 {
				t.Errorf("warnings: %q", doc.Warnings)
			}
			golden(t, tc.file+".md", doc.Markdown)
			for _, want := range []string{
				"<h1>Lake Ferry Guide</h1>",
				`<td colspan="2">Closed for repairs</td>`,
				`<td rowspan="2">East</td>`,
				`<sup><a href="#fn1">1</a></sup>`,
				`<li id="fn1" value="1"><p>Except on public holidays.</p>`,
			} {
				if !strings.Contains(doc.HTML, want) {
					t.Errorf("HTML lacks %s:\n%s", want, doc.HTML)
				}
			}
		})
	}
}

func legacyFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestRTFSnippets reads hand-written RTF.
func TestRTFSnippets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, rtf, want string
	}{
		{"paragraphs", `{\rtf1\ansi Hello\par World}`, "Hello\n\nWorld"},
		{"escapes", `{\rtf1 a\{b\}c\\d\~e\-f\_g}`, "a{b}c\\\\d\u00a0ef\u2011g"},
		{"control words for characters", `{\rtf1 \lquote a\rquote  \ldblquote b\rdblquote  c\emdash d\endash e\bullet}`, "‘a’ “b” c—d–e•"},
		{"unicode with fallback", `{\rtf1\ansi caf\u233?\par}`, "café"},
		{"unicode, two fallback bytes", `{\rtf1\uc2 x\u8212\'97\'97y}`, "x—y"},
		{"unicode, no fallback", `{\rtf1\uc0 \u26481\u20140 }`, "東京"},
		{"unicode, negative and surrogates", `{\rtf1 \u-10179?\u-8704? \u-3? ok}`, "😀 \uFFFD ok"},
		{"unicode fallback ends at a group", `{\rtf1\uc3 a\u252{}b}`, "aüb"},
		{"code page 1252 by default", `{\rtf1\ansi Z\'fcrich \'80}`, "Zürich €"},
		{"code page 1251", `{\rtf1\ansi\ansicpg1251 \'cf\'f0\'e8\'e2\'e5\'f2}`, "Привет"},
		{"mac", `{\rtf1\mac \'8a}`, "ä"},
		{"unknown code page", `{\rtf1\ansi\ansicpg4242 \'e9}`, "é"},
		{"font charset, double-byte", `{\rtf1\ansi{\fonttbl{\f0 Arial;}{\f1\fcharset128 MS Mincho;}}\f1 \'93\'8c\'8b\'9e\f0  ok}`, "東京 ok"},
		{"font charset, old-style table", `{\rtf1\ansi{\fonttbl\f0\fswiss Arial;\f1\fcharset204 Arial Cyr;}\f1 \'c4\'e0 \plain\'c4}`, "Да Ä"},
		{"nested groups", `{\rtf1 a {\b bold {\i both} b2} plain}`, "a **bold *both* b2** plain"},
		{"toggles", `{\rtf1 \b x\b0 y\i z\plain w}`, "**x**y*z*w"},
		{"hidden text", `{\rtf1 a{\v hidden}b\v c\v0 d}`, "abd"},
		{"line and tab", `{\rtf1 a\tab b\line c}`, "a b\\\nc"},
		{"skipped destinations", `{\rtf1{\fonttbl{\f0 Times;}}{\colortbl;\red0\green0\blue0;}{\*\generator Foo;}{\*\unknown junk {nested}}{\header head}{\pict\pngblip 89504e47}{\object{\*\objdata 0102}{\result res}}{\*\bkmkstart b}Body}`, "Body"},
		{"bin data", "{\\rtf1 a{\\pict\\bin5 }}{{\\}b\\bin3 xyzc}", "abc"},
		{"upr", `{\rtf1 {\upr{ansi}{\*\ud{unicode}}}}`, "unicode"},
		{"listtext is not text", `{\rtf1\pard{\listtext 1.\tab}One\par}`, "One"},
		{"heading styles", `{\rtf1{\stylesheet{\s0 Normal;}{\s1 heading 1;}{\s2\outlinelevel1 Custom;}{\*\cs3 Strong;}}\pard\s1 Title\par\pard\s2 Sub\par\pard Body\par}`, "# Title\n\n## Sub\n\nBody"},
		{"outline level", `{\rtf1\pard\outlinelevel2 Deep\par\pard\outlinelevel9 Body\par}`, "### Deep\n\nBody"},
		{"hyperlink", `{\rtf1 see {\field{\*\fldinst HYPERLINK "http://x.test/a b"}{\fldrslt {\b here}}} now}`, "see [**here**](<http://x.test/a b>) now"},
		{"hyperlink to a bookmark", `{\rtf1 {\field{\*\fldinst {HYPERLINK \\l "top"}}{\fldrslt up}}}`, "[up](#top)"},
		{"other field", `{\rtf1 page {\field{\*\fldinst PAGE}{\fldrslt 7}}}`, "page 7"},
		{"footnote", `{\rtf1 Text{\super\chftn}{\footnote\pard\plain{\super\chftn} Note one.}\par More{\*\footnote Two}.\par}`, "Text[^1]\n\nMore[^2].\n\n[^1]: Note one.\n\n[^2]: Two"},
		{"old-style bullets", `{\rtf1\pard{\pntext *\tab}{\*\pn\pnlvlblt{\pntxtb *}}One\par\pard{\pntext *\tab}{\*\pn\pnlvlblt{\pntxtb *}}Two\par\pard Three\par}`, "- One\n- Two\n\nThree"},
		{"old-style numbers", `{\rtf1\pard{\*\pn\pnlvlbody\pndec}One\par\pard{\*\pn\pnlvlbody\pndec}Two\par}`, "1. One\n2. Two"},
		{"list table", `{\rtf1{\*\listtable{\list{\listlevel\levelnfc23{\leveltext \'01\u8226 ?;}}{\listlevel\levelnfc0}\listid7}{\list{\listlevel\levelnfc255}\listid8}}{\listoverridetable{\listoverride\listid7\ls1}{\listoverride\listid8\ls2}}` +
			`\pard\ls1\ilvl0 A\par\pard\ls1\ilvl1 B\par\pard\ls1\ilvl1 B2\par\pard\ls1\ilvl0 C\par\pard\ls2 Not a list\par}`, "- A\n    1. B\n    2. B2\n- C\n\nNot a list"},
		{"list without a table", `{\rtf1\pard\ls3 A\par\pard\ls3\ilvl2 B\par}`, "- A\n    - B"},
		{"table", `{\rtf1\trowd\cellx1000\cellx2000\pard\intbl a\cell b\cell\row\trowd\cellx1000\cellx2000\pard\intbl c\cell d|\cell\row\pard after\par}`,
			"| a | b |\n| --- | --- |\n| c | d\\| |\n\nafter"},
		{"merges", `{\rtf1\trowd\clmgf\cellx1000\clmrg\cellx2000\clvmgf\cellx3000\pard\intbl a\cell\cell c\cell\row\trowd\cellx1000\cellx2000\clvmrg\cellx3000\pard\intbl d\cell e\cell\cell\row}`,
			"| a |  | c |\n| --- | --- | --- |\n| d | e |  |"},
		{"table without a row end", `{\rtf1\pard\intbl a\cell b\cell}`, "| a | b |\n| --- | --- |"},
		{"empty", `{\rtf1}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc, err := RTF(context.Background(), []byte(tc.rtf))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSuffix(doc.Markdown, "\n"); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
			if len(doc.Warnings) > 0 {
				t.Errorf("warnings: %q", doc.Warnings)
			}
		})
	}
}

// TestRTFStructure checks what Markdown does not show: spans, nesting and
// metadata.
func TestRTFStructure(t *testing.T) {
	t.Parallel()
	read := func(s string) *Document {
		t.Helper()
		doc, err := RTF(context.Background(), []byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return doc
	}
	doc := read(`{\rtf1\trowd\clmgf\cellx1000\clmrg\cellx2000\clvmgf\cellx3000\pard\intbl a\cell\cell c\cell\row\trowd\cellx1000\cellx2000\clvmrg\cellx3000\pard\intbl d\cell e\cell\cell\row}`)
	if !strings.Contains(doc.HTML, `<th colspan="2">a</th><th rowspan="2">c</th>`) || !strings.Contains(doc.HTML, `<tr><td>d</td><td>e</td></tr>`) {
		t.Errorf("merges:\n%s", doc.HTML)
	}
	// Rows with different boundaries: the wide cell spans the columns it
	// covers.
	doc = read(`{\rtf1\trowd\cellx1000\cellx2000\cellx3000\pard\intbl a\cell b\cell c\cell\row\trowd\cellx1000\cellx3010\pard\intbl d\cell e\cell\row}`)
	if !strings.Contains(doc.HTML, `<tr><td>d</td><td colspan="2">e</td></tr>`) {
		t.Errorf("geometry:\n%s", doc.HTML)
	}
	// A nested table, in the cell before its paragraph.
	doc = read(`{\rtf1\trowd\cellx4000\pard\intbl\itap2 in1\nestcell in2\nestcell{\*\nesttableprops\trowd\cellx1000\cellx2000\nestrow}{\nonesttables\par}\pard\intbl outer\cell\row}`)
	if want := "<table>\n<tr><th>\n<table>\n<tr><th>in1</th><th>in2</th></tr>\n</table>\n<p>outer</p>\n</th></tr>\n</table>\n"; doc.HTML != want {
		t.Errorf("nested table:\n%s\nwant\n%s", doc.HTML, want)
	}
	doc = read(`{\rtf1{\info{\title T \'e9  x}{\author A}{\author B}{\*\company C}{\nofpages3}}x}`)
	if doc.Title != "T é x" || doc.Author != "A" || doc.Pages != 3 {
		t.Errorf("metadata = %q, %q, %d", doc.Title, doc.Author, doc.Pages)
	}
	// Tables nested past the cap stay within it.
	var b strings.Builder
	b.WriteString(`{\rtf1\pard\intbl\itap100 deep\nestcell{\*\nesttableprops\nestrow}\pard\intbl\itap1 top\cell\row}`)
	doc = read(b.String())
	if n := strings.Count(doc.HTML, "<table>"); n != legacyMaxTableDepth {
		t.Errorf("%d nested tables, want %d", n, legacyMaxTableDepth)
	}
}

// TestRTFHostile feeds inputs that must fail cleanly, or give a bounded
// result with a warning, fast.
func TestRTFHostile(t *testing.T) {
	t.Parallel()
	fixture := legacyFixture(t, "legacy.rtf")
	rng := rand.New(rand.NewSource(1))
	random := make([]byte, 1<<16)
	rng.Read(random)
	tests := []hostileCase{
		{"empty", nil, ErrMalformed, ""},
		{"not rtf", []byte("hello {\\rtf1}"), ErrMalformed, ""},
		{"random", random, ErrMalformed, ""},
		{"random after the header", append([]byte(`{\rtf1 `), random...), nil, ""},
		{"truncated", fixture[:len(fixture)/2], nil, "ends before all its groups close"},
		{"deep nesting", append([]byte(`{\rtf1 `), bytes.Repeat([]byte("{"), 100000)...), nil, "nested deeper than 1000"},
		{"deep nesting in a skipped group", append([]byte(`{\rtf1{\*\x `), bytes.Repeat([]byte("{"), 100000)...), nil, "ends before"},
		{"deep nesting, closed", []byte(`{\rtf1 ` + strings.Repeat("{x", 5000) + strings.Repeat("}", 5000) + `}`), nil, "nested deeper than 1000"},
		{"bin claiming 2 GB", []byte(`{\rtf1 a\bin2147483647 xyz}`), nil, "inside \\bin data"},
		{"bin claiming 2 GB, skipped", []byte(`{\rtf1 a{\pict\bin2147483647 xyz}}`), nil, "ends before"},
		{"huge numbers", []byte(`{\rtf1\uc99999999999\u99999999999 a\ansicpg-99999999999\'ff\cellx-99999999999\itap99999999999\intbl\ilvl-5\ls-1 b\cell\row}`), nil, ""},
		{"many cells", []byte(`{\rtf1\pard\intbl ` + strings.Repeat(`\cell`, 100000) + `\row}`), nil, ""},
		{"many fields", []byte(`{\rtf1 ` + strings.Repeat(`{\field{\*\fldinst HYPERLINK "x"}{\fldrslt `, 3000) + `}`), nil, "nested deeper"},
		{"many notes", []byte(`{\rtf1 ` + strings.Repeat(`{\footnote `, 3000) + `}`), nil, "nested deeper"},
		{"wide, long table", []byte(`{\rtf1\pard\intbl ` + strings.Repeat(strings.Repeat(`\cell`, 300)+`\row`, 1000) + `}`), nil, ""},
		{"empty rows", []byte(`{\rtf1\pard\intbl ` + strings.Repeat(`\cell`, 300) + strings.Repeat(`\row`, 200000) + `}`), nil, ""},
		{"stray braces", []byte(`{\rtf1 a}}}}b`), nil, ""},
		{"lone backslash", []byte(`{\rtf1 a\`), nil, "ends before"},
		{"bad hex", []byte(`{\rtf1 a\'zz\'4}`), nil, ""},
	}
	checkHostile(t, RTF, tests)
}

// TestLegacyTextLimit checks that text stops at the cap with a warning.
func TestLegacyTextLimit(t *testing.T) {
	// Not parallel: it changes legacyTextLimit.
	defer func(n int) { legacyTextLimit = n }(legacyTextLimit)
	legacyTextLimit = 300
	data := append([]byte(`{\rtf1 `), bytes.Repeat([]byte("abcdefgh\\par "), 200)...)
	for name, data := range map[string][]byte{"rtf": data, "doc": legacyFixture(t, "legacy.doc")} {
		read := RTF
		if name == "doc" {
			read = DOC
		}
		doc, err := read(context.Background(), data)
		if err != nil {
			t.Fatal(err)
		}
		if len(doc.Warnings) != 1 || doc.Warnings[0] != "the text was cut at 300 characters" {
			t.Errorf("%s: warnings = %q", name, doc.Warnings)
		}
		if n := len(doc.Markdown); n > 500 || strings.Contains(doc.Markdown, "ferry website") {
			t.Errorf("%s: markdown is %d bytes:\n%s", name, n, doc.Markdown)
		}
	}
}

// TestLegacyCancelledMidway cancels at every context check of a parse:
// each time the reader must return context.Canceled, or finish if it was
// already done.
func TestLegacyCancelledMidway(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		data []byte
		read func(context.Context, []byte) (*Document, error)
	}{
		{"rtf", legacyFixture(t, "legacy.rtf"), RTF},
		{"doc", legacyFixture(t, "legacy.doc"), DOC},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for n := 0; ; n++ {
				doc, err := tc.read(&countdownCtx{Context: context.Background(), n: n}, tc.data)
				if err == nil {
					if n == 0 || doc == nil {
						t.Fatalf("n=%d: finished without error (doc %v)", n, doc != nil)
					}
					return
				}
				if !errors.Is(err, context.Canceled) || doc != nil {
					t.Fatalf("n=%d: err = %v, doc %v; want context.Canceled", n, err, doc != nil)
				}
				if n > 10_000 {
					t.Fatal("never finished")
				}
			}
		})
	}
}

// docFixture returns the DOC fixture with the offsets of its WordDocument
// stream (the FIB) and of its Clx in the file, which the tests patch.
func docFixture(t *testing.T) (data []byte, fib, clx int) {
	t.Helper()
	data = legacyFixture(t, "legacy.doc")
	streams, err := readOLEStreams(context.Background(), data, "WordDocument", "0Table", "1Table")
	if err != nil {
		t.Fatal(err)
	}
	wd := streams["WordDocument"]
	fib = bytes.Index(data, wd[:512])
	table := streams["1Table"]
	if binary.LittleEndian.Uint16(wd[0x0A:])&0x0200 == 0 {
		table = streams["0Table"]
	}
	fc, lcb := binary.LittleEndian.Uint32(wd[0x1A2:]), binary.LittleEndian.Uint32(wd[0x1A6:])
	clx = bytes.Index(data, table[fc:fc+lcb])
	if fib < 0 || clx < 0 {
		t.Fatal("streams not found in the file")
	}
	return data, fib, clx
}

// TestDOCHostile feeds damaged and hostile DOC files.
func TestDOCHostile(t *testing.T) {
	t.Parallel()
	plain, fib, clx := docFixture(t)
	patch := func(off int, b ...byte) []byte {
		d := bytes.Clone(plain)
		copy(d[off:], b)
		return d
	}
	u32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	// The Pcdt follows any Prcs: find it, then its first Pcd's fc.
	pcdt := clx
	for plain[pcdt] == 1 {
		pcdt += 3 + int(binary.LittleEndian.Uint16(plain[pcdt+1:]))
	}
	lcb := int(binary.LittleEndian.Uint32(plain[pcdt+1:]))
	pieces := (lcb - 4) / 12
	firstFC := pcdt + 5 + 4*(pieces+1) + 2
	garbage := make([]byte, 64<<10)
	rand.New(rand.NewSource(2)).Read(garbage)
	tests := []hostileCase{
		{"empty", nil, ErrMalformed, ""},
		{"garbage", garbage, ErrMalformed, ""},
		{"rtf", legacyFixture(t, "legacy.rtf"), ErrMalformed, ""},
		{"header only", plain[:512], ErrMalformed, ""},
		{"truncated", plain[:len(plain)/2], ErrMalformed, ""},
		{"huge FAT count", patch(44, 0xff, 0xff, 0xff, 0x7f), ErrMalformed, ""},
		{"huge DIFAT count", patch(72, 0xff, 0xff, 0xff, 0x0f), ErrMalformed, ""},
		{"not Word", patch(fib, 0x12, 0x34), ErrMalformed, ""},
		{"Word 95", patch(fib, 0xDC, 0xA5), ErrUnsupported, ""},
		{"encrypted", patch(fib+0x0A, plain[fib+0x0A], plain[fib+0x0B]|0x01), ErrEncrypted, ""},
		{"obfuscated", patch(fib+0x0A, plain[fib+0x0A], plain[fib+0x0B]|0x80), ErrEncrypted, ""},
		{"Clx out of range", patch(fib+0x1A2, u32(0x7ffffff0)...), ErrMalformed, ""},
		{"Clx huge", patch(fib+0x1A6, u32(0xfffffff0)...), ErrMalformed, ""},
		{"bad Clx", patch(clx, 7), ErrMalformed, ""},
		{"piece out of range", patch(firstFC, u32(0x3ffffff0)...), nil, "points past the end"},
		{"piece out of order", patch(pcdt+5, u32(0xfffffff0)...), ErrMalformed, ""},
		{"huge text count", patch(fib+0x4C, u32(0xffffffff)...), nil, ""},
		{"formatting pages out of range", patch(fib+0x102, u32(0)...), nil, ""},
	}
	checkHostile(t, DOC, tests)
}

// TestLegacyCorruptedBytes flips bytes all over the fixtures: every outcome
// is fine except a panic or a hang.
func TestLegacyCorruptedBytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file string
		read func(context.Context, []byte) (*Document, error)
	}{
		{"legacy.rtf", RTF},
		{"legacy.doc", DOC},
	} {
		data := legacyFixture(t, tc.file)
		for i := 0; i < 300; i++ {
			b := bytes.Clone(data)
			for k := 0; k < 8; k++ {
				pos := (i*7919 + k*104729) % len(b)
				b[pos] ^= byte(0x55 + i + k)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, _ = tc.read(ctx, b)
			cancel()
		}
	}
}

// FuzzRTF checks that no input panics or hangs.
func FuzzRTF(f *testing.F) {
	f.Add(legacyFixture(f, "legacy.rtf"))
	f.Add([]byte(`{\rtf1{\*\listtable{\list{\listlevel\levelnfc23}\listid7}}{\listoverridetable{\listoverride\listid7\ls1}}\pard\ls1\ilvl1 A\par\trowd\clvmgf\cellx10\pard\intbl\itap2 x\nestcell{\*\nesttableprops\nestrow}\cell\row{\field{\*\fldinst HYPERLINK "u"}{\fldrslt v}}{\footnote n}\u-10179?}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = RTF(ctx, data)
	})
}

// FuzzDOC checks that no input panics or hangs.
func FuzzDOC(f *testing.F) {
	f.Add(legacyFixture(f, "legacy.doc"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = DOC(ctx, data)
	})
}

func TestWordHyperlink(t *testing.T) {
	t.Parallel()
	for inst, want := range map[string]string{
		` HYPERLINK "https://a.test/x?y=1" `:            "https://a.test/x?y=1",
		`HYPERLINK \l "top"`:                            "#top",
		`HYPERLINK "https://a.test" \o "tip" \t _blank`: "https://a.test",
		`HYPERLINK https://bare.test`:                   "https://bare.test",
		`hyperlink "https://a.test/p" \l "s"`:           "https://a.test/p#s",
		`PAGEREF _Toc1 \h`:                              "",
		`HYPERLINK "unterminated`:                       "unterminated",
		``:                                              "",
	} {
		if got := wordHyperlink(inst); got != want {
			t.Errorf("wordHyperlink(%q) = %q, want %q", inst, got, want)
		}
	}
}

// TestDOCSprms checks the paragraph and table properties read from a
// grpprl: table flags, the cell boundaries and merge flags of
// sprmTDefTable, sprmTVertMerge and sprmTMerge, and lists.
func TestDOCSprms(t *testing.T) {
	t.Parallel()
	var g []byte
	sprm := func(op uint16, arg ...byte) {
		g = binary.LittleEndian.AppendUint16(g, op)
		g = append(g, arg...)
	}
	sprm(0x2416, 1)       // sprmPFInTable
	sprm(0x2417, 1)       // sprmPFTtp
	sprm(0x460B, 2, 0)    // sprmPIlfo
	sprm(0x260A, 1)       // sprmPIlvl
	sprm(0xC615, 1, 0xAA) // sprmPChgTabs, skipped
	// sprmTDefTable: three cells, boundaries 0, 1000, 2000, 3000; the
	// first two merged horizontally, the third starting a vertical merge.
	def := []byte{3}
	for _, x := range []uint16{0, 1000, 2000, 3000} {
		def = binary.LittleEndian.AppendUint16(def, x)
	}
	for _, flags := range []uint16{0x0001, 0x0002, 0x0060} {
		tc := make([]byte, 20)
		binary.LittleEndian.PutUint16(tc, flags)
		def = append(def, tc...)
	}
	sprm(0xD608, binary.LittleEndian.AppendUint16(nil, uint16(len(def)+1))...)
	g = append(g, def...)
	sprm(0xD62B, 2, 2, 1) // sprmTVertMerge: the third cell continues a merge
	sprm(0x2640, 0xAB)    // after the long operands, still read
	sprm(0xD608, 0, 0)    // an empty sprmTDefTable must not panic
	d := &docReader{}
	p := &docPap{outline: -1}
	d.papSprms(p, g, true)
	want := []legacyCellDef{
		{right: 1000, hasRight: true, hFirst: true},
		{right: 2000, hasRight: true, hCont: true},
		{right: 3000, hasRight: true, vCont: true},
	}
	if !p.inTable || !p.ttp || p.ilfo != 2 || p.ilvl != 1 || p.outline != 0xAB || len(p.defs) != 3 {
		t.Fatalf("pap = %+v", p)
	}
	for i := range want {
		if p.defs[i] != want[i] {
			t.Errorf("cell %d = %+v, want %+v", i, p.defs[i], want[i])
		}
	}
}

// hostileCase is a hostile input and what reading it must give: the error,
// or a result carrying the warning.
type hostileCase struct {
	name    string
	data    []byte
	err     error
	warning string
}

// checkHostile reads each case with read. The time bound is generous, so a
// loaded machine does not fail it: what it catches is a read that hangs.
func checkHostile(t *testing.T, read func(context.Context, []byte) (*Document, error), tests []hostileCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			doc, err := read(context.Background(), tc.data)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
			} else if err != nil {
				t.Fatalf("err = %v", err)
			} else if tc.warning != "" && !strings.Contains(strings.Join(doc.Warnings, "\n"), tc.warning) {
				t.Errorf("warnings = %q, want %q", doc.Warnings, tc.warning)
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}
