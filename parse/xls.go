package parse

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/richardlehane/mscfb"
	"github.com/richardlehane/msoleps"
	"github.com/richardlehane/msoleps/types"
	"golang.org/x/text/encoding/charmap"
)

// XLS reads binary Excel 97-2003 workbooks (BIFF8) with a reader of its own
// over the compound file that github.com/richardlehane/mscfb opens.
//
// Two Go libraries for XLS were tried on LibreOffice-written files and both
// were unfit: github.com/shakinm/xlsReader v0.9.12 skips FORMULA records
// (formula cells read empty), decodes negative RK numbers and Latin-1 sheet
// names wrongly, misformats dates and has no merged cells;
// github.com/extrame/xls v0.0.1 panics on such a file, returns the text
// "FormulaCol" for formulas and has no merged cells either. What a reader
// needs of BIFF8 is small (shared strings with their CONTINUE records, the
// cell records, formula results, merged ranges, formats), so it is here,
// bounds-checked throughout.
//
// Numbers are formatted by sheetFormatter, as XLSX's are, so that an XLS and
// an XLSX of one workbook read the same.
//
// A workbook with a FILEPASS record (encrypted) or a password-protected OOXML
// package is ErrEncrypted, an Excel 5/95 workbook (BIFF5) ErrUnsupported, and
// anything else that is not a BIFF8 workbook ErrMalformed. XLS never panics
// and stops with the context's error when ctx ends.
func XLS(ctx context.Context, data []byte) (doc *Document, err error) {
	if len(data) > MaxInputBytes {
		return nil, fmt.Errorf("%w: %d bytes (limit %d)", ErrTooLarge, len(data), MaxInputBytes)
	}
	defer func() {
		if r := recover(); r != nil {
			doc, err = nil, fmt.Errorf("%w: xls: %v", ErrMalformed, r)
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(data, xlsOLEMagic) {
		return nil, fmt.Errorf("%w: not an OLE compound file", ErrMalformed)
	}
	cf, err := mscfb.New(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: xls: %v", ErrMalformed, err)
	}
	var book, biff5, summary *mscfb.File
	for _, f := range cf.File {
		if len(f.Path) > 0 {
			continue
		}
		switch {
		case f.Name == "Workbook":
			book = f
		case f.Name == "Book":
			biff5 = f
		case f.Name == "EncryptedPackage":
			return nil, fmt.Errorf("%w: password-protected workbook", ErrEncrypted)
		case f.Name == "SummaryInformation" && f.Initial == 5:
			summary = f
		}
	}
	if book == nil {
		if biff5 != nil {
			return nil, fmt.Errorf("%w: Excel 5/95 (BIFF5) workbook", ErrUnsupported)
		}
		return nil, fmt.Errorf("%w: no Workbook stream: not an XLS workbook", ErrMalformed)
	}
	stream, err := xlsReadStream(book, int64(len(data)))
	if err != nil {
		return nil, err
	}
	if doc, err = xlsReadWorkbook(ctx, stream); err != nil {
		return nil, err
	}
	if summary != nil {
		doc.Title, doc.Author = xlsSummary(summary)
	}
	return doc, nil
}

// xlsReadWorkbook reads the sheets of a Workbook stream, within the memory
// budget.
func xlsReadWorkbook(ctx context.Context, stream []byte) (*Document, error) {
	est, err := xlsEstimate(ctx, stream)
	if err != nil {
		return nil, err
	}
	release, err := currentBudget().admit(ctx, est)
	if err != nil {
		return nil, err
	}
	defer release()
	wb, err := xlsReadGlobals(ctx, stream)
	if err != nil {
		return nil, err
	}
	defer wb.fmt.f.close()

	sb := newSheetBook()
	for _, bs := range wb.sheets {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if bs.hidden {
			continue
		}
		s, err := wb.readSheet(ctx, sb, stream, bs)
		if err != nil {
			return nil, err
		}
		if s != nil {
			sb.add(s)
		}
	}
	return sb.document(ctx), nil
}

// xlsOLEMagic starts every OLE compound file.
var xlsOLEMagic = []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}

// xlsIsEncryptedPackage reports whether data is a compound file holding an
// EncryptedPackage stream: an OOXML document encrypted with a password.
func xlsIsEncryptedPackage(data []byte) (found bool) {
	defer func() {
		if recover() != nil {
			found = false
		}
	}()
	cf, err := mscfb.New(bytes.NewReader(data))
	if err != nil {
		return false
	}
	for _, f := range cf.File {
		if len(f.Path) == 0 && f.Name == "EncryptedPackage" {
			return true
		}
	}
	return false
}

// xlsReadStream reads a stream of the compound file. Its declared size is
// checked against the file's (a stream cannot be larger), and it is read a
// chunk at a time because mscfb's cost per Read grows with the square of the
// sectors one call spans.
func xlsReadStream(f *mscfb.File, limit int64) ([]byte, error) {
	if f.Size > limit {
		return nil, fmt.Errorf("%w: %s stream declares %d bytes in a %d-byte file", ErrMalformed, f.Name, f.Size, limit)
	}
	out := make([]byte, 0, f.Size)
	chunk := make([]byte, 32<<10)
	for int64(len(out)) < f.Size {
		n, err := f.Read(chunk)
		out = append(out, chunk[:n]...)
		if err == io.EOF || (err == nil && n == 0) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s stream: %v", ErrMalformed, f.Name, err)
		}
	}
	return out, nil
}

