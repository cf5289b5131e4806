package parse

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf16"
)

// This file holds what the word-processing readers (DOCX in docx.go, ODT in
// odt.go) share: a builder that turns a stream of "paragraph starts, text,
// table cell ends, list item starts" events into a Body, merging runs,
// nesting lists from their levels, keeping table spans consistent and
// bounding depth, plus the XML walk both use. The body's top-level blocks
// are rendered as they are finished, so that a large document's body is
// never held whole.
//
// No Go library served by the module proxy reads the structure of DOCX or
// ODT well enough (github.com/fumiama/go-docx and the like are not available
// from it, and the ones that are extract plain text), so both formats are
// streamed token by token with encoding/xml.

const (
	// maxOfficeNesting caps nested tables and list levels: a table deeper
	// than this is flattened into the paragraphs of the cell that holds it,
	// and a deeper list level is read as the deepest one.
	maxOfficeNesting = 32
	// maxOfficeFrames caps the builder's stack of open tables, cells, notes
	// and text boxes; text boxes and notes past it are read inline.
	maxOfficeFrames = 4 * maxOfficeNesting
	// officeCtxEvery is how many XML tokens pass between context checks.
	officeCtxEvery = 256
	// maxOfficeSpan caps a cell's row span and maxOfficeColumns a table's
	// width in grid columns: cells past it are dropped with a warning.
	maxOfficeSpan    = 1000
	maxOfficeColumns = 1000
	// maxOfficeTableCells caps the grid a table spans (rows times width,
	// and the area its spanning cells cover), which rendering walks.
	maxOfficeTableCells = 1 << 20
	// maxOfficeRepeat caps the copies a repeated ODF cell becomes.
	maxOfficeRepeat = 64
	// Each run, inline, block and cell is charged this much against the
	// document's text budget (maxTextRunes), so that millions of empty
	// cells or one-letter runs cannot cost more memory than the text would.
	officeItemCost = 32
)

// officeRun are the properties a run of text carries into an Inline.
type officeRun struct {
	bold, italic bool
	href         string
}

// triState is an on/off property a style may set or leave to its parent.
type triState int8

const (
	triUnset triState = iota
	triOn
	triOff
)

// or returns t, else u when t is unset.
func (t triState) or(u triState) triState {
	if t != triUnset {
		return t
	}
	return u
}

// officeListRef places a paragraph in a list: its level (0 outermost), the list's
// identity for numbering, whether it is numbered and where numbering starts.
type officeListRef struct {
	level   int
	key     string
	ordered bool
	start   int
	// restart begins counting again at start even if the list has items.
	restart bool
}

// odtListLevel is one open ODF text:list in a flow: list items are delivered to
// it as their blocks arrive.
type odtListLevel struct {
	key       string
	ordered   bool
	start     int
	itemOpen  bool
	delivered bool
	restart   bool
}

// officePara collects the inlines of one paragraph; adjacent text with the
// same properties goes into one Inline through a strings.Builder, so a
// paragraph of a million one-letter runs costs no quadratic copying.
type officePara struct {
	kind     Kind
	level    int
	ref      *officeListRef
	collapse bool // ODF: runs of white space are one space
	space    bool // the last character kept was white space (or none yet)
	implicit bool // opened by text outside any paragraph
	ins      []Inline
	pending  strings.Builder
	props    officeRun
	has      bool
}

func (p *officePara) flush() {
	if p.has && p.pending.Len() > 0 {
		p.ins = append(p.ins, Inline{Text: p.pending.String(), Bold: p.props.bold, Italic: p.props.italic, Href: p.props.href})
	}
	p.pending.Reset()
	p.has = false
}

// add appends text with props, merging with the pending run when they match.
func (p *officePara) add(s string, props officeRun) {
	if s == "" {
		return
	}
	if !p.has || p.props != props {
		p.flush()
		p.props, p.has = props, true
	}
	p.pending.WriteString(s)
}

