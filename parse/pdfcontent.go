package parse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/ledongthuc/pdf"
)

// This file walks a page's content stream and records every glyph with its
// position, size and font, plus the straight lines that may be table rulings.
//
// The library (github.com/ledongthuc/pdf) tokenises the stream and resolves
// fonts and resources; its own Page.Content is not used because it assumes
// one byte per character code (so composite fonts, as Chromium and Word emit,
// get no advance widths), ignores word spacing and form XObjects, prefers
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
	truncated bool
	ops       int
	rotated   int // glyphs skipped because they are not upright
	garbled   int
	decoded   int64 // content bytes interpreted, forms included
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
	m map[string]*pdfFont
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
	n, err := streamSize(strm)
	if err != nil {
		panic(err)
	}
	if w.decoded += n; w.decoded > maxPageBytes {
		w.truncated = true
		return
	}
	g := gstate{ctm: ctm, th: 1}
	var stack []gstate
	var tm, tlm matrix
	fonts := map[string]*pdfFont{}

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
			if text != "" && len(w.glyphs) < maxGlyphsPerPage {
				size := math.Hypot(trm[2], trm[3]) * f.sizeScale
				switch {
				case trm[0] <= 0 || math.Abs(trm[1]) > 0.1*trm[0] || trm[3] <= 0:
					w.rotated++
				case size < 0.5 || size > 2000:
					// Invisible or absurd: nothing a reader would see.
				default:
					w.glyphs = append(w.glyphs, glyph{
						x: trm[4], y: trm[5], w: w0 * trm[0], size: size, text: text,
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
	flushPath := func(stroke, fill bool) {
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

	pdf.Interpret(strm, func(stk *pdf.Stack, op string) {
		args := popAll(stk)
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
		num := func(i int) float64 {
			if i < len(args) {
				return args[i].Float64()
			}
			return 0
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
				name := args[0].Name()
				f, ok := fonts[name]
				if !ok {
					f = w.fonts.get(res.Key("Font").Key(name))
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
				showText(args[len(args)-1].RawString())
			}
		case "TJ":
			if len(args) == 0 {
				return
			}
			a := args[0]
			for i := 0; i < a.Len(); i++ {
				e := a.Index(i)
				if e.Kind() == pdf.String {
					showText(e.RawString())
				} else {
					tm = translate(-e.Float64()/1000*g.tfs*g.th, 0).mul(tm)
				}
			}
		case "Do":
			if len(args) == 0 {
				return
			}
			x := res.Key("XObject").Key(args[0].Name())
			switch x.Key("Subtype").Name() {
			case "Image":
				w.images++
			case "Form":
				if depth >= maxFormDepth {
					return
				}
				if w.forms++; w.forms > maxPageForms {
					w.truncated = true
					return
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
		case "BI", "ID", "EI":
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
			flushPath(true, false)
		case "f", "F", "f*":
			flushPath(false, true)
		case "B", "B*", "b", "b*":
			flushPath(true, true)
		case "n":
			resetPath()
		}
		if len(path) > 10_000 {
			resetPath()
		}
	})
}

// dropControl removes control characters, which some fonts map codes to and
// which have no place in HTML or Markdown.
func dropControl(r rune) rune {
	if r < 0x20 || r >= 0x7f && r < 0xa0 {
		return -1
	}
	return r
}

// checkStream makes sure a stream decodes within maxStreamBytes before the
// library tokenises it, so that a compression bomb cannot exhaust memory.
func checkStream(v pdf.Value) error {
	_, err := streamSize(v)
	return err
}

// streamSize returns the decoded size of a stream or array of streams.
func streamSize(v pdf.Value) (int64, error) {
	if v.Kind() == pdf.Array {
		var total int64
		for i := 0; i < v.Len() && i < 10_000; i++ {
			n, err := streamSize(v.Index(i))
			total += n
			if err != nil {
				return total, err
			}
			if total > maxStreamBytes {
				return total, errStreamTooLarge
			}
		}
		return total, nil
	}
	return readStreamTo(io.Discard, v, maxStreamBytes)
}

// readStream returns the decoded data of a stream of at most limit bytes.
func readStream(v pdf.Value, limit int64) ([]byte, error) {
	var b strings.Builder
	if _, err := readStreamTo(&b, v, limit); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
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
