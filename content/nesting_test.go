package content

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/trawler-dev/trawler/content/contenttest"
)

// repeated is a page whose body is format (given the index) n times.
func repeated(format string, n int) []byte {
	var b bytes.Buffer
	b.WriteString("<!doctype html><html><head><title>Repeated</title></head><body>\n")
	for i := range n {
		fmt.Fprintf(&b, format, i)
	}
	b.WriteString("</body></html>\n")
	return b.Bytes()
}

// nestedLists is a page of n lists, each nested in the last item of the
// previous one, each with three items of text and a link: about 320 bytes
// a level.
func nestedLists(n int) []byte {
	return repeated(`<ul><li>List %d, first item, with <a href="/lists/%[1]d">the link of list %[1]d</a> in it.</li>`+
		`<li>List %[1]d, second item: a sentence of plain prose, <em>some emphasis</em> and <code>code_%[1]d()</code>.</li>`+
		`<li><p>List %[1]d, third item, a paragraph that a documentation page might hold, with the next list:</p>`+"\n", n)
}

// nestedQuotes is a page of n blockquotes, each nested in the previous
// one after a paragraph with a link.
func nestedQuotes(n int) []byte {
	return repeated(`<blockquote><p>Quote %d, with <a href="/quotes/%[1]d">the link of quote %[1]d</a>.</p>`+"\n", n)
}

// nestedListsAndQuotes is a page of n levels, lists and quotes by turns.
func nestedListsAndQuotes(n int) []byte {
	var b bytes.Buffer
	b.WriteString("<!doctype html><html><head><title>Mixed</title></head><body>\n")
	for i := range n {
		if i%2 == 0 {
			fmt.Fprintf(&b, `<ol><li>Item %d, with <a href="/mixed/%[1]d">the link of level %[1]d</a>.`+"\n", i)
		} else {
			fmt.Fprintf(&b, `<blockquote><p>Quote %d, with <a href="/mixed/%[1]d">the link of level %[1]d</a>.</p>`+"\n", i)
		}
	}
	b.WriteString("</body></html>\n")
	return b.Bytes()
}

// leveled returns formats, each given the level, for each of n levels.
func leveled(n int, formats ...string) []string {
	out := make([]string, 0, n*len(formats))
	for i := range n {
		for _, f := range formats {
			out = append(out, fmt.Sprintf(f, i))
		}
	}
	return out
}

// inOrder reports the first of want that md lacks after the previous one,
// or "".
func inOrder(md string, want []string) string {
	at := 0
	for _, w := range want {
		i := strings.Index(md[at:], w)
		if i < 0 {
			return w
		}
		at += i + len(w)
	}
	return ""
}

func numbered(format string, n int) []string {
	out := make([]string, n)
	for i := range n {
		out[i] = fmt.Sprintf(format, i)
	}
	return out
}

// maxPrefix returns the longest run of the bytes in set that starts a line
// of md.
func maxPrefix(md, set string) int {
	longest := 0
	for _, line := range strings.Split(md, "\n") {
		longest = max(longest, len(line)-len(strings.TrimLeft(line, set)))
	}
	return longest
}

