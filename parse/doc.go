package parse

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf16"

	"github.com/richardlehane/mscfb"
)

// DOC reads a binary Word 97-2003 document.
//
// mscfb reads the OLE compound file; nothing the module proxy serves reads
// the Word binary format inside it, so that is done here, after [MS-DOC]:
// the FIB (2.5.1) locates the piece table (the Clx, 2.9.38) in the table
// stream, and the pieces give the text in character positions (2.4.1), each
// piece either 8-bit "compressed" Windows-1252 or UTF-16LE. A fast-saved
// (complex) file reads through its piece table like any other.
//
// Paragraph marks end paragraphs; cell marks end table cells, and the one
// whose paragraph properties say it ends a row (sprmPFTtp) ends the row,
// whose sprmTDefTable gives cell boundaries and merge flags and so the
// spans. The paragraph properties come from the PAPX FKPs (PlcBtePapx) and
// give each paragraph its style, list (sprmPIlfo and sprmPIlvl against the
// list tables, bullet or numbered from the level's nfc) and table depth; a
// paragraph whose style is a built-in heading style or named "heading N",
// or that has an outline level, is a heading. Bold and italic come from
// the CHPX FKPs (direct formatting only). HYPERLINK fields become links
// around their results, other fields keep their results; footnotes and
// endnotes, which follow the main text in the character positions, become
// notes. Pictures and objects are dropped, and so are headers, footers,
// comments and text boxes. The title and author come from the
// SummaryInformation property set, read here too: msoleps allocates counts
// it reads from the file before checking them.
//
// An encrypted or obfuscated file is ErrEncrypted; a compound file without
// a Word document stream, or a Word 6/95 one, is ErrMalformed or
// ErrUnsupported. Every offset and size read from the file is checked
// against the stream it points into before anything is allocated.
func DOC(ctx context.Context, data []byte) (doc *Document, err error) {
	defer func() {
		if p := recover(); p != nil {
			doc, err = nil, fmt.Errorf("%w: doc: internal error: %v", ErrMalformed, p)
		}
	}()
	if len(data) > MaxInputBytes {
		return nil, fmt.Errorf("%w: %d MB is more than the %d MB limit", ErrTooLarge, len(data)>>20, MaxInputBytes>>20)
	}
	streams, err := readOLEStreams(ctx, data, "WordDocument", "0Table", "1Table", "Data", "\x05SummaryInformation")
	if err != nil {
		return nil, err
	}
	wd := streams["WordDocument"]
	if wd == nil {
		return nil, fmt.Errorf("%w: no WordDocument stream (not a Word file)", ErrMalformed)
	}
	d := &docReader{ctx: ctx, wd: wd, data: streams["Data"]}
	if err := d.readFIB(); err != nil {
		return nil, err
	}
	d.table = streams["0Table"]
	if d.flags&0x0200 != 0 {
		d.table = streams["1Table"]
	}
	if d.table == nil {
		return nil, fmt.Errorf("%w: the table stream is missing", ErrMalformed)
	}
	if err := d.readPieces(); err != nil {
		return nil, err
	}
	d.readStyles()
	d.readLists()
	d.papx = d.readBins(plcBtePapx)
	d.chpx = d.readBins(plcBteChpx)
	body, err := d.body()
	if err != nil {
		return nil, err
	}
	out := &Document{Warnings: d.warnings}
	if si := streams["\x05SummaryInformation"]; si != nil {
		out.Title, out.Author, out.Pages = docSummaryInfo(si)
	}
	out.HTML, out.Markdown = renderFor(ctx, body)
	return out, nil
}

