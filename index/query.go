package index

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Query is a parsed search query: the words and operators of the query
// field of POST /v2/search. ParseQuery builds it by hand so that user text
// never reaches bleve's own query-string syntax; the index builds its bleve
// queries from these fields.
type Query struct {
	// Terms are the words and "quoted phrases" that should match, in the
	// order the query gives them.
	Terms []Term
	// Not are the words and phrases written with a leading -.
	Not []Term
	// Sites are the hosts of site: (lower-cased; a value given with a scheme
	// or a path is reduced to its host). NotSites are those of -site:.
	Sites, NotSites []string
	// FileTypes are the extensions of filetype: (lower-cased, without a
	// leading dot). NotFileTypes are those of -filetype:.
	FileTypes, NotFileTypes []string
	// InURL are the words of inurl: and allinurl:, as written. NotInURL are
	// those of -inurl: and -allinurl:.
	InURL, NotInURL []string
	// InTitle are the words of intitle: and allintitle:, as written; a quoted
	// value (intitle:"a phrase") is one string. NotInTitle are those of
	// -intitle: and -allintitle:.
	InTitle, NotInTitle []string
	// Related are the hosts of related: (lower-cased, like Sites).
	Related []string
	// ImageSize, when set, keeps images of exactly these dimensions.
	ImageSize *Size
	// Larger, when set, keeps images larger than these dimensions.
	Larger *Size
}

// Term is a word or a quoted phrase of a query. Text keeps the case the
// user wrote: the index's analyzer lowers it.
type Term struct {
	Text   string
	Phrase bool // written in quotes: an exact, non-fuzzy match
}

// Size is an image size in pixels, as imagesize: and larger: give it.
type Size struct {
	Width, Height int
}

// OperatorError reports an operator of a query whose value is malformed or
// which cannot be used the way it was written. Operator is the lower-cased
// operator name without its colon; Value is the value as written.
type OperatorError struct {
	Operator string
	Value    string
	Rule     string
}

// Error reads like: imagesize: "big" must be WIDTHxHEIGHT in pixels, for
// example 640x480.
func (e *OperatorError) Error() string {
	return fmt.Sprintf("%s: %q %s", e.Operator, e.Value, e.Rule)
}

// The rules an OperatorError can report.
const (
	ruleSize       = "must be WIDTHxHEIGHT in pixels, for example 640x480"
	ruleSizeRange  = "must have a width and a height from 1 to 100000 pixels"
	ruleHost       = "must be a host name such as example.com (letters, digits, hyphens and dots, no port)"
	ruleFileType   = "must be a file extension of 1 to 10 letters or digits, such as pdf"
	ruleNotNegated = "cannot be negated with -"
	ruleOnlyOnce   = "may appear only once in a query"
)

// Limits of operator values.
const (
	maxImageSide    = 100000 // pixels, each side of imagesize: and larger:
	maxFileTypeLen  = 10     // what the index records of an extension
	maxHostLen      = 253
	maxHostLabelLen = 63
)

// queryOperators are the operators ParseQuery knows, lower-cased. Any other
// name:value token is searched as a word.
var queryOperators = map[string]bool{
	"site": true, "filetype": true, "inurl": true, "allinurl": true, "intitle": true,
	"allintitle": true, "related": true, "imagesize": true, "larger": true,
}

// ParseQuery parses a search query into its terms and operators.
//
// Words are separated by white space; "quotes" make a phrase, and a phrase
// with no closing quote runs to the end of the query. A leading - negates a
// word, a phrase or an operator; a lone - is ignored. Operators are
// case-insensitive and take their value right after the colon
// (intitle:"a phrase" is one value); allinurl: and allintitle: may also be
// followed by a space, and take every following word or phrase that is not
// negated and not an operator. An operator with an empty value, and any
// name:value that is not an operator (foo:bar, http://x), is searched as a
// word.
//
// A malformed operator value is an *OperatorError, as are -imagesize:,
// -larger: and -related:, which cannot be negated, and a second imagesize:
// or larger:.
func ParseQuery(s string) (Query, error) {
	var b queryBuilder
	sc := queryScanner{src: s}
	for {
		tok, ok := sc.next()
		if !ok {
			break
		}
		if err := b.add(tok); err != nil {
			return Query{}, err
		}
	}
	b.endAllIn()
	return b.q, nil
}

// Empty reports whether the query has nothing that selects documents
// positively: no Terms, Sites, FileTypes, InURL, InTitle, Related, ImageSize
// or Larger. A query of only negations is empty.
func (q Query) Empty() bool {
	return len(q.Terms) == 0 && len(q.Sites) == 0 && len(q.FileTypes) == 0 &&
		len(q.InURL) == 0 && len(q.InTitle) == 0 && len(q.Related) == 0 &&
		q.ImageSize == nil && q.Larger == nil
}

