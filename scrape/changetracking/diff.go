package changetracking

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
)

// diffContext is how many unchanged lines a hunk shows around a change,
// as git diff shows by default.
const diffContext = 3

// Diff is the git-diff mode's answer, in Firecrawl's shape: the unified
// diff of the two versions' Markdown, and the same diff as the parse-diff
// library (which Firecrawl runs over its text) structures it.
type Diff struct {
	Text string   `json:"text"`
	JSON DiffJSON `json:"json"`
}

// DiffJSON is parse-diff's result, under "files".
type DiffJSON struct {
	Files []DiffFile `json:"files"`
}

// DiffFile is one file of a parse-diff result: here always one, the page,
// from its previous version to its current one.
type DiffFile struct {
	From      string      `json:"from"`
	To        string      `json:"to"`
	Chunks    []DiffChunk `json:"chunks"`
	Additions int         `json:"additions"`
	Deletions int         `json:"deletions"`
}

// DiffChunk is one hunk: its header line, its changes, and the ranges of
// lines it covers in each version (1-based starts, as in the header).
type DiffChunk struct {
	Content  string       `json:"content"`
	Changes  []DiffChange `json:"changes"`
	OldStart int          `json:"oldStart"`
	OldLines int          `json:"oldLines"`
	NewStart int          `json:"newStart"`
	NewLines int          `json:"newLines"`
}

// DiffChange is one line of a hunk as parse-diff gives it: content with
// its marker ("+", "-" or " "); an added line has its number in the
// current version (ln), a deleted one in the previous version (ln), an
// unchanged one both (ln1, ln2).
type DiffChange struct {
	Type    string `json:"type"` // add, del or normal
	Add     bool   `json:"add,omitempty"`
	Del     bool   `json:"del,omitempty"`
	Normal  bool   `json:"normal,omitempty"`
	Ln      int    `json:"ln,omitempty"`
	Ln1     int    `json:"ln1,omitempty"`
	Ln2     int    `json:"ln2,omitempty"`
	Content string `json:"content"`
}

// The names of the two versions in a diff's header lines.
const (
	diffFrom = "previous"
	diffTo   = "current"
)

// DiffMarkdown diffs two versions of a page's Markdown, line by line,
// with go-difflib's matcher; nil when no line differs. Its text is a
// unified diff with "previous" and "current" as the file names (for pages
// of up to diffPlainLines lines, exactly what difflib writes); the
// structure is read from the same hunks rather than parsed back from the
// text.
func DiffMarkdown(previous, current string) *Diff {
	a, b := diffLines(previous), diffLines(current)
	groups := groupOpCodes(opCodes(a, b), diffContext)
	if len(groups) == 0 {
		return nil
	}
	var text strings.Builder
	text.Grow(64 * len(groups))
	text.WriteString("--- " + diffFrom + "\n+++ " + diffTo + "\n")
	file := DiffFile{From: diffFrom, To: diffTo, Chunks: make([]DiffChunk, 0, len(groups))}
	for _, g := range groups {
		first, last := g[0], g[len(g)-1]
		ch := DiffChunk{OldLines: last.I2 - first.I1, NewLines: last.J2 - first.J1}
		ch.OldStart, ch.NewStart = hunkStart(first.I1, ch.OldLines), hunkStart(first.J1, ch.NewLines)
		ch.Content = "@@ -" + hunkRange(ch.OldStart, ch.OldLines) + " +" + hunkRange(ch.NewStart, ch.NewLines) + " @@"
		text.WriteString(ch.Content + "\n")
		for _, op := range g {
			if op.Tag == 'e' {
				for k, line := range a[op.I1:op.I2] {
					text.WriteString(" " + line)
					ch.Changes = append(ch.Changes, DiffChange{Type: "normal", Normal: true, Ln1: op.I1 + k + 1,
						Ln2: op.J1 + k + 1, Content: " " + strings.TrimSuffix(line, "\n")})
				}
				continue
			}
			for k, line := range a[op.I1:op.I2] {
				text.WriteString("-" + line)
				ch.Changes = append(ch.Changes, DiffChange{Type: "del", Del: true, Ln: op.I1 + k + 1,
					Content: "-" + strings.TrimSuffix(line, "\n")})
				file.Deletions++
			}
			for k, line := range b[op.J1:op.J2] {
				text.WriteString("+" + line)
				ch.Changes = append(ch.Changes, DiffChange{Type: "add", Add: true, Ln: op.J1 + k + 1,
					Content: "+" + strings.TrimSuffix(line, "\n")})
				file.Additions++
			}
		}
		file.Chunks = append(file.Chunks, ch)
	}
	return &Diff{Text: text.String(), JSON: DiffJSON{Files: []DiffFile{file}}}
}

