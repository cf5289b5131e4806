package content

import (
	"bytes"
	"fmt"
	"io"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// The HTML parser (golang.org/x/net/html) refuses a document whose stack of
// open elements passes 512 ("html: open stack of elements exceeds 512
// nodes"), a limit it does not let callers raise, and pages pass it:
// generated layouts, comment threads, a <font> or <div> left unclosed in a
// loop. parseHTML parses such a page again from a flattened copy of its
// token stream. No library flattens HTML, so flattener does it over the
// parser's own tokenizer, which has no depth limit.

const (
	// parserDepthLimit is the stack depth x/net/html refuses to pass.
	parserDepthLimit = 512
	// flattenDepth is the nesting kept as it is when a page is too deep.
	// It is half the parser's limit: the parser adds elements of its own
	// (html, body, tbody, the flattened region's paragraphs, formatting
	// elements it reopens) that the flattener only estimates.
	flattenDepth = parserDepthLimit / 2
	// flattenIndent is the nesting of lists and quotes kept, in a page
	// flattened for the parser and, by flattenIndents, in the Markdown of
	// every page. Markdown indents each level, and the converter copies
	// each level's content into its parent's, indented, so its cost grows
	// with the square of the nesting times the lines under it: a page of a
	// few hundred nested lists, tens of kilobytes, cost it seconds and
	// gigabytes (nesting_test.go's pages). Bounded, a line is copied at
	// most 8 times. Real pages stay within it: documentation nests
	// lists 5 or 6 deep (the testdata pages at most 4), with a quote or two
	// around them, and past that the indentation says nothing the text
	// does not.
	flattenIndent = 8
)

// parseHTML parses a UTF-8 page. A page nested deeper than the parser
// takes is parsed from a copy flattened past flattenDepth, or, should the
// parser still refuse it (misnested formatting the parser reopens at every
// block), from a copy flattened throughout; warning then says so. A page
// within the limit, nearly every page, is parsed once, as it is.
func parseHTML(raw []byte) (doc *html.Node, warning string, err error) {
	doc, err = html.Parse(bytes.NewReader(raw))
	if err == nil {
		return doc, "", nil
	}
	// Reading from memory cannot fail: the parser's error is its refusal,
	// which it reports only as text, so any error gets the flattened retry.
	for _, depth := range []int{flattenDepth, 0} {
		if d, ferr := html.Parse(newFlattener(raw, depth)); ferr == nil {
			return d, flattenWarning(depth), nil
		}
	}
	return nil, "", err
}

func flattenWarning(depth int) string {
	if depth == 0 {
		return fmt.Sprintf("the HTML nests elements deeper than the parser's limit of %d: all of it was flattened into paragraphs, "+
			"keeping its text, headings, links and images", parserDepthLimit)
	}
	return fmt.Sprintf("the HTML nests elements deeper than the parser's limit of %d: elements nested more than %d deep "+
		"(lists and quotes more than %d deep) were flattened into paragraphs, keeping their text, headings, links and images",
		parserDepthLimit, depth, flattenIndent)
}

// indentWarning is the warning of a page whose lists and quotes, within
// the parser's limit, nest past flattenIndent. flattenWarning covers them
// too: a page gets one warning or the other.
func indentWarning() string {
	return fmt.Sprintf("the HTML nests lists and quotes more than %d deep: in the Markdown, the deeper ones were "+
		"flattened into paragraphs of the deepest item or quote kept, keeping their text, links and images", flattenIndent)
}

// flattenIndents turns the lists and quotes under n nested more than
// flattenIndent deep, and the items of those lists, into plain blocks
// (divs), which the Markdown converter renders as paragraphs, without
// indentation, in the deepest list item or quote kept. It reports whether
// it changed anything. It works on the tree the converter is given, not on
// the page's tokens as the flattener does, so that it bounds every page,
// however deep the rest of it.
func flattenIndents(n *html.Node) bool {
	return flattenIndentsUnder(n, 0)
}

// flattenIndentsUnder is flattenIndents for n's children, with depth
// lists and quotes kept around them. Its recursion is as deep as the
// tree, which the parser keeps within parserDepthLimit.
func flattenIndentsUnder(n *html.Node, depth int) bool {
	changed := false
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode {
			continue
		}
		d := depth
		if c.Namespace == "" && isIndent(c.DataAtom) {
			if depth < flattenIndent {
				d++
			} else {
				flattenIndentElement(c)
				changed = true
			}
		}
		if flattenIndentsUnder(c, d) {
			changed = true
		}
	}
	return changed
}

