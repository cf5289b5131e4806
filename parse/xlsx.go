package parse

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xuri/excelize/v2"
)

// XLSX limits, on top of the archive caps in zip.go.
const (
	// xlsxXMLInMemory is the largest worksheet or shared-string part excelize
	// keeps in memory; it would unpack larger ones to temporary files. It is
	// the member cap, which is refused before excelize sees it, so nothing
	// of an upload ever reaches the disk (zero data retention).
	xlsxXMLInMemory = maxMemberBytes
	// xlsxMaxMembers caps the members of the archive.
	xlsxMaxMembers = 65_536
	// xlsxMaxScanned caps the cell places a workbook may make us walk,
	// empty ones included: a row that holds one cell far to the right is
	// handed over padded with empty cells up to it.
	xlsxMaxScanned = 64_000_000
)

// XLSX reads an Office Open XML workbook with excelize: every visible sheet
// becomes a heading and a table (see sheetBlocks) whose cells read as the
// sheet displays them, exactly as excelize's GetCellValue shows them. The
// cells come from excelize's streaming row reader as stored; numbers are
// then formatted by their cell's number format through sheetFormatter,
// which remembers what it formatted (excelize formats every cell anew, and
// a date costs it tens of microseconds).
//
// Title and Author come from docProps/core.xml. A password-protected
// workbook (an OLE file holding an EncryptedPackage) is ErrEncrypted, a
// member that inflates past the archive caps ErrTooLarge, and anything that
// is not a workbook ErrMalformed. XLSX never panics and stops with the
// context's error when ctx ends.
func XLSX(ctx context.Context, data []byte) (doc *Document, err error) {
	if len(data) > MaxInputBytes {
		return nil, fmt.Errorf("%w: %d bytes (limit %d)", ErrTooLarge, len(data), MaxInputBytes)
	}
	defer func() {
		if r := recover(); r != nil {
			doc, err = nil, fmt.Errorf("%w: xlsx: %v", ErrMalformed, r)
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if bytes.HasPrefix(data, xlsOLEMagic) {
		if xlsIsEncryptedPackage(data) {
			return nil, fmt.Errorf("%w: password-protected workbook", ErrEncrypted)
		}
		return nil, fmt.Errorf("%w: an OLE compound file, not an XLSX workbook", ErrMalformed)
	}
	a, err := openArchive(data)
	if err != nil {
		return nil, err
	}
	if err := xlsxCheckSizes(a); err != nil {
		return nil, err
	}
	// What excelize decodes whole is weighed before anything is decoded,
	// and the sheets' cells before excelize opens the workbook.
	est, err := xlsxEstimateParts(ctx, a, len(data))
	if err != nil {
		return nil, err
	}
	if err := est.check(currentBudget().perParse); err != nil {
		return nil, err
	}
	parts, err := xlsxSheetParts(a)
	if err != nil {
		return nil, err
	}
	if err := xlsxEstimateSheets(ctx, a, parts, &est); err != nil {
		return nil, err
	}
	release, err := currentBudget().admit(ctx, est)
	if err != nil {
		return nil, err
	}
	defer release()

	// excelize unpacks parts larger than xlsxXMLInMemory into temporary
	// files, and may leave them behind when the archive turns out damaged
	// halfway, so they go to a directory of their own that is removed
	// whatever happens.
	tmp, err := os.MkdirTemp("", "parse-xlsx-")
	if err != nil {
		return nil, fmt.Errorf("xlsx: %w", err)
	}
	defer os.RemoveAll(tmp)
	f, err := excelize.OpenReader(bytes.NewReader(data), excelize.Options{
		UnzipSizeLimit:    maxArchiveBytes,
		UnzipXMLSizeLimit: xlsxXMLInMemory,
		TmpDir:            tmp,
	})
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	if err != nil {
		return nil, xlsxError(err)
	}

	book := newSheetBook()
	nf := newSheetFormatter()
	defer nf.close()
	if props, err := f.GetWorkbookProps(); err == nil && props.Date1904 != nil {
		nf.date1904 = *props.Date1904
	}
	styles := xlsxStyles(f)
	raw := excelize.Options{RawCellValue: true}
	walked := 0 // cell places handed over, empty ones included
	// The estimate is of the cells the scan counted, so no more are read:
	// markup the scan could not follow cannot take more memory than it
	// reserved.
	cellsLeft := est.cells
	for _, name := range f.GetSheetList() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p := parts[name]
		if visible, _ := f.GetSheetVisible(name); !visible || p.chart {
			continue
		}
		scan := &xlsxSheetScan{}
		if p.path != "" {
			if scan, err = xlsxScanSheet(ctx, a, p.path, book.budget+1, nil); err != nil {
				return nil, err
			}
		}
		slices.SortStableFunc(scan.cells, func(a, b xlsxCell) int {
			return cmp.Or(cmp.Compare(a.row, b.row), cmp.Compare(a.col, b.col))
		})
		s := &sheetData{name: name, merges: scan.merges}
		rows, err := f.Rows(name)
		if err != nil {
			return nil, xlsxError(err)
		}
		k := 0        // the next of scan.cells
		over := false // cellsLeft ran out
		for r := 0; rows.Next(); r++ {
			// Raw values: shared and inline strings resolved, numbers as
			// stored, which the cell's style then formats.
			cols, err := rows.Columns(raw)
			if err != nil {
				rows.Close()
				return nil, xlsxError(err)
			}
			walked += len(cols)
			for c, t := range cols {
				if t == "" {
					continue
				}
				if cellsLeft--; cellsLeft < 0 {
					over = true
					break
				}
				for k < len(scan.cells) && (int(scan.cells[k].row) < r || int(scan.cells[k].row) == r && int(scan.cells[k].col) < c) {
					k++
				}
				if k < len(scan.cells) && int(scan.cells[k].row) == r && int(scan.cells[k].col) == c {
					t = xlsxValue(nf, styles, scan.cells[k], t)
				}
				s.cells = append(s.cells, sheetCell{row: r, col: c, text: t})
			}
			if over {
				book.warnf("sheet %q has more cells than a scan of the workbook found; the rest of it is left out", name)
				break
			}
			if len(s.cells) > book.budget || walked > xlsxMaxScanned {
				s.truncated = true
				break
			}
			if err := book.tick(ctx, len(cols)+1); err != nil {
				rows.Close()
				return nil, err
			}
		}
		if err := rows.Close(); err != nil {
			if errors.Is(err, excelize.ErrMaxRows) {
				book.warnf("sheet %q has rows past the last row a sheet may have; they are left out", name)
			} else {
				return nil, xlsxError(err)
			}
		}
		book.add(s)
		if walked > xlsxMaxScanned {
			book.warnf("workbook truncated after sheet %q: more than %d cells to walk", name, xlsxMaxScanned)
			break
		}
	}
	var title, author string
	if props, err := f.GetDocProps(); err == nil {
		title, author = strings.TrimSpace(props.Title), strings.TrimSpace(props.Creator)
	}
	// The workbook's parts are no longer needed: let them go before the
	// output is rendered.
	f.Close()
	f = nil
	doc = book.document(ctx)
	doc.Title, doc.Author = title, author
	return doc, nil
}

// xlsxStyles returns each cell style's number format, picked as excelize
// picks it when it formats a cell: the workbook's own code for the style's
// format id first, then the built-in format with that id.
func xlsxStyles(f *excelize.File) []sheetNumFmt {
	st := f.Styles
	if st == nil || st.CellXfs == nil {
		return nil
	}
	custom := map[int]string{}
	if st.NumFmts != nil {
		for _, n := range st.NumFmts.NumFmt {
			if n == nil {
				continue
			}
			if _, dup := custom[n.NumFmtID]; dup {
				continue
			}
			custom[n.NumFmtID] = n.FormatCode
			if n.FormatCode16 != "" {
				custom[n.NumFmtID] = n.FormatCode16
			}
		}
	}
	out := make([]sheetNumFmt, len(st.CellXfs.Xf))
	for i, xf := range st.CellXfs.Xf {
		id := 0
		if xf.NumFmtID != nil {
			id = *xf.NumFmtID
		}
		if code, ok := custom[id]; ok {
			out[i] = sheetNumFmt{code: code}
		} else {
			out[i] = sheetNumFmt{id: id}
		}
	}
	return out
}

// xlsxValue is the text of a number, date or Boolean cell whose raw value
// is raw, as excelize's GetCellValue shows it.
func xlsxValue(nf *sheetFormatter, styles []sheetNumFmt, c xlsxCell, raw string) string {
	f := sheetNumFmt{unstyled: true}
	// Style 0, like a style the workbook does not have, shows the value as
	// stored.
	if c.style > 0 && int(c.style) < len(styles) {
		f = styles[c.style]
	}
	switch c.typ {
	case 'b':
		switch raw {
		case "1":
			return "TRUE"
		case "0":
			return "FALSE"
		}
		return raw
	case 'd':
		serial, ok := xlsxDateSerial(raw)
		if !ok {
			return raw
		}
		return nf.value(f, strconv.FormatFloat(serial, 'G', 15, 64))
	}
	return nf.value(f, raw)
}

// xlsxDateSerial converts an ISO 8601 date (a cell of type d) to the serial
// number Excel stores dates as, in the 1900 date system, as excelize does.
func xlsxDateSerial(s string) (float64, bool) {
	layout := "20060102T150405.999"
	if strings.HasSuffix(s, "Z") {
		layout = "20060102T150405Z"
		if strings.Contains(s, "-") {
			layout = "2006-01-02T15:04:05Z"
		}
	} else if strings.Contains(s, "-") {
		layout = "2006-01-02 15:04:05Z"
	}
	t, err := time.Parse(layout, strings.ReplaceAll(s, ",", "."))
	if err != nil {
		return 0, false
	}
	serial := float64(t.Sub(time.Date(1899, 12, 30, 0, 0, 0, 0, time.UTC))) / float64(24*time.Hour)
	if serial < 61 {
		// Excel counts 1900 as a leap year, so its serials for dates
		// before March 1900 are one less.
		serial--
	}
	return serial, serial >= 0
}

// xlsxError classifies an error from excelize; errors.Is finds both the
// class and excelize's own error.
func xlsxError(err error) error {
	switch {
	case errors.Is(err, ErrMalformed), errors.Is(err, ErrTooLarge), errors.Is(err, ErrEncrypted):
		return err
	case errors.Is(err, excelize.ErrWorkbookPassword):
		return fmt.Errorf("%w: %w", ErrEncrypted, err)
	case strings.Contains(err.Error(), "unzip size exceeds"):
		// excelize's size limit error has no sentinel to match.
		return fmt.Errorf("%w: %w", ErrTooLarge, err)
	}
	return fmt.Errorf("%w: xlsx: %w", ErrMalformed, err)
}

// xlsxCheckSizes refuses an archive whose members say they inflate past the
// caps in zip.go. archive/zip holds every member to the size it declares
// (reading more is an error), so what excelize inflates stays within them.
func xlsxCheckSizes(a *archive) error {
	if len(a.files) > xlsxMaxMembers {
		return fmt.Errorf("%w: %d archive members (limit %d)", ErrTooLarge, len(a.files), xlsxMaxMembers)
	}
	var total uint64
	for name, f := range a.files {
		if f.UncompressedSize64 > maxMemberBytes {
			return fmt.Errorf("%w: %s inflates to more than %d MB", ErrTooLarge, name, maxMemberBytes>>20)
		}
		total += f.UncompressedSize64
		if total > maxArchiveBytes {
			return fmt.Errorf("%w: the archive inflates to more than %d MB", ErrTooLarge, maxArchiveBytes>>20)
		}
	}
	return nil
}

// xlsxEstimateParts begins the estimate of what reading the workbook
// takes, from the archive alone: excelize copies the file and holds every
// member inflated, and decodes the workbook-wide parts (workbook,
// relationships, styles, theme, shared strings, calculation chain,
// properties) into structures, whose elements are counted.
func xlsxEstimateParts(ctx context.Context, a *archive, size int) (memEstimate, error) {
	// io.ReadAll's copy grows by doubling.
	est := memEstimate{kind: "spreadsheet", cellCost: costCellXLSX, fixed: sheetBaseBytes + 2*int64(size), html: outputsFor(ctx).HTML}
	for name, f := range a.files {
		est.bytes += int64(f.UncompressedSize64)
		cost := xlsxElementCost(name)
		if cost == 0 {
			continue
		}
		n, err := countMemberElements(ctx, f, max(0, currentBudget().perParse-est.total())/cost)
		if err != nil {
			return est, err
		}
		est.elements += n
		est.elementBytes += n * cost
		if est.total() > currentBudget().perParse {
			est.partial = true
			break
		}
	}
	return est, nil
}

// xlsxElementCost is what an element of a member costs once excelize has
// decoded it, or 0 for a member excelize does not decode whole when it
// opens a workbook and reads its sheets' rows. It decodes the XML directly
// in the package root, docProps, xl, xl/_rels and xl/theme; sheets are
// streamed, and the rest (drawings, pivot caches, ...) is never decoded.
// A shared string (<si><t>) and a link of the calculation chain (<c>) are
// smaller than the elements of the other parts, a style's <xf> the
// largest.
func xlsxElementCost(name string) int64 {
	n := strings.ToLower(strings.ReplaceAll(name, "\\", "/"))
	if !strings.HasSuffix(n, ".xml") && !strings.HasSuffix(n, ".rels") {
		return 0
	}
	switch path.Dir(n) {
	case ".", "_rels", "docprops", "xl/_rels", "xl/theme":
	case "xl":
		switch path.Base(n) {
		case "sharedstrings.xml":
			return 200
		case "calcchain.xml":
			return 170
		}
	default:
		return 0
	}
	return 450
}

// xlsxEstimateSheets adds to est the cells of the visible sheets and the
// places of the tables they make, counted by a scan that keeps nothing.
// Every cell is charged, even those past maxSheetCells that truncation
// would leave out: a workbook far past the cell limit is refused rather
// than read to the limit at the limit's full cost.
//
// Counting stops once the estimate passes the budget, so that refusing a
// workbook takes the time of counting what the budget allows, not all it
// holds.
func xlsxEstimateSheets(ctx context.Context, a *archive, parts map[string]xlsxPart, est *memEstimate) error {
	for _, p := range parts {
		if p.path == "" || p.chart || p.hidden {
			continue
		}
		if f := a.files[p.path]; isUTF16(memberHead(f, 2)) {
			// The tag scanner reads UTF-8 only: every element of the
			// sheet is charged as a cell, in a table of the largest size.
			est.places += maxSheetCells
			n, err := countMemberElements(ctx, f, max(0, currentBudget().perParse-est.total())/est.cellCost)
			if err != nil {
				return err
			}
			est.cells += n
		} else {
			cells, places := est.cells, est.places
			_, err := xlsxScanSheet(ctx, a, p.path, 0, func(s *xlsxSheetScan) bool {
				est.cells, est.places = cells+s.values, places+s.rows*s.cols
				return est.total() > currentBudget().perParse
			})
			if err != nil {
				return err
			}
		}
		if est.total() > currentBudget().perParse {
			est.partial = true
			break
		}
	}
	return nil
}

// xlsxPart is where a sheet's XML is in the archive, and whether the
// sheet is a chart or hidden (as excelize's GetSheetVisible tells it).
type xlsxPart struct {
	path          string
	chart, hidden bool
}

// xlsxSheetParts maps sheet names to their parts, from xl/workbook.xml and
// its relationships. A workbook without xl/workbook.xml is ErrMalformed.
func xlsxSheetParts(a *archive) (map[string]xlsxPart, error) {
	wbName := xlsxFind(a, "xl/workbook.xml")
	if wbName == "" {
		return nil, fmt.Errorf("%w: no xl/workbook.xml: not an XLSX workbook", ErrMalformed)
	}
	wb, err := a.read(wbName)
	if err != nil {
		return nil, err
	}
	rels, err := a.read(xlsxFind(a, "xl/_rels/workbook.xml.rels"))
	if err != nil {
		return nil, err
	}
	targets := map[string]string{}
	var rs struct {
		Rel []struct {
			ID     string `xml:"Id,attr"`
			Target string `xml:"Target,attr"`
		} `xml:"Relationship"`
	}
	if len(rels) > 0 {
		if err := xml.Unmarshal(rels, &rs); err != nil {
			return nil, fmt.Errorf("%w: xl/_rels/workbook.xml.rels: %v", ErrMalformed, err)
		}
	}
	for _, r := range rs.Rel {
		t := strings.ReplaceAll(r.Target, "\\", "/")
		if strings.HasPrefix(t, "/") {
			t = path.Clean(t[1:])
		} else {
			t = path.Join("xl", t)
		}
		targets[r.ID] = t
	}
	var ws struct {
		Sheets []struct {
			Attrs []xml.Attr `xml:",any,attr"`
		} `xml:"sheets>sheet"`
	}
	if err := xml.Unmarshal(wb, &ws); err != nil {
		return nil, fmt.Errorf("%w: xl/workbook.xml: %v", ErrMalformed, err)
	}
	parts := map[string]xlsxPart{}
	for _, s := range ws.Sheets {
		var name, id, state string
		for _, at := range s.Attrs {
			switch at.Name.Local {
			case "name":
				name = at.Value
			case "state":
				state = at.Value
			case "id":
				// The relationship id is r:id, in whichever namespace
				// (transitional or strict) the file uses.
				if at.Name.Space != "" {
					id = at.Value
				}
			}
		}
		t := targets[id]
		if _, dup := parts[name]; !dup {
			parts[name] = xlsxPart{path: xlsxFind(a, t), chart: strings.HasPrefix(t, "xl/chartsheets/"),
				hidden: state != "" && state != "visible"}
		}
	}
	return parts, nil
}

// xlsxFind returns the archive's name for a part, matched without regard to
// case as Office does, or "".
func xlsxFind(a *archive, name string) string {
	if name == "" || a.has(name) {
		return name
	}
	for n := range a.files {
		if strings.EqualFold(strings.ReplaceAll(n, "\\", "/"), name) {
			return n
		}
	}
	return ""
}

// xlsxCell is a cell whose value is a number, a date or a Boolean, with its
// style, as xlsxScanSheet finds it in the sheet's XML.
type xlsxCell struct {
	row, col int32
	style    int32
	typ      byte // 'n' number, 'b' Boolean, 'd' ISO 8601 date
}

// xlsxSheetScan is what xlsxScanSheet finds in a sheet's XML.
type xlsxSheetScan struct {
	cells  []xlsxCell
	merges []sheetRange
	// values counts the cells that may hold a value (all but the empty
	// <c/>), rows and cols the rows and columns they are in: what reading
	// the sheet costs. A row is counted again each time the cells go back
	// to it, which only overestimates.
	values, rows, cols int64
}

// xlsxScanSheet streams a worksheet's XML once more for what excelize's
// row iterator does not tell: each number's cell style, so that numbers are
// formatted by sheetFormatter (excelize formats every cell anew, at a cost
// of microseconds a cell and tens for dates), and the merged ranges
// (excelize reads those only by loading the whole sheet into memory). It
// looks only at start tags, read by a small scanner that skips text,
// comments and CDATA, and keeps at most maxCells cells. When enough is
// not nil, it is told the counts as they grow (and when the scan ends), and
// the scan stops when it returns true.
func xlsxScanSheet(ctx context.Context, a *archive, name string, maxCells int, enough func(*xlsxSheetScan) bool) (*xlsxSheetScan, error) {
	out := &xlsxSheetScan{}
	f := a.files[name]
	if f == nil {
		return out, nil
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrMalformed, name, err)
	}
	defer rc.Close()
	sc := xlsxTagScanner{br: bufio.NewReaderSize(io.LimitReader(rc, maxMemberBytes), 64<<10)}
	var row, col int32
	lastRow := int32(-1)
	var cols [(excelize.MaxColumns + 63) / 64]uint64
	for n := 0; ; n++ {
		if n%(16*sheetCtxEvery) == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		tag, attrs, ok := sc.next()
		if !ok {
			// Damage that excelize's reader tolerates is tolerated here
			// too: what was read until then stands.
			if enough != nil {
				enough(out)
			}
			return out, nil
		}
		switch tag {
		case "row":
			r := row + 1
			if v, ok := xlsxAttr(attrs, "r"); ok {
				if n, err := strconv.Atoi(v); err == nil && n > 0 && n <= excelize.TotalRows {
					r = int32(n)
				}
			}
			row, col = r, 0
		case "c":
			c := col + 1
			style, typ := int32(0), byte('n')
			xlsxEachAttr(attrs, func(k, v []byte) {
				switch string(k) {
				case "r":
					if cc, _, ok := xlsxCellRef(v); ok {
						c = cc
					}
				case "s":
					if n, err := strconv.Atoi(string(v)); err == nil && n >= 0 && n <= math.MaxInt32 {
						style = int32(n)
					}
				case "t":
					switch string(v) {
					case "n":
					case "b", "d":
						typ = v[0]
					default:
						typ = 0
					}
				}
			})
			col = c
			if !sc.empty {
				if out.values++; enough != nil && out.values%sheetCtxEvery == 0 && enough(out) {
					return out, nil
				}
				if row != lastRow {
					out.rows++
					lastRow = row
				}
				// Cells past the last column (a row of cells without
				// references runs on) count as the last one.
				k := min(max(c, 1), excelize.MaxColumns) - 1
				if w, bit := k/64, uint64(1)<<(k%64); cols[w]&bit == 0 {
					cols[w] |= bit
					out.cols++
				}
			}
			if typ != 0 && len(out.cells) < maxCells {
				out.cells = append(out.cells, xlsxCell{row: row - 1, col: c - 1, style: style, typ: typ})
			}
		case "mergeCell":
			if len(out.merges) < 4*maxSheetMerges {
				if ref, ok := xlsxAttr(attrs, "ref"); ok {
					if m, ok := xlsxRange(ref); ok {
						out.merges = append(out.merges, m)
					}
				}
			}
		}
	}
}

