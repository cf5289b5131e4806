package index

import (
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
)

// english is the analyzer of the text fields, also used to find the
// query's words in a page for its snippet.
var english = func() analysis.Analyzer {
	a := newMapping().AnalyzerNamed(en.AnalyzerName)
	if a == nil {
		panic("bleve's English analyzer is not registered")
	}
	return a
}()

// pairer is the analyzer of the pairs fields: the English one, then the
// terms two by two, "_" standing for a stop word left out.
var pairer = func() analysis.Analyzer {
	a := newMapping().AnalyzerNamed(pairsAnalyzer)
	if a == nil {
		panic("the pairs analyzer is not registered")
	}
	return a
}()

// pairTerms returns the pairs of text's words as the pairs fields hold
// them, a left-out stop word included ("run _", "_ test"), but not the
// pairs of two left-out words at its ends.
func pairTerms(text string) []string {
	var out []string
	for _, t := range pairer.Analyze([]byte(text)) {
		if string(t.Term) != "_ _" {
			out = append(out, string(t.Term))
		}
	}
	return out
}

// snippetLen is about how long a snippet is, in bytes.
const snippetLen = 240

// snippetScan bounds how much of a page is read for its snippet.
const snippetScan = 200 << 10

// Terms returns the terms the index makes of text (English analysis:
// lower case, stop words out, stems), in order.
func Terms(text string) []string { return analyzeList(text) }

// analyzeList returns the terms the index makes of text, in order.
func analyzeList(text string) []string {
	var out []string
	for _, t := range english.Analyze([]byte(text)) {
		out = append(out, string(t.Term))
	}
	return out
}

// snippetNeedles are what a snippet looks for in a page: each query word
// lower-cased and its stem, which starts most forms of the word
// ("coroutin" finds "coroutines").
func snippetNeedles(words []string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(w string) {
		if len(w) >= 2 && !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	for _, w := range words {
		for _, f := range strings.Fields(asciiLower(w)) {
			add(strings.Trim(f, `"'.,;:!?()[]{}`))
		}
	}
	for _, t := range analyzeList(strings.Join(words, " ")) {
		add(t)
	}
	return out
}

// maxNeedleHits bounds the places one word is looked at in a page.
const maxNeedleHits = 200

// span is where a needle starts a word of the page.
type span struct {
	start, end int
	needle     string
}

// snippet returns the passage of body (plain text) that holds the most of
// the needles, each at the start of a word, or "" when none is in it. It
// scans with byte searches, not the analyzer: a search builds one for each
// hit it returns.
func snippet(body string, needles []string) string {
	if len(needles) == 0 || body == "" {
		return ""
	}
	if len(body) > snippetScan {
		body = body[:snippetScan]
	}
	lower := asciiLower(body)
	var hits []span
	for _, n := range needles {
		for from, found := 0, 0; found < maxNeedleHits; found++ {
			i := strings.Index(lower[from:], n)
			if i < 0 {
				break
			}
			start := from + i
			from = start + len(n)
			if start > 0 && isWordByte(lower[start-1]) {
				continue
			}
			end := from
			for end < len(lower) && isWordByte(lower[end]) {
				end++
			}
			hits = append(hits, span{start, end, n})
		}
	}
	if len(hits) == 0 {
		return ""
	}
	slices.SortFunc(hits, func(a, b span) int { return a.start - b.start })
	// The window of snippetLen bytes, starting at a hit, with the most
	// distinct needles.
	best, bestN := 0, 0
	for i := range hits {
		seen := map[string]bool{}
		for j := i; j < len(hits) && hits[j].end-hits[i].start <= snippetLen; j++ {
			seen[hits[j].needle] = true
		}
		if len(seen) > bestN {
			best, bestN = i, len(seen)
		}
	}
	return passage(body, hits[best].start)
}

// passage is the text around byte at of body, whole words, about
// snippetLen long, with ellipses where it is cut.
func passage(body string, at int) string {
	start := max(at-snippetLen/4, 0)
	end := min(start+snippetLen, len(body))
	for start > 0 && !utf8.RuneStart(body[start]) {
		start--
	}
	for end < len(body) && !utf8.RuneStart(body[end]) {
		end++
	}
	text := body[start:end]
	if start > 0 {
		if i := strings.IndexAny(text, " \n"); i >= 0 && i < at-start {
			text = text[i+1:]
		}
	}
	if end < len(body) {
		if i := strings.LastIndexAny(text, " \n"); i > len(text)/2 {
			text = text[:i]
		}
	}
	text = plain(text)
	if start > 0 {
		text = "…" + text
	}
	if end < len(body) {
		text += "…"
	}
	return text
}

// asciiLower lower-cases ASCII letters only, so that byte offsets stay
// those of s.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// isWordByte: letters, digits, underscore, and any byte of a non-ASCII
// character.
func isWordByte(c byte) bool {
	return c >= 0x80 || c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

var (
	mdLink   = regexp.MustCompile(`!?\[([^\]]*)\]\([^()\s]*(?:\s+"[^"]*")?\)`)
	mdEscape = regexp.MustCompile(`\\([\\!-/:-@\[-` + "`" + `{-~])`)
	mdMarks  = regexp.MustCompile("(?m)^\\s*(#{1,6}|[-*+>]|\\d+\\.)\\s+|[*`|]+|\\\\")
	mdSpaces = regexp.MustCompile(`\s+`)
)

// plainText is Markdown as the words it shows: links as their text,
// escapes undone, keeping lines.
func plainText(md string) string {
	md = mdLink.ReplaceAllString(md, "$1")
	return mdEscape.ReplaceAllString(md, "$1")
}

// plain strips Markdown's markup from a passage.
func plain(md string) string {
	md = mdLink.ReplaceAllString(md, "$1")
	md = mdMarks.ReplaceAllString(md, " ")
	return strings.TrimSpace(mdSpaces.ReplaceAllString(md, " "))
}

// lead returns the start of body as plain text, for pages no word of the
// query is in.
func lead(body string) string {
	if len(body) > snippetLen*2 {
		body = body[:snippetLen*2]
	}
	text := plain(body)
	if len(text) <= snippetLen {
		return text
	}
	cut := strings.LastIndex(text[:snippetLen], " ")
	if cut < snippetLen/2 {
		cut = snippetLen
	}
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + "…"
}
