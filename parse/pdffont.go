package parse

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
	"github.com/pdfcpu/pdfcpu/pkg/font"
)

// pdfFont is what the glyph walker needs from a PDF font: how to split a
// string into character codes, each code's advance width and text, and the
// style hints the layout analysis uses for headings.
type pdfFont struct {
	name string
	bold bool

	cid       bool        // Type0 (composite) font: multi-byte codes, CID widths
	codeBytes int         // code length when space is empty
	space     []codeRange // codespace of the encoding CMap, if known

	toUnicode *cmap            // the font's ToUnicode CMap, preferred for text
	enc       pdf.TextEncoding // the library's decoder for simple fonts
	ucs2      bool             // the encoding itself is UCS-2/UTF-16

	firstChar   int
	widths      []float64 // simple fonts, in glyph units
	cidWidths   map[int]float64
	cidRanges   []cidRange
	defaultW    float64 // DW for composite fonts, MissingWidth otherwise
	haveWidths  bool
	widthScale  float64 // glyph units to text space: 1/1000, or FontMatrix[0]
	sizeScale   float64 // 1, or FontMatrix[3]*1000 for Type3 fonts
	fallbackAdv float64 // advance estimate, in text space, when no widths exist

	decoded map[string]string // text per code, as decoding can be slow

	// names are the glyph names of a simple font whose encoding is the
	// font program's own (Type 1 fonts with no /Encoding, as TeX embeds
	// its math fonts) and which has no ToUnicode CMap; nil otherwise.
	names *[256]string
}

type cidRange struct {
	first, last int
	w           float64
}

// loadFont reads a font dictionary. It must be called under recover: the
// library panics on malformed objects.
func loadFont(v pdf.Value) *pdfFont {
	f := &pdfFont{codeBytes: 1, widthScale: 0.001, sizeScale: 1}
	base := v.Key("BaseFont").Name()
	if i := strings.IndexByte(base, '+'); i >= 0 {
		base = base[i+1:]
	}
	f.name = base
	desc := v.Key("FontDescriptor")
	subtype := v.Key("Subtype").Name()

	if subtype == "Type0" {
		f.cid = true
		f.codeBytes = 2
		desc0 := v.Key("DescendantFonts").Index(0)
		if desc.IsNull() {
			desc = desc0.Key("FontDescriptor")
		}
		f.defaultW = 1000
		if dw := desc0.Key("DW"); dw.Kind() == pdf.Integer || dw.Kind() == pdf.Real {
			f.defaultW = dw.Float64()
		}
		f.cidWidths, f.cidRanges = readCIDWidths(desc0.Key("W"))
		f.haveWidths = true
		enc := v.Key("Encoding")
		switch enc.Kind() {
		case pdf.Stream:
			if m := readCMap(enc); m != nil {
				f.space = m.space
			}
		case pdf.Name:
			n := enc.Name()
			f.ucs2 = strings.Contains(n, "UCS2") || strings.Contains(n, "UTF16")
		}
	} else {
		f.firstChar = int(v.Key("FirstChar").Int64())
		w := v.Key("Widths")
		for i := 0; i < w.Len() && i < 65536; i++ {
			f.widths = append(f.widths, w.Index(i).Float64())
		}
		f.haveWidths = len(f.widths) > 0
		f.defaultW = desc.Key("MissingWidth").Float64()
		if subtype == "Type3" {
			m := v.Key("FontMatrix")
			if m.Len() == 6 && m.Index(0).Float64() != 0 {
				f.widthScale = m.Index(0).Float64()
				if d := m.Index(3).Float64(); d != 0 {
					f.sizeScale = math.Abs(d) * 1000
				}
			}
		}
		lf := pdf.Font{V: v}
		f.enc = lf.Encoder()
		if v.Key("ToUnicode").Kind() != pdf.Stream {
			f.names = builtinNames(v.Key("Encoding"), desc.Key("FontFile"))
		}
		if !f.haveWidths && subtype != "Type3" {
			f.coreWidths(base)
		}
	}
	f.fallbackAdv = 0.5
	if strings.Contains(strings.ToLower(base), "courier") {
		f.fallbackAdv = 0.6
	}
	if tu := v.Key("ToUnicode"); tu.Kind() == pdf.Stream {
		f.toUnicode = readCMap(tu)
	}
	if f.cid && len(f.space) == 0 && f.toUnicode != nil && !strings.HasPrefix(v.Key("Encoding").Name(), "Identity") {
		// A predefined CMap other than Identity: its codespace is usually
		// the one the ToUnicode CMap declares.
		f.space = f.toUnicode.space
	}

	lower := strings.ToLower(base)
	for _, s := range []string{"bold", "black", "heavy", "semibold", "demi"} {
		if strings.Contains(lower, s) {
			f.bold = true
		}
	}
	flags := desc.Key("Flags").Int64()
	if flags&(1<<18) != 0 || desc.Key("FontWeight").Float64() >= 600 {
		f.bold = true
	}
	return f
}

