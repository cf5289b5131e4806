package parse

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// bombXLSX returns an XLSX written as a hostile client would write it, with
// archive/zip rather than a spreadsheet library: the parts excelize needs,
// the extra parts given (which replace them by name), and one sheet of
// rows copies of row. Identical rows deflate to almost nothing.
func bombXLSX(t testing.TB, extra map[string]string, rows int, row string) []byte {
	t.Helper()
	parts := map[string]string{
		"[Content_Types].xml": `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
			`<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>` +
			`<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>`,
		"_rels/.rels": `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>`,
		"xl/workbook.xml": `<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">` +
			`<sheets><sheet name="Data" sheetId="1" r:id="rId1"/></sheets></workbook>`,
		"xl/_rels/workbook.xml.rels": `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>`,
		"xl/styles.xml": `<styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><cellXfs count="1"><xf numFmtId="0"/></cellXfs></styleSheet>`,
	}
	for name, body := range extra {
		parts[name] = body
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range []string{"[Content_Types].xml", "_rels/.rels", "xl/workbook.xml", "xl/_rels/workbook.xml.rels", "xl/styles.xml"} {
		w, _ := zw.Create(name)
		io.WriteString(w, parts[name])
		delete(parts, name)
	}
	for name, body := range parts {
		w, _ := zw.Create(name)
		io.WriteString(w, body)
	}
	w, err := zw.Create("xl/worksheets/sheet1.xml")
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, `<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>`)
	for range rows {
		io.WriteString(w, row)
	}
	io.WriteString(w, `</sheetData></worksheet>`)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// cellBomb is an XLSX of rows × cols number cells.
func cellBomb(t testing.TB, rows, cols int) []byte {
	var row strings.Builder
	row.WriteString("<row>")
	for c := range cols {
		fmt.Fprintf(&row, "<c><v>%d</v></c>", c+1)
	}
	row.WriteString("</row>")
	return bombXLSX(t, nil, rows, row.String())
}

// xlsCellStream is the Workbook stream of an XLS whose one sheet has rows ×
// cols numbers in MULRK records, six bytes a cell.
func xlsCellStream(rows, cols int) []byte {
	return buildXLSStream(nil, xlsSheetSpec{name: "Data", body: func(b *biff) {
		for r := range rows {
			parts := []any{uint16(r), uint16(0)}
			for c := range cols {
				parts = append(parts, uint16(0), rk(float64(c+1), true, false))
			}
			b.rec(xlsMulRK, append(parts, uint16(cols-1))...)
		}
	}})
}

// heapGrowth runs f and returns how far the heap rose above where it stood
// before: the peak of HeapAlloc, sampled every millisecond, and the growth
// of TotalAlloc, which bounds it.
func heapGrowth(f func()) (peak, total uint64) {
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var mu sync.Mutex
	high := before.HeapAlloc
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var m runtime.MemStats
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			runtime.ReadMemStats(&m)
			mu.Lock()
			high = max(high, m.HeapAlloc)
			mu.Unlock()
		}
	}()
	f()
	close(done)
	wg.Wait()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	return max(high, after.HeapAlloc) - before.HeapAlloc, after.TotalAlloc - before.TotalAlloc
}

// estimateXLSX is the estimate XLSX makes of data.
func estimateXLSX(t testing.TB, ctx context.Context, data []byte) memEstimate {
	t.Helper()
	a, err := openArchive(data)
	if err != nil {
		t.Fatal(err)
	}
	est, err := xlsxEstimateParts(ctx, a, len(data))
	if err != nil {
		t.Fatal(err)
	}
	parts, err := xlsxSheetParts(a)
	if err != nil {
		t.Fatal(err)
	}
	if err := xlsxEstimateSheets(ctx, a, parts, &est); err != nil {
		t.Fatal(err)
	}
	return est
}

