package docsearch

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/blevesearch/bleve/v2/search"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	trawler "github.com/trawler-dev/trawler"
	// The service links package index, whose init sets bleve's
	// process-wide BM25 length normalisation (search.BM25_b); linked here
	// too, the test measures the ranking the service serves.
	_ "github.com/trawler-dev/trawler/index"
)

// bleveDefaultB is bleve's own BM25 length normalisation, which a program
// without package index runs with.
const bleveDefaultB = 0.75

func docsIndex(t *testing.T) *Index {
	t.Helper()
	ix, err := New(trawler.Docs)
	require.NoError(t, err)
	t.Cleanup(func() { ix.Close() })
	return ix
}

func readQuestions(t *testing.T) []Judged {
	t.Helper()
	f, err := os.Open("testdata/questions.tsv")
	require.NoError(t, err)
	defer f.Close()
	judged, err := ReadJudged(f)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(judged), 20)
	return judged
}

// The questions of testdata/questions.tsv, in a user's words, find a
// section that answers them: first for most, among the best three for
// nearly all. The floors are modest; the figures are logged (make bench
// reports them too), with bleve's default length normalisation for
// comparison.
func TestQuestionsFindTheirSections(t *testing.T) {
	ix := docsIndex(t)
	judged := readQuestions(t)
	t.Logf("%d pieces of the documentation indexed in %s", len(ix.Sections()), ix.BuildTime)

	got := Measure(ix, judged)
	t.Logf("top-1 %.3f, top-3 %.3f on %d questions (BM25 b = %.2f, as the service runs)", got.Top1, got.Top3,
		len(judged), search.BM25_b)
	for _, m := range got.Misses {
		t.Logf("miss: %s", m)
	}
	serviceB := search.BM25_b
	search.BM25_b = bleveDefaultB
	other := Measure(ix, judged)
	search.BM25_b = serviceB
	t.Logf("top-1 %.3f, top-3 %.3f with bleve's default b = %.2f", other.Top1, other.Top3, bleveDefaultB)

	// The floors guard against a collapse, not the goals (0.8 and 0.95):
	// the documentation grows with every change, and its long sections (the
	// API reference's Scrape, the configuration table, the code map) gather
	// the words of many questions.
	assert.GreaterOrEqual(t, got.Top1, 0.6, "top-1 accuracy")
	assert.GreaterOrEqual(t, got.Top3, 0.85, "top-3 accuracy")
}

// Every section the table expects exists: a heading renamed in the
// documentation fails here, by name, rather than as a miss.
func TestQuestionTableNamesRealSections(t *testing.T) {
	refs := map[string]bool{}
	for _, s := range docsIndex(t).Sections() {
		refs[s.Ref()] = true
	}
	for _, j := range readQuestions(t) {
		for _, w := range j.Want {
			assert.True(t, refs[w], "%q expects %s, which the documentation does not have", j.Question, w)
		}
	}
}

// The documentation shipped in the binary is what the index holds: the
// README, every page of docs/ (but one marked whole for developers) and the
// two spec documents under docs/api.
func TestEmbeddedDocumentation(t *testing.T) {
	files := map[string]bool{}
	for _, s := range docsIndex(t).Sections() {
		files[s.Path] = true
	}
	want := map[string]bool{"README.md": true}
	for _, dir := range []string{"docs", "docs/api"} {
		entries, err := os.ReadDir(filepath.Join("..", dir))
		require.NoError(t, err)
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") {
				continue
			}
			raw, err := os.ReadFile(filepath.Join("..", dir, e.Name()))
			require.NoError(t, err)
			intro, _, _ := strings.Cut(string(raw), "\n## ")
			// A page marked whole for developers (the benchmark's figures)
			// is shipped but not searched.
			want[dir+"/"+e.Name()] = !strings.Contains(intro, skipMarker)
		}
	}
	assert.Subset(t, slices.Collect(maps.Keys(want)), []string{"docs/api.md", "docs/configuration.md", "docs/design.md",
		"docs/api/web-content-acquisition-v2.md", "docs/api/conventions.md"})
	maps.DeleteFunc(want, func(_ string, searched bool) bool { return !searched })
	assert.Equal(t, want, files)
}