// finish returns the paragraph's inlines without leading or trailing white
// space or line breaks, or nil when nothing visible is left.
func (p *officePara) finish() []Inline {
	p.flush()
	ins := p.ins
	isText := func(in *Inline) bool { return in.Image == "" && in.Note == 0 && !in.Break }
	for len(ins) > 0 {
		in := &ins[0]
		if in.Break {
			ins = ins[1:]
			continue
		}
		if isText(in) {
			if in.Text = strings.TrimLeft(in.Text, " \t\r\n"); in.Text == "" {
				ins = ins[1:]
				continue
			}
		}
		break
	}
	for len(ins) > 0 {
		in := &ins[len(ins)-1]
		if in.Break {
			ins = ins[:len(ins)-1]
			continue
		}
		if isText(in) {
			if in.Text = strings.TrimRight(in.Text, " \t\r\n"); in.Text == "" {
				ins = ins[:len(ins)-1]
				continue
			}
		}
		break
	}
	if len(ins) == 0 {
		return nil
	}
	if cap(ins) > len(ins) {
		// The body keeps every paragraph's inlines until it is rendered:
		// keep no room that appending left over.
		ins = append(make([]Inline, 0, len(ins)), ins...)
	}
	return ins
}

// officeOpenList is a list being built at one depth of a flow.
type officeOpenList struct {
	block Block
	key   string
	last  int
}

// officeTable collects a table's rows, tracking the grid column each cell
// starts at so that DOCX's vertical merges find the cell they continue.
type officeTable struct {
	rows  [][]Cell
	col   int
	width int
	// vopen maps a grid column to the cell a vertical merge there continues.
	vopen map[int][2]int
	// cut counts cells dropped past maxOfficeColumns.
	cut int
}

func (t *officeTable) newRow() {
	t.rows = append(t.rows, nil)
	t.col = 0
}

// mergeMark says whether a cell starts a vertical merge.
type mergeMark bool

const (
	noMergeStart mergeMark = false
	mergeStart   mergeMark = true
)

// add places c at the current column; mark says whether it starts a
// vertical merge.
func (t *officeTable) add(c Cell, mark mergeMark) {
	if len(t.rows) == 0 {
		t.newRow()
	}
	if t.col >= maxOfficeColumns {
		t.cut++
		return
	}
	c.ColSpan = min(max(c.ColSpan, 0), maxOfficeColumns-t.col)
	c.RowSpan = min(max(c.RowSpan, 0), maxOfficeSpan)
	r := len(t.rows) - 1
	if t.vopen == nil {
		t.vopen = map[int][2]int{}
	}
	if mark == mergeStart {
		t.vopen[t.col] = [2]int{r, len(t.rows[r])}
	} else {
		delete(t.vopen, t.col)
	}
	t.rows[r] = append(t.rows[r], c)
	t.col += max(c.ColSpan, 1)
	t.width = max(t.width, t.col)
}

// mergeUp continues a vertical merge at the current column: the cell above
// grows by a row and the continuing cell is left out, as in HTML. It
// reports false when there is no cell to continue.
func (t *officeTable) mergeUp(span int) bool {
	if len(t.rows) == 0 {
		return false
	}
	r := len(t.rows) - 1
	if pos, ok := t.vopen[t.col]; ok && pos[0] < r {
		c := &t.rows[pos[0]][pos[1]]
		if rs := max(c.RowSpan, 1); pos[0]+rs == r && rs < maxOfficeSpan {
			c.RowSpan = rs + 1
			t.col = min(t.col+max(span, 1), maxOfficeColumns)
			return true
		}
	}
	return false
}

// block returns the table with its grid within maxOfficeTableCells;
// rowsCut is how many rows were dropped to keep it there.
//
// Cells are laid out as HTML (and Body.Render) will lay them out, each
// in the first place its row leaves free, and spans are trimmed so that no
// two cells overlap and nothing covers a column past maxOfficeColumns. In
// a well-formed table nothing changes; in a hostile one, overlapping spans
// cannot push cells ever further right or make rendering walk a huge grid.
func (t *officeTable) block() (blk Block, rowsCut int, ok bool) {
	if len(t.rows) == 0 {
		return Block{}, 0, false
	}
	if limit := maxOfficeTableCells / max(t.width, 1); len(t.rows) > limit {
		rowsCut = len(t.rows) - limit
		t.rows = t.rows[:limit]
	}
	const words = (maxOfficeColumns + 63) / 64
	// below holds, for rows under a row-spanning cell, the columns it covers.
	below := map[int]*[words]uint64{}
	covered := func(r, c int) bool {
		b := below[r]
		return c < maxOfficeColumns && b != nil && b[c/64]&(1<<(c%64)) != 0
	}
	area := 0 // places covered below the row of their cell
	for r := range t.rows {
		c := 0
		for i := range t.rows[r] {
			cell := &t.rows[r][i]
			for covered(r, c) {
				c++
			}
			cs := min(max(cell.ColSpan, 1), max(maxOfficeColumns-c, 1))
			for k := 1; k < cs; k++ {
				if covered(r, c+k) {
					cs = k
					break
				}
			}
			rs := min(max(cell.RowSpan, 1), len(t.rows)-r)
			if c >= maxOfficeColumns || area+(rs-1)*cs > maxOfficeTableCells/4 {
				rs = 1
			}
			area += (rs - 1) * cs
			for dr := 1; dr < rs; dr++ {
				b := below[r+dr]
				if b == nil {
					b = new([words]uint64)
					below[r+dr] = b
				}
				for k := c; k < c+cs; k++ {
					b[k/64] |= 1 << (k % 64)
				}
			}
			cell.ColSpan, cell.RowSpan = cs, rs
			if cs == 1 {
				cell.ColSpan = 0
			}
			if rs == 1 {
				cell.RowSpan = 0
			}
			c += cs
		}
		delete(below, r)
	}
	return Block{Kind: Table, Rows: t.rows}, rowsCut, true
}

