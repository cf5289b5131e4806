// Package quality scores main-content extraction on a public corpus:
// trafilatura's evaluation pages, which the go-trafilatura module ships
// (test-files/comparison, with the snippets each page's main text must and
// must not contain in scripts/comparison/data.go), scored as that
// module's comparison script scores them. Nothing here is tuned to the
// corpus: it only loads and scores it, so that Trawler's filter and the
// libraries it is compared with are measured the same way.
package quality

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"

	"github.com/trawler-dev/trawler/scrape/detect"
)

// Module is the module that ships the corpus.
const Module = "github.com/markusmobius/go-trafilatura"

// Page is one page of the corpus: its URL, its HTML, and the snippets its
// main text must (With) and must not (Without) contain.
type Page struct {
	URL, File     string
	HTML          []byte
	With, Without []string
}

// UTF8 is the page's HTML as UTF-8, as Trawler's Go client decodes a page
// (detect.Decode); a page it leaves to the browser's decoder (no charset
// named, not UTF-8) is decoded as x/net/html's sniffing guesses, as a
// browser would.
func (p Page) UTF8() []byte {
	if b, ok := detect.Decode(p.HTML, "text/html"); ok {
		return b
	}
	r, err := charset.NewReader(bytes.NewReader(p.HTML), "text/html")
	if err != nil {
		return p.HTML
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return p.HTML
	}
	return b
}

// ModuleDir is where the go command keeps Module's source (the version
// the main module requires), asked from dir, a directory of the main
// module; the module is downloaded first when the cache lacks it.
func ModuleDir(dir string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", Module)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w", Module, err)
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", fmt.Errorf("go mod download %s: %w", Module, err)
	}
	if m.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %s", Module, m.Error)
	}
	return m.Dir, nil
}

// Load reads the corpus from the module's source directory: every entry
// of comparisonData whose file is there, in the order data.go lists them.
func Load(moduleDir string) ([]Page, error) {
	src := filepath.Join(moduleDir, "scripts", "comparison", "data.go")
	f, err := parser.ParseFile(token.NewFileSet(), src, nil, 0)
	if err != nil {
		return nil, err
	}
	var lit *ast.CompositeLit
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok && len(vs.Names) == 1 && vs.Names[0].Name == "comparisonData" && len(vs.Values) == 1 {
			lit, _ = vs.Values[0].(*ast.CompositeLit)
		}
		return lit == nil
	})
	if lit == nil {
		return nil, fmt.Errorf("%s: no comparisonData", src)
	}
	var pages []Page
	for _, el := range lit.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		p := Page{URL: stringOf(kv.Key)}
		entry, ok := kv.Value.(*ast.CompositeLit)
		if !ok {
			continue
		}
		for _, fe := range entry.Elts {
			field, ok := fe.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			switch name, _ := field.Key.(*ast.Ident); name.Name {
			case "File":
				p.File = stringOf(field.Value)
			case "With":
				p.With = stringsOf(field.Value)
			case "Without":
				p.Without = stringsOf(field.Value)
			}
		}
		for _, sub := range []string{"comparison", "mock"} {
			if b, err := os.ReadFile(filepath.Join(moduleDir, "test-files", sub, p.File)); err == nil {
				p.HTML = b
				break
			}
		}
		if p.HTML != nil && p.URL != "" {
			pages = append(pages, p)
		}
	}
	if len(pages) == 0 {
		return nil, fmt.Errorf("%s: no page of comparisonData found", moduleDir)
	}
	return pages, nil
}

func stringOf(e ast.Expr) string {
	bl, ok := e.(*ast.BasicLit)
	if !ok || bl.Kind != token.STRING {
		return ""
	}
	s, err := strconv.Unquote(bl.Value)
	if err != nil {
		return ""
	}
	return s
}

func stringsOf(e ast.Expr) []string {
	cl, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil
	}
	var out []string
	for _, el := range cl.Elts {
		out = append(out, stringOf(el))
	}
	return out
}

// Counts are the snippets found and missed over some pages: a With
// snippet found is a true positive, missed a false negative; a Without
// snippet found is a false positive, missed a true negative.
type Counts struct {
	TP, FN, FP, TN int
}

// Add counts page's snippets in text, as the comparison script does
// (an empty text misses every snippet).
func (c *Counts) Add(page Page, text string) {
	for _, s := range page.With {
		if text != "" && strings.Contains(text, s) {
			c.TP++
		} else {
			c.FN++
		}
	}
	for _, s := range page.Without {
		if text != "" && strings.Contains(text, s) {
			c.FP++
		} else {
			c.TN++
		}
	}
}

// Precision, Recall and F1 are the comparison script's figures.
func (c Counts) Precision() float64 { return ratio(c.TP, c.TP+c.FP) }
func (c Counts) Recall() float64    { return ratio(c.TP, c.TP+c.FN) }
func (c Counts) F1() float64        { return ratio(2*c.TP, 2*c.TP+c.FP+c.FN) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// PlainText is Markdown as the text a reader sees, for scoring: rendered
// to HTML by goldmark (CommonMark and GitHub's tables), and the HTML's
// text taken, one line per block, so that a snippet of the page's text is
// found in it as in an extractor's plain text.
func PlainText(md string) string {
	var h bytes.Buffer
	if err := goldmark.New(goldmark.WithExtensions(extension.Table)).Convert([]byte(md), &h); err != nil {
		return md
	}
	var b strings.Builder
	z := html.NewTokenizer(&h)
	for {
		switch z.Next() {
		case html.ErrorToken:
			return b.String()
		case html.TextToken:
			b.Write(z.Text())
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "p", "li", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "tr", "br", "hr", "div":
				b.WriteByte('\n')
			case "td", "th":
				b.WriteByte(' ')
			}
		}
	}
}
