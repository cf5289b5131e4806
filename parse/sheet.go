package parse

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/xuri/excelize/v2"
)

// Spreadsheets (XLSX and XLS) are read one sheet at a time into a sheetData
// (the sheet's non-empty cells as the sheet displays them, plus its merged
// ranges) and turned into Blocks by sheetBlocks, the one place that decides
// how a sheet reads: a level-2 heading with the sheet's name, then a table
// whose first row is the header. Rows and columns with nothing in them are
// dropped wherever they are (before, between or after the data), merged
// ranges become row and column spans, and a sheet with no content at all
// keeps its heading and gets no table. Hidden sheets never get here: the
// readers skip them.

// Limits on the work one workbook may cause. Reaching them truncates the
// output with a warning naming the sheet.
const (
	// maxSheetCells caps the table cells kept from one workbook, counted as
	// places in the output tables (rows × columns after trimming), since that
	// is what rendering costs.
	maxSheetCells = 2_000_000
	// maxSheetMerges caps the merged ranges honoured in one sheet.
	maxSheetMerges = 10_000
	// maxSheetMergeWork caps the rows walked to find the cells merged ranges
	// cover, so that tall ranges over many rows cost a bounded time.
	maxSheetMergeWork = 4_000_000
	// sheetCtxEvery is how many cells a reader handles between two checks of
	// its context.
	sheetCtxEvery = 4096
)

// sheetCell is one non-empty cell of a sheet: its 0-based place and its text
// as the sheet shows it.
type sheetCell struct {
	row, col int
	text     string
}

// sheetRange is a merged range, 0-based and inclusive.
type sheetRange struct {
	r0, c0, r1, c1 int
}

// sheetData is what a reader gathers from one sheet.
type sheetData struct {
	name  string
	cells []sheetCell
	// merges are the sheet's merged ranges: the first cell of a range shows
	// its content across all of it, and the other cells are covered.
	merges []sheetRange
	// truncated is set by a reader that stopped gathering cells because the
	// workbook's cell budget ran out.
	truncated bool
}

// sheetBook turns sheets into one Body and counts what they keep.
type sheetBook struct {
	body     Body
	budget   int
	sheets   int
	warnings []string
	// cells counts cells handled, for the periodic context check.
	cells int
}

func newSheetBook() *sheetBook { return &sheetBook{budget: maxSheetCells} }

// tick counts n cells handled and returns the context's error every
// sheetCtxEvery cells.
func (b *sheetBook) tick(ctx context.Context, n int) error {
	before := b.cells / sheetCtxEvery
	b.cells += n
	if b.cells/sheetCtxEvery != before {
		return ctx.Err()
	}
	return nil
}

// warnf records a warning.
func (b *sheetBook) warnf(format string, args ...any) {
	b.warnings = append(b.warnings, fmt.Sprintf(format, args...))
}

// add appends a sheet's heading and table.
func (b *sheetBook) add(s *sheetData) {
	b.sheets++
	blocks, used, warns := sheetBlocks(s, b.budget)
	b.budget -= used
	b.body.Blocks = append(b.body.Blocks, blocks...)
	b.warnings = append(b.warnings, warns...)
}

// document renders the sheets added so far.
func (b *sheetBook) document(ctx context.Context) *Document {
	h, m := renderFor(ctx, &b.body)
	return &Document{HTML: h, Markdown: m, Pages: b.sheets, Warnings: b.warnings}
}

