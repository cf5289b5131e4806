package parse

import (
	"fmt"
	"html"
	"slices"
	"strconv"
	"strings"
)

// Body is the structure every format is read into before it becomes HTML
// and Markdown: PDF from its layout analysis, DOCX and ODT from their XML,
// RTF and DOC from their paragraphs and table marks, spreadsheets one sheet
// at a time. Rendering lives in one place (Render), so a heading, a nested
// list or a merged cell reads the same whatever file it came from.
type Body struct {
	Blocks []Block
	// Notes are footnotes and endnotes, rendered after the blocks and
	// referenced by Inline.Note.
	Notes []Note
}

// Kind is what a Block is.
type Kind int

// Block kinds.
const (
	Paragraph Kind = iota
	Heading
	List
	Table
)

// Block is one unit of a Body.
type Block struct {
	Kind Kind
	// Level is a heading's level, 1..6.
	Level int
	// Inlines are the content of a heading or paragraph.
	Inlines []Inline
	// Ordered marks a numbered list.
	Ordered bool
	// Items are a list's items.
	Items []Item
	// Rows are a table's rows, the first being the header. A row holds only
	// the cells that start in it: a cell spanning rows or columns covers the
	// places its spans reach, as in HTML.
	Rows [][]Cell
	// Page is the page the block is on, for formats that have pages; blocks
	// with a page are grouped into one <section data-page="N"> per page.
	Page int
}

// Item is one list item: usually a paragraph, then any nested lists.
type Item struct {
	// Number is the number an ordered item shows; 0 means one more than the
	// item before it.
	Number int
	Blocks []Block
}

// Cell is one table cell.
type Cell struct {
	// Text is the content of a cell that needs no blocks, as spreadsheet
	// cells do: 16 bytes where a paragraph would take a couple of hundred,
	// which matters at a million cells. Blocks, when set, are the content.
	Text   string
	Blocks []Block
	// ColSpan and RowSpan are how many columns and rows the cell covers;
	// 0 means 1.
	ColSpan, RowSpan int
}

// Inline is a run of text with one set of properties, an image, a line
// break or a note reference.
//
// Its fields are ordered so that the flags share one word: a body holds an
// Inline for every run of the document.
type Inline struct {
	Text string
	// Href makes the run a link.
	Href string
	// Image makes the inline an image with this source; Text is its
	// alternative text.
	Image string
	// Note makes the inline a reference to the note with this ID.
	Note         int
	Bold, Italic bool
	// Break is a line break inside a paragraph.
	Break bool
}

// Note is a footnote or endnote.
type Note struct {
	ID     int
	Blocks []Block
}

// Text returns a paragraph of plain text.
func Text(s string) Block {
	return Block{Kind: Paragraph, Inlines: []Inline{{Text: s}}}
}

// maxRenderDepth caps how deeply lists and tables nest in the output; deeper
// content is flattened into its ancestor so that a hostile file cannot make
// rendering recurse without bound.
const maxRenderDepth = 32

// Render returns the body as structured HTML and as CommonMark with GFM pipe
// tables.
func (b *Body) Render() (htmlOut, markdown string) {
	return b.render(Outputs{HTML: true, Markdown: true})
}

// render returns the renderings out asks for, leaving the others empty:
// each is as large as the document's text, so one not asked for is not
// built.
func (b *Body) render(out Outputs) (htmlOut, markdown string) {
	r := renderer{out: out}
	for _, blk := range b.Blocks {
		r.block(blk)
	}
	return r.finish(b.Notes)
}

// renderer renders a body's top-level blocks one at a time, as Render
// would render them all, so that a reader can hand each over once it is
// finished and let it go: the body of a large document is then never held
// whole beside its renderings.
type renderer struct {
	out      Outputs
	html, md strings.Builder
	blocks   int // top-level blocks rendered
	page     int // the page of the last one, whose section (if any) is open
}

// block renders the next top-level block.
func (r *renderer) block(b Block) {
	one := []Block{b}
	if r.out.HTML {
		// Blocks with a page are grouped into one section per run of them.
		if r.blocks == 0 || b.Page != r.page {
			if r.blocks > 0 && r.page > 0 {
				r.html.WriteString("</section>\n")
			}
			if b.Page > 0 {
				fmt.Fprintf(&r.html, "<section data-page=\"%d\">\n", b.Page)
			}
		}
		writeHTMLBlocksTo(&r.html, one, 0)
	}
	if r.out.Markdown {
		if r.blocks > 0 {
			r.md.WriteString("\n\n")
		}
		writeMarkdownBlocks(&r.md, one, "", 0)
	}
	r.page = b.Page
	r.blocks++
}

