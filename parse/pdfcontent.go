package parse

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
)

// This file walks a page's content stream and records every glyph with its
// position, size and font, plus the straight lines that may be table rulings.
//
// The library (github.com/ledongthuc/pdf) decodes the stream and resolves
// fonts and resources; the stream is tokenised here (contentLexer, below).
// The library's own Page.Content is not used because it assumes one byte
// per character code (so composite fonts, as Chromium and Word emit, get no
// advance widths), ignores word spacing and form XObjects, prefers
// /Encoding over /ToUnicode, and cannot be cancelled.

// matrix is a PDF transformation matrix [a b c d e f].
type matrix [6]float64

var identity = matrix{1, 0, 0, 1, 0, 0}

// mul returns m×n: apply m, then n.
func (m matrix) mul(n matrix) matrix {
	return matrix{
		m[0]*n[0] + m[1]*n[2],
		m[0]*n[1] + m[1]*n[3],
		m[2]*n[0] + m[3]*n[2],
		m[2]*n[1] + m[3]*n[3],
		m[4]*n[0] + m[5]*n[2] + n[4],
		m[4]*n[1] + m[5]*n[3] + n[5],
	}
}

func (m matrix) apply(x, y float64) (float64, float64) {
	return x*m[0] + y*m[2] + m[4], x*m[1] + y*m[3] + m[5]
}

func translate(x, y float64) matrix { return matrix{1, 0, 0, 1, x, y} }

// glyph is one character drawn on a page, in page space with y up.
type glyph struct {
	x, y float64 // origin on the baseline
	w    float64 // advance width
	size float64 // font size in page space
	text string
	bold bool
	link string // the URI of the link annotation the glyph lies in
}

// ruling is an axis-parallel line segment that may delimit table cells.
type ruling struct {
	x0, y0, x1, y1 float64
}

func (r ruling) horizontal() bool { return math.Abs(r.y1-r.y0) < 1 }
func (r ruling) vertical() bool   { return math.Abs(r.x1-r.x0) < 1 }

// errStop aborts a walk when the context ends.
type errStop struct{ err error }

func (e errStop) Error() string { return e.err.Error() }

// gstate is the part of the graphics state the walker tracks.
type gstate struct {
	ctm                     matrix
	tc, tw, th, tl, tfs, ts float64
	mode                    int
	font                    *pdfFont
}

// walker collects the glyphs and rulings of one page.
type walker struct {
	ctx       context.Context
	fonts     *fontCache
	glyphs    []glyph
	rulings   []ruling
	dots      []rect // small filled shapes: bullets drawn as graphics
	images    int
	scan      pdf.Value // the image XObject drawn largest, for OCR
	scanArea  float64
	truncated bool
	ops       int
	rotated   int // glyphs skipped because they are not upright
	garbled   int
	decoded   int64 // content bytes interpreted, forms included
	live      int64 // content bytes held by the streams being run
	forms     int   // form XObjects drawn
}

// Caps per page. Forms can draw forms, so a small file can ask for an
// exponential amount of work; these keep it linear.
const (
	maxRulings   = 20_000
	maxPageOps   = 5_000_000
	maxPageBytes = 4 * maxStreamBytes
	maxPageForms = 2_000
)

// fontCache shares parsed fonts between the pages of one document. Fonts are
// keyed by their dictionary's text, which names the embedded streams by
// object number, so identical keys mean identical fonts.
type fontCache struct {
	m     map[string]*pdfFont
	byRef map[uint64]*pdfFont // by the object a resource dictionary names
}

// lookup returns the font that the resource dictionary fonts names name,
// resolving and loading it only the first time its object is named.
func (c *fontCache) lookup(fonts pdf.Value, name string) *pdfFont {
	id, ok := refID(fonts, name)
	if ok {
		if f, ok := c.byRef[id]; ok {
			return f
		}
	}
	f := c.get(fonts.Key(name))
	if ok && len(c.byRef) < 10_000 {
		if c.byRef == nil {
			c.byRef = map[uint64]*pdfFont{}
		}
		c.byRef[id] = f
	}
	return f
}

func (c *fontCache) get(v pdf.Value) *pdfFont {
	key := v.String()
	if f, ok := c.m[key]; ok {
		return f
	}
	f := loadFontSafe(v)
	if len(c.m) < 10_000 {
		c.m[key] = f
	}
	return f
}

