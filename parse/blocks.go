package parse

import (
	"bytes"
	"context"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

type blockKind int

const (
	paragraph blockKind = iota
	heading
	listItem
	tableBlock
)

// block is one unit of output.
type block struct {
	kind    blockKind
	page    int
	text    string
	links   []span // link runs of text
	level   int    // heading level, or list nesting depth
	ordered bool
	marker  string
	rows    [][]string
	cells   [][][]span // link runs per cell, shaped like rows, or nil

	size       float64
	bold       bool
	lines      int
	x0         float64 // left edge of the first line (the marker for items)
	flowFirst  bool    // first block of its column flow
	lastFull   bool    // last line reaches the right edge of its flow
	headingKey float64 // size that decided the heading level; 0 for bold-only
}

// row is a set of segments on one baseline, or a ruled table.
type row struct {
	y     float64
	segs  []*segment
	table *table
}

func (r *row) extent() (float64, float64) {
	if r.table != nil {
		return r.table.box.x0, r.table.box.x1
	}
	x0, x1 := math.Inf(1), math.Inf(-1)
	for _, s := range r.segs {
		x0, x1 = math.Min(x0, s.x0), math.Max(x1, s.x1)
	}
	return x0, x1
}

// crosses reports whether any content of r spans x.
func (r *row) crosses(x float64) bool {
	if r.table != nil {
		return r.table.box.x0 < x && r.table.box.x1 > x
	}
	for _, s := range r.segs {
		if s.x0 < x && s.x1 > x {
			return true
		}
	}
	return false
}

// docStats are measured over the whole document.
type docStats struct {
	body  float64             // the most common font size, by characters
	pitch map[float64]float64 // usual baseline distance inside a paragraph, per size
}

func (st *docStats) pitchFor(size float64) float64 {
	if p, ok := st.pitch[math.Round(size*2)/2]; ok {
		return p
	}
	return 1.2 * size
}

// layoutDocument orders every page's content and groups it into blocks. It
// panics with errStop when ctx ends.
func layoutDocument(ctx context.Context, pages []*page) []*block {
	markRunningText(pages)
	st := &docStats{pitch: map[float64]float64{}}
	sizes := map[float64]int{}
	pageRows := make([][]*row, len(pages))
	for i, p := range pages {
		pageRows[i] = pageToRows(p)
		for _, s := range p.segs {
			if !s.drop {
				sizes[s.size] += s.runes
			}
		}
	}
	best := -1
	for k, n := range sizes {
		if n > best || n == best && k < st.body {
			st.body, best = k, n
		}
	}
	if st.body == 0 {
		st.body = 10
	}

	var flows [][][]*row
	deltas := map[float64][]float64{}
	for i := range pages {
		checkContext(ctx)
		fl := splitColumns(pageRows[i], 0)
		flows = append(flows, fl)
		for _, f := range fl {
			for j := 1; j < len(f); j++ {
				a, b := f[j-1], f[j]
				if a.table != nil || b.table != nil {
					continue
				}
				sa, sb := rowSize(a), rowSize(b)
				d := a.y - b.y
				if sa == sb && d > 0.8*sa && d < 2.5*sa {
					deltas[sa] = append(deltas[sa], d)
				}
			}
		}
	}
	for k, ds := range deltas {
		if len(ds) >= 2 {
			sort.Float64s(ds)
			st.pitch[k] = ds[len(ds)/4]
		}
	}

	var blocks []*block
	for i, p := range pages {
		checkContext(ctx)
		for _, f := range flows[i] {
			bs := flowBlocks(f, st, p.n)
			if len(bs) > 0 {
				bs[0].flowFirst = true
			}
			blocks = append(blocks, bs...)
		}
	}
	classify(blocks, st)
	return joinContinuations(blocks)
}

func checkContext(ctx context.Context) {
	if err := ctx.Err(); err != nil {
		panic(errStop{err})
	}
}

// pageToRows groups a page's kept segments by baseline and adds its tables.
func pageToRows(p *page) []*row {
	var segs []*segment
	for _, s := range p.segs {
		if !s.drop && s.text != "" {
			segs = append(segs, s)
		}
	}
	sort.SliceStable(segs, func(i, j int) bool { return segs[i].y > segs[j].y })
	var rows []*row
	for _, s := range segs {
		if n := len(rows); n > 0 && math.Abs(rows[n-1].y-s.y) <= 0.3*math.Min(s.size, rowSize(rows[n-1])) {
			rows[n-1].segs = append(rows[n-1].segs, s)
			continue
		}
		rows = append(rows, &row{y: s.y, segs: []*segment{s}})
	}
	for _, t := range p.tables {
		rows = append(rows, &row{y: t.box.y1, table: t})
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].y > rows[j].y })
	for _, r := range rows {
		sort.SliceStable(r.segs, func(i, j int) bool { return r.segs[i].x0 < r.segs[j].x0 })
	}
	return rows
}

