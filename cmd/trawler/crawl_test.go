package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
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

// chainSite serves /p/0 .. /p/n-1, each linking to the next two, each
// answering after delay; it counts the requests of each page.
func chainSite(t *testing.T, n int, delay time.Duration) (*httptest.Server, func(string) int) {
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		var i int
		if _, err := fmt.Sscanf(r.URL.Path, "/p/%d", &i); err != nil || i >= n {
			http.NotFound(w, r)
			return
		}
		time.Sleep(delay)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<html><head><title>Page %d</title></head><body><main><h1>Page %d</h1><p>%s</p>
<a href="/p/%d">next</a> <a href="/p/%d">after</a></main></body></html>`, i, i, strings.Repeat("Words on a chained page. ", 12), i+1, i+2)
	}))
	t.Cleanup(srv.Close)
	return srv, func(p string) int {
		mu.Lock()
		defer mu.Unlock()
		return hits[p]
	}
}

func (p *proc) post(t *testing.T, path string, body any) map[string]any {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", "http://"+p.addr+path, bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer acme-key-0001")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return out
}

// TestCrawlResumesAfterKill kills the service with SIGKILL in the middle of
// a crawl; the restarted service finishes it with every page once.
func TestCrawlResumesAfterKill(t *testing.T) {
	const pages = 40
	site, _ := chainSite(t, pages, 150*time.Millisecond)
	dataDir, addr := t.TempDir(), freeAddr(t)
	t.Setenv("TRAWLER_ALLOW_PRIVATE_NETWORKS", "true")
	p := startBinary(t, dataDir, addr)
	id, _ := p.post(t, "/v2/crawl", map[string]any{"url": site.URL + "/p/0", "sitemap": "skip", "crawlEntireDomain": true})["id"].(string)
	require.NotEmpty(t, id, "no crawl id")
	var before float64
	polltest.Until(t, 60*time.Second, "a third of the pages", func() bool {
		before, _ = p.call(t, "GET", "/v2/crawl/"+id)["completed"].(float64)
		return before >= pages/3
	})
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()

	p2 := startBinary(t, dataDir, addr)
	// Stop it cleanly even when the test fails, so that it takes its
	// browsers with it (the cleanup of startBinary kills it outright).
	t.Cleanup(func() {
		p2.cmd.Process.Signal(syscall.SIGTERM)
		p2.cmd.Wait()
	})
	var st map[string]any
	polltest.Until(t, 90*time.Second, "the resumed crawl to complete", func() bool {
		st = p2.call(t, "GET", "/v2/crawl/"+id+"?limit=1000")
		return st["status"] == "completed"
	})
	data, _ := st["data"].([]any)
	seen := map[string]int{}
	for _, d := range data {
		seen[d.(map[string]any)["metadata"].(map[string]any)["sourceURL"].(string)]++
	}
	// The last two pages link to /p/40 and /p/41, which answer 404: they are
	// documents too.
	const want = pages + 2
	for i := 0; i < want; i++ {
		u := fmt.Sprintf("%s/p/%d", site.URL, i)
		assert.Equal(t, 1, seen[u], "times %s appears in the results", u)
	}
	if len(data) != want || st["completed"].(float64) != want || st["total"].(float64) != want {
		t.Errorf("%d documents, completed %v, total %v; want %d (before the kill: %v)", len(data), st["completed"], st["total"], want, before)
	}
	// Each page was billed once, a credit each, though the kill cut the
	// crawl short: none lost with the killed process, none billed twice.
	assert.EqualValues(t, want, st["creditsUsed"], "the crawl's creditsUsed")
	usage, _ := p2.call(t, "GET", "/v2/team/credit-usage")["data"].(map[string]any)
	assert.EqualValues(t, want, usage["usedCredits"], "the team's credits: %v", usage)
}

func TestCrawlCommand(t *testing.T) {
	site, hits := chainSite(t, 8, 0)
	out := t.TempDir()
	cmd := exec.Command(binary, "crawl", "--limit", "5", "--entire-domain", "--out", out, site.URL+"/p/0")
	cmd.Env = append(os.Environ(), "TRAWLER_ALLOW_PRIVATE_NETWORKS=true", "TRAWLER_DATA_DIR=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "trawler crawl:\n%s\n%s", stdout.String(), stderr.String())
	if !strings.Contains(stdout.String(), "5 pages written") || !strings.Contains(stderr.String(), "5 done") {
		t.Errorf("stdout %q; stderr %q", stdout.String(), stderr.String())
	}
	f, err := os.Open(filepath.Join(out, "index.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e struct{ URL, File, Title string }
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e), "index line %q", sc.Text())
		md, err := os.ReadFile(filepath.Join(out, e.File))
		if err != nil || !strings.HasPrefix(string(md), "# Page ") || !strings.HasPrefix(e.Title, "Page ") {
			t.Errorf("%s (%s): %v %q", e.File, e.URL, err, md)
		}
		n++
	}
	assert.Equal(t, 5, n, "pages the index lists")
	assert.Zero(t, hits("/p/6"), "a page beyond the limit was fetched")
}