func loadFontSafe(v pdf.Value) (f *pdfFont) {
	defer func() {
		if recover() != nil {
			f = &pdfFont{codeBytes: 1, widthScale: 0.001, sizeScale: 1, fallbackAdv: 0.5}
		}
	}()
	return loadFont(v)
}

// run interprets one content stream with the given resources.
func (w *walker) run(strm, res pdf.Value, ctm matrix, depth int) {
	// A stream is held while the forms it draws run: together they may
	// hold maxStreamBytes.
	data, err := readContent(strm, min(maxStreamBytes-w.live, maxPageBytes-w.decoded))
	if err != nil {
		if depth > 0 {
			w.truncated = true // a form: the rest of the page still counts
			return
		}
		panic(err)
	}
	w.decoded += int64(len(data))
	w.live += int64(len(data))
	defer func() { w.live -= int64(len(data)) }()
	g := gstate{ctm: ctm, th: 1}
	var stack []gstate
	var tm, tlm matrix
	fonts := map[string]*pdfFont{}
	var fontDict pdf.Value // res's /Font, resolved on first use
	fontDictRead := false

	// Path state for rulings.
	var path [][][2]float64 // subpaths of points in page space
	var cur [2]float64
	box := rect{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)} // of the whole path
	extend := func(x, y float64) {
		box = rect{math.Min(box.x0, x), math.Min(box.y0, y), math.Max(box.x1, x), math.Max(box.y1, y)}
	}

	showText := func(raw string) {
		f := g.font
		if f == nil {
			f = &pdfFont{codeBytes: 1, widthScale: 0.001, sizeScale: 1, fallbackAdv: 0.5}
		}
		for len(raw) > 0 {
			n := f.nextCode(raw)
			code := raw[:n]
			raw = raw[n:]
			w0 := f.width(code)
			trm := matrix{g.tfs * g.th, 0, 0, g.tfs, 0, g.ts}.mul(tm).mul(g.ctm)
			text := f.text(code)
			if isGarbled(text) {
				w.garbled++
				text = strings.Map(dropControl, text)
			}
			if w0 > 0 {
				text = spacingMark(text)
			}
			if text != "" && len(w.glyphs) < maxGlyphsPerPage {
				size := math.Hypot(trm[2], trm[3]) * f.sizeScale
				switch {
				case trm[0] <= 0 || math.Abs(trm[1]) > 0.1*trm[0] || trm[3] <= 0:
					w.rotated++
				case size < 0.5 || size > 2000:
					// Invisible or absurd: nothing a reader would see.
				default:
					x := trm[4]
					if w0 == 0 && isLoneMark(text) {
						// A combining accent without advance is drawn to
						// the left of where it stands, over the letter
						// before: sort it by its ink.
						x -= 0.2 * size
					}
					w.glyphs = append(w.glyphs, glyph{
						x: x, y: trm[5], w: w0 * trm[0], size: size, text: text,
						bold: f.bold || g.mode == 2,
					})
				}
			} else if text != "" {
				w.truncated = true
			}
			tx := w0*g.tfs + g.tc
			if n == 1 && code[0] == ' ' {
				tx += g.tw
			}
			tm = translate(tx*g.th, 0).mul(tm)
		}
	}

	resetPath := func() {
		path = path[:0]
		box = rect{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}
	}
	// How a path is painted: stroked, filled or both.
	const strokePaint, fillPaint = 1, 2
	flushPath := func(paint int) {
		stroke, fill := paint&strokePaint != 0, paint&fillPaint != 0
		if bw, bh := box.x1-box.x0, box.y1-box.y0; fill && bw >= 1.5 && bh >= 1.5 && bw <= 10 && bh <= 10 && bw <= 2*bh && bh <= 2*bw && len(w.dots) < 1000 {
			w.dots = append(w.dots, box)
			resetPath()
			return
		}
		for _, sp := range path {
			if len(sp) < 2 || len(w.rulings) >= maxRulings {
				continue
			}
			minX, minY, maxX, maxY := sp[0][0], sp[0][1], sp[0][0], sp[0][1]
			for _, p := range sp[1:] {
				minX, maxX = math.Min(minX, p[0]), math.Max(maxX, p[0])
				minY, maxY = math.Min(minY, p[1]), math.Max(maxY, p[1])
			}
			switch {
			case maxY-minY <= 3 && maxX-minX >= 5:
				// A thin bar or a horizontal stroke.
				y := (minY + maxY) / 2
				w.rulings = append(w.rulings, ruling{minX, y, maxX, y})
			case maxX-minX <= 3 && maxY-minY >= 5:
				x := (minX + maxX) / 2
				w.rulings = append(w.rulings, ruling{x, minY, x, maxY})
			case stroke:
				for i := 1; i < len(sp); i++ {
					r := ruling{sp[i-1][0], sp[i-1][1], sp[i][0], sp[i][1]}
					if (r.horizontal() || r.vertical()) && math.Hypot(r.x1-r.x0, r.y1-r.y0) >= 5 {
						w.rulings = append(w.rulings, r)
					}
				}
			}
		}
		resetPath()
	}

	lx := &contentLexer{cmapLexer: cmapLexer{data: data}, budget: maxArrayItems}
	var args []operand
	num := func(i int) float64 {
		if i < len(args) {
			return args[i].num
		}
		return 0
	}
	for {
		o, op, ok := lx.next(0)
		if !ok {
			break
		}
		if op == "" {
			if len(args) < maxOperands {
				args = append(args, o)
			}
			continue
		}
		w.ops++
		if w.ops > maxPageOps {
			w.truncated = true
			return
		}
		if w.ops&1023 == 0 {
			if err := w.ctx.Err(); err != nil {
				panic(errStop{err})
			}
		}
		mat := func() matrix {
			return matrix{num(0), num(1), num(2), num(3), num(4), num(5)}
		}
		switch op {
		case "q":
			if len(stack) < 256 {
				stack = append(stack, g)
			}
		case "Q":
			if n := len(stack); n > 0 {
				g = stack[n-1]
				stack = stack[:n-1]
			}
		case "cm":
			if len(args) == 6 {
				g.ctm = mat().mul(g.ctm)
			}
		case "BT":
			tm, tlm = identity, identity
		case "Tc":
			g.tc = num(0)
		case "Tw":
			g.tw = num(0)
		case "Tz":
			g.th = num(0) / 100
		case "TL":
			g.tl = num(0)
		case "Ts":
			g.ts = num(0)
		case "Tr":
			g.mode = int(num(0))
		case "Tf":
			if len(args) == 2 {
				name := args[0].s
				f, ok := fonts[name]
				if !ok {
					if !fontDictRead {
						fontDict, fontDictRead = res.Key("Font"), true
					}
					f = w.fonts.lookup(fontDict, name)
					fonts[name] = f
				}
				g.font = f
				g.tfs = num(1)
			}
		case "Td", "TD":
			if op == "TD" {
				g.tl = -num(1)
			}
			tlm = translate(num(0), num(1)).mul(tlm)
			tm = tlm
		case "Tm":
			if len(args) == 6 {
				tlm = mat()
				tm = tlm
			}
		case "T*":
			tlm = translate(0, -g.tl).mul(tlm)
			tm = tlm
		case "Tj", "'", "\"":
			if op == "\"" && len(args) == 3 {
				g.tw, g.tc = num(0), num(1)
				args = args[2:]
			}
			if op != "Tj" {
				tlm = translate(0, -g.tl).mul(tlm)
				tm = tlm
			}
			if len(args) > 0 {
				showText(args[len(args)-1].s)
			}
		case "TJ":
			if len(args) == 0 {
				break
			}
			for _, e := range args[0].arr {
				switch e.kind {
				case opdString:
					showText(e.s)
				case opdNumber:
					tm = translate(-e.num/1000*g.tfs*g.th, 0).mul(tm)
				}
			}
		case "Do":
			if len(args) == 0 {
				break
			}
			x := res.Key("XObject").Key(args[0].s)
			switch x.Key("Subtype").Name() {
			case "Image":
				w.images++
				// The image fills the unit square that the CTM maps.
				if a := math.Abs(g.ctm[0]*g.ctm[3] - g.ctm[1]*g.ctm[2]); a > w.scanArea {
					w.scan, w.scanArea = x, a
				}
			case "Form":
				if depth >= maxFormDepth {
					break
				}
				if w.forms++; w.forms > maxPageForms {
					w.truncated = true
					break
				}
				m := identity
				if mv := x.Key("Matrix"); mv.Len() == 6 {
					for i := range m {
						m[i] = mv.Index(i).Float64()
					}
				}
				xres := x.Key("Resources")
				if xres.IsNull() {
					xres = res
				}
				w.run(x, xres, m.mul(g.ctm), depth+1)
			}
		case "BI":
			w.images++
		case "m":
			x, y := g.ctm.apply(num(0), num(1))
			cur = [2]float64{x, y}
			extend(x, y)
			path = append(path, [][2]float64{cur})
		case "l":
			x, y := g.ctm.apply(num(0), num(1))
			cur = [2]float64{x, y}
			extend(x, y)
			if len(path) == 0 {
				path = append(path, nil)
			}
			path[len(path)-1] = append(path[len(path)-1], cur)
		case "c", "v", "y":
			// Curves are not rulings; end the subpath at the curve's end.
			for i := 0; i+1 < len(args); i += 2 {
				extend(g.ctm.apply(num(i), num(i+1)))
			}
			x, y := g.ctm.apply(num(len(args)-2), num(len(args)-1))
			cur = [2]float64{x, y}
			path = append(path, [][2]float64{cur})
		case "re":
			x, y, ww, hh := num(0), num(1), num(2), num(3)
			var sp [][2]float64
			for _, p := range [][2]float64{{x, y}, {x + ww, y}, {x + ww, y + hh}, {x, y + hh}, {x, y}} {
				px, py := g.ctm.apply(p[0], p[1])
				extend(px, py)
				sp = append(sp, [2]float64{px, py})
			}
			path = append(path, sp)
		case "h":
			if n := len(path); n > 0 && len(path[n-1]) > 0 {
				path[n-1] = append(path[n-1], path[n-1][0])
			}
		case "S", "s":
			flushPath(strokePaint)
		case "f", "F", "f*":
			flushPath(fillPaint)
		case "B", "B*", "b", "b*":
			flushPath(strokePaint | fillPaint)
		case "n":
			resetPath()
		}
		if len(path) > 10_000 {
			resetPath()
		}
		args, lx.budget = args[:0], maxArrayItems
	}
}

