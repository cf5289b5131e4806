package content

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenCase converts testdata/<input>.html and compares the outputs with
// testdata/<name>.md and, for each of extras, testdata/<name>.<extra>.json
// (links, images, meta) or testdata/<name>.html.golden (html).
type goldenCase struct {
	name   string
	input  string // defaults to name
	url    string
	opts   *Options // nil: DefaultOptions()
	extras []string
	// want and wantNot are fragments the Markdown must and must not hold:
	// they say what each golden is about, so that a regenerated golden that
	// captures garbage fails.
	want, wantNot []string
}

const pythonDocs = "https://docs.python.org/3.11/"

var goldenCases = []goldenCase{
	{
		name: "tables", url: "https://example.com/docs/options.html",
		want: []string{
			"| Name | Type | Description |\n|---|:-:|---|",
			"| **timeout** | `int` | Milliseconds, *at most* 300000. See [limits](https://example.com/docs/limits). |",
			`a \| pipe`,
			"| alpha | 1 |\n|---|---|\n| beta | 2 |",
			"| Region | 2024 |  |\n|---|---|---|\n|  | H1 | H2 |",
			"| South: no data |  |  |",
			"Quarterly results",
			"| `'g'` | General format. The precise rules follow. |",
			"[Tutorial](https://example.com/tutorial/)  \nstart here\n\n[Library reference](https://example.com/library/)  \nkeep it close",
		},
	},
	{
		name: "lists", url: "https://example.com/install",
		want: []string{
			"1. Download the archive.\n2. Unpack it:\n\n   - on Linux with `tar xzf`;\n   - on Windows with the Explorer:\n\n     1. right-click the file,",
			"7. Seventh step.\n8. Eighth step.",
			"  More text in the same item.",
		},
		wantNot: []string{"<!--"},
	},
	{
		name: "code", url: "https://example.com/code",
		want: []string{
			"```go\npackage main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello <world>\")\n}\n```",
			"```js\nconst x = 1;",
			"```python3\nimport glob\nglob.glob('*.gif')\n```",
			"```shell\ngo test ./...\n```",
			"```\nplain text\n  indented line\n```",
			"````markdown\nUse ```go fences```.\n````",
			"Inline `fmt.Println` code.",
		},
	},
	{
		name: "relative", url: "https://example.com/docs/page.html", extras: []string{"links", "images"},
		want: []string{
			"[the guide](https://example.com/docs/guide/start.html)",
			"[about us](https://example.com/about)",
			"[one level up](https://example.com/up.html#part)",
			"[a protocol-relative link](https://cdn.example.org/file.pdf)",
			"[the next page](https://example.com/docs/page.html?page=2)",
			"![Logo](https://example.com/docs/img/logo.png)",
			`![Photo](https://example.com/static/photo.jpg "A photo")`,
			"[Mail us](mailto:team@example.com) or do nothing.",
		},
	},
	{
		name: "relative-base", url: "https://example.com/docs/page.html", extras: []string{"links", "images", "html"},
		want: []string{
			"[the guide](https://static.example.net/v2/guide/start.html)",
			"[about us](https://static.example.net/about)",
			"[an absolute link](https://other.example.com/x)",
			"![Logo](https://static.example.net/v2/img/logo.png)",
		},
	},
	{
		name: "images", url: "https://example.com/gallery/", extras: []string{"images"},
		want: []string{"![Lazy](https://example.com/lazy/real.jpg)", "![Commas in the URL](https://images.example.com/a,b/pic.jpg?w=900)"},
	},
	{
		name: "base64", url: "https://example.com/",
		want:    []string{`![Sales \[2024\] chart](<Base64-Image-Removed>)`, "![](<Base64-Image-Removed>)", "![Ordinary](https://example.com/img/ordinary.png)"},
		wantNot: []string{"data:image", "iVBORw0"},
	},
	{
		name: "base64-kept", input: "base64", url: "https://example.com/", extras: []string{"html"},
		opts: &Options{OnlyMainContent: true, RemoveBase64Images: false},
		want: []string{"![Sales \\[2024\\] chart](data:image/png;base64,iVBORw0"},
	},
	{
		name: "chrome", url: "https://news.example.com/science/trawlers", extras: []string{"links"},
		want: []string{
			"# Deep-sea trawlers map the ocean floor",
			"Fishing fleets in the North Atlantic",
			"Within two years",
			"## Why it matters",
			"> “The fishermen know the bottom better",
			"The data is published under an open licence",
			"```python\ngrid = load(\"north-atlantic.nc\")\n```",
			"```r\ngrid <- load",
		},
		wantNot: []string{
			"Skip to content", "cookies", "Accept all", "World", "Search", "Home",
			"Share on", "Advertisement", "weekly ocean digest", "Subscribe",
			"Limited offer", "Follow us", "Most read", "Whales", "Buy now",
			"miss out", "No thanks", "©", "Terms", "tracker", "By Ana Ruiz",
		},
	},
	{
		name: "badclass", url: "https://blog.example.com/sourdough",
		want: []string{
			"# Choosing a sourdough starter", "A starter is a living culture",
			"Tip: keep a spoonful", "## Rye or wheat?", "Both work for a first loaf",
		},
		wantNot: []string{"Home", "Share this post", "Related", "Rye bread basics", "Written by"},
	},
	{
		name: "mainid", url: "https://example.com/releases/2.4",
		want: []string{"# Release notes 2.4", "resumable crawls"},
	},
	{
		name: "article", url: "https://blog.example.com/self-hosting",
		want: []string{
			"# Ten years of self-hosting", "Posted on 2 January 2025",
			"[1](https://blog.example.com/self-hosting#fn1)", "## Mail",
			"Deliverability", "1\\. Back then on a single second-hand laptop.",
		},
		wantNot: []string{"My Blog", "Mastodon", "Tags:", "Archives", "comments", "Great read", "Powered by", "Photos"},
	},
	{
		name: "selectors-include", input: "selectors", url: "https://example.com/",
		opts:    &Options{OnlyMainContent: true, IncludeTags: []string{"article", "article p", "#comments"}},
		want:    []string{"# The article", "Buy the book!", "## Comments"},
		wantNot: []string{"Intro text", "The footer"},
	},
	{
		name: "selectors-exclude", input: "selectors", url: "https://example.com/",
		opts:    &Options{OnlyMainContent: false, ExcludeTags: []string{".promo", "figure", "footer"}},
		want:    []string{"Intro text", "# The article", "## Comments"},
		wantNot: []string{"Buy the book!", "Figure 1", "fig.png", "The footer"},
	},
	{
		name: "selectors-main", input: "selectors", url: "https://example.com/",
		opts:    &Options{OnlyMainContent: true, ExcludeTags: []string{"figure"}},
		want:    []string{"# The article", "The article body."},
		wantNot: []string{"Intro text", "Comments", "Figure 1", "The footer", "Buy the book!"},
	},
	{
		name: "fallback", url: "https://furniture.example.pt/",
		want: []string{"# Tiny Furniture Workshop", "handmade chairs", "Rua das Flores 12"},
	},
	{
		name: "meta", url: "https://receitas.example.pt/bacalhau", extras: []string{"meta"},
		want: []string{"# Receitas de bacalhau"},
	},
	{
		// A forum thread of 300 replies, each nested in the previous one
		// (600 divs deep), past the parser's limit: the replies past the
		// depth are flattened, with their links, code, list and table.
		// The whole page: the main-content filter drops a comment thread,
		// which is what this page is made of.
		name: "deep-thread", url: "https://forum.example.com/t/42", extras: []string{"links", "images"},
		opts: &Options{OnlyMainContent: false, RemoveBase64Images: true, Want: Want{Markdown: true}},
		want: []string{
			"# How deep is the channel?",
			"[sailor1](https://forum.example.com/u/sailor1) 1 min ago\n\nReply 1: the channel was *5.1 m* at low tide.",
			"[sailor300](https://forum.example.com/u/sailor300) 300 min ago\n\nReply 300: the channel was *4.0 m* at low tide.",
			"### Soundings at the deepest reply",
			"See [the chart](https://forum.example.com/charts/channel.pdf) and the photo ![Sounding line](https://forum.example.com/img/sounding.jpg).",
			"```python\ndepth = 4.2\nclearance = 0.5\n```",
			"- North buoy: 6.1 m\n- South buoy: 5.8 m",
			"| Buoy | Depth |\n|---|---|\n| North | 6.1 m |\n| South | 5.8 m |",
			"## After the thread\n\nBack at the top level: **thank you all**.",
		},
	},
	{
		name: "python-glob", url: pythonDocs + "library/glob.html", extras: []string{"links", "meta"},
		want: []string{
			"# [`glob`](https://docs.python.org/3.11/library/glob.html#module-glob",
			"**Source code:** [Lib/glob.py](https://github.com/python/cpython/tree/3.11/Lib/glob.py)",
			"glob.glob(*pathname*, *\\**, *root\\_dir=None*",
			"```python3\n>>> import glob\n>>> glob.glob('./[0-9].*')\n['./1.gif', './2.txt']",
			"Shell-style filename (not path) expansion",
		},
		wantNot: []string{"Table of Contents", "Previous topic", "Show Source", "Navigation", "Quick search", "index", "Copyright", "Sphinx", "¶"},
	},
	{
		name: "python-struct", url: pythonDocs + "library/struct.html",
		want: []string{
			"## Functions and Exceptions",
			"| Character | Byte order | Size | Alignment |\n|---|---|---|---|\n| `@` | native | native | native |",
			"| `P` | void* | integer |  | (5) |",
			"```python3\n>>> from struct import *\n>>> pack(\">bhl\", 1, 2, 3)",
			"1. The `'?'` conversion code corresponds to the \\_Bool type",
		},
		wantNot: []string{"Table of Contents", "Previous topic", "Show Source", "Quick search", "Copyright", "¶"},
	},
	{
		name: "python-introduction", url: pythonDocs + "tutorial/introduction.html",
		want: []string{
			"# 3. An Informal Introduction to Python",
			"### 3.1.1. Numbers",
			"```python3\n>>> 2 + 2\n4",
			"- The first line contains a *multiple assignment*",
			"  ```python3\n  >>> i = 256*256",
			"Since `**` has higher precedence than `-`",
		},
		wantNot: []string{"Table of Contents", "Previous topic", "Show Source", "Quick search", "Copyright", "¶"},
	},
	{
		name: "python-string", url: pythonDocs + "library/string.html",
		want: []string{
			"# [`string`](https://docs.python.org/3.11/library/string.html#module-string",
			"> ```\n> replacement_field ::=  \"{\" [field_name]",
			"> | Option | Meaning |\n> |---|---|\n> | `'<'` | Forces the field to be left-aligned",
			"## Template strings",
		},
		wantNot: []string{"Table of Contents", "Previous topic", "Show Source", "Quick search", "Copyright", "¶", "<br"},
	},
}

func TestGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			input := tc.input
			if input == "" {
				input = tc.name
			}
			raw, err := os.ReadFile(filepath.Join("testdata", input+".html"))
			require.NoError(t, err)
			opts := DefaultOptions()
			if tc.opts != nil {
				opts = *tc.opts
			}
			opts.Want = Want{Markdown: true, Links: true, Images: true, HTML: slices.Contains(tc.extras, "html")}
			res, err := Transform(raw, tc.url, opts)
			require.NoError(t, err)

			checkGolden(t, tc.name+".md", []byte(res.Markdown+"\n"))
			for _, extra := range tc.extras {
				switch extra {
				case "links":
					checkGolden(t, tc.name+".links.json", jsonBytes(t, res.Links))
				case "images":
					checkGolden(t, tc.name+".images.json", jsonBytes(t, res.Images))
				case "meta":
					checkGolden(t, tc.name+".meta.json", jsonBytes(t, res.Metadata))
				case "html":
					checkGolden(t, tc.name+".html.golden", []byte(res.HTML+"\n"))
				default:
					t.Fatalf("unknown extra %q", extra)
				}
			}

			for _, w := range tc.want {
				if !strings.Contains(res.Markdown, w) {
					t.Errorf("markdown lacks %q", w)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(res.Markdown, w) {
					t.Errorf("markdown holds %q", w)
				}
			}
			if tag := leftoverHTML(res.Markdown); tag != "" {
				t.Errorf("markdown holds HTML: %q", tag)
			}
			if strings.Contains(res.Markdown, "\n\n\n") {
				t.Error("markdown holds more than one blank line in a row")
			}
		})
	}
}