// xlsxCellRef parses a cell reference such as "AB12" into 1-based column
// and row.
func xlsxCellRef(ref []byte) (col, row int32, ok bool) {
	i := 0
	for ; i < len(ref) && i < 4; i++ {
		c := ref[i] | 0x20
		if c < 'a' || c > 'z' {
			break
		}
		col = col*26 + int32(c-'a'+1)
	}
	if i == 0 || i == len(ref) || col > excelize.MaxColumns {
		return 0, 0, false
	}
	for _, c := range ref[i:] {
		if c < '0' || c > '9' || row > excelize.TotalRows {
			return 0, 0, false
		}
		row = row*10 + int32(c-'0')
	}
	return col, row, row > 0 && row <= excelize.TotalRows
}

// xlsxTagScanner reads the start tags of an XML document.
type xlsxTagScanner struct {
	br *bufio.Reader
	// empty tells that the tag next returned last closes itself (<c/>).
	empty bool
}

// next returns the local name of the next start tag and the text of its
// attributes (valid until the next call); ok is false at the end.
func (s *xlsxTagScanner) next() (name string, attrs []byte, ok bool) {
	for {
		if !s.skipPast('<') {
			return "", nil, false
		}
		head, _ := s.br.Peek(9)
		switch {
		case len(head) == 0:
			return "", nil, false
		case bytes.HasPrefix(head, []byte("!--")):
			if !s.skipTo("-->") {
				return "", nil, false
			}
			continue
		case bytes.HasPrefix(head, []byte("![CDATA[")):
			if !s.skipTo("]]>") {
				return "", nil, false
			}
			continue
		case head[0] == '/' || head[0] == '?' || head[0] == '!':
			if !s.skipPast('>') {
				return "", nil, false
			}
			continue
		}
		tag, err := s.br.ReadSlice('>')
		if err == bufio.ErrBufferFull {
			// A start tag of more than 64 KB: not one we want.
			if !s.skipPast('>') {
				return "", nil, false
			}
			continue
		}
		if err != nil {
			return "", nil, false
		}
		tag = tag[:len(tag)-1]
		s.empty = bytes.HasSuffix(tag, []byte("/"))
		tag = bytes.TrimSuffix(tag, []byte("/"))
		end := bytes.IndexAny(tag, " \t\r\n")
		if end < 0 {
			end = len(tag)
		}
		local := tag[:end]
		if i := bytes.IndexByte(local, ':'); i >= 0 {
			local = local[i+1:]
		}
		// Only the names the caller asks for are made strings.
		switch string(local) {
		case "row":
			return "row", tag[end:], true
		case "c":
			return "c", tag[end:], true
		case "mergeCell":
			return "mergeCell", tag[end:], true
		}
	}
}