// spacingMarks are the spacing forms of combining accents.
var spacingMarks = map[rune]string{
	'\u0300': "`", '\u0301': "´", '\u0302': "^", '\u0303': "~", '\u0304': "¯",
	'\u0306': "˘", '\u0307': "˙", '\u0308': "¨", '\u030A': "˚", '\u030B': "˝",
	'\u030C': "ˇ", '\u0327': "¸", '\u0328': "˛",
}

// spacingMark turns a glyph that is a lone combining accent but has an
// advance of its own into the accent's spacing form: such a glyph stands
// beside the letters, not over one (TeX fonts draw the opening quote `
// with their grave accent), and as a combining mark it would glue itself
// onto the next letter.
func spacingMark(text string) string {
	if isLoneMark(text) {
		r, _ := utf8.DecodeRuneInString(text)
		if s, ok := spacingMarks[r]; ok {
			return s
		}
	}
	return text
}

// isLoneMark reports whether text is one combining mark.
func isLoneMark(text string) bool {
	r, n := utf8.DecodeRuneInString(text)
	return n == len(text) && n > 1 && unicode.Is(unicode.Mn, r)
}

// dropControl removes control characters, which some fonts map codes to and
// which have no place in HTML or Markdown.
func dropControl(r rune) rune {
	if r < 0x20 || r >= 0x7f && r < 0xa0 {
		return -1
	}
	return r
}