// readOLEStreams checks and opens an OLE compound file and returns the named
// streams of its root storage (those it has).
func readOLEStreams(ctx context.Context, data []byte, names ...string) (map[string][]byte, error) {
	if !bytes.HasPrefix(data, []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}) {
		return nil, fmt.Errorf("%w: not an OLE compound file", ErrMalformed)
	}
	if len(data) < 512 {
		return nil, fmt.Errorf("%w: the compound file is truncated", ErrMalformed)
	}
	// mscfb allocates tables as large as the header's sector counts before
	// it reads them, so counts the file cannot hold are refused here.
	shift := binary.LittleEndian.Uint16(data[30:])
	if shift != 9 && shift != 12 {
		return nil, fmt.Errorf("%w: bad compound file sector size", ErrMalformed)
	}
	sectors := uint64(len(data)>>shift) + 1
	for _, off := range []int{40, 44, 64, 72} {
		if uint64(binary.LittleEndian.Uint32(data[off:])) > sectors {
			return nil, fmt.Errorf("%w: the compound file header claims more sectors than the file has", ErrMalformed)
		}
	}
	cf, err := mscfb.New(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: compound file: %v", ErrMalformed, err)
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string][]byte{}
	for _, f := range cf.File {
		name := f.Name
		if f.Initial < 0x20 && f.Initial != 0 {
			name = string(rune(f.Initial)) + name
		}
		if len(f.Path) != 0 || !want[name] || out[name] != nil {
			continue
		}
		if f.Size < 0 || f.Size > int64(len(data)) {
			return nil, fmt.Errorf("%w: stream %q is larger than the file", ErrMalformed, strings.TrimLeft(name, "\x05"))
		}
		buf := make([]byte, f.Size)
		for off := 0; off < len(buf); {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			n, err := f.Read(buf[off:min(off+1<<20, len(buf))])
			off += n
			if err != nil && (err != io.EOF || off < len(buf)) {
				return nil, fmt.Errorf("%w: stream %q: %v", ErrMalformed, strings.TrimLeft(name, "\x05"), err)
			}
			if n == 0 && off < len(buf) {
				return nil, fmt.Errorf("%w: stream %q is truncated", ErrMalformed, strings.TrimLeft(name, "\x05"))
			}
		}
		out[name] = buf
	}
	return out, nil
}

type docReader struct {
	ctx   context.Context
	wd    []byte // WordDocument stream
	table []byte // 0Table or 1Table
	data  []byte // Data stream, may be nil

	flags uint16
	lw    []uint32    // FibRgLw97
	fcLcb [][2]uint32 // FibRgFcLcb pairs

	pieces []docPiece
	styles []docStyle
	lfo    []int32         // list format overrides: ilfo-1 → lsid
	lists  map[int32][]int // lsid → nfc per level
	papx   []docRun
	chpx   []docRun

	ticks    int
	runes    int
	full     bool
	warnings []string
	warned   map[string]bool
}

// docPiece is one piece of the piece table: characters [cp, cpEnd) stored
// from byte offset fc of the WordDocument stream.
type docPiece struct {
	cp, cpEnd  uint32
	fc         uint32
	compressed bool
}

// docRun is a run of paragraph or character properties over the byte
// offsets [start, end) of the WordDocument stream.
type docRun struct {
	start, end uint32
	pap        *docPap
	bold       bool
	italic     bool
	hidden     bool
}

// docPap is what the reader uses of a paragraph's properties.
type docPap struct {
	istd                int
	ilfo, ilvl          int
	outline             int // -1 for none
	inTable, ttp        bool
	innerCell, innerTtp bool
	itap                int
	defs                []legacyCellDef
	hasDefs             bool
}

type docStyle struct {
	heading int
}

func (d *docReader) warn(msg string) {
	if d.warned == nil {
		d.warned = map[string]bool{}
	}
	if !d.warned[msg] {
		d.warned[msg] = true
		d.warnings = append(d.warnings, msg)
	}
}

func (d *docReader) tick() error {
	d.ticks++
	if d.ticks%legacyCtxEvery == 1 {
		return d.ctx.Err()
	}
	return nil
}

func docU16(b []byte, off int) int {
	if off < 0 || off+2 > len(b) {
		return 0
	}
	return int(binary.LittleEndian.Uint16(b[off:]))
}

func docU32(b []byte, off int) uint32 {
	if off < 0 || off+4 > len(b) {
		return 0
	}
	return binary.LittleEndian.Uint32(b[off:])
}

// docSpan returns b[off:off+n], or nil when that is out of range.
func docSpan(b []byte, off, n uint32) []byte {
	if uint64(off)+uint64(n) > uint64(len(b)) {
		return nil
	}
	return b[off : off+n]
}

