package parse

import (
	"math"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Layout analysis: glyphs → segments (runs of text on one baseline) → rows →
// column flows → blocks (headings, paragraphs, list items, tables). It works
// on geometry alone, so it serves any producer; the thresholds are in units
// of the font size wherever they can be.

type rect struct{ x0, y0, x1, y1 float64 }

// page is one page after glyph extraction.
type page struct {
	n      int
	box    rect
	segs   []*segment
	tables []*table // ruled tables, their text already taken out of segs
}

// segment is a run of text on one baseline with no gap wider than about an
// em; a gutter or a table column boundary separates two segments.
type segment struct {
	x0, x1, y float64
	size      float64
	text      string
	bold      bool
	runes     int
	drop      bool // a running header or footer
	words     []word
}

// word locates one word of a segment's text, so that a segment can be cut
// where a table column starts.
type word struct {
	off    int // byte offset in text
	x0, x1 float64
}

type table struct {
	box  rect
	rows [][]string
}

const (
	// segGap splits a baseline into segments (ems).
	segGap = 1.0
	// wordGap inserts a space between glyphs without an explicit one (ems).
	wordGap = 0.15
)

// buildPage turns a page's glyphs and rulings into tables and segments.
func buildPage(p *page, glyphs []glyph, rulings []ruling, dots []rect) {
	kept := glyphs[:0]
	for _, g := range glyphs {
		if g.x < p.box.x0-5 || g.x > p.box.x1+5 || g.y < p.box.y0-5 || g.y > p.box.y1+5 {
			continue // clipped away or parked off the page
		}
		kept = append(kept, g)
	}
	kept = append(kept, dotBullets(kept, dots)...)
	p.tables, kept = ruledTables(kept, rulings)
	for _, row := range glyphRows(kept) {
		p.segs = append(p.segs, splitRow(row)...)
	}
}

// dotBullets turns small filled shapes that sit where a bullet would, just
// left of the first word of a line and above its baseline, into "•" glyphs.
// Browsers draw list bullets this way.
func dotBullets(glyphs []glyph, dots []rect) []glyph {
	if len(dots)*len(glyphs) > 5_000_000 {
		return nil // a drawing, not a list
	}
	var out []glyph
	for _, d := range dots {
		cy := (d.y0 + d.y1) / 2
		best := -1
		for i, g := range glyphs {
			if g.x < d.x1 || g.x-d.x1 > 3*g.size || cy < g.y || cy > g.y+0.7*g.size || isSpaceText(g.text) {
				continue
			}
			if best < 0 || g.x < glyphs[best].x {
				best = i
			}
		}
		if best < 0 {
			continue
		}
		t := glyphs[best]
		lonely := true
		for _, g := range glyphs {
			if math.Abs(g.y-t.y) < 0.3*t.size && g.x < d.x0 && d.x0-g.x < 2*t.size && !isSpaceText(g.text) {
				lonely = false // something precedes the dot on its line
				break
			}
		}
		if lonely {
			out = append(out, glyph{x: d.x0, y: t.y, w: d.x1 - d.x0, size: t.size, text: "•"})
		}
	}
	return out
}

// glyphRows groups glyphs by baseline, top to bottom, each row left to right.
func glyphRows(glyphs []glyph) [][]glyph {
	sort.SliceStable(glyphs, func(i, j int) bool { return glyphs[i].y > glyphs[j].y })
	var rows [][]glyph
	var rowY, rowSize float64
	for _, g := range glyphs {
		if n := len(rows); n > 0 && math.Abs(g.y-rowY) <= 0.3*math.Min(g.size, rowSize) {
			rows[n-1] = append(rows[n-1], g)
			continue
		}
		rows = append(rows, []glyph{g})
		rowY, rowSize = g.y, g.size
	}
	rows = attachScripts(rows)
	for _, r := range rows {
		sort.SliceStable(r, func(i, j int) bool { return r[i].x < r[j].x })
	}
	return rows
}

var (
	superDigits = strings.NewReplacer("0", "⁰", "1", "¹", "2", "²", "3", "³", "4", "⁴", "5", "⁵", "6", "⁶", "7", "⁷", "8", "⁸", "9", "⁹")
	subDigits   = strings.NewReplacer("0", "₀", "1", "₁", "2", "₂", "3", "₃", "4", "₄", "5", "₅", "6", "₆", "7", "₇", "8", "₈", "9", "₉")
)

// scriptDigits writes the digits of raised or lowered glyphs as Unicode
// superscripts or subscripts ("depth¹", "H₂O"), which Markdown has no
// other way to show.
func scriptDigits(r []glyph, digits *strings.Replacer) []glyph {
	for i := range r {
		r[i].text = digits.Replace(r[i].text)
	}
	return r
}

// attachScripts moves rows of small raised or lowered glyphs (superscript
// footnote marks, subscripts) into the line they belong to, so that they do
// not split its paragraph.
func attachScripts(rows [][]glyph) [][]glyph {
	extent := func(r []glyph) (x0, x1, size float64) {
		x0, x1 = math.Inf(1), math.Inf(-1)
		for _, g := range r {
			x0, x1, size = math.Min(x0, g.x), math.Max(x1, g.x+g.w), math.Max(size, g.size)
		}
		return x0, x1, size
	}
	out := rows[:0:0]
	for i := 0; i < len(rows); i++ {
		r := rows[i]
		x0, x1, size := extent(r)
		into := func(t []glyph, raise float64) bool {
			tx0, tx1, tsize := extent(t)
			return size < 0.85*tsize && raise > 0 && x0 >= tx0-tsize && x1 <= tx1+tsize
		}
		// rows run top to bottom: a superscript sits just above the next
		// row's baseline, a subscript just below the previous row's.
		if i+1 < len(rows) && into(rows[i+1], r[0].y-rows[i+1][0].y) && r[0].y-rows[i+1][0].y <= 0.5*rows[i+1][0].size {
			rows[i+1] = append(rows[i+1], scriptDigits(r, superDigits)...)
			continue
		}
		if n := len(out); n > 0 && into(out[n-1], out[n-1][0].y-r[0].y) && out[n-1][0].y-r[0].y <= 0.35*out[n-1][0].size {
			out[n-1] = append(out[n-1], scriptDigits(r, subDigits)...)
			continue
		}
		out = append(out, r)
	}
	return out
}

func isSpaceText(s string) bool {
	return strings.TrimFunc(s, unicode.IsSpace) == "" || s == "\u00a0"
}

// segBuilder accumulates one segment.
type segBuilder struct {
	b           strings.Builder
	words       []word
	x0, x1      float64
	sizes       map[float64]int
	ys          map[float64]float64
	runes, bold int
}

func (sb *segBuilder) add(g glyph, end float64) {
	if n := len(sb.words); n == 0 || sb.b.Len() > 0 && strings.HasSuffix(sb.b.String(), " ") {
		sb.words = append(sb.words, word{off: sb.b.Len(), x0: g.x})
	}
	sb.words[len(sb.words)-1].x1 = end
	sb.b.WriteString(g.text)
	n := utf8.RuneCountInString(g.text)
	sb.runes += n
	if g.bold {
		sb.bold += n
	}
	k := math.Round(g.size*2) / 2
	sb.sizes[k] += n
	if _, ok := sb.ys[k]; !ok {
		sb.ys[k] = g.y
	}
}

func (sb *segBuilder) segment() *segment {
	size, best := 0.0, -1
	for k, n := range sb.sizes {
		if n > best || n == best && k > size {
			size, best = k, n
		}
	}
	return &segment{
		x0: sb.x0, x1: sb.x1, y: sb.ys[size], size: size,
		text:  sb.b.String(),
		words: sb.words,
		bold:  sb.bold*10 >= sb.runes*6,
		runes: sb.runes,
	}
}

// splitRow turns one baseline of glyphs into segments, inserting spaces at
// word gaps and joining list markers to the text they introduce.
func splitRow(row []glyph) []*segment {
	var segs []*segment
	var cur *segBuilder
	var lastEnd, lastX, lastSize float64
	var lastText string
	pendingSpace := false
	for _, g := range row {
		if isSpaceText(g.text) {
			pendingSpace = cur != nil
			continue
		}
		if cur != nil {
			sz := math.Max(g.size, lastSize)
			if g.text == lastText && math.Abs(g.x-lastX) < 0.2*sz {
				continue // overprinted for a bold or shadow effect
			}
			gap := g.x - lastEnd
			if gap > segGap*sz {
				segs = append(segs, cur.segment())
				cur = nil
			} else if pendingSpace || gap > wordGap*sz {
				cur.b.WriteByte(' ')
			}
		}
		if cur == nil {
			cur = &segBuilder{x0: g.x, sizes: map[float64]int{}, ys: map[float64]float64{}}
			lastEnd = g.x
		}
		adv := g.w
		if adv <= 0 {
			adv = 0.5 * g.size
		}
		cur.add(g, g.x+adv)
		lastEnd = math.Max(lastEnd, g.x+adv)
		cur.x1 = lastEnd
		lastX, lastSize, lastText = g.x, g.size, g.text
		pendingSpace = false
	}
	if cur != nil {
		segs = append(segs, cur.segment())
	}
	// A list marker is set apart from its text by a tab stop; keep them
	// together so the marker does not look like a table column.
	out := segs[:0]
	for i := 0; i < len(segs); i++ {
		s := segs[i]
		if i+1 < len(segs) && isMarker(s.text) && segs[i+1].x0-s.x1 <= 4*math.Max(s.size, segs[i+1].size) {
			n := segs[i+1]
			n.text = s.text + " " + n.text
			n.x0 = s.x0
			n.runes += s.runes + 1
			for k := range n.words {
				n.words[k].off += len(s.text) + 1
			}
			n.words = append(s.words, n.words...)
			out = append(out, n)
			i++
			continue
		}
		out = append(out, s)
	}
	return out
}

var (
	bulletRunes = "•◦▪▫●○■□►▸‣⁃–—-*·∙➢➤✓✔❖\uf0b7\uf0a7\uf076\uf0d8\uf0fc\uf0a8"
	// Enumerators: 1. 1) (1) 1.2. a) (a) iv) and lowercase a. iv. but not
	// "J." or "IV.", which start lines as initials and section numbers.
	enumeratorRe  = regexp.MustCompile(`^(\(?[0-9]{1,3}[.)]|\(?([a-z]|[ivx]{1,5}|[A-Z]|[IVX]{1,5})\)|\([a-zA-Z]\)|([a-z]|[ivx]{1,5})\.|[0-9]{1,3}(\.[0-9]{1,3})+\.?)$`)
	numberOnlyRe  = regexp.MustCompile(`^[0-9]{1,3}[.)]$`)
	sentenceEndRe = regexp.MustCompile(`[.!?:;]["'”’)\]]*$`)
)

// isMarker reports whether s, a whole word, is a list bullet or enumerator.
func isMarker(s string) bool {
	if utf8.RuneCountInString(s) == 1 {
		r, _ := utf8.DecodeRuneInString(s)
		// Symbol fonts put their bullets in the Private Use Area.
		return strings.ContainsRune(bulletRunes, r) || r >= 0xE000 && r <= 0xF8FF
	}
	return enumeratorRe.MatchString(s)
}

// splitMarker returns the list marker a line starts with, if any.
func splitMarker(s string) (marker, rest string) {
	i := strings.IndexByte(s, ' ')
	if i <= 0 {
		return "", s
	}
	if m := s[:i]; isMarker(m) {
		return m, strings.TrimSpace(s[i+1:])
	}
	return "", s
}

func orderedMarker(m string) bool {
	return enumeratorRe.MatchString(m)
}

// ruledTables finds grids of horizontal and vertical rulings that hold text
// in at least two cells, and moves the glyphs inside them into tables.
func ruledTables(glyphs []glyph, rulings []ruling) ([]*table, []glyph) {
	hs, vs := mergeRulings(rulings)
	if len(hs) < 2 || len(vs) < 3 || len(hs)*len(vs) > 4_000_000 {
		return nil, glyphs
	}
	// Connected components of crossing rulings.
	parent := make([]int, len(hs)+len(vs))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	const tol = 3
	for i, h := range hs {
		for j, v := range vs {
			if v.x0 >= h.x0-tol && v.x0 <= h.x1+tol && h.y0 >= v.y0-tol && h.y0 <= v.y1+tol {
				parent[find(i)] = find(len(hs) + j)
			}
		}
	}
	comps := map[int][]int{}
	var order []int
	for i := range parent {
		r := find(i)
		if _, ok := comps[r]; !ok {
			order = append(order, r)
		}
		comps[r] = append(comps[r], i)
	}
	var tables []*table
	taken := make([]bool, len(glyphs))
	tried := 0
	for _, root := range order {
		if len(comps[root]) < 5 {
			continue // fewer than two rows by two columns of rulings
		}
		if tried++; tried > 100 {
			break
		}
		var xs, ys []float64
		for _, i := range comps[root] {
			if i < len(hs) {
				ys = append(ys, hs[i].y0)
			} else {
				xs = append(xs, vs[i-len(hs)].x0)
			}
		}
		xs, ys = clusterValues(xs, 2), clusterValues(ys, 2)
		if len(xs) < 3 || len(ys) < 3 {
			continue
		}
		// ys top to bottom.
		sort.Sort(sort.Reverse(sort.Float64Slice(ys)))
		cells := make([][][]glyph, len(ys)-1)
		for i := range cells {
			cells[i] = make([][]glyph, len(xs)-1)
		}
		var inside []int
		for gi, g := range glyphs {
			if taken[gi] {
				continue
			}
			cx, cy := g.x+g.w/2, g.y+0.3*g.size
			if cx <= xs[0] || cx >= xs[len(xs)-1] || cy >= ys[0] || cy <= ys[len(ys)-1] {
				continue
			}
			c := sort.SearchFloat64s(xs, cx) - 1
			r := 0
			for r+1 < len(ys)-1 && cy < ys[r+1] {
				r++
			}
			cells[r][c] = append(cells[r][c], g)
			inside = append(inside, gi)
		}
		t := &table{box: rect{xs[0], ys[len(ys)-1], xs[len(xs)-1], ys[0]}}
		filled := 0
		for _, row := range cells {
			var texts []string
			for _, cell := range row {
				s := cellText(cell)
				if s != "" {
					filled++
				}
				texts = append(texts, s)
			}
			t.rows = append(t.rows, texts)
		}
		if filled < 2 {
			continue
		}
		t.rows = pruneEmpty(t.rows)
		if len(t.rows) == 0 || len(t.rows[0]) < 2 {
			continue
		}
		for _, gi := range inside {
			taken[gi] = true
		}
		tables = append(tables, t)
	}
	rest := glyphs[:0:0]
	for gi, g := range glyphs {
		if !taken[gi] {
			rest = append(rest, g)
		}
	}
	return tables, rest
}

// mergeRulings splits rulings into horizontal and vertical ones and joins
// collinear pieces that touch, as producers draw one border per cell.
func mergeRulings(rulings []ruling) (hs, vs []ruling) {
	for _, r := range rulings {
		switch {
		case r.horizontal():
			y := (r.y0 + r.y1) / 2
			hs = append(hs, ruling{math.Min(r.x0, r.x1), y, math.Max(r.x0, r.x1), y})
		case r.vertical():
			x := (r.x0 + r.x1) / 2
			vs = append(vs, ruling{x, math.Min(r.y0, r.y1), x, math.Max(r.y0, r.y1)})
		}
	}
	merge := func(rs []ruling, key func(ruling) float64, lo, hi func(*ruling) *float64) []ruling {
		sort.Slice(rs, func(i, j int) bool {
			ki, kj := key(rs[i]), key(rs[j])
			if math.Abs(ki-kj) > 1.5 {
				return ki < kj
			}
			return *lo(&rs[i]) < *lo(&rs[j])
		})
		var out []ruling
		for _, r := range rs {
			if n := len(out); n > 0 {
				last := &out[n-1]
				if math.Abs(key(*last)-key(r)) <= 1.5 && *lo(&r) <= *hi(last)+2 {
					*hi(last) = math.Max(*hi(last), *hi(&r))
					continue
				}
			}
			out = append(out, r)
		}
		return out
	}
	hs = merge(hs, func(r ruling) float64 { return r.y0 }, func(r *ruling) *float64 { return &r.x0 }, func(r *ruling) *float64 { return &r.x1 })
	vs = merge(vs, func(r ruling) float64 { return r.x0 }, func(r *ruling) *float64 { return &r.y0 }, func(r *ruling) *float64 { return &r.y1 })
	return hs, vs
}

// clusterValues sorts vs and replaces runs closer than tol by their mean.
func clusterValues(vs []float64, tol float64) []float64 {
	sort.Float64s(vs)
	var out []float64
	var sum float64
	n := 0
	for i, v := range vs {
		if i > 0 && v-vs[i-1] > tol {
			out = append(out, sum/float64(n))
			sum, n = 0, 0
		}
		sum += v
		n++
	}
	if n > 0 {
		out = append(out, sum/float64(n))
	}
	return out
}

// cellText reads the glyphs of one table cell, line by line.
func cellText(glyphs []glyph) string {
	var parts []string
	for _, row := range glyphRows(glyphs) {
		for _, s := range splitRow(row) {
			parts = append(parts, s.text)
		}
	}
	return strings.Join(parts, " ")
}

// pruneEmpty drops rows and columns that hold no text.
func pruneEmpty(rows [][]string) [][]string {
	var keepRows [][]string
	width := 0
	for _, r := range rows {
		if strings.Join(r, "") != "" {
			keepRows = append(keepRows, r)
			width = max(width, len(r))
		}
	}
	var cols []int
	for c := 0; c < width; c++ {
		for _, r := range keepRows {
			if c < len(r) && r[c] != "" {
				cols = append(cols, c)
				break
			}
		}
	}
	out := make([][]string, len(keepRows))
	for i, r := range keepRows {
		for _, c := range cols {
			s := ""
			if c < len(r) {
				s = r[c]
			}
			out[i] = append(out[i], s)
		}
	}
	return out
}

// Running headers and footers.

var pageNumberRe = regexp.MustCompile(`^(page|p\.|seite|página|pagina)?\s*[-–—(\[]?\s*#+\s*[-–—)\]]?\s*((of|/|von|de|sur)\s*#+)?$`)
var romanRe = regexp.MustCompile(`^c{0,3}(xc|xl|l?x{0,3})(ix|iv|v?i{0,3})$`)

// markRunningText flags running headers and footers: segments near the top
// or bottom of a page whose text (digits aside) recurs at about the same
// height on at least half of the pages, or on at least three pages that
// make up 40% of the pages between the first and last of them (as chapter
// headers do); and lone page numbers on the top or bottom line of any page.
func markRunningText(pages []*page) {
	type cand struct {
		s    *segment
		page int
		norm string
	}
	var cands []cand
	for pi, p := range pages {
		h := p.box.y1 - p.box.y0
		if h <= 0 || len(p.segs) == 0 {
			continue
		}
		top, bottom := p.segs[0].y, p.segs[0].y
		for _, s := range p.segs {
			top, bottom = math.Max(top, s.y), math.Min(bottom, s.y)
		}
		for _, s := range p.segs {
			if s.y < p.box.y1-0.15*h && s.y > p.box.y0+0.15*h {
				continue
			}
			norm := normalizeRunning(s.text)
			if norm == "" {
				continue
			}
			edge := math.Abs(s.y-top) < 1 || math.Abs(s.y-bottom) < 1
			if edge && (pageNumberRe.MatchString(norm) || norm != "" && romanRe.MatchString(norm)) {
				s.drop = true
			}
			cands = append(cands, cand{s, pi, norm})
		}
	}
	if len(pages) < 2 {
		return
	}
	need := max(2, (len(pages)+1)/2)
	groups := map[string][]cand{}
	for _, c := range cands {
		groups[c.norm] = append(groups[c.norm], c)
	}
	for _, g := range groups {
		if len(g) < 2 || len(g) > 50*len(pages) {
			continue
		}
		for _, c := range g {
			seen := map[int]bool{}
			first, last := c.page, c.page
			for _, o := range g {
				if math.Abs(o.s.y-c.s.y) <= 4 {
					seen[o.page] = true
					first, last = min(first, o.page), max(last, o.page)
				}
			}
			if len(seen) >= need || len(seen) >= 3 && len(seen)*10 >= 4*(last-first+1) {
				c.s.drop = true
			}
		}
	}
}

func normalizeRunning(s string) string {
	s = strings.ToLower(s)
	s = strings.Map(func(r rune) rune {
		if unicode.IsDigit(r) {
			return '#'
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}
