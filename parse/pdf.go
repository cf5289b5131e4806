package parse

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"unicode/utf8"

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
// Link annotations to URIs become links on the text they cover.
//
// Pages that hold only images are read by OCR when Tesseract is installed
// (ocr.go), at most maxOCRPages of them.
//
// PDF never panics: a panic inside the library becomes ErrMalformed. It stops
// with the context's error when ctx ends, parses at most MaxPages pages, and
// caps the decoded size of every stream it reads.
func PDF(ctx context.Context, data []byte) (doc *Document, err error) {
	return readPDF(ctx, data, defaultOCR())
}

// readPDF is PDF with the OCR engine given (nil: none).
func readPDF(ctx context.Context, data []byte, ocr ocrFunc) (doc *Document, err error) {
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
	r, file, err := openPDF(data)
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
	scans := &ocrState{run: ocr, file: file}
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
		if p.scan.Kind() == pdf.Stream {
			doc.Warnings = append(doc.Warnings, scans.readScan(ctx, p))
		}
		for _, s := range p.segs {
			runes += s.runes
		}
		for _, t := range p.ocr {
			runes += utf8.RuneCountInString(t)
		}
		pages = append(pages, p)
		if runes > maxTextRunes {
			doc.Warnings = append(doc.Warnings, fmt.Sprintf("text limit reached; pages after %d were skipped", n))
			break
		}
	}

	blocks := addOCRBlocks(layoutDocument(ctx, pages), pages)
	doc.HTML, doc.Markdown = renderFor(ctx, pdfBody(blocks))
	return doc, nil
}

// pageLimit is MaxPages, lowered by tests.
var pageLimit = MaxPages

// openPDF opens data with the library, smoothing over header and trailer
// quirks that real-world files have and the library rejects.
// It also returns the bytes the reader reads.
func openPDF(data []byte) (*pdf.Reader, []byte, error) {
	head := data
	if len(head) > 1024 {
		head = head[:1024]
	}
	k := bytes.Index(head, []byte("%PDF-"))
	if k < 0 {
		return nil, nil, fmt.Errorf("%w: not a PDF (no %%PDF header)", ErrMalformed)
	}
	view := data[k:]
	// The library wants "%%EOF" at the very end; some servers append junk.
	if e := bytes.LastIndex(view, []byte("%%EOF")); e >= 0 {
		view = view[:e+len("%%EOF")]
	}
	if len(view) < 32 {
		return nil, nil, fmt.Errorf("%w: truncated", ErrMalformed)
	}
	// The library accepts only "%PDF-1.0".."%PDF-1.7" and a line end after
	// it; PDF 2.0 files and odd header lines are otherwise the same to it.
	if err := checkStructure(view); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	var ra io.ReaderAt = bytes.NewReader(view)
	if v := view[5:9]; !(v[0] == '1' && v[1] == '.' && v[2] >= '0' && v[2] <= '7' && (v[3] == '\n' || v[3] == '\r')) {
		ra = &patchedReader{data: view, patch: []byte("%PDF-1.7\n")}
	}
	r, err := newReader(ra, int64(len(view)))
	if err == nil {
		return r, view, nil
	}
	if !bytes.Contains(view, []byte("obj")) {
		// Nothing to repair: pdfcpu would spend seconds of regular
		// expressions on a large file of junk to find that out.
		return nil, nil, fmt.Errorf("%w: no PDF objects", ErrMalformed)
	}
	fixed, ferr := rewritePDF(view)
	if ferr == nil {
		if r, err2 := newReader(bytes.NewReader(fixed), int64(len(fixed))); err2 == nil {
			return r, fixed, nil
		}
	}
	if errors.Is(ferr, ErrEncrypted) {
		return nil, nil, ferr
	}
	msg := strings.ToLower(err.Error())
	if errors.Is(err, pdf.ErrInvalidPassword) || strings.Contains(msg, "encrypt") || strings.Contains(msg, "password") {
		return nil, nil, fmt.Errorf("%w: %v", ErrEncrypted, err)
	}
	return nil, nil, fmt.Errorf("%w: %v", ErrMalformed, err)
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

// pageRef is a page dictionary and the attributes its ancestors in the page
// tree pass on to it.
type pageRef struct {
	v   pdf.Value
	inh *pageAttrs
}

// pageAttrs are the inheritable page attributes. They are collected while
// the tree is walked: looking them up through /Parent for every page costs
// a resolution of each ancestor, which the PDF library does not cache.
type pageAttrs struct {
	resources, mediaBox, cropBox, rotate pdf.Value
}

// with returns the attributes of node, a Pages node below a.
func (a *pageAttrs) with(node pdf.Value) *pageAttrs {
	b := *a
	for _, x := range []struct {
		key string
		dst *pdf.Value
	}{{"Resources", &b.resources}, {"MediaBox", &b.mediaBox}, {"CropBox", &b.cropBox}, {"Rotate", &b.rotate}} {
		if v := node.Key(x.key); !v.IsNull() {
			*x.dst = v
		}
	}
	return &b
}

// get returns the page's own key, else the one it inherits.
func (r pageRef) get(key string) pdf.Value {
	if v := r.v.Key(key); !v.IsNull() || r.inh == nil {
		return v
	}
	switch key {
	case "Resources":
		return r.inh.resources
	case "MediaBox":
		return r.inh.mediaBox
	case "CropBox":
		return r.inh.cropBox
	case "Rotate":
		return r.inh.rotate
	}
	return pdf.Value{}
}

// collectPages walks the page tree depth first and returns at most limit
// pages and the total number of pages. It bounds depth and the number of
// nodes visited, so cyclic or absurd trees end.
func collectPages(node pdf.Value, limit int) ([]pageRef, int) {
	type item struct {
		v     pdf.Value
		depth int
		inh   *pageAttrs
	}
	var pages []pageRef
	total := 0
	stack := []item{{node, 0, &pageAttrs{}}}
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
			inh := it.inh.with(it.v)
			for i := kids.Len() - 1; i >= 0; i-- {
				stack = append(stack, item{kids.Index(i), it.depth + 1, inh})
			}
			continue
		}
		if it.v.Kind() != pdf.Dict {
			continue
		}
		total++
		if len(pages) < limit {
			pages = append(pages, pageRef{it.v, it.inh})
		}
	}
	if !complete {
		if c := int(node.Key("Count").Int64()); c > total {
			total = c
		}
	}
	return pages, total
}