type officeFrameKind int

const (
	officeRootFrame officeFrameKind = iota
	officeCellFrame
	officeNoteFrame
	officeBoxFrame // a text box or frame whose paragraphs follow the paragraph it sits in
	officeTableFrame
)

// flowFrame is one open container: a flow of blocks (the body, a cell, a note,
// a text box) or a table.
type flowFrame struct {
	kind     officeFrameKind
	blocks   []Block
	lists    []officeOpenList
	para     *officePara
	deferred []Block
	odt      []odtListLevel
	// A cell's spans; vmerge is 1 for a DOCX merge restart, 2 to continue.
	colSpan, rowSpan, repeat, vmerge int
	noteID                           int
	table                            officeTable
}

// officeCounter is the last number given at one level of a list.
type officeCounter struct {
	n   int
	set bool
}

// bodyBuilder turns reader events into a Body.
type bodyBuilder struct {
	frames     []*flowFrame
	tableDepth int
	flat       int // depth inside tables being flattened
	counters   map[string][]officeCounter
	noteKeys   map[string]int
	notes      map[int][]Block
	textBytes  int
	truncated  bool
	warnings   []string
	content    bool // anything at all was read
	// collapse is ODF's white space rule: runs of spaces, tabs and line
	// ends in the XML are one space.
	collapse bool
	// render renders the body's blocks as they are finished.
	render renderer
}

// newBodyBuilder returns a builder of a body rendered as out asks.
func newBodyBuilder(out Outputs) *bodyBuilder {
	return &bodyBuilder{
		render:   renderer{out: out},
		frames:   []*flowFrame{{kind: officeRootFrame}},
		counters: map[string][]officeCounter{},
		noteKeys: map[string]int{},
		notes:    map[int][]Block{},
	}
}

func (b *bodyBuilder) top() *flowFrame { return b.frames[len(b.frames)-1] }

// flow returns the innermost flow frame, nil when a table is on top (text
// between a table's cells).
func (b *bodyBuilder) flow() *flowFrame {
	if f := b.top(); f.kind != officeTableFrame {
		return f
	}
	return nil
}

func (b *bodyBuilder) warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	for _, w := range b.warnings {
		if w == msg {
			return
		}
	}
	if len(b.warnings) < 20 {
		b.warnings = append(b.warnings, msg)
	}
}

// startPara opens a paragraph. A paragraph inside an open one (a text box in
// a run) gets a box frame of its own; the result says whether one was
// pushed, for endPara.
func (b *bodyBuilder) startPara(kind Kind, level int) (nested bool) {
	f := b.flow()
	if f == nil {
		return false
	}
	if f.para != nil && f.para.implicit {
		b.endPara(outerPara)
	}
	if f.para != nil {
		if b.startBox() {
			nested = true
			f = b.top()
		} else {
			b.endPara(outerPara)
		}
	}
	f.para = &officePara{kind: kind, level: level, collapse: b.collapse, space: true}
	return nested
}

// setPara changes the open paragraph's kind and list (DOCX knows them only
// after the paragraph properties).
func (b *bodyBuilder) setPara(kind Kind, level int, ref *officeListRef) {
	if f := b.flow(); f != nil && f.para != nil {
		f.para.kind, f.para.level, f.para.ref = kind, level, ref
	}
}

