package parse

import (
	"strings"
)

// pdfBody turns the layout's blocks into a Body: runs of list items become
// nested lists by their levels, an ordered item that only an enumerator
// like "a)" or "iv." numbers keeps its marker as text in a bulleted list.
func pdfBody(blocks []*block) *Body {
	body := &Body{}
	for i := 0; i < len(blocks); i++ {
		b := blocks[i]
		switch b.kind {
		case heading:
			body.Blocks = append(body.Blocks, Block{Kind: Heading, Level: b.level, Inlines: []Inline{{Text: b.text}}, Page: b.page})
		case paragraph:
			body.Blocks = append(body.Blocks, Block{Kind: Paragraph, Inlines: []Inline{{Text: b.text}}, Page: b.page})
		case tableBlock:
			t := Block{Kind: Table, Page: b.page}
			for _, cells := range b.rows {
				row := make([]Cell, len(cells))
				for c, s := range cells {
					if s != "" {
						row[c].Blocks = []Block{Text(s)}
					}
				}
				t.Rows = append(t.Rows, row)
			}
			body.Blocks = append(body.Blocks, t)
		case listItem:
			j := i
			for j < len(blocks) && blocks[j].kind == listItem && blocks[j].page == b.page {
				j++
			}
			for _, l := range pdfLists(blocks[i:j], 0) {
				l.Page = b.page
				body.Blocks = append(body.Blocks, l)
			}
			i = j - 1
		}
	}
	return body
}

// pdfLists groups consecutive items into lists, nesting the items that are
// deeper than level inside the item before them.
func pdfLists(items []*block, level int) []Block {
	var lists []Block
	for i := 0; i < len(items); {
		ordered := pdfOrdered(items[i])
		l := Block{Kind: List, Ordered: ordered}
		for i < len(items) && pdfOrdered(items[i]) == ordered {
			it := Item{Blocks: []Block{Text(itemText(items[i]))}}
			if ordered {
				it.Number = markerNumber(items[i].marker)
			}
			j := i + 1
			for j < len(items) && items[j].level > level {
				j++
			}
			if j > i+1 {
				it.Blocks = append(it.Blocks, pdfLists(items[i+1:j], level+1)...)
			}
			l.Items = append(l.Items, it)
			i = j
		}
		lists = append(lists, l)
	}
	return lists
}

func pdfOrdered(b *block) bool { return b.ordered && markerNumber(b.marker) > 0 }

// itemText is a list item's text, led by its marker when the marker is an
// enumerator that list numbering cannot show (a), iv., 2.3 and the like.
func itemText(b *block) string {
	if b.ordered && markerNumber(b.marker) == 0 {
		return b.marker + " " + b.text
	}
	return b.text
}

var mdSpecial = strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "`", "\\`", "[", `\[`, "]", `\]`, "<", `\<`)

// mdEscape escapes what Markdown would otherwise read as markup; lineStart
// also guards text that would start a heading, quote or list.
func mdEscape(s string, lineStart bool) string {
	s = mdSpecial.Replace(s)
	if !lineStart {
		return s
	}
	switch {
	case strings.HasPrefix(s, "#"), strings.HasPrefix(s, ">"), strings.HasPrefix(s, "+ "),
		strings.HasPrefix(s, "- "), strings.HasPrefix(s, "="):
		return `\` + s
	}
	if m := enumeratorRe.FindString(strings.SplitN(s, " ", 2)[0]); m != "" && numberOnlyRe.MatchString(m) {
		return strings.Replace(s, m, m[:len(m)-1]+`\`+m[len(m)-1:], 1)
	}
	return s
}