// sheetBlocks returns a sheet as a heading and a table of at most budget
// places, how many places the table uses, and warnings about what it left
// out.
func sheetBlocks(s *sheetData, budget int) (blocks []Block, used int, warnings []string) {
	blocks = []Block{{Kind: Heading, Level: 2, Inlines: []Inline{{Text: s.name}}}}
	if s.truncated {
		warnings = append(warnings, fmt.Sprintf("sheet %q is truncated: the workbook has more than %d cells", s.name, maxSheetCells))
	}
	cells := s.cells
	less := func(a, b sheetCell) int {
		if a.row != b.row {
			return a.row - b.row
		}
		return a.col - b.col
	}
	if !slices.IsSortedFunc(cells, less) {
		slices.SortStableFunc(cells, less)
	}
	// A later cell at the same place replaces an earlier one.
	cells = dedupeSheetCells(cells)

	merges, dropped := sheetMerges(s.merges)
	if dropped > 0 {
		warnings = append(warnings, fmt.Sprintf("sheet %q: %d merged ranges ignored (overlapping or too many)", s.name, dropped))
	}
	covered, honoured := sheetCovered(cells, merges)
	if len(honoured) < len(merges) {
		warnings = append(warnings, fmt.Sprintf("sheet %q: %d merged ranges ignored (too large)", s.name, len(merges)-len(honoured)))
	}
	merges = honoured
	kept := cells[:0]
	for i, c := range cells {
		if !covered[i] && c.text != "" {
			kept = append(kept, c)
		}
	}
	cells = kept
	if len(cells) == 0 {
		return blocks, 0, warnings
	}

	// The rows and columns that keep something, in order.
	var rows, cols []int
	for _, c := range cells {
		if len(rows) == 0 || rows[len(rows)-1] != c.row {
			rows = append(rows, c.row)
		}
		cols = append(cols, c.col)
	}
	slices.Sort(cols)
	cols = slices.Compact(cols)

	// Truncate to the budget: columns first (a table needs them all to make
	// sense of a row), then rows.
	nc := min(len(cols), budget)
	nr := 0
	if nc > 0 {
		nr = min(len(rows), budget/nc)
	}
	if nr < len(rows) || nc < len(cols) {
		warnings = append(warnings, fmt.Sprintf("sheet %q truncated to %d of %d rows and %d of %d columns: the workbook has more than %d cells",
			s.name, nr, len(rows), nc, len(cols), maxSheetCells))
	}
	if nr == 0 {
		return blocks, 0, warnings
	}
	rows, cols = rows[:nr], cols[:nc]

	// texts holds the kept places row by row; starts marks the places where
	// a merged range starts and spans their extent.
	texts := make([]string, nr*nc)
	for _, c := range cells {
		r, okr := slices.BinarySearch(rows, c.row)
		k, okc := slices.BinarySearch(cols, c.col)
		if okr && okc {
			texts[r*nc+k] = c.text
		}
	}
	cover := make([]bool, nr*nc)
	spans := map[int][2]int{}
	for _, m := range merges {
		r0, okr := slices.BinarySearch(rows, m.r0)
		c0, okc := slices.BinarySearch(cols, m.c0)
		if !okr || !okc {
			// The range's first cell is in a row or column that was dropped
			// (it is empty and so is everything around it): nothing to span.
			continue
		}
		r1, _ := slices.BinarySearch(rows, m.r1+1)
		c1, _ := slices.BinarySearch(cols, m.c1+1)
		if r1-r0 < 2 && c1-c0 < 2 {
			continue
		}
		spans[r0*nc+c0] = [2]int{r1 - r0, c1 - c0}
		for r := r0; r < r1; r++ {
			for k := c0; k < c1; k++ {
				if r != r0 || k != c0 {
					cover[r*nc+k] = true
				}
			}
		}
	}

	table := Block{Kind: Table, Rows: make([][]Cell, nr)}
	for r := range nr {
		line := texts[r*nc : (r+1)*nc]
		out := make([]Cell, 0, nc)
		for k, t := range line {
			if cover[r*nc+k] {
				continue
			}
			c := Cell{Text: t}
			if sp, ok := spans[r*nc+k]; ok {
				if sp[0] > 1 {
					c.RowSpan = sp[0]
				}
				if sp[1] > 1 {
					c.ColSpan = sp[1]
				}
			}
			out = append(out, c)
		}
		table.Rows[r] = out
	}
	return append(blocks, table), nr * nc, warnings
}

// dedupeSheetCells keeps the last of sorted cells that share a place.
func dedupeSheetCells(cells []sheetCell) []sheetCell {
	out := cells[:0]
	for _, c := range cells {
		if n := len(out); n > 0 && out[n-1].row == c.row && out[n-1].col == c.col {
			out[n-1] = c
			continue
		}
		out = append(out, c)
	}
	return out
}