// skipPast discards input up to and including c.
func (s *xlsxTagScanner) skipPast(c byte) bool {
	for {
		_, err := s.br.ReadSlice(c)
		if err == nil {
			return true
		}
		if err != bufio.ErrBufferFull {
			return false
		}
	}
}

// skipTo discards input up to and including end, which ends in '>'.
func (s *xlsxTagScanner) skipTo(end string) bool {
	var tail []byte
	for {
		b, err := s.br.ReadSlice('>')
		if err != nil && err != bufio.ErrBufferFull {
			return false
		}
		tail = append(tail, b...)
		if err == nil && bytes.HasSuffix(tail, []byte(end)) {
			return true
		}
		if len(tail) > len(end) {
			tail = append(tail[:0], tail[len(tail)-len(end):]...)
		}
	}
}

// xlsxEachAttr calls fn with each name="value" pair in the inside of a tag.
func xlsxEachAttr(tag []byte, fn func(name, value []byte)) {
	for {
		tag = bytes.TrimLeft(tag, " \t\r\n")
		eq := bytes.IndexByte(tag, '=')
		if eq < 0 {
			return
		}
		name := bytes.TrimSpace(tag[:eq])
		rest := bytes.TrimLeft(tag[eq+1:], " \t\r\n")
		if len(rest) == 0 || (rest[0] != '"' && rest[0] != '\'') {
			return
		}
		k := bytes.IndexByte(rest[1:], rest[0])
		if k < 0 {
			return
		}
		fn(name, rest[1:1+k])
		tag = rest[2+k:]
	}
}

// xlsxAttr returns the value of the attribute called name in the inside of
// a tag.
func xlsxAttr(tag []byte, name string) (value string, found bool) {
	xlsxEachAttr(tag, func(k, v []byte) {
		if !found && string(k) == name {
			value, found = string(v), true
		}
	})
	return value, found
}

// xlsxRange parses a range like "B4:C5" (or one cell) into 0-based places.
func xlsxRange(ref string) (sheetRange, bool) {
	a, b, found := strings.Cut(strings.ReplaceAll(strings.TrimSpace(ref), "$", ""), ":")
	if !found {
		b = a
	}
	c0, r0, err := excelize.CellNameToCoordinates(a)
	if err != nil {
		return sheetRange{}, false
	}
	c1, r1, err := excelize.CellNameToCoordinates(b)
	if err != nil {
		return sheetRange{}, false
	}
	if r1 < r0 {
		r0, r1 = r1, r0
	}
	if c1 < c0 {
		c0, c1 = c1, c0
	}
	return sheetRange{r0: r0 - 1, c0: c0 - 1, r1: r1 - 1, c1: c1 - 1}, true
}