// Words returns the texts of the positive Terms, a phrase as one string:
// what a snippet highlights.
func (q Query) Words() []string {
	var words []string
	for _, t := range q.Terms {
		words = append(words, t.Text)
	}
	return words
}

// queryToken is one word, phrase or operator of a query.
type queryToken struct {
	neg    bool   // written with a leading -
	op     string // lower-cased operator name; "" for a word or phrase
	text   string // the word, the phrase or the operator's value
	phrase bool   // text was quoted
	raw    string // for an operator: the token as written, without - and value quotes
}

// queryScanner splits a query into tokens.
type queryScanner struct {
	src string
	pos int
}

func (sc *queryScanner) next() (queryToken, bool) {
	for {
		sc.skipSpace()
		if sc.pos >= len(sc.src) {
			return queryToken{}, false
		}
		var tok queryToken
		if sc.src[sc.pos] == '-' {
			tok.neg = true
			sc.pos++
			if sc.pos >= len(sc.src) || sc.atSpace() {
				continue // a lone "-" negates nothing
			}
		}
		if sc.src[sc.pos] == '"' {
			tok.text, tok.phrase = sc.quoted(), true
			return tok, true
		}
		word := sc.word()
		name, value, found := strings.Cut(word, ":")
		op := strings.ToLower(name)
		if !found || !queryOperators[op] {
			tok.text = word
			return tok, true
		}
		tok.op, tok.raw = op, word
		if value == "" && sc.pos < len(sc.src) && sc.src[sc.pos] == '"' {
			value, tok.phrase = sc.quoted(), true
		}
		tok.text = value
		return tok, true
	}
}

func (sc *queryScanner) atSpace() bool {
	r, _ := utf8.DecodeRuneInString(sc.src[sc.pos:])
	return unicode.IsSpace(r)
}

func (sc *queryScanner) skipSpace() {
	for sc.pos < len(sc.src) {
		r, n := utf8.DecodeRuneInString(sc.src[sc.pos:])
		if !unicode.IsSpace(r) {
			return
		}
		sc.pos += n
	}
}

// word reads up to white space or a quote: a quote inside a word starts a
// phrase, as it does in a web search engine.
func (sc *queryScanner) word() string {
	start := sc.pos
	for sc.pos < len(sc.src) {
		r, n := utf8.DecodeRuneInString(sc.src[sc.pos:])
		if r == '"' || unicode.IsSpace(r) {
			break
		}
		sc.pos += n
	}
	return sc.src[start:sc.pos]
}

// quoted reads a phrase from the opening quote at sc.pos to its closing
// quote or the end of the query, with its white space collapsed.
func (sc *queryScanner) quoted() string {
	sc.pos++
	text := sc.src[sc.pos:]
	if end := strings.IndexByte(text, '"'); end >= 0 {
		text = text[:end]
		sc.pos += end + 1
	} else {
		sc.pos = len(sc.src)
	}
	return strings.Join(strings.Fields(text), " ")
}

// queryBuilder gathers tokens into a Query.
type queryBuilder struct {
	q Query
	// all is the allinurl: or allintitle: that takes the words that follow.
	all *allInOperator
}

type allInOperator struct {
	op   string
	neg  bool
	raw  string
	used bool // took at least one word
}

func (b *queryBuilder) add(tok queryToken) error {
	if tok.op == "" {
		if tok.text != "" { // "" and "  " select nothing
			b.word(Term{Text: tok.text, Phrase: tok.phrase}, tok.neg)
		}
		return nil
	}
	if tok.op == "allinurl" || tok.op == "allintitle" {
		b.endAllIn()
		b.all = &allInOperator{op: tok.op, neg: tok.neg, raw: tok.raw}
		if tok.text != "" {
			b.allInWord(tok.text)
		}
		return nil
	}
	if tok.text == "" {
		b.word(Term{Text: tok.raw}, tok.neg)
		return nil
	}
	if tok.neg && (tok.op == "related" || tok.op == "imagesize" || tok.op == "larger") {
		return &OperatorError{Operator: tok.op, Value: tok.text, Rule: ruleNotNegated}
	}
	q := &b.q
	switch tok.op {
	case "site", "related":
		host, ok := hostOperand(tok.text)
		if !ok {
			return &OperatorError{Operator: tok.op, Value: tok.text, Rule: ruleHost}
		}
		switch {
		case tok.op == "related":
			q.Related = append(q.Related, host)
		case tok.neg:
			q.NotSites = append(q.NotSites, host)
		default:
			q.Sites = append(q.Sites, host)
		}
	case "filetype":
		ext, ok := fileTypeOperand(tok.text)
		if !ok {
			return &OperatorError{Operator: tok.op, Value: tok.text, Rule: ruleFileType}
		}
		if tok.neg {
			q.NotFileTypes = append(q.NotFileTypes, ext)
		} else {
			q.FileTypes = append(q.FileTypes, ext)
		}
	case "inurl":
		if tok.neg {
			q.NotInURL = append(q.NotInURL, tok.text)
		} else {
			q.InURL = append(q.InURL, tok.text)
		}
	case "intitle":
		if tok.neg {
			q.NotInTitle = append(q.NotInTitle, tok.text)
		} else {
			q.InTitle = append(q.InTitle, tok.text)
		}
	case "imagesize", "larger":
		size, rule := sizeOperand(tok.text)
		dst := &q.ImageSize
		if tok.op == "larger" {
			dst = &q.Larger
		}
		if rule == "" && *dst != nil {
			// Two sizes would both have to hold: say so rather than
			// silently dropping one of them.
			rule = ruleOnlyOnce
		}
		if rule != "" {
			return &OperatorError{Operator: tok.op, Value: tok.text, Rule: rule}
		}
		*dst = &size
	}
	return nil
}