// finish renders the notes after the blocks and returns the renderings.
func (r *renderer) finish(notes []Note) (htmlOut, markdown string) {
	if r.out.HTML {
		h := &r.html
		if r.blocks > 0 && r.page > 0 {
			h.WriteString("</section>\n")
		}
		if len(notes) > 0 {
			h.WriteString("<section class=\"footnotes\">\n<ol>\n")
			for _, n := range notes {
				fmt.Fprintf(h, "<li id=\"fn%d\" value=\"%d\">", n.ID, n.ID)
				writeHTMLBlocksTo(h, n.Blocks, 1)
				h.WriteString("</li>\n")
			}
			h.WriteString("</ol>\n</section>\n")
		}
		htmlOut = h.String()
	}
	if r.out.Markdown {
		m := &r.md
		for _, n := range notes {
			if m.Len() > 0 {
				m.WriteString("\n\n")
			}
			fmt.Fprintf(m, "[^%d]: ", n.ID)
			var nb strings.Builder
			writeMarkdownBlocks(&nb, n.Blocks, "    ", 1)
			m.WriteString(strings.TrimLeft(nb.String(), " "))
		}
		if m.Len() > 0 {
			m.WriteString("\n")
		}
		markdown = m.String()
	}
	return htmlOut, markdown
}

func writeHTMLBlocksTo(sb *strings.Builder, blocks []Block, depth int) {
	for _, b := range blocks {
		switch b.Kind {
		case Heading:
			l := min(max(b.Level, 1), 6)
			fmt.Fprintf(sb, "<h%d>", l)
			writeHTMLInlines(sb, b.Inlines)
			fmt.Fprintf(sb, "</h%d>\n", l)
		case Paragraph:
			sb.WriteString("<p>")
			writeHTMLInlines(sb, b.Inlines)
			sb.WriteString("</p>\n")
		case List:
			if depth >= maxRenderDepth {
				writeHTMLBlocksTo(sb, flattenList(b), depth)
				continue
			}
			tag := "ul"
			if b.Ordered {
				tag = "ol"
			}
			start := ""
			if b.Ordered && len(b.Items) > 0 && b.Items[0].Number > 1 {
				start = fmt.Sprintf(" start=\"%d\"", b.Items[0].Number)
			}
			fmt.Fprintf(sb, "<%s%s>\n", tag, start)
			for _, it := range b.Items {
				sb.WriteString("<li>")
				rest := it.Blocks
				if len(rest) > 0 && rest[0].Kind == Paragraph {
					writeHTMLInlines(sb, rest[0].Inlines)
					rest = rest[1:]
				}
				if len(rest) > 0 {
					sb.WriteString("\n")
					writeHTMLBlocksTo(sb, rest, depth+1)
				}
				sb.WriteString("</li>\n")
			}
			fmt.Fprintf(sb, "</%s>\n", tag)
		case Table:
			if depth >= maxRenderDepth {
				writeHTMLBlocksTo(sb, flattenTable(b), depth)
				continue
			}
			sb.WriteString("<table>\n")
			for r, cells := range b.Rows {
				tag := "td"
				if r == 0 {
					tag = "th"
				}
				sb.WriteString("<tr>")
				for _, c := range cells {
					sb.WriteString("<" + tag)
					if c.ColSpan > 1 {
						fmt.Fprintf(sb, " colspan=\"%d\"", c.ColSpan)
					}
					if c.RowSpan > 1 {
						fmt.Fprintf(sb, " rowspan=\"%d\"", c.RowSpan)
					}
					sb.WriteString(">")
					if len(c.Blocks) == 0 {
						sb.WriteString(html.EscapeString(c.Text))
					} else if len(c.Blocks) == 1 && c.Blocks[0].Kind == Paragraph {
						writeHTMLInlines(sb, c.Blocks[0].Inlines)
					} else if len(c.Blocks) > 0 {
						sb.WriteString("\n")
						writeHTMLBlocksTo(sb, c.Blocks, depth+1)
					}
					sb.WriteString("</" + tag + ">")
				}
				sb.WriteString("</tr>\n")
			}
			sb.WriteString("</table>\n")
		}
	}
}

func writeHTMLInlines(sb *strings.Builder, ins []Inline) {
	esc := html.EscapeString
	for _, in := range ins {
		switch {
		case in.Break:
			sb.WriteString("<br>")
			continue
		case in.Note > 0:
			fmt.Fprintf(sb, "<sup><a href=\"#fn%d\">%d</a></sup>", in.Note, in.Note)
			continue
		case in.Image != "":
			fmt.Fprintf(sb, "<img src=\"%s\" alt=\"%s\">", esc(in.Image), esc(in.Text))
			continue
		}
		s := esc(in.Text)
		if in.Italic {
			s = "<em>" + s + "</em>"
		}
		if in.Bold {
			s = "<strong>" + s + "</strong>"
		}
		if in.Href != "" {
			s = "<a href=\"" + esc(in.Href) + "\">" + s + "</a>"
		}
		sb.WriteString(s)
	}
}

