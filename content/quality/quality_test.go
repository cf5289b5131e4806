package quality_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/content"
	"github.com/trawler-dev/trawler/content/quality"
)

// onlyMainContent on a third of trafilatura's evaluation corpus (every
// third page, so that the race detector's run stays short): its main text
// keeps the snippets the page's article holds and drops those it must
// not, at least as well as the filter did when it was last tuned. A
// change that makes the filter worse on real pages fails here; make bench
// (phase quality) gives the whole corpus's figures beside go-trafilatura's
// and go-readability's.
func TestMainContentOnTheCorpus(t *testing.T) {
	t.Parallel()
	dir, err := quality.ModuleDir(".")
	if err != nil {
		t.Skipf("the corpus is not here: %v", err)
	}
	pages, err := quality.Load(dir)
	require.NoError(t, err)
	require.Greater(t, len(pages), 900, "the corpus lost pages")
	var c quality.Counts
	for i := 0; i < len(pages); i += 3 {
		p := pages[i]
		body := p.UTF8()
		res, err := content.Transform(body, p.URL, content.Options{OnlyMainContent: true, Want: content.Want{Markdown: true}})
		require.NoError(t, err, p.File)
		c.Add(p, quality.PlainText(res.Markdown))
	}
	t.Logf("precision %.3f recall %.3f F1 %.3f (TP %d FN %d FP %d TN %d)", c.Precision(), c.Recall(), c.F1(), c.TP, c.FN, c.FP, c.TN)
	assert.GreaterOrEqual(t, c.Precision(), 0.87, "precision")
	assert.GreaterOrEqual(t, c.Recall(), 0.87, "recall")
	assert.GreaterOrEqual(t, c.F1(), 0.875, "F1")
}

// The scoring is the comparison script's: a snippet found or missed in
// the text, and nothing found in an empty text.
func TestCounts(t *testing.T) {
	p := quality.Page{With: []string{"kept one", "kept two"}, Without: []string{"menu"}}
	var c quality.Counts
	c.Add(p, "the kept one and the menu")
	assert.Equal(t, quality.Counts{TP: 1, FN: 1, FP: 1}, c)
	c.Add(p, "")
	assert.Equal(t, quality.Counts{TP: 1, FN: 3, FP: 1, TN: 1}, c)
	assert.InDelta(t, 0.5, c.Precision(), 1e-9)
	assert.InDelta(t, 0.25, c.Recall(), 1e-9)
}

// PlainText is what a reader sees of Markdown: link targets, emphasis and
// escapes are not in it.
func TestPlainText(t *testing.T) {
	text := quality.PlainText("# Title\n\nA [link text](https://example.com/x) and *emphasis*, 3\\. not a list.\n\n| a | b |\n|---|---|\n| c | d |\n")
	for _, want := range []string{"Title", "A link text and emphasis, 3. not a list."} {
		assert.Contains(t, text, want)
	}
	assert.Regexp(t, `c\s+d`, text, "a table's cells")
	assert.NotContains(t, text, "https://example.com/x")
}
