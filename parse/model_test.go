package parse

import (
	"strings"
	"testing"
)

// TestRenderInlines: emphasis opens and closes only where it changes, hugs
// the text, and never butts markers into each other.
func TestRenderInlines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ins  []Inline
		want string
	}{
		{"bold then bold italic then bold", []Inline{{Text: "a ", Bold: true}, {Text: "b", Bold: true, Italic: true}, {Text: ".", Bold: true}}, "**a *b*.**"},
		{"spaces outside markers", []Inline{{Text: "x"}, {Text: " bold ", Bold: true}, {Text: "y"}}, "x **bold** y"},
		{"italic across runs", []Inline{{Text: "one ", Italic: true}, {Text: "two", Italic: true}}, "*one two*"},
		{"link keeps its emphasis", []Inline{{Text: "see "}, {Text: "the site", Bold: true, Href: "https://e.org/a b"}, {Text: "."}}, "see [**the site**](<https://e.org/a b>)."},
		{"break closes emphasis", []Inline{{Text: "a", Bold: true}, {Break: true}, {Text: "b", Bold: true}}, "**a**\\\n**b**"},
		{"note and image", []Inline{{Text: "fact"}, {Note: 2}, {Text: " "}, {Image: "media/x.png", Text: "a [pic]"}}, "fact[^2] ![a \\[pic\\]](media/x.png)"},
		{"markup escaped", []Inline{{Text: "*not* _emphasis_ [x]"}}, "\\*not\\* \\_emphasis\\_ \\[x\\]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := markdownInlines(tc.ins, false, ""); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRenderTableSpansAndCellLists: spans expand into a grid with empty
// places, and a list in a cell keeps its markers.
func TestRenderTableSpansAndCellLists(t *testing.T) {
	t.Parallel()
	body := &Body{Blocks: []Block{{Kind: Table, Rows: [][]Cell{
		{{Blocks: []Block{Text("Site")}, RowSpan: 2}, {Blocks: []Block{Text("Depth")}, ColSpan: 2}},
		{{Blocks: []Block{Text("min")}}, {Blocks: []Block{Text("max")}}},
		{{Blocks: []Block{Text("North")}}, {Blocks: []Block{{Kind: List, Ordered: true, Items: []Item{{Blocks: []Block{Text("a|b")}}, {Blocks: []Block{Text("c")}}}}}}, {}},
	}}}}
	html, md := body.Render()
	wantMD := "| Site | Depth |  |\n| --- | --- | --- |\n|  | min | max |\n| North | 1. a\\|b<br>2. c |  |\n"
	if md != wantMD {
		t.Errorf("markdown:\n%s\nwant:\n%s", md, wantMD)
	}
	if want := `<th rowspan="2">Site</th><th colspan="2">Depth</th>`; !strings.Contains(html, want) {
		t.Errorf("html lacks %s:\n%s", want, html)
	}
}
