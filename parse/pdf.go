package parse

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/ledongthuc/pdf"
)

// PDF parses PDF bytes into a Document.
//
// The PDF object model (cross-reference tables, object streams, filters,
// RC4/AES-128 decryption with an empty user password, font encodings) comes
// from github.com/ledongthuc/pdf; files it rejects are rewritten by
// github.com/pdfcpu/pdfcpu (repair.go) and tried again. Everything from glyph
// positions onwards is this package's own: the content-stream walk in
// pdfcontent.go and the layout analysis (reading order, columns, running
// headers and footers, headings, lists, tables) in layout.go and blocks.go.
//
// PDF never panics: a panic inside the library becomes ErrMalformed. It stops
// with the context's error when ctx ends, parses at most MaxPages pages, and
// caps the decoded size of every stream it reads.
func PDF(ctx context.Context, data []byte) (doc *Document, err error) {
	if len(data) > MaxInputBytes {
		return nil, fmt.Errorf("%w: %d bytes (limit %d)", ErrTooLarge, len(data), MaxInputBytes)
	}
	defer func() {
		if r := recover(); r != nil {
			doc = nil
			if s, ok := r.(errStop); ok {
				err = s.err
				return
			}
			err = fmt.Errorf("%w: %v", ErrMalformed, r)
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, err := openPDF(data)
	if err != nil {
		return nil, err
	}
	root := r.Trailer().Key("Root")
	if root.Kind() != pdf.Dict {
		return nil, fmt.Errorf("%w: no document catalog", ErrMalformed)
	}
	pageVals, total := collectPages(root.Key("Pages"), pageLimit)
	if total == 0 {
		return nil, fmt.Errorf("%w: no pages", ErrMalformed)
	}

	doc = &Document{Pages: total}
	doc.Title, doc.Author = metadata(r.Trailer().Key("Info"), root.Key("Metadata"))
	if total > len(pageVals) && len(pageVals) == pageLimit {
		doc.Warnings = append(doc.Warnings, fmt.Sprintf("only the first %d of %d pages were parsed", len(pageVals), total))
	}

	fonts := &fontCache{m: map[string]*pdfFont{}}
	pages := make([]*page, 0, len(pageVals))
	runes := 0
	for i, pv := range pageVals {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := i + 1
		p, warns, err := extractPage(ctx, pv, fonts, n)
		if err != nil {
			var stop errStop
			if errors.As(err, &stop) {
				return nil, stop.err
			}
			doc.Warnings = append(doc.Warnings, fmt.Sprintf("page %d could not be read: %v", n, err))
			p = &page{n: n}
		}
		doc.Warnings = append(doc.Warnings, warns...)
		for _, s := range p.segs {
			runes += s.runes
		}
		pages = append(pages, p)
		if runes > maxTextRunes {
			doc.Warnings = append(doc.Warnings, fmt.Sprintf("text limit reached; pages after %d were skipped", n))
			break
		}
	}

	blocks := layoutDocument(ctx, pages)
	doc.HTML, doc.Markdown = pdfBody(blocks).Render()
	return doc, nil
}

// pageLimit is MaxPages, lowered by tests.
var pageLimit = MaxPages

// openPDF opens data with the library, smoothing over header and trailer
// quirks that real-world files have and the library rejects.
func openPDF(data []byte) (*pdf.Reader, error) {
	head := data
	if len(head) > 1024 {
		head = head[:1024]
	}
	k := bytes.Index(head, []byte("%PDF-"))
	if k < 0 {
		return nil, fmt.Errorf("%w: not a PDF (no %%PDF header)", ErrMalformed)
	}
	view := data[k:]
	// The library wants "%%EOF" at the very end; some servers append junk.
	if e := bytes.LastIndex(view, []byte("%%EOF")); e >= 0 {
		view = view[:e+len("%%EOF")]
	}
	if len(view) < 32 {
		return nil, fmt.Errorf("%w: truncated", ErrMalformed)
	}
	// The library accepts only "%PDF-1.0".."%PDF-1.7" and a line end after
	// it; PDF 2.0 files and odd header lines are otherwise the same to it.
	if err := checkStructure(view); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	var ra io.ReaderAt = bytes.NewReader(view)
	if v := view[5:9]; !(v[0] == '1' && v[1] == '.' && v[2] >= '0' && v[2] <= '7' && (v[3] == '\n' || v[3] == '\r')) {
		ra = &patchedReader{data: view, patch: []byte("%PDF-1.7\n")}
	}
	r, err := newReader(ra, int64(len(view)))
	if err == nil {
		return r, nil
	}
	fixed, ferr := rewritePDF(view)
	if ferr == nil {
		if r, err2 := newReader(bytes.NewReader(fixed), int64(len(fixed))); err2 == nil {
			return r, nil
		}
	}
	if errors.Is(ferr, ErrEncrypted) {
		return nil, ferr
	}
	msg := strings.ToLower(err.Error())
	if errors.Is(err, pdf.ErrInvalidPassword) || strings.Contains(msg, "encrypt") || strings.Contains(msg, "password") {
		return nil, fmt.Errorf("%w: %v", ErrEncrypted, err)
	}
	return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
}

func newReader(ra io.ReaderAt, size int64) (r *pdf.Reader, err error) {
	defer func() {
		if x := recover(); x != nil {
			r, err = nil, fmt.Errorf("%v", x)
		}
	}()
	return pdf.NewReader(ra, size)
}

// patchedReader serves data with its first bytes replaced.
type patchedReader struct {
	data  []byte
	patch []byte
}

func (p *patchedReader) ReadAt(b []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	if off >= int64(len(p.data)) {
		return 0, io.EOF
	}
	n := copy(b, p.data[off:])
	for i := 0; i < n; i++ {
		if j := off + int64(i); j < int64(len(p.patch)) {
			b[i] = p.patch[j]
		}
	}
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

// collectPages walks the page tree depth first and returns at most limit
// page dictionaries and the total number of pages. It bounds depth and the
// number of nodes visited, so cyclic or absurd trees end.
func collectPages(node pdf.Value, limit int) ([]pdf.Value, int) {
	type item struct {
		v     pdf.Value
		depth int
	}
	var pages []pdf.Value
	total := 0
	stack := []item{{node, 0}}
	visits := 0
	complete := true
	// Values carry no object identity, but a Pages node's text names its
	// kids by object number: the same text again means a cycle.
	seen := map[string]bool{}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		visits++
		if visits > 4*limit+10_000 {
			complete = false
			break
		}
		kids := it.v.Key("Kids")
		if it.v.Key("Type").Name() == "Pages" || (kids.Kind() == pdf.Array && it.v.Key("Type").Name() != "Page") {
			key := it.v.String()
			if it.depth >= 64 || seen[key] {
				continue
			}
			seen[key] = true
			for i := kids.Len() - 1; i >= 0; i-- {
				stack = append(stack, item{kids.Index(i), it.depth + 1})
			}
			continue
		}
		if it.v.Kind() != pdf.Dict {
			continue
		}
		total++
		if len(pages) < limit {
			pages = append(pages, it.v)
		}
	}
	if !complete {
		if c := int(node.Key("Count").Int64()); c > total {
			total = c
		}
	}
	return pages, total
}

// inherited looks key up in a page and, as the page tree allows, its parents.
func inherited(v pdf.Value, key string) pdf.Value {
	for i := 0; i < 32 && !v.IsNull(); i++ {
		if x := v.Key(key); !x.IsNull() {
			return x
		}
		v = v.Key("Parent")
	}
	return pdf.Value{}
}

// extractPage walks one page and turns its glyphs into positioned segments.
func extractPage(ctx context.Context, pv pdf.Value, fonts *fontCache, n int) (p *page, warns []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			p = nil
			if s, ok := r.(errStop); ok {
				err = s
				return
			}
			err = fmt.Errorf("%v", r)
		}
	}()
	box := [4]float64{0, 0, 612, 792}
	b := inherited(pv, "CropBox")
	if b.Len() != 4 {
		b = inherited(pv, "MediaBox")
	}
	if b.Len() == 4 {
		for i := range box {
			box[i] = b.Index(i).Float64()
		}
	}
	display := identity
	switch ((int(inherited(pv, "Rotate").Int64())%360 + 360) % 360) / 90 {
	case 1:
		display = matrix{0, -1, 1, 0, 0, 0}
	case 2:
		display = matrix{-1, 0, 0, -1, 0, 0}
	case 3:
		display = matrix{0, 1, -1, 0, 0, 0}
	}
	x0, y0 := display.apply(box[0], box[1])
	x1, y1 := display.apply(box[2], box[3])
	p = &page{n: n, box: rect{math.Min(x0, x1), math.Min(y0, y1), math.Max(x0, x1), math.Max(y0, y1)}}

	w := &walker{ctx: ctx, fonts: fonts}
	if contents := pv.Key("Contents"); !contents.IsNull() {
		w.run(contents, inherited(pv, "Resources"), display, 0)
	}

	visible := 0
	for _, g := range w.glyphs {
		if strings.TrimSpace(g.text) != "" {
			visible++
		}
	}
	switch {
	case visible == 0 && w.images > 0:
		warns = append(warns, fmt.Sprintf("page %d has no text layer (it holds only images; OCR is not supported)", n))
	case visible == 0:
		warns = append(warns, fmt.Sprintf("page %d has no text layer", n))
	case w.garbled*3 > visible:
		warns = append(warns, fmt.Sprintf("page %d text may be garbled: its fonts lack a Unicode mapping", n))
	}
	if w.rotated > 0 && w.rotated*5 > visible {
		warns = append(warns, fmt.Sprintf("page %d has rotated text that was skipped", n))
	}
	if w.truncated {
		warns = append(warns, fmt.Sprintf("page %d is too complex; only part of its text was read", n))
	}
	buildPage(p, w.glyphs, w.rulings, w.dots)
	return p, warns, nil
}

