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
			body.Blocks = append(body.Blocks, Block{Kind: Heading, Level: b.level, Inlines: richInlines(b.text, b.links), Page: b.page})
		case paragraph:
			body.Blocks = append(body.Blocks, Block{Kind: Paragraph, Inlines: richInlines(b.text, b.links), Page: b.page})
		case tableBlock:
			t := Block{Kind: Table, Page: b.page}
			for r, cells := range b.rows {
				row := make([]Cell, len(cells))
				for c, s := range cells {
					if s == "" {
						continue
					}
					var links []span
					if r < len(b.cells) && c < len(b.cells[r]) {
						links = b.cells[r][c]
					}
					row[c].Blocks = []Block{{Kind: Paragraph, Inlines: richInlines(s, links)}}
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
			text, links := itemText(items[i])
			it := Item{Blocks: []Block{{Kind: Paragraph, Inlines: richInlines(text, links)}}}
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
func itemText(b *block) (string, []span) {
	if b.ordered && markerNumber(b.marker) == 0 {
		return b.marker + " " + b.text, shiftSpans(b.links, len(b.marker)+1)
	}
	return b.text, b.links
}

// richInlines cuts text into plain runs and link runs. Link runs of one
// target with only white space between them (a link that wraps onto the
// next line, or spans two segments) become one.
func richInlines(text string, links []span) []Inline {
	var out []Inline
	at := 0
	for i := 0; i < len(links); i++ {
		l := links[i]
		if l.start < at || l.end > len(text) || l.start >= l.end {
			continue // out of order or out of range: keep the text plain
		}
		for i+1 < len(links) && links[i+1].href == l.href && links[i+1].start >= l.end &&
			links[i+1].end <= len(text) && strings.TrimSpace(text[l.end:links[i+1].start]) == "" {
			i++
			l.end = links[i].end
		}
		// The link's own text, without spaces at its edges.
		for l.start < l.end && text[l.start] == ' ' {
			l.start++
		}
		for l.end > l.start && text[l.end-1] == ' ' {
			l.end--
		}
		if l.start == l.end {
			continue
		}
		if l.start > at {
			out = append(out, Inline{Text: text[at:l.start]})
		}
		out = append(out, Inline{Text: text[l.start:l.end], Href: l.href})
		at = l.end
	}
	if at < len(text) || len(out) == 0 {
		out = append(out, Inline{Text: text[at:]})
	}
	return out
}

var mdSpecial = strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "`", "\\`", "[", `\[`, "]", `\]`, "<", `\<`)

// linePos says whether Markdown text starts a line, where more of it reads
// as markup.
type linePos bool

const (
	midLine     linePos = false
	atLineStart linePos = true
)

// mdEscape escapes what Markdown would otherwise read as markup; at a
// line's start it also guards text that would start a heading, quote or
// list.
func mdEscape(s string, pos linePos) string {
	s = mdSpecial.Replace(s)
	if pos != atLineStart {
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