// rowSize is the font size of the row's longest text.
func rowSize(r *row) float64 {
	size, n := 0.0, -1
	for _, s := range r.segs {
		if s.runes > n {
			size, n = s.size, s.runes
		}
	}
	return size
}

// gutter is a vertical strip of white space that splits a run of rows into
// two columns.
type gutter struct {
	start, end int     // rows[start:end] form the two-column band
	x0, x1     float64 // the white strip
	score      int
	size       float64 // median font size of the rows
}

// splitColumns returns rows as column flows in reading order: rows above a
// multi-column band, then its left column, then its right column (each
// searched again for further gutters), then the rows below.
func splitColumns(rows []*row, depth int) [][]*row {
	if len(rows) == 0 {
		return nil
	}
	g := findGutter(rows)
	if depth > 4 || g == nil {
		return [][]*row{rows}
	}
	var left, right []*row
	for _, r := range rows[g.start:g.end] {
		var l, rr []*segment
		for _, s := range r.segs {
			if s.x1 <= g.x0+0.5 {
				l = append(l, s)
			} else {
				rr = append(rr, s)
			}
		}
		if r.table != nil {
			if r.table.box.x1 <= g.x0+0.5 {
				left = append(left, r)
			} else {
				right = append(right, r)
			}
			continue
		}
		if len(l) > 0 {
			left = append(left, &row{y: r.y, segs: l})
		}
		if len(rr) > 0 {
			right = append(right, &row{y: r.y, segs: rr})
		}
	}
	var out [][]*row
	out = append(out, splitColumns(rows[:g.start], depth+1)...)
	out = append(out, splitColumns(left, depth+1)...)
	out = append(out, splitColumns(right, depth+1)...)
	out = append(out, splitColumns(rows[g.end:], depth+1)...)
	return out
}

// findGutter looks for the x at which the longest run of consecutive rows has
// text on both sides and none across, and accepts it only if both sides read
// like running text (lines reaching the gutter), so that tables and
// label/value layouts are not torn apart.
func findGutter(rows []*row) *gutter {
	if len(rows) < 4 {
		return nil
	}
	minX, maxX := math.Inf(1), math.Inf(-1)
	var sizes []float64
	for _, r := range rows {
		x0, x1 := r.extent()
		minX, maxX = math.Min(minX, x0), math.Max(maxX, x1)
		if r.table == nil {
			sizes = append(sizes, rowSize(r))
		}
	}
	width := maxX - minX
	if width < 100 || len(sizes) == 0 {
		return nil
	}
	sort.Float64s(sizes)
	size := sizes[len(sizes)/2]
	step := math.Max(1, width/400)
	// Between two edges of content every x sorts the rows the same way, so
	// only the first x past an edge needs trying.
	var edges []float64
	for _, r := range rows {
		if r.table != nil {
			edges = append(edges, r.table.box.x0, r.table.box.x1)
		}
		for _, s := range r.segs {
			edges = append(edges, s.x0, s.x1)
		}
	}
	slices.Sort(edges)
	var cands []gutter
	e := 0
	first := true
	for x := minX + 0.15*width; x <= maxX-0.15*width; x += step {
		passed := false
		for e < len(edges) && edges[e] <= x {
			e, passed = e+1, true
		}
		// x == an edge sorts differently from both sides of it.
		if !first && !passed && (e == 0 || edges[e-1] < x-step) {
			continue
		}
		first = false
		start := 0
		for i := 0; i <= len(rows); i++ {
			if i < len(rows) && !rows[i].crosses(x) {
				continue
			}
			if g, ok := bandAt(rows, start, i, x, size); ok {
				cands = append(cands, g)
			}
			start = i + 1
		}
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].score != cands[j].score {
			return cands[i].score > cands[j].score
		}
		return cands[i].x1-cands[i].x0 > cands[j].x1-cands[j].x0
	})
	for i := range cands {
		if readsAsColumns(rows[cands[i].start:cands[i].end], cands[i]) {
			return &cands[i]
		}
		if i > 20 {
			break
		}
	}
	return nil
}