// flattenIndentElement makes a list or quote a div, and a list's items
// too: an item left as it is would still be one to the converter.
func flattenIndentElement(n *html.Node) {
	if n.DataAtom == atom.Ul || n.DataAtom == atom.Ol {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode && c.DataAtom == atom.Li {
				toDiv(c)
			}
		}
	}
	toDiv(n)
}

func toDiv(n *html.Node) {
	n.DataAtom, n.Data, n.Attr = atom.Div, "div", nil
}

// mode is what the flattener did with an element's tags.
type mode uint8

const (
	// verbatim elements are within the depth, passed on as they are.
	verbatim mode = iota
	// kept elements are past the depth but passed on because they carry
	// meaning the Markdown shows: a link, emphasis, code, a heading, a
	// table with its rows and cells, a list with its items. At most one of
	// each kind is open at a time (a table or list in a kept one is
	// dropped), so that they cannot nest. The flattener writes their end
	// tags itself.
	kept
	// dropped elements lose their tags; their content stays, in a new
	// paragraph when the element is a block.
	dropped
)

// entry is an element the flattener holds open. It is kept small: a page
// of nothing but start tags puts one entry per tag on the stack.
type entry struct {
	name nameID
	prev int32 // index of the next open entry of the same name below; -1 if none
	mode mode
	// silent: an element whose content is not page text (template, svg,
	// select, ...); past the depth it is dropped with its content.
	silent bool
}

// nameID is a tag name: its atom, or an interned id for a name without one
// (custom elements).
type nameID uint32

const (
	firstOtherName nameID = 1 << 31
	// maxOtherNames bounds the interned names; the names past it share one
	// id, so that their end tags match one another.
	maxOtherNames = 1 << 12
)

// flattener is an io.Reader of a page's HTML in which elements nested
// deeper than depth lose their tags (see mode). It reads the page token by
// token, writing each token's raw bytes as they are or leaving them out, so
// it holds a token at a time and the stack of open elements, never a copy
// of the page. It follows the parser's tree construction only as far as
// the depth needs: the end tags and the implied ends (a <p> closed by a
// block, an <li> by the next, a cell by the next) that keep an element's
// depth what the parser will make it.
type flattener struct {
	z     *html.Tokenizer
	depth int

	out  []byte // output not yet read
	off  int
	done bool

	stack []entry
	// nverbatim counts the verbatim entries, which are always the bottom
	// of the stack: flattening starts above them. nindent counts the lists
	// and quotes among them.
	nverbatim, nindent int
	// top maps a name to the index of its topmost open entry.
	top map[nameID]int32
	// scopes and specials hold the indices of the verbatim entries that
	// bound an element's scope (table, td, ...), and of the special
	// elements that stop an <li>, <dd> or <dt> from closing an earlier one.
	scopes, specials []int32
	// passed holds the indices of the entries passed on (not dropped).
	passed []int32
	others map[string]nameID

	silent  int             // open silent entries
	keptOf  map[nameID]bool // kinds of kept entries open
	block   bool            // a kept heading or <pre> is open
	inPre   bool            // ... and it is a <pre>
	pending bool            // a dropped block ended or began: the next text starts a paragraph
	pOpen   bool            // the flattener opened a paragraph that may be open still
}

func newFlattener(raw []byte, depth int) *flattener {
	return &flattener{
		z:      html.NewTokenizer(bytes.NewReader(raw)),
		depth:  depth,
		top:    map[nameID]int32{},
		others: map[string]nameID{},
		keptOf: map[nameID]bool{},
	}
}

func (f *flattener) Read(p []byte) (int, error) {
	for f.off == len(f.out) {
		if f.done {
			return 0, io.EOF
		}
		f.out, f.off = f.out[:0], 0
		f.step()
	}
	n := copy(p, f.out[f.off:])
	f.off += n
	return n, nil
}

// flat reports whether a new element is past the depth.
func (f *flattener) flat() bool {
	return len(f.stack) > f.nverbatim || f.nverbatim >= f.depth
}

func (f *flattener) emit(b []byte)       { f.out = append(f.out, b...) }
func (f *flattener) emitString(s string) { f.out = append(f.out, s...) }