func readCIDWidths(w pdf.Value) (map[int]float64, []cidRange) {
	single := map[int]float64{}
	var ranges []cidRange
	n := w.Len()
	for i := 0; i < n; {
		first := int(w.Index(i).Int64())
		next := w.Index(i + 1)
		if next.Kind() == pdf.Array {
			for j := 0; j < next.Len() && j < 65536; j++ {
				single[first+j] = next.Index(j).Float64()
			}
			i += 2
			continue
		}
		if i+2 >= n {
			break
		}
		ranges = append(ranges, cidRange{first, int(next.Int64()), w.Index(i + 2).Float64()})
		i += 3
	}
	return single, ranges
}

// nextCode returns the length of the character code at the start of s.
func (f *pdfFont) nextCode(s string) int {
	for n := 1; n <= 4 && n <= len(s); n++ {
		for _, r := range f.space {
			if len(r.lo) == n && r.contains(s[:n]) {
				return n
			}
		}
	}
	n := f.codeBytes
	if n > len(s) {
		n = len(s)
	}
	return n
}

// width returns the advance of code in text space units (before font size).
func (f *pdfFont) width(code string) float64 {
	if !f.haveWidths {
		return f.fallbackAdv
	}
	c := codeValue(code)
	var w float64
	if f.cid {
		w = f.defaultW
		if x, ok := f.cidWidths[c]; ok {
			w = x
		} else {
			for _, r := range f.cidRanges {
				if c >= r.first && c <= r.last {
					w = r.w
					break
				}
			}
		}
	} else {
		i := c - f.firstChar
		if i >= 0 && i < len(f.widths) {
			w = f.widths[i]
		} else {
			w = f.defaultW
		}
	}
	return w * f.widthScale
}

// coreWidths gives a simple font without widths those of the standard
// font it names (PDF's 14 standard fonts need no widths in the file, and
// some producers omit them), read as WinAnsi codes.
func (f *pdfFont) coreWidths(base string) {
	name := coreFontName(base)
	if name == "" {
		return
	}
	f.firstChar = 0
	f.widths = make([]float64, 256)
	for c := range f.widths {
		w, err := font.CharWidth(name, rune(c))
		if err != nil {
			return
		}
		f.widths[c] = float64(w)
	}
	f.haveWidths = true
}

