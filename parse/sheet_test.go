package parse

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/xuri/excelize/v2"
)

// The spreadsheet fixtures come from testdata/src/sheets.fods, converted by
// LibreOffice (testdata/src/build-sheets.sh).
func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestSheetGolden reads the XLSX and the XLS made from one source and
// compares their Markdown (and the XLSX's HTML) with the goldens, which were
// checked by eye against sheets.fods: the numbers and dates read as the sheet
// displays them.
func TestSheetGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file string
		read func(context.Context, []byte) (*Document, error)
		html bool
	}{
		{"sheets.xlsx", XLSX, true},
		{"sheets.xls", XLS, false},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			doc, err := tc.read(context.Background(), readFixture(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if doc.Title != "Quarterly figures" || doc.Author != "Zoë Ångström" || doc.Pages != 2 {
				t.Errorf("metadata = %q, %q, %d sheets; want Quarterly figures, Zoë Ångström, 2", doc.Title, doc.Author, doc.Pages)
			}
			if len(doc.Warnings) > 0 {
				t.Errorf("warnings: %q", doc.Warnings)
			}
			golden(t, tc.file+".md", doc.Markdown)
			if tc.html {
				golden(t, tc.file+".html", doc.HTML)
			}
			checkSheetsFixture(t, doc)
		})
	}
}

// checkSheetsFixture checks what the goldens hold that is easy to miss by
// eye.
func checkSheetsFixture(t *testing.T, doc *Document) {
	t.Helper()
	for _, want := range []string{
		// The merged header spans the two figure columns, North two rows.
		"<tr><th>Region</th><th colspan=\"2\">Figures</th><th>Date</th>",
		"<tr><td rowspan=\"2\">North</td><td>1,234,567</td><td>3.14</td><td>2024-03-15</td><td>15 Mar 2024</td><td>25%</td><td>$1,234.50</td><td>a | b</td></tr>",
		// The covered cell is left out of the second row.
		"<tr><td>2,500</td><td>2.50</td><td>2024-12-31</td><td>31 Dec 2024</td><td>12.50%</td><td>$0.99</td><td>Zürich — naïve café</td></tr>",
		"<tr><td>Total</td><td>1,237,109</td><td>6.64</td><td></td><td></td><td></td><td>$1,001,235.49</td><td></td></tr>",
		"<tr><td>Negative</td><td>-1,234.50</td></tr>",
		"<tr><td>Time</td><td>13:45</td></tr>",
		// Long strings cross the XLS shared string table's CONTINUE record.
		"<td>" + strings.TrimSpace(strings.Repeat("The quick brown fox jumps over the lazy dog. ", 67)) + "</td>",
		"<td>" + strings.TrimSpace(strings.Repeat("Ünïcödé ✓ ", 300)) + "</td>",
	} {
		if !strings.Contains(doc.HTML, want) {
			t.Errorf("HTML lacks %s", want)
		}
	}
	for _, want := range []string{"| a \\| b |", "| x\\|y\\|z |", "## Sales\n\n| Region | Figures |  | Date |", "## Résumé\n\n| Key | Value |"} {
		if !strings.Contains(doc.Markdown, want) {
			t.Errorf("Markdown lacks %s", want)
		}
	}
	// The hidden sheet is skipped.
	if strings.Contains(doc.Markdown, "Secret") || strings.Contains(doc.Markdown, "hidden data") {
		t.Error("the hidden sheet was read")
	}
}