// topIndex returns the index of n's topmost open entry, or -1.
func (f *flattener) topIndex(n nameID) int { return int(f.topOr(n)) }

func (f *flattener) topOr(n nameID) int32 {
	if i, ok := f.top[n]; ok {
		return i
	}
	return -1
}

func last(s []int32) int {
	if len(s) == 0 {
		return -1
	}
	return int(s[len(s)-1])
}

func (f *flattener) step() {
	z := f.z
	z.AllowCDATA(f.topIndex(nameID(atom.Svg)) >= 0 || f.topIndex(nameID(atom.Math)) >= 0)
	switch tt := z.Next(); tt {
	case html.ErrorToken:
		// At the end of the input (reading from memory has no other
		// error) the parser closes what is open.
		f.done = true
	case html.TextToken:
		f.text()
	case html.CommentToken:
		if !f.flat() {
			f.emit(z.Raw())
		}
	case html.DoctypeToken:
		f.emit(z.Raw())
	case html.StartTagToken, html.SelfClosingTagToken:
		f.start(tt == html.SelfClosingTagToken)
	case html.EndTagToken:
		f.end()
	}
}

func (f *flattener) text() {
	raw := f.z.Raw()
	if !f.flat() {
		f.emit(raw)
		return
	}
	if f.silent > 0 {
		return
	}
	if len(bytes.TrimSpace(raw)) > 0 {
		f.flush()
	}
	f.emit(raw)
}

// flush starts the paragraph a dropped block asked for: a new line inside
// a <pre>.
func (f *flattener) flush() {
	if !f.pending {
		return
	}
	f.pending = false
	if f.inPre {
		f.emitString("\n")
		return
	}
	f.emitString("<p>")
	f.pOpen = true
}

func (f *flattener) nameOf(b []byte) nameID {
	if a := atom.Lookup(b); a != 0 {
		return nameID(a)
	}
	if id, ok := f.others[string(b)]; ok {
		return id
	}
	if len(f.others) >= maxOtherNames {
		return firstOtherName + maxOtherNames
	}
	id := firstOtherName + nameID(len(f.others))
	f.others[string(b)] = id
	return id
}

func (f *flattener) start(selfClosing bool) {
	raw := f.z.Raw()
	nameB, _ := f.z.TagName()
	n := f.nameOf(nameB)
	a := atom.Atom(n)
	switch a {
	case atom.Html, atom.Head, atom.Body:
		// The parser keeps one of each whatever the page says, and merges
		// the attributes of repeats: never on the stack.
		if f.silent == 0 {
			f.emit(raw)
		}
		return
	}
	foreign := f.topIndex(nameID(atom.Svg)) >= 0 || f.topIndex(nameID(atom.Math)) >= 0
	if isVoid(a) || selfClosing && (foreign || a == atom.Svg || a == atom.Math) {
		if !f.flat() {
			f.closeImplied(a, 0)
			f.emit(raw)
			return
		}
		if f.silent > 0 {
			return
		}
		switch a {
		case atom.Img, atom.Br, atom.Wbr, atom.Input:
			f.flush()
		}
		f.emit(raw)
		return
	}

	if !f.flat() && !(isIndent(a) && f.nindent >= flattenIndent) {
		f.closeImplied(a, 0)
		f.push(n, verbatim)
		f.emit(raw)
		return
	}

	if isTablePart(a) || a == atom.Li {
		// Close the previous cell, row or item, when the page leaves that
		// to the parser, but nothing verbatim: the tag may be dropped.
		f.closeImplied(a, f.nverbatim)
	}
	switch {
	case f.silent > 0 || isSilent(a):
		f.push(n, dropped)
		f.silenceTop()
	case isRawText(a):
		// Text only, up to its own end tag: it cannot nest.
		f.push(n, kept)
		f.emit(raw)
	case isKeptInline(a) && !f.keptOf[n]:
		f.flush()
		f.keptOf[n] = true
		f.push(n, kept)
		f.emit(raw)
	case isKeptBlock(a) && !f.block:
		f.block, f.inPre = true, a == atom.Pre || a == atom.Listing
		f.keepBlock(n, raw)
	case (a == atom.Table || a == atom.Ul || a == atom.Ol) && !f.keptOf[kindOf(a)]:
		// One table and one list at a time: nested ones are flattened
		// into their cells and items.
		f.keptOf[kindOf(a)] = true
		f.keepBlock(n, raw)
	case fitsIn(a, f.keptTop()):
		// The parts of a kept table or list, and of a table just within
		// the depth: dropped, the text of a cell would land in the table
		// itself, which the parser moves before it.
		f.keepBlock(n, raw)
	default:
		f.push(n, dropped)
		if !isInline(a) {
			f.pending = true
		}
	}
}