// TestTransformDeepNesting converts pages nested past the HTML parser's
// limit of 512: each converts, keeps its text in order, and says that it was
// flattened; a page within the limit is read as it is.
func TestTransformDeepNesting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		page []byte
		// want are fragments the Markdown holds, in this order.
		want []string
		// warning is a fragment of the warning; "" for none.
		warning string
		check   func(t *testing.T, res *Result)
	}{
		{
			name: "5,000 nested divs", page: contenttest.NestedDivs(5000),
			want:    append(numbered("level %d text", 5000), "after the divs"),
			warning: "elements nested more than 256 deep",
			check: func(t *testing.T, res *Result) {
				// Flattened divs are paragraphs of their own.
				if !strings.Contains(res.Markdown, "level 4998 text\n\nlevel 4999 text\n\nafter the divs") {
					t.Errorf("the deepest divs are not paragraphs: %q", res.Markdown[len(res.Markdown)-80:])
				}
				if !strings.Contains(res.HTML, "<p>level 4999 text\n") {
					t.Errorf("html lacks the deepest div as a paragraph: %q", res.HTML[len(res.HTML)-200:])
				}
			},
		},
		{
			name: "a page within the limit", page: contenttest.NestedDivs(500),
			want: append(numbered("level %d text", 500), "after the divs"),
		},
		{
			name: "nested unclosed spans", page: repeated(`<span class="s%d">word%[1]d `, 3000),
			// Inline tags dropped do not break the text.
			want:    []string{"word0 word1 word2", "word2998 word2999"},
			warning: "512",
		},
		{
			name: "nested lists", page: repeated("<ul><li>item %d", 2000),
			want:    numbered("item %d", 2000),
			warning: "lists and quotes more than 8 deep",
			check: func(t *testing.T, res *Result) {
				if n := maxPrefix(res.Markdown, " "); n > 2*(flattenIndent+2) {
					t.Errorf("a line is indented %d spaces", n)
				}
			},
		},
		{
			name: "nested quotes", page: repeated("<blockquote><p>quote %d</p>", 2000),
			want:    numbered("quote %d", 2000),
			warning: "512",
			check: func(t *testing.T, res *Result) {
				if n := maxPrefix(res.Markdown, "> "); n > 2*(flattenIndent+1) {
					t.Errorf("a line is quoted %d characters deep", n)
				}
			},
		},
		{
			name: "nested tables", page: repeated("<table><tr><td>cell %d", 2000),
			want:    numbered("cell %d", 2000),
			warning: "512",
		},
		{
			name: "a table past the depth stays a table", page: []byte(string(repeated("<div>%d", 600)) +
				"<table><tr><th>Net</th><th>Depth</th></tr><tr><td>Beam<td>200 m</tr><tr><td>Otter<td>1000 m</table>"),
			want:    []string{"598", "599", "| Net | Depth |\n|---|---|\n| Beam | 200 m |\n| Otter | 1000 m |"},
			warning: "512",
		},
		{
			name: "headings, links, emphasis and code past the depth",
			page: []byte(string(repeated("<section>", 600)) + `<h2>Deep <em>heading</em></h2><div><p>A <a href="/deep">deep link</a>, ` +
				`<b>bold</b> and <img src="/deep.png" alt="deep image"></p><pre><code>line one
line two</code></pre><svg><title>drawing</title><text>not text</text></svg><template>not content</template>tail</div>`),
			want:    []string{"## Deep *heading*", "A [deep link](https://example.com/deep), **bold** and ![deep image](https://example.com/deep.png)", "```\nline one\nline two\n```", "tail"},
			warning: "512",
			check: func(t *testing.T, res *Result) {
				for _, not := range []string{"drawing", "not text", "not content"} {
					if strings.Contains(res.Markdown, not) {
						t.Errorf("markdown holds %q", not)
					}
				}
				if !strings.Contains(strings.Join(res.Links, " "), "https://example.com/deep") ||
					!strings.Contains(strings.Join(res.Images, " "), "https://example.com/deep.png") {
					t.Errorf("links %v, images %v", res.Links, res.Images)
				}
			},
		},
		{
			// Closed paragraphs and divs leave each <b> open as far as the
			// parser is concerned: it reopens every one at every block,
			// which no depth count foresees, and the page is flattened
			// throughout.
			name: "misnested formatting reopened at every block", page: repeated(`<div><b class="c%d">bold %[1]d</div>`, 2000),
			want:    []string{"**bold 0**", "**bold 1**", "**bold 1999**"},
			warning: "all of it was flattened",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := Transform(tc.page, "https://example.com/page", Options{OnlyMainContent: true,
				Want: Want{Markdown: true, HTML: true, Links: true, Images: true}})
			require.NoError(t, err)
			if missing := inOrder(res.Markdown, tc.want); missing != "" {
				t.Errorf("markdown lacks %q (in order); it ends:\n%s", missing, res.Markdown[max(0, len(res.Markdown)-300):])
			}
			switch {
			case tc.warning == "" && res.Warning != "":
				t.Errorf("warning %q, want none", res.Warning)
			case !strings.Contains(res.Warning, tc.warning):
				t.Errorf("warning %q, want it to hold %q", res.Warning, tc.warning)
			}
			if tag := leftoverHTML(res.Markdown); tag != "" {
				t.Errorf("markdown holds HTML: %q", tag)
			}
			if strings.Contains(res.Markdown, "\n\n\n") {
				t.Error("markdown holds more than one blank line in a row")
			}
			if tc.check != nil {
				tc.check(t, res)
			}
		})
	}
}

