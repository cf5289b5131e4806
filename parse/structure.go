package parse

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// The PDF reader (github.com/ledongthuc/pdf) trusts a file's cross-reference
// data: an object stream stored inside an object stream makes it recurse
// until the Go stack overflows (a fatal error, not a panic), a /Prev chain
// that loops makes it loop for ever, and a huge object number makes it
// allocate without bound. checkStructure reads the cross-reference chain
// itself, the way the reader will, and rejects such files before the reader
// sees them.

// maxObjects caps the object numbers a file may use.
const maxObjects = 4_000_000

var errStructure = errors.New("unsafe cross-reference structure")

type xrefEntry struct {
	typ int // 1: at offset in the file, 2: inside object stream stm
	off int
	stm int
}

// checkStructure returns an error wrapping errStructure for a file the
// reader must not be given. Files that are merely unreadable pass: the
// reader reports those itself.
func checkStructure(data []byte) error {
	i := bytes.LastIndex(data, []byte("startxref"))
	if i < 0 {
		return nil
	}
	lx := &cmapLexer{data: data, pos: i + len("startxref")}
	t, _ := lx.next()
	start, err := strconv.Atoi(t.s)
	if err != nil {
		return nil
	}
	entries := map[int]xrefEntry{}
	visited := map[int]bool{}
	queue := []int{start}
	for len(queue) > 0 {
		off := queue[0]
		queue = queue[1:]
		if visited[off] {
			return fmt.Errorf("%w: cross-reference sections form a loop", errStructure)
		}
		visited[off] = true
		if len(visited) > 1000 {
			return fmt.Errorf("%w: too many cross-reference sections", errStructure)
		}
		if off < 0 || off >= len(data) {
			return nil
		}
		next, err := readXrefSection(data, off, entries)
		if err != nil {
			return err
		}
		queue = append(queue, next...)
	}
	// Object streams must live directly in the file, with a length that does
	// not itself need an object stream, and /Extends chains must end.
	checked := map[int]bool{}
	for _, e := range entries {
		if e.typ != 2 || checked[e.stm] {
			continue
		}
		checked[e.stm] = true
		seen := map[int]bool{}
		for s := e.stm; s >= 0; {
			if seen[s] {
				return fmt.Errorf("%w: object stream %d extends itself", errStructure, s)
			}
			seen[s] = true
			c, ok := entries[s]
			if !ok {
				break // the reader fails cleanly on a missing stream
			}
			if c.typ == 2 {
				return fmt.Errorf("%w: object stream %d is inside object stream %d", errStructure, s, c.stm)
			}
			d, ok := readObjectDict(data, c.off)
			if !ok {
				break
			}
			if r, ok := d["Length"].(objRef); ok && entries[int(r)].typ == 2 {
				return fmt.Errorf("%w: length of object stream %d is inside an object stream", errStructure, s)
			}
			s = -1
			if r, ok := d["Extends"].(objRef); ok {
				s = int(r)
			}
		}
	}
	return nil
}

// readXrefSection records the entries of the table or stream at off and
// returns the offsets of earlier sections it points to.
func readXrefSection(data []byte, off int, entries map[int]xrefEntry) ([]int, error) {
	lx := &cmapLexer{data: data, pos: off}
	save := lx.pos
	if t, _ := lx.next(); t.kind == tokKeyword && t.s == "xref" {
		for {
			t, ok := lx.next()
			if !ok || t.kind == tokKeyword && t.s == "trailer" {
				break
			}
			first, err1 := strconv.Atoi(t.s)
			t2, _ := lx.next()
			n, err2 := strconv.Atoi(t2.s)
			if err1 != nil || err2 != nil {
				return nil, nil // malformed: the reader rejects it
			}
			if first < 0 || n < 0 || first+n > maxObjects {
				return nil, fmt.Errorf("%w: object numbers up to %d", errStructure, first+n)
			}
			for k := 0; k < n; k++ {
				o, _ := lx.next()
				lx.next()
				kind, _ := lx.next()
				if kind.s == "n" {
					v, _ := strconv.Atoi(o.s)
					if _, dup := entries[first+k]; !dup {
						entries[first+k] = xrefEntry{typ: 1, off: v}
					}
				}
			}
		}
		trailer, ok := readDict(lx, 0)
		if !ok {
			return nil, nil
		}
		return sectionLinks(trailer)
	}
	lx.pos = save
	d, ok := readObjectDict(data, off)
	if !ok {
		return nil, nil
	}
	if err := checkSize(d); err != nil {
		return nil, err
	}
	var w []int
	if ws, ok := d["W"].([]any); ok {
		for _, x := range ws {
			n, _ := x.(int)
			if n < 0 || n > 8 {
				return nil, fmt.Errorf("%w: field width %d", errStructure, n)
			}
			w = append(w, n)
		}
	}
	index := []int{0, 0}
	if size, ok := d["Size"].(int); ok {
		index[1] = size
	}
	if ix, ok := d["Index"].([]any); ok {
		index = index[:0]
		for _, x := range ix {
			n, _ := x.(int)
			index = append(index, n)
		}
	}
	for k := 0; k+1 < len(index); k += 2 {
		if index[k] < 0 || index[k+1] < 0 || index[k]+index[k+1] > maxObjects {
			return nil, fmt.Errorf("%w: object numbers up to %d", errStructure, index[k]+index[k+1])
		}
	}
	if len(w) >= 3 {
		body, ok := streamBody(data, off, d)
		if ok {
			recordXrefStream(body, w, index, entries)
		}
	}
	return sectionLinks(d)
}

func checkSize(d map[string]any) error {
	if size, ok := d["Size"].(int); ok && (size < 0 || size > maxObjects) {
		return fmt.Errorf("%w: /Size %d", errStructure, size)
	}
	return nil
}

