package index_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/index"
	"github.com/trawler-dev/trawler/scrape"
	"github.com/trawler-dev/trawler/store"
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

// TestKilledWhileIndexing kills (SIGKILL) a process that is caching and
// indexing pages, and checks that the next start indexes every page the
// store holds.
func TestKilledWhileIndexing(t *testing.T) {
	if dir := os.Getenv(killEnv); dir != "" {
		n := startNode(t, dir)
		for i := 0; ; i++ {
			n.cachePage(t, "a", fmt.Sprintf("p%d", i), fmt.Sprintf("common words of page number%d", i), time.Now())
		}
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWhileIndexing$")
	cmd.Env = append(os.Environ(), killEnv+"="+dir)
	require.NoError(t, cmd.Start())
	// Let it cache a few hundred pages, then kill it mid-stride.
	time.Sleep(3 * time.Second)
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
