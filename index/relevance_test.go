package index_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/index"
	"github.com/trawler-dev/trawler/scrape"
	"github.com/trawler-dev/trawler/store"
	"github.com/trawler-dev/trawler/test/pgdb"
)

// pythonDocs is Debian's python3.11-doc, the real corpus relevance is
// measured on.
const pythonDocs = "/usr/share/doc/python3.11/html"

// docsBase is the URL the corpus is indexed under.
const docsBase = "http://docs.python.test/"

// RelevanceQuery is one line of testdata/python-queries.tsv.
type relevanceQuery struct {
	Query string
	Want  []string
}

func loadQueries(t testing.TB) []relevanceQuery {
	f, err := os.Open("testdata/python-queries.tsv")
	require.NoError(t, err)
	defer f.Close()
	var out []relevanceQuery
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		q, want, ok := strings.Cut(line, "\t")
		require.True(t, ok, "line %q has no tab", line)
		out = append(out, relevanceQuery{q, strings.Split(want, "|")})
	}
	return out
}

// indexPythonDocs indexes every page of the corpus for team, through the
// converter the service uses.
func indexPythonDocs(t testing.TB, ix index.Backend, team string) int {
	var docs []index.Doc
	err := filepath.WalkDir(pythonDocs, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".html") {
			return err
		}
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(pythonDocs, p)
		doc, ok, err := scrape.IndexDoc(context.Background(), store.CachedPage{Team: team, URL: docsBase + rel,
			FinalURL: docsBase + rel, StatusCode: 200, ContentType: "text/html; charset=utf-8", Body: body,
			CreatedAt: time.Now()})
		if err != nil || !ok {
			return err
		}
		docs = append(docs, doc)
		return nil
	})
	require.NoError(t, err)
	for i := 0; i < len(docs); i += 100 {
		require.NoError(t, ix.Put(docs[i:min(i+100, len(docs))], nil, 0))
	}
	return len(docs)
}

// TestRelevanceOnPythonDocs searches the python3.11-doc corpus with the
// natural questions of testdata/python-queries.tsv and checks that the
// right page ranks near the top (make bench reports the exact figures).
func TestRelevanceOnPythonDocs(t *testing.T) {
	if _, err := os.Stat(pythonDocs); err != nil {
		t.Skip("python3.11-doc is not installed")
	}
	if raceEnabled {
		t.Skip("under the race detector: make bench measures relevance, and go test without -race runs this")
	}
	ix, err := index.Open(filepath.Join(t.TempDir(), "ix"))
	require.NoError(t, err)
	defer ix.Close()
	n := indexPythonDocs(t, ix, "t1")
	require.Greater(t, n, 400)
	queries := loadQueries(t)
	require.GreaterOrEqual(t, len(queries), 30)
	m := index.Measure(context.Background(), ix, "t1", queries2(queries), docsBase)
	for _, miss := range m.Misses {
		t.Logf("miss: %s", miss)
	}
	t.Logf("%d queries: MRR@10 %.3f, recall@10 %.3f", len(queries), m.MRR, m.Recall)
	require.GreaterOrEqual(t, m.MRR, 0.55)
	require.GreaterOrEqual(t, m.Recall, 0.88)

	// The index in PostgreSQL ranks within 0.05 of it, on the same pages
	// and questions.
	if !pgdb.Enabled() {
		t.Log(pgdb.Env + " is not set: make test-postgres measures the index in PostgreSQL too")
		return
	}
	st, err := store.OpenURL(context.Background(), pgdb.For(t, "relevance"))
	require.NoError(t, err)
	defer st.Close()
	pg := index.OpenPG(st.Postgres())
	require.Equal(t, n, indexPythonDocs(t, pg, "t1"))
	indexPythonDocs(t, pg, "t2") // another team's copy: its statistics are its own
	start := time.Now()
	mp := index.Measure(context.Background(), pg, "t1", queries2(queries), docsBase)
	for _, miss := range mp.Misses {
		t.Logf("postgres miss: %s", miss)
	}
	t.Logf("PostgreSQL: MRR@10 %.3f, recall@10 %.3f (%d queries in %s)", mp.MRR, mp.Recall, len(queries), time.Since(start).Round(time.Millisecond))
	require.InDelta(t, m.MRR, mp.MRR, 0.05, "MRR@10 in PostgreSQL against the embedded index")
	require.GreaterOrEqual(t, mp.Recall, 0.88)
}

func queries2(qs []relevanceQuery) []index.Judged {
	out := make([]index.Judged, len(qs))
	for i, q := range qs {
		out[i] = index.Judged{Query: q.Query, Want: q.Want}
	}
	return out
}