// BIFF8 record types.
const (
	xlsBOF           = 0x0809
	xlsEOF           = 0x000A
	xlsContinue      = 0x003C
	xlsFilePass      = 0x002F
	xlsDateMode      = 0x0022
	xlsFormat        = 0x041E
	xlsXF            = 0x00E0
	xlsBoundSheetRec = 0x0085
	xlsSST           = 0x00FC
	xlsLabelSST      = 0x00FD
	xlsLabel         = 0x0204
	xlsRString       = 0x00D6
	xlsNumber        = 0x0203
	xlsRK            = 0x027E
	xlsMulRK         = 0x00BD
	xlsBoolErr       = 0x0205
	xlsFormula       = 0x0006
	xlsString        = 0x0207
	xlsMergedCells   = 0x00E5
	xlsShrFmla       = 0x04BC
	xlsArray         = 0x0221
	xlsTable         = 0x0236
)

// xlsRecords walks the records of a BIFF stream.
type xlsRecords struct {
	b   []byte
	pos int
}

// errXLSTruncated is a record that runs past the end of its stream.
var errXLSTruncated = errors.New("record runs past the end of the stream")

// next returns the next record; io.EOF at the end of the stream.
func (r *xlsRecords) next() (id uint16, body []byte, err error) {
	if r.pos >= len(r.b) {
		return 0, nil, io.EOF
	}
	if r.pos+4 > len(r.b) {
		return 0, nil, errXLSTruncated
	}
	id = binary.LittleEndian.Uint16(r.b[r.pos:])
	n := int(binary.LittleEndian.Uint16(r.b[r.pos+2:]))
	if r.pos+4+n > len(r.b) {
		return 0, nil, errXLSTruncated
	}
	body = r.b[r.pos+4 : r.pos+4+n]
	r.pos += 4 + n
	return id, body, nil
}

// continues returns body followed by the bodies of the CONTINUE records
// after it.
func (r *xlsRecords) continues(body []byte) [][]byte {
	segs := [][]byte{body}
	for r.pos+4 <= len(r.b) && binary.LittleEndian.Uint16(r.b[r.pos:]) == xlsContinue {
		_, b, err := r.next()
		if err != nil {
			break
		}
		segs = append(segs, b)
	}
	return segs
}

// xlsBoundSheet is a sheet as the workbook globals list it.
type xlsBoundSheet struct {
	name   string
	pos    int
	hidden bool
	// kind is the sheet type: 0 worksheet, 1 macro sheet, 2 chart, 6 VBA.
	kind byte
}

// xlsWorkbook is what the workbook globals say.
type xlsWorkbook struct {
	sheets []xlsBoundSheet
	sst    []string
	fmt    *xlsFormats
}