// coreFontName returns the standard font that base names, or is a common
// alias of (Arial for Helvetica, Times New Roman for Times), or "".
func coreFontName(base string) string {
	if font.IsCoreFont(base) {
		return base
	}
	b := strings.ToLower(strings.NewReplacer(" ", "", ",", "-", "MT", "", "PS", "").Replace(base))
	family := ""
	switch {
	case strings.HasPrefix(b, "arial"), strings.HasPrefix(b, "helvetica"):
		family = "Helvetica"
	case strings.HasPrefix(b, "timesnewroman"), strings.HasPrefix(b, "times"):
		family = "Times"
	case strings.HasPrefix(b, "couriernew"), strings.HasPrefix(b, "courier"):
		family = "Courier"
	default:
		return ""
	}
	bold := strings.Contains(b, "bold")
	italic := strings.Contains(b, "italic") || strings.Contains(b, "oblique")
	style := ""
	switch {
	case bold && italic:
		style = "BoldItalic"
	case bold:
		style = "Bold"
	case italic:
		style = "Italic"
	}
	if family != "Times" {
		style = strings.Replace(style, "Italic", "Oblique", 1)
	}
	switch {
	case style != "":
		return family + "-" + style
	case family == "Times":
		return "Times-Roman"
	}
	return family
}

// ligatures spells out the typographic ligatures fonts map codes to, so that
// the text reads (and searches) as typed.
var ligatures = strings.NewReplacer("\ufb00", "ff", "\ufb01", "fi", "\ufb02", "fl", "\ufb03", "ffi", "\ufb04", "ffl", "\ufb05", "st", "\ufb06", "st")

// text returns the Unicode text of one character code.
func (f *pdfFont) text(code string) string {
	if s, ok := f.decoded[code]; ok {
		return s
	}
	s := f.decode(code)
	if f.decoded == nil {
		f.decoded = map[string]string{}
	}
	if len(f.decoded) < 1<<16 {
		f.decoded[code] = s
	}
	return s
}

func (f *pdfFont) decode(code string) string {
	if f.toUnicode != nil {
		if s, ok := f.toUnicode.lookup(code); ok {
			return ligatures.Replace(s)
		}
	}
	if f.names != nil && len(code) == 1 {
		if r, ok := glyphRune(f.names[code[0]]); ok {
			return ligatures.Replace(string(r))
		}
	}
	switch {
	case f.cid && f.ucs2:
		return utf16Text(code)
	case f.cid:
		return "\uFFFD"
	case f.enc != nil:
		return ligatures.Replace(strings.ToValidUTF8(f.enc.Decode(code), "\uFFFD"))
	}
	return string(rune(code[0]))
}

func codeValue(code string) int {
	c := 0
	for i := 0; i < len(code); i++ {
		c = c<<8 | int(code[i])
	}
	return c
}

func utf16Text(s string) string {
	u := make([]uint16, 0, len(s)/2)
	for i := 0; i+1 < len(s); i += 2 {
		u = append(u, uint16(s[i])<<8|uint16(s[i+1]))
	}
	return string(utf16.Decode(u))
}

// cmap is the part of a CMap the glyph walker uses: the codespace, and for a
// ToUnicode CMap the code-to-text mappings.
type cmap struct {
	space  []codeRange
	single map[string]string
	ranges []bfRange
}

type codeRange struct{ lo, hi string }

// contains reports whether code lies in the range, comparing byte by byte as
// the CMap specification prescribes.
func (r codeRange) contains(code string) bool {
	if len(code) != len(r.lo) || len(code) != len(r.hi) {
		return false
	}
	for i := 0; i < len(code); i++ {
		if code[i] < r.lo[i] || code[i] > r.hi[i] {
			return false
		}
	}
	return true
}

type bfRange struct {
	lo, hi int
	n      int      // code length in bytes
	dst    string   // UTF-16BE text of lo; later codes increment it
	dsts   []string // or one UTF-16BE text per code
}