// leftoverHTML returns the first thing that looks like an HTML tag or
// comment outside code in md, or "".
func leftoverHTML(md string) string {
	fenced := false
	for _, line := range strings.Split(md, "\n") {
		bare := strings.TrimLeft(line, " >")
		if strings.HasPrefix(bare, "```") || strings.HasPrefix(bare, "~~~") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		// Drop inline code spans and the base64 placeholder.
		line = strings.ReplaceAll(line, "(<Base64-Image-Removed>)", "")
		var b strings.Builder
		inCode := false
		for _, r := range line {
			if r == '`' {
				inCode = !inCode
				continue
			}
			if !inCode {
				b.WriteRune(r)
			}
		}
		text := b.String()
		for i := 0; i+1 < len(text); i++ {
			if text[i] != '<' {
				continue
			}
			c := text[i+1]
			if c == '/' || c == '!' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') {
				end := min(len(text), i+20)
				return text[i:end]
			}
		}
	}
	return ""
}

func jsonBytes(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	return append(b, '\n')
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./content -update to create it")
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run go test ./content -update and review the diff):\n%s", name, firstDiff(string(want), string(got)))
	}
}

// firstDiff shows the first differing line of two texts.
func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\n  want: %s\n  got:  %s", i+1, w, g)
		}
	}
	return ""
}
