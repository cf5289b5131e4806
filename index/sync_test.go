package index_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/index"
	"github.com/trawler-dev/trawler/scrape"
	"github.com/trawler-dev/trawler/store"
	"github.com/trawler-dev/trawler/test/logtest"
	"github.com/trawler-dev/trawler/test/pgdb"
	"github.com/trawler-dev/trawler/test/polltest"
)

// node is one run of what the service keeps: the store, the index and its
// syncer, over one data directory.
type node struct {
	st     *store.Store
	ix     *index.Index
	syncer *index.Syncer
	stop   func()
}

func startNode(t testing.TB, dir string) *node {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(dir, "trawler.db"))
	require.NoError(t, err)
	ix, err := index.Open(filepath.Join(dir, "search.bleve"))
	require.NoError(t, err)
	syncer := index.NewSyncer(ix, st, scrape.IndexDoc, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { syncer.Run(ctx); close(done) }()
	n := &node{st: st, ix: ix, syncer: syncer}
	n.stop = func() { cancel(); <-done; ix.Close(); st.Close() }
	return n
}

// cachePage writes a page to the cache as a scrape does.
func (n *node) cachePage(t testing.TB, team, path, words string, at time.Time) {
	t.Helper()
	u := "http://site.test/" + path
	body := fmt.Sprintf("<html><head><title>%s</title></head><body><main><p>%s</p></main></body></html>", path, words)
	_, err := n.st.PutPage(context.Background(), store.CachedPage{Team: team, Key: u, URL: u, FinalURL: u,
		CreatedAt: at, StatusCode: 200, ContentType: "text/html", Body: []byte(body)})
	require.NoError(t, err)
	n.syncer.Notify()
}

func (n *node) find(t testing.TB, team, q string) []string {
	t.Helper()
	// An index closed before it persisted its last batches is rebuilt.
	polltest.Until(t, 60*time.Second, "the index holds what the store holds", func() bool {
		return n.syncer.CatchUp(context.Background(), time.Second) == ""
	})
	parsed, err := index.ParseQuery(q)
	require.NoError(t, err)
	hits, err := n.ix.Search(context.Background(), index.Request{Team: team, Query: parsed, Limit: 100})
	require.NoError(t, err)
	var out []string
	for _, h := range hits {
		out = append(out, h.URL)
	}
	return out
}

func TestIndexFollowsTheCache(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, dir)
	old := time.Now().Add(-48 * time.Hour)
	n.cachePage(t, "a", "one", "alpha apricot", old)
	n.cachePage(t, "a", "two", "alpha banana", time.Now())
	n.cachePage(t, "a", "one", "alpha cherry", old) // fetched again: replaces
	require.ElementsMatch(t, []string{"http://site.test/one", "http://site.test/two"}, n.find(t, "a", "alpha"))
	require.Empty(t, n.find(t, "a", "apricot"))
	n.stop()

	// While the index is closed the cache moves on: a page is added and one
	// expires. The next start catches up from the log.
	st, err := store.Open(context.Background(), filepath.Join(dir, "trawler.db"))
	require.NoError(t, err)
	u := "http://site.test/three"
	_, err = st.PutPage(context.Background(), store.CachedPage{Team: "a", Key: u, URL: u, FinalURL: u,
		CreatedAt: time.Now(), StatusCode: 200, ContentType: "text/html",
		Body: []byte("<title>three</title><main>alpha durian</main>")})
	require.NoError(t, err)
	require.NoError(t, st.PruneCache(context.Background(), time.Now().Add(-24*time.Hour)))
	st.Close()
	n = startNode(t, dir)
	require.ElementsMatch(t, []string{"http://site.test/two", "http://site.test/three"}, n.find(t, "a", "alpha"))
	n.stop()

	// An index that is lost is rebuilt from the store.
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "search.bleve")))
	n = startNode(t, dir)
	defer n.stop()
	polltest.Until(t, 30*time.Second, "the index is rebuilt", func() bool {
		return n.syncer.CatchUp(context.Background(), time.Second) == ""
	})
	require.ElementsMatch(t, []string{"http://site.test/two", "http://site.test/three"}, n.find(t, "a", "alpha"))
}