func TestSplit(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("This sentence is filler for a long section. ", 60)
	var rows strings.Builder
	for i := range 80 {
		fmt.Fprintf(&rows, "| `OPTION_%d` | %d | what option %d does |\n", i, i, i)
	}
	doc := "# Title\n\nIntro text.\n\n## API\n\n### Profiles\n\nKeep cookies.\n\n```sh\n# not a heading\ncurl x\n```\n\n" +
		"## 4.10 POST /v2/support/docs-search\n\nAnswers.\n\n## Profiles\n\nAgain.\n\n## Crawl, batch scrape, `map`\n\n" +
		long + "\n\n## Table\n\n| name | default | meaning |\n|---|---|---|\n" + rows.String()
	got := split("doc.md", doc)

	type head struct{ ref, path string }
	var heads []head
	for _, s := range got {
		if s.Part == 0 {
			heads = append(heads, head{s.Ref(), s.HeadingPath()})
		}
	}
	assert.Equal(t, []head{
		{"doc.md#title", "doc.md"},
		{"doc.md#profiles", "doc.md › API › Profiles"},
		{"doc.md#410-post-v2supportdocs-search", "doc.md › 4.10 POST /v2/support/docs-search"},
		{"doc.md#profiles-1", "doc.md › Profiles"},
		{"doc.md#crawl-batch-scrape-map", "doc.md › Crawl, batch scrape, map"},
		{"doc.md#table", "doc.md › Table"},
	}, heads, "sections by heading, GitHub's anchors, an empty section (API) left out")
	assert.Equal(t, "Keep cookies.\n\n```sh\n# not a heading\ncurl x\n```", got[1].Text, "a # line in code is code")

	var longParts, tableParts []Section
	for _, s := range got {
		switch s.Anchor {
		case "crawl-batch-scrape-map":
			longParts = append(longParts, s)
		case "table":
			tableParts = append(tableParts, s)
		}
	}
	require.Greater(t, len(longParts), 1, "a long section is cut")
	require.Greater(t, len(tableParts), 1, "a long table is cut")
	for _, p := range append(longParts, tableParts...) {
		assert.LessOrEqual(t, len(p.Text), maxChunk)
	}
	for _, p := range longParts {
		assert.True(t, strings.HasPrefix(p.Text, "This sentence") && strings.HasSuffix(p.Text, "section."),
			"prose is cut between sentences: %q", p.Text)
	}
	for _, p := range tableParts {
		assert.True(t, strings.HasPrefix(p.Text, "| name | default | meaning |\n|---|---|---|\n| `OPTION_"),
			"every piece of a table keeps its header: %q", p.Text[:60])
	}
}

func TestSearch(t *testing.T) {
	ix := docsIndex(t)
	hits, err := ix.Search("what happens if two sessions try to save the same profile", 3)
	require.NoError(t, err)
	require.NotEmpty(t, hits)
	assert.Equal(t, "docs/api.md#profiles", hits[0].Ref())
	assert.Equal(t, "docs/api.md › Profiles", hits[0].HeadingPath())
	assert.Subset(t, hits[0].Matched, []string{"sessions", "save", "profile"})
	h := Hit{Section: hits[0].Section, Matched: []string{"sessions", "profile"}}
	assert.Equal(t, `The section docs/api.md › Profiles, which mentions "sessions", "profile".`, h.Reason())
	seen := map[string]bool{}
	for _, h := range hits {
		assert.False(t, seen[h.Ref()], "a section comes back once: %s", h.Ref())
		seen[h.Ref()] = true
	}

	hits, err = ix.Search("how do I do it?", 3)
	require.NoError(t, err)
	assert.Empty(t, hits, "a question of stop words finds nothing")
}

// An answer without a model is the best section's own sentences, those
// with the question's words.
func TestExcerpt(t *testing.T) {
	ix := docsIndex(t)
	for _, q := range []string{"what does lockdown do", "how are webhooks signed", "how much does search cost",
		"how do I keep cookies between sessions"} {
		hits, err := ix.Search(q, 1)
		require.NoError(t, err)
		require.NotEmpty(t, hits, q)
		ex := ix.Excerpt(q, hits[0])
		require.NotEmpty(t, ex, q)
		flat := strings.Join(strings.Fields(hits[0].Text), " ")
		for _, line := range strings.Split(ex, "\n") {
			assert.Contains(t, flat, strings.Join(strings.Fields(line), " "), "%q: quoted verbatim", q)
		}
	}
	hits, err := ix.Search("what does lockdown do", 1)
	require.NoError(t, err)
	assert.Contains(t, ix.Excerpt("what does lockdown do", hits[0]), "`lockdown` answers from the cache only and never contacts the target")
}

