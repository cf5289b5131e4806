package parse

import (
	"cmp"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
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
	links  []pageLink
	scan   pdf.Value // an image to read by OCR: the page has no text
	ocr    []string  // paragraphs that OCR read
}

// pageLink is a link annotation: glyphs inside box link to href.
type pageLink struct {
	box  rect
	href string
}

// span marks text[start:end] of a segment, line or block as a link.
type span struct {
	start, end int // byte offsets
	href       string
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
	links     []span
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
	// links are the link runs of each cell, shaped like rows; nil when no
	// cell has one.
	links [][][]span
}

// cellJoin appends text b, with its links, to a cell's text a, a space
// between them when both have text.
func cellJoin(a string, al []span, b string, bl []span) (string, []span) {
	switch {
	case b == "":
		return a, al
	case a == "":
		return b, bl
	}
	return a + " " + b, append(al[:len(al):len(al)], shiftSpans(bl, len(a)+1)...)
}

// cellLine appends the next line b of a cell to a, undoing hyphenation as
// joinLines does.
func cellLine(a string, al []span, b string, bl []span) (string, []span) {
	if a == "" || b == "" {
		return cellJoin(a, al, b, bl)
	}
	return joinRich([]string{a, b}, [][]span{al, bl})
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
	linkGlyphs(kept, p.links)
	kept = append(kept, dotBullets(kept, dots)...)
	p.tables, kept = ruledTables(kept, rulings)
	for _, row := range glyphRows(kept) {
		p.segs = append(p.segs, splitRow(row)...)
	}
}

