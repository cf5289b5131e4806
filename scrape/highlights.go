package scrape

import (
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/trawler-dev/trawler/index"
)

// Highlights are chosen by BM25 over windows of the page's sentences: the
// page is cut into paragraphs (a code block is one), a paragraph into
// sentences, and each run of up to highlightWindow sentences of one
// paragraph is a candidate. No model is needed.
const (
	highlightWindow   = 2
	highlightPassages = 3
	bm25K1            = 1.2
	bm25B             = 0.75
)

// sentenceEnd ends a sentence: ., ! or ? and the space after it.
var sentenceEnd = regexp.MustCompile(`[.!?]["')\]]*\s+`)

// span is a byte range of the Markdown.
type span struct{ from, to int }

// highlights returns the passages of md most relevant to query, verbatim,
// in the page's order, separated by blank lines; "" when no passage has a
// word of the query.
func highlights(md, query string) string { return passages(md, query, highlightPassages) }

// Highlights is the highlights format's choice of passages of md for
// query, for a search result described by its page.
func Highlights(md, query string) string { return highlights(md, query) }

// passages returns the n passages of md most relevant to query, as
// highlights does.
func passages(md, query string, most int) string {
	want := map[string]bool{}
	for _, t := range index.Terms(query) {
		want[t] = true
	}
	if len(want) == 0 {
		return ""
	}
	windows := sentenceWindows(md)
	terms := make([][]string, len(windows))
	df := map[string]int{}
	total := 0
	for i, w := range windows {
		terms[i] = index.Terms(md[w.from:w.to])
		total += len(terms[i])
		seen := map[string]bool{}
		for _, t := range terms[i] {
			if want[t] && !seen[t] {
				seen[t] = true
				df[t]++
			}
		}
	}
	if len(windows) == 0 {
		return ""
	}
	avg := float64(total) / float64(len(windows))
	n := float64(len(windows))
	scores := make([]float64, len(windows))
	for i := range windows {
		tf := map[string]int{}
		for _, t := range terms[i] {
			if want[t] {
				tf[t]++
			}
		}
		for t, f := range tf {
			idf := math.Log(1 + (n-float64(df[t])+0.5)/(float64(df[t])+0.5))
			norm := bm25K1 * (1 - bm25B + bm25B*float64(len(terms[i]))/max(avg, 1))
			// Every distinct query word found counts a little over the
			// others: a passage with both words beats one with one twice.
			scores[i] += idf * float64(f) * (bm25K1 + 1) / (float64(f) + norm)
		}
		scores[i] *= 1 + 0.1*float64(len(tf))
	}
	order := make([]int, len(windows))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case scores[a] > scores[b]:
			return -1
		case scores[a] < scores[b]:
			return 1
		}
		return 0
	})
	var picked []span
	for _, i := range order {
		if scores[i] <= 0 || len(picked) == most {
			break
		}
		w := windows[i]
		if slices.ContainsFunc(picked, func(p span) bool { return w.from < p.to && p.from < w.to }) {
			continue // overlaps a better passage
		}
		picked = append(picked, w)
	}
	// In the page's order, and sentences that follow each other in one
	// paragraph as one passage.
	slices.SortFunc(picked, func(a, b span) int { return a.from - b.from })
	var out []string
	for i := 0; i < len(picked); i++ {
		p := picked[i]
		for i+1 < len(picked) && !strings.Contains(md[p.to:picked[i+1].from], "\n\n") &&
			strings.TrimSpace(md[p.to:picked[i+1].from]) == "" {
			p.to = picked[i+1].to
			i++
		}
		out = append(out, strings.TrimSpace(md[p.from:p.to]))
	}
	return strings.Join(out, "\n\n")
}

// sentenceWindows cuts md into paragraphs (blank lines apart; a fenced
// code block is one paragraph, a list item or table row a line of its
// own, headings left out)
// and returns every run of 1 to highlightWindow sentences of a paragraph.
func sentenceWindows(md string) []span {
	var out []span
	for _, para := range paragraphs(md) {
		var sents []span
		text := md[para.from:para.to]
		if strings.HasPrefix(strings.TrimSpace(text), "```") {
			sents = []span{para}
		} else {
			start := para.from
			for _, m := range sentenceEnd.FindAllStringIndex(text, -1) {
				sents = append(sents, span{start, para.from + m[1]})
				start = para.from + m[1]
			}
			if strings.TrimSpace(md[start:para.to]) != "" {
				sents = append(sents, span{start, para.to})
			}
		}
		for i := range sents {
			for k := 1; k <= highlightWindow && i+k <= len(sents); k++ {
				out = append(out, span{sents[i].from, sents[i+k-1].to})
			}
		}
	}
	return out
}

// paragraphs returns the byte ranges of md's paragraphs.
func paragraphs(md string) []span {
	var out []span
	start, inCode := -1, false
	flush := func(end int) {
		if start >= 0 && strings.TrimSpace(md[start:end]) != "" {
			out = append(out, span{start, end})
		}
		start = -1
	}
	pos := 0
	for _, line := range strings.SplitAfter(md, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			if !inCode {
				flush(pos)
				start = pos
			}
			inCode = !inCode
			if !inCode {
				flush(pos + len(line))
			}
		case inCode:
		case trimmed == "":
			flush(pos)
		case strings.HasPrefix(trimmed, "#"):
			// A heading names a passage; it is not one.
			flush(pos)
		case strings.HasPrefix(trimmed, "- ") || strings.HasPrefix(trimmed, "* ") ||
			strings.HasPrefix(trimmed, "|") || isNumbered(trimmed):
			flush(pos)
			start = pos
			flush(pos + len(line))
		default:
			if start < 0 {
				start = pos
			}
		}
		pos += len(line)
	}
	flush(len(md))
	return out
}

// isNumbered reports whether a line starts an ordered list item ("3. ").
func isNumbered(line string) bool {
	i := 0
	for i < len(line) && line[i] >= '0' && line[i] <= '9' {
		i++
	}
	return i > 0 && i+1 < len(line) && (line[i] == '.' || line[i] == ')') && line[i+1] == ' '
}

// bestPassage is the one passage of md most relevant to query.
func bestPassage(md, query string) string { return passages(md, query, 1) }
