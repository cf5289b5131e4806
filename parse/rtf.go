package parse

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
)

// RTF reads a Rich Text Format document.
//
// No Go library that the module proxy serves reads RTF's structure (the
// ones that exist either are not served or only flatten it to text), so the
// tokenizer and the reader are written here, after the RTF 1.9.1
// specification. The reader keeps one state per group, as the specification
// describes, and sends text to the destination the group is in: body text
// goes into paragraphs (bold and italic runs, links from HYPERLINK fields,
// footnote references), tables (\trowd ... \cell ... \row, with \cellx
// boundaries and merge flags giving the spans) and lists (\ls and \ilvl
// against \listtable, or the older \pn paragraphs); the font table gives each
// font's code page, the style sheet the heading styles and \info the title
// and author. Pictures, objects, headers, footers and every ignorable (\*)
// destination it does not know are skipped.
//
// It never panics on hostile input: nesting deeper than maxRTFDepth is
// flattened, \bin data is skipped without being copied, text stops at
// maxTextRunes with a warning, and the context is checked as it goes.
func RTF(ctx context.Context, data []byte) (doc *Document, err error) {
	defer func() {
		if p := recover(); p != nil {
			doc, err = nil, fmt.Errorf("%w: rtf: internal error: %v", ErrMalformed, p)
		}
	}()
	if len(data) > MaxInputBytes {
		return nil, fmt.Errorf("%w: %d MB is more than the %d MB limit", ErrTooLarge, len(data)>>20, MaxInputBytes>>20)
	}
	start := bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF")), " \t\r\n\x00")
	if !bytes.HasPrefix(start, []byte(`{\rtf`)) {
		return nil, fmt.Errorf("%w: not an RTF document", ErrMalformed)
	}
	r := newRTFReader(ctx, start)
	if err := r.run(); err != nil {
		return nil, err
	}
	body := &Body{Blocks: r.flows[0].finish(legacyPara{})}
	body.Notes = r.notes
	d := &Document{Pages: r.pages, Title: cleanMeta(r.title.String()), Author: cleanMeta(r.author.String()), Warnings: r.warnings}
	d.HTML, d.Markdown = renderFor(ctx, body)
	return d, nil
}

// legacyTextLimit caps the characters RTF and DOC keep (a variable so that
// a test can lower it).
var legacyTextLimit = maxTextRunes

const (
	// maxRTFDepth caps group nesting; deeper groups are flattened into their
	// parent.
	maxRTFDepth = 1000
	// legacyMaxTableDepth caps tables nested in table cells; deeper ones are read
	// into the deepest table allowed.
	legacyMaxTableDepth = 32
	// legacyMaxCols caps the cells of a table row (Word allows 63).
	legacyMaxCols = 256
	// legacyMaxCells caps rows times columns of one table; longer tables
	// are split.
	legacyMaxCells = 1 << 20
	// legacyMaxListLevel caps list nesting (Word has nine levels, 0..8).
	legacyMaxListLevel = 8
	// legacyCtxEvery is how many tokens or characters pass between context checks.
	legacyCtxEvery = 4096
)

// rtfDest is what a group's text is for.
type rtfDest int

const (
	destText          rtfDest = iota // body or note text
	destFontTable                    // \fonttbl
	destFontEntry                    // one font in it
	destStyleSheet                   // \stylesheet
	destStyleEntry                   // one style in it
	destInfo                         // \info
	destTitle                        // \info\title
	destAuthor                       // \info\author
	destFieldInst                    // \fldinst
	destListTable                    // \listtable
	destList                         // \list
	destListLevel                    // \listlevel
	destOverrideTable                // \listoverridetable
	destOverride                     // \listoverride
	destPn                           // \pn (old-style list numbering)
	destUpr                          // \upr (ANSI and Unicode versions of a group)
	destIgnore                       // read for its control words, text dropped
)

// rtfState is the state of one group: the destination its text goes to and
// the character and paragraph properties in force.
type rtfState struct {
	dest   rtfDest
	fresh  bool // no token read since the group opened
	star   bool // the group opened with \*
	flow   int  // index into rtfReader.flows
	closes func(*rtfReader)

	bold, italic, hidden bool
	href                 string
	font                 int
	uc                   int

	style, outline, ls, ilvl, itap int
	intbl                          bool
	pn                             int // 1 bullet, 2 numbered (\pnlvlblt, \pnlvlbody)

	fcharset int // in a font table entry
}

type rtfReader struct {
	ctx  context.Context
	data []byte
	pos  int
	st   []rtfState
	// flat counts groups opened past maxRTFDepth, read as part of their
	// parent.
	flat  int
	ticks int

	ansiCP int
	deff   int
	fonts  map[int]int // font number → code page

	styles    map[int]rtfStyle
	styleName strings.Builder

	lists     map[int][]int // \listid → \levelnfc of each level
	listID    int           // of the \list being read
	listNFC   []int
	overrides map[int]int // \ls → \listid
	ovList    int
	ovLs      int

	title, author strings.Builder
	pages         int

	flows  []*legacyFlow
	notes  []Note
	fields []rtfField

	rowDefs       map[int][]legacyCellDef // row definition by table depth
	defs          []legacyCellDef         // cell definitions since \trowd
	legacyCellDef legacyCellDef           // merge flags waiting for their \cellx

	pend   []byte // text bytes not yet decoded
	pendCP int
	skip   int  // characters still to skip after \u
	hi     rune // pending high surrogate from \u
	runes  int
	full   bool

	warnings []string
	warned   map[string]bool
}

type rtfStyle struct {
	name    string
	outline int // -1 when the style has none
}

type rtfField struct {
	depth int
	inst  strings.Builder
	href  string
}