// bandAt evaluates rows[start:end], none of which crosses x.
func bandAt(rows []*row, start, end int, x, size float64) (gutter, bool) {
	g := gutter{start: start, end: end, x0: math.Inf(-1), x1: math.Inf(1)}
	var nl, nr int
	lTop, lBot, rTop, rBot := math.Inf(-1), math.Inf(1), math.Inf(-1), math.Inf(1)
	for _, r := range rows[start:end] {
		x0, x1 := r.extent()
		hasL, hasR := false, false
		if r.table != nil {
			if x1 <= x {
				hasL, g.x0 = true, math.Max(g.x0, x1)
			} else {
				hasR, g.x1 = true, math.Min(g.x1, x0)
			}
		}
		for _, s := range r.segs {
			if s.x1 <= x {
				hasL, g.x0 = true, math.Max(g.x0, s.x1)
			} else {
				hasR, g.x1 = true, math.Min(g.x1, s.x0)
			}
		}
		if hasL {
			nl++
			lTop, lBot = math.Max(lTop, r.y), math.Min(lBot, r.y)
		}
		if hasR {
			nr++
			rTop, rBot = math.Max(rTop, r.y), math.Min(rBot, r.y)
		}
	}
	if nl < 2 || nr < 2 || g.x1-g.x0 < size {
		return g, false
	}
	// The two sides must sit beside each other, not one above the other.
	overlap := math.Min(lTop, rTop) - math.Max(lBot, rBot)
	if overlap < 0.5*math.Min(lTop-lBot, rTop-rBot) {
		return g, false
	}
	g.score = min(nl, nr)
	g.size = size
	return g, true
}

// readsAsColumns reports whether most lines on each side of the gutter run
// close to that side's far edge, as wrapped text does and table cells rarely
// do.
func readsAsColumns(rows []*row, g gutter) bool {
	lMin, rMax := math.Inf(1), math.Inf(-1)
	type side struct {
		x0, x1 float64
		runes  int
	}
	var ls, rs []side
	for _, r := range rows {
		if r.table != nil {
			continue
		}
		l := side{x0: math.Inf(1), x1: math.Inf(-1)}
		rr := l
		for _, s := range r.segs {
			if s.x1 <= g.x0+0.5 {
				l.x0, l.x1 = math.Min(l.x0, s.x0), math.Max(l.x1, s.x1)
				l.runes += s.runes
			} else {
				rr.x0, rr.x1 = math.Min(rr.x0, s.x0), math.Max(rr.x1, s.x1)
				rr.runes += s.runes
			}
		}
		if !math.IsInf(l.x0, 1) {
			ls = append(ls, l)
			lMin = math.Min(lMin, l.x0)
		}
		if !math.IsInf(rr.x0, 1) {
			rs = append(rs, rr)
			rMax = math.Max(rMax, rr.x1)
		}
	}
	// A text column is wide and its lines are long; table columns seldom are.
	full := func(sides []side, from, to float64, right bool) bool {
		w := to - from
		if w < 8*g.size || len(sides) == 0 {
			return false
		}
		n, long := 0, 0
		for _, s := range sides {
			if s.runes >= 12 {
				long++
			}
			if right && s.x1 >= to-0.3*w || !right && s.x1 >= to-0.3*w && s.x0 <= from+0.3*w {
				n++
			}
		}
		return n*2 >= len(sides) && long*2 >= len(sides)
	}
	const leftSide, rightSide = false, true
	return full(ls, lMin, g.x0, leftSide) && full(rs, g.x1, rMax, rightSide)
}