// readContent returns the decoded bytes of a content stream, or of an
// array of them joined by line ends, at most limit in all.
func readContent(v pdf.Value, limit int64) ([]byte, error) {
	if limit <= 0 {
		return nil, errStreamTooLarge
	}
	if v.Kind() != pdf.Array {
		return readStream(v, limit)
	}
	var out []byte
	for i := 0; i < v.Len() && i < 10_000; i++ {
		b, err := readStream(v.Index(i), limit-int64(len(out)))
		if errors.Is(err, errStreamTooLarge) {
			return nil, err
		}
		if err != nil {
			continue // one broken part does not spoil the others
		}
		out = append(append(out, b...), '\n')
	}
	return out, nil
}

// readStream returns the decoded data of a stream of at most limit bytes.
func readStream(v pdf.Value, limit int64) ([]byte, error) {
	var b bytes.Buffer
	if _, err := readStreamTo(&b, v, limit); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

var errStreamTooLarge = errors.New("stream too large")

func readStreamTo(dst io.Writer, v pdf.Value, limit int64) (n int64, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("reading stream: %v", r)
		}
	}()
	if v.Kind() != pdf.Stream {
		return 0, errors.New("not a stream")
	}
	rc := v.Reader()
	defer rc.Close()
	// Read errors (a truncated deflate stream, say) are ignored: what was
	// decoded up to that point is still worth reading.
	n, _ = io.Copy(dst, io.LimitReader(rc, limit+1))
	if n > limit {
		return n, errStreamTooLarge
	}
	return n, nil
}