// readFIB reads the File Information Block at the start of the
// WordDocument stream.
func (d *docReader) readFIB() error {
	wd := d.wd
	if len(wd) < 34 {
		return fmt.Errorf("%w: the Word document stream is truncated", ErrMalformed)
	}
	switch docU16(wd, 0) {
	case 0xA5EC:
	case 0xA5DC:
		return fmt.Errorf("%w: Word 6/95 documents are not read", ErrUnsupported)
	default:
		return fmt.Errorf("%w: not a Word document (bad FIB)", ErrMalformed)
	}
	d.flags = uint16(docU16(wd, 0x0A))
	if d.flags&0x0100 != 0 || d.flags&0x8000 != 0 {
		return fmt.Errorf("%w: the Word document is encrypted", ErrEncrypted)
	}
	pos := 32
	csw := docU16(wd, pos)
	pos += 2 + 2*csw
	cslw := docU16(wd, pos)
	pos += 2
	if pos+4*cslw+2 > len(wd) {
		return fmt.Errorf("%w: the FIB is truncated", ErrMalformed)
	}
	for i := 0; i < cslw; i++ {
		d.lw = append(d.lw, docU32(wd, pos+4*i))
	}
	pos += 4 * cslw
	cb := docU16(wd, pos)
	pos += 2
	if pos+8*cb > len(wd) {
		return fmt.Errorf("%w: the FIB is truncated", ErrMalformed)
	}
	for i := 0; i < cb; i++ {
		d.fcLcb = append(d.fcLcb, [2]uint32{docU32(wd, pos+8*i), docU32(wd, pos+8*i+4)})
	}
	if len(d.lw) < 4 || len(d.fcLcb) <= 33 {
		return fmt.Errorf("%w: the FIB is too short", ErrMalformed)
	}
	return nil
}

// ccp returns a count of characters from FibRgLw97: 3 is the main text, 4
// the footnotes, 5 the headers, 7 the comments, 8 the endnotes.
func (d *docReader) ccp(i int) uint32 {
	if i < len(d.lw) {
		return d.lw[i]
	}
	return 0
}

// tableData returns the table stream bytes of the FibRgFcLcb pair i, nil
// when it is empty or out of range.
func (d *docReader) tableData(i int) []byte {
	if i >= len(d.fcLcb) || d.fcLcb[i][1] == 0 {
		return nil
	}
	return docSpan(d.table, d.fcLcb[i][0], d.fcLcb[i][1])
}

// readPieces reads the piece table from the Clx.
func (d *docReader) readPieces() error {
	clx := d.tableData(33)
	if clx == nil {
		return fmt.Errorf("%w: the piece table is missing or out of range", ErrMalformed)
	}
	for i := 0; i < len(clx); {
		switch clx[i] {
		case 1: // Prc: property modifiers, skipped
			cb := int(int16(docU16(clx, i+1)))
			if cb < 0 || i+3+cb > len(clx) {
				return fmt.Errorf("%w: bad Clx", ErrMalformed)
			}
			i += 3 + cb
		case 2: // Pcdt: the piece table
			lcb := docU32(clx, i+1)
			plc := docSpan(clx, uint32(i+5), lcb)
			if plc == nil || lcb < 16 {
				return fmt.Errorf("%w: bad piece table", ErrMalformed)
			}
			n := (len(plc) - 4) / 12
			for k := 0; k < n; k++ {
				cp, cpEnd := docU32(plc, 4*k), docU32(plc, 4*k+4)
				if cpEnd < cp {
					return fmt.Errorf("%w: piece table out of order", ErrMalformed)
				}
				fc := docU32(plc, 4*(n+1)+8*k+2)
				p := docPiece{cp: cp, cpEnd: cpEnd, fc: fc & 0x3FFFFFFF, compressed: fc&0x40000000 != 0}
				if p.compressed {
					p.fc /= 2
				}
				// Clip the piece to the stream.
				width := uint64(2)
				if p.compressed {
					width = 1
				}
				if avail := (uint64(len(d.wd)) - min(uint64(p.fc), uint64(len(d.wd)))) / width; uint64(cpEnd-cp) > avail {
					d.warn("the piece table points past the end of the text; the text was cut")
					p.cpEnd = cp + uint32(avail)
				}
				d.pieces = append(d.pieces, p)
			}
			if len(d.pieces) == 0 {
				return fmt.Errorf("%w: empty piece table", ErrMalformed)
			}
			return nil
		default:
			return fmt.Errorf("%w: bad Clx", ErrMalformed)
		}
	}
	return fmt.Errorf("%w: no piece table in the Clx", ErrMalformed)
}

