package parse

import (
	"fmt"
	"html"
	"strconv"
	"strings"
)

// renderHTML writes one <section data-page="N"> per parsed page.
func renderHTML(pages []*page, blocks []*block) string {
	byPage := map[int][]*block{}
	for _, b := range blocks {
		byPage[b.page] = append(byPage[b.page], b)
	}
	var sb strings.Builder
	for _, p := range pages {
		fmt.Fprintf(&sb, "<section data-page=\"%d\">\n", p.n)
		writeHTMLBlocks(&sb, byPage[p.n])
		sb.WriteString("</section>\n")
	}
	return sb.String()
}

func writeHTMLBlocks(sb *strings.Builder, blocks []*block) {
	esc := html.EscapeString
	for i := 0; i < len(blocks); i++ {
		b := blocks[i]
		switch b.kind {
		case heading:
			fmt.Fprintf(sb, "<h%d>%s</h%d>\n", b.level, esc(b.text), b.level)
		case paragraph:
			fmt.Fprintf(sb, "<p>%s</p>\n", esc(b.text))
		case tableBlock:
			sb.WriteString("<table>\n")
			for r, cells := range b.rows {
				tag := "td"
				if r == 0 {
					tag = "th"
				}
				sb.WriteString("<tr>")
				for _, c := range cells {
					fmt.Fprintf(sb, "<%s>%s</%s>", tag, esc(c), tag)
				}
				sb.WriteString("</tr>\n")
			}
			sb.WriteString("</table>\n")
		case listItem:
			j := i
			for j < len(blocks) && blocks[j].kind == listItem {
				j++
			}
			writeHTMLList(sb, blocks[i:j], 0)
			i = j - 1
		}
	}
}

// writeHTMLList writes consecutive items as a list, nesting the items that
// are deeper than level inside the item before them.
func writeHTMLList(sb *strings.Builder, items []*block, level int) {
	for i := 0; i < len(items); {
		tag := "ul"
		if items[i].ordered {
			tag = "ol"
		}
		start := ""
		if n := markerNumber(items[i].marker); items[i].ordered && n > 1 {
			start = fmt.Sprintf(" start=\"%d\"", n)
		}
		fmt.Fprintf(sb, "<%s%s>\n", tag, start)
		for i < len(items) && items[i].ordered == (tag == "ol") {
			fmt.Fprintf(sb, "<li>%s", html.EscapeString(itemText(items[i])))
			j := i + 1
			for j < len(items) && items[j].level > level {
				j++
			}
			if j > i+1 {
				sb.WriteString("\n")
				writeHTMLList(sb, items[i+1:j], level+1)
			}
			sb.WriteString("</li>\n")
			i = j
		}
		fmt.Fprintf(sb, "</%s>\n", tag)
	}
}

// itemText is a list item's text, led by its marker when the marker is an
// enumerator that list numbering cannot show (a), iv., 2.3 and the like.
func itemText(b *block) string {
	if b.ordered && markerNumber(b.marker) == 0 {
		return b.marker + " " + b.text
	}
	return b.text
}

// renderMarkdown writes the blocks as CommonMark with GFM pipe tables.
func renderMarkdown(blocks []*block) string {
	var sb strings.Builder
	for i, b := range blocks {
		if i > 0 {
			p := blocks[i-1]
			if b.kind == listItem && p.kind == listItem && (b.ordered == p.ordered || b.level != p.level) {
				sb.WriteString("\n")
			} else {
				sb.WriteString("\n\n")
			}
		}
		switch b.kind {
		case heading:
			sb.WriteString(strings.Repeat("#", b.level) + " " + mdEscape(b.text, false))
		case paragraph:
			sb.WriteString(mdEscape(b.text, true))
		case listItem:
			sb.WriteString(strings.Repeat("    ", b.level))
			if n := markerNumber(b.marker); b.ordered && n > 0 {
				sb.WriteString(strconv.Itoa(n) + ". ")
			} else {
				sb.WriteString("- ")
			}
			sb.WriteString(mdEscape(itemText(b), false))
		case tableBlock:
			writeMarkdownTable(&sb, b.rows)
		}
	}
	if sb.Len() > 0 {
		sb.WriteString("\n")
	}
	return sb.String()
}

func writeMarkdownTable(sb *strings.Builder, rows [][]string) {
	cell := func(s string) string {
		return strings.ReplaceAll(mdEscape(s, false), "|", `\|`)
	}
	for r, cells := range rows {
		if r > 0 {
			sb.WriteString("\n")
		}
		sb.WriteString("|")
		for _, c := range cells {
			sb.WriteString(" " + cell(c) + " |")
		}
		if r == 0 {
			sb.WriteString("\n|")
			for range cells {
				sb.WriteString(" --- |")
			}
		}
	}
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