// diffPlainLines is the most lines a version may have for difflib's
// matcher to diff it whole. Its time grows with the square of the lines
// when the changes are many and scattered (every other line of a
// 10,000-line page takes seconds, of 40,000 lines most of a minute), and a
// scrape cannot stop it once started; longer pages are cut into the spans
// between the lines both versions have exactly once, each diffed alone.
const diffPlainLines = 3000

// opCodes are the steps that turn a into b, as difflib's GetOpCodes gives
// them: equal, replace, delete and insert ranges, in order, covering both.
func opCodes(a, b []string) []difflib.OpCode {
	if max(len(a), len(b)) <= diffPlainLines {
		return difflib.NewMatcher(a, b).GetOpCodes()
	}
	var out []difflib.OpCode
	i, j := 0, 0
	for _, an := range anchors(a, b) {
		out = appendSpan(out, a, b, i, an[0], j, an[1])
		out = appendOp(out, difflib.OpCode{Tag: 'e', I1: an[0], I2: an[0] + 1, J1: an[1], J2: an[1] + 1})
		i, j = an[0]+1, an[1]+1
	}
	return appendSpan(out, a, b, i, len(a), j, len(b))
}

// appendSpan appends the steps that turn a[i1:i2] into b[j1:j2]: difflib's
// when the span is short enough, else one replacement (a span that long
// without a line unique to both versions is no prose page).
func appendSpan(out []difflib.OpCode, a, b []string, i1, i2, j1, j2 int) []difflib.OpCode {
	switch {
	case i1 == i2 && j1 == j2:
		return out
	case i1 == i2 || j1 == j2 || max(i2-i1, j2-j1) > diffPlainLines:
		return appendOp(out, difflib.OpCode{Tag: changeTag(i1, i2, j1, j2), I1: i1, I2: i2, J1: j1, J2: j2})
	}
	for _, op := range difflib.NewMatcher(a[i1:i2], b[j1:j2]).GetOpCodes() {
		op.I1, op.I2, op.J1, op.J2 = op.I1+i1, op.I2+i1, op.J1+j1, op.J2+j1
		out = appendOp(out, op)
	}
	return out
}

// appendOp appends op, merged with the last step when they are both equal
// ranges or both changes, so that the steps alternate as difflib's do.
func appendOp(out []difflib.OpCode, op difflib.OpCode) []difflib.OpCode {
	if n := len(out); n > 0 && (out[n-1].Tag == 'e') == (op.Tag == 'e') {
		last := &out[n-1]
		last.I2, last.J2 = op.I2, op.J2
		if last.Tag != 'e' {
			last.Tag = changeTag(last.I1, last.I2, last.J1, last.J2)
		}
		return out
	}
	return append(out, op)
}

// changeTag is difflib's tag for a change of a[i1:i2] into b[j1:j2].
func changeTag(i1, i2, j1, j2 int) byte {
	switch {
	case i1 == i2:
		return 'i'
	case j1 == j2:
		return 'd'
	}
	return 'r'
}