func TestUnits(t *testing.T) {
	t.Parallel()
	text := "First sentence, e.g. this one. Second with `a.B` code. third stays.\n\n| a | b |\n|---|---|\n| row one | x |\n\n" +
		"- item one. Its second sentence.\n- item two\n\n```\ncode. Not a sentence.\n```"
	var got []string
	for _, u := range units(text) {
		got = append(got, u.text)
	}
	assert.Equal(t, []string{"First sentence, e.g. this one.", "Second with `a.B` code. third stays.", "row one | x",
		"item one.", "Its second sentence.", "item two"}, got)
}

func TestPromptAndCitations(t *testing.T) {
	t.Parallel()
	hits := []Hit{
		{Section: Section{Path: "README.md", Anchor: "api", Headings: []string{"API"}, Text: "The API."}},
		{Section: Section{Path: "README.md", Anchor: "profiles", Headings: []string{"API", "Profiles"}, Text: "Profiles keep cookies."}},
	}
	p := Prompt(" keep cookies? ", hits)
	assert.Equal(t, "Question: keep cookies?\n\nDocumentation sections:\n\n[1] README.md#api (README.md › API)\nThe API.\n\n"+
		"[2] README.md#profiles (README.md › API › Profiles)\nProfiles keep cookies.\n", p)

	assert.Equal(t, hits[1:], Cited("Use a profile.\nSources: README.md#profiles", hits))
	assert.Equal(t, hits[1:], Cited("Use a profile [2].", hits))
	assert.Equal(t, hits[1:], Cited("See README.md#api-keys and README.md#profiles.", hits), "README.md#api-keys is not README.md#api")
	assert.Equal(t, hits, Cited("Use a profile.", hits), "no citation: every section given")
}

// Searches run at once, as requests do.
func TestConcurrentSearches(t *testing.T) {
	ix := docsIndex(t)
	judged := readQuestions(t)
	var wg sync.WaitGroup
	for _, j := range judged[:8] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				hits, err := ix.Search(j.Question, 3)
				assert.NoError(t, err)
				if len(hits) > 0 {
					ix.Excerpt(j.Question, hits[0])
				}
			}
		}()
	}
	wg.Wait()
}

// A document without a title has its intro under "top"; an FS without
// Markdown is an error.
func TestNewEdges(t *testing.T) {
	t.Parallel()
	ix, err := New(fstest.MapFS{"a.md": {Data: []byte("Untitled intro.\n\n## Part\n\nText.\n")}, "b.txt": {Data: []byte("# no")}})
	require.NoError(t, err)
	defer ix.Close()
	var refs []string
	for _, s := range ix.Sections() {
		refs = append(refs, s.Ref())
	}
	assert.Equal(t, []string{"a.md#top", "a.md#part"}, refs)

	_, err = New(fstest.MapFS{"b.txt": {Data: []byte("# no")}})
	assert.Error(t, err)
}

// TestSplitSkipsMarkedSections leaves out a section marked for developers
// and its sub-sections, and nothing after them.
func TestSplitSkipsMarkedSections(t *testing.T) {
	t.Parallel()
	doc := "# Title\n\n## Design\n\nWhy.\n\n## Code map\n\n" + skipMarker + "\n\nEvery package.\n\n" +
		"### Binaries\n\n| `cmd/trawler` | the server |\n\n## Operations\n\nScaling out.\n"
	var refs []string
	for _, s := range split("doc.md", doc) {
		refs = append(refs, s.Ref())
	}
	assert.Equal(t, []string{"doc.md#design", "doc.md#operations"}, refs)
	assert.Empty(t, split("figures.md", "# Figures\n\n"+skipMarker+"\n\n## Machine\n\n| CPU | 2 cores |\n"),
		"a document marked in its introduction")
}