// keepBlock passes on the start tag of a kept block, which needs no
// paragraph of the flattener's.
func (f *flattener) keepBlock(n nameID, raw []byte) {
	f.pending, f.pOpen = false, false
	f.push(n, kept)
	f.emit(raw)
}

// keptTop returns the atom of the topmost entry that is not dropped, or 0
// (the body).
func (f *flattener) keptTop() atom.Atom {
	if len(f.passed) == 0 {
		return 0
	}
	return atom.Atom(f.stack[last(f.passed)].name)
}

// fitsIn reports whether a part of a table or a list item belongs
// directly in parent (the parser adds the tbody and tr a table may lack).
func fitsIn(a, parent atom.Atom) bool {
	switch a {
	case atom.Caption, atom.Colgroup, atom.Tbody, atom.Thead, atom.Tfoot:
		return parent == atom.Table
	case atom.Tr, atom.Td, atom.Th:
		switch parent {
		case atom.Table, atom.Tbody, atom.Thead, atom.Tfoot:
			return true
		case atom.Tr:
			return a != atom.Tr
		}
	case atom.Li:
		return parent == atom.Ul || parent == atom.Ol
	}
	return false
}

// kindOf names the kind of a kept element of which one at a time is open:
// ordered and unordered lists are one kind.
func kindOf(a atom.Atom) nameID {
	if a == atom.Ol {
		return nameID(atom.Ul)
	}
	return nameID(a)
}

func (f *flattener) end() {
	raw := f.z.Raw()
	nameB, _ := f.z.TagName()
	n := f.nameOf(nameB)
	a := atom.Atom(n)
	switch a {
	case atom.Html, atom.Head, atom.Body:
		if !f.flat() {
			f.emit(raw)
		}
		return
	}
	i := f.topIndex(n)
	// The parser ignores the end tag of an element outside its scope (a
	// </div> inside a cell for a <div> around the table).
	if i >= 0 && i < last(f.scopes) && f.stack[i].mode == verbatim {
		i = -1
	}
	if i < 0 {
		if !f.flat() {
			// The parser makes something of a few (</p>, </br>).
			f.emit(raw)
		} else if f.silent == 0 && !isInline(a) {
			f.pending = true
		}
		return
	}
	e := f.stack[i]
	f.popTo(i)
	if e.mode == verbatim {
		if f.pOpen && isInline(a) {
			// Close the flattener's paragraph first: the parser ignores the
			// end tag of an inline element with a paragraph open inside it
			// (a block's end tag closes the paragraph too).
			f.emitString("</p>")
		}
		f.pending, f.pOpen = false, false
		f.emit(raw)
	}
}

// popTo pops the entries from the top down to index i, writing the end
// tags of the kept ones; the parser closes the verbatim ones itself when it
// reads the end tag or start tag that closed them.
func (f *flattener) popTo(i int) {
	for len(f.stack) > i {
		j := len(f.stack) - 1
		e := f.stack[j]
		f.stack = f.stack[:j]
		if e.prev >= 0 {
			f.top[e.name] = e.prev
		} else {
			delete(f.top, e.name)
		}
		if last(f.scopes) == j {
			f.scopes = f.scopes[:len(f.scopes)-1]
		}
		if last(f.specials) == j {
			f.specials = f.specials[:len(f.specials)-1]
		}
		if last(f.passed) == j {
			f.passed = f.passed[:len(f.passed)-1]
		}
		a := atom.Atom(e.name)
		switch e.mode {
		case verbatim:
			f.nverbatim--
			if isIndent(a) {
				f.nindent--
			}
		case kept:
			f.emitString("</" + a.String() + ">")
			delete(f.keptOf, kindOf(a))
			if isKeptBlock(a) {
				f.block, f.inPre = false, false
			}
			if !isInline(a) && !isRawText(a) {
				f.pending, f.pOpen = true, false
			}
		case dropped:
			if e.silent {
				f.silent--
			} else if !isInline(a) {
				f.pending = true
			}
		}
	}
}