// xlsReadGlobals reads the workbook globals substream at the start of the
// Workbook stream.
func xlsReadGlobals(ctx context.Context, stream []byte) (*xlsWorkbook, error) {
	r := &xlsRecords{b: stream}
	id, body, err := r.next()
	if err != nil || id != xlsBOF || len(body) < 4 {
		return nil, fmt.Errorf("%w: xls: the Workbook stream does not start with a BOF record", ErrMalformed)
	}
	if v := binary.LittleEndian.Uint16(body); v != 0x0600 {
		return nil, fmt.Errorf("%w: BIFF version %#x workbook (only BIFF8, Excel 97-2003, is read)", ErrUnsupported, v)
	}
	if dt := binary.LittleEndian.Uint16(body[2:]); dt != 0x0005 {
		return nil, fmt.Errorf("%w: xls: the Workbook stream does not start with the workbook globals", ErrMalformed)
	}
	wb := &xlsWorkbook{fmt: &xlsFormats{codes: map[int]string{}, f: newSheetFormatter()}}
	for n := 0; ; n++ {
		if n%sheetCtxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		id, body, err := r.next()
		if err != nil {
			return nil, fmt.Errorf("%w: xls: workbook globals: %v", ErrMalformed, err)
		}
		switch id {
		case xlsEOF:
			return wb, nil
		case xlsFilePass:
			return nil, fmt.Errorf("%w: the workbook is encrypted (FILEPASS)", ErrEncrypted)
		case xlsDateMode:
			if len(body) >= 2 {
				wb.fmt.f.date1904 = binary.LittleEndian.Uint16(body) == 1
			}
		case xlsFormat:
			if len(body) >= 2 {
				if s, _, ok := xlsUnicodeString(body[2:], 2); ok {
					wb.fmt.codes[int(binary.LittleEndian.Uint16(body))] = s
				}
			}
		case xlsXF:
			if len(body) >= 4 {
				wb.fmt.xfs = append(wb.fmt.xfs, binary.LittleEndian.Uint16(body[2:]))
			}
		case xlsBoundSheetRec:
			if len(body) < 6 {
				continue
			}
			name, _, ok := xlsUnicodeString(body[6:], 1)
			if !ok {
				continue
			}
			wb.sheets = append(wb.sheets, xlsBoundSheet{
				name:   name,
				pos:    int(binary.LittleEndian.Uint32(body)),
				hidden: body[4]&3 != 0,
				kind:   body[5],
			})
		case xlsSST:
			segs := r.continues(body)
			if len(segs[0]) < 8 {
				continue
			}
			unique := int(binary.LittleEndian.Uint32(segs[0][4:]))
			segs[0] = segs[0][8:]
			wb.sst = xlsReadSST(&xlsSegments{segs: segs}, unique)
		}
	}
}