// eachChar calls fn for each character in [from, to), with the byte offset
// it is stored at; fn returns false to stop.
func (d *docReader) eachChar(from, to uint32, fn func(cp uint32, c uint16, fc uint32) bool) error {
	i := sort.Search(len(d.pieces), func(i int) bool { return d.pieces[i].cpEnd > from })
	for ; i < len(d.pieces); i++ {
		p := d.pieces[i]
		if p.cp >= to {
			break
		}
		for cp := max(p.cp, from); cp < min(p.cpEnd, to); cp++ {
			if err := d.tick(); err != nil {
				return err
			}
			// Note ranges may overlap, so characters that are not text
			// (and do not count towards the text limit) are capped too.
			if d.ticks > 4*legacyTextLimit {
				d.full = true
				d.warn("the document was cut: it holds too many characters")
				return nil
			}
			var c uint16
			var fc uint32
			if p.compressed {
				fc = p.fc + (cp - p.cp)
				c = docCP1252[d.wd[fc]]
			} else {
				fc = p.fc + 2*(cp-p.cp)
				c = binary.LittleEndian.Uint16(d.wd[fc:])
			}
			if !fn(cp, c, fc) {
				return nil
			}
		}
	}
	return nil
}

// docCP1252 maps the bytes of compressed pieces to UTF-16.
var docCP1252 = func() (t [256]uint16) {
	for i := range t {
		r := []rune(decodeCodePage([]byte{byte(i)}, 1252))
		t[i] = uint16(i)
		if len(r) == 1 && r[0] < 0x10000 && r[0] != 0xFFFD {
			t[i] = uint16(r[0])
		}
	}
	return t
}()

// The FIB's indexes of the bin tables of paragraph and character formatting.
const (
	plcBteChpx = 12
	plcBtePapx = 13
)

// readBins reads the FKPs that the bin table PlcBtePapx or PlcBteChpx (i)
// points to into runs sorted by offset.
func (d *docReader) readBins(i int) []docRun {
	para := i == plcBtePapx
	plc := d.tableData(i)
	if len(plc) < 12 {
		return nil
	}
	n := (len(plc) - 4) / 8
	seen := map[uint32]bool{}
	var runs []docRun
	for k := 0; k < n && len(runs) < 1<<20; k++ {
		pn := docU32(plc, 4*(n+1)+4*k) & 0x3FFFFF
		if seen[pn] {
			continue
		}
		seen[pn] = true
		page := docSpan(d.wd, pn*512, 512)
		if page == nil {
			d.warn("a formatting page is out of range; some formatting was lost")
			continue
		}
		crun := int(page[511])
		if para {
			runs = append(runs, d.papxPage(page, crun)...)
		} else {
			runs = append(runs, docChpxPage(page, crun)...)
		}
	}
	sort.SliceStable(runs, func(a, b int) bool { return runs[a].start < runs[b].start })
	return runs
}

// papxPage reads one PapxFkp.
func (d *docReader) papxPage(page []byte, crun int) []docRun {
	if crun == 0 || 4*(crun+1)+13*crun > 511 {
		return nil
	}
	var runs []docRun
	for i := 0; i < crun; i++ {
		r := docRun{start: docU32(page, 4*i), end: docU32(page, 4*i+4), pap: &docPap{outline: -1}}
		if off := 2 * int(page[4*(crun+1)+13*i]); off > 0 && off < 511 {
			var g []byte
			if cb := int(page[off]); cb != 0 {
				g = docSpan(page, uint32(off+1), uint32(2*cb-1))
			} else if off+1 < 511 {
				g = docSpan(page, uint32(off+2), uint32(2*int(page[off+1])))
			}
			if len(g) >= 2 {
				r.pap.istd = docU16(g, 0)
				d.papSprms(r.pap, g[2:], papxInBin)
			}
		}
		runs = append(runs, r)
	}
	return runs
}

// docChpxPage reads one ChpxFkp.
func docChpxPage(page []byte, crun int) []docRun {
	if crun == 0 || 4*(crun+1)+crun > 511 {
		return nil
	}
	var runs []docRun
	for i := 0; i < crun; i++ {
		r := docRun{start: docU32(page, 4*i), end: docU32(page, 4*i+4)}
		if off := 2 * int(page[4*(crun+1)+i]); off > 0 && off < 511 {
			g := docSpan(page, uint32(off+1), uint32(page[off]))
			docSprms(g, func(op uint16, arg []byte) {
				on := len(arg) > 0 && (arg[0] == 1 || arg[0] == 0x81)
				switch op {
				case 0x0835:
					r.bold = on
				case 0x0836:
					r.italic = on
				case 0x083C, 0x0800: // hidden, deleted
					r.hidden = on
				}
			})
		}
		runs = append(runs, r)
	}
	return runs
}