// line is one row of a flow, read as text.
type line struct {
	x0, x1, y, size float64
	text            string
	links           []span
	bold            bool
	runes           int
}

func rowLine(r *row) line {
	l := line{x0: math.Inf(1), x1: math.Inf(-1), y: r.y}
	var parts []string
	bold, sizes := 0, map[float64]int{}
	at := 0 // where the next segment's text starts in l.text
	for _, s := range r.segs {
		l.links = append(l.links, shiftSpans(s.links, at)...)
		at += len(s.text) + 1
		parts = append(parts, s.text)
		l.x0, l.x1 = math.Min(l.x0, s.x0), math.Max(l.x1, s.x1)
		l.runes += s.runes
		if s.bold {
			bold += s.runes
		}
		sizes[s.size] += s.runes
	}
	best := -1
	for k, n := range sizes {
		if n > best || n == best && k > l.size {
			l.size, best = k, n
		}
	}
	l.text = strings.Join(parts, " ")
	l.bold = bold*10 >= l.runes*6
	return l
}

// flowBlocks groups the rows of one column flow into blocks.
func flowBlocks(rows []*row, st *docStats, pageN int) []*block {
	tables := borderlessTables(rows)
	var lines []line
	left := map[float64]int{}
	right := math.Inf(-1)
	for i, r := range rows {
		if r.table != nil || tables[i] != nil {
			continue
		}
		l := rowLine(r)
		left[math.Round(l.x0)]++
		right = math.Max(right, l.x1)
		lines = append(lines, l)
	}
	flowLeft, n := 0.0, -1
	for x, c := range left {
		if c > n || c == n && x < flowLeft {
			flowLeft, n = x, c
		}
	}
	width := right - flowLeft

	var out []*block
	var cur *block
	var prev line
	var parts []string
	var partLinks [][]span
	flush := func() {
		if cur == nil {
			return
		}
		cur.text, cur.links = joinRich(parts, partLinks)
		cur.lastFull = prev.x1 >= right-0.1*width && !sentenceEndRe.MatchString(prev.text)
		out = append(out, cur)
		cur, parts, partLinks = nil, nil, nil
	}
	li := 0
	for i, r := range rows {
		if t := r.table; t != nil || tables[i] != nil {
			flush()
			if t == nil {
				t = tables[i]
				if t == skipRow {
					continue
				}
			}
			out = append(out, &block{kind: tableBlock, page: pageN, rows: t.rows, cells: t.links, x0: t.box.x0})
			continue
		}
		l := lines[li]
		li++
		if cur != nil && !continues(cur, prev, l, st, flowLeft, right, width) {
			flush()
		}
		if cur == nil {
			cur = &block{kind: paragraph, page: pageN, size: l.size, bold: l.bold, x0: l.x0}
			if m, rest := splitMarker(l.text); m != "" {
				cur.kind, cur.marker, cur.ordered = listItem, m, orderedMarker(m)
				if k := strings.Index(l.text[len(m):], rest); k >= 0 {
					l.links = clipSpans(l.links, len(m)+k, len(m)+k+len(rest))
				}
				l.text = rest
			}
		} else {
			cur.bold = cur.bold && l.bold
		}
		cur.lines++
		parts = append(parts, l.text)
		partLinks = append(partLinks, l.links)
		prev = l
	}
	flush()
	return out
}

// leaderRe matches the end of a table-of-contents entry: dot leaders and a
// page number.
var leaderRe = regexp.MustCompile(`(\.\s?){4,}\s*([0-9]{1,5}|[ivxlcdm]{1,8}|[IVXLCDM]{1,8})$`)