// para returns the open paragraph, opening one when text arrives outside
// any (a run directly in a cell).
func (b *bodyBuilder) para() *officePara {
	f := b.flow()
	if f == nil {
		return nil
	}
	if f.para == nil {
		f.para = &officePara{kind: Paragraph, collapse: b.collapse, space: true, implicit: true}
	}
	return f.para
}

// paraNesting says whether a paragraph nests in another one's flow.
type paraNesting bool

const (
	outerPara  paraNesting = false
	nestedPara paraNesting = true
)

// endPara closes the open paragraph into its flow.
func (b *bodyBuilder) endPara(nesting paraNesting) {
	f := b.flow()
	if f == nil {
		return
	}
	if p := f.para; p != nil {
		f.para = nil
		if ins := p.finish(); ins != nil {
			// Charged but kept even past the budget: the walk stops there.
			b.charge(officeItemCost)
			blk := Block{Kind: p.kind, Level: p.level, Inlines: ins}
			if p.kind == Heading {
				blk.Level = min(max(p.level, 1), 6)
			}
			b.add(f, blk, p.ref)
		}
		for _, d := range f.deferred {
			if p != nil && p.ref != nil {
				b.attach(f, p.ref.level, d)
			} else {
				b.add(f, d, nil)
			}
		}
		f.deferred = nil
	}
	if nesting == nestedPara {
		b.endBox()
	}
}

// text adds text to the open paragraph. In ODF the white space of the XML
// collapses to single spaces; in OOXML text is literal but tabs and line
// ends are spaces.
func (b *bodyBuilder) text(s string, props officeRun) {
	if b.truncated || s == "" {
		return
	}
	p := b.para()
	if p == nil {
		return
	}
	if !b.charge(len(s) + officeItemCost) {
		return
	}
	b.content = true
	if !p.collapse {
		p.add(strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' {
				return ' '
			}
			return r
		}, s), props)
		return
	}
	// Collapse without building a string per character: copy the stretches
	// between white space and write one space for each run of it.
	start := -1
	flushAt := func(i int) {
		if start >= 0 {
			p.add(s[start:i], props)
			start = -1
		}
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
			flushAt(i)
			if !p.space {
				p.add(" ", props)
				p.space = true
			}
		default:
			if start < 0 {
				start = i
			}
			p.space = false
		}
	}
	flushAt(len(s))
}

// charge counts n bytes against the document's budget; past it the
// document is truncated with a warning and charge reports false.
func (b *bodyBuilder) charge(n int) bool {
	if b.truncated {
		return false
	}
	if b.textBytes += n; b.textBytes > maxTextRunes {
		b.truncated = true
		b.warn("the document was truncated at %d MB of text", maxTextRunes>>20)
		return false
	}
	return true
}

// literal adds text that does not collapse (ODF text:s and text:tab).
func (b *bodyBuilder) literal(s string, props officeRun) {
	if p := b.para(); p != nil && b.charge(len(s)) {
		p.add(s, props)
		p.space = true
	}
}

// inline adds an image, a line break or a note reference.
func (b *bodyBuilder) inline(in Inline) {
	if !b.charge(officeItemCost + len(in.Text) + len(in.Image)) {
		return
	}
	p := b.para()
	if p == nil {
		return
	}
	b.content = true
	p.flush()
	p.ins = append(p.ins, in)
	if in.Break {
		p.space = true
	} else {
		p.space = false
	}
}

// add puts a finished block into flow f: into the list it belongs to, into
// the ODF list item it sits in, or after the flow's blocks.
func (b *bodyBuilder) add(f *flowFrame, blk Block, ref *officeListRef) {
	if n := len(f.odt); n > 0 {
		lv := &f.odt[n-1]
		if lv.itemOpen && !lv.delivered {
			b.item(f, officeListRef{level: n - 1, key: lv.key, ordered: lv.ordered, start: lv.start, restart: lv.restart}, []Block{blk})
			lv.delivered, lv.restart = true, false
		} else {
			b.attach(f, n-1, blk)
		}
		return
	}
	if ref != nil {
		b.item(f, *ref, []Block{blk})
		return
	}
	b.closeLists(f)
	b.put(f, blk)
}

// put appends a finished block to flow f. The body's own flow is only ever
// appended to, so its blocks are rendered as they come rather than kept:
// the body is never held whole beside its renderings.
func (b *bodyBuilder) put(f *flowFrame, blk Block) {
	if f == b.frames[0] {
		b.render.block(blk)
		return
	}
	f.blocks = append(f.blocks, blk)
}