// TestSheetXLSXMatchesXLS: an XLSX and an XLS of one workbook read the same.
func TestSheetXLSXMatchesXLS(t *testing.T) {
	t.Parallel()
	x, err := XLSX(context.Background(), readFixture(t, "sheets.xlsx"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := XLS(context.Background(), readFixture(t, "sheets.xls"))
	if err != nil {
		t.Fatal(err)
	}
	if x.Markdown != b.Markdown {
		t.Errorf("Markdown differs:\n--- xlsx ---\n%s\n--- xls ---\n%s", x.Markdown, b.Markdown)
	}
	if x.HTML != b.HTML {
		t.Errorf("HTML differs:\n--- xlsx ---\n%s\n--- xls ---\n%s", x.HTML, b.HTML)
	}
	if x.Title != b.Title || x.Author != b.Author || x.Pages != b.Pages {
		t.Errorf("metadata differs: %q %q %d / %q %q %d", x.Title, x.Author, x.Pages, b.Title, b.Author, b.Pages)
	}
}

func cellsOf(rows ...[]string) []sheetCell {
	var out []sheetCell
	for r, row := range rows {
		for c, t := range row {
			if t != "" {
				out = append(out, sheetCell{row: r, col: c, text: t})
			}
		}
	}
	return out
}

func renderSheet(s *sheetData, budget int) (md string, warnings []string) {
	blocks, _, warnings := sheetBlocks(s, budget)
	_, md = (&Body{Blocks: blocks}).Render()
	return md, warnings
}

// TestSheetBlocks covers the shared sheet-to-table step.
func TestSheetBlocks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		sheet    sheetData
		budget   int
		want     string
		warnings int
	}{
		{
			name:  "empty sheet keeps its heading",
			sheet: sheetData{name: "Empty"},
			want:  "## Empty\n",
		},
		{
			name: "empty rows and columns trimmed wherever they are",
			sheet: sheetData{name: "S", cells: cellsOf(
				nil,
				[]string{"", "", "a", "", "b", ""},
				nil,
				[]string{"", "", "1", "", "2"},
				nil,
			)},
			want: "## S\n\n| a | b |\n| --- | --- |\n| 1 | 2 |\n",
		},
		{
			name: "merges become spans; covered cells are dropped with their text",
			sheet: sheetData{name: "M", cells: cellsOf(
				[]string{"h", "hidden under the merge", "x"},
				[]string{"v", "1", "2"},
				[]string{"covered", "3", "4"},
			), merges: []sheetRange{{0, 0, 0, 1}, {1, 0, 2, 0}}},
			want: "## M\n\n| h |  | x |\n| --- | --- | --- |\n| v | 1 | 2 |\n|  | 3 | 4 |\n",
		},
		{
			name: "a span counts only the columns kept",
			sheet: sheetData{name: "K", cells: cellsOf(
				[]string{"wide", "", "", "z"},
				[]string{"1", "", "2", "3"},
			), merges: []sheetRange{{0, 0, 0, 2}}},
			want: "## K\n\n| wide |  | z |\n| --- | --- | --- |\n| 1 | 2 | 3 |\n",
		},
		{
			name: "overlapping merges after the first are ignored",
			sheet: sheetData{name: "O", cells: cellsOf(
				[]string{"a", "b", "c"},
				[]string{"d", "e", "f"},
			), merges: []sheetRange{{0, 0, 1, 1}, {1, 1, 1, 2}}},
			// B1, A2 and B2 are covered, which leaves column B empty.
			want:     "## O\n\n| a | c |\n| --- | --- |\n|  | f |\n",
			warnings: 1,
		},
		{
			name: "a merge whose first cell is dropped spans nothing",
			sheet: sheetData{name: "D", cells: cellsOf(
				[]string{"", "", ""},
				[]string{"", "x", "y"},
			), merges: []sheetRange{{0, 0, 1, 0}}},
			want: "## D\n\n| x | y |\n| --- | --- |\n",
		},
		{
			name: "the budget truncates rows",
			sheet: sheetData{name: "B", cells: cellsOf(
				[]string{"a", "b"},
				[]string{"1", "2"},
				[]string{"3", "4"},
			)},
			budget:   5,
			want:     "## B\n\n| a | b |\n| --- | --- |\n| 1 | 2 |\n",
			warnings: 1,
		},
		{
			name: "a later cell at one place replaces an earlier one",
			sheet: sheetData{name: "R", cells: []sheetCell{
				{row: 1, col: 0, text: "second"}, {row: 0, col: 0, text: "first"}, {row: 0, col: 0, text: "replaced"},
			}},
			want: "## R\n\n| replaced |\n| --- |\n| second |\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			budget := tc.budget
			if budget == 0 {
				budget = maxSheetCells
			}
			md, warnings := renderSheet(&tc.sheet, budget)
			if md != tc.want {
				t.Errorf("got\n%s\nwant\n%s", md, tc.want)
			}
			if len(warnings) != tc.warnings {
				t.Errorf("warnings = %q, want %d", warnings, tc.warnings)
			}
		})
	}
}

// TestSheetBlocksHTMLSpans checks the spans as HTML.
func TestSheetBlocksHTMLSpans(t *testing.T) {
	t.Parallel()
	blocks, used, _ := sheetBlocks(&sheetData{name: "S", cells: cellsOf(
		[]string{"a", "", "b"},
		[]string{"c", "d", "e"},
		[]string{"", "f", "g"},
	), merges: []sheetRange{{0, 0, 0, 1}, {1, 0, 2, 0}}}, maxSheetCells)
	h, _ := (&Body{Blocks: blocks}).Render()
	want := "<h2>S</h2>\n<table>\n<tr><th colspan=\"2\">a</th><th>b</th></tr>\n<tr><td rowspan=\"2\">c</td><td>d</td><td>e</td></tr>\n<tr><td>f</td><td>g</td></tr>\n</table>\n"
	if h != want {
		t.Errorf("got\n%s\nwant\n%s", h, want)
	}
	if used != 9 {
		t.Errorf("used %d places, want 9", used)
	}
}