// writeMarkdownBlocks writes blocks at one nesting depth; indent is written
// before every line but the first.
func writeMarkdownBlocks(sb *strings.Builder, blocks []Block, indent string, depth int) {
	for i, b := range blocks {
		if i > 0 {
			sb.WriteString("\n\n" + indent)
		}
		switch b.Kind {
		case Heading:
			l := min(max(b.Level, 1), 6)
			sb.WriteString(strings.Repeat("#", l) + " " + markdownInlines(b.Inlines, midLine, indent))
		case Paragraph:
			sb.WriteString(markdownInlines(b.Inlines, atLineStart, indent))
		case List:
			if depth >= maxRenderDepth {
				writeMarkdownBlocks(sb, flattenList(b), indent, depth)
				continue
			}
			n := 0
			for k, it := range b.Items {
				if k > 0 {
					sb.WriteString("\n" + indent)
				}
				marker := "- "
				if b.Ordered {
					if it.Number > 0 {
						n = it.Number
					} else {
						n++
					}
					marker = strconv.Itoa(n) + ". "
				}
				sb.WriteString(marker)
				inner := indent + "    "
				rest := it.Blocks
				if len(rest) > 0 && rest[0].Kind == Paragraph {
					sb.WriteString(markdownInlines(rest[0].Inlines, midLine, inner))
					rest = rest[1:]
				}
				for _, nb := range rest {
					sep := "\n\n"
					if nb.Kind == List {
						sep = "\n"
					}
					sb.WriteString(sep + inner)
					writeMarkdownBlocks(sb, []Block{nb}, inner, depth+1)
				}
			}
		case Table:
			if depth >= maxRenderDepth {
				writeMarkdownBlocks(sb, flattenTable(b), indent, depth)
				continue
			}
			writeMarkdownGrid(sb, tableGrid(b.Rows), indent)
		}
	}
}

// markdownInlines writes inlines on one line (breaks become indented hard
// breaks); at a line's start (pos) it guards text that would otherwise
// start a block.
//
// Emphasis is opened and closed only where it changes between runs, so a
// bold run that goes on in bold italic reads **a *b*** rather than markers
// butting into each other; markers hug the text, with spaces outside.
func markdownInlines(ins []Inline, pos linePos, indent string) string {
	var sb strings.Builder
	var open []string // open emphasis markers, innermost last
	pending := ""     // spaces after the last text, written once it is known whether markers close first
	closeTo := func(keep func(string) bool) {
		for i, m := range open {
			if !keep(m) {
				for k := len(open) - 1; k >= i; k-- {
					sb.WriteString(open[k])
				}
				open = open[:i]
				break
			}
		}
	}
	closeAll := func() {
		closeTo(func(string) bool { return false })
		sb.WriteString(pending)
		pending = ""
	}
	for _, in := range ins {
		switch {
		case in.Break:
			closeAll()
			sb.WriteString("\\\n" + indent)
			continue
		case in.Note > 0:
			closeAll()
			fmt.Fprintf(&sb, "[^%d]", in.Note)
			continue
		case in.Image != "":
			closeAll()
			fmt.Fprintf(&sb, "![%s](%s)", mdEscape(in.Text, midLine), markdownURL(in.Image))
			continue
		}
		text := strings.ReplaceAll(in.Text, "\n", " ")
		s := mdEscape(text, pos == atLineStart && sb.Len() == 0 && pending == "")
		core := strings.TrimSpace(s)
		if core == "" {
			pending += s
			continue
		}
		lead := s[:len(s)-len(strings.TrimLeft(s, " "))]
		trail := s[len(strings.TrimRight(s, " ")):]
		if in.Href != "" {
			closeAll()
			if in.Italic {
				core = "*" + core + "*"
			}
			if in.Bold {
				core = "**" + core + "**"
			}
			sb.WriteString(lead + "[" + core + "](" + markdownURL(in.Href) + ")")
			pending = trail
			continue
		}
		want := map[string]bool{"**": in.Bold, "*": in.Italic}
		closeTo(func(m string) bool { return want[m] })
		sb.WriteString(pending + lead)
		pending = ""
		for _, m := range []string{"**", "*"} {
			if want[m] && !slices.Contains(open, m) {
				sb.WriteString(m)
				open = append(open, m)
			}
		}
		sb.WriteString(core)
		pending = trail
	}
	closeAll()
	return sb.String()
}

// markdownURL writes a link destination, in angle brackets when it holds
// characters that would end it.
func markdownURL(u string) string {
	if strings.ContainsAny(u, " ()<>\n") {
		return "<" + strings.NewReplacer("<", "%3C", ">", "%3E", "\n", "").Replace(u) + ">"
	}
	return u
}