func newRTFReader(ctx context.Context, data []byte) *rtfReader {
	r := &rtfReader{
		ctx: ctx, data: data, ansiCP: 1252,
		fonts: map[int]int{}, styles: map[int]rtfStyle{}, lists: map[int][]int{},
		overrides: map[int]int{}, rowDefs: map[int][]legacyCellDef{}, warned: map[string]bool{},
		flows: []*legacyFlow{{}},
	}
	// The outermost state, below the document's own group.
	r.st = append(r.st, rtfState{uc: 1, outline: -1})
	return r
}

func (r *rtfReader) cur() *rtfState { return &r.st[len(r.st)-1] }

func (r *rtfReader) warn(msg string) {
	if !r.warned[msg] {
		r.warned[msg] = true
		r.warnings = append(r.warnings, msg)
	}
}

// tick checks the context every ctxEvery calls.
func (r *rtfReader) tick() error {
	r.ticks++
	if r.ticks%legacyCtxEvery == 1 {
		return r.ctx.Err()
	}
	return nil
}

// run reads the document to the end of its outermost group.
func (r *rtfReader) run() error {
	data := r.data
	for r.pos < len(data) && !r.full {
		if err := r.tick(); err != nil {
			return err
		}
		c := data[r.pos]
		switch c {
		case '{':
			r.pos++
			r.flush()
			r.skip = 0
			r.push()
		case '}':
			r.pos++
			r.flush()
			r.skip = 0
			if r.flat > 0 {
				r.flat--
				continue
			}
			if len(r.st) <= 1 {
				return nil // a stray brace; nothing is open
			}
			r.pop()
			if len(r.st) == 1 {
				return nil // the document's group closed: what follows is not RTF
			}
		case '\\':
			if err := r.control(); err != nil {
				return err
			}
		case '\r', '\n':
			r.pos++
		default:
			// A run of plain text up to the next special byte.
			j := r.pos
			for j < len(data) && data[j] != '{' && data[j] != '}' && data[j] != '\\' && data[j] != '\r' && data[j] != '\n' {
				j++
			}
			r.cur().fresh = false
			r.text(data[r.pos:j])
			r.pos = j
		}
	}
	r.flush()
	if !r.full && len(r.st) > 1 {
		r.warn("the RTF document ends before all its groups close (truncated?)")
	}
	// Close what is still open so that notes and fields are finished.
	for len(r.st) > 1 {
		r.pop()
	}
	return nil
}

// push opens a group.
func (r *rtfReader) push() {
	if len(r.st) >= maxRTFDepth {
		r.flat++
		r.warn(fmt.Sprintf("groups nested deeper than %d were flattened", maxRTFDepth))
		return
	}
	s := *r.cur()
	s.fresh, s.star, s.closes = true, false, nil
	switch s.dest {
	case destFontTable:
		s.dest = destFontEntry
	case destStyleSheet:
		s.dest = destStyleEntry
		s.style, s.outline = 0, -1
		r.styleName.Reset()
	}
	r.st = append(r.st, s)
}

// pop closes a group, running what its destination does at its end.
func (r *rtfReader) pop() {
	s := r.cur()
	switch s.dest {
	case destFontEntry:
		r.fonts[s.font] = rtfCharsetCP(s.fcharset, r.ansiCP)
	case destStyleEntry:
		r.endStyle()
	}
	if s.closes != nil {
		s.closes(r)
	}
	if len(r.st) == 2 && s.dest == destText && legacyVisible(r.flows[s.flow].pending()) {
		r.endPara() // the document's last paragraph, without \par
	}
	r.st = r.st[:len(r.st)-1]
	// A field closes with the group that opened it.
	for len(r.fields) > 0 && r.fields[len(r.fields)-1].depth > len(r.st) {
		r.fields = r.fields[:len(r.fields)-1]
	}
}

// endStyle records the style sheet entry being read.
func (r *rtfReader) endStyle() {
	s := r.cur()
	name := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(r.styleName.String()), ";"))
	if name != "" || s.outline >= 0 {
		if _, ok := r.styles[s.style]; !ok && len(r.styles) < 10000 {
			r.styles[s.style] = rtfStyle{name: name, outline: s.outline}
		}
	}
	r.styleName.Reset()
}

// skipGroup skips to the end of the group that is open, which it closes
// without running anything: \bin data and escaped braces do not count.
func (r *rtfReader) skipGroup() error {
	data := r.data
	depth := 1
	for r.pos < len(data) {
		if err := r.tick(); err != nil {
			return err
		}
		switch data[r.pos] {
		case '{':
			depth++
			r.pos++
		case '}':
			depth--
			r.pos++
			if depth == 0 {
				r.st = r.st[:len(r.st)-1]
				return nil
			}
		case '\\':
			r.pos++
			if r.pos >= len(data) {
				break
			}
			if !rtfLetter(data[r.pos]) {
				r.pos++
				continue
			}
			name, param, has := r.word()
			if name == "bin" && has && param > 0 {
				r.bin(param)
			}
		default:
			// Jump to the next byte that matters.
			i := bytes.IndexAny(data[r.pos:], "{}\\")
			if i < 0 {
				r.pos = len(data)
			} else {
				r.pos += i
			}
		}
	}
	// Truncated inside the skipped group: it closes at the end.
	r.st = r.st[:len(r.st)-1]
	return nil
}

// bin skips n bytes of binary data.
func (r *rtfReader) bin(n int) {
	if n > len(r.data)-r.pos {
		r.warn("the RTF document ends inside \\bin data (truncated?)")
		r.pos = len(r.data)
		return
	}
	r.pos += n
}

func rtfLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// word reads a control word's name and parameter after its backslash, and
// the space that may end it.
func (r *rtfReader) word() (name string, param int, has bool) {
	data := r.data
	i := r.pos
	for i < len(data) && rtfLetter(data[i]) && i-r.pos < 32 {
		i++
	}
	name = string(data[r.pos:i])
	for i < len(data) && rtfLetter(data[i]) {
		i++ // a name longer than any real one
	}
	neg := false
	if i < len(data) && data[i] == '-' && i+1 < len(data) && data[i+1] >= '0' && data[i+1] <= '9' {
		neg = true
		i++
	}
	digits := 0
	for i < len(data) && data[i] >= '0' && data[i] <= '9' {
		if digits < 10 {
			param = param*10 + int(data[i]-'0')
		}
		digits++
		i++
		has = true
	}
	param = min(param, 1<<31-1)
	if neg {
		param = -param
	}
	if i < len(data) && data[i] == ' ' {
		i++
	}
	r.pos = i
	return name, param, has
}

// control reads a control word or symbol at r.pos.
func (r *rtfReader) control() error {
	data := r.data
	r.pos++ // the backslash
	if r.pos >= len(data) {
		return nil
	}
	c := data[r.pos]
	s := r.cur()
	if !rtfLetter(c) {
		r.pos++
		switch c {
		case '\'':
			// A byte in the current code page.
			if r.pos+2 <= len(data) {
				if b, err := strconv.ParseUint(string(data[r.pos:r.pos+2]), 16, 8); err == nil {
					r.pos += 2
					s.fresh = false
					r.byteText(byte(b))
					return nil
				}
			}
			return nil
		case '*':
			s.star = true
			return nil
		case '\\', '{', '}':
			s.fresh = false
			r.text([]byte{c})
			return nil
		}
		r.flush()
		if r.skip > 0 {
			r.skip--
			return nil
		}
		s.fresh = false
		switch c {
		case '~':
			r.emit("\u00a0")
		case '_':
			r.emit("\u2011")
		case '\r', '\n':
			r.endPara()
		}
		return nil
	}
	name, param, has := r.word()
	r.flush()
	if name == "bin" {
		if has && param > 0 {
			r.bin(param)
		}
		return nil
	}
	if name == "u" {
		r.unicode(param)
		return nil
	}
	if r.skip > 0 {
		r.skip--
		return nil
	}
	if s.fresh {
		s.fresh = false
		if done, err := r.destination(name, param, has); done || err != nil {
			return err
		}
		s = r.cur()
	}
	if s.star {
		s.star = false
	}
	r.word2(s, name, param, has)
	return nil
}

// rtfSkipped are destinations whose content is never text of the document.
var rtfSkipped = map[string]bool{
	"colortbl": true, "pict": true, "object": true, "header": true, "headerl": true,
	"headerr": true, "headerf": true, "footer": true, "footerl": true, "footerr": true,
	"footerf": true, "listtext": true, "pntext": true, "xe": true, "tc": true, "txe": true,
	"shp": true, "shpinst": true, "nonshppict": true, "shppict": true, "filetbl": true,
	"revtbl": true, "rsidtbl": true, "template": true, "ftnsep": true, "ftnsepc": true,
	"ftncn": true, "aftnsep": true, "aftnsepc": true, "aftncn": true, "bkmkstart": true,
	"bkmkend": true, "nonesttables": true, "pgdsctbl": true, "annotation": true,
	"atnid": true, "atnauthor": true, "atndate": true, "atnref": true, "atntime": true,
	"atnicn": true, "atnparent": true, "userprops": true, "background": true,
	"themedata": true, "colorschememapping": true, "latentstyles": true, "datastore": true,
	"xmlnstbl": true, "generator": true, "do": true, "fldtype": true, "datafield": true,
	"mmathPr": true, "listpicture": true, "panose": true, "falt": true, "objdata": true,
	"result": true, "sp": true, "sn": true, "sv": true, "wgrffmtfilter": true,
	"passwordhash": true, "docvar": true, "fchars": true, "lchars": true, "protusertbl": true,
}

// destination handles the first control word of a group, which may name
// the group's destination. It reports whether the word was consumed.
func (r *rtfReader) destination(name string, param int, has bool) (bool, error) {
	s := r.cur()
	parent := r.st[len(r.st)-2].dest
	set := func(d rtfDest) (bool, error) { s.dest = d; return true, nil }
	if rtfSkipped[name] {
		return true, r.skipGroup()
	}
	switch parent {
	case destInfo:
		switch name {
		case "title":
			if r.title.Len() == 0 {
				return set(destTitle)
			}
		case "author":
			// LibreOffice writes the author twice; the first is kept.
			if r.author.Len() == 0 {
				return set(destAuthor)
			}
		case "nofpages":
			s.dest = destIgnore
			return false, nil
		}
		return true, r.skipGroup()
	case destListTable:
		if name == "list" {
			r.listID, r.listNFC = 0, nil
			s.dest = destList
			s.closes = func(r *rtfReader) {
				if r.listID != 0 && len(r.lists) < 10000 {
					r.lists[r.listID] = r.listNFC
				}
			}
			return true, nil
		}
		return true, r.skipGroup()
	case destList:
		if name == "listlevel" && len(r.listNFC) < 16 {
			r.listNFC = append(r.listNFC, 0)
			return set(destListLevel)
		}
		return true, r.skipGroup()
	case destListLevel, destOverride, destFontEntry:
		return true, r.skipGroup()
	case destOverrideTable:
		if name == "listoverride" {
			r.ovList, r.ovLs = 0, 0
			s.dest = destOverride
			s.closes = func(r *rtfReader) {
				if r.ovLs != 0 && len(r.overrides) < 10000 {
					r.overrides[r.ovLs] = r.ovList
				}
			}
			return true, nil
		}
		return true, r.skipGroup()
	case destUpr:
		if name == "ud" {
			return set(destText)
		}
		return true, r.skipGroup()
	case destStyleSheet:
		if s.star {
			return true, r.skipGroup() // character and table styles
		}
		return false, nil
	}
	switch name {
	case "fonttbl":
		return set(destFontTable)
	case "stylesheet":
		return set(destStyleSheet)
	case "info":
		return set(destInfo)
	case "listtable":
		return set(destListTable)
	case "listoverridetable":
		return set(destOverrideTable)
	case "upr":
		return set(destUpr)
	case "pn":
		return set(destPn)
	case "field":
		if len(r.fields) < 64 {
			r.fields = append(r.fields, rtfField{depth: len(r.st)})
		}
		return true, nil
	case "fldinst":
		if len(r.fields) == 0 {
			return true, r.skipGroup()
		}
		s.dest = destFieldInst
		s.closes = func(r *rtfReader) {
			if n := len(r.fields); n > 0 {
				r.fields[n-1].href = wordHyperlink(r.fields[n-1].inst.String())
			}
		}
		return true, nil
	case "fldrslt":
		if n := len(r.fields); n > 0 && r.fields[n-1].href != "" {
			s.href = r.fields[n-1].href
		}
		return true, nil
	case "footnote":
		if s.dest != destText {
			return true, r.skipGroup()
		}
		r.startNote(s)
		return true, nil
	case "nesttableprops":
		return true, nil
	}
	if s.star {
		return true, r.skipGroup()
	}
	return false, nil
}