// xlsEstimate estimates what reading a workbook takes from a walk of its
// records that keeps nothing: the stream, the shared strings of the
// globals, and the cells of the visible worksheets with the tables they
// make. Every cell is charged, even those past maxSheetCells that
// truncation would leave out (see xlsxEstimateSheets). Damage ends the
// walk where it is: the reader reports it.
func xlsEstimate(ctx context.Context, stream []byte) (memEstimate, error) {
	est := memEstimate{kind: "spreadsheet", cellCost: costCellXLS, fixed: sheetBaseBytes + int64(len(stream)), html: outputsFor(ctx).HTML}
	r := &xlsRecords{b: stream}
	var sheets []xlsBoundSheet
globals:
	for n := 0; ; n++ {
		if n%sheetCtxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return est, err
			}
		}
		id, body, err := r.next()
		if err != nil {
			break
		}
		switch id {
		case xlsEOF:
			break globals
		case xlsBoundSheetRec:
			if len(body) >= 6 {
				sheets = append(sheets, xlsBoundSheet{pos: int(binary.LittleEndian.Uint32(body)), hidden: body[4]&3 != 0, kind: body[5]})
			}
		case xlsSST:
			// A string takes at least its count and option byte, and
			// decodes to at most twice its bytes (Latin-1 to UTF-8).
			size := 0
			for _, seg := range r.continues(body) {
				size += len(seg)
			}
			unique := 0
			if len(body) >= 8 {
				unique = int(binary.LittleEndian.Uint32(body[4:]))
			}
			est.strings += int64(min(unique, size/3))
			est.bytes += 2 * int64(size)
		}
	}
	var places int64
	var rows, cols [1 << 16 / 64]uint64
	for _, bs := range sheets {
		if bs.kind != 0 || bs.hidden || bs.pos < 0 || bs.pos >= len(stream) {
			continue
		}
		r := &xlsRecords{b: stream, pos: bs.pos}
		if id, body, err := r.next(); err != nil || id != xlsBOF || len(body) < 4 || binary.LittleEndian.Uint16(body[2:]) != 0x0010 {
			continue
		}
		clear(rows[:])
		clear(cols[:])
		var nrows, ncols int64
		mark := func(set *[1 << 16 / 64]uint64, n *int64, i int) {
			if set[i/64]&(1<<(i%64)) == 0 {
				set[i/64] |= 1 << (i % 64)
				*n++
			}
		}
		cell := func(body []byte, n int) {
			est.cells += int64(n)
			mark(&rows, &nrows, int(binary.LittleEndian.Uint16(body)))
			col := int(binary.LittleEndian.Uint16(body[2:]))
			for i := range min(n, 1<<16-col) {
				mark(&cols, &ncols, col+i)
			}
		}
		for n, depth := 0, 1; depth > 0; n++ {
			if n%sheetCtxEvery == 0 {
				if err := ctx.Err(); err != nil {
					return est, err
				}
			}
			id, body, err := r.next()
			if err != nil {
				break
			}
			switch id {
			case xlsBOF:
				depth++
				continue
			case xlsEOF:
				depth--
				continue
			}
			if depth != 1 || len(body) < 4 {
				continue
			}
			switch id {
			case xlsLabelSST, xlsNumber, xlsRK, xlsBoolErr, xlsFormula:
				cell(body, 1)
			case xlsLabel, xlsRString:
				cell(body, 1)
				est.bytes += 2 * int64(len(body))
			case xlsString:
				for _, seg := range r.continues(body) {
					est.bytes += 2 * int64(len(seg))
				}
			case xlsMulRK:
				cell(body, max(0, (len(body)-6)/6))
			}
		}
		places += nrows * ncols
	}
	est.places = places
	return est, nil
}