// anchors are the lines both versions have exactly once, as pairs of their
// indexes in a and b, the longest run of them in the same order in both
// (patience diff's anchors): such a line is the same line of the page in
// both versions, and the spans between them can be diffed apart.
func anchors(a, b []string) [][2]int {
	type seen struct{ a, b, ia, ib int }
	lines := make(map[string]*seen, len(a))
	for i, l := range a {
		s := lines[l]
		if s == nil {
			s = &seen{}
			lines[l] = s
		}
		s.a++
		s.ia = i
	}
	for j, l := range b {
		if s := lines[l]; s != nil {
			s.b++
			s.ib = j
		}
	}
	var pairs [][2]int // in a's order
	for _, l := range a {
		if s := lines[l]; s.a == 1 && s.b == 1 {
			pairs = append(pairs, [2]int{s.ia, s.ib})
		}
	}
	// The longest increasing run of b's indexes, by patience sorting:
	// tails[k] is the pair ending the best run of length k+1 found so
	// far, prev links each pair to the one before it in its run.
	tails := make([]int, 0, len(pairs))
	prev := make([]int, len(pairs))
	for p, pr := range pairs {
		k, _ := slices.BinarySearchFunc(tails, pr[1], func(t int, target int) int { return cmp.Compare(pairs[t][1], target) })
		prev[p] = -1
		if k > 0 {
			prev[p] = tails[k-1]
		}
		if k == len(tails) {
			tails = append(tails, p)
		} else {
			tails[k] = p
		}
	}
	if len(tails) == 0 {
		return nil
	}
	run := make([][2]int, len(tails))
	for k, p := len(tails)-1, tails[len(tails)-1]; k >= 0; k, p = k-1, prev[p] {
		run[k] = pairs[p]
	}
	return run
}

// groupOpCodes cuts steps into hunks with n lines of context, as difflib's
// GetGroupedOpCodes does (its own works on its matcher's steps only).
func groupOpCodes(codes []difflib.OpCode, n int) [][]difflib.OpCode {
	if len(codes) == 0 || len(codes) == 1 && codes[0].Tag == 'e' {
		return nil
	}
	codes = slices.Clone(codes)
	if c := &codes[0]; c.Tag == 'e' {
		c.I1, c.J1 = max(c.I1, c.I2-n), max(c.J1, c.J2-n)
	}
	if c := &codes[len(codes)-1]; c.Tag == 'e' {
		c.I2, c.J2 = min(c.I2, c.I1+n), min(c.J2, c.J1+n)
	}
	var groups [][]difflib.OpCode
	var group []difflib.OpCode
	for _, c := range codes {
		// A long unchanged range ends a hunk and starts the next.
		if c.Tag == 'e' && c.I2-c.I1 > 2*n {
			group = append(group, difflib.OpCode{Tag: 'e', I1: c.I1, I2: min(c.I2, c.I1+n), J1: c.J1, J2: min(c.J2, c.J1+n)})
			groups = append(groups, group)
			group = nil
			c.I1, c.J1 = max(c.I1, c.I2-n), max(c.J1, c.J2-n)
		}
		group = append(group, c)
	}
	if len(group) > 0 && !(len(group) == 1 && group[0].Tag == 'e') {
		groups = append(groups, group)
	}
	return groups
}

// diffLines splits text into lines, each ending in "\n" (the last one
// too, so that a line that gained its break does not count as changed).
func diffLines(text string) []string {
	if text == "" {
		return nil
	}
	lines := strings.SplitAfter(text, "\n")
	if last := len(lines) - 1; lines[last] == "" {
		lines = lines[:last]
	} else {
		lines[last] += "\n"
	}
	return lines
}

// hunkStart is the 1-based start a hunk header gives for a range that
// begins at 0-based line i and spans n lines: an empty range starts at the
// line before it (diff's rule).
func hunkStart(i, n int) int {
	if n == 0 {
		return i
	}
	return i + 1
}

// hunkRange writes a range of a hunk header as difflib and diff do: the
// count is left out when it is one.
func hunkRange(start, n int) string {
	if n == 1 {
		return strconv.Itoa(start)
	}
	return strconv.Itoa(start) + "," + strconv.Itoa(n)
}

// SameContent reports whether two versions' Markdown differ in whitespace
// only: every run of whitespace, line breaks included, counts as one
// space, and leading and trailing whitespace as none. A reflowed
// paragraph, a trailing space or an extra blank line is the same page.
func SameContent(a, b string) bool {
	fa, fb := strings.Fields(a), strings.Fields(b)
	if len(fa) != len(fb) {
		return false
	}
	for i := range fa {
		if fa[i] != fb[i] {
			return false
		}
	}
	return true
}