// TestBudgetRefusesCellBomb: a workbook of a few hundred KB whose sheet
// holds three million cells is refused, naming the cells and the budget,
// before it is read: the heap barely grows, where reading it took the
// memory of the maxSheetCells it was cut to, and the cells are counted
// only until they are too many. Not parallel, so that the heap's growth is
// this test's.
func TestBudgetRefusesCellBomb(t *testing.T) {
	bomb := cellBomb(t, 300_000, 10)
	t.Logf("the bomb is %d KB", len(bomb)>>10)
	var err error
	start := time.Now()
	peak, total := heapGrowth(func() { _, err = XLSX(context.Background(), bomb) })
	t.Logf("refused in %v, heap peak +%d KB, %d KB allocated: %v", time.Since(start), peak>>10, total>>10, err)

	var be *BudgetError
	if !errors.As(err, &be) || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want a *BudgetError that is ErrTooLarge", err)
	}
	// Counting stopped once the cells passed the budget.
	if be.Unit != "cells" || !be.AtLeast || be.Found >= 3_000_000 || be.Max >= be.Found || be.Max < 300_000 || be.Budget != defaultParseBudget {
		t.Errorf("BudgetError %+v: want cells found (at least), fewer than the 3000000 there are, "+
			"a limit below them and above 300000, and the budget of %d", *be, defaultParseBudget)
	}
	for _, want := range []string{fmt.Sprintf("the spreadsheet has at least %d cells; parse accepts at most %d", be.Found, be.Max), "memory budget of 256 MB"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	if total > 50<<20 {
		t.Errorf("refusing the bomb allocated %d MB: the estimate must come before the cells are read", total>>20)
	}
}

// TestBudgetAdmitsLargeSheet: a real-world large workbook (300,000 cells of
// text, numbers and dates, written by excelize) is read whole.
func TestBudgetAdmitsLargeSheet(t *testing.T) {
	t.Parallel()
	wb := sheetTestWorkbook(t, 30_000, 10)
	doc, err := XLSX(context.Background(), wb)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(doc.Markdown, "| item 30000-0 |") || len(doc.Warnings) > 0 {
		t.Errorf("the last row is missing or warnings %q", doc.Warnings)
	}
	t.Logf("estimated at %d MB of the %d MB budget", estimateXLSX(t, context.Background(), wb).total()>>20, defaultParseBudget>>20)
}

// TestBudgetHostile: what else amplifies is refused from its counts before
// it is decoded: an XLSX whose styles hold a million formats, one whose
// sheet holds a few cells spread over a table of millions of places, an XLS
// of millions of six-byte cells.
func TestBudgetHostile(t *testing.T) {
	t.Parallel()
	styles := `<styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><cellXfs>` +
		strings.Repeat(`<xf numFmtId="0"/>`, 1_000_000) + `</cellXfs></styleSheet>`
	var diagonal strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&diagonal, `<row r="%d"><c r="%s%d"><v>1</v></c></row>`, i, columnName(i), i)
	}
	tests := []struct {
		name string
		read func(context.Context) (*Document, error)
		unit string
	}{
		{"xlsx styles", func(ctx context.Context) (*Document, error) {
			return XLSX(ctx, bombXLSX(t, map[string]string{"xl/styles.xml": styles}, 1, `<row><c><v>1</v></c></row>`))
		}, "XML elements"},
		{"xlsx sparse sheet", func(ctx context.Context) (*Document, error) {
			// 3,000 cells on a diagonal make a table of 3,000 × 3,000.
			return ParseOutputs(ctx, "xlsx", bombXLSX(t, nil, 1, diagonal.String()), Outputs{Markdown: true, HTML: true})
		}, "cells in its tables, empty ones included"},
		{"xls cells", func(ctx context.Context) (*Document, error) {
			return xlsReadWorkbook(ctx, xlsCellStream(65_000, 40))
		}, "cells"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := tc.read(context.Background())
			var be *BudgetError
			if !errors.As(err, &be) || be.Unit != tc.unit {
				t.Fatalf("err = %v, want a *BudgetError naming %s", err, tc.unit)
			}
			t.Logf("%v: %v", time.Since(start), err)
		})
	}
}

// columnName is the letters of a 1-based column number.
func columnName(n int) string {
	var s []byte
	for ; n > 0; n = (n - 1) / 26 {
		s = append([]byte{byte('A' + (n-1)%26)}, s...)
	}
	return string(s)
}