// item starts a list item at ref's level, numbering it.
func (b *bodyBuilder) item(f *flowFrame, ref officeListRef, blocks []Block) {
	level := min(max(ref.level, 0), maxOfficeNesting-1)
	number := 0
	if ref.ordered {
		c := b.counters[ref.key]
		if len(c) <= level {
			c = append(c, make([]officeCounter, level+1-len(c))...)
		}
		start := min(max(ref.start, 0), 1_000_000_000)
		if ref.restart || !c[level].set {
			number = start
		} else {
			number = c[level].n + 1
		}
		c[level] = officeCounter{n: number, set: true}
		for d := level + 1; d < len(c); d++ {
			c[d] = officeCounter{}
		}
		b.counters[ref.key] = c
	}
	for len(f.lists) > level+1 {
		b.closeList(f)
	}
	if len(f.lists) == level+1 {
		ol := &f.lists[level]
		if ol.key != ref.key || ol.block.Ordered != ref.ordered ||
			(ref.ordered && len(ol.block.Items) > 0 && number != ol.last+1) {
			b.closeList(f)
		}
	}
	for len(f.lists) < level+1 {
		if d := len(f.lists); d > 0 && len(f.lists[d-1].block.Items) == 0 {
			f.lists[d-1].block.Items = append(f.lists[d-1].block.Items, Item{})
		}
		f.lists = append(f.lists, officeOpenList{block: Block{Kind: List, Ordered: ref.ordered}, key: ref.key})
		if len(f.lists) < level+1 {
			// A level skipped over holds one empty item.
			f.lists[len(f.lists)-1].block.Items = []Item{{}}
		}
	}
	ol := &f.lists[level]
	it := Item{Blocks: blocks}
	if ref.ordered && (len(ol.block.Items) == 0 || number != ol.last+1) {
		it.Number = number
	}
	ol.last = number
	ol.block.Items = append(ol.block.Items, it)
}

// attach adds a block to the last item at level (a second paragraph or a
// table in an ODF list item).
func (b *bodyBuilder) attach(f *flowFrame, level int, blk Block) {
	level = min(max(level, 0), maxOfficeNesting-1)
	for len(f.lists) > level+1 {
		b.closeList(f)
	}
	if len(f.lists) < level+1 {
		b.item(f, officeListRef{level: level, key: "attach"}, []Block{blk})
		return
	}
	ol := &f.lists[level]
	if len(ol.block.Items) == 0 {
		ol.block.Items = append(ol.block.Items, Item{})
	}
	it := &ol.block.Items[len(ol.block.Items)-1]
	it.Blocks = append(it.Blocks, blk)
}

// closeList closes the innermost open list of f into its parent item or
// into f's blocks.
func (b *bodyBuilder) closeList(f *flowFrame) {
	n := len(f.lists)
	if n == 0 {
		return
	}
	done := f.lists[n-1].block
	f.lists = f.lists[:n-1]
	if len(done.Items) == 0 {
		return
	}
	if n == 1 {
		b.put(f, done)
		return
	}
	parent := &f.lists[n-2].block
	if len(parent.Items) == 0 {
		parent.Items = append(parent.Items, Item{})
	}
	it := &parent.Items[len(parent.Items)-1]
	it.Blocks = append(it.Blocks, done)
}

func (b *bodyBuilder) closeLists(f *flowFrame) {
	for len(f.lists) > 0 {
		b.closeList(f)
	}
}

// finishFlow closes what is open in f and returns its blocks.
func (b *bodyBuilder) finishFlow(f *flowFrame) []Block {
	if f.para != nil {
		// endPara works on the top frame, which f is.
		b.endPara(outerPara)
	}
	b.closeLists(f)
	return f.blocks
}

// push adds a frame unless the stack is full.
func (b *bodyBuilder) push(fr *flowFrame) bool {
	if len(b.frames) >= maxOfficeFrames {
		return false
	}
	b.frames = append(b.frames, fr)
	return true
}

// startBox opens a text box; its blocks follow the paragraph it sits in.
func (b *bodyBuilder) startBox() bool {
	if b.flow() == nil {
		return false
	}
	return b.push(&flowFrame{kind: officeBoxFrame})
}

func (b *bodyBuilder) endBox() {
	f := b.top()
	if f.kind != officeBoxFrame {
		return
	}
	blocks := b.finishFlow(f)
	b.frames = b.frames[:len(b.frames)-1]
	parent := b.flow()
	if parent == nil {
		return
	}
	if parent.para != nil {
		parent.deferred = append(parent.deferred, blocks...)
		return
	}
	for _, blk := range blocks {
		b.add(parent, blk, nil)
	}
}