// The content-stream lexer. The library's (pdf.Interpret) reads its stream
// byte by byte through an interface and boxes every operand; this one reads
// the decoded stream in memory, which also means a stream is decoded once.

// operand is one operand of a content-stream operator.
type operand struct {
	kind operandKind
	num  float64
	s    string    // a name (without the slash) or a string's bytes
	arr  []operand // an array's elements
}

type operandKind uint8

const (
	opdOther operandKind = iota // boolean, null, dictionary
	opdNumber
	opdName
	opdString
	opdArray
)

// maxOperands caps the operands kept for one operator; maxArrayItems and
// maxArrayDepth cap arrays.
const (
	maxOperands   = 64
	maxArrayItems = 1 << 16
	maxArrayDepth = 16
)

// contentLexer splits a content stream into operands and operators.
type contentLexer struct {
	cmapLexer
	budget int // array elements that may still be kept for this operator
}

// next returns the next operand, or with op set the next operator. ok is
// false at the end of the stream.
func (lx *contentLexer) next(depth int) (o operand, op string, ok bool) {
	d := lx.data
	for lx.pos < len(d) {
		c := d[lx.pos]
		switch {
		case isPDFSpace(c):
			lx.pos++
		case c == '%':
			for lx.pos < len(d) && d[lx.pos] != '\n' && d[lx.pos] != '\r' {
				lx.pos++
			}
		case c == '/':
			start := lx.pos + 1
			lx.pos++
			for lx.pos < len(d) && !isPDFSpace(d[lx.pos]) && !isPDFDelim(d[lx.pos]) {
				lx.pos++
			}
			return operand{kind: opdName, s: nameText(d[start:lx.pos])}, "", true
		case c == '(':
			return operand{kind: opdString, s: lx.literal().s}, "", true
		case c == '<' && lx.pos+1 < len(d) && d[lx.pos+1] == '<':
			lx.skipDict()
			return operand{}, "", true
		case c == '<':
			return operand{kind: opdString, s: lx.hex().s}, "", true
		case c == '[':
			lx.pos++
			return lx.array(depth), "", true
		case c == ']' && depth > 0:
			lx.pos++
			return operand{}, "]", true
		case c == '-' || c == '+' || c == '.' || c >= '0' && c <= '9':
			return operand{kind: opdNumber, num: lx.number()}, "", true
		case isPDFDelim(c):
			lx.pos++ // a stray ] ) > { or }
		default:
			start := lx.pos
			for lx.pos < len(d) && !isPDFSpace(d[lx.pos]) && !isPDFDelim(d[lx.pos]) {
				lx.pos++
			}
			op := operatorName(d[start:lx.pos])
			switch op {
			case "true", "false", "null", "":
				return operand{}, "", true
			case "BI":
				lx.skipInlineImage()
			}
			return operand{}, op, true
		}
	}
	return operand{}, "", false
}

// array reads the elements of an array whose [ has been read.
func (lx *contentLexer) array(depth int) operand {
	a := operand{kind: opdArray}
	for {
		if depth >= maxArrayDepth {
			// Too deep: skip to the matching bracket without keeping it.
			lx.skipTo(']')
			return a
		}
		o, op, ok := lx.next(depth + 1)
		if !ok || op == "]" {
			return a
		}
		if op != "" {
			continue // operators do not belong in arrays; drop them
		}
		if lx.budget > 0 {
			lx.budget--
			a.arr = append(a.arr, o)
		}
	}
}

// skipTo moves past the next c that is not inside a string.
func (lx *contentLexer) skipTo(c byte) {
	for lx.pos < len(lx.data) {
		switch lx.data[lx.pos] {
		case '(':
			lx.literal()
			continue
		case c:
			lx.pos++
			return
		}
		lx.pos++
	}
}

// skipDict moves past a dictionary, nested ones included.
func (lx *contentLexer) skipDict() {
	d := lx.data
	depth := 0
	for lx.pos < len(d) {
		switch {
		case d[lx.pos] == '(':
			lx.literal()
			continue
		case d[lx.pos] == '<' && lx.pos+1 < len(d) && d[lx.pos+1] == '<':
			depth++
			lx.pos += 2
			continue
		case d[lx.pos] == '>' && lx.pos+1 < len(d) && d[lx.pos+1] == '>':
			depth--
			lx.pos += 2
			if depth <= 0 {
				return
			}
			continue
		}
		lx.pos++
	}
}