// docSprms calls fn for each property modifier in a grpprl with its
// operand.
func docSprms(g []byte, fn func(op uint16, arg []byte)) {
	for i := 0; i+2 <= len(g); {
		op := uint16(docU16(g, i))
		i += 2
		var n int
		switch op >> 13 {
		case 0, 1:
			n = 1
		case 2, 4, 5:
			n = 2
		case 3:
			n = 4
		case 7:
			n = 3
		case 6:
			switch {
			case op == 0xD608: // sprmTDefTable: a 2-byte size
				n = docU16(g, i) + 1
			case op == 0xC615 && i < len(g) && g[i] == 255:
				return // sprmPChgTabs in its long form; nothing after it is needed
			case i < len(g):
				n = int(g[i]) + 1
			default:
				return
			}
		}
		if i+n > len(g) {
			return
		}
		fn(op, g[i:i+n])
		i += n
	}
}

// papxOrigin says where paragraph modifiers were read: from a bin, where a
// sprmPHugePapx may point to more in the Data stream, or from there.
type papxOrigin bool

const (
	papxInBin  papxOrigin = true
	papxInData papxOrigin = false
)

// papSprms applies paragraph and table modifiers to p.
func (d *docReader) papSprms(p *docPap, g []byte, origin papxOrigin) {
	docSprms(g, func(op uint16, arg []byte) {
		switch op {
		case 0x2416:
			p.inTable = arg[0] != 0
		case 0x2417:
			p.ttp = arg[0] != 0
		case 0x244B:
			p.innerCell = arg[0] != 0
		case 0x244C:
			p.innerTtp = arg[0] != 0
		case 0x6649:
			p.itap = int(min(docU32(arg, 0), legacyMaxTableDepth))
		case 0x260A:
			p.ilvl = min(int(arg[0]), legacyMaxListLevel)
		case 0x460B:
			p.ilfo = int(int16(docU16(arg, 0)))
		case 0x2640:
			p.outline = int(arg[0])
		case 0x4600:
			p.istd = docU16(arg, 0)
		case 0x6646:
			// sprmPHugePapx: the properties are in the Data stream.
			if origin == papxInBin {
				fc := docU32(arg, 0)
				cb := uint32(docU16(docSpan(d.data, fc, 2), 0))
				if g := docSpan(d.data, fc+2, cb); g != nil {
					d.papSprms(p, g, papxInData)
				}
			}
		case 0xD608:
			if len(arg) > 2 {
				p.defs, p.hasDefs = docTableDefs(arg[2:]), true
			}
		case 0x5624: // sprmTMerge: cells [first, lim) join horizontally
			if len(arg) >= 2 {
				for c := int(arg[0]); c < int(arg[1]) && c < len(p.defs); c++ {
					p.defs[c].hFirst, p.defs[c].hCont = c == int(arg[0]), c > int(arg[0])
				}
			}
		case 0xD62B: // sprmTVertMerge
			if len(arg) >= 3 && int(arg[1]) < len(p.defs) {
				c := &p.defs[arg[1]]
				c.vFirst, c.vCont = arg[2] == 3, arg[2] == 1
			}
		}
	})
}

// docTableDefs reads a TDefTableOperand after its size: the cell boundaries
// and the merge flags of each cell's TC80.
func docTableDefs(b []byte) []legacyCellDef {
	if len(b) < 1 {
		return nil
	}
	n := int(b[0])
	if 1+2*(n+1) > len(b) {
		return nil
	}
	defs := make([]legacyCellDef, n)
	for i := range defs {
		defs[i].right = int(int16(docU16(b, 1+2*(i+1))))
		defs[i].hasRight = true
		tc := 1 + 2*(n+1) + 20*i
		if tc+2 <= len(b) {
			f := docU16(b, tc)
			defs[i].hFirst = f&0x0001 != 0
			defs[i].hCont = f&0x0002 != 0 && f&0x0001 == 0
			defs[i].vFirst = f&0x0040 != 0
			defs[i].vCont = f&0x0020 != 0 && f&0x0040 == 0
		}
	}
	return defs
}

// docRunAt finds the run holding byte offset fc, starting from the last hit.
func docRunAt(runs []docRun, fc uint32, hint *int) *docRun {
	if h := *hint; h >= 0 && h < len(runs) && runs[h].start <= fc && fc < runs[h].end {
		return &runs[h]
	}
	i := sort.Search(len(runs), func(i int) bool { return runs[i].start > fc }) - 1
	if i >= 0 && fc < runs[i].end {
		*hint = i
		return &runs[i]
	}
	return nil
}

