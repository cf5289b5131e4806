package content

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/marker"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/strikethrough"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"
)

// Base64Placeholder replaces the URL of a data: image in the Markdown when
// Options.RemoveBase64Images is set (Firecrawl's placeholder).
const Base64Placeholder = "<Base64-Image-Removed>"

// newMarkdownConverter returns the html-to-markdown converter Transform
// uses: CommonMark with ATX headings, fenced code and inline links, GFM
// tables (a header-less table's first row becomes its header; cells that
// span columns leave the spanned cells empty) and strikethrough.
func newMarkdownConverter() *converter.Converter {
	return converter.NewConverter(converter.WithPlugins(
		base.NewBasePlugin(),
		commonmark.NewCommonmarkPlugin(
			commonmark.WithHeadingStyle(commonmark.HeadingStyleATX),
			commonmark.WithCodeBlockFence("```"),
			// The end-of-list marker is an HTML comment: no HTML in our output.
			commonmark.WithListEndComment(false),
			// A link without a target or text is rendered as its text.
			commonmark.WithLinkEmptyHrefBehavior(commonmark.LinkBehaviorSkip),
			commonmark.WithLinkEmptyContentBehavior(commonmark.LinkBehaviorSkip),
		),
		table.NewTablePlugin(
			table.WithHeaderPromotion(true),
			table.WithSpanCellBehavior(table.SpanBehaviorEmpty),
			// Padding every cell to its column's width costs many tokens
			// for nothing once a cell is long.
			table.WithCellPaddingBehavior(table.CellPaddingBehaviorMinimal),
			// A cell with several paragraphs keeps the table (its lines
			// come as <br />, joined by tidy) instead of the whole table
			// falling back to loose text.
			table.WithNewlineBehavior(table.NewlineBehaviorPreserve),
			table.WithSkipEmptyRows(true),
		),
		strikethrough.NewStrikethroughPlugin(),
		trawlerPlugin{},
	))
}

var markdownConverter = sync.OnceValue(newMarkdownConverter)

type removeBase64Key struct{}

// toMarkdown converts the tree under n. It rewrites the tree.
func toMarkdown(n *html.Node, baseURL string, removeBase64 bool) (string, error) {
	ctx := context.WithValue(context.Background(), removeBase64Key{}, removeBase64)
	md, err := markdownConverter().ConvertNode(n,
		converter.WithDomain(baseURL),
		converter.WithContext(ctx),
	)
	if err != nil {
		return "", err
	}
	return tidy(string(md)), nil
}

// tidy finishes the converter's output: lines holding only spaces (the
// converter indents the blank lines inside list items) become empty, and
// the lines of multi-paragraph table cells, which the table plugin
// separates by <br />, are joined with a space: no HTML in the Markdown.
// Fenced code is left alone.
func tidy(md string) string {
	const br = "<br />"
	if !strings.Contains(md, " \n") && !strings.Contains(md, br) {
		return md
	}
	lines := strings.Split(md, "\n")
	fenced := false
	for i, line := range lines {
		bare := strings.TrimLeft(line, " >")
		if strings.HasPrefix(bare, "```") || strings.HasPrefix(bare, "~~~") {
			fenced = !fenced
			continue
		}
		switch {
		case fenced:
		case bare == "":
			lines[i] = strings.TrimRight(line, " ")
		case bare[0] == '|' && strings.Contains(line, br):
			parts := strings.Split(line, br)
			kept := parts[:0]
			for j, p := range parts {
				if j > 0 && j < len(parts)-1 && strings.TrimSpace(p) == "" {
					continue
				}
				kept = append(kept, strings.TrimRight(p, " "))
			}
			lines[i] = strings.Join(kept, " ")
		}
	}
	return strings.Join(lines, "\n")
}

// trawlerPlugin drops what has no text worth keeping and replaces base64
// images when asked.
type trawlerPlugin struct{}

func (trawlerPlugin) Name() string { return "trawler" }