// skipInlineImage moves past an inline image's dictionary and data, to
// just before its EI: the data is binary and must not be read as tokens.
func (lx *contentLexer) skipInlineImage() {
	d := lx.data
	// The dictionary runs up to the ID operator.
	for lx.pos < len(d) {
		c := d[lx.pos]
		if c == 'I' && lx.pos+1 < len(d) && d[lx.pos+1] == 'D' && lx.pos > 0 && isPDFSpace(d[lx.pos-1]) &&
			(lx.pos+2 == len(d) || isPDFSpace(d[lx.pos+2])) {
			lx.pos += 3 // ID and the one white-space byte after it
			break
		}
		if c == '(' {
			lx.literal()
			continue
		}
		lx.pos++
	}
	// The data ends at an EI between white space (or the stream's end).
	for lx.pos < len(d) {
		i := bytes.Index(d[lx.pos:], []byte("EI"))
		if i < 0 {
			lx.pos = len(d)
			return
		}
		at := lx.pos + i
		if at > 0 && isPDFSpace(d[at-1]) && (at+2 == len(d) || isPDFSpace(d[at+2]) || isPDFDelim(d[at+2])) {
			lx.pos = at + 2
			return
		}
		lx.pos = at + 2
	}
}

// number reads a number leniently, as readers do: "--5" is -5, "1.2.3" is
// 1.2, and a sign or point alone is 0.
func (lx *contentLexer) number() float64 {
	d := lx.data
	neg := false
	for lx.pos < len(d) && (d[lx.pos] == '-' || d[lx.pos] == '+') {
		neg = neg || d[lx.pos] == '-'
		lx.pos++
	}
	var v float64
	for lx.pos < len(d) && d[lx.pos] >= '0' && d[lx.pos] <= '9' {
		v = v*10 + float64(d[lx.pos]-'0')
		lx.pos++
	}
	if lx.pos < len(d) && d[lx.pos] == '.' {
		lx.pos++
		scale := 0.1
		for lx.pos < len(d) && d[lx.pos] >= '0' && d[lx.pos] <= '9' {
			v += float64(d[lx.pos]-'0') * scale
			scale /= 10
			lx.pos++
		}
	}
	// Whatever else is glued on ends the token.
	for lx.pos < len(d) && !isPDFSpace(d[lx.pos]) && !isPDFDelim(d[lx.pos]) {
		lx.pos++
	}
	if neg {
		v = -v
	}
	return v
}

// nameText decodes the #xx escapes of a name.
func nameText(b []byte) string {
	if bytes.IndexByte(b, '#') < 0 {
		return string(b)
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] == '#' && i+2 < len(b) && hexVal(b[i+1]) >= 0 && hexVal(b[i+2]) >= 0 {
			out = append(out, byte(hexVal(b[i+1])<<4|hexVal(b[i+2])))
			i += 2
			continue
		}
		out = append(out, b[i])
	}
	return string(out)
}

// operatorName returns the operators the walker handles as constants (no
// allocation), any other keyword as "?", and true, false and null as such.
func operatorName(b []byte) string {
	switch string(b) {
	case "q":
		return "q"
	case "Q":
		return "Q"
	case "cm":
		return "cm"
	case "BT":
		return "BT"
	case "ET":
		return "ET"
	case "Tc":
		return "Tc"
	case "Tw":
		return "Tw"
	case "Tz":
		return "Tz"
	case "TL":
		return "TL"
	case "Ts":
		return "Ts"
	case "Tr":
		return "Tr"
	case "Tf":
		return "Tf"
	case "Td":
		return "Td"
	case "TD":
		return "TD"
	case "Tm":
		return "Tm"
	case "T*":
		return "T*"
	case "Tj":
		return "Tj"
	case "'":
		return "'"
	case "\"":
		return "\""
	case "TJ":
		return "TJ"
	case "Do":
		return "Do"
	case "BI":
		return "BI"
	case "m":
		return "m"
	case "l":
		return "l"
	case "c":
		return "c"
	case "v":
		return "v"
	case "y":
		return "y"
	case "re":
		return "re"
	case "h":
		return "h"
	case "S":
		return "S"
	case "s":
		return "s"
	case "f":
		return "f"
	case "F":
		return "F"
	case "f*":
		return "f*"
	case "B":
		return "B"
	case "B*":
		return "B*"
	case "b":
		return "b"
	case "b*":
		return "b*"
	case "n":
		return "n"
	case "true":
		return "true"
	case "false":
		return "false"
	case "null":
		return "null"
	}
	return "?"
}
