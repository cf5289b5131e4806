package docsearch

import (
	"fmt"
	"strings"
	"unicode"
)

// maxChunk is the size, in bytes, a section is cut down to (see chunks):
// a piece is what a model reads and what an answer quotes from, and what
// a question's words are counted in, so a long section such as the
// configuration table must not stand as one block that matches every
// question a little.
const maxChunk = 1500

// Section is one part of a document: the text under one heading, down to
// the next heading, or a piece of it (Part > 0) when it is longer than
// maxChunk.
type Section struct {
	// Path is the file's path in the documentation ("README.md",
	// "docs/api.md", "docs/api/conventions.md").
	Path string
	// Anchor is the GitHub-style anchor of the section's heading
	// ("profiles"); that of the document's title for the text before its
	// first section.
	Anchor string
	// Headings are the headings from the document's top section down to
	// this one, the document's title left out (["Browser sessions", "Execute"]); empty
	// for the text before the first section.
	Headings []string
	// Text is the section's Markdown, without its heading.
	Text string
	// Part numbers the pieces of a section cut down to maxChunk, from 0.
	Part int
}

// Ref is the section as a link: "docs/api.md#profiles".
func (s Section) Ref() string { return s.Path + "#" + s.Anchor }

// HeadingPath is the file and the headings down to the section:
// "docs/api.md › Profiles".
func (s Section) HeadingPath() string {
	return strings.Join(append([]string{s.Path}, s.Headings...), " › ")
}

// skipMarker, on a line of a section's text, leaves the section and its
// sub-sections out of the search (in a document's introduction, the whole
// document): a reference for Trawler's developers (the code map, a table
// of every package; the benchmark's table of figures) answers no user's
// question, and its many names would outrank the sections that do.
const skipMarker = "<!-- docs-search: skip -->"

// split cuts one Markdown document into sections by its ATX headings (a
// '#' line inside a fenced code block is code, not a heading), then each
// section longer than maxChunk into pieces (see chunks).
// Sections without text (a heading followed at once by a sub-heading) are
// left out; their headings stay in their sub-sections' heading paths, as
// are sections marked with skipMarker and theirs.
func split(path, doc string) []Section {
	var (
		out     []Section
		stack   []heading // the open headings, outermost first
		anchor  = "top"   // of text before any heading
		body    []string
		fence   string
		anchors = map[string]int{}
		titled  bool
		// skipping is the level of the heading of a section marked with
		// skipMarker, while in it or its sub-sections; 0 otherwise.
		skipping int
	)
	flush := func() {
		text := strings.TrimSpace(strings.Join(body, "\n"))
		body = body[:0]
		if strings.Contains(text, skipMarker) && skipping == 0 {
			skipping = 1 // in a document's introduction: the whole document
			if len(stack) > 0 {
				skipping = stack[len(stack)-1].level
			}
		}
		if text == "" || skipping > 0 {
			return
		}
		hs := make([]string, len(stack))
		for i, h := range stack {
			hs[i] = h.text
		}
		for i, piece := range chunks(text, maxChunk) {
			out = append(out, Section{Path: path, Anchor: anchor, Headings: hs, Text: piece, Part: i})
		}
	}
	for line := range strings.Lines(doc) {
		line = strings.TrimRight(line, "\r\n")
		if f := fenceOf(line); f != "" {
			if fence == "" {
				fence = f
			} else if strings.HasPrefix(f, fence) && strings.TrimSpace(line) == f {
				fence = ""
			}
			body = append(body, line)
			continue
		}
		level, text := headingOf(line)
		if fence != "" || level == 0 {
			body = append(body, line)
			continue
		}
		flush()
		anchor = uniqueAnchor(anchors, slug(text))
		if level == 1 && !titled && len(stack) == 0 {
			// The document's title: the text under it, before the first
			// section, is the document's introduction.
			titled = true
			continue
		}
		for len(stack) > 0 && stack[len(stack)-1].level >= level {
			stack = stack[:len(stack)-1]
		}
		if skipping > 0 && level <= skipping {
			skipping = 0
		}
		stack = append(stack, heading{level: level, text: text})
	}
	flush()
	return out
}

type heading struct {
	level int
	text  string
}

// headingOf returns an ATX heading's level and text (inline Markdown
// removed), or level 0 when line is not a heading.
func headingOf(line string) (int, string) {
	trimmed := strings.TrimLeft(line, " ")
	if len(line)-len(trimmed) > 3 {
		return 0, ""
	}
	level := 0
	for level < len(trimmed) && trimmed[level] == '#' {
		level++
	}
	if level == 0 || level > 6 || (level < len(trimmed) && trimmed[level] != ' ' && trimmed[level] != '\t') {
		return 0, ""
	}
	text := strings.TrimSpace(trimmed[level:])
	// A closing sequence of '#'s is no part of the heading.
	if t := strings.TrimRight(text, "#"); t != text && (t == "" || strings.HasSuffix(t, " ")) {
		text = strings.TrimSpace(t)
	}
	return level, plainInline(text)
}

// fenceOf returns the fence (``` or ~~~, at least three) that line opens
// or closes, "" when it is not a fence line.
func fenceOf(line string) string {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 || len(t) < 3 {
		return ""
	}
	c := t[0]
	if c != '`' && c != '~' {
		return ""
	}
	n := 0
	for n < len(t) && t[n] == c {
		n++
	}
	if n < 3 {
		return ""
	}
	return t[:n]
}