// startNote sends the group to a new note and leaves a reference to it.
func (r *rtfReader) startNote(s *rtfState) {
	id := len(r.notes) + 1
	r.flows[s.flow].add(Inline{Note: id})
	r.notes = append(r.notes, Note{ID: id})
	r.flows = append(r.flows, &legacyFlow{})
	s.flow = len(r.flows) - 1
	s.style, s.outline, s.ls, s.ilvl, s.itap, s.intbl, s.pn = 0, -1, 0, 0, 0, false, 0
	s.closes = func(r *rtfReader) {
		s := r.cur()
		r.notes[id-1].Blocks = r.flows[s.flow].finish(r.para(s))
	}
}

// word2 applies a control word that is not a destination.
func (r *rtfReader) word2(s *rtfState, name string, param int, has bool) {
	on := !has || param != 0
	switch s.dest {
	case destFontTable, destFontEntry:
		switch name {
		case "f":
			s.font = param
		case "fcharset":
			s.fcharset = param
		case "cpg":
			s.fcharset = -param // a code page, told apart by its sign
		}
		return
	case destStyleSheet, destStyleEntry:
		switch name {
		case "s":
			s.style = param
		case "outlinelevel":
			s.outline = param
		}
		return
	case destListLevel:
		if (name == "levelnfc" || name == "levelnfcn") && len(r.listNFC) > 0 {
			r.listNFC[len(r.listNFC)-1] = param
		}
		return
	case destList:
		if name == "listid" {
			r.listID = param
		}
		return
	case destOverride:
		switch name {
		case "listid":
			r.ovList = param
		case "ls":
			r.ovLs = param
		}
		return
	case destPn:
		// Old-style numbering sets the properties of the paragraph the
		// \pn group is in.
		var p *rtfState
		for i := len(r.st) - 2; i >= 0; i-- {
			if r.st[i].dest == destText {
				p = &r.st[i]
				break
			}
		}
		if p != nil {
			switch name {
			case "pnlvlblt":
				p.pn = 1
			case "pnlvlbody":
				p.pn = 2
			}
		}
		return
	}
	switch name {
	// Document.
	case "ansicpg":
		if has && param > 0 {
			r.ansiCP = param
		}
	case "mac":
		r.ansiCP = 10000
	case "pc":
		r.ansiCP = 437
	case "pca":
		r.ansiCP = 850
	case "deff":
		r.deff = param
		s.font = param
	case "nofpages":
		if param > 0 {
			r.pages = param
		}
	// Characters.
	case "b":
		s.bold = on
	case "i":
		s.italic = on
	case "v":
		s.hidden = on
	case "plain":
		s.bold, s.italic, s.hidden, s.font = false, false, false, r.deff
	case "f":
		s.font = param
	case "uc":
		s.uc = max(0, min(param, 8))
	case "tab":
		r.emit("\t")
	case "emdash":
		r.emit("—")
	case "endash":
		r.emit("–")
	case "bullet":
		r.emit("•")
	case "lquote":
		r.emit("‘")
	case "rquote":
		r.emit("’")
	case "ldblquote":
		r.emit("“")
	case "rdblquote":
		r.emit("”")
	case "emspace", "enspace", "qmspace":
		r.emit(" ")
	case "line":
		if s.dest == destText && !s.hidden {
			r.flows[s.flow].add(Inline{Break: true})
		}
	// Paragraphs.
	case "par", "sect", "page":
		r.endPara()
	case "pard":
		s.style, s.outline, s.ls, s.ilvl, s.itap, s.intbl, s.pn = 0, -1, 0, 0, 0, false, 0
	case "s":
		s.style = param
	case "outlinelevel":
		s.outline = param
	case "ls":
		s.ls = param
	case "ilvl":
		s.ilvl = param
	case "intbl":
		s.intbl = on
	case "itap":
		s.itap = param
	// Tables.
	case "trowd":
		r.defs, r.legacyCellDef = nil, legacyCellDef{}
	case "clmgf":
		r.legacyCellDef.hFirst = true
	case "clmrg":
		r.legacyCellDef.hCont = true
	case "clvmgf":
		r.legacyCellDef.vFirst = true
	case "clvmrg":
		r.legacyCellDef.vCont = true
	case "cellx":
		if len(r.defs) < 1000 {
			d := r.legacyCellDef
			d.right, d.hasRight = param, true
			r.defs = append(r.defs, d)
		}
		r.legacyCellDef = legacyCellDef{}
		r.rowDefs[min(max(s.itap, 1), legacyMaxTableDepth)] = r.defs
	case "cell":
		r.flows[s.flow].endCell(r.para(s), 1)
	case "nestcell":
		r.flows[s.flow].endCell(r.para(s), r.depth(s, 2))
	case "row":
		r.flows[s.flow].endRow(r.para(s), 1, r.rowDefs[1])
	case "nestrow":
		d := r.depth(s, 2)
		r.flows[s.flow].endRow(r.para(s), d, r.rowDefs[d])
	}
}