func (m *cmap) lookup(code string) (string, bool) {
	if s, ok := m.single[code]; ok {
		return s, true
	}
	c := codeValue(code)
	for _, r := range m.ranges {
		if r.n != len(code) || c < r.lo || c > r.hi {
			continue
		}
		if r.dsts != nil {
			if i := c - r.lo; i < len(r.dsts) {
				return utf16Text(r.dsts[i]), true
			}
			return "", false
		}
		if len(r.dst) < 2 {
			return utf16Text(r.dst), true
		}
		// Increment the last UTF-16 unit by the code's offset in the range.
		b := []byte(r.dst)
		last := int(b[len(b)-2])<<8 | int(b[len(b)-1])
		last += c - r.lo
		b[len(b)-2], b[len(b)-1] = byte(last>>8), byte(last)
		return utf16Text(string(b)), true
	}
	return "", false
}

// readCMap parses a CMap stream (ToUnicode or an embedded encoding). It
// returns nil when the stream is unreadable or too large. CMaps are a small
// PostScript subset, tokenised here directly: the library's own CMap reader
// is unexported and only consulted when a font has no /Encoding.
func readCMap(v pdf.Value) (m *cmap) {
	defer func() {
		if recover() != nil {
			m = nil
		}
	}()
	data, err := readStream(v, maxCMapBytes)
	if err != nil {
		return nil
	}
	m = &cmap{single: map[string]string{}}
	var stack []cmapToken
	var arrays []int // stack positions of open '['
	for lx := (cmapLexer{data: data}); ; {
		t, ok := lx.next()
		if !ok {
			break
		}
		switch {
		case t.kind == tokArrayOpen:
			arrays = append(arrays, len(stack))
		case t.kind == tokArrayClose:
			if len(arrays) == 0 {
				continue
			}
			at := arrays[len(arrays)-1]
			arrays = arrays[:len(arrays)-1]
			arr := cmapToken{kind: tokArray}
			for _, e := range stack[at:] {
				arr.items = append(arr.items, e.s)
			}
			stack = append(stack[:at], arr)
		case t.kind != tokKeyword:
			if len(stack) < 1<<16 {
				stack = append(stack, t)
			}
		default:
			m.apply(t.s, stack)
			stack, arrays = stack[:0], arrays[:0]
		}
	}
	return m
}

// maxCMapBytes caps the decoded size of one CMap.
const maxCMapBytes = 8 << 20

func (m *cmap) apply(op string, args []cmapToken) {
	switch op {
	case "endcodespacerange":
		for i := 0; i+1 < len(args); i += 2 {
			lo, hi := args[i].s, args[i+1].s
			if len(lo) > 0 && len(lo) == len(hi) && len(lo) <= 4 {
				m.space = append(m.space, codeRange{lo, hi})
			}
		}
	case "endbfchar":
		for i := 0; i+1 < len(args); i += 2 {
			if len(m.single) < 1<<16 {
				m.single[args[i].s] = utf16Text(args[i+1].s)
			}
		}
	case "endbfrange":
		for i := 0; i+2 < len(args); i += 3 {
			lo, hi := args[i].s, args[i+1].s
			if len(lo) == 0 || len(lo) != len(hi) || len(lo) > 4 || len(m.ranges) >= 1<<16 {
				continue
			}
			r := bfRange{lo: codeValue(lo), hi: codeValue(hi), n: len(lo)}
			switch dst := args[i+2]; dst.kind {
			case tokString:
				r.dst = dst.s
			case tokArray:
				r.dsts = dst.items
			default:
				continue
			}
			m.ranges = append(m.ranges, r)
		}
	}
}

type cmapTokenKind int

const (
	tokString cmapTokenKind = iota // literal or hex string
	tokOther                       // number, name, dictionary delimiter
	tokKeyword
	tokArrayOpen
	tokArrayClose
	tokArray
)

type cmapToken struct {
	kind  cmapTokenKind
	s     string
	items []string
}

// cmapLexer splits a CMap into PostScript tokens. checkStructure also uses it
// for the few PDF objects it reads.
type cmapLexer struct {
	data []byte
	pos  int
}