// extractPage walks one page and turns its glyphs into positioned segments.
func extractPage(ctx context.Context, pr pageRef, fonts *fontCache, n int) (p *page, warns []string, err error) {
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
	pv := pr.v
	b := pr.get("CropBox")
	if b.Len() != 4 {
		b = pr.get("MediaBox")
	}
	if b.Len() == 4 {
		for i := range box {
			box[i] = b.Index(i).Float64()
		}
	}
	display := identity
	switch ((int(pr.get("Rotate").Int64())%360 + 360) % 360) / 90 {
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

	p.links = pageLinks(pv.Key("Annots"), display)

	w := &walker{ctx: ctx, fonts: fonts}
	if contents := pv.Key("Contents"); !contents.IsNull() {
		w.run(contents, pr.get("Resources"), display, 0)
	}

	visible := 0
	for _, g := range w.glyphs {
		if strings.TrimSpace(g.text) != "" {
			visible++
		}
	}
	switch {
	case visible == 0 && w.images > 0 && w.scan.Kind() == pdf.Stream:
		p.scan = w.scan // readPDF reads it by OCR, or warns
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

// maxPageLinks caps the link annotations read from one page.
const maxPageLinks = 1000

// pageLinks reads a page's link annotations that point at a URI, their
// rectangles turned as the page is displayed. Links to places inside the
// document and URIs of schemes a reader should not follow from converted
// text (javascript:, file:, data: ...) are left out.
func pageLinks(annots pdf.Value, display matrix) []pageLink {
	var out []pageLink
	for i := 0; i < annots.Len() && i < 4*maxPageLinks && len(out) < maxPageLinks; i++ {
		a := annots.Index(i)
		if a.Key("Subtype").Name() != "Link" {
			continue
		}
		act := a.Key("A")
		if act.Key("S").Name() != "URI" {
			continue
		}
		href := cleanHref(act.Key("URI").RawString())
		r := a.Key("Rect")
		if href == "" || r.Len() != 4 {
			continue
		}
		x0, y0 := display.apply(r.Index(0).Float64(), r.Index(1).Float64())
		x1, y1 := display.apply(r.Index(2).Float64(), r.Index(3).Float64())
		box := rect{math.Min(x0, x1), math.Min(y0, y1), math.Max(x0, x1), math.Max(y0, y1)}
		if box.x1-box.x0 < 0.5 || box.y1-box.y0 < 0.5 {
			continue
		}
		out = append(out, pageLink{box: box, href: href})
	}
	return out
}

// cleanHref returns a link target fit for HTML and Markdown output, or ""
// for one of a scheme other than http, https, mailto and ftp.
func cleanHref(s string) string {
	if len(s) > 4096 {
		return ""
	}
	s = strings.TrimSpace(strings.ToValidUTF8(s, ""))
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
	if strings.HasPrefix(strings.ToLower(s), "www.") {
		s = "http://" + s
	}
	i := strings.IndexByte(s, ':')
	if i <= 0 {
		return ""
	}
	switch strings.ToLower(s[:i]) {
	case "http", "https", "mailto", "ftp":
		if len(s) > i+1 {
			return s
		}
	}
	return ""
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

// Two things the PDF library keeps to itself are read by reflection: which
// object a dictionary entry refers to (refID), so that fonts shared by many
// pages are resolved once, as the library caches no object it resolves;
// and where a stream's bytes lie (rawStream), as it decodes no JPEG. Both
// fall back to the slow or the safe way if the library's internals change
// (TestLibraryInternals notices).

// refID returns the object number and generation that dict (a dictionary
// or stream) holds under key, when the entry is an indirect reference.
func refID(dict pdf.Value, key string) (id uint64, ok bool) {
	defer func() {
		if recover() != nil {
			id, ok = 0, false
		}
	}()
	d := reflect.ValueOf(dict).FieldByName("data")
	if d.Kind() != reflect.Interface || d.IsNil() {
		return 0, false
	}
	m := d.Elem()
	if m.Kind() == reflect.Struct {
		m = m.FieldByName("hdr") // a stream's dictionary
	}
	if m.Kind() != reflect.Map || m.Type().Key().Kind() != reflect.String {
		return 0, false
	}
	e := m.MapIndex(reflect.ValueOf(key).Convert(m.Type().Key()))
	if e.Kind() == reflect.Interface && !e.IsNil() {
		e = e.Elem()
	}
	if e.Kind() != reflect.Struct || e.Type().Name() != "objptr" || e.NumField() != 2 {
		return 0, false
	}
	num, gen := e.Field(0), e.Field(1)
	if num.Kind() != reflect.Uint32 || gen.Kind() != reflect.Uint16 {
		return 0, false
	}
	return num.Uint()<<16 | gen.Uint(), true
}

// rawStream returns a stream's bytes as stored in file, filters not
// applied: the PDF library decodes no JPEG, and JPEG is what Tesseract
// wants. The library keeps where a stream starts to itself, so it is read
// by reflection; nil when that fails, when the stream does not lie inside
// file, or when the file is encrypted (its streams would need decrypting).
func rawStream(v pdf.Value, file []byte) []byte {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Struct {
		return nil
	}
	if r := rv.FieldByName("r"); r.Kind() == reflect.Pointer && !r.IsNil() {
		if key := r.Elem().FieldByName("key"); !key.IsValid() || key.Kind() != reflect.Slice || key.Len() > 0 {
			return nil
		}
	} else {
		return nil
	}
	d := rv.FieldByName("data")
	if d.Kind() != reflect.Interface || d.IsNil() {
		return nil
	}
	s := d.Elem()
	if s.Kind() != reflect.Struct {
		return nil
	}
	off := s.FieldByName("offset")
	if !off.IsValid() || off.Kind() != reflect.Int64 {
		return nil
	}
	start, n := off.Int(), v.Key("Length").Int64()
	if start < 0 || n <= 0 || start > int64(len(file)) || n > int64(len(file))-start || n > maxStreamBytes {
		return nil
	}
	return file[start : start+n]
}