// TestTransformDeepLists converts lists and quotes nested past
// flattenIndent, within the parser's limit: the deeper ones become
// paragraphs of the deepest kept item or quote, every level's text and
// link stay in order, the warning says so once, and the conversion
// allocates what an ordinary page does (nested as they are, 250 lists cost
// the converter 5,000 times the page's size). Not parallel: it reads the
// process's allocation count.
func TestTransformDeepLists(t *testing.T) {
	const warning = "lists and quotes more than 8 deep"
	for _, tc := range []struct {
		name string
		page []byte
		// want are fragments the Markdown holds, in this order.
		want []string
		// warning is a fragment of the warning.
		warning string
		// prefix holds the characters that indent a line, and indent the
		// most of them a line may start with.
		prefix string
		indent int
	}{
		{
			name: "250 nested lists", page: nestedLists(250),
			want: leveled(250, "List %d, first item, with [the link of list %[1]d](https://example.com/lists/%[1]d) in it.",
				"List %d, second item: a sentence of plain prose, *some emphasis* and `code_%[1]d()`.", "List %d, third item"),
			warning: warning,
			// Eight levels of "- ", and the paragraphs of the deepest item.
			prefix: " ", indent: 2 * flattenIndent,
		},
		{
			name: "250 nested quotes", page: nestedQuotes(250),
			want:    leveled(250, "Quote %d, with [the link of quote %[1]d](https://example.com/quotes/%[1]d)."),
			warning: warning,
			prefix:  "> ", indent: 2 * flattenIndent,
		},
		{
			name: "250 levels of lists and quotes by turns", page: nestedListsAndQuotes(250),
			want: func() []string {
				want := numbered("Item %d, with [the link of level %[1]d]", 250)
				for i := 1; i < len(want); i += 2 {
					want[i] = fmt.Sprintf("Quote %d, with [the link of level %[1]d]", i)
				}
				return want
			}(),
			warning: warning,
			// Four levels of "1. " and four of "> ".
			prefix: " >", indent: 4*3 + 4*2,
		},
		{
			// Eight lists, each deeper than the HTML parser takes
			// (600 divs), hold a ninth, which the flattener passes on
			// (one list at a time): one warning covers both.
			name: "lists past the parser's limit",
			page: []byte(string(repeated("<ul><li>outer %d", flattenIndent)) + strings.Repeat("<div>", 600) + "<ul><li>inner a<li>inner b</ul>"),
			want: []string{"outer 0", "outer 7", "inner a", "inner b"},
			// The parser's limit, not the lists, is what the warning
			// names first.
			warning: "parser's limit of 512: elements nested more than 256 deep (lists and quotes more than 8 deep)",
			prefix:  " ", indent: 2 * flattenIndent,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := transformWithinAllocLimit(t, tc.page)
			if missing := inOrder(res.Markdown, tc.want); missing != "" {
				t.Errorf("markdown lacks %q (in order); it ends:\n%s", missing, res.Markdown[max(0, len(res.Markdown)-300):])
			}
			assert.Contains(t, res.Warning, tc.warning, "warning")
			assert.Equal(t, 1, strings.Count(res.Warning, "lists and quotes"), "times warning %q speaks of lists and quotes", res.Warning)
			if n := maxPrefix(res.Markdown, tc.prefix); n > tc.indent {
				t.Errorf("a line is indented %d characters, more than %d", n, tc.indent)
			}
			if strings.Contains(res.Markdown, "\n\n\n") {
				t.Error("markdown holds more than one blank line in a row")
			}
		})
	}
}