// sheetTestWorkbook returns an XLSX with one sheet of rows×cols cells
// (numbers, dates and strings), written by excelize's stream writer. The
// benchmark uses it too.
func sheetTestWorkbook(tb testing.TB, rows, cols int) []byte {
	tb.Helper()
	f := excelize.NewFile()
	defer f.Close()
	sw, err := f.NewStreamWriter("Sheet1")
	if err != nil {
		tb.Fatal(err)
	}
	thousands, err := f.NewStyle(&excelize.Style{NumFmt: 4}) // #,##0.00
	if err != nil {
		tb.Fatal(err)
	}
	date, err := f.NewStyle(&excelize.Style{NumFmt: 14})
	if err != nil {
		tb.Fatal(err)
	}
	row := make([]any, cols)
	for r := 1; r <= rows; r++ {
		for c := range row {
			switch c % 4 {
			case 0:
				row[c] = fmt.Sprintf("item %d-%d", r, c)
			case 1:
				row[c] = excelize.Cell{StyleID: thousands, Value: float64(r*c) * 1.5}
			case 2:
				row[c] = excelize.Cell{StyleID: date, Value: 45000 + r%1000}
			default:
				row[c] = r * c
			}
		}
		cell, _ := excelize.CoordinatesToCellName(1, r)
		if err := sw.SetRow(cell, row); err != nil {
			tb.Fatal(err)
		}
	}
	if err := sw.Flush(); err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	if err := f.Write(&buf); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// TestXLSXSheets covers what excelize can write: an empty sheet (heading, no
// table), hidden and very hidden sheets (skipped), Boolean and error values,
// and a workbook built by the stream writer.
func TestXLSXSheets(t *testing.T) {
	t.Parallel()
	f := excelize.NewFile()
	defer f.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.SetCellValue("Sheet1", "B2", "name"))
	must(f.SetCellValue("Sheet1", "C2", "ok"))
	must(f.SetCellValue("Sheet1", "B3", "x"))
	must(f.SetCellBool("Sheet1", "C3", false))
	_, err := f.NewSheet("Empty")
	must(err)
	for _, name := range []string{"Hidden", "VeryHidden"} {
		_, err := f.NewSheet(name)
		must(err)
		must(f.SetCellValue(name, "A1", "secret"))
	}
	must(f.SetSheetVisible("Hidden", false))
	must(f.SetSheetVisible("VeryHidden", false, true))
	must(f.SetDocProps(&excelize.DocProperties{Title: " T ", Creator: "C"}))
	var buf bytes.Buffer
	must(f.Write(&buf))
	doc, err := XLSX(context.Background(), buf.Bytes())
	must(err)
	want := "## Sheet1\n\n| name | ok |\n| --- | --- |\n| x | FALSE |\n\n## Empty\n"
	if doc.Markdown != want || doc.Pages != 2 || doc.Title != "T" || doc.Author != "C" {
		t.Errorf("got %q, %d sheets, %q, %q; want %q, 2, T, C", doc.Markdown, doc.Pages, doc.Title, doc.Author, want)
	}

	doc, err = XLSX(context.Background(), sheetTestWorkbook(t, 50, 6))
	must(err)
	if !strings.Contains(doc.Markdown, "| item 2-0 | 3.00 | 03-17-23 | 6 | item 2-4 | 15.00 |") {
		t.Errorf("generated workbook reads\n%.600s", doc.Markdown)
	}
}

// TestSheetCellLimit: a workbook past the cell budget is truncated with a
// warning naming the sheet.
func TestSheetCellLimit(t *testing.T) {
	t.Parallel()
	book := newSheetBook()
	book.budget = 9
	book.add(&sheetData{name: "Big", cells: cellsOf(
		[]string{"a", "b", "c"}, []string{"1", "2", "3"}, []string{"4", "5", "6"}, []string{"7", "8", "9"},
	)})
	book.add(&sheetData{name: "After", cells: cellsOf([]string{"z"})})
	doc := book.document(context.Background())
	if doc.Pages != 2 || len(doc.Warnings) != 2 || !strings.Contains(doc.Warnings[0], `"Big"`) || !strings.Contains(doc.Warnings[1], `"After"`) {
		t.Errorf("warnings %q, %d sheets", doc.Warnings, doc.Pages)
	}
	if strings.Contains(doc.Markdown, "7") || !strings.Contains(doc.Markdown, "| 4 | 5 | 6 |") {
		t.Errorf("got\n%s", doc.Markdown)
	}
}

// --- XLS built by hand ---