func (lx *cmapLexer) next() (cmapToken, bool) {
	d := lx.data
	for lx.pos < len(d) {
		c := d[lx.pos]
		switch {
		case c == '%':
			for lx.pos < len(d) && d[lx.pos] != '\n' && d[lx.pos] != '\r' {
				lx.pos++
			}
		case isPDFSpace(c):
			lx.pos++
		case c == '[':
			lx.pos++
			return cmapToken{kind: tokArrayOpen}, true
		case c == ']':
			lx.pos++
			return cmapToken{kind: tokArrayClose}, true
		case c == '<' && lx.pos+1 < len(d) && d[lx.pos+1] == '<',
			c == '>' && lx.pos+1 < len(d) && d[lx.pos+1] == '>':
			lx.pos += 2
			return cmapToken{kind: tokOther, s: string(d[lx.pos-2 : lx.pos])}, true
		case c == '<':
			return lx.hex(), true
		case c == '(':
			return lx.literal(), true
		case c == '{' || c == '}' || c == '>' || c == ')':
			lx.pos++
		default:
			start := lx.pos
			lx.pos++
			for lx.pos < len(d) && !isPDFSpace(d[lx.pos]) && !isPDFDelim(d[lx.pos]) {
				lx.pos++
			}
			w := string(d[start:lx.pos])
			if c == '/' || c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9') {
				return cmapToken{kind: tokOther, s: w}, true
			}
			return cmapToken{kind: tokKeyword, s: w}, true
		}
	}
	return cmapToken{}, false
}

func (lx *cmapLexer) hex() cmapToken {
	lx.pos++ // '<'
	var b []byte
	var hi int = -1
	for lx.pos < len(lx.data) {
		c := lx.data[lx.pos]
		lx.pos++
		if c == '>' {
			break
		}
		v := hexVal(c)
		if v < 0 {
			continue
		}
		if hi < 0 {
			hi = v
		} else {
			b = append(b, byte(hi<<4|v))
			hi = -1
		}
	}
	if hi >= 0 {
		b = append(b, byte(hi<<4))
	}
	return cmapToken{kind: tokString, s: string(b)}
}

func (lx *cmapLexer) literal() cmapToken {
	lx.pos++ // '('
	var b []byte
	depth := 1
	for lx.pos < len(lx.data) {
		c := lx.data[lx.pos]
		lx.pos++
		switch c {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return cmapToken{kind: tokString, s: string(b)}
			}
		case '\\':
			if lx.pos >= len(lx.data) {
				break
			}
			e := lx.data[lx.pos]
			lx.pos++
			switch e {
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case '\n', '\r':
				continue
			default:
				if e >= '0' && e <= '7' {
					v := int(e - '0')
					for k := 0; k < 2 && lx.pos < len(lx.data) && lx.data[lx.pos] >= '0' && lx.data[lx.pos] <= '7'; k++ {
						v = v*8 + int(lx.data[lx.pos]-'0')
						lx.pos++
					}
					c = byte(v)
				} else {
					c = e
				}
			}
		}
		b = append(b, c)
	}
	return cmapToken{kind: tokString, s: string(b)}
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

func isPDFSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == 0
}

func isPDFDelim(c byte) bool {
	return strings.IndexByte("()<>[]{}/%", c) >= 0
}

// isGarbled reports whether a decoded glyph text carries no real character.
func isGarbled(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return r == utf8.RuneError || (r < 0x20 && r != '\t' && r != '\n' && r != '\r')
}