// killEnv names the data directory of the child TestKilledWhileIndexing
// starts and kills.
const killEnv = "TRAWLER_INDEX_KILL_DIR"

// killAfter is how many pages that child caches before it says killSignal
// (and caches on, to be killed mid-stride).
const (
	killAfter  = 300
	killSignal = "killed-while-indexing: pages cached"
)

// TestKilledWhileIndexing kills (SIGKILL) a process that is caching and
// indexing pages, and checks that the next start indexes every page the
// store holds.
func TestKilledWhileIndexing(t *testing.T) {
	if dir := os.Getenv(killEnv); dir != "" {
		n := startNode(t, dir)
		for i := 0; ; i++ {
			n.cachePage(t, "a", fmt.Sprintf("p%d", i), fmt.Sprintf("common words of page number%d", i), time.Now())
			if i == killAfter {
				fmt.Println(killSignal)
			}
		}
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWhileIndexing$")
	cmd.Env = append(os.Environ(), killEnv+"="+dir)
	var out logtest.Buffer
	cmd.Stdout = &out
	require.NoError(t, cmd.Start())
	// Let it cache a few hundred pages, then kill it mid-stride.
	polltest.UntilState(t, 60*time.Second, "the child to cache pages", func() bool {
		return strings.Contains(out.String(), killSignal)
	}, out.String)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	n := startNode(t, dir)
	defer n.stop()
	pages, err := n.st.CountPages(context.Background())
	require.NoError(t, err)
	require.Greater(t, pages, 20, "the child cached pages before it was killed")
	// The killed process may not have persisted a batch yet: then the index
	// is rebuilt from the store.
	polltest.Until(t, 60*time.Second, "the index holds what the store holds", func() bool {
		return n.syncer.CatchUp(context.Background(), time.Second) == ""
	})
	for _, i := range []int{0, pages / 2, pages - 1} {
		require.Equal(t, []string{fmt.Sprintf("http://site.test/p%d", i)}, n.find(t, "a", fmt.Sprintf("number%d", i)))
	}
	count, err := n.ix.Count()
	require.NoError(t, err)
	require.EqualValues(t, pages, count, "every page the store holds is in the index")
}

// TestOfferedDocumentsAreIndexedAsGiven checks that a page the scrape
// already converted is indexed from that document, without reading and
// converting the cache entry again, and that the store still decides when
// the offer went missing.
func TestOfferedDocumentsAreIndexedAsGiven(t *testing.T) {
	n := startNode(t, t.TempDir())
	defer n.stop()
	// The syncer is running (not about to rebuild from what it finds).
	n.cachePage(t, "a", "first", "first page", time.Now())
	require.Len(t, n.find(t, "a", "first"), 1)
	u := "http://site.test/offered"
	seq, err := n.st.PutPage(context.Background(), store.CachedPage{Team: "a", Key: u, URL: u, FinalURL: u,
		CreatedAt: time.Now(), StatusCode: 200, ContentType: "text/html",
		Body: []byte("<title>offered</title><main>words of the stored body</main>")})
	require.NoError(t, err)
	n.syncer.Offer(seq, index.Doc{Team: "a", URL: u, Title: "offered", Markdown: "words the scrape made",
		Fetched: time.Now()})
	require.Equal(t, []string{u}, n.find(t, "a", `"the scrape made"`))
	require.Empty(t, n.find(t, "a", `"stored body"`), "the offered document is the page's")

	// No offer (a restart, a full hand-over): the cache entry is converted.
	n.cachePage(t, "a", "plain", "converted from the store", time.Now())
	require.Equal(t, []string{"http://site.test/plain"}, n.find(t, "a", `"converted from the store"`))
}

// Two nodes on one PostgreSQL database share its index: each finds what
// the other cached; a page the node that cached it offered is written by
// that node at once and converted by no one, one it did not offer by
// whichever node applies its log row first, once; a page cached again
// replaces its old text everywhere.
func TestNodesShareTheIndexInPostgres(t *testing.T) {
	if !pgdb.Enabled() {
		t.Skip(pgdb.Env + " is not set: make test-postgres runs the index on PostgreSQL")
	}
	db := pgdb.For(t, "shared-index")
	type pgNode struct {
		st        *store.Store
		ix        *index.PG
		syncer    *index.Syncer
		converted atomic.Int64
	}
	start := func(name string) *pgNode {
		st, err := store.OpenURL(context.Background(), db)
		require.NoError(t, err)
		st.SetNode(name, "", time.Minute)
		n := &pgNode{st: st, ix: index.OpenPG(st.Postgres())}
		convert := func(ctx context.Context, p store.CachedPage) (index.Doc, bool, error) {
			n.converted.Add(1)
			return scrape.IndexDoc(ctx, p)
		}
		n.syncer = index.NewSyncer(n.ix, st, convert, slog.New(slog.NewTextHandler(io.Discard, nil)))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { n.syncer.Run(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done; st.Close() })
		return n
	}
	a := start("a")
	page := func(path, words string) store.CachedPage {
		u := "http://site.test/" + path
		body := fmt.Sprintf("<html><head><title>%s</title></head><body><main><p>%s</p></main></body></html>", path, words)
		return store.CachedPage{Team: "t", Key: u, URL: u, FinalURL: u, CreatedAt: time.Now(), StatusCode: 200,
			ContentType: "text/html", Body: []byte(body)}
	}
	find := func(n *pgNode, q string) []string {
		polltest.Until(t, 30*time.Second, "the index to hold what the store holds", func() bool {
			return n.syncer.CatchUp(context.Background(), time.Second) == ""
		})
		parsed, err := index.ParseQuery(q)
		require.NoError(t, err)
		hits, err := n.ix.Search(context.Background(), index.Request{Team: "t", Query: parsed, Limit: 100})
		require.NoError(t, err)
		var out []string
		for _, h := range hits {
			out = append(out, strings.TrimPrefix(h.URL, "http://site.test/"))
		}
		slices.Sort(out)
		return out
	}
	// A node's syncer applies the log once at its start, whatever it was
	// told: node a's first page, not offered, is indexed before the rest.
	_, err := a.st.PutPage(context.Background(), page("first", "the first page"))
	require.NoError(t, err)
	require.Equal(t, []string{"first"}, find(a, "first"))
	a.converted.Store(0)
	// Node a caches ten pages and offers their documents, as a scrape does.
	var want []string
	for i := range 10 {
		p := page(fmt.Sprintf("a%d", i), "harbour seals and common words")
		seq, err := a.st.PutPage(context.Background(), p)
		require.NoError(t, err)
		d, ok, err := scrape.IndexDoc(context.Background(), p)
		require.True(t, ok)
		require.NoError(t, err)
		a.syncer.Offer(seq, d)
		want = append(want, fmt.Sprintf("a%d", i))
	}
	polltest.Until(t, 30*time.Second, "node a to write the pages it cached", func() bool {
		n, err := a.ix.Count()
		return err == nil && n == 11
	})
	// Node b starts: it finds node a's pages in the index and its log rows
	// applied, and converts none of them.
	b := start("b")
	// Node b caches five without offering them (as after a restart).
	for i := range 5 {
		_, err := b.st.PutPage(context.Background(), page(fmt.Sprintf("b%d", i), "grey seals and common words"))
		require.NoError(t, err)
		b.syncer.Notify()
		want = append(want, fmt.Sprintf("b%d", i))
	}
	slices.Sort(want)
	require.Equal(t, want, find(b, "common words"), "node b's search")
	require.Equal(t, want, find(a, "common words"), "node a's search")
	require.Len(t, find(a, "harbour"), 10)
	require.Len(t, find(b, "grey"), 5)
	// Node b's five, once each, by whichever node applied their rows;
	// node a's offered ten by no one.
	assert.EqualValues(t, 5, a.converted.Load()+b.converted.Load(), "pages converted from the store")

	// Node b caches one of node a's pages again, with other words.
	_, err = b.st.PutPage(context.Background(), page("a3", "walruses only"))
	require.NoError(t, err)
	b.syncer.Notify()
	require.Equal(t, []string{"a3"}, find(a, "walruses"))
	require.NotContains(t, find(a, "harbour"), "a3", "the old text of a page cached again")
	n, err := a.ix.Count()
	require.NoError(t, err)
	assert.EqualValues(t, 16, n, "documents: one per page")
}