// cfbFile builds an OLE compound file (version 3, 512-byte sectors) holding
// the given streams at its root. Streams shorter than 4096 bytes are padded
// to it, which keeps them out of the mini stream; the whole must fit the
// one FAT sector (126 data sectors).
func cfbFile(streams map[string][]byte, names ...string) []byte {
	const (
		sector     = 512
		endOfChain = 0xFFFFFFFE
		free       = 0xFFFFFFFF
		fatSect    = 0xFFFFFFFD
		noStream   = 0xFFFFFFFF
	)
	le32 := binary.LittleEndian.PutUint32
	le16 := binary.LittleEndian.PutUint16
	// Sector 0 is the FAT, sectors 1.. the directory, then the streams.
	dirSectors := (len(names) + 1 + 3) / 4
	fat := make([]uint32, sector/4)
	for i := range fat {
		fat[i] = free
	}
	fat[0] = fatSect
	for i := 1; i <= dirSectors; i++ {
		fat[i] = uint32(i + 1)
	}
	fat[dirSectors] = endOfChain
	next := 1 + dirSectors
	type placed struct {
		start, size int
		data        []byte
	}
	var ps []placed
	for _, n := range names {
		data := streams[n]
		size := len(data)
		if size < 4096 {
			data = append(bytes.Clone(data), make([]byte, 4096-size)...)
			size = 4096
		}
		count := (size + sector - 1) / sector
		for i := 0; i < count; i++ {
			fat[next+i] = uint32(next + i + 1)
		}
		fat[next+count-1] = endOfChain
		ps = append(ps, placed{next, size, data})
		next += count
	}
	if next > len(fat) {
		panic("cfbFile: streams too large")
	}
	entry := func(name string, typ byte, right, child uint32, start uint32, size int) []byte {
		e := make([]byte, 128)
		u := utf16.Encode([]rune(name))
		for i, c := range u {
			le16(e[2*i:], c)
		}
		le16(e[64:], uint16(2*len(u)+2))
		e[66] = typ
		e[67] = 1 // black
		le32(e[68:], noStream)
		le32(e[72:], right)
		le32(e[76:], child)
		le32(e[116:], start)
		le32(e[120:], uint32(size))
		return e
	}
	var dir []byte
	child := uint32(noStream)
	if len(names) > 0 {
		child = 1
	}
	dir = append(dir, entry("Root Entry", 5, noStream, child, endOfChain, 0)...)
	for i, n := range names {
		right := uint32(noStream)
		if i+1 < len(names) {
			right = uint32(i + 2)
		}
		dir = append(dir, entry(n, 2, right, noStream, uint32(ps[i].start), ps[i].size)...)
	}
	for len(dir) < dirSectors*sector {
		e := make([]byte, 128)
		le32(e[68:], noStream)
		le32(e[72:], noStream)
		le32(e[76:], noStream)
		dir = append(dir, e...)
	}
	h := make([]byte, sector)
	copy(h, xlsOLEMagic)
	le16(h[24:], 0x003E)
	le16(h[26:], 3)
	le16(h[28:], 0xFFFE)
	le16(h[30:], 9)
	le16(h[32:], 6)
	le32(h[44:], 1) // FAT sectors
	le32(h[48:], 1) // first directory sector
	le32(h[56:], 4096)
	le32(h[60:], endOfChain) // mini FAT
	le32(h[68:], endOfChain) // DIFAT
	le32(h[76:], 0)          // the FAT is sector 0
	for i := 80; i < sector; i += 4 {
		le32(h[i:], free)
	}
	out := append(h, make([]byte, sector)...)
	for i, v := range fat {
		le32(out[sector+4*i:], v)
	}
	out = append(out, dir...)
	for _, p := range ps {
		d := p.data
		if pad := len(d) % sector; pad != 0 {
			d = append(bytes.Clone(d), make([]byte, sector-pad)...)
		}
		out = append(out, d...)
	}
	return out
}

// biff builds BIFF8 records.
type biff struct{ bytes.Buffer }

func (b *biff) rec(id uint16, parts ...any) *biff {
	var body bytes.Buffer
	for _, p := range parts {
		switch v := p.(type) {
		case []byte:
			body.Write(v)
		case string:
			body.WriteString(v)
		default:
			binary.Write(&body, binary.LittleEndian, v)
		}
	}
	binary.Write(&b.Buffer, binary.LittleEndian, id)
	binary.Write(&b.Buffer, binary.LittleEndian, uint16(body.Len()))
	b.Write(body.Bytes())
	return b
}

// str8 is an XLUnicodeString: a 16-bit count, an option byte, characters.
func str8(s string) []byte {
	u := utf16.Encode([]rune(s))
	wide := false
	for _, c := range u {
		if c > 0xFF {
			wide = true
		}
	}
	out := binary.LittleEndian.AppendUint16(nil, uint16(len(u)))
	if !wide {
		out = append(out, 0)
		for _, c := range u {
			out = append(out, byte(c))
		}
		return out
	}
	out = append(out, 1)
	for _, c := range u {
		out = binary.LittleEndian.AppendUint16(out, c)
	}
	return out
}