// builtinNames returns the glyph names of a simple font whose base encoding
// is the one inside its Type 1 font program, with the /Differences of its
// /Encoding dictionary applied; nil for any other font.
func builtinNames(enc, fontFile pdf.Value) *[256]string {
	var diffs pdf.Value
	switch enc.Kind() {
	case pdf.Null:
	case pdf.Dict:
		if !enc.Key("BaseEncoding").IsNull() {
			return nil
		}
		diffs = enc.Key("Differences")
	default:
		return nil
	}
	if fontFile.Kind() != pdf.Stream {
		return nil
	}
	n := fontFile.Key("Length1").Int64()
	if n <= 0 || n > 1<<20 {
		n = 1 << 16
	}
	// The encoding is in the clear-text part, before eexec.
	data, err := readPrefix(fontFile, n)
	if err != nil {
		return nil
	}
	if i := bytes.Index(data, []byte("eexec")); i >= 0 {
		data = data[:i]
	}
	var names [256]string
	found := false
	for _, m := range type1EncodingRe.FindAllSubmatch(data, 256) {
		c, err := strconv.Atoi(string(m[1]))
		if err == nil && c >= 0 && c < 256 {
			names[c], found = string(m[2]), true
		}
	}
	if !found {
		return nil // StandardEncoding, which the library knows
	}
	c := 0
	for i := 0; i < diffs.Len() && i < 4096; i++ {
		switch x := diffs.Index(i); x.Kind() {
		case pdf.Integer:
			c = int(x.Int64())
		case pdf.Name:
			if c >= 0 && c < 256 {
				names[c] = x.Name()
			}
			c++
		}
	}
	return &names
}

var type1EncodingRe = regexp.MustCompile(`dup\s+(\d{1,3})\s*/([^\s/\[\]{}()<>%]+)\s+put`)

// readPrefix returns the first n decoded bytes of a stream.
func readPrefix(v pdf.Value, n int64) (b []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("reading stream: %v", r)
		}
	}()
	rc := v.Reader()
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, n))
}

// glyphRune returns the character a glyph name stands for: a name of the
// Adobe Glyph List that fonts use for Latin text, punctuation, Greek and
// common mathematics, or uniXXXX and uXXXX[XX].
func glyphRune(name string) (rune, bool) {
	if name == "" || name == ".notdef" {
		return 0, false
	}
	if len(name) == 1 && (name[0] >= 'a' && name[0] <= 'z' || name[0] >= 'A' && name[0] <= 'Z') {
		return rune(name[0]), true
	}
	if r, ok := glyphNames[name]; ok {
		return r, true
	}
	hex := ""
	switch {
	case strings.HasPrefix(name, "uni") && len(name) == 7:
		hex = name[3:]
	case strings.HasPrefix(name, "u") && len(name) >= 5 && len(name) <= 7:
		hex = name[1:]
	}
	if hex != "" {
		if v, err := strconv.ParseUint(hex, 16, 32); err == nil && utf8.ValidRune(rune(v)) {
			return rune(v), true
		}
	}
	return 0, false
}

