package parse

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseOutputsMatchParse checks that a rendering asked for alone is the
// one Parse gives: the word-processing readers render their blocks as they
// finish them, for whichever renderings were asked.
func TestParseOutputsMatchParse(t *testing.T) {
	t.Parallel()
	names, err := filepath.Glob("testdata/*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, name := range names {
		ext := filepath.Ext(name)
		if ext == ".pdf" && !strings.Contains(name, "features") && !strings.Contains(name, "table") {
			continue // the PDF layout is not what this checks; two will do
		}
		data, err := os.ReadFile(name)
		if err != nil || !Supported(Sniff(data)) || ext == ".md" || ext == ".html" {
			continue
		}
		format := Sniff(data)
		n++
		t.Run(filepath.Base(name), func(t *testing.T) {
			ctx := context.Background()
			both, err := Parse(ctx, format, data)
			if err != nil {
				t.Fatal(err)
			}
			md, err := ParseOutputs(ctx, format, data, Outputs{Markdown: true})
			if err != nil {
				t.Fatal(err)
			}
			h, err := ParseOutputs(ctx, format, data, Outputs{HTML: true})
			if err != nil {
				t.Fatal(err)
			}
			if md.Markdown != both.Markdown || md.HTML != "" {
				t.Errorf("Markdown alone differs from Parse's (or came with HTML)")
			}
			if h.HTML != both.HTML || h.Markdown != "" {
				t.Errorf("HTML alone differs from Parse's (or came with Markdown)")
			}
		})
	}
	if n < 8 {
		t.Fatalf("only %d fixtures were read", n)
	}
}