func (trawlerPlugin) Init(conv *converter.Converter) error {
	// Their children are fallback text ("your browser does not support…"),
	// drawings or form options.
	for _, tag := range []string{"svg", "canvas", "video", "audio", "object", "embed", "select", "dialog"} {
		conv.Register.TagType(tag, converter.TagTypeRemove, converter.PriorityStandard)
	}
	// One handler for the three tags: the converter calls every handler
	// for every node.
	conv.Register.Renderer(func(ctx converter.Context, w converter.Writer, n *html.Node) converter.RenderStatus {
		if n.Type != html.ElementNode {
			return converter.RenderTryNext
		}
		switch n.Data {
		case "img":
			return renderBase64Image(ctx, w, n)
		case "a":
			return renderTargetlessLink(ctx, w, n)
		case "blockquote":
			return renderBlockquote(ctx, w, n)
		case "table":
			return renderLayoutTable(ctx, w, n)
		}
		return converter.RenderTryNext
	}, converter.PriorityEarly)
	return nil
}

// renderTargetlessLink renders a link without a usable target (<a name>,
// href="", javascript:) as its text; the CommonMark renderer would point it
// at the page itself.
func renderTargetlessLink(ctx converter.Context, w converter.Writer, n *html.Node) converter.RenderStatus {
	href := strings.TrimSpace(attr(n, "href"))
	if href != "" && !hasScheme(href, "javascript") {
		return converter.RenderTryNext
	}
	ctx.RenderChildNodes(ctx, w, n)
	return converter.RenderSuccess
}

// renderLayoutTable renders a table of a single row as its cells, one
// block each: such a table lays out columns (the Python docs' start page,
// e-mails) and has no data to put under a header. Other tables go to the
// table plugin.
func renderLayoutTable(ctx converter.Context, w converter.Writer, n *html.Node) converter.RenderStatus {
	if rowCount(n, 2) != 1 {
		return converter.RenderTryNext
	}
	w.WriteString("\n\n")
	ctx.RenderChildNodes(ctx, w, n)
	w.WriteString("\n\n")
	return converter.RenderSuccess
}

// rowCount counts the rows of a table, up to limit; rows of nested tables
// do not count.
func rowCount(n *html.Node, limit int) int {
	rows := 0
	for c := n.FirstChild; c != nil && rows < limit; c = c.NextSibling {
		switch c.Data {
		case "tr":
			rows++
		case "thead", "tbody", "tfoot":
			rows += rowCount(c, limit-rows)
		}
	}
	return rows
}

// renderBlockquote is the CommonMark plugin's blockquote renderer plus the
// "> " prefix on every line of a fenced code block inside the quote (the
// plugin's own misses them, which ends the quote at the code's second
// line; Sphinx puts indented code and tables in blockquotes).
func renderBlockquote(ctx converter.Context, w converter.Writer, n *html.Node) converter.RenderStatus {
	var buf bytes.Buffer
	ctx.RenderChildNodes(ctx, &buf, n)
	content := bytes.TrimSpace(buf.Bytes())
	if len(content) == 0 {
		return converter.RenderSuccess
	}
	codeNewline := marker.BytesMarkerCodeBlockNewline
	quotedCodeNewline := append(slices.Clip(codeNewline), '>', ' ')

	w.WriteString("\n\n")
	prevBlank := false
	for i, line := range bytes.Split(content, []byte("\n")) {
		blank := len(bytes.TrimSpace(line)) == 0
		if blank && prevBlank {
			continue
		}
		prevBlank = blank
		if i > 0 {
			w.WriteByte('\n')
		}
		if blank {
			w.WriteByte('>')
			continue
		}
		w.WriteString("> ")
		w.Write(bytes.ReplaceAll(line, codeNewline, quotedCodeNewline))
	}
	w.WriteString("\n\n")
	return converter.RenderSuccess
}

// renderBase64Image renders a data: image as ![alt](<Base64-Image-Removed>)
// when the conversion asks for it; other images go to the CommonMark
// renderer.
func renderBase64Image(ctx converter.Context, w converter.Writer, n *html.Node) converter.RenderStatus {
	if remove, _ := ctx.Value(removeBase64Key{}).(bool); !remove {
		return converter.RenderTryNext
	}
	if !hasScheme(attr(n, "src"), "data") {
		return converter.RenderTryNext
	}
	alt := strings.Join(strings.Fields(attr(n, "alt")), " ")
	alt = strings.NewReplacer("[", `\[`, "]", `\]`).Replace(alt)
	w.WriteString("![")
	w.WriteString(alt)
	w.WriteString("](")
	w.WriteString(Base64Placeholder)
	w.WriteString(")")
	return converter.RenderSuccess
}