var glyphNames = map[string]rune{
	"space": ' ', "exclam": '!', "quotedbl": '"', "numbersign": '#', "dollar": '$', "percent": '%',
	"ampersand": '&', "quoteright": '’', "quotesingle": '\'', "parenleft": '(', "parenright": ')',
	"asterisk": '*', "plus": '+', "comma": ',', "hyphen": '-', "period": '.', "slash": '/',
	"zero": '0', "one": '1', "two": '2', "three": '3', "four": '4', "five": '5', "six": '6',
	"seven": '7', "eight": '8', "nine": '9', "colon": ':', "semicolon": ';', "less": '<',
	"equal": '=', "greater": '>', "question": '?', "at": '@', "bracketleft": '[', "backslash": '\\',
	"bracketright": ']', "asciicircum": '^', "underscore": '_', "quoteleft": '‘', "grave": '`',
	"braceleft": '{', "bar": '|', "braceright": '}', "asciitilde": '~', "exclamdown": '¡',
	"cent": '¢', "sterling": '£', "yen": '¥', "section": '§', "dieresis": '¨', "copyright": '©',
	"ordfeminine": 'ª', "guillemotleft": '«', "logicalnot": '¬', "registered": '®', "macron": '¯',
	"degree": '°', "plusminus": '±', "acute": '´', "mu": 'µ', "paragraph": '¶',
	"periodcentered": '·', "cedilla": '¸', "ordmasculine": 'º', "guillemotright": '»',
	"questiondown": '¿', "multiply": '×', "divide": '÷', "germandbls": 'ß', "dotlessi": 'ı',
	"dotlessj": 'ȷ', "ae": 'æ', "AE": 'Æ', "oe": 'œ', "OE": 'Œ', "oslash": 'ø', "Oslash": 'Ø',
	"lslash": 'ł', "Lslash": 'Ł', "eth": 'ð', "thorn": 'þ', "circumflex": 'ˆ', "tilde": '˜',
	"breve": '˘', "dotaccent": '˙', "ring": '˚', "hungarumlaut": '˝', "ogonek": '˛', "caron": 'ˇ',
	"endash": '–', "emdash": '—', "quotedblleft": '“', "quotedblright": '”', "quotesinglbase": '‚',
	"quotedblbase": '„', "dagger": '†', "daggerdbl": '‡', "bullet": '•', "ellipsis": '…',
	"perthousand": '‰', "guilsinglleft": '‹', "guilsinglright": '›', "fraction": '⁄',
	"trademark": '™', "minus": '−', "fi": 'ﬁ', "fl": 'ﬂ', "ff": 'ﬀ', "ffi": 'ﬃ', "ffl": 'ﬄ',
	"Euro": '€', "florin": 'ƒ', "visiblespace": '␣',
	// Greek.
	"alpha": 'α', "beta": 'β', "gamma": 'γ', "delta": 'δ', "epsilon": 'ε', "epsilon1": 'ϵ',
	"zeta": 'ζ', "eta": 'η', "theta": 'θ', "theta1": 'ϑ', "iota": 'ι', "kappa": 'κ',
	"lambda": 'λ', "nu": 'ν', "xi": 'ξ', "omicron": 'ο', "pi": 'π', "pi1": 'ϖ', "rho": 'ρ',
	"rho1": 'ϱ', "sigma": 'σ', "sigma1": 'ς', "tau": 'τ', "upsilon": 'υ', "phi": 'φ', "phi1": 'ϕ',
	"chi": 'χ', "psi": 'ψ', "omega": 'ω', "Gamma": 'Γ', "Delta": 'Δ', "Theta": 'Θ',
	"Lambda": 'Λ', "Xi": 'Ξ', "Pi": 'Π', "Sigma": 'Σ', "Upsilon": 'Υ', "Phi": 'Φ', "Psi": 'Ψ',
	"Omega": 'Ω',
	// Mathematics, with the names TeX's math fonts use.
	"asteriskmath": '∗', "arrowright": '→', "arrowleft": '←', "arrowup": '↑', "arrowdown": '↓',
	"arrowboth": '↔', "arrowdblright": '⇒', "arrowdblleft": '⇐', "arrowdblboth": '⇔',
	"lessequal": '≤', "greaterequal": '≥', "notequal": '≠', "approxequal": '≈', "equivalence": '≡',
	"similar": '∼', "infinity": '∞', "element": '∈', "propersubset": '⊂', "propersuperset": '⊃',
	"reflexsubset": '⊆', "reflexsuperset": '⊇', "intersection": '∩', "union": '∪',
	"logicaland": '∧', "logicalor": '∨', "universal": '∀', "existential": '∃', "emptyset": '∅',
	"nabla": '∇', "partialdiff": '∂', "radical": '√', "summation": '∑', "product": '∏',
	"integral": '∫', "proportional": '∝', "angle": '∠', "perpendicular": '⊥', "circleplus": '⊕',
	"circlemultiply": '⊗', "prime": '′', "angleleft": '⟨', "angleright": '⟩', "lozenge": '◊',
	"periodcentered.math": '·', "bulletmath": '∙', "openbullet": '◦', "backslashmath": '∖',
	"braceleftmath": '{', "bracerightmath": '}', "barmath": '|',
}