// TestTransformListsWithinTheBound converts lists as deep as real pages
// nest them, and as deep as flattenIndent: as they are, without a warning.
func TestTransformListsWithinTheBound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		page string
		want string
	}{
		{
			// The Markdown this page had before lists were bounded.
			name: "6 deep", page: `<!doctype html><html><head><title>Install</title></head><body><main>
<h1>Install</h1>
<ul>
<li>Get it
<ol>
<li>Download <a href="/download">the archive</a>.
<ul>
<li>Linux
<ul>
<li>Debian and Ubuntu
<ol>
<li>Add the repository.
<ul>
<li><code>apt install trawler</code></li>
<li>or build it: <em>make install</em></li>
</ul>
</li>
<li>Start the service.</li>
</ol>
</li>
<li>Fedora</li>
</ul>
</li>
<li>macOS</li>
</ul>
</li>
<li>Configure it.</li>
</ol>
</li>
<li>Use it.</li>
</ul>
</main></body></html>
`,
			want: "# Install\n\n- Get it\n\n  1. Download [the archive](https://example.com/download).\n\n     - Linux\n\n" +
				"       - Debian and Ubuntu\n\n         1. Add the repository.\n\n            - `apt install trawler`\n" +
				"            - or build it: *make install*\n         2. Start the service.\n       - Fedora\n     - macOS\n" +
				"  2. Configure it.\n- Use it.",
		},
		{
			name: "as deep as the bound", page: string(repeated("<ul><li>item %d", flattenIndent)),
			want: "- item 0\n\n  - item 1\n\n    - item 2\n\n      - item 3\n\n        - item 4\n\n" +
				"          - item 5\n\n            - item 6\n\n              - item 7",
		},
		{
			name: "quotes and lists as deep as the bound", page: string(repeated("<blockquote><ul><li>level %d", flattenIndent/2)),
			want: "> - level 0\n>\n>   > - level 1\n>   >\n>   >   > - level 2\n>   >   >\n>   >   >   > - level 3",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := Transform([]byte(tc.page), "https://example.com/", DefaultOptions())
			require.NoError(t, err)
			assert.Empty(t, res.Warning, "warning")
			if res.Markdown != tc.want {
				t.Errorf("markdown differs:\n%s", firstDiff(tc.want, res.Markdown))
			}
		})
	}
}

// TestTransformKeepsTheRestOfADeepPage puts a block nested past the
// parser's limit at the start and at the end of each testdata page: the
// rest of the page converts as it does without it.
func TestTransformKeepsTheRestOfADeepPage(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.html"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no testdata pages: %v", err)
	}
	deep := strings.Repeat("<div>deep ", 600) + "bottom" + strings.Repeat("</div>", 600)
	opts := Options{Want: Want{Markdown: true}}
	alone, err := Transform([]byte("<html><body>"+deep+"</body></html>"), "https://example.com/", opts)
	if err != nil || !strings.HasSuffix(alone.Markdown, "deep\n\ndeep bottom") {
		t.Fatalf("the block alone: %v %q", err, alone.Markdown[max(0, len(alone.Markdown)-100):])
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			page, err := os.ReadFile(path)
			require.NoError(t, err)
			want, err := Transform(page, "https://example.com/", opts)
			require.NoError(t, err)
			start := bytes.Index(page, []byte("<body"))
			end := bytes.LastIndex(page, []byte("</body>"))
			if start < 0 || end < 0 {
				t.Fatal("no <body> to put the block in")
			}
			start += bytes.IndexByte(page[start:], '>') + 1
			for _, at := range []int{start, end} {
				deepPage := slices.Concat(page[:at], []byte(deep), page[at:])
				got, err := Transform(deepPage, "https://example.com/", opts)
				require.NoError(t, err)
				assert.NotEmpty(t, got.Warning, "no warning")
				rest, ok := strings.CutSuffix(got.Markdown, alone.Markdown)
				if at == start {
					rest, ok = strings.CutPrefix(got.Markdown, alone.Markdown)
				}
				if !ok || strings.TrimSpace(rest) != want.Markdown {
					t.Errorf("with the block at byte %d, the markdown differs from the page's own:\n%s", at, firstDiff(want.Markdown, strings.TrimSpace(rest)))
				}
			}
		})
	}
}