// readSheet reads one sheet's substream, or returns nil for a sheet that is
// not a worksheet (a chart, macro or module sheet).
func (wb *xlsWorkbook) readSheet(ctx context.Context, book *sheetBook, stream []byte, bs xlsBoundSheet) (*sheetData, error) {
	if bs.kind != 0 || bs.pos < 0 || bs.pos >= len(stream) {
		return nil, nil
	}
	r := &xlsRecords{b: stream, pos: bs.pos}
	id, body, err := r.next()
	if err != nil || id != xlsBOF || len(body) < 4 || binary.LittleEndian.Uint16(body[2:]) != 0x0010 {
		return nil, nil
	}
	s := &sheetData{name: bs.name}
	add := func(row, col int, text string) {
		if text != "" {
			s.cells = append(s.cells, sheetCell{row: row, col: col, text: text})
		}
	}
	u16 := func(b []byte, i int) int { return int(binary.LittleEndian.Uint16(b[i:])) }
	// A FORMULA whose result is a string is followed by a STRING record
	// holding it.
	pending := -1
	var prow, pcol int
	depth := 1
	for n := 0; depth > 0; n++ {
		if err := book.tick(ctx, 1); err != nil {
			return nil, err
		}
		if len(s.cells) > book.budget {
			s.truncated = true
			break
		}
		id, body, err := r.next()
		if err != nil {
			book.warnf("sheet %q is damaged (%v); what follows the damage is lost", bs.name, err)
			break
		}
		switch id {
		case xlsBOF:
			// A chart embedded in the sheet has a substream of its own.
			depth++
			continue
		case xlsEOF:
			depth--
			continue
		}
		if depth != 1 {
			continue
		}
		if id != xlsString && id != xlsShrFmla && id != xlsArray && id != xlsTable {
			pending = -1
		}
		switch id {
		case xlsLabelSST:
			if len(body) >= 10 {
				if i := int(binary.LittleEndian.Uint32(body[6:])); i >= 0 && i < len(wb.sst) {
					add(u16(body, 0), u16(body, 2), wb.sst[i])
				}
			}
		case xlsLabel, xlsRString:
			if len(body) >= 8 {
				if t, _, ok := xlsUnicodeString(body[6:], 2); ok {
					add(u16(body, 0), u16(body, 2), t)
				}
			}
		case xlsNumber:
			if len(body) >= 14 {
				v := math.Float64frombits(binary.LittleEndian.Uint64(body[6:]))
				add(u16(body, 0), u16(body, 2), wb.fmt.number(u16(body, 4), v))
			}
		case xlsRK:
			if len(body) >= 10 {
				add(u16(body, 0), u16(body, 2), wb.fmt.number(u16(body, 4), xlsRKValue(binary.LittleEndian.Uint32(body[6:]))))
			}
		case xlsMulRK:
			if len(body) < 6 {
				continue
			}
			row, col := u16(body, 0), u16(body, 2)
			for i := 4; i+6 <= len(body)-2; i += 6 {
				add(row, col, wb.fmt.number(u16(body, i), xlsRKValue(binary.LittleEndian.Uint32(body[i+2:]))))
				col++
			}
		case xlsBoolErr:
			if len(body) >= 8 {
				add(u16(body, 0), u16(body, 2), xlsBoolErrText(body[6], body[7] != 0))
			}
		case xlsFormula:
			if len(body) < 14 {
				continue
			}
			row, col, val := u16(body, 0), u16(body, 2), body[6:14]
			if val[6] != 0xFF || val[7] != 0xFF {
				add(row, col, wb.fmt.number(u16(body, 4), math.Float64frombits(binary.LittleEndian.Uint64(val))))
				continue
			}
			switch val[0] {
			case 0: // a string, in the STRING record that follows
				pending, prow, pcol = 0, row, col
			case 1:
				add(row, col, xlsBoolErrText(val[2], xlsBoolValue))
			case 2:
				add(row, col, xlsBoolErrText(val[2], xlsErrorValue))
			}
		case xlsString:
			if pending < 0 {
				continue
			}
			pending = -1
			segs := &xlsSegments{segs: r.continues(body)}
			cch, ok1 := segs.u16()
			if t, ok := segs.chars(int(cch)); ok1 && ok {
				add(prow, pcol, t)
			}
		case xlsMergedCells:
			if len(body) < 2 {
				continue
			}
			for i := 2; i+8 <= len(body) && len(s.merges) < 4*maxSheetMerges; i += 8 {
				s.merges = append(s.merges, sheetRange{r0: u16(body, i), r1: u16(body, i+2), c0: u16(body, i+4), c1: u16(body, i+6)})
			}
		}
	}
	return s, nil
}

// xlsRKValue decodes an RK number: a 30-bit integer or the top 30 bits of a
// double, optionally divided by 100.
func xlsRKValue(rk uint32) float64 {
	var v float64
	if rk&2 != 0 {
		v = float64(int32(rk) >> 2)
	} else {
		v = math.Float64frombits(uint64(rk&^3) << 32)
	}
	if rk&1 != 0 {
		v /= 100
	}
	return v
}

// xlsBoolErrKind says whether a BOOLERR value is a Boolean or an error.
type xlsBoolErrKind bool

const (
	xlsBoolValue  xlsBoolErrKind = false
	xlsErrorValue xlsBoolErrKind = true
)

// xlsBoolErrText is a Boolean or an error value as Excel shows it.
func xlsBoolErrText(v byte, kind xlsBoolErrKind) string {
	if kind != xlsErrorValue {
		if v != 0 {
			return "TRUE"
		}
		return "FALSE"
	}
	switch v {
	case 0x00:
		return "#NULL!"
	case 0x07:
		return "#DIV/0!"
	case 0x0F:
		return "#VALUE!"
	case 0x17:
		return "#REF!"
	case 0x1D:
		return "#NAME?"
	case 0x24:
		return "#NUM!"
	case 0x2A:
		return "#N/A"
	case 0x2B:
		return "#GETTING_DATA"
	}
	return "#ERROR!"
}

