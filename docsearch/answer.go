package docsearch

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// unit is one sentence of a section's prose or of a list item, or one row
// of a table: what an answer without a model quotes.
type unit struct {
	text  string
	block int // units of one paragraph share it; a row or an item is a block of its own
}

// units cuts Markdown into sentences, list items and table rows, in
// order. Headings, code blocks, list markers and a table's header and
// delimiter rows are left out: they are no answer alone.
func units(text string) []unit {
	var out []unit
	block := 0
	var para []string
	endPara := func() {
		if len(para) > 0 {
			for _, s := range sentences(strings.Join(para, " ")) {
				out = append(out, unit{text: s, block: block})
			}
			block++
			para = para[:0]
		}
	}
	for _, b := range blocks(text) {
		if b.fence != "" {
			continue
		}
		table := isTable(b.lines)
		for i, line := range b.lines {
			t := strings.TrimSpace(line)
			switch {
			case table && i < 2, isDelimiterRow(t):
				// the header and the delimiter
			case strings.HasPrefix(t, "|"):
				endPara()
				row := strings.TrimSpace(strings.Trim(t, "|"))
				out = append(out, unit{text: row, block: block})
				block++
			case listItem(t):
				endPara()
				para = append(para, strings.TrimSpace(t[strings.IndexByte(t, ' '):]))
			default:
				if level, _ := headingOf(line); level > 0 {
					endPara()
					continue
				}
				para = append(para, t)
			}
		}
		endPara()
	}
	return out
}

// listItem reports whether a line starts a list item ("- ", "* ", "1. ").
func listItem(t string) bool {
	if strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "* ") || strings.HasPrefix(t, "+ ") {
		return true
	}
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	return i > 0 && i+1 < len(t) && (t[i] == '.' || t[i] == ')') && t[i+1] == ' '
}

// sentences cuts prose after '.', '!' or '?' followed by a space and a
// capital letter, a digit, a quote or a code span, outside code spans, and
// not after the abbreviations "e.g." and "i.e.".
func sentences(p string) []string {
	var out []string
	inCode := false
	start := 0
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '`' {
			inCode = !inCode
			continue
		}
		if inCode || (c != '.' && c != '!' && c != '?') || i+2 >= len(p) || p[i+1] != ' ' {
			continue
		}
		next, _ := utf8.DecodeRuneInString(p[i+2:])
		if !unicode.IsUpper(next) && !unicode.IsDigit(next) && next != '`' && next != '"' && next != '(' {
			continue
		}
		if lower := strings.ToLower(p[max(0, i-3) : i+1]); strings.HasSuffix(lower, "e.g.") || strings.HasSuffix(lower, "i.e.") {
			continue
		}
		out = append(out, strings.TrimSpace(p[start:i+1]))
		start = i + 2
	}
	if rest := strings.TrimSpace(p[start:]); rest != "" {
		out = append(out, rest)
	}
	return out
}

// maxQuoted is the most sentences an answer without a model quotes.
const maxQuoted = 3

// Excerpt is the answer without a model: the sentences (list items, table
// rows) of the hit's text that hold the most of the question's words,
// verbatim, at most three, in the order of the text (a glossary word
// counts for the question's word). Besides those with the most words, a
// sentence is quoted only if it holds two of them or more and one fewer
// than the best at most, so that the one on the point does not come with
// two that share a word with the question by chance. When no sentence holds a word (the hit matched by its
// headings), its first sentence is the answer.
func (ix *Index) Excerpt(question string, h Hit) string {
	want := map[string]bool{}
	for _, w := range ix.questionWords(question) {
		want[w.term] = true
	}
	for _, alts := range ix.expansions(question) {
		for _, w := range alts {
			want[w.term] = true
		}
	}
	us := units(h.Text)
	if len(us) == 0 {
		return strings.TrimSpace(h.Text)
	}
	scores := make([]int, len(us))
	best := 0
	for i, u := range us {
		for _, w := range ix.words(u.text + "\n" + identifierWords(u.text)) {
			if want[w.term] {
				scores[i]++
			}
		}
		best = max(best, scores[i])
	}
	if best == 0 {
		return us[0].text
	}
	order := make([]int, len(us))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return scores[b] - scores[a] })
	var picked []int
	for _, i := range order {
		if len(picked) == maxQuoted || (scores[i] < best && (scores[i] < 2 || scores[i] < best-1)) {
			break
		}
		picked = append(picked, i)
	}
	slices.Sort(picked)
	var b strings.Builder
	for n, i := range picked {
		if n > 0 {
			if us[i].block == us[picked[n-1]].block {
				b.WriteByte(' ')
			} else {
				b.WriteByte('\n')
			}
		}
		b.WriteString(us[i].text)
	}
	return b.String()
}

// Reason says in a sentence what a hit covers: its heading path and the
// question's words it holds.
func (h Hit) Reason() string {
	what := "The section " + h.HeadingPath()
	if len(h.Headings) == 0 {
		what = "The introduction of " + h.Path
	}
	if len(h.Matched) == 0 {
		return what + "."
	}
	quoted := make([]string, len(h.Matched))
	for i, m := range h.Matched {
		quoted[i] = fmt.Sprintf("%q", m)
	}
	return fmt.Sprintf("%s, which mentions %s.", what, strings.Join(quoted, ", "))
}

// System is the instruction that goes with a Prompt.
const System = "You answer questions about Trawler, a self-hosted web scraping and browser service whose REST API " +
	"is compatible with Firecrawl's v2 API. Answer only from the documentation sections you are given, never from " +
	"what you know otherwise. Be concise: a few sentences, with the exact names of the endpoints, options, settings " +
	"and error codes the sections use. If the sections do not answer the question, say that the documentation " +
	"does not cover it. End with a line \"Sources:\" that lists the references (such as docs/api.md#profiles) of the " +
	"sections that support your answer."

// Prompt is the message that asks a model to answer question from the
// hits: each section under its reference and heading path.
func Prompt(question string, hits []Hit) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Question: %s\n\nDocumentation sections:\n", strings.TrimSpace(question))
	for i, h := range hits {
		fmt.Fprintf(&b, "\n[%d] %s (%s)\n%s\n", i+1, h.Ref(), h.HeadingPath(), strings.TrimSpace(h.Text))
	}
	return b.String()
}

// sourceNumber finds a section cited by its number in the prompt: [2].
var sourceNumber = regexp.MustCompile(`\[(\d+)\]`)

// Cited returns the hits that a model's answer cites, by reference or by
// their number in the prompt, in the hits' order; all of them when it
// cites none.
func Cited(answer string, hits []Hit) []Hit {
	numbers := map[int]bool{}
	for _, m := range sourceNumber.FindAllStringSubmatch(answer, -1) {
		var n int
		if _, err := fmt.Sscan(m[1], &n); err == nil {
			numbers[n] = true
		}
	}
	var out []Hit
	for i, h := range hits {
		if numbers[i+1] || mentions(answer, h.Ref()) {
			out = append(out, h)
		}
	}
	if len(out) == 0 {
		return hits
	}
	return out
}

// mentions reports whether text holds ref as a whole reference: not
// docs/api.md#scrape inside docs/api.md#scrape-options.
func mentions(text, ref string) bool {
	for rest := text; ; {
		i := strings.Index(rest, ref)
		if i < 0 {
			return false
		}
		rest = rest[i+len(ref):]
		if r, _ := utf8.DecodeRuneInString(rest); rest == "" || !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_') {
			return true
		}
	}
}