// word adds a word or phrase: to the allinurl: or allintitle: in force when
// it is positive, else to Terms or Not.
func (b *queryBuilder) word(t Term, neg bool) {
	switch {
	case b.all != nil && !neg:
		b.allInWord(t.Text)
	case neg:
		b.q.Not = append(b.q.Not, t)
	default:
		b.q.Terms = append(b.q.Terms, t)
	}
}

func (b *queryBuilder) allInWord(text string) {
	a, q := b.all, &b.q
	a.used = true
	switch {
	case a.op == "allinurl" && a.neg:
		q.NotInURL = append(q.NotInURL, text)
	case a.op == "allinurl":
		q.InURL = append(q.InURL, text)
	case a.neg:
		q.NotInTitle = append(q.NotInTitle, text)
	default:
		q.InTitle = append(q.InTitle, text)
	}
}

// endAllIn ends the allinurl: or allintitle: in force. One that took no
// word had an empty value, and is searched as a word like any other
// operator with an empty value.
func (b *queryBuilder) endAllIn() {
	a := b.all
	b.all = nil
	if a != nil && !a.used {
		b.word(Term{Text: a.raw}, a.neg)
	}
}

// hostOperand returns the lower-cased host of a site: or related: value,
// reduced to its host when given as a URL, and whether it is a valid host
// name. Letters need not be ASCII: an internationalised name is kept as
// written, not converted to punycode.
func hostOperand(v string) (string, bool) {
	h := v
	if i := strings.Index(h, "://"); i >= 0 && !strings.ContainsAny(h[:i], "/?#") {
		h = h[i+len("://"):]
	}
	if i := strings.IndexAny(h, "/?#"); i >= 0 {
		h = h[:i]
	}
	h = strings.ToLower(strings.TrimSuffix(h, ".")) // example.com. is example.com
	if h == "" || utf8.RuneCountInString(h) > maxHostLen {
		return "", false
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || utf8.RuneCountInString(label) > maxHostLabelLen ||
			strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") {
			return "", false
		}
		for _, r := range label {
			// Marks belong to letters in many scripts' names (Hindi, Thai).
			if r != '-' && !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r) {
				return "", false
			}
		}
	}
	return h, true
}

// fileTypeOperand returns the extension of a filetype: value, lower-cased
// and without a leading dot, and whether it is one the index records.
func fileTypeOperand(v string) (string, bool) {
	ext := strings.ToLower(strings.TrimPrefix(v, "."))
	if ext == "" || len(ext) > maxFileTypeLen {
		return "", false
	}
	for i := 0; i < len(ext); i++ {
		if c := ext[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return "", false
		}
	}
	return ext, true
}

// sizeOperand parses WIDTHxHEIGHT, returning the rule it breaks if any.
func sizeOperand(v string) (Size, string) {
	w, h, ok := strings.Cut(strings.ToLower(v), "x")
	if !ok {
		return Size{}, ruleSize
	}
	width, okW := sizeSide(w)
	height, okH := sizeSide(h)
	if !okW || !okH {
		return Size{}, ruleSize
	}
	if width < 1 || width > maxImageSide || height < 1 || height > maxImageSide {
		return Size{}, ruleSizeRange
	}
	return Size{Width: width, Height: height}, ""
}

// sizeSide parses one side of a size: ASCII digits only, so that +640 or
// 6_40 are not sizes.
func sizeSide(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil { // too many digits for an int: out of range, not malformed
		return maxImageSide + 1, true
	}
	return n, true
}