// TestTransformWideTable converts a table of 50,000 cells: wide, not deep,
// it is read as it is.
func TestTransformWideTable(t *testing.T) {
	t.Parallel()
	res, err := Transform(contenttest.WideTable(5000, 10), "https://example.com/table", DefaultOptions())
	require.NoError(t, err)
	assert.Empty(t, res.Warning, "warning")
	// The first row is promoted to the header.
	if !strings.HasPrefix(res.Markdown, "| r0c0 | r0c1 | r0c2 | r0c3 | r0c4 | r0c5 | r0c6 | r0c7 | r0c8 | r0c9 |\n|---|") {
		t.Errorf("markdown starts %q", res.Markdown[:min(len(res.Markdown), 200)])
	}
	assert.Equal(t, 4999, strings.Count(res.Markdown, "\n| r"), "body rows")
	if !strings.HasSuffix(res.Markdown, "| r4999c0 | r4999c1 | r4999c2 | r4999c3 | r4999c4 | r4999c5 | r4999c6 | r4999c7 | r4999c8 | r4999c9 |") {
		t.Errorf("markdown ends %q", res.Markdown[max(0, len(res.Markdown)-200):])
	}
}

// TestTransformMemoryOfLargePages holds the conversion of the deep and wide
// pages to what an ordinary page costs: the testdata pages allocate 20 to
// 180 times their size. Not parallel: it reads the process's allocation
// count.
// allocLimit bounds what converting a page may allocate, in times the
// page's size. Pages convert at 20 to 240 times their size; the race
// detector adds about half again; the quadratic cases this guards against
// (nested lists before they were flattened) allocated thousands of times.
const allocLimit = 600

func TestTransformMemoryOfLargePages(t *testing.T) {
	for _, tc := range []struct {
		name string
		page []byte
	}{
		{"5,000 nested divs", contenttest.NestedDivs(5000)},
		{"50,000 table cells", contenttest.WideTable(5000, 10)},
		{"2,000 nested lists", repeated("<ul><li>item %d", 2000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			transformWithinAllocLimit(t, tc.page)
		})
	}
}

// transformWithinAllocLimit converts page with the default options and
// checks that it allocated at most allocLimit times the page's size.
func transformWithinAllocLimit(t *testing.T, page []byte) *Result {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := Transform(page, "https://example.com/", DefaultOptions())
	require.NoError(t, err)
	runtime.ReadMemStats(&after)
	ratio := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(page))
	t.Logf("%d bytes, allocated %.0f times that", len(page), ratio)
	if ratio > allocLimit {
		t.Errorf("converting %d bytes allocated %.0f times that, more than %d", len(page), ratio, allocLimit)
	}
	return res
}

// FuzzFlattenThroughout checks the promise parseHTML's last resort makes:
// flattened throughout, any input parses. It also checks that parseHTML
// takes any input.
func FuzzFlattenThroughout(f *testing.F) {
	for _, seed := range [][]byte{
		contenttest.NestedDivs(600), repeated(`<div><b class="c%d">x</div>`, 600), repeated("<ul><li>%d", 300),
		repeated("<table><tr><td>%d", 300), repeated("<a href=%d><p><i>x", 600), repeated("<svg><title>%d</title><g>", 600),
		[]byte("<table><tr><td>a<td>b<tr><td>c</table><ol><li>x<li>y</ol><pre>p</pre><h1>h</h1>"),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, page []byte) {
		_, err := html.Parse(newFlattener(page, 0))
		require.NoError(t, err, "flattened throughout, the page does not parse")
		_, _, err = parseHTML(page)
		require.NoError(t, err, "parseHTML")
	})
}

// BenchmarkTransformDeep times the conversion of 5,000 nested divs, which
// the parser refuses, so that it is parsed twice.
func BenchmarkTransformDeep(b *testing.B) {
	page := contenttest.NestedDivs(5000)
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		_, err := Transform(page, "https://example.com/", DefaultOptions())
		require.NoError(b, err)
	}
}

// BenchmarkTransformWideTable times the conversion of a 50,000-cell table.
func BenchmarkTransformWideTable(b *testing.B) {
	page := contenttest.WideTable(5000, 10)
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		_, err := Transform(page, "https://example.com/", DefaultOptions())
		require.NoError(b, err)
	}
}

// BenchmarkTransformNestedLists times the conversion of 250 nested lists,
// within the parser's limit.
func BenchmarkTransformNestedLists(b *testing.B) {
	page := nestedLists(250)
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		_, err := Transform(page, "https://example.com/", DefaultOptions())
		require.NoError(b, err)
	}
}