// xlsUnicodeString reads a string within one record: a character count of
// lenBytes bytes, an option byte (bit 0: two bytes a character, else one;
// bit 3: rich text runs follow; bit 2: phonetic data follows), then the
// characters. It returns the string and what follows it.
func xlsUnicodeString(b []byte, lenBytes int) (s string, rest []byte, ok bool) {
	if len(b) < lenBytes+1 {
		return "", nil, false
	}
	cch := int(b[0])
	if lenBytes == 2 {
		cch = int(binary.LittleEndian.Uint16(b))
	}
	flags := b[lenBytes]
	p := lenBytes + 1
	runs, ext := 0, 0
	if flags&8 != 0 {
		if len(b) < p+2 {
			return "", nil, false
		}
		runs = int(binary.LittleEndian.Uint16(b[p:]))
		p += 2
	}
	if flags&4 != 0 {
		if len(b) < p+4 {
			return "", nil, false
		}
		ext = int(binary.LittleEndian.Uint32(b[p:]))
		p += 4
	}
	width := 1 + int(flags&1)
	if cch*width > len(b)-p {
		return "", nil, false
	}
	s = xlsDecodeChars(b[p:p+cch*width], width == 2)
	p += cch * width
	if skip := 4*runs + ext; skip >= 0 && skip <= len(b)-p {
		p += skip
	} else {
		p = len(b)
	}
	return s, b[p:], true
}