// TestBudgetShared: six workbooks just under the per-parse budget, parsed
// at once, share a budget with room for two: all are read, and what they
// hold reserved at once never exceeds it. Not parallel: it replaces the
// process's budget.
func TestBudgetShared(t *testing.T) {
	wb := cellBomb(t, 2_000, 10)
	est := estimateXLSX(t, context.Background(), wb).total()
	b := useBudget(t, est+est/20, 5*est/2)
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			doc, err := XLSX(context.Background(), wb)
			if err != nil {
				errs[i] = err
			} else if n := strings.Count(doc.Markdown, "\n| 1 | 2 |"); n != 2_000 {
				errs[i] = fmt.Errorf("%d rows read, want 2000 (the first the header)", n)
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("parse %d: %v", i, err)
		}
	}
	now, peak := b.reserved()
	t.Logf("each parse reserves %d MB; at most %d MB were reserved at once, of %d MB", est>>20, peak>>20, b.shared>>20)
	if peak > b.shared || peak < est || now != 0 {
		t.Errorf("reserved at most %d of %d, %d left reserved; want between %d and the budget, none left", peak, b.shared, now, est)
	}
}

// TestBudgetBusy: a parse that cannot get its share before its deadline
// fails with a *BusyError (the document is fine: try later), one whose
// context is cancelled with the context's error, and a document over the
// per-parse budget is refused at once, without waiting for the shared one.
func TestBudgetBusy(t *testing.T) {
	wb := cellBomb(t, 100, 10)
	est := estimateXLSX(t, context.Background(), wb).total()
	b := useBudget(t, 2*est, 2*est)
	release, err := b.admit(context.Background(), memEstimate{fixed: 2 * est})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var busy *BusyError
	if _, err := XLSX(ctx, wb); !errors.As(err, &busy) || busy.RetryAfter <= 0 || busy.Need != est {
		t.Errorf("with the budget taken: err = %v, want a *BusyError for %d bytes with a RetryAfter", err, est)
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if _, err := XLSX(ctx, wb); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled while waiting: err = %v, want context.Canceled", err)
	}
	big := cellBomb(t, 10_000, 10)
	if e := estimateXLSX(t, context.Background(), big).total(); e <= b.perParse {
		t.Fatalf("the larger workbook is estimated at %d bytes, within the per-parse budget of %d", e, b.perParse)
	}
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var be *BudgetError
	if _, err := XLSX(ctx, big); !errors.As(err, &be) {
		t.Errorf("over the per-parse budget: err = %v, want a *BudgetError", err)
	}

	release()
	release() // twice is harmless
	if _, err := XLSX(context.Background(), wb); err != nil {
		t.Errorf("with the budget free again: %v", err)
	}
	if now, _ := b.reserved(); now != 0 {
		t.Errorf("%d bytes left reserved", now)
	}
}

// TestBudgetError: a refusal names what costs most and how much of it a
// document like the one refused may have.
func TestBudgetError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		est  memEstimate
		want string
	}{
		{memEstimate{kind: "spreadsheet", cellCost: 100, cells: 3_000_000},
			"the spreadsheet has 3000000 cells; parse accepts at most 2684354 (a memory budget of 256 MB; reading this one would take about 287 MB)"},
		{memEstimate{kind: "spreadsheet", fixed: 56 << 20, elements: 2_000_000, elementBytes: 400_000_000},
			"the spreadsheet has 2000000 XML elements; parse accepts at most 1048576 (a memory budget of 256 MB; reading this one would take about 438 MB)"},
		{memEstimate{kind: "spreadsheet", cellCost: 100, cells: 3_000_000, partial: true},
			"the spreadsheet has at least 3000000 cells; parse accepts at most 2684354 (a memory budget of 256 MB; reading this one would take more than 286 MB)"},
		{memEstimate{kind: "document", bytes: 300 << 20},
			"the document has 314572800 inflated bytes; parse accepts at most 268435456 (a memory budget of 256 MB; reading this one would take about 300 MB)"},
	} {
		err := tc.est.check(defaultParseBudget)
		if err == nil || err.Error() != tc.want {
			t.Errorf("check(%+v) = %v, want %s", tc.est, err, tc.want)
		}
	}
	if err := (memEstimate{bytes: defaultParseBudget}).check(defaultParseBudget); err != nil {
		t.Errorf("an estimate of exactly the budget: %v", err)
	}
}