func (f *flattener) push(n nameID, m mode) {
	i := int32(len(f.stack))
	f.stack = append(f.stack, entry{name: n, prev: f.topOr(n), mode: m})
	f.top[n] = i
	if m != dropped {
		f.passed = append(f.passed, i)
	}
	if m != verbatim {
		return
	}
	f.nverbatim++
	a := atom.Atom(n)
	if isIndent(a) {
		f.nindent++
	}
	if isScope(a) {
		f.scopes = append(f.scopes, i)
	}
	if isSpecial(a) {
		f.specials = append(f.specials, i)
	}
}

// silenceTop marks the element just pushed as silent: its content is not
// page text, up to its end tag.
func (f *flattener) silenceTop() {
	f.stack[len(f.stack)-1].silent = true
	f.silent++
}

// closeImplied pops what a start tag of a closes in the parser: the
// commonest implied end tags, the ones whose omission would otherwise make
// the stack grow with every list item, paragraph or table cell. It pops no
// entry below floor.
func (f *flattener) closeImplied(a atom.Atom, floor int) {
	topAbove := func(i, bound int) {
		if i >= floor && i > bound {
			f.popTo(i)
		}
	}
	table := f.topIndex(nameID(atom.Table))
	if closesP(a) {
		topAbove(f.topIndex(nameID(atom.P)), max(last(f.scopes), f.topIndex(nameID(atom.Button))))
	}
	switch a {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		if isHeadingAtom(f.topAtom()) {
			f.popTo(len(f.stack) - 1)
		}
	case atom.Li:
		topAbove(f.topIndex(nameID(atom.Li)), last(f.specials))
	case atom.Dd, atom.Dt:
		topAbove(max(f.topIndex(nameID(atom.Dd)), f.topIndex(nameID(atom.Dt))), last(f.specials))
	case atom.Td, atom.Th:
		topAbove(max(f.topIndex(nameID(atom.Td)), f.topIndex(nameID(atom.Th))), table)
	case atom.Tr:
		topAbove(f.topIndex(nameID(atom.Tr)), table)
	case atom.Tbody, atom.Thead, atom.Tfoot:
		topAbove(max(f.topIndex(nameID(atom.Tbody)), f.topIndex(nameID(atom.Thead)), f.topIndex(nameID(atom.Tfoot))), table)
	case atom.Table:
		// A table directly in a table (not in a cell) ends the first.
		cell := max(f.topIndex(nameID(atom.Td)), f.topIndex(nameID(atom.Th)), f.topIndex(nameID(atom.Caption)))
		if table > cell {
			f.popTo(table)
		}
	case atom.Button:
		topAbove(f.topIndex(nameID(atom.Button)), last(f.scopes))
	case atom.A, atom.Option:
		// The parser closes an open <a> wherever it is (rebuilding what
		// lies above it); only the plain case is followed here.
		if f.topAtom() == a {
			f.popTo(len(f.stack) - 1)
		}
	case atom.Optgroup:
		if f.topAtom() == atom.Option {
			f.popTo(len(f.stack) - 1)
		}
		if f.topAtom() == atom.Optgroup {
			f.popTo(len(f.stack) - 1)
		}
	}
}

// topAtom returns the atom of the topmost open entry, or 0.
func (f *flattener) topAtom() atom.Atom {
	if len(f.stack) == 0 {
		return 0
	}
	return atom.Atom(f.stack[len(f.stack)-1].name)
}

func isHeadingAtom(a atom.Atom) bool {
	switch a {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		return true
	}
	return false
}

func isVoid(a atom.Atom) bool {
	switch a {
	case atom.Area, atom.Base, atom.Basefont, atom.Bgsound, atom.Br, atom.Col, atom.Embed, atom.Frame, atom.Hr,
		atom.Image, atom.Img, atom.Input, atom.Keygen, atom.Link, atom.Meta, atom.Param, atom.Source, atom.Track, atom.Wbr:
		return true
	}
	return false
}

// isRawText reports whether the tokenizer reads a's content as text up to
// its end tag.
func isRawText(a atom.Atom) bool {
	switch a {
	case atom.Iframe, atom.Noembed, atom.Noframes, atom.Noscript, atom.Plaintext, atom.Script, atom.Style,
		atom.Textarea, atom.Title, atom.Xmp:
		return true
	}
	return false
}

