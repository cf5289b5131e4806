package service_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/test/polltest"
)

// TestJobLanesShareABrowserNotAContext: two teams' batches of rendered
// pages of one site run at once on 4 lanes, which share one browser
// (scrape.Crew). Every page reads the cookie and localStorage it finds,
// then writes its team's into both: no page may find the other team's,
// and the lanes hold one browser of the pool, not four.
func TestJobLanesShareABrowserNotAContext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		team, n, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/s/"), "/")
		if !ok {
			http.NotFound(w, r)
			return
		}
		time.Sleep(50 * time.Millisecond) // pages of both jobs overlap
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><head><title>%[1]s %[2]s</title></head><body><main id="m"></main>
<script>
const seen = 'cookie=[' + document.cookie + '] storage=[' + (localStorage.getItem('team') || '') + ']';
document.cookie = 'team=%[1]s; path=/';
localStorage.setItem('team', '%[1]s');
document.getElementById('m').innerHTML = '<h1>Page %[1]s %[2]s</h1><p>Seen: ' + seen + '</p>';
</script></body></html>`, team, n)
	}))
	defer srv.Close()
	ts := crawlService(t, map[string]string{"TRAWLER_JOB_WORKERS": "4", "TRAWLER_POOL_SIZE": "6"})

	var mu sync.Mutex
	maxLeased := 0
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			mu.Lock()
			maxLeased = max(maxLeased, ts.Pool.Stats().Leased)
			mu.Unlock()
		}
	}()
	urls := func(team string) []string {
		var out []string
		for i := 0; i < 12; i++ {
			out = append(out, fmt.Sprintf("%s/s/%s/%d", srv.URL, team, i))
		}
		return out
	}
	var wg sync.WaitGroup
	docs := map[string][]map[string]any{}
	for team, key := range map[string]string{"acme": keyAcme, "globex": keyGlobex} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, st, d := ts.runJob("/v2/batch/scrape", key, map[string]any{"urls": urls(team),
				"formats": []string{"markdown"}, "waitFor": 1, "maxAge": 0})
			assert.Equal(t, "completed", st["status"], "%s's batch", team)
			mu.Lock()
			docs[team] = d
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled

	for team, other := range map[string]string{"acme": "globex", "globex": "acme"} {
		require.Len(t, docs[team], 12, "%s's documents", team)
		for _, d := range docs[team] {
			md, _ := d["markdown"].(string)
			meta := d["metadata"].(map[string]any)
			if !strings.Contains(md, "Seen: ") || meta["engine"] != "browser-render" {
				t.Errorf("%s: not rendered (engine %v): %q", meta["sourceURL"], meta["engine"], md)
			}
			if strings.Contains(md, other) {
				t.Errorf("a page of %s's batch found %s's state: %q", team, other, md)
			}
		}
	}
	assert.Equal(t, 1, maxLeased, "browsers the pool leased while 4 lanes rendered")
}

// TestJobLanesSurviveTheirBrowserDying: the browser the 4 lanes share is
// killed under a batch of rendered pages. Every page in flight is tried
// again on the browser the crew leases next, the batch completes with
// every page rendered, and once the lanes are idle they hold no browser.
func TestJobLanesSurviveTheirBrowserDying(t *testing.T) {
	var mu sync.Mutex
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		time.Sleep(150 * time.Millisecond) // pages are in flight when the browser is killed
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><head><title>P</title></head><body><main id="m"></main>
<script>document.getElementById('m').innerHTML = '<h1>Rendered %s</h1>';</script></body></html>`, r.URL.Path)
	}))
	defer srv.Close()
	// No warm browser and no spare tabs: the lanes' browser is the only
	// one, and the one killed.
	ts := crawlService(t, map[string]string{"TRAWLER_JOB_WORKERS": "4", "TRAWLER_POOL_SIZE": "6",
		"TRAWLER_WARM_BROWSERS": "0", "TRAWLER_SPARE_TABS": "0"})
	var urls []string
	for i := 0; i < 24; i++ {
		urls = append(urls, fmt.Sprintf("%s/p/%d", srv.URL, i))
	}
	r := ts.do("POST", "/v2/batch/scrape", keyAcme, map[string]any{"urls": urls, "formats": []string{"markdown"}, "waitFor": 1, "maxAge": 0})
	require.Equal(t, 200, r.Status, r.Raw)
	polltest.Until(t, 30*time.Second, "the first pages", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return hits >= 6
	})
	pids, _ := filepath.Glob(filepath.Join(ts.Config.DataDir, "browsers", "*", "trawler.pid"))
	killed := 0
	for _, f := range pids {
		if pid := readPID(t, f); pid > 0 && syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed++
		}
	}
	require.Equal(t, 1, killed, "browsers killed")
	var st response
	polltest.Until(t, 2*time.Minute, "the batch to end", func() bool {
		st = ts.do("GET", "/v2/batch/scrape/"+r.str("id"), keyAcme, nil)
		return st.str("status") != "scraping"
	})
	docs := ts.documents("/v2/batch/scrape/"+r.str("id")+"?limit=1000", keyAcme)
	require.Equal(t, "completed", st.str("status"))
	require.Len(t, docs, 24)
	for _, d := range docs {
		meta := d["metadata"].(map[string]any)
		if md, _ := d["markdown"].(string); !strings.Contains(md, "# Rendered /p/") || meta["engine"] != "browser-render" {
			t.Errorf("%s: engine %v, markdown %q", meta["sourceURL"], meta["engine"], md)
		}
	}
	polltest.Until(t, 30*time.Second, "the idle lanes to give their browser back", func() bool {
		return ts.Pool.Stats().Leased == 0
	})
}