// tableGrid expands spans into a rectangular grid of cell texts: a spanning
// cell's text goes in its first place and the places it covers stay empty.
func tableGrid(rows [][]Cell) [][]string {
	var grid [][]string
	covered := map[[2]int]bool{}
	width := 0
	for r, cells := range rows {
		var out []string
		c := 0
		for _, cell := range cells {
			for covered[[2]int{r, c}] {
				out = append(out, "")
				c++
			}
			out = append(out, cellMarkdown(cell))
			cs, rs := max(cell.ColSpan, 1), max(cell.RowSpan, 1)
			for dr := 0; dr < rs && dr < 1000; dr++ {
				for dc := 0; dc < cs && dc < 1000; dc++ {
					if dr > 0 || dc > 0 {
						covered[[2]int{r + dr, c + dc}] = true
					}
				}
			}
			for dc := 1; dc < cs && dc < 1000; dc++ {
				out = append(out, "")
			}
			c += min(cs, 1000)
		}
		for covered[[2]int{r, c}] {
			out = append(out, "")
			c++
		}
		width = max(width, len(out))
		grid = append(grid, out)
	}
	for i := range grid {
		for len(grid[i]) < width {
			grid[i] = append(grid[i], "")
		}
	}
	return grid
}

// cellMarkdown is a cell's content on one line, its blocks (and a list's
// items, with their markers) joined by <br>.
func cellMarkdown(c Cell) string {
	if len(c.Blocks) == 0 {
		return strings.ReplaceAll(mdEscape(strings.ReplaceAll(strings.TrimSpace(c.Text), "\n", " "), midLine), "|", `\|`)
	}
	var parts []string
	for _, b := range c.Blocks {
		if b.Kind == List {
			for k, it := range b.Items {
				marker := "• "
				if b.Ordered {
					marker = strconv.Itoa(k+1) + ". "
					if it.Number > 0 {
						marker = strconv.Itoa(it.Number) + ". "
					}
				}
				if t := plainText(it.Blocks); t != "" {
					parts = append(parts, marker+mdEscape(t, midLine))
				}
			}
			continue
		}
		var sb strings.Builder
		writeMarkdownBlocks(&sb, []Block{b}, "", maxRenderDepth)
		s := strings.ReplaceAll(sb.String(), "\n", " ")
		if strings.TrimSpace(s) != "" {
			parts = append(parts, strings.TrimSpace(s))
		}
	}
	return strings.ReplaceAll(strings.Join(parts, "<br>"), "|", `\|`)
}

func writeMarkdownGrid(sb *strings.Builder, rows [][]string, indent string) {
	for r, cells := range rows {
		if r > 0 {
			sb.WriteString("\n" + indent)
		}
		sb.WriteString("|")
		for _, c := range cells {
			sb.WriteString(" " + c + " |")
		}
		if r == 0 {
			sb.WriteString("\n" + indent + "|")
			for range cells {
				sb.WriteString(" --- |")
			}
		}
	}
}

// flattenList turns a list nested too deeply into paragraphs.
func flattenList(b Block) []Block {
	var out []Block
	for _, it := range b.Items {
		for _, c := range it.Blocks {
			if c.Kind == List || c.Kind == Table {
				out = append(out, Text(plainText([]Block{c})))
				continue
			}
			out = append(out, c)
		}
	}
	return out
}

// flattenTable turns a table nested too deeply into one paragraph per row.
func flattenTable(b Block) []Block {
	var out []Block
	for _, cells := range b.Rows {
		var parts []string
		for _, c := range cells {
			if len(c.Blocks) == 0 {
				parts = append(parts, c.Text)
				continue
			}
			parts = append(parts, plainText(c.Blocks))
		}
		out = append(out, Text(strings.Join(parts, " ")))
	}
	return out
}

// plainText is the text of blocks in reading order, walked with a stack so
// that depth costs no recursion.
func plainText(blocks []Block) string {
	var parts []string
	stack := make([]*Block, 0, len(blocks))
	push := func(bs []Block) {
		for i := len(bs) - 1; i >= 0; i-- {
			stack = append(stack, &bs[i])
		}
	}
	push(blocks)
	for len(stack) > 0 {
		b := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		var t strings.Builder
		for _, in := range b.Inlines {
			t.WriteString(in.Text)
		}
		if s := strings.TrimSpace(t.String()); s != "" {
			parts = append(parts, s)
		}
		var children []Block
		for _, it := range b.Items {
			children = append(children, it.Blocks...)
		}
		for _, cells := range b.Rows {
			for _, c := range cells {
				if len(c.Blocks) == 0 && strings.TrimSpace(c.Text) != "" {
					children = append(children, Text(c.Text))
				}
				children = append(children, c.Blocks...)
			}
		}
		push(children)
	}
	return strings.Join(parts, " ")
}