// metadata reads the title and author from the information dictionary,
// falling back to the XMP packet.
func metadata(info, xmp pdf.Value) (title, author string) {
	defer func() {
		if recover() != nil {
			title, author = "", ""
		}
	}()
	title = cleanMeta(info.Key("Title").Text())
	author = cleanMeta(info.Key("Author").Text())
	if title != "" && author != "" || xmp.Kind() != pdf.Stream {
		return title, author
	}
	data, err := readStream(xmp, 4<<20)
	if err != nil {
		return title, author
	}
	xt, xa := parseXMP(data)
	if title == "" {
		title = xt
	}
	if author == "" {
		author = xa
	}
	return title, author
}

func cleanMeta(s string) string {
	s = strings.ToValidUTF8(s, "")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0xFEFF {
			return ' '
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

// parseXMP returns dc:title and the first dc:creator of an XMP packet.
func parseXMP(data []byte) (title, author string) {
	const dc = "http://purl.org/dc/elements/1.1/"
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = false
	var in string // "title" or "creator" while inside that dc element
	var text strings.Builder
	inLi := false
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Space == dc && (t.Name.Local == "title" || t.Name.Local == "creator") {
				in = t.Name.Local
			} else if in != "" && t.Name.Local == "li" {
				inLi = true
				text.Reset()
			}
		case xml.CharData:
			if inLi {
				text.Write(t)
			}
		case xml.EndElement:
			if inLi && t.Name.Local == "li" {
				inLi = false
				v := cleanMeta(text.String())
				if in == "title" && title == "" {
					title = v
				} else if in == "creator" && author == "" {
					author = v
				}
			} else if t.Name.Space == dc && t.Name.Local == in {
				in = ""
			}
		}
	}
	return title, author
}