// continues reports whether line l belongs to the block that prev ended.
func continues(b *block, prev, l line, st *docStats, flowLeft, right, width float64) bool {
	if m, _ := splitMarker(l.text); m != "" {
		return false
	}
	if leaderRe.MatchString(prev.text) {
		return false // one entry of a table of contents
	}
	if math.Abs(l.size-prev.size) > 0.12*math.Max(l.size, prev.size) {
		return false
	}
	if l.bold != prev.bold {
		return false
	}
	delta := prev.y - l.y
	if delta > 1.3*st.pitchFor(math.Max(l.size, prev.size))+0.5 || delta < 0.3*l.size {
		return false
	}
	if b.kind == listItem {
		// Wrapped item text hangs under the text, not under the marker.
		return l.x0 > b.x0+0.3*l.size
	}
	body := math.Abs(l.size-st.body) < 0.5
	if body && b.lines >= 2 && l.x0 < prev.x0-1.5*l.size && l.x0 < b.x0-1.5*l.size {
		// Out to the left of the lines before it, further than a first-line
		// indent would explain: a title under indented text, as manual
		// pages set their sections.
		return false
	}
	if body && l.x0-prev.x0 > 0.8*l.size && math.Abs(prev.x0-flowLeft) < 2 && width > 0 {
		return false // first-line indent of a new paragraph
	}
	if body && width > 0 && prev.x1 < right-0.25*width && sentenceEndRe.MatchString(prev.text) && startsUpper(l.text) {
		return false // a short last line closed the paragraph
	}
	return true
}

func startsUpper(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsUpper(r) || unicode.IsDigit(r)
}

func startsLower(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsLower(r)
}

// joinLines joins wrapped lines, undoing hyphenation at line ends: a soft
// hyphen always, a hard one between letters when a lowercase word follows.
func joinLines(parts []string) string {
	s, _ := joinRich(parts, nil)
	return s
}

// joinRich is joinLines for lines that carry links: links[i] are the link
// runs of parts[i] (links may be shorter than parts).
func joinRich(parts []string, links [][]span) (string, []span) {
	var b []byte
	var out []span
	for i, p := range parts {
		if i > 0 {
			switch {
			case bytes.HasSuffix(b, []byte("\u00ad")):
				b = b[:len(b)-len("\u00ad")]
			case bytes.HasSuffix(b, []byte("-")) && startsLower(p) && letterBefore(b[:len(b)-1]):
				b = b[:len(b)-1]
			default:
				b = append(b, ' ')
			}
			if n := len(out); n > 0 && out[n-1].end > len(b) {
				out[n-1].end = len(b)
			}
		}
		if i < len(links) {
			out = append(out, shiftSpans(links[i], len(b))...)
		}
		b = append(b, p...)
	}
	return string(b), out
}

// shiftSpans returns a copy of sp moved by d bytes.
func shiftSpans(sp []span, d int) []span {
	if len(sp) == 0 {
		return nil
	}
	out := make([]span, len(sp))
	for i, x := range sp {
		out[i] = span{x.start + d, x.end + d, x.href}
	}
	return out
}

// clipSpans returns the parts of sp that lie in [lo, hi), counted from lo.
func clipSpans(sp []span, lo, hi int) []span {
	var out []span
	for _, x := range sp {
		s, e := max(x.start, lo), min(x.end, hi)
		if s < e {
			out = append(out, span{s - lo, e - lo, x.href})
		}
	}
	return out
}

func letterBefore(b []byte) bool {
	r, _ := utf8.DecodeLastRune(b)
	return unicode.IsLetter(r)
}

// skipRow marks rows that a borderless table absorbed after its first row.
var skipRow = &table{}