// noteRef returns the number of the note called key, numbering notes 1, 2,
// ... in the order of their first reference.
func (b *bodyBuilder) noteRef(key string) int {
	if n, ok := b.noteKeys[key]; ok {
		return n
	}
	n := len(b.noteKeys) + 1
	b.noteKeys[key] = n
	return n
}

// startNote opens the body of note id.
func (b *bodyBuilder) startNote(id int) bool {
	return b.push(&flowFrame{kind: officeNoteFrame, noteID: id})
}

func (b *bodyBuilder) endNote() {
	f := b.top()
	if f.kind != officeNoteFrame {
		return
	}
	blocks := b.finishFlow(f)
	b.frames = b.frames[:len(b.frames)-1]
	b.notes[f.noteID] = append(b.notes[f.noteID], blocks...)
}

// tableMode is what startTable did, for endTable.
type officeTableMode int

const (
	officeTableIgnored officeTableMode = iota
	officeTableOpened
	officeTableFlattened
)

// startTable opens a table; one nested too deeply is flattened: its rows
// and cells are ignored and their paragraphs go to the enclosing flow.
func (b *bodyBuilder) startTable() officeTableMode {
	f := b.flow()
	if f == nil {
		return officeTableIgnored
	}
	if b.flat > 0 || b.tableDepth >= maxOfficeNesting {
		b.flat++
		return officeTableFlattened
	}
	if f.para != nil {
		b.endPara(outerPara)
	}
	if !b.push(&flowFrame{kind: officeTableFrame}) {
		b.flat++
		return officeTableFlattened
	}
	b.tableDepth++
	return officeTableOpened
}

func (b *bodyBuilder) endTable(mode officeTableMode) {
	switch mode {
	case officeTableFlattened:
		b.flat--
		return
	case officeTableIgnored:
		return
	}
	if b.top().kind == officeCellFrame {
		b.endCell()
	}
	f := b.top()
	if f.kind != officeTableFrame {
		return
	}
	b.frames = b.frames[:len(b.frames)-1]
	b.tableDepth--
	blk, rowsCut, ok := f.table.block()
	if f.table.cut > 0 {
		b.warn("a table is wider than %d columns; cells past it were left out", maxOfficeColumns)
	}
	if rowsCut > 0 {
		b.warn("a table is too large; %d of its rows were left out", rowsCut)
	}
	if ok {
		if parent := b.flow(); parent != nil {
			b.add(parent, blk, nil)
		}
	}
}

// startRow begins a row of the innermost table.
func (b *bodyBuilder) startRow() {
	if f := b.top(); b.flat == 0 && f.kind == officeTableFrame {
		f.table.newRow()
	}
}

// skipColumns moves past n grid columns of the current row that cells
// spanning from elsewhere cover (ODF's covered cells).
func (b *bodyBuilder) skipColumns(n int) {
	if f := b.top(); b.flat == 0 && f.kind == officeTableFrame {
		f.table.col = min(f.table.col+max(n, 0), maxOfficeColumns)
	}
}

// gapCell adds an empty cell spanning n grid columns that no cell fills
// (DOCX's gridBefore).
func (b *bodyBuilder) gapCell(n int) {
	if f := b.top(); b.flat == 0 && f.kind == officeTableFrame && n > 0 {
		f.table.add(Cell{ColSpan: n}, noMergeStart)
	}
}

// startCell opens a cell of the innermost table; it reports whether one was
// opened (a cell outside a table is not).
func (b *bodyBuilder) startCell(colSpan, rowSpan, repeat int) bool {
	if b.flat > 0 || b.top().kind != officeTableFrame {
		return false
	}
	return b.push(&flowFrame{kind: officeCellFrame, colSpan: colSpan, rowSpan: rowSpan, repeat: repeat})
}

// setCell sets the open cell's column span and DOCX vertical merge.
func (b *bodyBuilder) setCell(colSpan, vmerge int) {
	if f := b.top(); f.kind == officeCellFrame {
		f.colSpan, f.vmerge = colSpan, vmerge
	}
}