// depth is the table depth of the paragraph state s, at least least.
func (r *rtfReader) depth(s *rtfState, least int) int {
	d := s.itap
	if d == 0 && s.intbl {
		d = 1
	}
	return min(max(d, least), legacyMaxTableDepth)
}

// para is the paragraph properties of state s.
func (r *rtfReader) para(s *rtfState) legacyPara {
	p := legacyPara{depth: r.depth(s, 0)}
	if s.dest != destText {
		return p
	}
	outline := s.outline
	if st, ok := r.styles[s.style]; ok {
		if l := styleHeadingLevel(st.name); l > 0 && outline < 0 {
			outline = l - 1
		}
		if outline < 0 {
			outline = st.outline
		}
	}
	if outline >= 0 && outline < 9 {
		p.heading = min(outline+1, 6)
		return p
	}
	switch {
	case s.ls > 0:
		nfc := 23
		if levels, ok := r.lists[r.overrides[s.ls]]; ok && len(levels) > 0 {
			nfc = levels[min(max(s.ilvl, 0), len(levels)-1)]
		}
		if nfc == 255 {
			return p // "no number": not shown as a list
		}
		p.list, p.ordered = s.ls, nfc != 23
		p.level = min(max(s.ilvl, 0), legacyMaxListLevel)
	case s.pn > 0:
		p.list, p.ordered = -1, s.pn == 2
		p.level = min(max(s.ilvl, 0), legacyMaxListLevel)
	}
	return p
}

// styleHeadingLevel reads "heading N" style names.
func styleHeadingLevel(name string) int {
	n := strings.ToLower(strings.TrimSpace(name))
	if rest, ok := strings.CutPrefix(n, "heading"); ok {
		if l, err := strconv.Atoi(strings.TrimSpace(rest)); err == nil && l >= 1 && l <= 9 {
			return min(l, 6)
		}
	}
	return 0
}

// endPara ends the paragraph in the current flow.
func (r *rtfReader) endPara() {
	s := r.cur()
	if s.dest == destText {
		r.flows[s.flow].endPara(r.para(s))
	}
}

// unicode handles \uN: the character, then the fallback to skip.
func (r *rtfReader) unicode(n int) {
	s := r.cur()
	s.fresh = false
	if n < 0 {
		n += 65536
	}
	c := rune(n)
	r.skip = 0
	switch {
	case utf16.IsSurrogate(c) && c < 0xDC00:
		r.hi = c
	case utf16.IsSurrogate(c) && r.hi != 0:
		r.emit(string(utf16.DecodeRune(r.hi, c)))
		r.hi = 0
	case utf16.IsSurrogate(c), c < 0 || c > unicode.MaxRune:
		r.emit("\uFFFD")
	default:
		r.emit(string(c))
	}
	r.skip = s.uc
}

// text takes plain text bytes, in the current code page.
func (r *rtfReader) text(b []byte) {
	for r.skip > 0 && len(b) > 0 {
		r.skip--
		b = b[1:]
	}
	if len(b) == 0 {
		return
	}
	cp := r.codePage()
	if len(r.pend) > 0 && cp != r.pendCP {
		r.flush()
	}
	r.pendCP = cp
	r.pend = append(r.pend, b...)
	if len(r.pend) > 64<<10 {
		r.flush()
	}
}

// byteText takes one \'hh byte.
func (r *rtfReader) byteText(b byte) {
	if r.skip > 0 {
		r.skip--
		return
	}
	r.text([]byte{b})
}

func (r *rtfReader) codePage() int {
	s := r.cur()
	if cp, ok := r.fonts[s.font]; ok {
		return cp
	}
	return r.ansiCP
}

// flush decodes the pending bytes and emits them.
func (r *rtfReader) flush() {
	if len(r.pend) == 0 {
		return
	}
	b := r.pend
	r.pend = r.pend[:0]
	switch r.cur().dest {
	case destText, destTitle, destAuthor, destFieldInst, destStyleEntry, destStyleSheet, destFontTable:
		r.emit(decodeCodePage(b, r.pendCP))
	}
}

// emit sends decoded text to the current destination.
func (r *rtfReader) emit(t string) {
	s := r.cur()
	switch s.dest {
	case destText:
		if s.hidden {
			return
		}
		r.runes += utf8.RuneCountInString(t)
		if r.runes > legacyTextLimit {
			r.full = true
			r.warn(fmt.Sprintf("the text was cut at %d characters", legacyTextLimit))
			return
		}
		r.flows[s.flow].add(Inline{Text: t, Bold: s.bold, Italic: s.italic, Href: s.href})
	case destTitle:
		rtfAppend(&r.title, t, 4096)
	case destAuthor:
		rtfAppend(&r.author, t, 4096)
	case destFieldInst:
		if n := len(r.fields); n > 0 {
			rtfAppend(&r.fields[n-1].inst, t, 4096)
		}
	case destFontTable:
		// An old-style table, its entries not in groups: ';' ends one.
		if strings.Contains(t, ";") {
			r.fonts[s.font] = rtfCharsetCP(s.fcharset, r.ansiCP)
		}
	case destStyleEntry, destStyleSheet:
		for _, c := range t {
			if c == ';' {
				r.endStyle()
				continue
			}
			if r.styleName.Len() < 256 {
				r.styleName.WriteRune(c)
			}
		}
	}
}

func rtfAppend(b *strings.Builder, s string, limit int) {
	if b.Len()+len(s) <= limit {
		b.WriteString(s)
	}
}

