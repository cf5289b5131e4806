package content

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"github.com/stretchr/testify/require"
)

// benchCorpus loads every testdata page.
func benchCorpus(b *testing.B) [][]byte {
	b.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.html"))
	if err != nil || len(paths) == 0 {
		b.Fatalf("no testdata pages: %v", err)
	}
	pages := make([][]byte, 0, len(paths))
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		require.NoError(b, err)
		pages = append(pages, raw)
	}
	return pages
}

func corpusBytes(pages [][]byte) int64 {
	var n int64
	for _, p := range pages {
		n += int64(len(p))
	}
	return n
}

// BenchmarkTransform times the scrape default: the main-content filter and
// the Markdown, over the testdata corpus.
func BenchmarkTransform(b *testing.B) {
	pages := benchCorpus(b)
	opts := DefaultOptions()
	b.SetBytes(corpusBytes(pages))
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range pages {
			_, err := Transform(p, "https://example.com/docs/page.html", opts)
			require.NoError(b, err)
		}
	}
}

// BenchmarkBareMarkdown times the bare html-to-markdown conversion of the
// same pages, the baseline BenchmarkTransform is held against.
func BenchmarkBareMarkdown(b *testing.B) {
	pages := benchCorpus(b)
	conv := converter.NewConverter(converter.WithPlugins(
		base.NewBasePlugin(), commonmark.NewCommonmarkPlugin(), table.NewTablePlugin(),
	))
	// A page the bare converter refuses (html.Parse's limit of 512 open
	// elements) is left out of both sides.
	var strs []string
	var kept [][]byte
	for _, p := range pages {
		if _, err := conv.ConvertString(string(p)); err == nil {
			strs, kept = append(strs, string(p)), append(kept, p)
		}
	}
	b.SetBytes(corpusBytes(kept))
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range strs {
			_, err := conv.ConvertString(s, converter.WithDomain("https://example.com/docs/page.html"))
			require.NoError(b, err)
		}
	}
}