// borderlessTables finds runs of rows whose segments line up in two or more
// columns, as a table without rulings does. It returns, per row index, the
// table starting there, skipRow for the rows it absorbed, or nil.
func borderlessTables(rows []*row) map[int]*table {
	out := map[int]*table{}
	for i := 0; i < len(rows); {
		r := rows[i]
		if r.table != nil || len(r.segs) < 2 {
			i++
			continue
		}
		cols := make([][2]float64, 0, len(r.segs))
		for _, s := range r.segs {
			cols = append(cols, [2]float64{s.x0, s.x1})
		}
		body := [][]*segment{r.segs}
		multi := 1
		j := i + 1
		for ; j < len(rows); j++ {
			n := rows[j]
			if n.table != nil || rows[j-1].y-n.y > 3*rowSize(n)+1 {
				break
			}
			next, segs, ok := fitColumns(cols, n.segs)
			if !ok {
				break
			}
			if len(segs) == 1 && columnOf(next, segs[0]) == 0 {
				break // text back at the left edge: the table ended
			}
			cols = next
			body = append(body, segs)
			if len(segs) >= 2 {
				multi++
			}
		}
		if multi < 3 || len(cols) < 2 {
			i++
			continue
		}
		// Rows with one segment continue the cells of the row above.
		var rowsText [][]string
		var rowsLinks [][][]span
		linked := false
		for _, segs := range body {
			cells := make([]string, len(cols))
			links := make([][]span, len(cols))
			for _, s := range segs {
				c := columnOf(cols, s)
				cells[c], links[c] = cellJoin(cells[c], links[c], strings.TrimSpace(s.text), s.links)
				linked = linked || len(s.links) > 0
			}
			if len(segs) == 1 && len(rowsText) > 0 {
				last, lastLinks := rowsText[len(rowsText)-1], rowsLinks[len(rowsLinks)-1]
				for c := range cells {
					last[c], lastLinks[c] = cellLine(last[c], lastLinks[c], cells[c], links[c])
				}
				continue
			}
			rowsText = append(rowsText, cells)
			rowsLinks = append(rowsLinks, links)
		}
		if !linked {
			rowsLinks = nil
		}
		x0, x1 := r.extent()
		out[i] = &table{box: rect{x0, rows[j-1].y, x1, r.y}, rows: rowsText, links: rowsLinks}
		for k := i + 1; k < j; k++ {
			out[k] = skipRow
		}
		i = j
	}
	return out
}

// fitColumns checks that every segment overlaps at most one column and that
// no two segments share a column; a segment clear of all columns adds one.
// A segment running into the next column (a narrow gap the segmenter could
// not see) is cut at the word that starts where that column starts.
func fitColumns(cols [][2]float64, segs []*segment) ([][2]float64, []*segment, bool) {
	next := append([][2]float64(nil), cols...)
	var out []*segment
	used := map[int]bool{}
	for k := 0; k < len(segs); k++ {
		s := segs[k]
		hit := -1
		for c, col := range next {
			if s.x0 < col[1] && s.x1 > col[0] {
				if hit >= 0 {
					l, r := cutAtColumn(s, col[0])
					if l == nil {
						return nil, nil, false
					}
					s = l
					segs = append(segs[:k+1], append([]*segment{r}, segs[k+1:]...)...)
					break
				}
				hit = c
			}
		}
		out = append(out, s)
		if hit < 0 {
			next = append(next, [2]float64{s.x0, s.x1})
			sort.Slice(next, func(a, b int) bool { return next[a][0] < next[b][0] })
			continue
		}
		if used[hit] {
			return nil, nil, false
		}
		used[hit] = true
		next[hit] = [2]float64{math.Min(next[hit][0], s.x0), math.Max(next[hit][1], s.x1)}
	}
	for c := 1; c < len(next); c++ {
		if next[c][0] < next[c-1][1] {
			return nil, nil, false // widened columns now overlap
		}
	}
	return next, out, true
}

// cutAtColumn splits s before the word that starts within 2.5pt of x.
func cutAtColumn(s *segment, x float64) (*segment, *segment) {
	for k := 1; k < len(s.words); k++ {
		w := s.words[k]
		if math.Abs(w.x0-x) > 2.5 {
			continue
		}
		l, r := *s, *s
		l.text, l.x1, l.words = strings.TrimSpace(s.text[:w.off]), s.words[k-1].x1, s.words[:k:k]
		r.text, r.x0 = s.text[w.off:], w.x0
		l.links, r.links = clipSpans(s.links, 0, len(l.text)), clipSpans(s.links, w.off, len(s.text))
		r.words = make([]word, len(s.words)-k)
		for i, ww := range s.words[k:] {
			ww.off -= w.off
			r.words[i] = ww
		}
		l.runes, r.runes = utf8.RuneCountInString(l.text), utf8.RuneCountInString(r.text)
		return &l, &r
	}
	return nil, nil
}

