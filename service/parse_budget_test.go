package service_test

import (
	"archive/zip"
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// cellBombXLSX is a workbook of a few hundred KB whose one sheet holds
// rows × 10 number cells, written with archive/zip as a hostile client
// would: identical rows deflate to almost nothing.
func cellBombXLSX(t *testing.T, rows int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, p := range []struct{ name, body string }{
		{"[Content_Types].xml", `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
			`<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/></Types>`},
		{"_rels/.rels", `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>`},
		{"xl/workbook.xml", `<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">` +
			`<sheets><sheet name="Data" sheetId="1" r:id="rId1"/></sheets></workbook>`},
		{"xl/_rels/workbook.xml.rels", `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>`},
		{"xl/styles.xml", `<styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><cellXfs count="1"><xf numFmtId="0"/></cellXfs></styleSheet>`},
	} {
		w, err := zw.Create(p.name)
		require.NoError(t, err)
		io.WriteString(w, p.body)
	}
	w, err := zw.Create("xl/worksheets/sheet1.xml")
	require.NoError(t, err)
	io.WriteString(w, `<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>`)
	row := "<row>" + strings.Repeat("<c><v>7</v></c>", 10) + "</row>"
	for range rows {
		io.WriteString(w, row)
	}
	io.WriteString(w, `</sheetData></worksheet>`)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// TestParseCellBomb uploads a workbook of a few hundred KB that inflates to
// three million cells: it is answered 422 PARSE_ERROR naming the cells and
// the memory budget, at once, rather than read to the maxSheetCells it
// would be cut to.
func TestParseCellBomb(t *testing.T) {
	ts := start(t, map[string]string{"TRAWLER_WARM_BROWSERS": "0"})
	bomb := cellBombXLSX(t, 300_000)
	begin := time.Now()
	r := ts.parseFile(keyAcme, upload{name: "file", filename: "figures.xlsx", data: bomb},
		options(map[string]any{"formats": []any{"markdown"}}))
	took := time.Since(begin)
	t.Logf("%d KB answered in %v: %d %s", len(bomb)>>10, took, r.Status, r.Raw)
	require.Equal(t, 422, r.Status, "%s", r.Raw)
	require.Equal(t, "PARSE_ERROR", r.str("code"))
	for _, want := range []string{"the spreadsheet has at least", "cells; parse accepts at most", "memory budget of 256 MB"} {
		require.Contains(t, r.str("error"), want)
	}
	// Reading the sheet's cells takes tens of times longer than counting
	// them: the bound lies between the two.
	require.Less(t, took, 5*time.Second, "the bomb was read rather than refused")
}