// BenchmarkBudgetEstimate is the calibration of the costs in budget.go:
// for documents that stress each of them, the estimate (est-MB) against
// the heap's growth while the document is read with the budget lifted
// (peak-MB, sampled every millisecond, so a little under the truth). Every
// peak should stay under its estimate.
//
//	go test -run '^$' -bench BudgetEstimate -benchtime 1x ./parse/
func BenchmarkBudgetEstimate(b *testing.B) {
	useBudget(b, 1<<40, 1<<40)
	styles := `<styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><cellXfs>` +
		strings.Repeat(`<xf numFmtId="0"/>`, 300_000) + `</cellXfs></styleSheet>`
	strs := `<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">` + strings.Repeat("<si><t>x</t></si>", 500_000) + `</sst>`
	sst := map[string]string{"xl/sharedStrings.xml": strs, "xl/_rels/workbook.xml.rels": `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
		`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/>` +
		`<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/></Relationships>`}
	xls := xlsCellStream(50_000, 20)
	odt := testODT(b, "", strings.Repeat("<text:p>x</text:p>", 1_000_000))
	for _, tc := range []budgetCase{
		xlsxCase(b, "xlsx cells", cellBomb(b, 50_000, 10)),
		xlsxCase(b, "xlsx text, numbers and dates", sheetTestWorkbook(b, 50_000, 10)),
		xlsxCase(b, "xlsx styles", bombXLSX(b, map[string]string{"xl/styles.xml": styles}, 1, `<row><c><v>1</v></c></row>`)),
		xlsxCase(b, "xlsx shared strings", bombXLSX(b, sst, 1, `<row><c t="s"><v>0</v></c></row>`)),
		{"xls cells", func(ctx context.Context) memEstimate {
			est, _ := xlsEstimate(ctx, xls)
			return est
		}, func(ctx context.Context) error {
			_, err := xlsReadWorkbook(ctx, xls)
			return err
		}},
		{"odt paragraphs", func(context.Context) memEstimate {
			a, _ := openArchive(odt)
			return officeEstimate(a)
		}, func(ctx context.Context) error {
			_, err := ODT(ctx, odt)
			return err
		}},
	} {
		for _, out := range []Outputs{{Markdown: true}, {Markdown: true, HTML: true}} {
			name := tc.name + ", markdown"
			if out.HTML {
				name += " and html"
			}
			b.Run(name, func(b *testing.B) {
				ctx := context.WithValue(context.Background(), outputsKey{}, out)
				est := tc.estimate(ctx).total()
				var high uint64
				for b.Loop() {
					var err error
					peak, _ := heapGrowth(func() { err = tc.read(ctx) })
					if err != nil {
						b.Fatal(err)
					}
					high = max(high, peak)
				}
				b.ReportMetric(float64(est)/(1<<20), "est-MB")
				b.ReportMetric(float64(high)/(1<<20), "peak-MB")
				if high > uint64(est) {
					b.Errorf("the heap grew by %d MB, past the estimate of %d MB", high>>20, est>>20)
				}
			})
		}
	}
}

// budgetCase is a document of the calibration: its estimate and its
// reading.
type budgetCase struct {
	name     string
	estimate func(ctx context.Context) memEstimate
	read     func(ctx context.Context) error
}

// xlsxCase is the calibration's case of an XLSX.
func xlsxCase(b *testing.B, name string, data []byte) budgetCase {
	return budgetCase{name,
		func(ctx context.Context) memEstimate { return estimateXLSX(b, ctx, data) },
		func(ctx context.Context) error {
			_, err := XLSX(ctx, data)
			return err
		}}
}

// TestBudgetHoldsToTheScan: a cell the scan that counts cells misses (its
// start tag is longer than the scanner reads) is not read either, so that
// no markup can make a workbook take more than its estimate; the sheet says
// what it left out.
func TestBudgetHoldsToTheScan(t *testing.T) {
	t.Parallel()
	pad := strings.Repeat("x", 70<<10)
	wb := bombXLSX(t, nil, 1, `<row><c><v>1</v></c><c><v>2</v></c><c pad="`+pad+`"><v>3</v></c></row>`)
	if est := estimateXLSX(t, context.Background(), wb); est.cells != 2 {
		t.Fatalf("the scan counted %d cells, want 2 (the third hidden from it)", est.cells)
	}
	doc, err := XLSX(context.Background(), wb)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(doc.Markdown, "| 1 | 2 |") || strings.Contains(doc.Markdown, "3") ||
		len(doc.Warnings) != 1 || !strings.Contains(doc.Warnings[0], `sheet "Data" has more cells than a scan`) {
		t.Errorf("got %q, warnings %q", doc.Markdown, doc.Warnings)
	}
}