// wordHyperlink reads the target of a HYPERLINK field instruction, "" if
// the field is something else.
func wordHyperlink(inst string) string {
	args := wordFieldArgs(inst)
	if len(args) == 0 || !strings.EqualFold(args[0], "HYPERLINK") {
		return ""
	}
	var url, anchor string
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == `\l` && i+1 < len(args):
			anchor = args[i+1]
			i++
		case strings.HasPrefix(a, `\`) && len(a) == 2:
			if i+1 < len(args) && (a == `\o` || a == `\t` || a == `\m`) {
				i++ // switches with an argument
			}
		case url == "":
			url = a
		}
	}
	if anchor != "" {
		url += "#" + anchor
	}
	return strings.TrimSpace(url)
}

// wordFieldArgs splits a field instruction into words and quoted strings.
func wordFieldArgs(inst string) []string {
	var args []string
	s := strings.TrimSpace(inst)
	for s != "" && len(args) < 32 {
		if s[0] == '"' {
			end := strings.IndexByte(s[1:], '"')
			if end < 0 {
				args = append(args, s[1:])
				break
			}
			args = append(args, s[1:1+end])
			s = strings.TrimSpace(s[end+2:])
			continue
		}
		end := strings.IndexAny(s, " \t\r\n\"")
		if end < 0 {
			end = len(s)
		}
		args = append(args, s[:end])
		s = strings.TrimSpace(s[end:])
	}
	return args
}

// rtfCharsetCP is the code page of a font charset (\fcharsetN), or of a
// \cpgN code page stored as -N.
func rtfCharsetCP(charset, ansi int) int {
	if charset < 0 {
		return -charset
	}
	switch charset {
	case 77:
		return 10000
	case 128:
		return 932
	case 129:
		return 949
	case 134:
		return 936
	case 136:
		return 950
	case 161:
		return 1253
	case 162:
		return 1254
	case 163:
		return 1258
	case 177:
		return 1255
	case 178:
		return 1256
	case 186:
		return 1257
	case 204:
		return 1251
	case 222:
		return 874
	case 238:
		return 1250
	case 254:
		return 437
	case 255:
		return 850
	}
	return ansi
}

// rtfCodePages maps Windows code page numbers to decoders.
var rtfCodePages = map[int]encoding.Encoding{
	437: charmap.CodePage437, 850: charmap.CodePage850, 852: charmap.CodePage852,
	855: charmap.CodePage855, 858: charmap.CodePage858, 860: charmap.CodePage860,
	862: charmap.CodePage862, 863: charmap.CodePage863, 865: charmap.CodePage865,
	866: charmap.CodePage866, 874: charmap.Windows874, 932: japanese.ShiftJIS,
	936: simplifiedchinese.GBK, 949: korean.EUCKR, 950: traditionalchinese.Big5,
	1250: charmap.Windows1250, 1251: charmap.Windows1251, 1252: charmap.Windows1252,
	1253: charmap.Windows1253, 1254: charmap.Windows1254, 1255: charmap.Windows1255,
	1256: charmap.Windows1256, 1257: charmap.Windows1257, 1258: charmap.Windows1258,
	10000: charmap.Macintosh, 10007: charmap.MacintoshCyrillic, 20866: charmap.KOI8R,
	21866: charmap.KOI8U, 28591: charmap.ISO8859_1, 28592: charmap.ISO8859_2,
	28595: charmap.ISO8859_5, 28597: charmap.ISO8859_7, 28605: charmap.ISO8859_15,
}

// decodeCodePage decodes bytes in a Windows code page; ASCII passes through and
// unknown code pages are read as Windows-1252.
func decodeCodePage(b []byte, cp int) string {
	ascii := true
	for _, c := range b {
		if c >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return string(b)
	}
	if cp == 65001 && utf8.Valid(b) {
		return string(b)
	}
	enc := rtfCodePages[cp]
	if enc == nil {
		enc = charmap.Windows1252
	}
	out, err := enc.NewDecoder().Bytes(b)
	if err != nil {
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	return string(out)
}

// The rest of this file turns paragraphs and table marks, as the RTF and
// DOC readers find them, into a Body.

// legacyPara are the properties of a paragraph that decide where it goes.
type legacyPara struct {
	heading int // 1..6, 0 for none
	// list identifies the list the paragraph is an item of, 0 for none;
	// level is its nesting level from 0.
	list    int
	level   int
	ordered bool
	// depth is how deeply the paragraph is nested in tables, 0 for none.
	depth int
}

// legacyCellDef is one cell of a table row's definition: its right boundary (in
// twips, when known) and its merge flags.
type legacyCellDef struct {
	right         int
	hasRight      bool
	hFirst, hCont bool // first and continuation cells of a horizontal merge
	vFirst, vCont bool // first and continuation cells of a vertical merge
}

// legacyFlow collects the runs of the paragraph being read and places the
// paragraphs in the body, in the cell of a table, or in a list.
type legacyFlow struct {
	runs []Inline
	// The last text run is built here, not by concatenation, so that a long
	// paragraph read a character at a time costs linear time.
	text    strings.Builder
	open    Inline
	hasOpen bool

	root   legacyContainer
	tables []*legacyTable // open tables, from the outermost
}

// legacyContainer is a sequence of paragraphs and finished tables.
type legacyContainer struct {
	entries []legacyEntry
}

type legacyEntry struct {
	props   legacyPara
	inlines []Inline
	table   *Block
}

type legacyTable struct {
	rows  []legacyRow
	cells [][]Block       // cells of the row being read
	cell  legacyContainer // the cell being read
}

type legacyRow struct {
	cells [][]Block
	defs  []legacyCellDef
}

// add appends an inline to the paragraph being read, joining text runs of
// the same style.
func (f *legacyFlow) add(in Inline) {
	plain := in.Text != "" && !in.Break && in.Note == 0 && in.Image == ""
	if plain && f.hasOpen && f.open.Bold == in.Bold && f.open.Italic == in.Italic && f.open.Href == in.Href {
		f.text.WriteString(in.Text)
		return
	}
	f.closeRun()
	if plain {
		f.open, f.hasOpen = in, true
		f.text.WriteString(in.Text)
		return
	}
	f.runs = append(f.runs, in)
}

// closeRun moves the text run being built into runs.
func (f *legacyFlow) closeRun() {
	if f.hasOpen {
		f.open.Text = f.text.String()
		f.runs = append(f.runs, f.open)
		f.text.Reset()
		f.hasOpen = false
	}
}

// pending returns the runs of the paragraph being read.
func (f *legacyFlow) pending() []Inline {
	f.closeRun()
	return f.runs
}

// target closes the tables nested deeper than depth, opens tables down to
// depth, and returns the container paragraphs at that depth go into.
func (f *legacyFlow) target(depth int) *legacyContainer {
	f.closeTables(depth)
	for len(f.tables) < depth {
		f.tables = append(f.tables, &legacyTable{})
	}
	if depth == 0 {
		return &f.root
	}
	return &f.tables[depth-1].cell
}

// closeTables finishes the tables nested deeper than depth, each into the
// container it is in.
func (f *legacyFlow) closeTables(depth int) {
	for len(f.tables) > depth {
		i := len(f.tables) - 1
		t := f.tables[i]
		f.tables = f.tables[:i]
		if len(t.cell.entries) > 0 {
			t.addCell(t.cell.blocks())
		}
		if len(t.cells) > 0 {
			t.rows = append(t.rows, legacyRow{cells: t.cells})
		}
		if len(t.rows) == 0 {
			continue
		}
		parent := &f.root
		if i > 0 {
			parent = &f.tables[i-1].cell
		}
		for _, b := range t.blocks() {
			parent.entries = append(parent.entries, legacyEntry{table: &b})
		}
	}
}

// endPara ends the paragraph being read.
func (f *legacyFlow) endPara(p legacyPara) {
	c := f.target(p.depth)
	if ins := legacyTrim(f.pending()); len(ins) > 0 {
		c.entries = append(c.entries, legacyEntry{props: p, inlines: ins})
	}
	f.runs = f.runs[:0]
}

// endCell ends the cell being read at depth. A row holds at most
// legacyMaxCols cells; the content of any more goes into the last one.
func (f *legacyFlow) endCell(p legacyPara, depth int) {
	p.depth = depth
	f.endPara(p)
	t := f.tables[depth-1]
	t.addCell(t.cell.blocks())
	t.cell = legacyContainer{}
}

func (t *legacyTable) addCell(blocks []Block) {
	if n := len(t.cells); n >= legacyMaxCols {
		t.cells[n-1] = append(t.cells[n-1], blocks...)
		return
	}
	t.cells = append(t.cells, blocks)
}

// endRow ends the row being read at depth.
func (f *legacyFlow) endRow(p legacyPara, depth int, defs []legacyCellDef) {
	p.depth = depth
	f.endPara(p)
	f.closeTables(depth)
	t := f.tables[depth-1]
	if len(t.cell.entries) > 0 {
		t.addCell(t.cell.blocks())
		t.cell = legacyContainer{}
	}
	if len(t.cells) > 0 {
		t.rows = append(t.rows, legacyRow{cells: t.cells, defs: slices.Clone(defs)})
	}
	t.cells = nil
}

// finish ends the last paragraph and the open tables, and returns the
// blocks.
func (f *legacyFlow) finish(p legacyPara) []Block {
	if legacyVisible(f.pending()) {
		f.endPara(p)
	}
	f.closeTables(0)
	return f.root.blocks()
}

// legacyBlank reports whether an inline shows nothing.
func legacyBlank(in Inline) bool {
	return in.Note == 0 && in.Image == "" && (in.Break || strings.TrimSpace(in.Text) == "")
}

// legacyVisible reports whether runs show anything.
func legacyVisible(runs []Inline) bool {
	for _, in := range runs {
		if !legacyBlank(in) {
			return true
		}
	}
	return false
}

// legacyTrim drops the white space at the ends of a paragraph (tabs become
// spaces) and returns a copy, nil when nothing is left to show.
func legacyTrim(runs []Inline) []Inline {
	i, j := 0, len(runs)
	for i < j && legacyBlank(runs[i]) {
		i++
	}
	for j > i && legacyBlank(runs[j-1]) {
		j--
	}
	if i == j {
		return nil
	}
	out := slices.Clone(runs[i:j])
	for k := range out {
		if strings.Contains(out[k].Text, "\t") {
			out[k].Text = strings.ReplaceAll(out[k].Text, "\t", " ")
		}
	}
	if out[0].Text != "" {
		out[0].Text = strings.TrimLeftFunc(out[0].Text, unicode.IsSpace)
	}
	if l := &out[len(out)-1]; l.Text != "" {
		l.Text = strings.TrimRightFunc(l.Text, unicode.IsSpace)
	}
	return out
}

// blocks turns the container's paragraphs into blocks, runs of list
// paragraphs into nested lists.
func (c *legacyContainer) blocks() []Block {
	out := make([]Block, 0, len(c.entries))
	for i := 0; i < len(c.entries); {
		e := c.entries[i]
		switch {
		case e.table != nil:
			out = append(out, *e.table)
			i++
		case e.props.list != 0:
			j := i
			for j < len(c.entries) && c.entries[j].table == nil && c.entries[j].props.list != 0 {
				j++
			}
			run := c.entries[i:j]
			base := legacyMaxListLevel
			for _, e := range run {
				base = min(base, e.props.level)
			}
			out = append(out, legacyNestList(run, base, legacyTop)...)
			i = j
		case e.props.heading > 0:
			out = append(out, Block{Kind: Heading, Level: e.props.heading, Inlines: e.inlines})
			i++
		default:
			out = append(out, Block{Kind: Paragraph, Inlines: e.inlines})
			i++
		}
	}
	return out
}

// legacyNesting says whether legacyNestList builds the top lists or lists
// nested in an item.
type legacyNesting bool

const (
	legacyTop    legacyNesting = true
	legacyNested legacyNesting = false
)

// legacyNestList builds the lists at one level from list paragraphs at that level
// or deeper; deeper ones nest in the item before them.
func legacyNestList(es []legacyEntry, level int, nesting legacyNesting) []Block {
	var out []Block
	cur := -1 // index in out of the list being built
	for i := 0; i < len(es); {
		e := es[i]
		if e.props.level <= level {
			if cur < 0 || out[cur].Ordered != e.props.ordered || (nesting == legacyTop && es[max(i-1, 0)].props.list != e.props.list) {
				out = append(out, Block{Kind: List, Ordered: e.props.ordered})
				cur = len(out) - 1
			}
			out[cur].Items = append(out[cur].Items, Item{Blocks: []Block{{Kind: Paragraph, Inlines: e.inlines}}})
			i++
			continue
		}
		j := i
		for j < len(es) && es[j].props.level > level {
			j++
		}
		if cur < 0 {
			out = append(out, Block{Kind: List, Ordered: e.props.ordered})
			cur = len(out) - 1
		}
		if len(out[cur].Items) == 0 {
			out[cur].Items = append(out[cur].Items, Item{})
		}
		it := &out[cur].Items[len(out[cur].Items)-1]
		// A level skipped nests one level, not two.
		next := legacyMaxListLevel
		for _, e := range es[i:j] {
			next = min(next, e.props.level)
		}
		it.Blocks = append(it.Blocks, legacyNestList(es[i:j], next, legacyNested)...)
		i = j
	}
	return out
}

// blocks turns the rows read into tables, working out the spans: a cell
// spans the columns between its left and right boundaries on the grid of
// all the rows' boundaries (or the cells a horizontal merge joins, when the
// boundaries are not known), and the rows a vertical merge joins. A table
// whose rows times columns pass legacyMaxCells is split into several, so
// that rendering it stays bounded.
func (t *legacyTable) blocks() []Block {
	// The column grid, when every cell of every row has a boundary.
	geometry := true
	var rights []int
	for _, row := range t.rows {
		prev := -1 << 31
		for i := range row.cells {
			if i >= len(row.defs) || !row.defs[i].hasRight || row.defs[i].right <= prev {
				geometry = false
				break
			}
			prev = row.defs[i].right
			rights = append(rights, prev)
		}
		if !geometry {
			break
		}
	}
	var grid []int // right boundary of each column
	if geometry {
		slices.Sort(rights)
		for _, x := range rights {
			// Boundaries closer than this are the same column.
			if len(grid) == 0 || x-grid[len(grid)-1] > 40 {
				grid = append(grid, x)
			}
		}
		if len(grid) > legacyMaxCols {
			geometry, grid = false, nil
		}
	}
	column := func(x int) int {
		i, _ := slices.BinarySearch(grid, x+1)
		return i - 1
	}
	var rows [][]legacyPlaced
	width := 1
	for _, row := range t.rows {
		var out []legacyPlaced
		col := 0
		for i, blocks := range row.cells {
			var d legacyCellDef
			if i < len(row.defs) {
				d = row.defs[i]
			}
			n := 1
			if geometry {
				n = max(column(d.right)-col+1, 1)
			}
			if d.hCont && !d.hFirst && len(out) > 0 {
				// Joined to the cell before it.
				last := &out[len(out)-1]
				last.n += n
				last.cell.Blocks = append(last.cell.Blocks, blocks...)
				col += n
				continue
			}
			out = append(out, legacyPlaced{cell: Cell{Blocks: blocks}, col: col, n: n, vFirst: d.vFirst, vCont: d.vCont && !d.vFirst})
			col += n
		}
		width = max(width, col)
		rows = append(rows, out)
	}
	var tables []Block
	step := max(legacyMaxCells/width, 1)
	for from := 0; from < len(rows); from += step {
		tables = append(tables, legacyTableBlock(rows[from:min(from+step, len(rows))]))
	}
	return tables
}

// legacyPlaced is a cell placed on a table's column grid.
type legacyPlaced struct {
	cell          Cell
	col, n        int
	vFirst, vCont bool
	dropped       bool
}

// legacyTableBlock makes a table of placed cells, joining vertical merges:
// a continuation cell adds a row to the cell above it that starts at the
// same column.
func legacyTableBlock(rows [][]legacyPlaced) Block {
	owner := map[int][2]int{} // column → row and index of the cell a merge starts in
	for r := range rows {
		for i := range rows[r] {
			p := &rows[r][i]
			if p.vCont {
				if o, ok := owner[p.col]; ok {
					top := &rows[o[0]][o[1]]
					top.cell.RowSpan = max(top.cell.RowSpan, 1) + 1
					top.cell.Blocks = append(top.cell.Blocks, p.cell.Blocks...)
					p.dropped = true
					continue
				}
			}
			for c := p.col; c < p.col+p.n; c++ {
				delete(owner, c)
			}
			if p.vFirst || p.vCont {
				owner[p.col] = [2]int{r, i}
			}
		}
	}
	b := Block{Kind: Table}
	for _, row := range rows {
		cells := make([]Cell, 0, len(row))
		for _, p := range row {
			if p.dropped {
				continue
			}
			if p.n > 1 {
				p.cell.ColSpan = p.n
			}
			cells = append(cells, p.cell)
		}
		b.Rows = append(b.Rows, cells)
	}
	return b
}