// xlsSheetSpec is one sheet of a hand-built workbook.
type xlsSheetSpec struct {
	name   string
	hidden bool
	body   func(b *biff)
}

// buildXLS writes a BIFF8 workbook (buildXLSStream) wrapped in a compound
// file.
func buildXLS(globals func(b *biff), sheets ...xlsSheetSpec) []byte {
	return cfbFile(map[string][]byte{"Workbook": buildXLSStream(globals, sheets...)}, "Workbook")
}

// buildXLSStream writes the Workbook stream of a BIFF8 workbook: globals
// (formats, XFs, the given extra records, sheets) and each sheet's
// substream.
func buildXLSStream(globals func(b *biff), sheets ...xlsSheetSpec) []byte {
	bof := func(b *biff, dt uint16) {
		b.rec(xlsBOF, uint16(0x0600), dt, uint16(0), uint16(0), uint32(0), uint32(0))
	}
	var g biff
	bof(&g, 0x0005)
	g.rec(xlsFormat, uint16(164), str8("0.0"))
	g.rec(xlsFormat, uint16(165), str8("yyyy-mm-dd"))
	for _, f := range []uint16{0, 164, 165, 10} { // XF 0..3: General, 0.0, a date, 0.00%
		g.rec(xlsXF, uint16(0), f, make([]byte, 16))
	}
	if globals != nil {
		globals(&g)
	}
	// BOUNDSHEET positions are patched once the substreams are placed.
	var fixups []int
	for _, s := range sheets {
		fixups = append(fixups, g.Len()+4)
		hidden := byte(0)
		if s.hidden {
			hidden = 1
		}
		name := str8(s.name)
		g.rec(xlsBoundSheetRec, uint32(0), hidden, byte(0), name[0], name[2:])
	}
	g.rec(xlsEOF)
	out := g.Bytes()
	for i, s := range sheets {
		binary.LittleEndian.PutUint32(out[fixups[i]:], uint32(len(out)))
		var b biff
		bof(&b, 0x0010)
		s.body(&b)
		b.rec(xlsEOF)
		out = append(out, b.Bytes()...)
	}
	return out
}

// rk encodes an RK number.
func rk(v float64, int30, div100 bool) uint32 {
	if int30 {
		x := uint32(int32(v)) << 2
		x |= 2
		if div100 {
			x |= 1
		}
		return x
	}
	x := uint32(math.Float64bits(v)>>32) &^ 3
	if div100 {
		x |= 1
	}
	return x
}

// recordsXLS is the workbook TestXLSRecords reads.
func recordsXLS() []byte {
	formula := func(row, col, xf uint16, val []byte) []any {
		return []any{row, col, xf, val, uint16(0), uint32(0), uint16(0)}
	}
	strResult := []byte{0, 0, 0, 0, 0, 0, 0xFF, 0xFF}
	long := strings.Repeat("ab", 30)
	return buildXLS(func(g *biff) {
		g.rec(xlsDateMode, uint16(1))
		// Three strings; the third starts narrow ("xyz") and goes on, after
		// the CONTINUE, wide ("Ωω").
		sst := []any{uint32(3), uint32(3), str8("Name"), str8("Ünï"), uint16(5), byte(0), "xyz"}
		g.rec(xlsSST, sst...)
		g.rec(xlsContinue, byte(1), []byte{0xA9, 0x03, 0xC9, 0x03})
	}, xlsSheetSpec{name: "Data", body: func(b *biff) {
		b.rec(xlsLabelSST, uint16(0), uint16(0), uint16(0), uint32(0))
		b.rec(xlsLabelSST, uint16(0), uint16(1), uint16(0), uint32(1))
		b.rec(xlsLabelSST, uint16(0), uint16(2), uint16(0), uint32(2))
		b.rec(xlsLabel, uint16(1), uint16(0), uint16(0), str8("label"))
		b.rec(xlsRK, uint16(1), uint16(1), uint16(1), rk(-1234, true, false)) // 0.0
		b.rec(xlsRK, uint16(1), uint16(2), uint16(3), rk(12.5, false, true))  // 0.125 as 0.00%
		b.rec(xlsMulRK, uint16(2), uint16(0), uint16(0), rk(3.5, false, false), uint16(1), rk(0, true, false), uint16(1), rk(-7, true, false), uint16(2))
		b.rec(xlsFormula, formula(3, 0, 0, strResult)...)
		// A chart's substream between the FORMULA and its STRING is not
		// allowed, but SHRFMLA is.
		b.rec(xlsShrFmla, make([]byte, 10))
		b.rec(xlsString, uint16(len(long)+2), byte(0), long)
		b.rec(xlsContinue, byte(1), []byte{0xA9, 0x03, 0xC9, 0x03})
		b.rec(xlsFormula, formula(3, 1, 0, []byte{1, 0, 1, 0, 0, 0, 0xFF, 0xFF})...)
		b.rec(xlsFormula, formula(3, 2, 0, []byte{2, 0, 0x07, 0, 0, 0, 0xFF, 0xFF})...)
		b.rec(xlsBoolErr, uint16(4), uint16(0), uint16(0), byte(0x2A), byte(1))
		b.rec(xlsBoolErr, uint16(4), uint16(1), uint16(0), byte(1), byte(0))
		b.rec(xlsNumber, uint16(4), uint16(2), uint16(2), math.Float64bits(43904)) // 2024-03-15 in the 1904 date system
		// An embedded chart: its records are not cells of the sheet.
		b.rec(xlsBOF, uint16(0x0600), uint16(0x0020), make([]byte, 12))
		b.rec(xlsLabel, uint16(9), uint16(9), uint16(0), str8("in the chart"))
		b.rec(xlsEOF)
		b.rec(xlsMergedCells, uint16(1), uint16(5), uint16(5), uint16(0), uint16(2))
		b.rec(xlsLabel, uint16(5), uint16(0), uint16(0), str8("merged"))
	}}, xlsSheetSpec{name: "Gone", hidden: true, body: func(b *biff) {
		b.rec(xlsLabel, uint16(0), uint16(0), uint16(0), str8("hidden"))
	}})
}

