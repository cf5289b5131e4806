package index

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The index in PostgreSQL makes a text's pairs of words from the one
// analysis of its terms: they must be the pairs analyzer's, which the
// queries' phrases are matched with, stop words and their gaps included.
func TestPairsFromOneAnalysis(t *testing.T) {
	texts := []string{
		"Run coroutines concurrently with asyncio.gather.",
		"The release of the new version of the thing",
		"a an the of to in it is",
		"of the. And then the end of it",
		"Coroutines in depth; run them concurrently and the rest of it, and of the",
		"Don't panic: it's the user's guide",
	}
	if err := filepath.WalkDir("/usr/share/doc/python3.11/html/library", func(p string, d os.DirEntry, err error) error {
		if err == nil && (strings.HasSuffix(p, "-task.html") || strings.HasSuffix(p, "/string.html")) {
			b, err := os.ReadFile(p)
			if err == nil {
				texts = append(texts, plainText(string(b)))
			}
		}
		return nil
	}); err != nil {
		t.Log(err)
	}
	t.Logf("%d texts", len(texts))
	for _, text := range texts {
		var terms, pairs vectorBuilder
		addField(&terms, &pairs, text, 'D')
		var got []string
		for _, k := range pairs.order {
			got = append(got, strings.TrimPrefix(k, "D:"))
		}
		want := slices.Compact(slices.Sorted(slices.Values(pairTerms(text))))
		slices.Sort(got)
		require.Equal(t, want, got, "the pairs of %.60q", text)
		n := 0
		for _, c := range terms.n {
			n += c
		}
		require.Equal(t, len(analyzeList(text)), n, "the terms of %.60q", text)
	}
}
