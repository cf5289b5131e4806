package changetracking

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// numbered is n lines "line 1" to "line n", each ending in a line break.
func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// The diff's text is difflib's unified diff of the two versions, and its
// structure is that text as parse-diff reads it: one file, a chunk per
// hunk with its header and ranges, and each line with its marker and its
// numbers in the versions it belongs to.
func TestDiffMarkdown(t *testing.T) {
	t.Parallel()
	twenty := numbered(20)
	for _, tc := range []struct {
		name              string
		previous, current string
		headers           []string // each chunk's header
		changes           []DiffChange
		adds, dels        int
	}{
		{name: "the same text", previous: twenty, current: twenty},
		{name: "whitespace only differs in a line break at the end", previous: "a\nb", current: "a\nb\n"},
		{
			name: "one line replaced", previous: twenty, current: strings.Replace(twenty, "line 10\n", "line ten\n", 1),
			headers: []string{"@@ -7,7 +7,7 @@"},
			changes: []DiffChange{
				{Type: "normal", Normal: true, Ln1: 7, Ln2: 7, Content: " line 7"},
				{Type: "normal", Normal: true, Ln1: 8, Ln2: 8, Content: " line 8"},
				{Type: "normal", Normal: true, Ln1: 9, Ln2: 9, Content: " line 9"},
				{Type: "del", Del: true, Ln: 10, Content: "-line 10"},
				{Type: "add", Add: true, Ln: 10, Content: "+line ten"},
				{Type: "normal", Normal: true, Ln1: 11, Ln2: 11, Content: " line 11"},
				{Type: "normal", Normal: true, Ln1: 12, Ln2: 12, Content: " line 12"},
				{Type: "normal", Normal: true, Ln1: 13, Ln2: 13, Content: " line 13"},
			},
			adds: 1, dels: 1,
		},
		{
			name: "a line inserted shifts the numbers after it", previous: "a\nb\nc\n", current: "a\nnew\nb\nc\n",
			headers: []string{"@@ -1,3 +1,4 @@"},
			changes: []DiffChange{
				{Type: "normal", Normal: true, Ln1: 1, Ln2: 1, Content: " a"},
				{Type: "add", Add: true, Ln: 2, Content: "+new"},
				{Type: "normal", Normal: true, Ln1: 2, Ln2: 3, Content: " b"},
				{Type: "normal", Normal: true, Ln1: 3, Ln2: 4, Content: " c"},
			},
			adds: 1,
		},
		{
			name: "from nothing (a page that was removed)", previous: "", current: "# Back\nagain",
			headers: []string{"@@ -0,0 +1,2 @@"},
			changes: []DiffChange{
				{Type: "add", Add: true, Ln: 1, Content: "+# Back"},
				{Type: "add", Add: true, Ln: 2, Content: "+again"},
			},
			adds: 2,
		},
		{
			name: "to a single line", previous: "one\ntwo", current: "one",
			headers: []string{"@@ -1,2 +1 @@"},
			changes: []DiffChange{
				{Type: "normal", Normal: true, Ln1: 1, Ln2: 1, Content: " one"},
				{Type: "del", Del: true, Ln: 2, Content: "-two"},
			},
			dels: 1,
		},
		{
			name: "changes far apart are two hunks", previous: twenty,
			current: strings.Replace(strings.Replace(twenty, "line 2\n", "line II\n", 1), "line 19\n", "line XIX\n", 1),
			headers: []string{"@@ -1,5 +1,5 @@", "@@ -16,5 +16,5 @@"}, adds: 2, dels: 2,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := DiffMarkdown(tc.previous, tc.current)
			if tc.headers == nil {
				assert.Nil(t, d, "no diff")
				return
			}
			require.NotNil(t, d)
			want, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: diffLines(tc.previous), B: diffLines(tc.current),
				FromFile: "previous", ToFile: "current", Context: 3})
			require.NoError(t, err)
			assert.Equal(t, want, d.Text, "difflib's unified diff")
			require.Len(t, d.JSON.Files, 1)
			f := d.JSON.Files[0]
			assert.Equal(t, "previous", f.From)
			assert.Equal(t, "current", f.To)
			assert.Equal(t, tc.adds, f.Additions, "additions")
			assert.Equal(t, tc.dels, f.Deletions, "deletions")
			var headers []string
			for _, c := range f.Chunks {
				headers = append(headers, c.Content)
				assert.Contains(t, d.Text, c.Content+"\n")
				// The ranges are the header's.
				assert.Equal(t, fmt.Sprintf("@@ -%s +%s @@", hunkRange(c.OldStart, c.OldLines), hunkRange(c.NewStart, c.NewLines)), c.Content)
			}
			assert.Equal(t, tc.headers, headers)
			if tc.changes != nil {
				assert.Equal(t, tc.changes, f.Chunks[0].Changes)
			}
			// Every line of the text's hunks is a change, in order.
			var lines []string
			for _, c := range f.Chunks {
				lines = append(lines, c.Content)
				for _, ch := range c.Changes {
					lines = append(lines, ch.Content)
				}
			}
			assert.Equal(t, "--- previous\n+++ current\n"+strings.Join(lines, "\n")+"\n", d.Text)
		})
	}
}