// linkGlyphs gives each glyph whose middle lies inside a link annotation
// that annotation's target.
func linkGlyphs(glyphs []glyph, links []pageLink) {
	if len(links) == 0 {
		return
	}
	budget := 20_000_000 // glyph × link tests
	for i := range glyphs {
		g := &glyphs[i]
		cx, cy := g.x+g.w/2, g.y+0.3*g.size
		for _, l := range links {
			if budget--; budget < 0 {
				return
			}
			if cx >= l.box.x0-1 && cx <= l.box.x1+1 && cy >= l.box.y0-1 && cy <= l.box.y1+1 {
				g.link = l.href
				break
			}
		}
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
	slices.SortStableFunc(glyphs, func(a, b glyph) int { return cmp.Compare(b.y, a.y) })
	// Rows are windows on glyphs, capped so that appending to one copies it.
	var rows [][]glyph
	start := 0
	var rowY, rowSize float64
	for i, g := range glyphs {
		if i > 0 && math.Abs(g.y-rowY) <= 0.3*math.Min(g.size, rowSize) {
			continue
		}
		if i > start {
			rows = append(rows, glyphs[start:i:i])
		}
		start, rowY, rowSize = i, g.y, g.size
	}
	if start < len(glyphs) {
		rows = append(rows, glyphs[start:len(glyphs):len(glyphs)])
	}
	rows = attachScripts(rows)
	for _, r := range rows {
		slices.SortStableFunc(r, func(a, b glyph) int { return cmp.Compare(a.x, b.x) })
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
	type ext struct{ x0, x1, size float64 }
	extent := func(r []glyph) ext {
		e := ext{math.Inf(1), math.Inf(-1), 0}
		for _, g := range r {
			e = ext{math.Min(e.x0, g.x), math.Max(e.x1, g.x+g.w), math.Max(e.size, g.size)}
		}
		return e
	}
	exts := make([]ext, len(rows))
	for i, r := range rows {
		exts[i] = extent(r)
	}
	out := rows[:0:0]
	var outExt []ext
	for i := 0; i < len(rows); i++ {
		r, e := rows[i], exts[i]
		into := func(t ext, raise float64) bool {
			return e.size < 0.85*t.size && raise > 0 && e.x0 >= t.x0-t.size && e.x1 <= t.x1+t.size
		}
		merge := func(a, b ext) ext {
			return ext{math.Min(a.x0, b.x0), math.Max(a.x1, b.x1), math.Max(a.size, b.size)}
		}
		// rows run top to bottom: a superscript sits just above the next
		// row's baseline, a subscript just below the previous row's.
		if i+1 < len(rows) && into(exts[i+1], r[0].y-rows[i+1][0].y) && r[0].y-rows[i+1][0].y <= 0.5*rows[i+1][0].size {
			rows[i+1] = append(rows[i+1], scriptDigits(r, superDigits)...)
			exts[i+1] = merge(exts[i+1], e)
			continue
		}
		if n := len(out); n > 0 && into(outExt[n-1], out[n-1][0].y-r[0].y) && out[n-1][0].y-r[0].y <= 0.35*out[n-1][0].size {
			out[n-1] = append(out[n-1], scriptDigits(r, subDigits)...)
			outExt[n-1] = merge(outExt[n-1], e)
			continue
		}
		out = append(out, r)
		outExt = append(outExt, e)
	}
	return out
}

func isSpaceText(s string) bool {
	if len(s) == 1 {
		return s[0] == ' ' || s[0] >= '\t' && s[0] <= '\r'
	}
	return strings.TrimFunc(s, unicode.IsSpace) == "" || s == "\u00a0"
}

// segBuilder accumulates one segment.
type segBuilder struct {
	b           strings.Builder
	words       []word
	links       []span
	x0, x1      float64
	sizes       []sizeCount // runes per font size (rounded to half points)
	runes, bold int
}

// sizeCount counts the runes set in one size, and where the first sat.
type sizeCount struct {
	size, y float64
	n       int
}

func (sb *segBuilder) add(g glyph, end float64) {
	if n := len(sb.words); n == 0 || sb.b.Len() > 0 && strings.HasSuffix(sb.b.String(), " ") {
		sb.words = append(sb.words, word{off: sb.b.Len(), x0: g.x})
	}
	sb.words[len(sb.words)-1].x1 = end
	if g.link != "" {
		start := sb.b.Len()
		// A link goes on across the space between two of its words.
		if n := len(sb.links); n > 0 && sb.links[n-1].href == g.link && sb.links[n-1].end >= start-1 {
			sb.links[n-1].end = start + len(g.text)
		} else {
			sb.links = append(sb.links, span{start, start + len(g.text), g.link})
		}
	}
	sb.b.WriteString(g.text)
	n := utf8.RuneCountInString(g.text)
	sb.runes += n
	if g.bold {
		sb.bold += n
	}
	k := math.Round(g.size*2) / 2
	for i := range sb.sizes {
		if sb.sizes[i].size == k {
			sb.sizes[i].n += n
			return
		}
	}
	sb.sizes = append(sb.sizes, sizeCount{k, g.y, n})
}

func (sb *segBuilder) segment() *segment {
	size, y, best := 0.0, 0.0, -1
	for _, c := range sb.sizes {
		if c.n > best || c.n == best && c.size > size {
			size, y, best = c.size, c.y, c.n
		}
	}
	return &segment{
		x0: sb.x0, x1: sb.x1, y: y, size: size,
		text:  sb.b.String(),
		words: sb.words,
		links: sb.links,
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
		wordStart := true
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
			} else {
				wordStart = false
			}
		}
		if wordStart {
			// An accent that starts a word has no letter to go on: it is
			// a spacing character (TeX fonts draw the quote ` so).
			g.text = spacingMark(g.text)
		}
		if cur == nil {
			cur = &segBuilder{x0: g.x}
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
			n.links = append(s.links, shiftSpans(n.links, len(s.text)+1)...)
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
		filled, linked := 0, false
		for _, row := range cells {
			var texts []string
			var links [][]span
			for _, cell := range row {
				s, l := cellText(cell)
				if s != "" {
					filled++
				}
				texts = append(texts, s)
				links = append(links, l)
				linked = linked || len(l) > 0
			}
			t.rows = append(t.rows, texts)
			t.links = append(t.links, links)
		}
		if filled < 2 {
			continue
		}
		if !linked {
			t.links = nil
		}
		t.rows, t.links = pruneEmpty(t.rows, t.links)
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
func cellText(glyphs []glyph) (string, []span) {
	var text string
	var links []span
	for _, row := range glyphRows(glyphs) {
		var line string
		var lineLinks []span
		for _, s := range splitRow(row) {
			line, lineLinks = cellJoin(line, lineLinks, s.text, s.links)
		}
		text, links = cellLine(text, links, line, lineLinks)
	}
	return text, links
}

// pruneEmpty drops rows and columns that hold no text, from the texts and
// from the links shaped like them (if any).
func pruneEmpty(rows [][]string, links [][][]span) ([][]string, [][][]span) {
	var keepRows [][]string
	var keepLinks [][][]span
	width := 0
	for i, r := range rows {
		if strings.Join(r, "") != "" {
			keepRows = append(keepRows, r)
			if links != nil {
				keepLinks = append(keepLinks, links[i])
			}
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
	var outLinks [][][]span
	if links != nil {
		outLinks = make([][][]span, len(keepRows))
	}
	for i, r := range keepRows {
		for _, c := range cols {
			s := ""
			var l []span
			if c < len(r) {
				s = r[c]
				if links != nil && c < len(keepLinks[i]) {
					l = keepLinks[i][c]
				}
			}
			out[i] = append(out[i], s)
			if links != nil {
				outLinks[i] = append(outLinks[i], l)
			}
		}
	}
	return out, outLinks
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