// readStyles reads the style sheet for the heading level of each style.
func (d *docReader) readStyles() {
	stsh := d.tableData(1)
	if len(stsh) < 4 {
		return
	}
	cbStshi := docU16(stsh, 0)
	cstd := docU16(stsh, 2)
	base := docU16(stsh, 4) // cbSTDBaseInFile
	if base < 10 {
		base = 10
	}
	pos := 2 + cbStshi
	for istd := 0; istd < cstd && pos+2 <= len(stsh) && istd < 4096; istd++ {
		cb := docU16(stsh, pos)
		pos += 2
		std := docSpan(stsh, uint32(pos), uint32(cb))
		pos += cb
		var st docStyle
		if len(std) >= base+2 {
			sti := docU16(std, 0) & 0x0FFF
			stk := docU16(std, 2) & 0x000F
			cch := docU16(std, base)
			var name string
			if nb := docSpan(std, uint32(base+2), uint32(2*cch)); nb != nil {
				name = docUTF16(nb)
			}
			switch {
			case sti >= 1 && sti <= 9:
				st.heading = min(sti, 6)
			case styleHeadingLevel(name) > 0:
				st.heading = styleHeadingLevel(name)
			case stk == 1:
				// A paragraph style's own outline level, from its UpxPapx.
				off := base + 2 + 2*cch + 2
				if n := docU16(std, off); n >= 2 {
					if g := docSpan(std, uint32(off+4), uint32(n-2)); g != nil {
						docSprms(g, func(op uint16, arg []byte) {
							if op == 0x2640 && arg[0] < 9 {
								st.heading = min(int(arg[0])+1, 6)
							}
						})
					}
				}
			}
		}
		d.styles = append(d.styles, st)
	}
}