func columnOf(cols [][2]float64, s *segment) int {
	best, bestD := 0, math.Inf(1)
	for c, col := range cols {
		d := math.Abs((col[0]+col[1])/2 - (s.x0+s.x1)/2)
		if s.x0 < col[1] && s.x1 > col[0] {
			d = 0
		}
		if d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// classify turns paragraphs set in a larger size, or in bold on their own,
// into headings, with levels ranked by size across the document.
func classify(blocks []*block, st *docStats) {
	var keys []float64
	seen := map[float64]bool{}
	// The left edge of the text, on odd and on even pages (whose margins
	// may mirror each other).
	left := [2]float64{math.Inf(1), math.Inf(1)}
	for _, b := range blocks {
		left[b.page%2] = math.Min(left[b.page%2], b.x0)
	}
	for i, b := range blocks {
		if b.kind == listItem && b.lines <= 2 && (b.size >= 1.15*st.body || b.bold && b.size >= 0.95*st.body) {
			// A numbered heading ("2.1 Results") rather than a list item.
			b.kind, b.text = paragraph, b.marker+" "+b.text
			b.links = shiftSpans(b.links, len(b.marker)+1)
		}
		if b.kind != paragraph {
			continue
		}
		n := utf8.RuneCountInString(b.text)
		if n == 0 || !strings.ContainsFunc(b.text, unicode.IsLetter) || leaderRe.MatchString(b.text) {
			continue
		}
		switch {
		case b.size >= 1.15*st.body && b.lines <= 4 && n <= 300:
			b.kind, b.headingKey = heading, b.size
			if !seen[b.size] {
				seen[b.size] = true
				keys = append(keys, b.size)
			}
		case b.bold && b.lines <= 2 && n <= 120 && b.size >= 0.95*st.body && !strings.HasSuffix(b.text, ".") && !strings.HasSuffix(b.text, ",") &&
			!definitionTerm(b, blocks[i+1:], left[b.page%2]):
			b.kind = heading
		}
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(keys)))
	for _, b := range blocks {
		if b.kind != heading {
			continue
		}
		level := len(keys) + 1
		for i, k := range keys {
			if b.headingKey == k {
				level = i + 1
			}
		}
		b.level = min(level, 6)
	}
}

// definitionTerm reports whether b, a bold line, is the term of a
// definition list rather than a heading: itself indented from the left edge
// of the text, with the paragraph after it indented further, as manual
// pages set options and variables (their section titles stand at the edge).
func definitionTerm(b *block, rest []*block, left float64) bool {
	if len(rest) == 0 || rest[0].page != b.page || rest[0].kind != paragraph {
		return false
	}
	return b.x0 > left+2*b.size && rest[0].x0 > b.x0+1.5*b.size
}

// joinContinuations merges a paragraph that a column or page break cut in
// two, and numbers list nesting from marker indentation.
func joinContinuations(blocks []*block) []*block {
	var out []*block
	for _, b := range blocks {
		if n := len(out); n > 0 && b.flowFirst && b.kind == paragraph {
			p := out[n-1]
			if p.kind == paragraph && p.lastFull && startsLower(b.text) && math.Abs(p.size-b.size) < 0.5 {
				p.text, p.links = joinRich([]string{p.text, b.text}, [][]span{p.links, b.links})
				p.lines += b.lines
				p.lastFull = b.lastFull
				continue
			}
		}
		out = append(out, b)
	}
	// List nesting by the indentation of consecutive items' markers.
	var stack []float64
	for i, b := range out {
		if b.kind != listItem {
			stack = stack[:0]
			continue
		}
		if i > 0 && out[i-1].page != b.page {
			stack = stack[:0]
		}
		for len(stack) > 0 && b.x0 < stack[len(stack)-1]-2 {
			stack = stack[:len(stack)-1]
		}
		if len(stack) == 0 || b.x0 > stack[len(stack)-1]+2 {
			stack = append(stack, b.x0)
		}
		b.level = len(stack) - 1
	}
	return out
}

// markerNumber returns the number an ordered marker shows, or 0.
func markerNumber(m string) int {
	m = strings.Trim(m, "().")
	n, err := strconv.Atoi(m)
	if err != nil {
		return 0
	}
	return n
}
