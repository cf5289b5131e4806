package service_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