func (b *bodyBuilder) endCell() {
	f := b.top()
	if f.kind != officeCellFrame {
		return
	}
	blocks := b.finishFlow(f)
	b.frames = b.frames[:len(b.frames)-1]
	t := &b.top().table
	if f.vmerge == 2 && t.mergeUp(f.colSpan) {
		return
	}
	b.charge(officeItemCost)
	c := Cell{Blocks: blocks, ColSpan: f.colSpan, RowSpan: f.rowSpan}
	t.add(c, f.vmerge == 1)
	for i := 1; i < min(f.repeat, maxOfficeRepeat); i++ {
		t.add(Cell{Blocks: blocks, ColSpan: f.colSpan, RowSpan: f.rowSpan}, noMergeStart)
	}
}

// listStart opens an ODF text:list level in the innermost flow; a list
// nested too deeply is read as its parent level.
func (b *bodyBuilder) listStart(lv odtListLevel) bool {
	f := b.flow()
	if f == nil || len(f.odt) >= maxOfficeNesting {
		return false
	}
	if f.para != nil {
		b.endPara(outerPara)
	}
	if n := len(f.odt); n > 0 {
		p := &f.odt[n-1]
		if p.itemOpen && !p.delivered {
			// An item holding only a nested list.
			b.item(f, officeListRef{level: n - 1, key: p.key, ordered: p.ordered, start: p.start, restart: p.restart}, nil)
			p.delivered, p.restart = true, false
		}
	}
	f.odt = append(f.odt, lv)
	return true
}

func (b *bodyBuilder) listEnd() {
	if f := b.flow(); f != nil && len(f.odt) > 0 {
		f.odt = f.odt[:len(f.odt)-1]
	}
}

// itemStart opens an item of the innermost ODF list; restart (with start)
// is an item's own start value.
func (b *bodyBuilder) itemStart(start int, restart bool) {
	if f := b.flow(); f != nil && len(f.odt) > 0 {
		lv := &f.odt[len(f.odt)-1]
		lv.itemOpen, lv.delivered = true, false
		if restart {
			lv.start, lv.restart = start, true
		}
	}
}

func (b *bodyBuilder) itemEnd() {
	if f := b.flow(); f != nil && len(f.odt) > 0 {
		if f.para != nil {
			b.endPara(outerPara)
		}
		f.odt[len(f.odt)-1].itemOpen = false
	}
}

// document closes everything still open and returns the renderings of
// the body, its blocks (rendered as they were finished) and then its notes.
func (b *bodyBuilder) document() *Document {
	for len(b.frames) > 1 {
		switch b.top().kind {
		case officeTableFrame:
			b.endTable(officeTableOpened)
		case officeCellFrame:
			b.endCell()
		case officeNoteFrame:
			b.endNote()
		default:
			b.endBox()
		}
	}
	b.finishFlow(b.frames[0])
	var notes []Note
	for i := 1; i <= len(b.noteKeys); i++ {
		notes = append(notes, Note{ID: i, Blocks: b.notes[i]})
	}
	h, m := b.render.finish(notes)
	return &Document{HTML: h, Markdown: m, Warnings: b.warnings}
}

// officeXMLError is a part whose XML is damaged; what was read before the
// damage stands, so a reader may keep it with a warning. It is ErrMalformed.
type officeXMLError struct {
	part   string
	offset int64
	err    error
}

func (e *officeXMLError) Error() string {
	return fmt.Sprintf("%v: %s is not well-formed XML (at byte %d: %v)", ErrMalformed, e.part, e.offset, e.err)
}

func (e *officeXMLError) Is(target error) bool { return target == ErrMalformed }

