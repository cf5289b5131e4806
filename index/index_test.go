package index_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/index"
	"github.com/trawler-dev/trawler/store"
	"github.com/trawler-dev/trawler/test/pgdb"
)

// corpus is a small set of pages with known words, two teams.
func corpus(now time.Time) []index.Doc {
	return []index.Doc{
		{Team: "a", URL: "https://docs.python.org/3/library/asyncio-task.html", Title: "Coroutines and Tasks",
			Markdown: "Run coroutines concurrently with asyncio.gather. A task wraps a coroutine.", Fetched: now,
			ContentType: "text/html", LinkHosts: []string{"github.com"}},
		{Team: "a", URL: "https://www.python.org/blog/release.html", Title: "Python release",
			Markdown: "The release manager announced the new release. Coroutines run faster.", Fetched: now,
			Published: now.Add(-48 * time.Hour), ContentType: "text/html", LinkHosts: []string{"docs.python.org"},
			Images: []index.Image{{URL: "https://www.python.org/big.png", Alt: "release party photo", Width: 1200, Height: 800},
				{URL: "https://www.python.org/icon.png", Alt: "small icon", Width: 16, Height: 16}}},
		{Team: "a", URL: "https://example.org/paper.pdf", Title: "A paper on coroutines",
			Markdown: "We study coroutines in depth; run them concurrently.", Fetched: now.Add(-time.Hour),
			ContentType: "application/pdf"},
		{Team: "a", URL: "https://github.com/python/cpython/issues/1", Title: "asyncio bug",
			Markdown: "gather hangs when a task is cancelled", Fetched: now, Published: now.Add(-time.Hour)},
		{Team: "a", URL: "https://arxiv.org/abs/2401.01234", Title: "Concurrency survey",
			Markdown: "A survey of concurrently running coroutines.", Fetched: now.Add(-400 * 24 * time.Hour)},
		{Team: "b", URL: "https://team-b.example/secret.html", Title: "Team B coroutines",
			Markdown: "Coroutines of team b, secret words zebrafish.", Fetched: now},
	}
}

// backends runs f on each backend the machine has: bleve's files, and
// PostgreSQL when a test server is there (make test-postgres): the same
// documents and queries must give the same answers on both.
func backends(t *testing.T, f func(t *testing.T, open func(t *testing.T) index.Backend)) {
	t.Run("bleve", func(t *testing.T) {
		f(t, func(t *testing.T) index.Backend {
			ix, err := index.Open(filepath.Join(t.TempDir(), "ix"))
			require.NoError(t, err)
			t.Cleanup(func() { ix.Close() })
			return ix
		})
	})
	t.Run("postgres", func(t *testing.T) {
		if !pgdb.Enabled() {
			t.Skip(pgdb.Env + " is not set: make test-postgres runs the index on PostgreSQL")
		}
		f(t, func(t *testing.T) index.Backend {
			st, err := store.OpenURL(context.Background(), pgdb.For(t, t.Name()))
			require.NoError(t, err)
			t.Cleanup(func() { st.Close() })
			return index.OpenPG(st.Postgres())
		})
	})
}

// eachCorpus runs f on the corpus indexed by each backend.
func eachCorpus(t *testing.T, f func(t *testing.T, ix index.Backend)) {
	backends(t, func(t *testing.T, open func(t *testing.T) index.Backend) {
		ix := open(t)
		require.NoError(t, ix.Put(corpus(time.Now()), nil, 0))
		f(t, ix)
	})
}

func search(t *testing.T, ix index.Backend, team, q string, mod ...func(*index.Request)) []string {
	t.Helper()
	parsed, err := index.ParseQuery(q)
	require.NoError(t, err)
	r := index.Request{Team: team, Query: parsed, Limit: 10}
	for _, m := range mod {
		m(&r)
	}
	hits, err := ix.Search(context.Background(), r)
	require.NoError(t, err)
	var urls []string
	for _, h := range hits {
		urls = append(urls, h.URL)
		if r.Source == index.SourceImages {
			urls[len(urls)-1] = h.ImageURL
		}
	}
	return urls
}

func TestOperators(t *testing.T) { eachCorpus(t, testOperators) }

func testOperators(t *testing.T, ix index.Backend) {
	task := "https://docs.python.org/3/library/asyncio-task.html"
	blog := "https://www.python.org/blog/release.html"
	pdf := "https://example.org/paper.pdf"
	gh := "https://github.com/python/cpython/issues/1"
	arxiv := "https://arxiv.org/abs/2401.01234"
	for _, tc := range []struct {
		query string
		want  []string // in any order
	}{
		{"coroutines", []string{task, blog, pdf, arxiv}},
		{`"run coroutines concurrently"`, []string{task}},
		{`"coroutines in depth"`, []string{pdf}},
		{`"concurrently running coroutines"`, []string{arxiv}},
		{`"coroutines concurrently running"`, nil},
		{"coroutines -release", []string{task, pdf, arxiv}},
		{"coroutines site:python.org", []string{task, blog}},
		{"coroutines site:docs.python.org", []string{task}},
		{"coroutines -site:python.org", []string{pdf, arxiv}},
		{"coroutines filetype:pdf", []string{pdf}},
		{"coroutines -filetype:pdf", []string{task, blog, arxiv}},
		{"inurl:blog", []string{blog}},
		{"allinurl: library asyncio", []string{task}},
		{"intitle:paper", []string{pdf}},
		{`intitle:"coroutines and tasks"`, []string{task}},
		{"zebrafish", nil},
		{"related:python.org", []string{gh}},
	} {
		t.Run(tc.query, func(t *testing.T) {
			require.ElementsMatch(t, tc.want, search(t, ix, "a", tc.query))
		})
	}
}