// sheetMerges returns the valid merged ranges: at least two cells, at most
// maxSheetMerges of them, and none overlapping one before it. dropped counts
// the others (single cells are not counted).
func sheetMerges(in []sheetRange) (out []sheetRange, dropped int) {
	for _, m := range in {
		if m.r0 < 0 || m.c0 < 0 || m.r1 < m.r0 || m.c1 < m.c0 || (m.r0 == m.r1 && m.c0 == m.c1) {
			continue
		}
		if len(out) >= maxSheetMerges {
			dropped++
			continue
		}
		overlaps := false
		for _, o := range out {
			if m.r0 <= o.r1 && o.r0 <= m.r1 && m.c0 <= o.c1 && o.c0 <= m.c1 {
				overlaps = true
				break
			}
		}
		if overlaps {
			dropped++
			continue
		}
		out = append(out, m)
	}
	return out, dropped
}

// sheetCovered marks the cells (sorted by row, then column) that merged
// ranges cover, other than each range's first cell. Finding them walks the
// rows each range spans, and ranges past maxSheetMergeWork rows in total are
// left out of the merges it returns.
func sheetCovered(cells []sheetCell, merges []sheetRange) (covered []bool, kept []sheetRange) {
	covered = make([]bool, len(cells))
	// rowStart[i] is the index of the first cell of the i-th distinct row.
	var rowNum, rowStart []int
	for i, c := range cells {
		if len(rowNum) == 0 || rowNum[len(rowNum)-1] != c.row {
			rowNum = append(rowNum, c.row)
			rowStart = append(rowStart, i)
		}
	}
	rowStart = append(rowStart, len(cells))
	work := 0
	for _, m := range merges {
		i, _ := slices.BinarySearch(rowNum, m.r0)
		j, _ := slices.BinarySearch(rowNum, m.r1+1)
		work += j - i + 1
		if work > maxSheetMergeWork {
			break
		}
		kept = append(kept, m)
		for ; i < j; i++ {
			row := cells[rowStart[i]:rowStart[i+1]]
			k, _ := slices.BinarySearchFunc(row, m.c0, func(c sheetCell, col int) int { return c.col - col })
			for ; k < len(row) && row[k].col <= m.c1; k++ {
				if row[k].row != m.r0 || row[k].col != m.c0 {
					covered[rowStart[i]+k] = true
				}
			}
		}
	}
	return covered, kept
}

// sheetNumFmt is a number format: a format code, or when code is empty the
// built-in format numbered id (0 is General); unstyled marks a cell with no
// style at all, which shows its value as stored.
type sheetNumFmt struct {
	code     string
	id       int
	unstyled bool
}

// sheetFormatter formats numbers as a spreadsheet shows them, for XLSX and
// XLS alike, with excelize's number formatting: the one GetCellValue applies
// to a cell. excelize exports no function that formats a value with a format
// code, so each number is set in a scratch in-memory workbook, on a cell
// styled with the format, and read back. That costs a few microseconds
// (tens for dates, whose formatting in excelize scans its language table
// for every date part), so results are remembered: a sheet's dates and
// round figures repeat. General, the most common format, is done here as
// excelize does it (sheetGeneral), which a test checks against excelize.
type sheetFormatter struct {
	date1904 bool

	scratch *sheetScratchBook
	cache   map[sheetFormatKey]string
}

// sheetScratchBook is a scratch workbook with a cell for each format it has
// been asked for. Making one costs more than reading a small workbook, so
// they are pooled and reused across documents.
type sheetScratchBook struct {
	f        *excelize.File
	cells    map[sheetNumFmt]string // format → scratch cell
	date1904 bool
}

var sheetScratchPool sync.Pool

type sheetFormatKey struct {
	f    sheetNumFmt
	bits uint64
}

const (
	// sheetMaxFormats caps the formats one scratch workbook holds; a full
	// one is dropped rather than pooled.
	sheetMaxFormats = 4096
	// sheetMaxCache caps the formatted numbers remembered.
	sheetMaxCache = 1 << 16
	sheetScratch  = "Sheet1"
)

func newSheetFormatter() *sheetFormatter {
	return &sheetFormatter{cache: map[sheetFormatKey]string{}}
}

// close returns the scratch workbook to the pool.
func (x *sheetFormatter) close() {
	if x.scratch != nil && len(x.scratch.cells) < sheetMaxFormats {
		sheetScratchPool.Put(x.scratch)
	}
	x.scratch = nil
}