// applyDiff rebuilds the current version from the previous one and the
// diff's structure: lines outside the hunks are kept, a hunk's deleted
// lines dropped and its added ones inserted.
func applyDiff(t *testing.T, previous string, d *Diff) string {
	t.Helper()
	a := diffLines(previous)
	var out []string
	next := 0 // the next line of a to copy, 0-based
	for _, c := range d.JSON.Files[0].Chunks {
		start := c.OldStart - 1
		if c.OldLines == 0 {
			start = c.OldStart
		}
		out = append(out, a[next:start]...)
		next = start
		for _, ch := range c.Changes {
			switch ch.Type {
			case "normal":
				require.Equal(t, a[ch.Ln1-1], ch.Content[1:]+"\n", "an unchanged line is the previous version's")
				out = append(out, a[ch.Ln1-1])
				next = ch.Ln1
			case "del":
				require.Equal(t, a[ch.Ln-1], ch.Content[1:]+"\n", "a deleted line is the previous version's")
				next = ch.Ln
			case "add":
				require.Equal(t, len(out)+1, ch.Ln, "an added line's number in the current version")
				out = append(out, ch.Content[1:]+"\n")
			}
		}
	}
	return strings.Join(append(out, a[next:]...), "")
}

// Long pages are diffed span by span between the lines both versions have
// once, so that many scattered changes cost time in proportion to the
// page; the diff still turns one version into the other.
func TestDiffLongPages(t *testing.T) {
	t.Parallel()
	var a, b, c, d strings.Builder
	for i := range 40000 {
		fmt.Fprintf(&a, "Item %d\nUpdated %d minutes ago\n", i, i%60)
		fmt.Fprintf(&b, "Item %d\nUpdated %d minutes ago\n", i, (i+1)%60)
	}
	for i := range 5000 {
		fmt.Fprintf(&c, "| row | %d |\n", i%3)
		fmt.Fprintf(&d, "| row | %d |\n", i%4)
	}
	prose := numbered(9000)
	edited := strings.NewReplacer("line 10\n", "line ten\n", "line 4500\n", "", "line 8999\n", "line 8999\nline new\n").Replace(prose)
	for _, tc := range []struct {
		name              string
		previous, current string
		adds, dels        int
	}{
		{"every other line changed", a.String(), b.String(), 40000, 40000},
		{"few changes in a long page", prose, edited, 2, 2},
		{"no line unique to either version", c.String(), d.String(), -1, -1},
		{"a long page emptied", prose, "", 0, 9000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			diff := DiffMarkdown(tc.previous, tc.current)
			require.NotNil(t, diff)
			want := strings.Join(diffLines(tc.current), "")
			require.Equal(t, want, applyDiff(t, tc.previous, diff), "the diff turns one version into the other")
			if tc.adds >= 0 {
				assert.Equal(t, tc.adds, diff.JSON.Files[0].Additions, "additions")
				assert.Equal(t, tc.dels, diff.JSON.Files[0].Deletions, "deletions")
			}
		})
	}
	// The short pages of TestDiffMarkdown are applied too.
	twenty := numbered(20)
	current := strings.Replace(strings.Replace(twenty, "line 2\n", "line II\n", 1), "line 19\n", "", 1)
	require.Equal(t, current, applyDiff(t, twenty, DiffMarkdown(twenty, current)))
}

