package parse

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"path"
	"strings"
)

// DOCX reads an Office Open XML word-processing document (Word 2007 and
// later, transitional or strict) into structured HTML and Markdown.
//
// It streams word/document.xml with encoding/xml (see office.go for why no
// library does it) and recovers headings from paragraph styles (an outline
// level on the style or its bases, or a "Heading N" or "Title" style, also
// when styles.xml is missing or leaves such a built-in style undefined),
// bold and italic runs, lists from numbering.xml, tables with their spans,
// hyperlinks (relationships, anchors and HYPERLINK fields), footnotes and
// endnotes, and images as references to their package path. Headers,
// footers, comments and deleted text are left out.
func DOCX(ctx context.Context, data []byte) (doc *Document, err error) {
	defer func() {
		if r := recover(); r != nil {
			doc, err = nil, officePanic("DOCX", r)
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if isOLEFile(data) {
		// Password-protected OOXML is a compound file holding the encrypted
		// package; any other compound file is a legacy .doc.
		if bytes.Contains(data, oleStreamName("EncryptedPackage")) || bytes.Contains(data, oleStreamName("EncryptionInfo")) {
			return nil, fmt.Errorf("%w: the DOCX is password-protected", ErrEncrypted)
		}
		return nil, fmt.Errorf("%w: an OLE compound file (a legacy Word .doc?), not a DOCX zip package", ErrMalformed)
	}
	a, err := openArchive(data)
	if err != nil {
		return nil, err
	}
	release, err := currentBudget().admit(ctx, officeEstimate(a))
	if err != nil {
		return nil, err
	}
	defer release()
	r := &docxReader{ctx: ctx, a: a, b: newBodyBuilder(outputsFor(ctx)), seen: map[string]bool{}}
	pkgRels, err := r.rels("_rels/.rels")
	if err != nil {
		return nil, err
	}
	main := docxRelTarget(pkgRels, "", "/officeDocument", "word/document.xml")
	if !a.has(main) {
		main = "word/document.xml"
	}
	if !a.has(main) {
		return nil, fmt.Errorf("%w: no word/document.xml: not a word-processing document", ErrMalformed)
	}
	docRels, err := r.rels(docxRelsPath(main))
	if err != nil {
		return nil, err
	}
	dir := path.Dir(main)
	if err := r.readStyles(docxRelTarget(docRels, dir, "/styles", path.Join(dir, "styles.xml"))); err != nil {
		return nil, err
	}
	if err := r.readNumbering(docxRelTarget(docRels, dir, "/numbering", path.Join(dir, "numbering.xml"))); err != nil {
		return nil, err
	}
	body, err := a.open(main)
	if err != nil {
		return nil, err
	}
	err = r.walk(body, docRels, "")
	body.Close()
	if err != nil {
		bad := xmlDamage(err)
		if bad == nil || !r.b.content {
			return nil, err
		}
		r.b.warn("%s is damaged at byte %d; the text after it is missing", main, bad.offset)
	}
	// Notes are read after the body, which numbered them by first reference.
	for _, part := range []struct{ typ, def, key string }{
		{"/footnotes", "footnotes.xml", "fn"},
		{"/endnotes", "endnotes.xml", "en"},
	} {
		if len(r.b.noteKeys) == 0 {
			break
		}
		name := docxRelTarget(docRels, dir, part.typ, path.Join(dir, part.def))
		notes, err := a.open(name)
		if err != nil {
			return nil, err
		}
		if notes == nil {
			continue
		}
		rels, err := r.rels(docxRelsPath(name))
		if err != nil {
			notes.Close()
			return nil, err
		}
		err = r.walk(notes, rels, part.key)
		notes.Close()
		if err != nil {
			if xmlDamage(err) == nil {
				return nil, err
			}
			r.b.warn("%s is damaged; some notes are missing", name)
		}
	}
	meta := &Document{}
	if err := r.readMeta(meta, pkgRels); err != nil {
		return nil, err
	}
	// The package is read: let it (and the file) go before the rest of the
	// body (its notes, and any block still open) is rendered.
	r.a = nil
	doc = r.b.document()
	doc.Title, doc.Author, doc.Pages = meta.Title, meta.Author, meta.Pages
	return doc, nil
}

// OOXML namespaces, transitional and strict.
const (
	wordNS            = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
	wordStrictNS      = "http://purl.oclc.org/ooxml/wordprocessingml/main"
	mathNS            = "http://schemas.openxmlformats.org/officeDocument/2006/math"
	mathStrictNS      = "http://purl.oclc.org/ooxml/officeDocument/math"
	wpNS              = "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"
	wpStrictNS        = "http://purl.oclc.org/ooxml/drawingml/wordprocessingDrawing"
	drawingMLNS       = "http://schemas.openxmlformats.org/drawingml/2006/main"
	drawingMLStrictNS = "http://purl.oclc.org/ooxml/drawingml/main"
	markupCompatNS    = "http://schemas.openxmlformats.org/markup-compatibility/2006"
	vmlNS             = "urn:schemas-microsoft-com:vml"
	vmlOfficeNS       = "urn:schemas-microsoft-com:office:office"
	officeDCNS        = "http://purl.org/dc/elements/1.1/"
)

// docxNS names the OOXML vocabularies the reader distinguishes.
type docxNS int

const (
	dnOther docxNS = iota
	dnW
	dnM
	dnWP
	dnA
	dnMC
	dnV
)

func docxSpace(s string) docxNS {
	switch s {
	case wordNS, wordStrictNS:
		return dnW
	case mathNS, mathStrictNS:
		return dnM
	case wpNS, wpStrictNS:
		return dnWP
	case drawingMLNS, drawingMLStrictNS:
		return dnA
	case markupCompatNS:
		return dnMC
	case vmlNS:
		return dnV
	}
	return dnOther
}

// docxRel is one relationship of a part.
type docxRel struct {
	typ, target string
	external    bool
}

// docxStyle is what the reader keeps of a styles.xml style.
type docxStyle struct {
	name, basedOn string
	outline       int // -1 when the style sets none
	bold, italic  triState
	numID         string
	hasNum        bool
	ilvl          int
}

// docxLevel is one level of an abstract numbering.
type docxLevel struct {
	format string
	start  int
}

// docxNum is a numbering instance: its abstract numbering and the levels
// whose start it overrides.
type docxNum struct {
	abstract  string
	overrides map[int]int
}

type docxReader struct {
	ctx       context.Context
	a         *archive
	b         *bodyBuilder
	styles    map[string]*docxStyle
	defStyle  string
	nums      map[string]*docxNum
	abstracts map[string]map[int]docxLevel
	// seen marks numbering instances whose start override was applied.
	seen map[string]bool
}

// docxRelsPath is where the relationships of part live.
func docxRelsPath(part string) string {
	return path.Join(path.Dir(part), "_rels", path.Base(part)+".rels")
}

// rels reads a relationships part; a missing one is empty.
func (r *docxReader) rels(name string) (map[string]docxRel, error) {
	data, err := r.a.read(name)
	if err != nil || data == nil {
		return nil, err
	}
	rels := map[string]docxRel{}
	err = walkXML(r.ctx, name, data, func(tok xml.Token) bool {
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local != "Relationship" {
			return true
		}
		id, _ := xmlAttr(se, "", "Id")
		typ, _ := xmlAttr(se, "", "Type")
		target, _ := xmlAttr(se, "", "Target")
		mode, _ := xmlAttr(se, "", "TargetMode")
		rels[id] = docxRel{typ: typ, target: target, external: strings.EqualFold(mode, "External")}
		return len(rels) < 100_000
	})
	if err != nil && xmlDamage(err) == nil {
		return nil, err
	}
	return rels, nil
}

// docxRelTarget is the package path of the first internal relationship whose
// type ends in typ, resolved against dir; def when there is none.
func docxRelTarget(rels map[string]docxRel, dir, typ, def string) string {
	best := ""
	for id, rel := range rels {
		if rel.external || !strings.HasSuffix(rel.typ, typ) {
			continue
		}
		// Map order is random: take the smallest id so the choice is stable.
		if best == "" || id < best {
			best = id
		}
	}
	if best == "" {
		return def
	}
	t := rels[best].target
	if strings.HasPrefix(t, "/") {
		return path.Clean(t[1:])
	}
	return path.Join(dir, t)
}

// docxOnOff reads an OOXML on/off property: no value means on.
func docxOnOff(se xml.StartElement) triState {
	v, ok := xmlAttr(se, "", "val")
	if !ok {
		return triOn
	}
	switch strings.ToLower(v) {
	case "false", "0", "off", "none":
		return triOff
	}
	return triOn
}

// readStyles reads styles.xml: names, base styles, outline levels, bold,
// italic and numbering of each style.
func (r *docxReader) readStyles(name string) error {
	r.styles = map[string]*docxStyle{}
	data, err := r.a.read(name)
	if err != nil || data == nil {
		return err
	}
	var cur *docxStyle
	var stack []string
	err = walkXML(r.ctx, name, data, func(tok xml.Token) bool {
		switch t := tok.(type) {
		case xml.StartElement:
			parent := ""
			if len(stack) > 0 {
				parent = stack[len(stack)-1]
			}
			stack = append(stack, t.Name.Local)
			if docxSpace(t.Name.Space) != dnW {
				return true
			}
			val, _ := xmlAttr(t, "", "val")
			switch t.Name.Local {
			case "style":
				id, _ := xmlAttr(t, "", "styleId")
				cur = &docxStyle{outline: -1}
				if len(r.styles) < 100_000 {
					r.styles[id] = cur
				}
				if typ, _ := xmlAttr(t, "", "type"); typ == "paragraph" {
					if def, _ := xmlAttr(t, "", "default"); def == "1" || def == "true" {
						r.defStyle = id
					}
				}
			case "name":
				if cur != nil && parent == "style" {
					cur.name = val
				}
			case "basedOn":
				if cur != nil && parent == "style" {
					cur.basedOn = val
				}
			case "outlineLvl":
				if cur != nil && parent == "pPr" {
					cur.outline = officeAtoi(val, -1)
				}
			case "numId":
				if cur != nil && parent == "numPr" {
					cur.numID, cur.hasNum = val, true
				}
			case "ilvl":
				if cur != nil && parent == "numPr" {
					cur.ilvl = officeAtoi(val, 0)
				}
			case "b":
				if cur != nil && parent == "rPr" {
					cur.bold = docxOnOff(t)
				}
			case "i":
				if cur != nil && parent == "rPr" {
					cur.italic = docxOnOff(t)
				}
			}
		case xml.EndElement:
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			if t.Name.Local == "style" {
				cur = nil
			}
		}
		return true
	})
	if err != nil && xmlDamage(err) == nil {
		return err
	}
	if err != nil {
		r.b.warn("%s is damaged; some styles are missing", name)
	}
	return nil
}

// chain calls visit on the style id and its bases until visit returns true.
// It returns the first id of the chain that styles.xml does not define, ""
// when visit stopped it or every style in it is defined.
func (r *docxReader) chain(id string, visit func(id string, s *docxStyle) bool) (undefined string) {
	for i := 0; i < 32 && id != ""; i++ {
		s := r.styles[id]
		if s == nil {
			return id
		}
		if visit(id, s) {
			return ""
		}
		id = s.basedOn
	}
	return ""
}

// docxBuiltinLevel is the heading level of one of Word's built-in paragraph
// styles named by id: Heading1 to Heading9 (in any case, and with the space
// of their names, which some producers write as the id) and Title; 0 for
// any other. It serves ids that styles.xml does not define: Word writes
// every style it uses, but other producers name the built-ins, meaning
// Word's headings, and leave their definitions or the whole styles part out.
func docxBuiltinLevel(id string) int {
	if n := officeHeadingNumber(id); n >= 1 && n <= 9 {
		return n
	}
	if strings.EqualFold(strings.TrimSpace(id), "title") {
		return 1
	}
	return 0
}

// headingLevel is the heading level of a paragraph with style id and
// direct outline level (-1 for none), 0 for body text. A style that
// styles.xml defines is what its definition says; one it does not define
// (nor the base of a defined one) is read as the built-in of that id.
func (r *docxReader) headingLevel(id string, outline int) int {
	if outline >= 0 && outline <= 8 {
		return min(outline+1, 6)
	}
	if outline == 9 {
		return 0
	}
	if id == "" {
		id = r.defStyle
	}
	level := 0
	undefined := r.chain(id, func(id string, s *docxStyle) bool {
		switch {
		case s.outline >= 0 && s.outline <= 8:
			level = s.outline + 1
		case s.outline == 9:
			return true
		case officeHeadingNumber(s.name) > 0:
			level = officeHeadingNumber(s.name)
		case officeHeadingNumber(id) > 0:
			level = officeHeadingNumber(id)
		case strings.EqualFold(s.name, "title"), strings.EqualFold(id, "title"):
			level = 1
		}
		return level > 0
	})
	if level == 0 && undefined != "" {
		level = docxBuiltinLevel(undefined)
	}
	return min(level, 6)
}

// styleProps are the bold and italic a style (with its bases) sets.
func (r *docxReader) styleProps(id string) (bold, italic triState) {
	r.chain(id, func(_ string, s *docxStyle) bool {
		bold, italic = bold.or(s.bold), italic.or(s.italic)
		return bold != triUnset && italic != triUnset
	})
	return bold, italic
}

// readNumbering reads numbering.xml: the format and start of each level of
// each abstract numbering, and each instance's start overrides.
func (r *docxReader) readNumbering(name string) error {
	r.nums = map[string]*docxNum{}
	r.abstracts = map[string]map[int]docxLevel{}
	data, err := r.a.read(name)
	if err != nil || data == nil {
		return err
	}
	var abs map[int]docxLevel
	var num *docxNum
	lvl, override := -1, -1
	err = walkXML(r.ctx, name, data, func(tok xml.Token) bool {
		switch t := tok.(type) {
		case xml.StartElement:
			if docxSpace(t.Name.Space) != dnW {
				return true
			}
			val, _ := xmlAttr(t, "", "val")
			switch t.Name.Local {
			case "abstractNum":
				id, _ := xmlAttr(t, "", "abstractNumId")
				abs, num = map[int]docxLevel{}, nil
				if len(r.abstracts) < 100_000 {
					r.abstracts[id] = abs
				}
			case "num":
				id, _ := xmlAttr(t, "", "numId")
				num, abs = &docxNum{overrides: map[int]int{}}, nil
				if len(r.nums) < 100_000 {
					r.nums[id] = num
				}
			case "abstractNumId":
				if num != nil {
					num.abstract = val
				}
			case "lvl":
				if abs != nil {
					il, _ := xmlAttr(t, "", "ilvl")
					lvl = officeAtoi(il, -1)
					if lvl >= 0 && lvl < maxOfficeNesting {
						abs[lvl] = docxLevel{format: "decimal"}
					}
				}
			case "lvlOverride":
				il, _ := xmlAttr(t, "", "ilvl")
				override = officeAtoi(il, -1)
			case "startOverride":
				if num != nil && override >= 0 && override < maxOfficeNesting {
					num.overrides[override] = officeAtoi(val, 0)
				}
			case "start", "numFmt":
				if l, ok := abs[lvl]; ok && abs != nil {
					if t.Name.Local == "start" {
						l.start = officeAtoi(val, 0)
					} else {
						l.format = val
					}
					abs[lvl] = l
				}
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "lvl":
				lvl = -1
			case "lvlOverride":
				override = -1
			case "abstractNum":
				abs = nil
			case "num":
				num = nil
			}
		}
		return true
	})
	if err != nil && xmlDamage(err) == nil {
		return err
	}
	if err != nil {
		r.b.warn("%s is damaged; some lists may be wrong", name)
	}
	return nil
}

// listRef places a paragraph with numbering instance numID at level ilvl.
func (r *docxReader) listRef(numID string, ilvl int) *officeListRef {
	num := r.nums[numID]
	if numID == "" || numID == "0" || num == nil {
		return nil
	}
	abs := r.abstracts[num.abstract]
	if abs == nil {
		return nil
	}
	ilvl = min(max(ilvl, 0), maxOfficeNesting-1)
	l, ok := abs[ilvl]
	if !ok {
		l = docxLevel{format: "decimal", start: 1}
	}
	ref := &officeListRef{
		level: ilvl,
		key:   "docx:" + num.abstract,
		// "none" shows no marker at all: a list, but not a numbered one.
		ordered: l.format != "bullet" && l.format != "none",
		start:   l.start,
	}
	// An instance that overrides the start restarts the list where it is
	// first used; instances of one abstract numbering otherwise share its
	// count, as in Word.
	if s, ok := num.overrides[ilvl]; ok {
		ref.start = s
		k := fmt.Sprintf("%s/%d", numID, ilvl)
		if !r.seen[k] {
			r.seen[k] = true
			ref.restart = true
		}
	}
	return ref
}

// readMeta fills the title and author from the core properties and the
// page count from the extended ones.
func (r *docxReader) readMeta(doc *Document, pkgRels map[string]docxRel) error {
	core := docxRelTarget(pkgRels, "", "/core-properties", "docProps/core.xml")
	app := docxRelTarget(pkgRels, "", "/extended-properties", "docProps/app.xml")
	for _, name := range []string{core, app} {
		data, err := r.a.read(name)
		if err != nil {
			return err
		}
		if data == nil {
			continue
		}
		var field *string
		var pages string
		var buf strings.Builder
		err = walkXML(r.ctx, name, data, func(tok xml.Token) bool {
			switch t := tok.(type) {
			case xml.StartElement:
				field = nil
				switch {
				case name == core && t.Name.Space == officeDCNS && t.Name.Local == "title" && doc.Title == "":
					field = &doc.Title
				case name == core && t.Name.Space == officeDCNS && t.Name.Local == "creator" && doc.Author == "":
					field = &doc.Author
				case name == app && t.Name.Local == "Pages":
					field = &pages
				}
				buf.Reset()
			case xml.CharData:
				if field != nil && buf.Len() < 4096 {
					buf.Write(t)
				}
			case xml.EndElement:
				if field != nil {
					*field = strings.Join(strings.Fields(buf.String()), " ")
					field = nil
				}
			}
			return true
		})
		if err != nil && xmlDamage(err) == nil {
			return err
		}
		if pages != "" {
			doc.Pages = officeAtoi(pages, 0)
		}
	}
	return nil
}

// docxAction is what a start element did, undone at its end.
type docxAction int

const (
	daNone docxAction = iota
	daPara
	daParaNested
	daPPr
	daRun
	daRPr
	daText
	daInstr
	daHref
	daTable
	daTcPr
	daCell
	daBox
	daNote
	daDrawing
)

type docxElem struct {
	name string // local name in the w namespace, else ""
	act  docxAction
	arg  int
}

// docxRun is the state of a paragraph's current run.
type docxRun struct {
	bold, italic triState
	style        string
	hidden       bool
	props        officeRun
}

// docxPara is the state of an open paragraph (paragraphs nest through text
// boxes, so these stack).
type docxPara struct {
	style        string
	numID        string
	hasNum       bool
	ilvl         int
	hasIlvl      bool
	outline      int
	bold, italic triState // from the paragraph style, unset for headings
	run          docxRun
}

// docxField is an open complex field (fldChar begin .. end).
type docxField struct {
	instr  strings.Builder
	result bool
	href   string
}

// docxWalk is the state of reading one part: the document or a notes part.
type docxWalk struct {
	r      *docxReader
	rels   map[string]docxRel
	notes  string // "" for the document, "fn" or "en" for a notes part
	stack  []docxElem
	skip   int
	paras  []*docxPara
	hrefs  []string
	fields []*docxField
	// fieldsLost counts fields opened past the cap, whose ends are ignored.
	fieldsLost int
	alt        string
	span       int
	vmerge     int
}

// walk reads the body of a document or notes part into the builder,
// inflating the part as it goes rather than holding it whole.
func (r *docxReader) walk(m *member, rels map[string]docxRel, notes string) error {
	w := &docxWalk{r: r, rels: rels, notes: notes}
	return walkXMLMember(r.ctx, m, func(tok xml.Token) bool {
		switch t := tok.(type) {
		case xml.StartElement:
			w.start(t)
		case xml.EndElement:
			w.end()
		case xml.CharData:
			w.chars(t)
		}
		return !r.b.truncated
	})
}

func (w *docxWalk) parent(n int) string {
	if i := len(w.stack) - 1 - n; i >= 0 {
		return w.stack[i].name
	}
	return ""
}

func (w *docxWalk) para() *docxPara {
	if len(w.paras) == 0 {
		w.paras = append(w.paras, &docxPara{outline: -1})
	}
	return w.paras[len(w.paras)-1]
}

// skipped are elements whose content is never text to show: properties the
// reader does not use, tracked deletions and changes, section properties.
var docxSkipped = map[string]bool{
	"del": true, "moveFrom": true, "delText": true, "delInstrText": true,
	"sdtPr": true, "sdtEndPr": true, "tblPr": true, "tblGrid": true, "tblPrEx": true,
	"sectPr": true, "pPrChange": true, "rPrChange": true, "tblPrChange": true,
	"tcPrChange": true, "trPrChange": true, "sectPrChange": true, "numberingChange": true,
	"smartTagPr": true, "customXmlPr": true, "fldData": true, "ffData": true,
	"headerReference": true, "footerReference": true, "commentReference": true,
}

func (w *docxWalk) start(se xml.StartElement) {
	if w.skip > 0 {
		w.skip++
		return
	}
	b := w.r.b
	el := docxElem{}
	ns := docxSpace(se.Name.Space)
	local := se.Name.Local
	val, _ := xmlAttr(se, "", "val")
	switch ns {
	case dnW:
		el.name = local
		if docxSkipped[local] {
			w.skip = 1
			return
		}
		parent := w.parent(0)
		switch local {
		case "p":
			el.act = daPara
			if b.startPara(Paragraph, 0) {
				el.act = daParaNested
			}
			w.paras = append(w.paras, &docxPara{outline: -1})
			w.resetRun()
		case "pPr":
			if parent == "p" {
				el.act = daPPr
			}
		case "pStyle":
			if parent == "pPr" {
				w.para().style = val
			}
		case "outlineLvl":
			if parent == "pPr" {
				w.para().outline = officeAtoi(val, -1)
			}
		case "numId":
			if parent == "numPr" && w.parent(1) == "pPr" {
				w.para().numID, w.para().hasNum = val, true
			}
		case "ilvl":
			if parent == "numPr" && w.parent(1) == "pPr" {
				w.para().ilvl, w.para().hasIlvl = officeAtoi(val, 0), true
			}
		case "rPr":
			switch parent {
			case "r":
				el.act = daRPr
			case "pPr":
				// The paragraph mark's properties.
				w.skip = 1
				return
			}
		case "b", "i", "rStyle", "vanish":
			if parent == "rPr" && w.parent(1) == "r" {
				run := &w.para().run
				switch local {
				case "b":
					run.bold = docxOnOff(se)
				case "i":
					run.italic = docxOnOff(se)
				case "rStyle":
					run.style = val
				case "vanish":
					run.hidden = docxOnOff(se) == triOn
				}
			}
		case "r":
			el.act = daRun
			w.resetRun()
		case "t":
			if parent == "r" {
				el.act = daText
			}
		case "instrText":
			el.act = daInstr
		case "tab", "ptab":
			if parent == "r" {
				w.text(" ")
			}
		case "br", "cr":
			if typ, _ := xmlAttr(se, "", "type"); parent == "r" && (typ == "" || typ == "textWrapping") && w.visible() {
				b.inline(Inline{Break: true})
			}
		case "noBreakHyphen":
			if parent == "r" {
				w.text("-")
			}
		case "fldChar":
			w.fieldChar(se)
		case "fldSimple":
			el.act = daHref
			instr, _ := xmlAttr(se, "", "instr")
			w.pushHref(docxHyperlinkField(instr))
		case "hyperlink":
			el.act = daHref
			w.pushHref(w.hyperlink(se))
		case "footnoteReference", "endnoteReference":
			if w.notes == "" && w.visible() {
				id, _ := xmlAttr(se, "", "id")
				key := "fn" + id
				if local == "endnoteReference" {
					key = "en" + id
				}
				b.inline(Inline{Note: b.noteRef(key)})
			}
		case "footnote", "endnote":
			typ, _ := xmlAttr(se, "", "type")
			id, _ := xmlAttr(se, "", "id")
			n, ok := b.noteKeys[w.notes+id]
			if w.notes == "" || (typ != "" && typ != "normal") || !ok || !b.startNote(n) {
				w.skip = 1
				return
			}
			el.act = daNote
		case "tbl":
			el.act, el.arg = daTable, int(b.startTable())
		case "tr":
			b.startRow()
		case "gridBefore":
			if parent == "trPr" {
				b.gapCell(officeAtoi(val, 0))
			}
		case "tc":
			el.act = daCell
			if b.startCell(0, 0, 1) {
				el.arg = 1
			}
			w.span, w.vmerge = 0, 0
		case "tcPr":
			if parent == "tc" {
				el.act = daTcPr
			}
		case "gridSpan":
			if parent == "tcPr" {
				w.span = officeAtoi(val, 1)
			}
		case "vMerge":
			if parent == "tcPr" {
				w.vmerge = 2
				if val == "restart" {
					w.vmerge = 1
				}
			}
		case "txbxContent":
			if b.startBox() {
				el.act = daBox
			}
		case "drawing", "pict", "object":
			el.act = daDrawing
			w.alt = ""
		}
	case dnM:
		switch local {
		case "r":
			w.resetRun()
		case "t":
			el.act = daText
		}
	case dnMC:
		if local == "Fallback" {
			// The same content as the Choice before it, for older readers.
			w.skip = 1
			return
		}
	case dnWP:
		if local == "docPr" {
			w.alt = docxAltText(se, "descr", "title", "name")
		}
	case dnA:
		if local == "blip" {
			id, ok := xmlAttr(se, "", "embed")
			if !ok || id == "" {
				id, _ = xmlAttr(se, "", "link")
			}
			w.image(id)
		}
	case dnV:
		switch local {
		case "shape":
			if alt := docxAltText(se, "alt"); alt != "" {
				w.alt = alt
			}
		case "imagedata":
			if w.alt == "" {
				w.alt, _ = xmlAttr(se, vmlOfficeNS, "title")
			}
			id, _ := xmlAttr(se, "", "id")
			w.image(id)
		}
	}
	w.stack = append(w.stack, el)
}

// docxAltText is the first non-empty attribute of names.
func docxAltText(se xml.StartElement, names ...string) string {
	for _, n := range names {
		if v, _ := xmlAttr(se, "", n); strings.TrimSpace(v) != "" {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return ""
}

func (w *docxWalk) image(id string) {
	rel, ok := w.rels[id]
	if !ok || rel.target == "" || !w.visible() {
		return
	}
	w.r.b.inline(Inline{Image: rel.target, Text: w.alt})
}

func (w *docxWalk) hyperlink(se xml.StartElement) string {
	id, _ := xmlAttr(se, "", "id")
	anchor, _ := xmlAttr(se, "", "anchor")
	href := ""
	if rel, ok := w.rels[id]; ok && id != "" {
		href = rel.target
	}
	if anchor != "" {
		href += "#" + anchor
	}
	return href
}

// docxHyperlinkField returns the target of a HYPERLINK field instruction such
// as `HYPERLINK "https://example.com" \o "tip"` or `HYPERLINK \l "anchor"`,
// "" for any other field.
func docxHyperlinkField(instr string) string {
	var toks []string
	for s := strings.TrimSpace(instr); s != "" && len(toks) < 32; s = strings.TrimSpace(s) {
		if s[0] == '"' {
			end := strings.IndexByte(s[1:], '"')
			if end < 0 {
				toks = append(toks, s[1:])
				break
			}
			toks = append(toks, s[1:1+end])
			s = s[end+2:]
			continue
		}
		end := strings.IndexAny(s, " \t\"")
		if end < 0 {
			end = len(s)
		}
		toks = append(toks, s[:end])
		s = s[end:]
	}
	if len(toks) == 0 || !strings.EqualFold(toks[0], "HYPERLINK") {
		return ""
	}
	url, anchor := "", ""
	for i := 1; i < len(toks); i++ {
		switch t := toks[i]; {
		case strings.EqualFold(t, `\l`) && i+1 < len(toks):
			anchor = toks[i+1]
			i++
		case strings.HasPrefix(t, `\`):
			if (strings.EqualFold(t, `\o`) || strings.EqualFold(t, `\t`)) && i+1 < len(toks) {
				i++
			}
		case url == "":
			url = t
		}
	}
	if anchor != "" {
		return url + "#" + anchor
	}
	return url
}

// fieldChar follows a complex field: the instruction between begin and
// separate is not shown, the result after separate is, as a link when the
// instruction is HYPERLINK.
func (w *docxWalk) fieldChar(se xml.StartElement) {
	typ, _ := xmlAttr(se, "", "fldCharType")
	switch typ {
	case "begin":
		if len(w.fields) >= 32 {
			w.fieldsLost++
			return
		}
		w.fields = append(w.fields, &docxField{})
	case "separate":
		if w.fieldsLost == 0 && len(w.fields) > 0 {
			f := w.fields[len(w.fields)-1]
			f.result, f.href = true, docxHyperlinkField(f.instr.String())
		}
	case "end":
		if w.fieldsLost > 0 {
			w.fieldsLost--
		} else if len(w.fields) > 0 {
			w.fields = w.fields[:len(w.fields)-1]
		}
	}
}

// visible reports whether run content is shown: not hidden, not part of a
// field instruction.
func (w *docxWalk) visible() bool {
	if len(w.paras) > 0 && w.para().run.hidden {
		return false
	}
	for _, f := range w.fields {
		if !f.result {
			return false
		}
	}
	return true
}

// resetRun starts a run with the paragraph's properties.
func (w *docxWalk) resetRun() {
	p := w.para()
	p.run = docxRun{}
	w.runProps()
}

// runProps works out the current run's bold and italic: the run's own
// properties, then its character style, then the paragraph style.
func (w *docxWalk) runProps() {
	p := w.para()
	run := &p.run
	bold, italic := run.bold, run.italic
	if run.style != "" {
		sb, si := w.r.styleProps(run.style)
		bold, italic = bold.or(sb), italic.or(si)
	}
	bold, italic = bold.or(p.bold), italic.or(p.italic)
	run.props = officeRun{bold: bold == triOn, italic: italic == triOn}
}

// paraProps settles the paragraph's kind and list once its properties are
// read.
func (w *docxWalk) paraProps() {
	p := w.para()
	r := w.r
	level := r.headingLevel(p.style, p.outline)
	if level > 0 {
		r.b.setPara(Heading, level, nil)
		p.bold, p.italic = triUnset, triUnset
		w.resetRun()
		return
	}
	style := p.style
	if style == "" {
		style = r.defStyle
	}
	p.bold, p.italic = r.styleProps(style)
	numID, ilvl := p.numID, p.ilvl
	if !p.hasNum || !p.hasIlvl {
		r.chain(style, func(_ string, s *docxStyle) bool {
			if s.hasNum {
				if !p.hasNum {
					numID = s.numID
				}
				if !p.hasIlvl {
					ilvl = s.ilvl
				}
			}
			return s.hasNum
		})
	}
	r.b.setPara(Paragraph, 0, r.listRef(numID, ilvl))
	w.resetRun()
}

// text adds run text with the run's properties and the current link.
func (w *docxWalk) text(s string) {
	if !w.visible() {
		return
	}
	props := w.para().run.props
	props.href = w.href()
	w.r.b.text(s, props)
}

// pushHref opens a hyperlink element (or simple field); the stack holds
// the link in effect at each depth, so that looking it up costs nothing
// however deep the elements nest.
func (w *docxWalk) pushHref(href string) {
	if href == "" && len(w.hrefs) > 0 {
		href = w.hrefs[len(w.hrefs)-1]
	}
	w.hrefs = append(w.hrefs, href)
}

// href is the innermost hyperlink: a hyperlink element, else the result of
// a HYPERLINK field.
func (w *docxWalk) href() string {
	if n := len(w.hrefs); n > 0 && w.hrefs[n-1] != "" {
		return w.hrefs[n-1]
	}
	for i := len(w.fields) - 1; i >= 0; i-- {
		if w.fields[i].href != "" {
			return w.fields[i].href
		}
	}
	return ""
}

func (w *docxWalk) chars(cd xml.CharData) {
	if w.skip > 0 || len(w.stack) == 0 {
		return
	}
	switch w.stack[len(w.stack)-1].act {
	case daText:
		w.text(string(cd))
	case daInstr:
		if n := len(w.fields); n > 0 && w.fieldsLost == 0 && w.fields[n-1].instr.Len() < 4096 {
			w.fields[n-1].instr.Write(cd)
		}
	}
}

func (w *docxWalk) end() {
	if w.skip > 0 {
		w.skip--
		return
	}
	if len(w.stack) == 0 {
		return
	}
	el := w.stack[len(w.stack)-1]
	w.stack = w.stack[:len(w.stack)-1]
	b := w.r.b
	switch el.act {
	case daPara, daParaNested:
		b.endPara(el.act == daParaNested)
		if len(w.paras) > 0 {
			w.paras = w.paras[:len(w.paras)-1]
		}
	case daPPr:
		w.paraProps()
	case daRPr:
		w.runProps()
	case daHref:
		if len(w.hrefs) > 0 {
			w.hrefs = w.hrefs[:len(w.hrefs)-1]
		}
	case daTable:
		b.endTable(officeTableMode(el.arg))
	case daTcPr:
		b.setCell(w.span, w.vmerge)
	case daCell:
		if el.arg == 1 {
			b.endCell()
		}
	case daBox:
		b.endBox()
	case daNote:
		b.endNote()
	}
}
