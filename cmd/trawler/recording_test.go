package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRecordingSurvivesKill records a session, kills the service with
// SIGKILL while the session runs, and reads the recording from the
// restarted service: the typing (sent at once) and a DOM change made 1.5 s
// before the kill (fetched within the second) are in it.
func TestRecordingSurvivesKill(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(`<!doctype html><title>Form</title><input id="name"><p id="out"></p>`))
	}))
	t.Cleanup(site.Close)
	dataDir, addr := t.TempDir(), freeAddr(t)
	t.Setenv("TRAWLER_ALLOW_PRIVATE_NETWORKS", "true")
	p := startBinary(t, dataDir, addr)
	s := p.post(t, "/v2/browser", map[string]any{"recording": true, "ttl": 300})
	id, _ := s["id"].(string)
	cdpURL, _ := s["cdpUrl"].(string)
	require.NotEmpty(t, id, "%v", s)

	allocCtx, cancelAlloc := remote.NewAllocator(context.Background(), cdpURL, remote.NoModifyURL)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	tctx, cancelT := context.WithTimeout(ctx, 30*time.Second)
	defer cancelT()
	require.NoError(t, chromedp.Do(tctx, chromedp.Navigate(site.URL+"/"), chromedp.SendKeys("#name", "Ada")))
	_, err := chromedp.Run(tctx, chromedp.Evaluate[any](`document.getElementById('out').textContent = 'changed before the kill'`))
	require.NoError(t, err)
	time.Sleep(1500 * time.Millisecond)
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()
	cancel()

	p2 := startBinary(t, dataDir, addr)
	t.Cleanup(func() {
		p2.cmd.Process.Signal(syscall.SIGTERM)
		p2.cmd.Wait()
	})
	st := p2.call(t, "GET", "/v2/browser/"+id)
	assert.Equal(t, "destroyed", st["status"], "%v", st)
	r := p2.call(t, "GET", "/v2/browser/"+id+"/replay")
	require.Equal(t, true, r["success"], "%v", r)
	raw, _ := json.Marshal(r["events"])
	assert.Contains(t, string(raw), `"text":"Ada"`, "the typing is lost")
	assert.Contains(t, string(raw), "changed before the kill", "the DOM change 1.5 s before the kill is lost")
	assert.True(t, strings.HasPrefix(r["replayUrl"].(string), "http://"+addr+"/replay/"+id), "%v", r["replayUrl"])
}