// Two versions are the same page when they differ in whitespace only.
func TestSameContent(t *testing.T) {
	t.Parallel()
	const page = "# Pricing\n\nStarter: $9/mo\nPro: $29/mo\n"
	for _, tc := range []struct {
		name    string
		current string
		same    bool
	}{
		{"identical", page, true},
		{"trailing spaces", "# Pricing  \n\nStarter: $9/mo \nPro: $29/mo\t\n", true},
		{"blank lines added and removed", "\n# Pricing\n\n\n\nStarter: $9/mo\n\nPro: $29/mo", true},
		{"runs of spaces folded", "#   Pricing\n\nStarter:\t$9/mo\nPro:  $29/mo\n", true},
		{"a paragraph reflowed", "# Pricing\n\nStarter: $9/mo Pro:\n$29/mo\n", true},
		{"a price changed", "# Pricing\n\nStarter: $9/mo\nPro: $39/mo\n", false},
		{"a line added", page + "Team: $99/mo\n", false},
		{"words joined", "# Pricing\n\nStarter:$9/mo\nPro: $29/mo\n", false},
		{"case", "# pricing\n\nStarter: $9/mo\nPro: $29/mo\n", false},
		{"emptied", "", false},
	} {
		assert.Equal(t, tc.same, SameContent(page, tc.current), tc.name)
		assert.Equal(t, tc.same, SameContent(tc.current, page), "%s, the other way", tc.name)
	}
}

// The json mode's comparison lists the top-level members whose values
// differ, nested values compared as JSON.
func TestJSONChanges(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		before, after string // "" for no extraction
		want          map[string]JSONChange
	}{
		{"nothing differs", `{"a":1,"b":{"x":[1,2],"y":"z"}}`, `{"b":{"y":"z","x":[1,2]},"a":1}`, map[string]JSONChange{}},
		{"a scalar", `{"price":9,"name":"Pro"}`, `{"price":12,"name":"Pro"}`,
			map[string]JSONChange{"price": {Previous: float64(9), Current: float64(12)}}},
		{"a nested value", `{"plans":[{"n":"A","p":1}]}`, `{"plans":[{"n":"A","p":2}]}`,
			map[string]JSONChange{"plans": {Previous: []any{map[string]any{"n": "A", "p": float64(1)}},
				Current: []any{map[string]any{"n": "A", "p": float64(2)}}}}},
		{"members gained and lost", `{"old":true,"same":1}`, `{"same":1,"new":"x"}`,
			map[string]JSONChange{"old": {Previous: true}, "new": {Current: "x"}}},
		{"null and missing are alike", `{"a":null}`, `{}`, map[string]JSONChange{"a": {}}},
		{"no previous extraction", "", `{"a":1}`, map[string]JSONChange{"a": {Current: float64(1)}}},
		{"an array root", `[1,2]`, `[1,3]`, map[string]JSONChange{"items": {Previous: []any{float64(1), float64(2)},
			Current: []any{float64(1), float64(3)}}}},
		{"a scalar root", `"a"`, `"b"`, map[string]JSONChange{"value": {Previous: "a", Current: "b"}}},
	} {
		var before, after []byte
		if tc.before != "" {
			before = []byte(tc.before)
		}
		if tc.after != "" {
			after = []byte(tc.after)
		}
		assert.Equal(t, tc.want, jsonChanges(before, after), tc.name)
	}
}