// docUTF16 decodes UTF-16LE.
func docUTF16(b []byte) string {
	u := make([]uint16, len(b)/2)
	for i := range u {
		u[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return string(utf16.Decode(u))
}

// readLists reads the list definitions (PlfLst and the LVLs after it) and
// the list format overrides (PlfLfo), for whether each level is numbered.
func (d *docReader) readLists() {
	d.lists = map[int32][]int{}
	if len(d.fcLcb) <= 74 {
		return
	}
	lst := d.tableData(73)
	if len(lst) < 2 {
		return
	}
	n := int(int16(docU16(lst, 0)))
	if n <= 0 || 2+28*n > len(lst) {
		return
	}
	// The LVLs follow the PlfLst, outside its own size.
	pos := int(d.fcLcb[73][0]) + len(lst)
	for k := 0; k < n; k++ {
		lstf := lst[2+28*k:]
		lsid := int32(docU32(lstf, 0))
		levels := 9
		if lstf[26]&1 != 0 {
			levels = 1
		}
		var nfc []int
		for l := 0; l < levels; l++ {
			lvlf := docSpan(d.table, uint32(pos), 28)
			if lvlf == nil {
				break
			}
			nfc = append(nfc, int(lvlf[4]))
			pos += 28 + int(lvlf[25]) + int(lvlf[24])
			pos += 2 + 2*docU16(d.table, pos)
		}
		d.lists[lsid] = nfc
	}
	lfo := d.tableData(74)
	count := int(min(docU32(lfo, 0), uint32(len(lfo)/16)))
	for k := 0; k < count; k++ {
		d.lfo = append(d.lfo, int32(docU32(lfo, 4+16*k)))
	}
}

// para turns paragraph properties into where the paragraph goes.
func (d *docReader) para(p *docPap, depth int) legacyPara {
	out := legacyPara{depth: depth}
	if p == nil {
		return out
	}
	if p.outline >= 0 && p.outline < 9 {
		out.heading = min(p.outline+1, 6)
		return out
	}
	if p.istd < len(d.styles) && d.styles[p.istd].heading > 0 {
		out.heading = d.styles[p.istd].heading
		return out
	}
	if p.ilfo > 0 {
		nfc := 23
		if p.ilfo <= len(d.lfo) {
			if levels := d.lists[d.lfo[p.ilfo-1]]; len(levels) > 0 {
				nfc = levels[min(p.ilvl, len(levels)-1)]
			}
		}
		if nfc != 255 {
			out.list, out.ordered, out.level = p.ilfo, nfc != 23, p.ilvl
		}
	}
	return out
}

// tableDepth is how deeply a paragraph is nested in tables.
func (p *docPap) tableDepth() int {
	switch {
	case p == nil:
		return 0
	case p.itap > 0:
		return p.itap
	case p.inTable:
		return 1
	}
	return 0
}

// docField is an open field: its instruction, then its result.
type docField struct {
	inst   strings.Builder
	result bool
	href   string
}

// docNoteRef is a footnote or endnote reference in the main text.
type docNoteRef struct {
	end  bool // endnote
	k    int  // index in its PLC
	id   int
	from uint32
	to   uint32
}

// body reads the main text, then the notes it refers to.
func (d *docReader) body() (*Body, error) {
	ccpText := d.ccp(3)
	refs := map[uint32]*docNoteRef{}
	var order []*docNoteRef
	// Footnotes follow the main text, endnotes the footnotes, headers and
	// comments.
	d.noteRefs(refs, docFootnotes, 2, 3, ccpText)
	if len(d.fcLcb) > 47 {
		d.noteRefs(refs, docEndnotes, 46, 47, ccpText+d.ccp(4)+d.ccp(5)+d.ccp(7))
	}
	main, err := d.readRange(0, ccpText, func(cp uint32) int {
		r := refs[cp]
		if r == nil {
			return 0
		}
		if r.id == 0 {
			order = append(order, r)
			r.id = len(order)
		}
		return r.id
	})
	if err != nil {
		return nil, err
	}
	body := &Body{Blocks: main}
	for _, r := range order {
		blocks, err := d.readRange(r.from, r.to, nil)
		if err != nil {
			return nil, err
		}
		body.Notes = append(body.Notes, Note{ID: r.id, Blocks: blocks})
	}
	return body, nil
}

// docNoteKind is footnotes or endnotes.
type docNoteKind bool

const (
	docFootnotes docNoteKind = false
	docEndnotes  docNoteKind = true
)

// noteRefs reads the references (PLC ref) and text ranges (PLC txt) of the
// footnotes or endnotes (kind), whose text starts at CP base.
func (d *docReader) noteRefs(refs map[uint32]*docNoteRef, kind docNoteKind, ref, txt int, base uint32) {
	rp, tp := d.tableData(ref), d.tableData(txt)
	if len(rp) < 4 || len(tp) < 8 {
		return
	}
	n := (len(rp) - 4) / 6
	m := len(tp)/4 - 1
	for k := 0; k < n && k < m; k++ {
		from, to := docU32(tp, 4*k), docU32(tp, 4*k+4)
		if to < from || uint64(base)+uint64(to) > 1<<32-1 {
			continue
		}
		cp := docU32(rp, 4*k)
		if refs[cp] == nil {
			refs[cp] = &docNoteRef{end: kind == docEndnotes, k: k, from: base + from, to: base + to}
		}
	}
}

// readRange reads the characters [from, to) into blocks; noteAt, when not
// nil, returns the note ID of a reference at a CP (0 for none).
func (d *docReader) readRange(from, to uint32, noteAt func(uint32) int) ([]Block, error) {
	f := &legacyFlow{}
	var fields []*docField
	var hi uint16
	papHint, chpHint := -1, -1
	prevCell := false
	pap := func(fc uint32) *docPap {
		if r := docRunAt(d.papx, fc, &papHint); r != nil {
			return r.pap
		}
		return nil
	}
	visible := func() (bool, string) {
		href := ""
		for _, fl := range fields {
			if !fl.result {
				return false, ""
			}
			if fl.href != "" {
				href = fl.href
			}
		}
		return true, href
	}
	err := d.eachChar(from, to, func(cp uint32, c uint16, fc uint32) bool {
		if d.full {
			return false
		}
		var bold, italic, hidden bool
		if r := docRunAt(d.chpx, fc, &chpHint); r != nil {
			bold, italic, hidden = r.bold, r.italic, r.hidden
		}
		wasCell := prevCell
		prevCell = false
		if noteAt != nil {
			if id := noteAt(cp); id > 0 {
				if ok, _ := visible(); ok {
					f.add(Inline{Note: id})
				}
				return true
			}
		}
		switch c {
		case 0x0D, 0x0C, 0x0E: // paragraph, page or section, column
			p := pap(fc)
			depth := p.tableDepth()
			switch {
			case p != nil && depth > 1 && p.innerTtp:
				f.endRow(d.para(p, depth), depth, p.defs)
			case p != nil && depth > 1 && p.innerCell:
				f.endCell(d.para(p, depth), depth)
			default:
				f.endPara(d.para(p, depth))
			}
			return true
		case 0x07: // cell or row end
			p := pap(fc)
			depth := max(p.tableDepth(), 1)
			switch {
			case p != nil && (p.ttp || p.innerTtp):
				f.endRow(d.para(p, depth), depth, p.defs)
			case p == nil && wasCell && !legacyVisible(f.pending()):
				f.endRow(legacyPara{depth: 1}, 1, nil)
			default:
				f.endCell(d.para(p, depth), depth)
				prevCell = true
			}
			return true
		case 0x13: // field begin
			if len(fields) < 64 {
				fields = append(fields, &docField{})
			}
			return true
		case 0x14: // field separator
			if n := len(fields); n > 0 {
				fields[n-1].result = true
				fields[n-1].href = wordHyperlink(fields[n-1].inst.String())
			}
			return true
		case 0x15: // field end
			if n := len(fields); n > 0 {
				fields = fields[:n-1]
			}
			return true
		}
		if n := len(fields); n > 0 && !fields[n-1].result {
			if c >= 0x20 {
				rtfAppend(&fields[n-1].inst, string(rune(c)), 4096)
			}
			return true
		}
		ok, href := visible()
		if !ok || hidden {
			return true
		}
		var s string
		switch {
		case c == 0x0B:
			f.add(Inline{Break: true})
			return true
		case c == 0x09:
			s = "\t"
		case c == 0x1E:
			s = "\u2011"
		case c == 0xA0:
			s = "\u00a0"
		case c < 0x20:
			return true // pictures, objects, note marks, optional hyphens
		case utf16.IsSurrogate(rune(c)) && c < 0xDC00:
			hi = c
			return true
		case utf16.IsSurrogate(rune(c)):
			if hi != 0 {
				s = string(utf16.DecodeRune(rune(hi), rune(c)))
			}
			hi = 0
		default:
			s = string(rune(c))
		}
		if s == "" {
			return true
		}
		d.runes++
		if d.runes > legacyTextLimit {
			d.full = true
			d.warn(fmt.Sprintf("the text was cut at %d characters", legacyTextLimit))
			return false
		}
		f.add(Inline{Text: s, Bold: bold, Italic: italic, Href: href})
		return true
	})
	if err != nil {
		return nil, err
	}
	return f.finish(legacyPara{}), nil
}

// docSummaryInfo reads the title, author and page count from a
// SummaryInformation property set stream ([MS-OLEPS]).
func docSummaryInfo(b []byte) (title, author string, pages int) {
	if docU16(b, 0) != 0xFFFE || docU32(b, 24) == 0 {
		return
	}
	set := docU32(b, 44)
	ps := docSpan(b, set, min(docU32(b, int(set)), uint32(len(b))))
	if len(ps) < 8 {
		return
	}
	n := int(min(docU32(ps, 4), uint32(len(ps)/8)))
	codePage := 1252
	type prop struct{ id, off uint32 }
	var props []prop
	for i := 0; i < n; i++ {
		p := prop{docU32(ps, 8+8*i), docU32(ps, 12+8*i)}
		props = append(props, p)
		if p.id == 1 && docU32(ps, int(p.off))&0xFFFF == 2 {
			codePage = docU16(ps, int(p.off)+4)
		}
	}
	str := func(off uint32) string {
		typ := docU32(ps, int(off)) & 0xFFFF
		size := docU32(ps, int(off)+4)
		switch typ {
		case 0x1E: // VT_LPSTR, in the set's code page
			v := docSpan(ps, off+8, size)
			if codePage == 1200 {
				return strings.TrimRight(docUTF16(v), "\x00")
			}
			return strings.TrimRight(decodeCodePage(bytes.TrimRight(v, "\x00"), codePage), "\x00")
		case 0x1F: // VT_LPWSTR
			if size > uint32(len(ps)) {
				return ""
			}
			return strings.TrimRight(docUTF16(docSpan(ps, off+8, 2*size)), "\x00")
		}
		return ""
	}
	for _, p := range props {
		switch p.id {
		case 2:
			title = cleanMeta(str(p.off))
		case 4:
			author = cleanMeta(str(p.off))
		case 14:
			if docU32(ps, int(p.off))&0xFFFF == 3 {
				pages = int(min(docU32(ps, int(p.off)+4), 1<<20))
			}
		}
	}
	return title, author, pages
}