// TestXLSRecords reads a hand-built workbook with the records LibreOffice's
// fixture lacks: formulas with text, Boolean and error results (a STRING
// record, continued), RK and MULRK numbers, LABEL, BOOLERR, a chart
// substream inside a sheet, the 1904 date system, and a shared string split
// across a CONTINUE record where its characters change width.
func TestXLSRecords(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("ab", 30)
	data := recordsXLS()
	doc, err := XLS(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	want := "## Data\n\n" +
		"| Name | Ünï | xyzΩω |\n| --- | --- | --- |\n" +
		"| label | -1234.0 | 12.50% |\n" +
		"| 3.5 | 0.0 | -7.0 |\n" +
		"| " + long + "Ωω | TRUE | #DIV/0! |\n" +
		"| #N/A | TRUE | 2024-03-15 |\n" +
		"| merged |  |  |\n"
	if doc.Markdown != want || doc.Pages != 1 {
		t.Errorf("got (%d sheets)\n%s\nwant\n%s", doc.Pages, doc.Markdown, want)
	}
	if !strings.Contains(doc.HTML, `<td colspan="3">merged</td>`) {
		t.Errorf("no merged cell in\n%s", doc.HTML)
	}
}

// zipBomb returns an XLSX-looking archive whose worksheet inflates to size
// bytes of zeros from a few hundred KB, built without inflating it: one
// deflate block of zeros, byte-aligned by a flush, repeated. declared is the
// size the archive states for the member.
func zipBomb(t testing.TB, size, declared uint64) []byte {
	t.Helper()
	const block = 1 << 20
	var one bytes.Buffer
	fw, _ := flate.NewWriter(&one, flate.BestCompression)
	fw.Write(make([]byte, block))
	fw.Flush()
	var stream bytes.Buffer
	n := size / block
	for i := uint64(0); i < n; i++ {
		stream.Write(one.Bytes())
	}
	stream.Write([]byte{0x03, 0x00}) // an empty final block
	crc := uint32(0)
	zero := make([]byte, block)
	for i := uint64(0); i < n; i++ {
		crc = crc32.Update(crc, crc32.IEEETable, zero)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, m := range []struct{ name, body string }{
		{"[Content_Types].xml", `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`},
		{"xl/workbook.xml", `<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="S" sheetId="1" r:id="rId1"/></sheets></workbook>`},
		{"xl/_rels/workbook.xml.rels", `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Target="worksheets/sheet1.xml"/></Relationships>`},
	} {
		w, _ := zw.Create(m.name)
		w.Write([]byte(m.body))
	}
	w, err := zw.CreateRaw(&zip.FileHeader{
		Name: "xl/worksheets/sheet1.xml", Method: zip.Deflate,
		CRC32: crc, CompressedSize64: uint64(stream.Len()), UncompressedSize64: declared,
	})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(stream.Bytes())
	zw.Close()
	return buf.Bytes()
}

// TestSheetHostile: damaged, foreign, encrypted and oversized inputs fail
// quickly with the right error and never panic.
func TestSheetHostile(t *testing.T) {
	t.Parallel()
	xlsx := readFixture(t, "sheets.xlsx")
	xls := readFixture(t, "sheets.xls")
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 64<<10)
	for i := range random {
		random[i] = byte(rng.UintN(256))
	}
	// A workbook whose second record declares more bytes than the stream
	// holds.
	var huge biff
	huge.rec(xlsBOF, uint16(0x0600), uint16(0x0005), make([]byte, 12))
	huge.Write([]byte{0xFC, 0x00, 0xFF, 0xFF, 1, 2, 3})
	// A compound file whose Workbook stream says it is 2 GB long.
	bigStream := cfbFile(map[string][]byte{"Workbook": xls[:100]}, "Workbook")
	binary.LittleEndian.PutUint32(bigStream[1024+128+120:], 0x7FFFFFFF)
	encryptedXLS := buildXLS(func(g *biff) { g.rec(xlsFilePass, make([]byte, 54)) })
	encryptedXLSX := cfbFile(map[string][]byte{"EncryptionInfo": []byte("info"), "EncryptedPackage": []byte("package")}, "EncryptionInfo", "EncryptedPackage")
	var biff5 biff
	biff5.rec(xlsBOF, uint16(0x0500), uint16(0x0005), make([]byte, 4))
	tests := []struct {
		name string
		read func(context.Context, []byte) (*Document, error)
		data []byte
		want error
	}{
		{"xlsx empty", XLSX, nil, ErrMalformed},
		{"xlsx random", XLSX, random, ErrMalformed},
		{"xlsx truncated", XLSX, xlsx[:len(xlsx)/2], ErrMalformed},
		{"xlsx given an xls", XLSX, xls, ErrMalformed},
		{"xlsx zip of something else", XLSX, zipOf(t, "word/document.xml", "<w/>"), ErrMalformed},
		{"xlsx encrypted", XLSX, encryptedXLSX, ErrEncrypted},
		{"xlsx zip bomb", XLSX, zipBomb(t, 300<<20, 300<<20), ErrTooLarge},
		// A few hundred KB that inflate to three million cells: over the
		// memory budget (a *BudgetError), refused before excelize reads a
		// row.
		{"xlsx cell bomb", XLSX, cellBomb(t, 300_000, 10), ErrTooLarge},
		{"xls empty", XLS, nil, ErrMalformed},
		{"xls random", XLS, random, ErrMalformed},
		{"xls random after the magic", XLS, append(bytes.Clone(xlsOLEMagic), random...), ErrMalformed},
		{"xls truncated", XLS, xls[:len(xls)/2], ErrMalformed},
		{"xls given an xlsx", XLS, xlsx, ErrMalformed},
		{"xls huge record", XLS, cfbFile(map[string][]byte{"Workbook": huge.Bytes()}, "Workbook"), ErrMalformed},
		{"xls huge stream", XLS, bigStream, ErrMalformed},
		{"xls no workbook", XLS, cfbFile(map[string][]byte{"WordDocument": []byte("x")}, "WordDocument"), ErrMalformed},
		{"xls FILEPASS", XLS, encryptedXLS, ErrEncrypted},
		{"xls encrypted xlsx", XLS, encryptedXLSX, ErrEncrypted},
		{"xls biff5", XLS, cfbFile(map[string][]byte{"Book": biff5.Bytes()}, "Book"), ErrUnsupported},
		{"xls biff5 in Workbook", XLS, cfbFile(map[string][]byte{"Workbook": biff5.Bytes()}, "Workbook"), ErrUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			doc, err := tc.read(context.Background(), tc.data)
			if !errors.Is(err, tc.want) {
				t.Errorf("err = %v (doc %v), want %v", err, doc != nil, tc.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// TestXLSXLyingZipBomb: a member that inflates far past the size it
// declares is cut off where it lies (archive/zip refuses to read on), so it
// costs little whatever the result.
func TestXLSXLyingZipBomb(t *testing.T) {
	t.Parallel()
	start := time.Now()
	doc, err := XLSX(context.Background(), zipBomb(t, 300<<20, 1000))
	if err == nil && doc.Pages != 1 {
		t.Errorf("got %d sheets", doc.Pages)
	}
	if err != nil && !errors.Is(err, ErrMalformed) {
		t.Errorf("err = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

func zipOf(t testing.TB, name, body string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(body))
	zw.Close()
	return buf.Bytes()
}

// TestSheetContext: both readers stop with the context's error.
func TestSheetContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, read := range map[string]func(context.Context, []byte) (*Document, error){"sheets.xlsx": XLSX, "sheets.xls": XLS} {
		if _, err := read(ctx, readFixture(t, name)); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: err = %v, want context.Canceled", name, err)
		}
	}
	// Cancelled halfway through a sheet: the reader checks the context
	// every sheetCtxEvery cells.
	calls := &cancelAfter{Context: context.Background(), n: 3}
	if _, err := XLSX(calls, sheetTestWorkbook(t, 5000, 5)); !errors.Is(err, context.Canceled) || calls.n > 0 {
		t.Errorf("large sheet: err = %v, want context.Canceled", err)
	}
}

// cancelAfter is a context that is cancelled once Err has been asked n
// times.
type cancelAfter struct {
	context.Context
	n int
}

func (c *cancelAfter) Err() error {
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}

func fuzzSheet(f *testing.F, read func(context.Context, []byte) (*Document, error), seeds ...[]byte) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// A reader that ignores its context past the deadline is a hang:
		// fail loudly so that the fuzzer keeps the input.
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				panic("the reader ignored its context for 25 s")
			}
		}()
		doc, err := read(ctx, data)
		if err == nil && doc == nil {
			t.Fatal("no document and no error")
		}
		if err != nil && doc != nil {
			t.Fatal("a document and an error")
		}
	})
}

func FuzzXLSX(f *testing.F) {
	fuzzSheet(f, XLSX, readFixture(f, "sheets.xlsx"), sheetTestWorkbook(f, 3, 5))
}

func FuzzXLS(f *testing.F) {
	fuzzSheet(f, XLS, readFixture(f, "sheets.xls"), recordsXLS())
}

// TestXLSXFormatsMatchExcelize: XLSX formats numbers by itself (from raw
// values and the cells' styles, see xlsxValue and sheetFormatter); what it
// shows must be what excelize's GetRows shows, for every kind of number
// and format.
func TestXLSXFormatsMatchExcelize(t *testing.T) {
	t.Parallel()
	values := []string{
		"0", "1", "-1", "3.14159", "0.30000000000000004", "1234567.891", "123456789012",
		"1.5E+20", "1E-7", "-0.5", "45366", "45366.75", "100000000000000000000",
		"12345678901234567", "0.1", "99999.995", "-1234.5", "2.5", "0.000123456789",
		"-98765.4321", "1e3", "7.000", "123456789.123456789",
	}
	custom := []string{
		"General", "0", "0.00", "#,##0", "#,##0.00", "0%", "0.00%", "yyyy-mm-dd",
		"d mmm yyyy", "hh:mm:ss", "[$$-409]#,##0.00", "#,##0.00 [$€-407]",
		"0.00E+00", "[$$-409]#,##0.00;[Red]-[$$-409]#,##0.00", "0.0%", "mmmm d, yyyy h:mm AM/PM",
		`#,##0.00" units"`, "@",
	}
	f := excelize.NewFile()
	defer f.Close()
	var styles []int
	for _, id := range []int{1, 2, 3, 4, 9, 10, 11, 14, 15, 20, 22, 37, 49} {
		s, err := f.NewStyle(&excelize.Style{NumFmt: id})
		if err != nil {
			t.Fatal(err)
		}
		styles = append(styles, s)
	}
	for _, code := range custom {
		s, err := f.NewStyle(&excelize.Style{CustomNumFmt: &code})
		if err != nil {
			t.Fatal(err)
		}
		styles = append(styles, s)
	}
	for r, v := range values {
		cell, _ := excelize.CoordinatesToCellName(1, r+1)
		if err := f.SetCellDefault("Sheet1", cell, v); err != nil { // unstyled
			t.Fatal(err)
		}
		for c, s := range styles {
			cell, _ := excelize.CoordinatesToCellName(c+2, r+1)
			if err := f.SetCellDefault("Sheet1", cell, v); err != nil {
				t.Fatal(err)
			}
			if err := f.SetCellStyle("Sheet1", cell, cell, s); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Booleans and text, styled and not.
	n := len(values) + 1
	for c, s := range append([]int{0}, styles...) {
		for i, v := range []any{true, false, "text", "0123"} {
			cell, _ := excelize.CoordinatesToCellName(c+1, n+i)
			if err := f.SetCellValue("Sheet1", cell, v); err != nil {
				t.Fatal(err)
			}
			if err := f.SetCellStyle("Sheet1", cell, cell, s); err != nil {
				t.Fatal(err)
			}
		}
	}
	var buf bytes.Buffer
	if err := f.Write(&buf); err != nil {
		t.Fatal(err)
	}
	ref, err := excelize.OpenReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	rows, err := ref.GetRows("Sheet1")
	if err != nil {
		t.Fatal(err)
	}
	want, _, _ := sheetBlocks(&sheetData{name: "Sheet1", cells: cellsOf(rows...)}, maxSheetCells)
	wantHTML, _ := (&Body{Blocks: want}).Render()
	doc, err := XLSX(context.Background(), buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if doc.HTML != wantHTML {
		got := strings.Split(doc.HTML, "\n")
		exp := strings.Split(wantHTML, "\n")
		for i := range min(len(got), len(exp)) {
			if got[i] != exp[i] {
				t.Errorf("line %d:\n got %s\nwant %s", i, got[i], exp[i])
			}
		}
	}
}
