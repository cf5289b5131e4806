package index

import (
	"regexp"
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

// snippetLen is about how long a snippet is, in bytes.
const snippetLen = 240

// snippetScan bounds how much of a page is read for its snippet.
const snippetScan = 200 << 10

// analyzeWords returns the terms the index makes of words.
func analyzeWords(words []string) map[string]bool {
	out := map[string]bool{}
	for _, t := range english.Analyze([]byte(strings.Join(words, " "))) {
		out[string(t.Term)] = true
	}
	return out
}

// analyzeList returns the terms the index makes of text, in order.
func analyzeList(text string) []string {
	var out []string
	for _, t := range english.Analyze([]byte(text)) {
		out = append(out, string(t.Term))
	}
	return out
}

// snippet returns the passage of body (Markdown) that holds the most of
// the query's terms, as plain text, or "" when none is in it.
func snippet(body string, stems map[string]bool) string {
	if len(stems) == 0 || body == "" {
		return ""
	}
	if len(body) > snippetScan {
		body = body[:snippetScan]
	}
	var hits []*analysis.Token
	for _, t := range english.Analyze([]byte(body)) {
		if stems[string(t.Term)] {
			hits = append(hits, t)
		}
	}
	if len(hits) == 0 {
		return ""
	}
	// The window of snippetLen bytes, starting at a hit, with the most
	// distinct terms.
	best, bestN := 0, 0
	for i := range hits {
		seen := map[string]bool{}
		for j := i; j < len(hits) && hits[j].End-hits[i].Start <= snippetLen; j++ {
			seen[string(hits[j].Term)] = true
		}
		if len(seen) > bestN {
			best, bestN = i, len(seen)
		}
	}
	start := max(hits[best].Start-snippetLen/4, 0)
	end := min(start+snippetLen, len(body))
	for start > 0 && !utf8.RuneStart(body[start]) {
		start--
	}
	for end < len(body) && !utf8.RuneStart(body[end]) {
		end++
	}
	text := body[start:end]
	// Whole words only at both ends.
	if start > 0 {
		if i := strings.IndexAny(text, " \n"); i >= 0 && i < hits[best].Start-start {
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