// number formats a number from an XLS record as f says.
func (x *sheetFormatter) number(f sheetNumFmt, v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprint(v)
	}
	stored, _, _ := sheetStored(strconv.FormatFloat(v, 'f', -1, 64))
	return x.format(f, stored, v)
}

// value formats the value an XLSX cell stores as f says; text that is not a
// number is returned as it is.
func (x *sheetFormatter) value(f sheetNumFmt, raw string) string {
	stored, v, ok := sheetStored(raw)
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return raw
	}
	return x.format(f, stored, v)
}

// format formats v, stored as excelize stores it, as f says.
func (x *sheetFormatter) format(f sheetNumFmt, stored string, v float64) (s string) {
	if f.unstyled {
		return stored
	}
	if (f.code == "" && f.id == 0) || strings.EqualFold(f.code, "General") {
		return sheetGeneral(stored)
	}
	key := sheetFormatKey{f, math.Float64bits(v)}
	if s, ok := x.cache[key]; ok {
		return s
	}
	defer func() {
		if recover() != nil {
			// The scratch workbook may be left inconsistent: drop it.
			x.scratch = nil
			s = sheetGeneral(stored)
		}
		if len(x.cache) < sheetMaxCache {
			x.cache[key] = s
		}
	}()
	book, cell := x.cell(f)
	// SetCellDefault stores the number as a file does, so that excelize
	// reads it back exactly as it reads a cell of an XLSX.
	if err := book.SetCellDefault(sheetScratch, cell, stored); err != nil {
		return sheetGeneral(stored)
	}
	s, err := book.GetCellValue(sheetScratch, cell)
	if err != nil {
		return sheetGeneral(stored)
	}
	return s
}

// cell returns the scratch cell styled with a format, making it the first
// time.
func (x *sheetFormatter) cell(f sheetNumFmt) (*excelize.File, string) {
	b := x.scratch
	if b == nil {
		b, _ = sheetScratchPool.Get().(*sheetScratchBook)
		if b == nil {
			b = &sheetScratchBook{f: excelize.NewFile(), cells: map[sheetNumFmt]string{}}
		}
		if b.date1904 != x.date1904 {
			d := x.date1904
			if b.f.SetWorkbookProps(&excelize.WorkbookPropsOptions{Date1904: &d}) == nil {
				b.date1904 = d
			}
		}
		x.scratch = b
	}
	if c, ok := b.cells[f]; ok {
		return b.f, c
	}
	if len(b.cells) >= sheetMaxFormats-1 {
		return b.f, "A1" // unstyled: numbers read as General
	}
	c := "A" + strconv.Itoa(len(b.cells)+2)
	style := &excelize.Style{NumFmt: f.id}
	if f.code != "" {
		style = &excelize.Style{CustomNumFmt: &f.code}
	}
	id, err := b.f.NewStyle(style)
	if err != nil || b.f.SetCellStyle(sheetScratch, c, c, id) != nil {
		c = "A1"
	}
	b.cells[f] = c
	return b.f, c
}

// sheetStored parses a cell's number as excelize does before formatting
// it: the shortest decimal that reads back as the same number, or 15
// significant digits where that is longer than 15 digits (unless the stored
// text is an integer exact in 15 digits).
func sheetStored(raw string) (stored string, v float64, ok bool) {
	if strings.Contains(raw, "_") {
		return raw, 0, false
	}
	v, err := strconv.ParseFloat(raw, 64)
	if err != nil {
		return raw, 0, false
	}
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if len(s)-strings.Count(s, ".") > 15 {
		digits := strings.TrimRight(strings.TrimLeft(raw, "+-0"), "0")
		if strings.ContainsAny(raw, ".Ee") || len(digits) > 15 {
			return strconv.FormatFloat(v, 'G', 15, 64), v, true
		}
	}
	return s, v, true
}

// sheetGeneral formats a number under the General format as excelize does:
// as stored, or in 10 significant digits when it has more than 11.
func sheetGeneral(stored string) string {
	if n, err := strconv.ParseFloat(stored, 64); err == nil {
		f := strconv.FormatFloat(n, 'f', -1, 64)
		if len(f)-strings.Count(f, ".") > 11 {
			return strconv.FormatFloat(n, 'G', 10, 64)
		}
	}
	return stored
}
