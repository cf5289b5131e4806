package parse

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
)

// ODT reads an OpenDocument text document (LibreOffice Writer and others,
// also as a flat .fodt XML file) into structured HTML and Markdown.
//
// It streams styles.xml, meta.xml and content.xml with encoding/xml (see
// office.go for why no library does it) and recovers headings (text:h,
// the Title paragraph style, and text:p naming a built-in heading style
// that the file leaves undefined), bold and italic from automatic and named
// styles, nested lists numbered by their list styles, tables with their
// spans, links, notes and images as references to their package path.
// Comments, tracked deletions and index templates are left out.
func ODT(ctx context.Context, data []byte) (doc *Document, err error) {
	defer func() {
		if r := recover(); r != nil {
			doc, err = nil, officePanic("ODT", r)
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w := newODTWalk(ctx)
	if isOLEFile(data) {
		return nil, fmt.Errorf("%w: an OLE compound file, not an OpenDocument zip package", ErrMalformed)
	}
	if isFlatODF(data) {
		if err := w.part("the document", data); err != nil {
			return nil, err
		}
		return w.document(), nil
	}
	a, err := openArchive(data)
	if err != nil {
		return nil, err
	}
	if !a.has("content.xml") {
		return nil, fmt.Errorf("%w: no content.xml: not an OpenDocument file", ErrMalformed)
	}
	release, err := currentBudget().admit(ctx, officeEstimate(a))
	if err != nil {
		return nil, err
	}
	defer release()
	if err := odfEncrypted(ctx, a); err != nil {
		return nil, err
	}
	// Named styles first, then the metadata, then the content with its
	// automatic styles.
	for _, name := range []string{"styles.xml", "meta.xml", "content.xml"} {
		part, err := a.read(name)
		if err != nil {
			return nil, err
		}
		if part == nil {
			continue
		}
		w.inStylesXML = name == "styles.xml"
		if err := w.part(name, part); err != nil {
			return nil, err
		}
	}
	return w.document(), nil
}

// isFlatODF reports whether data is a flat (single XML file) OpenDocument.
func isFlatODF(data []byte) bool {
	head := data[:min(len(data), 4096)]
	head = bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xEF\xBB\xBF")), " \t\r\n")
	return bytes.HasPrefix(head, []byte("<")) && bytes.Contains(head, []byte(odfOfficeNS))
}

// odfEncrypted returns ErrEncrypted when the manifest says that parts are
// encrypted (a password-protected document keeps its zip structure but
// its XML parts are ciphertext).
func odfEncrypted(ctx context.Context, a *archive) error {
	data, err := a.read("META-INF/manifest.xml")
	if err != nil || data == nil {
		return err
	}
	encrypted := false
	err = walkXML(ctx, "META-INF/manifest.xml", data, func(tok xml.Token) bool {
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "encryption-data" {
			encrypted = true
		}
		return !encrypted
	})
	if encrypted {
		return fmt.Errorf("%w: the OpenDocument file is password-protected", ErrEncrypted)
	}
	if err != nil && xmlDamage(err) == nil {
		return err
	}
	return nil
}

// OpenDocument namespaces.
const (
	odfOfficeNS = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
	odfStyleNS  = "urn:oasis:names:tc:opendocument:xmlns:style:1.0"
	odfTextNS   = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
	odfTableNS  = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
	odfDrawNS   = "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"
	odfFONS     = "urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"
	odfXLinkNS  = "http://www.w3.org/1999/xlink"
	odfMetaNS   = "urn:oasis:names:tc:opendocument:xmlns:meta:1.0"
	odfSVGNS    = "urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0"
)

// odtStyle is what the reader keeps of a paragraph or text style.
type odtStyle struct {
	parent, display string
	bold, italic    triState
}

// odtListStyle is a list style's numbering at each level (1-based).
type odtListStyle map[int]odtListLevelStyle

type odtListLevelStyle struct {
	ordered bool
	start   int
}

// odtAction is what a start element did, undone at its end.
type odtAction int

const (
	oaNone odtAction = iota
	oaPara
	oaParaNested
	oaSpan
	oaHref
	oaList
	oaItem
	oaTable
	oaCell
	oaNote
	oaFrame
	oaBox
	oaFrameTitle
	oaFrameDesc
	oaMeta
	oaStyle
	oaListStyle
)

type odtElem struct {
	act  odtAction
	arg  int
	text bool // chardata inside is paragraph text
}

// odtParaCtx is the formatting state of an open paragraph: its style's
// bold and italic and the spans and links open in it, each holding what is
// in effect at its depth so that a lookup costs nothing however deep they
// nest.
type odtParaCtx struct {
	bold, italic triState
	spans        [][2]triState
	hrefs        []string
}

func (p *odtParaCtx) pushSpan(bold, italic triState) {
	if n := len(p.spans); n > 0 {
		bold, italic = bold.or(p.spans[n-1][0]), italic.or(p.spans[n-1][1])
	}
	p.spans = append(p.spans, [2]triState{bold, italic})
}

func (p *odtParaCtx) pushHref(href string) {
	if n := len(p.hrefs); n > 0 && href == "" {
		href = p.hrefs[n-1]
	}
	p.hrefs = append(p.hrefs, href)
}

// odtFrame is an open draw:frame: an image in it is emitted at its end,
// when its title and description are known.
type odtFrame struct {
	name, image string
	title, desc strings.Builder
}

// odtList is an open text:list: its style (inherited by nested lists) and
// the flow it belongs to.
type odtList struct {
	style string
	key   string
	flow  *flowFrame
}

type odtWalk struct {
	ctx         context.Context
	b           *bodyBuilder
	inStylesXML bool
	pstyles     map[string]*odtStyle
	tstyles     map[string]*odtStyle
	lstyles     map[string]odtListStyle
	stack       []odtElem
	skip        int
	// Style being read.
	curStyle *odtStyle
	curList  odtListStyle
	// Metadata.
	title, initialCreator, creator string
	pages                          int
	metaField                      *string
	metaBuf                        strings.Builder
	// Body.
	paras    []*odtParaCtx
	frames   []*odtFrame
	lists    []odtList
	listIDs  map[string]string
	lastKey  map[string]string
	numLists int
	notes    int
}

func newODTWalk(ctx context.Context) *odtWalk {
	b := newBodyBuilder(outputsFor(ctx))
	b.collapse = true
	return &odtWalk{
		ctx:     ctx,
		b:       b,
		pstyles: map[string]*odtStyle{},
		tstyles: map[string]*odtStyle{},
		lstyles: map[string]odtListStyle{},
		listIDs: map[string]string{},
		lastKey: map[string]string{},
	}
}

// part reads one XML part (or a whole flat document).
func (w *odtWalk) part(name string, data []byte) error {
	w.stack, w.skip = w.stack[:0], 0
	err := walkXML(w.ctx, name, data, func(tok xml.Token) bool {
		switch t := tok.(type) {
		case xml.StartElement:
			w.start(t)
		case xml.EndElement:
			w.end()
		case xml.CharData:
			w.chars(t)
		}
		return !w.b.truncated
	})
	if err == nil {
		return nil
	}
	bad := xmlDamage(err)
	switch {
	case bad == nil:
		return err
	case name == "content.xml" || name == "the document":
		if !w.b.content {
			return err
		}
		w.b.warn("%s is damaged at byte %d; the text after it is missing", name, bad.offset)
	default:
		w.b.warn("%s is damaged; some styles or metadata are missing", name)
	}
	return nil
}

func (w *odtWalk) document() *Document {
	doc := w.b.document()
	doc.Title = w.title
	doc.Author = w.initialCreator
	if doc.Author == "" {
		doc.Author = w.creator
	}
	doc.Pages = w.pages
	return doc
}

// odtSkipped are elements whose content is not document text.
var odtSkipped = map[string]map[string]bool{
	odfOfficeNS: {"font-face-decls": true, "scripts": true, "settings": true, "master-styles": true,
		"annotation": true, "forms": true, "event-listeners": true, "binary-data": true},
	odfTextNS: {"tracked-changes": true, "note-citation": true, "sequence-decls": true,
		"variable-decls": true, "user-field-decls": true, "dde-connection-decls": true,
		"index-title-template": true, "ruby-text": true, "outline-style": true,
		"notes-configuration": true, "linenumbering-configuration": true, "bibliography-configuration": true},
	odfTableNS: {"table-column": true, "table-columns": true, "table-header-columns": true,
		"table-column-group": true, "table-source": true, "scenario": true, "shapes": true},
	odfDrawNS: {"object": true, "object-ole": true, "plugin": true, "applet": true,
		"floating-frame": true, "contour-polygon": true, "contour-path": true, "glue-point": true},
	odfStyleNS: {"default-style": true, "page-layout": true, "presentation-page-layout": true,
		"header-style": true, "footer-style": true},
}

func (w *odtWalk) skipped(se xml.StartElement) bool {
	if odtSkipped[se.Name.Space][se.Name.Local] {
		return true
	}
	switch se.Name.Space {
	case odfTextNS:
		// The templates of indexes (text:table-of-content-source and the
		// like); their bodies (text:index-body) are read.
		return strings.HasSuffix(se.Name.Local, "-source")
	case odfOfficeNS:
		// styles.xml's automatic styles serve headers and footers, and
		// their names clash with content.xml's.
		return se.Name.Local == "automatic-styles" && w.inStylesXML
	}
	return false
}

func (w *odtWalk) start(se xml.StartElement) {
	if w.skip > 0 {
		w.skip++
		return
	}
	if w.skipped(se) {
		w.skip = 1
		return
	}
	el := odtElem{}
	b := w.b
	get := func(space, local string) string {
		v, _ := xmlAttr(se, space, local)
		return v
	}
	parent := odtElem{}
	if len(w.stack) > 0 {
		parent = w.stack[len(w.stack)-1]
	}
	switch se.Name.Space {
	case odfStyleNS:
		switch se.Name.Local {
		case "style":
			el.act = oaStyle
			w.curStyle = nil
			st := &odtStyle{parent: get(odfStyleNS, "parent-style-name"), display: get(odfStyleNS, "display-name")}
			name := get(odfStyleNS, "name")
			switch get(odfStyleNS, "family") {
			case "paragraph":
				if len(w.pstyles) < 100_000 {
					w.pstyles[name], w.curStyle = st, st
				}
			case "text":
				if len(w.tstyles) < 100_000 {
					w.tstyles[name], w.curStyle = st, st
				}
			}
		case "text-properties":
			if w.curStyle != nil && parent.act == oaStyle {
				w.curStyle.bold = odfWeight(get(odfFONS, "font-weight"))
				w.curStyle.italic = odfStyle(get(odfFONS, "font-style"))
			}
		}
	case odfMetaNS, officeDCNS:
		w.meta(se, &el)
	case odfTextNS:
		w.textStart(se, &el, parent, get)
	case odfTableNS:
		switch se.Name.Local {
		case "table":
			el.act, el.arg = oaTable, int(b.startTable())
		case "table-row":
			b.startRow()
		case "table-cell":
			el.act = oaCell
			if b.startCell(officeAtoi(get(odfTableNS, "number-columns-spanned"), 1),
				officeAtoi(get(odfTableNS, "number-rows-spanned"), 1),
				officeAtoi(get(odfTableNS, "number-columns-repeated"), 1)) {
				el.arg = 1
			}
		case "covered-table-cell":
			b.skipColumns(min(officeAtoi(get(odfTableNS, "number-columns-repeated"), 1), maxOfficeRepeat))
			w.skip = 1
			return
		}
	case odfDrawNS:
		switch se.Name.Local {
		case "frame":
			if len(w.frames) < maxOfficeFrames {
				el.act = oaFrame
				w.frames = append(w.frames, &odtFrame{name: get(odfDrawNS, "name")})
			}
		case "image":
			if parent.act == oaFrame {
				if f := w.frames[len(w.frames)-1]; f.image == "" {
					f.image = get(odfXLinkNS, "href")
				}
			}
			// Its content is the image's data or a replacement text.
			w.skip = 1
			return
		case "text-box":
			if b.startBox() {
				el.act = oaBox
			}
		}
	case odfSVGNS:
		if parent.act != oaFrame || (se.Name.Local != "title" && se.Name.Local != "desc") {
			w.skip = 1
			return
		}
		el.act = oaFrameTitle
		if se.Name.Local == "desc" {
			el.act = oaFrameDesc
		}
	}
	w.stack = append(w.stack, el)
}

// meta handles the metadata elements.
func (w *odtWalk) meta(se xml.StartElement, el *odtElem) {
	switch {
	case se.Name.Space == odfMetaNS && se.Name.Local == "document-statistic":
		if v, ok := xmlAttr(se, odfMetaNS, "page-count"); ok {
			w.pages = officeAtoi(v, 0)
		}
	case se.Name.Space == odfMetaNS && se.Name.Local == "initial-creator":
		w.metaField = &w.initialCreator
	case se.Name.Space == officeDCNS && se.Name.Local == "creator":
		w.metaField = &w.creator
	case se.Name.Space == officeDCNS && se.Name.Local == "title":
		w.metaField = &w.title
	default:
		return
	}
	if w.metaField != nil {
		el.act = oaMeta
		w.metaBuf.Reset()
	}
}

// odfWeight reads fo:font-weight.
func odfWeight(v string) triState {
	switch v {
	case "":
		return triUnset
	case "bold", "bolder", "600", "700", "800", "900":
		return triOn
	}
	return triOff
}

// odfStyle reads fo:font-style.
func odfStyle(v string) triState {
	switch v {
	case "":
		return triUnset
	case "italic", "oblique":
		return triOn
	}
	return triOff
}

// chain calls visit on a style and its parents until visit returns true.
// It returns the first name of the chain that no style part defines, ""
// when visit stopped it or every style in it is defined.
func odtChain(styles map[string]*odtStyle, name string, visit func(name string, s *odtStyle) bool) (undefined string) {
	for i := 0; i < 32 && name != ""; i++ {
		s := styles[name]
		if s == nil {
			return name
		}
		if visit(name, s) {
			return ""
		}
		name = s.parent
	}
	return ""
}

// props are the bold and italic a style (with its parents) sets.
func odtProps(styles map[string]*odtStyle, name string) (bold, italic triState) {
	odtChain(styles, name, func(_ string, s *odtStyle) bool {
		bold, italic = bold.or(s.bold), italic.or(s.italic)
		return bold != triUnset && italic != triUnset
	})
	return bold, italic
}

// paraLevel is the heading level a text:p takes from its paragraph style:
// 1 for Title or a style derived from it (DOCX calls it a heading too), and
// for a style that neither styles.xml nor content.xml defines (a producer
// that wrote no styles.xml, or left the built-ins out of it), the level of
// LibreOffice's built-in style of that name, Heading_20_1 and on, or Title.
// A defined heading style makes no heading of a text:p, as before:
// LibreOffice writes every paragraph at an outline level as text:h, so its
// text:p in a heading style is one whose outline level was taken away.
func (w *odtWalk) paraLevel(name string) int {
	level := 0
	undefined := odtChain(w.pstyles, name, func(name string, s *odtStyle) bool {
		if name == "Title" || s.display == "Title" {
			level = 1
		}
		return level > 0
	})
	if level == 0 && undefined != "" {
		level = odtBuiltinLevel(undefined)
	}
	return level
}

// odtBuiltinLevel is the heading level of LibreOffice's built-in paragraph
// style called name (as a style name, with spaces encoded as _20_, or as a
// display name): Heading 1 to Heading 10, and Title; 0 for any other.
func odtBuiltinLevel(name string) int {
	name = strings.ReplaceAll(name, "_20_", " ")
	if n := officeHeadingNumber(name); n >= 1 && n <= 10 {
		return n
	}
	if name == "Title" {
		return 1
	}
	return 0
}

func (w *odtWalk) textStart(se xml.StartElement, el *odtElem, parent odtElem, get func(string, string) string) {
	b := w.b
	el.text = true
	switch se.Name.Local {
	case "list-style":
		el.act = oaListStyle
		w.curList = odtListStyle{}
		if len(w.lstyles) < 100_000 {
			w.lstyles[get(odfStyleNS, "name")] = w.curList
		}
	case "list-level-style-number", "list-level-style-bullet", "list-level-style-image":
		if parent.act == oaListStyle {
			level := officeAtoi(get(odfTextNS, "level"), 1)
			// An empty number format shows no number.
			format, hasFormat := xmlAttr(se, odfStyleNS, "num-format")
			ordered := se.Name.Local == "list-level-style-number" && (!hasFormat || format != "")
			w.curList[level] = odtListLevelStyle{ordered: ordered, start: officeAtoi(get(odfTextNS, "start-value"), 1)}
		}
	case "p", "h":
		kind, level := Paragraph, 0
		style := get(odfTextNS, "style-name")
		ctx := &odtParaCtx{}
		if se.Name.Local == "h" {
			kind, level = Heading, officeAtoi(get(odfTextNS, "outline-level"), 1)
		} else if l := w.paraLevel(style); l > 0 {
			kind, level = Heading, l
		} else {
			ctx.bold, ctx.italic = odtProps(w.pstyles, style)
		}
		el.act = oaPara
		if b.startPara(kind, level) {
			el.act = oaParaNested
		}
		w.paras = append(w.paras, ctx)
	case "span":
		if p := w.para(); p != nil {
			p.pushSpan(odtProps(w.tstyles, get(odfTextNS, "style-name")))
			el.act = oaSpan
		}
	case "a":
		if p := w.para(); p != nil {
			p.pushHref(get(odfXLinkNS, "href"))
			el.act = oaHref
		}
	case "s":
		if w.para() != nil {
			n := min(max(officeAtoi(get(odfTextNS, "c"), 1), 1), 1000)
			b.literal(strings.Repeat(" ", n), w.props())
		}
	case "tab":
		if w.para() != nil {
			b.literal(" ", w.props())
		}
	case "line-break":
		if w.para() != nil {
			b.inline(Inline{Break: true})
		}
	case "note":
		w.notes++
		n := b.noteRef("note" + strconv.Itoa(w.notes))
		b.inline(Inline{Note: n})
		if !b.startNote(n) {
			w.skip = 1
			return
		}
		el.act = oaNote
		// The note's paragraphs do not take the formatting around it.
		w.paras = append(w.paras, nil)
	case "list":
		w.listStart(se, el, get)
	case "list-item", "list-header":
		start, ok := xmlAttr(se, odfTextNS, "start-value")
		b.itemStart(officeAtoi(start, 1), ok)
		el.act = oaItem
	}
}

// listStart opens a text:list: a list nested in another takes its style
// and numbering from it, a new list gets numbering of its own unless it
// continues an earlier one.
func (w *odtWalk) listStart(se xml.StartElement, el *odtElem, get func(string, string) string) {
	f := w.b.flow()
	if f == nil {
		return
	}
	style := get(odfTextNS, "style-name")
	var key string
	if n := len(w.lists); n > 0 && w.lists[n-1].flow == f && len(f.odt) > 0 {
		if style == "" {
			style = w.lists[n-1].style
		}
		key = w.lists[n-1].key
	} else {
		if id := get(odfTextNS, "continue-list"); id != "" {
			key = w.listIDs[id]
		}
		if key == "" && get(odfTextNS, "continue-numbering") == "true" {
			key = w.lastKey[style]
		}
		if key == "" {
			w.numLists++
			key = "odt:" + strconv.Itoa(w.numLists)
		}
		if id, ok := xmlAttr(se, "", "id"); ok && len(w.listIDs) < 100_000 {
			w.listIDs[id] = key
		}
		w.lastKey[style] = key
	}
	lv := w.lstyles[style][len(f.odt)+1]
	if !w.b.listStart(odtListLevel{key: key, ordered: lv.ordered, start: max(lv.start, 0)}) {
		return
	}
	el.act = oaList
	w.lists = append(w.lists, odtList{style: style, key: key, flow: f})
}

// para returns the formatting state of the open paragraph, nil outside
// paragraphs.
func (w *odtWalk) para() *odtParaCtx {
	if n := len(w.paras); n > 0 {
		return w.paras[n-1]
	}
	return nil
}

// props are the properties of text at this point: the innermost span that
// sets bold or italic, else the paragraph style, and the innermost link.
func (w *odtWalk) props() officeRun {
	p := w.para()
	if p == nil {
		return officeRun{}
	}
	bold, italic, href := p.bold, p.italic, ""
	if n := len(p.spans); n > 0 {
		bold, italic = p.spans[n-1][0].or(bold), p.spans[n-1][1].or(italic)
	}
	if n := len(p.hrefs); n > 0 {
		href = p.hrefs[n-1]
	}
	return officeRun{bold: bold == triOn, italic: italic == triOn, href: href}
}

func (w *odtWalk) chars(cd xml.CharData) {
	if w.skip > 0 || len(w.stack) == 0 {
		return
	}
	top := w.stack[len(w.stack)-1]
	switch top.act {
	case oaMeta:
		if w.metaBuf.Len() < 4096 {
			w.metaBuf.Write(cd)
		}
	case oaFrameTitle, oaFrameDesc:
		f := w.frames[len(w.frames)-1]
		sb := &f.title
		if top.act == oaFrameDesc {
			sb = &f.desc
		}
		if sb.Len() < 4096 {
			sb.Write(cd)
		}
	default:
		// Paragraph text: inside a paragraph, directly in a text element
		// (a span, a link, a field), not between the elements of a frame.
		if top.text && w.para() != nil {
			w.b.text(string(cd), w.props())
		}
	}
}

func (w *odtWalk) end() {
	if w.skip > 0 {
		w.skip--
		return
	}
	if len(w.stack) == 0 {
		return
	}
	el := w.stack[len(w.stack)-1]
	w.stack = w.stack[:len(w.stack)-1]
	b := w.b
	switch el.act {
	case oaStyle:
		w.curStyle = nil
	case oaListStyle:
		w.curList = nil
	case oaMeta:
		if w.metaField != nil {
			*w.metaField = strings.Join(strings.Fields(w.metaBuf.String()), " ")
			w.metaField = nil
		}
	case oaPara, oaParaNested:
		b.endPara(el.act == oaParaNested)
		w.paras = w.paras[:len(w.paras)-1]
	case oaSpan:
		if p := w.para(); p != nil && len(p.spans) > 0 {
			p.spans = p.spans[:len(p.spans)-1]
		}
	case oaHref:
		if p := w.para(); p != nil && len(p.hrefs) > 0 {
			p.hrefs = p.hrefs[:len(p.hrefs)-1]
		}
	case oaNote:
		b.endNote()
		w.paras = w.paras[:len(w.paras)-1]
	case oaList:
		b.listEnd()
		w.lists = w.lists[:len(w.lists)-1]
	case oaItem:
		b.itemEnd()
	case oaTable:
		b.endTable(officeTableMode(el.arg))
	case oaCell:
		if el.arg == 1 {
			b.endCell()
		}
	case oaBox:
		b.endBox()
	case oaFrame:
		f := w.frames[len(w.frames)-1]
		w.frames = w.frames[:len(w.frames)-1]
		if f.image != "" {
			alt := strings.Join(strings.Fields(f.desc.String()), " ")
			if alt == "" {
				alt = strings.Join(strings.Fields(f.title.String()), " ")
			}
			if alt == "" {
				alt = f.name
			}
			b.inline(Inline{Image: f.image, Text: alt})
		}
	}
}