// xlsDecodeChars decodes characters stored one byte each (Latin-1: the
// high byte of each UTF-16 unit is zero and left out) or two bytes each
// (UTF-16LE).
func xlsDecodeChars(b []byte, wide bool) string {
	if !wide {
		ascii := true
		for _, c := range b {
			if c >= 0x80 {
				ascii = false
				break
			}
		}
		if ascii {
			return string(b)
		}
		rs := make([]rune, len(b))
		for i, c := range b {
			rs[i] = rune(c)
		}
		return string(rs)
	}
	u := make([]uint16, len(b)/2)
	for i := range u {
		u[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return string(utf16.Decode(u))
}

// xlsSegments reads a record and its CONTINUE records as one run of bytes,
// except that characters of a string split across two records go on, in the
// second, after an option byte that says their width anew.
type xlsSegments struct {
	segs [][]byte
	i, p int
}

func (r *xlsSegments) avail() bool {
	for r.i < len(r.segs) && r.p >= len(r.segs[r.i]) {
		r.i++
		r.p = 0
	}
	return r.i < len(r.segs)
}

func (r *xlsSegments) byte() (byte, bool) {
	if !r.avail() {
		return 0, false
	}
	c := r.segs[r.i][r.p]
	r.p++
	return c, true
}

func (r *xlsSegments) u16() (uint16, bool) {
	a, ok1 := r.byte()
	b, ok2 := r.byte()
	return uint16(a) | uint16(b)<<8, ok1 && ok2
}

func (r *xlsSegments) u32() (uint32, bool) {
	a, ok1 := r.u16()
	b, ok2 := r.u16()
	return uint32(a) | uint32(b)<<16, ok1 && ok2
}

// skip passes n bytes.
func (r *xlsSegments) skip(n int) bool {
	for n > 0 {
		if !r.avail() {
			return false
		}
		k := min(n, len(r.segs[r.i])-r.p)
		r.p += k
		n -= k
	}
	return true
}

// chars reads the option byte and cch characters of a string.
func (r *xlsSegments) chars(cch int) (string, bool) {
	flags, ok := r.byte()
	if !ok {
		return "", cch == 0
	}
	return r.charsWith(cch, flags&1 != 0)
}

// charsWith reads cch characters of the given width; at the end of a record
// the characters go on in the next one after a new option byte.
func (r *xlsSegments) charsWith(cch int, wide bool) (string, bool) {
	var sb strings.Builder
	for cch > 0 {
		if r.i >= len(r.segs) {
			return sb.String(), false
		}
		if r.p >= len(r.segs[r.i]) {
			r.i++
			r.p = 0
			if r.i >= len(r.segs) || len(r.segs[r.i]) == 0 {
				return sb.String(), false
			}
			wide = r.segs[r.i][0]&1 != 0
			r.p = 1
			continue
		}
		seg := r.segs[r.i][r.p:]
		width := 1
		if wide {
			width = 2
		}
		k := min(cch, len(seg)/width)
		if k == 0 {
			// Half a character at the end of a record: damaged.
			return sb.String(), false
		}
		sb.WriteString(xlsDecodeChars(seg[:k*width], wide))
		r.p += k * width
		cch -= k
	}
	return sb.String(), true
}

// xlsReadSST reads the shared string table: up to unique rich extended
// strings, each a count, an option byte, optional run and phonetic sizes,
// the characters, then the runs and phonetic data, which are skipped.
func xlsReadSST(r *xlsSegments, unique int) []string {
	var out []string
	for len(out) < unique {
		cch, ok := r.u16()
		if !ok {
			break
		}
		flags, ok := r.byte()
		if !ok {
			break
		}
		runs, ext := 0, 0
		if flags&8 != 0 {
			n, ok := r.u16()
			if !ok {
				break
			}
			runs = int(n)
		}
		if flags&4 != 0 {
			n, ok := r.u32()
			if !ok {
				break
			}
			ext = int(n)
		}
		s, ok := r.charsWith(int(cch), flags&1 != 0)
		out = append(out, s)
		if !ok || !r.skip(4*runs) || (ext > 0 && !r.skip(ext)) {
			break
		}
	}
	return out
}

// xlsFormats maps a cell's XF index to its number format: the workbook's
// XF records give each cell format a number format index, and its FORMAT
// records the codes of the indexes that have one; an index without one is a
// built-in format, which excelize knows by number.
type xlsFormats struct {
	codes map[int]string
	xfs   []uint16
	f     *sheetFormatter
}

// number formats v as cell format ixfe says.
func (x *xlsFormats) number(ixfe int, v float64) string {
	format := 0
	if ixfe < len(x.xfs) {
		format = int(x.xfs[ixfe])
	}
	if code, ok := x.codes[format]; ok {
		return x.f.number(sheetNumFmt{code: code}, v)
	}
	return x.f.number(sheetNumFmt{id: format}, v)
}

// xlsSummary returns the title and author in the SummaryInformation property
// set, decoding byte strings by the set's code page.
func xlsSummary(f *mscfb.File) (title, author string) {
	defer func() {
		if recover() != nil {
			title, author = "", ""
		}
	}()
	if f.Size > 1<<20 {
		return "", ""
	}
	b, err := xlsReadStream(f, 1<<20)
	if err != nil {
		return "", ""
	}
	ps, err := msoleps.NewFrom(bytes.NewReader(b))
	if err != nil {
		return "", ""
	}
	codepage := 0
	for _, p := range ps.Property {
		if p != nil && p.Name == "CodePage" && p.T != nil {
			codepage, _ = strconv.Atoi(p.T.String())
		}
	}
	text := func(t types.Type) string {
		if cs, ok := t.(*types.CodeString); ok && codepage != 1200 {
			return xlsCodePage(cs.Chars, codepage)
		}
		return t.String()
	}
	for _, p := range ps.Property {
		if p == nil || p.T == nil {
			continue
		}
		switch p.Name {
		case "Title":
			title = strings.TrimSpace(text(p.T))
		case "Author":
			author = strings.TrimSpace(text(p.T))
		}
	}
	return title, author
}

// xlsCodePage decodes a NUL-terminated byte string in a Windows code page.
func xlsCodePage(b []byte, codepage int) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	var cm *charmap.Charmap
	switch codepage {
	case 65001:
		return strings.ToValidUTF8(string(b), "\uFFFD")
	case 1250:
		cm = charmap.Windows1250
	case 1251:
		cm = charmap.Windows1251
	case 1253:
		cm = charmap.Windows1253
	case 1254:
		cm = charmap.Windows1254
	case 1255:
		cm = charmap.Windows1255
	case 1256:
		cm = charmap.Windows1256
	case 1257:
		cm = charmap.Windows1257
	case 1258:
		cm = charmap.Windows1258
	case 437:
		cm = charmap.CodePage437
	case 850:
		cm = charmap.CodePage850
	case 10000:
		cm = charmap.Macintosh
	default:
		if utf8.Valid(b) {
			return string(b)
		}
		cm = charmap.Windows1252
	}
	s, err := cm.NewDecoder().Bytes(b)
	if err != nil {
		return ""
	}
	return string(s)
}