// plainInline removes inline Markdown from a heading as GitHub renders it:
// code spans keep their text, links their text, emphasis markers go.
func plainInline(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '`':
			continue
		case '[':
			// [text](target) → text
			if end := strings.Index(s[i:], "]("); end > 0 {
				if close := strings.IndexByte(s[i+end:], ')'); close > 0 {
					b.WriteString(s[i+1 : i+end])
					i += end + close
					continue
				}
			}
			b.WriteByte(c)
		case '*':
			continue
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// slug is GitHub's anchor of a heading: lower case, every character but
// letters, marks, digits, spaces, '-' and '_' removed, spaces made
// hyphens.
func slug(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// uniqueAnchor is a, or a-1, a-2... when a document has the same heading
// more than once (GitHub's rule).
func uniqueAnchor(seen map[string]int, a string) string {
	n := seen[a]
	seen[a] = n + 1
	if n == 0 {
		return a
	}
	return fmt.Sprintf("%s-%d", a, n)
}

// block is a paragraph, a list, a table or a fenced code block: text with
// no blank line outside code.
type block struct {
	lines []string
	fence string // the fence of a code block, "" for other blocks
}

func (b block) String() string { return strings.Join(b.lines, "\n") }

// blocks cuts text at its blank lines, keeping fenced code whole.
func blocks(text string) []block {
	var out []block
	var cur block
	fence := ""
	end := func() {
		if len(cur.lines) > 0 {
			out = append(out, cur)
		}
		cur = block{}
	}
	for _, line := range strings.Split(text, "\n") {
		f := fenceOf(line)
		switch {
		case fence == "" && f != "":
			end()
			fence = f
			cur.fence = f
			cur.lines = append(cur.lines, line)
		case fence != "":
			cur.lines = append(cur.lines, line)
			if f != "" && strings.HasPrefix(f, fence) && strings.TrimSpace(line) == f {
				fence = ""
				end()
			}
		case strings.TrimSpace(line) == "":
			end()
		default:
			cur.lines = append(cur.lines, line)
		}
	}
	end()
	return out
}

// chunks cuts text into pieces of at most limit bytes between blocks
// (paragraphs, lists, tables, code); a block longer than limit is cut as
// splitBlock says.
func chunks(text string, limit int) []string {
	if len(text) <= limit {
		return []string{text}
	}
	var out []string
	var cur []string
	size := 0
	add := func(s string) {
		if size > 0 && size+2+len(s) > limit {
			out = append(out, strings.Join(cur, "\n\n"))
			cur, size = nil, 0
		}
		if size > 0 {
			size += 2
		}
		cur = append(cur, s)
		size += len(s)
	}
	for _, b := range blocks(text) {
		s := b.String()
		if len(s) <= limit {
			add(s)
			continue
		}
		for _, piece := range splitBlock(b, limit) {
			add(piece)
		}
	}
	if len(cur) > 0 {
		out = append(out, strings.Join(cur, "\n\n"))
	}
	return out
}

// splitBlock cuts a block longer than limit: a table between rows, each
// piece under the table's header; a code block between lines, each piece
// fenced; a list between items and prose between sentences, so that no
// piece starts in the middle of a sentence. A single row, line or sentence
// longer than limit stays whole.
func splitBlock(b block, limit int) []string {
	var head, tail, atoms []string
	switch {
	case b.fence != "":
		lines := b.lines[1:]
		if n := len(lines); n > 0 && fenceOf(lines[n-1]) != "" {
			lines = lines[:n-1]
		}
		head, tail, atoms = b.lines[:1], []string{b.fence}, lines
	case isTable(b.lines):
		head, atoms = b.lines[:2], b.lines[2:]
	default:
		// Items: a list item with its continuation lines, or the whole
		// paragraph; one too long is cut into its sentences.
		var items [][]string
		for _, l := range b.lines {
			if len(items) == 0 || listItem(strings.TrimSpace(l)) {
				items = append(items, nil)
			}
			items[len(items)-1] = append(items[len(items)-1], strings.TrimSpace(l))
		}
		for _, it := range items {
			text := strings.Join(it, " ")
			if len(text) <= limit {
				atoms = append(atoms, text)
				continue
			}
			atoms = append(atoms, sentences(text)...)
		}
	}
	var out []string
	var cur []string
	size := len(strings.Join(head, "\n")) + len(strings.Join(tail, "\n"))
	base := size
	emit := func() {
		if len(cur) == 0 {
			return
		}
		out = append(out, strings.Join(append(append(append([]string{}, head...), cur...), tail...), "\n"))
		cur, size = nil, base
	}
	for _, a := range atoms {
		if len(cur) > 0 && size+1+len(a) > limit {
			emit()
		}
		cur = append(cur, a)
		size += len(a) + 1
	}
	emit()
	return out
}

// isTable reports whether lines start with a Markdown table's header and
// delimiter rows.
func isTable(lines []string) bool {
	if len(lines) < 2 || !strings.HasPrefix(strings.TrimSpace(lines[0]), "|") {
		return false
	}
	return isDelimiterRow(lines[1])
}

// isDelimiterRow reports whether line is a table's |---|---| row.
func isDelimiterRow(line string) bool {
	t := strings.TrimSpace(line)
	return strings.HasPrefix(t, "|") && strings.Trim(t, "|-: \t") == "" && strings.Contains(t, "-")
}