func TestTeamsSeeOnlyTheirOwn(t *testing.T) { eachCorpus(t, testTeamsSeeOnlyTheirOwn) }

func testTeamsSeeOnlyTheirOwn(t *testing.T, ix index.Backend) {
	require.Equal(t, []string{"https://team-b.example/secret.html"}, search(t, ix, "b", "coroutines"))
	require.Empty(t, search(t, ix, "a", "zebrafish"))
	require.Empty(t, search(t, ix, "c", "coroutines"))
}

func TestFiltersAndSources(t *testing.T) { eachCorpus(t, testFiltersAndSources) }

func testFiltersAndSources(t *testing.T, ix index.Backend) {
	now := time.Now()
	// Categories.
	require.ElementsMatch(t, []string{"https://github.com/python/cpython/issues/1"},
		search(t, ix, "a", "gather", func(r *index.Request) { r.Categories = []string{index.CategoryGitHub} }))
	require.ElementsMatch(t, []string{"https://arxiv.org/abs/2401.01234"},
		search(t, ix, "a", "coroutines", func(r *index.Request) { r.Categories = []string{index.CategoryResearch} }))
	// Domains.
	require.ElementsMatch(t, []string{"https://example.org/paper.pdf"},
		search(t, ix, "a", "coroutines", func(r *index.Request) { r.IncludeHosts = []string{"example.org"} }))
	// Dates: the published date when there is one, else the fetch.
	require.ElementsMatch(t, []string{"https://docs.python.org/3/library/asyncio-task.html", "https://example.org/paper.pdf"},
		search(t, ix, "a", "coroutines", func(r *index.Request) { r.After = now.Add(-24 * time.Hour) }))
	// News: pages with a published date, newest first.
	require.Equal(t, []string{"https://github.com/python/cpython/issues/1", "https://www.python.org/blog/release.html"},
		search(t, ix, "a", "", func(r *index.Request) { r.Source = index.SourceNews }))
	// Images, by size.
	require.Equal(t, []string{"https://www.python.org/big.png"},
		search(t, ix, "a", "release larger:800x600", func(r *index.Request) { r.Source = index.SourceImages }))
	require.Equal(t, []string{"https://www.python.org/icon.png"},
		search(t, ix, "a", "imagesize:16x16", func(r *index.Request) { r.Source = index.SourceImages }))
	// Private pages are hidden while the guard is on.
	require.NoError(t, ix.Put([]index.Doc{{Team: "a", URL: "http://10.0.0.1/intranet", Title: "intranet coroutines",
		Markdown: "intranet", Fetched: now, Private: true}}, nil, 0))
	require.Contains(t, search(t, ix, "a", "intranet"), "http://10.0.0.1/intranet")
	require.Empty(t, search(t, ix, "a", "intranet", func(r *index.Request) { r.PublicOnly = true }))
}

func TestRefetchReplacesAndSnippets(t *testing.T) { eachCorpus(t, testRefetchReplacesAndSnippets) }

func testRefetchReplacesAndSnippets(t *testing.T, ix index.Backend) {
	u := "https://docs.python.org/3/library/asyncio-task.html"
	require.NoError(t, ix.Put([]index.Doc{{Team: "a", URL: u, Title: "Coroutines and Tasks",
		Markdown: "Everything was rewritten: now about kumquats, and the [link](https://x.test/y \"t\") text.",
		Fetched:  time.Now()}}, nil, 0))
	require.Equal(t, []string{u}, search(t, ix, "a", "kumquats"))
	require.NotContains(t, search(t, ix, "a", "gather"), u, "the old text must be gone")
	parsed, _ := index.ParseQuery("kumquats")
	hits, err := ix.Search(context.Background(), index.Request{Team: "a", Query: parsed, Limit: 1})
	require.NoError(t, err)
	require.Contains(t, hits[0].Description, "kumquats")
	require.NotContains(t, hits[0].Description, "https://x.test", "snippets are text, not markup")
	n, err := ix.Count()
	require.NoError(t, err)
	require.EqualValues(t, 6+2, n, "one entry per team and URL, plus the two images")
}

// Queries with the characters of tsquery's and bleve's own syntax are
// searched as words, on both backends, never as syntax.
func TestQueriesWithSyntaxCharacters(t *testing.T) {
	eachCorpus(t, func(t *testing.T, ix index.Backend) {
		for _, q := range []string{`it's`, `'coroutines'`, `a\b`, `coroutines & | ! <-> :* ( )`, `"don't" -'x'`,
			`intitle:"it's" inurl:a'b`, `coroutines:*`, "\x00coroutines", "caf\xe9 coroutines", `+coroutines -"`} {
			parsed, err := index.ParseQuery(q)
			require.NoError(t, err, "%q", q)
			_, err = ix.Search(context.Background(), index.Request{Team: "a", Query: parsed, Limit: 10})
			require.NoError(t, err, "%q", q)
		}
		require.Contains(t, search(t, ix, "a", "coroutines & | ! <->"), "https://docs.python.org/3/library/asyncio-task.html")
	})
}