// isSilent reports whether a's content is no page text: Transform and the
// Markdown converter remove it (templates, drawings, media fallbacks, form
// options, dialogs), so past the depth it is dropped with its tags.
func isSilent(a atom.Atom) bool {
	switch a {
	case atom.Template, atom.Svg, atom.Math, atom.Select, atom.Datalist, atom.Object, atom.Canvas,
		atom.Video, atom.Audio, atom.Dialog:
		return true
	}
	return false
}

func isKeptInline(a atom.Atom) bool {
	switch a {
	case atom.A, atom.B, atom.Strong, atom.I, atom.Em, atom.Code:
		return true
	}
	return false
}

func isKeptBlock(a atom.Atom) bool {
	switch a {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6, atom.Pre, atom.Listing:
		return true
	}
	return false
}

// isInline reports whether a is phrasing markup, whose dropped tags do not
// separate the text around them. Other elements, custom ones included,
// are blocks.
func isInline(a atom.Atom) bool {
	switch a {
	case atom.A, atom.Abbr, atom.B, atom.Bdi, atom.Bdo, atom.Big, atom.Cite, atom.Code, atom.Data, atom.Del,
		atom.Dfn, atom.Em, atom.Font, atom.I, atom.Ins, atom.Kbd, atom.Label, atom.Mark, atom.Nobr, atom.Q,
		atom.Rp, atom.Rt, atom.Ruby, atom.S, atom.Samp, atom.Small, atom.Span, atom.Strike, atom.Strong,
		atom.Sub, atom.Sup, atom.Time, atom.Tt, atom.U, atom.Var:
		return true
	}
	return false
}

// isIndent reports whether the Markdown indents a's content: lists (their
// items with them) and quotes. The converter renders definition lists, dir
// and menu as plain blocks, which cost it nothing by level.
func isIndent(a atom.Atom) bool {
	switch a {
	case atom.Blockquote, atom.Ol, atom.Ul:
		return true
	}
	return false
}

func isTablePart(a atom.Atom) bool {
	switch a {
	case atom.Caption, atom.Colgroup, atom.Tbody, atom.Thead, atom.Tfoot, atom.Tr, atom.Td, atom.Th:
		return true
	}
	return false
}

// isScope reports whether a bounds the scope of the elements below it.
func isScope(a atom.Atom) bool {
	switch a {
	case atom.Applet, atom.Caption, atom.Marquee, atom.Object, atom.Table, atom.Td, atom.Template, atom.Th:
		return true
	}
	return false
}

// closesP reports whether a's start tag closes an open <p>.
func closesP(a atom.Atom) bool {
	switch a {
	case atom.Address, atom.Article, atom.Aside, atom.Blockquote, atom.Center, atom.Details, atom.Dialog,
		atom.Dir, atom.Div, atom.Dl, atom.Dd, atom.Dt, atom.Fieldset, atom.Figcaption, atom.Figure, atom.Footer,
		atom.Form, atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6, atom.Header, atom.Hgroup, atom.Hr,
		atom.Li, atom.Listing, atom.Main, atom.Menu, atom.Nav, atom.Ol, atom.P, atom.Plaintext, atom.Pre,
		atom.Search, atom.Section, atom.Summary, atom.Table, atom.Ul, atom.Xmp:
		return true
	}
	return false
}

// isSpecial reports whether a is one of the parser's special elements that
// stop the search for an <li>, <dd> or <dt> to close (all but address, div
// and p, and those three themselves).
func isSpecial(a atom.Atom) bool {
	switch a {
	case atom.Applet, atom.Article, atom.Aside, atom.Blockquote, atom.Button, atom.Caption, atom.Center,
		atom.Colgroup, atom.Details, atom.Dir, atom.Dl, atom.Fieldset, atom.Figcaption, atom.Figure,
		atom.Footer, atom.Form, atom.Frameset, atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6,
		atom.Header, atom.Hgroup, atom.Iframe, atom.Listing, atom.Main, atom.Marquee, atom.Menu, atom.Nav,
		atom.Noembed, atom.Noframes, atom.Noscript, atom.Object, atom.Ol, atom.Plaintext, atom.Pre,
		atom.Script, atom.Search, atom.Section, atom.Select, atom.Style, atom.Summary, atom.Table,
		atom.Tbody, atom.Td, atom.Template, atom.Textarea, atom.Tfoot, atom.Th, atom.Thead, atom.Title,
		atom.Tr, atom.Ul, atom.Xmp:
		return true
	}
	return false
}