func sectionLinks(d map[string]any) ([]int, error) {
	if err := checkSize(d); err != nil {
		return nil, err
	}
	var next []int
	for _, k := range []string{"Prev", "XRefStm"} {
		if n, ok := d[k].(int); ok {
			next = append(next, n)
		}
	}
	return next, nil
}

// streamBody returns the decoded data of the stream object at off, for the
// plain and Flate (with PNG Up prediction) encodings xref streams use.
func streamBody(data []byte, off int, d map[string]any) ([]byte, bool) {
	n, ok := d["Length"].(int)
	i := bytes.Index(data[off:min(len(data), off+1<<16)], []byte("stream"))
	if !ok || i < 0 {
		return nil, false
	}
	p := off + i + len("stream")
	if p < len(data) && data[p] == '\r' {
		p++
	}
	if p < len(data) && data[p] == '\n' {
		p++
	}
	if n < 0 || p+n > len(data) {
		return nil, false
	}
	raw := data[p : p+n]
	switch d["Filter"] {
	case nil:
		return raw, true
	case "/FlateDecode":
	default:
		return nil, false
	}
	zr, err := zlib.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, false
	}
	body, _ := io.ReadAll(io.LimitReader(zr, maxStreamBytes))
	parms, _ := d["DecodeParms"].(map[string]any)
	if pred, _ := parms["Predictor"].(int); pred >= 10 {
		cols, _ := parms["Columns"].(int)
		if cols <= 0 || cols > 64 {
			return nil, false
		}
		var out []byte
		prev := make([]byte, cols)
		for r := 0; r+cols+1 <= len(body); r += cols + 1 {
			if body[r] != 2 { // only PNG Up, as the reader supports
				return nil, false
			}
			for c := 0; c < cols; c++ {
				prev[c] += body[r+1+c]
			}
			out = append(out, prev...)
		}
		body = out
	}
	return body, true
}

func recordXrefStream(body []byte, w, index []int, entries map[int]xrefEntry) {
	width := w[0] + w[1] + w[2]
	if width == 0 {
		return
	}
	field := func(b []byte) int {
		v := 0
		for _, c := range b {
			v = v<<8 | int(c)
		}
		return v
	}
	pos := 0
	for k := 0; k+1 < len(index); k += 2 {
		for j := 0; j < index[k+1] && pos+width <= len(body); j++ {
			e := body[pos : pos+width]
			pos += width
			typ := 1
			if w[0] > 0 {
				typ = field(e[:w[0]])
			}
			a := field(e[w[0] : w[0]+w[1]])
			num := index[k] + j
			if _, dup := entries[num]; dup {
				continue
			}
			switch typ {
			case 1:
				entries[num] = xrefEntry{typ: 1, off: a}
			case 2:
				entries[num] = xrefEntry{typ: 2, stm: a}
			}
		}
	}
}

// objRef is an indirect reference's object number.
type objRef int

// readObjectDict reads the dictionary of "N G obj << ... >>" at off.
func readObjectDict(data []byte, off int) (map[string]any, bool) {
	if off < 0 || off >= len(data) {
		return nil, false
	}
	lx := &cmapLexer{data: data, pos: off}
	for k := 0; k < 3; k++ { // N G obj
		if _, ok := lx.next(); !ok {
			return nil, false
		}
	}
	return readDict(lx, 0)
}

// readDict reads a dictionary whose "<<" comes next.
func readDict(lx *cmapLexer, depth int) (map[string]any, bool) {
	t, ok := lx.next()
	if !ok || t.s != "<<" || depth > 16 {
		return nil, false
	}
	d := map[string]any{}
	for n := 0; n < 10_000; n++ {
		k, ok := lx.next()
		if !ok {
			return nil, false
		}
		if k.s == ">>" {
			return d, true
		}
		if k.kind != tokOther || len(k.s) < 2 || k.s[0] != '/' {
			return nil, false
		}
		v, ok := readValue(lx, depth)
		if !ok {
			return nil, false
		}
		d[k.s[1:]] = v
	}
	return nil, false
}

// readValue reads one object: a number, reference, name, string, array or
// dictionary.
func readValue(lx *cmapLexer, depth int) (any, bool) {
	save := lx.pos
	t, ok := lx.next()
	if !ok {
		return nil, false
	}
	switch {
	case t.s == "<<":
		lx.pos = save
		return readDict(lx, depth+1)
	case t.kind == tokArrayOpen:
		var a []any
		for n := 0; n < 100_000; n++ {
			save := lx.pos
			e, ok := lx.next()
			if !ok {
				return nil, false
			}
			if e.kind == tokArrayClose {
				return a, true
			}
			lx.pos = save
			v, ok := readValue(lx, depth+1)
			if !ok || depth > 16 {
				return nil, false
			}
			a = append(a, v)
		}
		return nil, false
	case t.kind == tokString:
		return t.s, true
	case t.kind == tokOther && len(t.s) > 0 && t.s[0] == '/':
		return t.s, true
	case t.kind == tokOther:
		n, err := strconv.Atoi(t.s)
		if err != nil {
			f, _ := strconv.ParseFloat(t.s, 64)
			return f, true
		}
		// "N G R" is a reference.
		after := lx.pos
		g, ok1 := lx.next()
		r, ok2 := lx.next()
		if ok1 && ok2 && g.kind == tokOther && r.kind == tokKeyword && r.s == "R" {
			if _, err := strconv.Atoi(g.s); err == nil {
				return objRef(n), true
			}
		}
		lx.pos = after
		return n, true
	}
	return t.s, true // true, false, null
}