// xmlDamage returns the officeXMLError in err, or nil.
func xmlDamage(err error) *officeXMLError {
	var e *officeXMLError
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// walkXML streams the tokens of an XML part to visit, checking ctx every
// few hundred tokens. Custom entities are not expanded (encoding/xml does
// not), so a billion-laughs part fails at its first entity reference. A
// syntax error is an *officeXMLError.
//
// visit returns false to stop the walk early (when the document's budget is
// spent).
func walkXML(ctx context.Context, name string, data []byte, visit func(xml.Token) bool) error {
	return walkXMLTokens(ctx, name, bytes.NewReader(utf8XML(data)), visit)
}

// walkXMLMember is walkXML over a member streamed from its archive, so
// that the part is never held whole (unless it is UTF-16, which is
// converted first). A member that fails to inflate fails the walk with the
// error archive.read would have given, not as damaged XML.
func walkXMLMember(ctx context.Context, m *member, visit func(xml.Token) bool) error {
	br := bufio.NewReader(m)
	head, _ := br.Peek(3)
	if bytes.HasPrefix(head, []byte{0xFF, 0xFE}) || bytes.HasPrefix(head, []byte{0xFE, 0xFF}) {
		data, err := io.ReadAll(br)
		if err != nil {
			return err
		}
		return walkXML(ctx, m.name, data, visit)
	}
	if err := m.Err(); err != nil {
		return err
	}
	if bytes.HasPrefix(head, []byte("\xEF\xBB\xBF")) {
		br.Discard(3)
	}
	err := walkXMLTokens(ctx, m.name, br, visit)
	if m.Err() != nil {
		return m.Err()
	}
	return err
}

// walkXMLTokens is walkXML over UTF-8 XML read from r.
func walkXMLTokens(ctx context.Context, name string, r io.Reader, visit func(xml.Token) bool) error {
	d := xml.NewDecoder(r)
	d.CharsetReader = func(charset string, r io.Reader) (io.Reader, error) {
		switch strings.ToLower(charset) {
		case "utf-16", "utf-16le", "utf-16be", "utf16", "us-ascii", "ascii":
			// UTF-16 parts were converted by utf8XML already.
			return r, nil
		}
		return nil, fmt.Errorf("unsupported encoding %q", charset)
	}
	for n := 0; ; n++ {
		if n%officeCtxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		tok, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return &officeXMLError{part: name, offset: d.InputOffset(), err: err}
		}
		if !visit(tok) {
			return nil
		}
	}
}

// utf8XML converts a UTF-16 part (told by its byte order mark) to UTF-8.
func utf8XML(data []byte) []byte {
	var be bool
	switch {
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}):
	case bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		be = true
	default:
		return bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF"))
	}
	data = data[2:]
	u := make([]uint16, len(data)/2)
	for i := range u {
		if be {
			u[i] = uint16(data[2*i])<<8 | uint16(data[2*i+1])
		} else {
			u[i] = uint16(data[2*i+1])<<8 | uint16(data[2*i])
		}
	}
	return []byte(string(utf16.Decode(u)))
}

// attr returns the value of the attribute with the given namespace and
// local name ("" matches any namespace).
func xmlAttr(se xml.StartElement, space, local string) (string, bool) {
	for _, a := range se.Attr {
		if a.Name.Local == local && (space == "" || a.Name.Space == space) {
			return a.Value, true
		}
	}
	return "", false
}

// isOLEFile reports whether data is an OLE compound file.
func isOLEFile(data []byte) bool {
	return bytes.HasPrefix(data, []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1})
}

// oleStreamName is a stream name as a compound file's directory spells it.
func oleStreamName(s string) []byte {
	b := make([]byte, 0, 2*len(s))
	for i := 0; i < len(s); i++ {
		b = append(b, s[i], 0)
	}
	return b
}

// officeEstimate estimates what reading a DOCX or ODT takes, from the
// archive alone: its XML parts, whether a reader holds them whole or
// streams them (a UTF-16 part is converted whole, at about four times its
// size), and what the body builder keeps and renders beside them, which
// is bounded by the text budget. A flat ODT is outside the budget: it is
// not compressed, so it is no larger read than sent.
func officeEstimate(a *archive) memEstimate {
	est := memEstimate{kind: "document"}
	for name, f := range a.files {
		n := strings.ToLower(name)
		if !strings.HasSuffix(n, ".xml") && !strings.HasSuffix(n, ".rels") {
			continue
		}
		size := int64(f.UncompressedSize64)
		if size > 1<<20 && isUTF16(memberHead(f, 2)) {
			size *= 4
		}
		est.bytes += size
	}
	est.bytes += min(3*est.bytes, officeRenderBytes)
	return est
}

// officePanic turns a panic in a reader into ErrMalformed.
func officePanic(format string, r any) error {
	return fmt.Errorf("%w: %s reader failed: %v", ErrMalformed, format, r)
}

// officeHeadingNumber returns N for a style called "Heading N" (any case,
// space optional), else 0.
func officeHeadingNumber(name string) int {
	l := strings.ToLower(strings.TrimSpace(name))
	if !strings.HasPrefix(l, "heading") {
		return 0
	}
	return officeAtoi(strings.TrimSpace(l[len("heading"):]), 0)
}

// atoi parses a small non-negative decimal, returning def when s is not one.
func officeAtoi(s string, def int) int {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 9 {
		return def
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return def
		}
		n = n*10 + int(s[i]-'0')
	}
	return n
}
