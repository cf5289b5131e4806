package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/test/pgdb"
	"github.com/trawler-dev/trawler/test/polltest"
)

// hookReceiver counts the webhook events of each type, and each page's.
type hookReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	types map[string]int
	pages map[string]int
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{types: map[string]int{}, pages: map[string]int{}}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var ev struct {
			Type string `json:"type"`
			Data []struct {
				Metadata map[string]any `json:"metadata"`
			} `json:"data"`
		}
		json.Unmarshal(raw, &ev)
		h.mu.Lock()
		h.types[ev.Type]++
		for _, d := range ev.Data {
			if u, ok := d.Metadata["sourceURL"].(string); ok {
				h.pages[u]++
			}
		}
		h.mu.Unlock()
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookReceiver) count(typ string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.types[typ]
}

// TestNodesShareJobsAndSessions runs two nodes on one PostgreSQL database,
// each with its own data directory, as two machines would: a session of
// one is driven through the other, whose activity keeps it alive; either answers
// for the other's crawl; a cancel sent to the one that does not run the
// crawl stops it on the one that does; and when a node is killed with
// SIGKILL mid-crawl, the other takes the crawl over once the node's lease
// has run out and finishes it, every page once in the results and billed
// once, every page's webhook event delivered and the completed event once,
// and the dead node's browser session is ended.
func TestNodesShareJobsAndSessions(t *testing.T) {
	if !pgdb.Enabled() {
		t.Skip(pgdb.Env + " is not set: make test-postgres runs this test on a throwaway PostgreSQL")
	}
	db := pgdb.For(t, "nodes")
	const lease = 3 * time.Second
	t.Setenv("TRAWLER_ALLOW_PRIVATE_NETWORKS", "true")
	const secret = "a-secret-the-nodes-share"
	env := []string{"TRAWLER_DATABASE_URL=" + db, "TRAWLER_NODE_LEASE=" + lease.String(), "TRAWLER_NODE_SECRET=" + secret}
	addrA, addrB := freeAddr(t), freeAddr(t)
	a := startBinary(t, t.TempDir(), addrA, append(env, "TRAWLER_NODE_URL=http://"+addrA)...)
	b := startBinary(t, t.TempDir(), addrB, append(env, "TRAWLER_NODE_URL=http://"+addrB)...)
	// Each node reads the others' addresses at its heartbeat.
	time.Sleep(lease/3 + time.Second)

	sessionsAcrossNodes(t, a, b, secret)
	activityAcrossNodes(t, a, b)

	// A cancel reaching the other node.
	slow, slowHits := chainSite(t, 200, 300*time.Millisecond)
	id, _ := a.post(t, "/v2/crawl", map[string]any{"url": slow.URL + "/p/0", "sitemap": "skip", "crawlEntireDomain": true})["id"].(string)
	require.NotEmpty(t, id, "no crawl id")
	polltest.Until(t, 30*time.Second, "node B to see node A's crawl progress", func() bool {
		n, _ := b.call(t, "GET", "/v2/crawl/"+id)["completed"].(float64)
		return n >= 2
	})
	st := b.call(t, "DELETE", "/v2/crawl/"+id)
	assert.Equal(t, "cancelled", st["status"], "node B's answer to the cancel: %v", st)
	// Node A learns of it at its next renewal, a third of the lease.
	time.Sleep(lease/3 + time.Second)
	fetched := 0
	for i := 0; i < 200; i++ {
		fetched += slowHits(fmt.Sprintf("/p/%d", i))
	}
	time.Sleep(lease) // a window in which node A must fetch nothing more
	after := 0
	for i := 0; i < 200; i++ {
		after += slowHits(fmt.Sprintf("/p/%d", i))
	}
	assert.Equal(t, fetched, after, "node A went on fetching pages of the cancelled crawl")
	assert.Equal(t, "cancelled", a.call(t, "GET", "/v2/crawl/"+id)["status"], "the crawl's status on node A")

	// A node killed in the middle of a crawl of python3.11-doc.
	base, golden := pyDocsSite(t)
	// Every page of the golden, and the documentation's one dead link
	// (whatsnew/changelog.html), a 404 document the golden leaves out.
	want := len(golden) + 1
	hooks := newHookReceiver(t)
	session := a.post(t, "/v2/browser", map[string]any{})
	sessionID, _ := session["id"].(string)
	require.NotEmpty(t, sessionID, "no session: %v", session)
	id, _ = a.post(t, "/v2/crawl", map[string]any{"url": base + "/", "limit": 2000,
		"webhook": map[string]any{"url": hooks.URL, "events": []string{"page", "completed"}}})["id"].(string)
	require.NotEmpty(t, id, "no crawl id")
	watched := watchJob(t, b.addr, "/v2/crawl/"+id)
	var before float64
	polltest.Until(t, 60*time.Second, "a fifth of the pages", func() bool {
		before, _ = b.call(t, "GET", "/v2/crawl/"+id)["completed"].(float64)
		return int(before) >= want/5
	})
	a.cmd.Process.Signal(syscall.SIGKILL)
	a.cmd.Wait()
	killed := time.Now()
	before, _ = b.call(t, "GET", "/v2/crawl/"+id)["completed"].(float64)
	t.Logf("node A killed with %v of %d pages recorded", before, want)
	var resumed time.Duration
	polltest.Until(t, 30*time.Second, "node B to take the crawl over", func() bool {
		n, _ := b.call(t, "GET", "/v2/crawl/"+id)["completed"].(float64)
		resumed = time.Since(killed)
		return n > before
	})
	t.Logf("node B recorded pages of the crawl again %.1f s after the kill (lease %s)", resumed.Seconds(), lease)
	assert.Less(t, resumed, lease+lease/3+5*time.Second, "the time from the kill to pages being recorded again")
	polltest.Until(t, 120*time.Second, "the crawl to complete on node B", func() bool {
		st = b.call(t, "GET", "/v2/crawl/"+id+"?limit=1")
		return st["status"] == "completed"
	})
	docs := allDocuments(t, b, "/v2/crawl/"+id)
	seen := map[string]int{}
	for _, d := range docs {
		u := d["metadata"].(map[string]any)["url"].(string)
		path := strings.TrimPrefix(u, base)
		seen[path]++
		if sum, ok := golden[path]; ok {
			md := strings.ReplaceAll(d["markdown"].(string), base, "http://pydocs.test")
			got := sha256.Sum256([]byte(md))
			assert.Equal(t, sum, hex.EncodeToString(got[:]), "the Markdown of %s against the single-node golden", path)
		}
	}
	for path := range golden {
		assert.Equal(t, 1, seen[path], "times %s appears in the results", path)
	}
	assert.Equal(t, want, len(docs), "documents (before the kill: %v)", before)
	assert.EqualValues(t, want, st["creditsUsed"], "the crawl's creditsUsed")

	// Node B's search finds the crawl's pages, those node A cached among
	// them: on PostgreSQL the index is the database's.
	asyncio := base + "/library/asyncio-task.html"
	polltest.Until(t, 30*time.Second, "node B's search to find the crawl's pages", func() bool {
		r := b.post(t, "/v2/search", map[string]any{"query": "asyncio coroutines and tasks", "limit": 5})
		data, _ := r["data"].(map[string]any)
		web, _ := data["web"].([]any)
		for _, w := range web {
			if u, _ := w.(map[string]any)["url"].(string); u == asyncio {
				return true
			}
		}
		return false
	})
	polltest.Until(t, 90*time.Second, "every page's webhook event and the completed one", func() bool {
		hooks.mu.Lock()
		defer hooks.mu.Unlock()
		return len(hooks.pages) == want && hooks.types["crawl.completed"] > 0
	})
	time.Sleep(time.Second) // a second completed event would come now
	assert.Equal(t, 1, hooks.count("crawl.completed"), "completed events")

	// A watcher on node B followed the crawl node A ran, and then node B.
	select {
	case w := <-watched:
		assert.Equal(t, "done", w.last, "the watcher's last message")
		assert.Equal(t, want, len(w.docs), "documents the watcher got")
		for u, n := range w.docs {
			assert.Equal(t, 1, n, "times the watcher got %s", u)
		}
	case <-time.After(10 * time.Second):
		t.Error("the watcher on node B did not end with the crawl")
	}

	// The dead node's session is ended by the living one.
	polltest.Until(t, 20*time.Second, "node A's session to be ended", func() bool {
		s := b.call(t, "GET", "/v2/browser/"+sessionID)
		return s["status"] == "destroyed"
	})
	s := b.call(t, "GET", "/v2/browser/"+sessionID)
	assert.Contains(t, fmt.Sprint(s["endReason"]), "node", "the session's end reason: %v", s)
}

// watched is what a job's WebSocket watcher received: each document's
// count by source URL, and the type of its last message.
type watched struct {
	docs map[string]int
	last string
}

// watchJob follows a job's WebSocket at addr until it closes.
func watchJob(t *testing.T, addr, path string) <-chan watched {
	h := http.Header{"Authorization": {"Bearer acme-key-0001"}}
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+addr+path, h)
	require.NoError(t, err, "watching %s", path)
	out := make(chan watched, 1)
	go func() {
		defer ws.Close()
		w := watched{docs: map[string]int{}}
		defer func() { out <- w }()
		add := func(raw json.RawMessage) {
			var d struct {
				Metadata map[string]any `json:"metadata"`
			}
			json.Unmarshal(raw, &d)
			if u, ok := d.Metadata["sourceURL"].(string); ok {
				w.docs[u]++
			}
		}
		for {
			var m struct {
				Type string          `json:"type"`
				Data json.RawMessage `json:"data"`
			}
			if err := ws.ReadJSON(&m); err != nil {
				return
			}
			w.last = m.Type
			switch m.Type {
			case "catchup":
				var st struct {
					Data []json.RawMessage `json:"data"`
				}
				json.Unmarshal(m.Data, &st)
				for _, d := range st.Data {
					add(d)
				}
			case "document":
				add(m.Data)
			}
		}
	}()
	return out
}

// sessionsAcrossNodes drives a session of node a through node b: its CDP
// endpoint (a page loaded and read), /json/version, the live view's status
// and a delete all reach node a; a page of the session reaches neither
// node; a forwarded request without the nodes' secret is refused.
func sessionsAcrossNodes(t *testing.T, a, b *proc, secret string) {
	site, _ := chainSite(t, 2, 0)
	sess := a.post(t, "/v2/browser", map[string]any{})
	id, _ := sess["id"].(string)
	cdpURL, _ := sess["cdpUrl"].(string)
	require.NotEmpty(t, id, "no session: %v", sess)
	viaB := strings.Replace(cdpURL, a.addr, b.addr, 1)
	require.NotEqual(t, cdpURL, viaB)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := cdp.Dial(ctx, viaB)
	require.NoError(t, err, "connecting to node a's session through node b")
	defer conn.Close()
	var tg struct {
		TargetID string `json:"targetId"`
	}
	require.NoError(t, conn.Call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &tg))
	var at struct {
		SessionID string `json:"sessionId"`
	}
	require.NoError(t, conn.Call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": tg.TargetID, "flatten": true}, &at))
	require.NoError(t, conn.Call(ctx, at.SessionID, "Page.navigate", map[string]any{"url": site.URL + "/p/1"}, nil))
	eval := func(expr string) string {
		var r struct {
			Result cdp.RemoteObject `json:"result"`
		}
		require.NoError(t, conn.Call(ctx, at.SessionID, "Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true,
			"returnByValue": true}, &r))
		var v string
		json.Unmarshal(r.Result.Value, &v)
		return v
	}
	polltest.Until(t, 10*time.Second, "the page to load in node a's browser", func() bool { return eval("document.title") == "Page 1" })
	// What the page shows after navigating to u: a refusal by the egress
	// proxy, or the server's answer.
	shown := func(u string) string {
		require.NoError(t, conn.Call(ctx, at.SessionID, "Page.navigate", map[string]any{"url": u}, nil))
		// Page.navigate answers once the navigation committed (or failed):
		// what is left is the new document's load.
		polltest.Until(t, 20*time.Second, "the page to load "+u, func() bool { return eval("document.readyState") == "complete" })
		return eval("document.body ? document.body.innerText : ''")
	}
	assert.Contains(t, shown(site.URL+"/p/0"), "Page 0", "the page's own site")
	for _, n := range []*proc{a, b} {
		assert.NotContains(t, shown("http://"+n.addr+"/healthz"), `"ok"`, "node %s's answer shown in a page", n.addr)
	}

	ver := b.call(t, "GET", "/cdp/"+id+"/json/version?token="+url.QueryEscape(tokenOf(t, cdpURL)))
	assert.Contains(t, fmt.Sprint(ver["webSocketDebuggerUrl"]), b.addr, "node a's /json/version asked through node b: %v", ver)
	live, _ := sess["liveViewUrl"].(string)
	lu, err := url.Parse(live)
	require.NoError(t, err)
	resp, err := http.Get("http://" + b.addr + lu.Path + "/status?" + lu.RawQuery)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "node a's live view status through node b")

	req, _ := http.NewRequest("DELETE", "http://"+b.addr+"/v2/browser/"+id, nil)
	req.Header.Set("Authorization", "Bearer acme-key-0001")
	req.Header.Set("X-Trawler-Node-Secret", "not-the-nodes-secret")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a forwarded request without the nodes' secret")

	code, del := b.send(t, "DELETE", "/v2/browser/"+id, "")
	assert.Equal(t, http.StatusOK, code, "deleting node a's session through node b: %v", del)
	got := a.call(t, "GET", "/v2/browser/"+id)
	assert.Equal(t, "destroyed", got["status"], "the session on node a after the delete through node b: %v", got)
}

// tokenOf returns the token query parameter of a cdpUrl.
// activityAcrossNodes drives a session of node a with an activityTtl of
// 10 s through node b for longer than that: the activity node b forwards
// keeps it alive, and node a ends it its activityTtl after the last.
func activityAcrossNodes(t *testing.T, a, b *proc) {
	const idle = 10 * time.Second
	sess := a.post(t, "/v2/browser", map[string]any{"activityTtl": int(idle / time.Second)})
	id, _ := sess["id"].(string)
	cdpURL, _ := sess["cdpUrl"].(string)
	require.NotEmpty(t, id, "no session: %v", sess)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := cdp.Dial(ctx, strings.Replace(cdpURL, a.addr, b.addr, 1))
	require.NoError(t, err, "connecting to node a's session through node b")
	var last time.Time
	for end := time.Now().Add(idle + 4*time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		require.NoError(t, conn.Call(ctx, "", "Target.getTargets", nil, nil), "a command through node b")
		last = time.Now()
	}
	conn.Close()
	assert.Equal(t, "active", a.call(t, "GET", "/v2/browser/"+id)["status"], "the session after %s of activity through node b", idle+4*time.Second)
	var ended map[string]any
	polltest.Until(t, idle+20*time.Second, "node a to end the idle session", func() bool {
		ended = b.call(t, "GET", "/v2/browser/"+id)
		return ended["status"] == "destroyed"
	})
	after := time.Since(last)
	t.Logf("the session driven through node b ended %.1f s after its last activity (activityTtl %s)", after.Seconds(), idle)
	assert.GreaterOrEqual(t, after, idle-time.Second, "the session ended before its activityTtl passed")
	assert.Contains(t, fmt.Sprint(ended["endReason"]), "activityTtl", "the session's end reason: %v", ended)
}

func tokenOf(t *testing.T, cdpURL string) string {
	u, err := url.Parse(cdpURL)
	require.NoError(t, err)
	return u.Query().Get("token")
}

// pyDocsSite serves Debian's python3.11-doc on loopback, each page 10 ms
// late (so that a crawl of it lasts long enough to be cut), and returns
// its base URL with the single-node crawl's golden: each page's path and
// the SHA-256 of its Markdown (service/testdata/pydocs-markdown.sha256).
func pyDocsSite(t *testing.T) (string, map[string]string) {
	const dir = "/usr/share/doc/python3.11/html"
	if _, err := os.Stat(dir + "/index.html"); err != nil {
		t.Skip("python3.11-doc is not installed (make test installs it)")
	}
	raw, err := os.ReadFile("../../service/testdata/pydocs-markdown.sha256")
	require.NoError(t, err)
	golden := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		path, sum, _ := strings.Cut(line, " ")
		golden[path] = sum
	}
	fs := http.FileServer(http.Dir(dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(10 * time.Millisecond)
		fs.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, golden
}

// allDocuments reads every document of a job from p, page after page.
func allDocuments(t *testing.T, p *proc, path string) []map[string]any {
	var out []map[string]any
	for skip := 0; ; {
		st := p.call(t, "GET", fmt.Sprintf("%s?skip=%d&limit=1000", path, skip))
		data, _ := st["data"].([]any)
		for _, d := range data {
			out = append(out, d.(map[string]any))
		}
		skip += len(data)
		if st["next"] == nil || len(data) == 0 {
			return out
		}
	}
}

// TestNodesShareHostPoliteness runs a crawl of one site on each of two
// nodes sharing a database, at once: together they keep to the site's
// limit of pages in flight (TRAWLER_HOST_CONCURRENCY), not each to its
// own, and both crawls complete.
func TestNodesShareHostPoliteness(t *testing.T) {
	if !pgdb.Enabled() {
		t.Skip(pgdb.Env + " is not set: make test-postgres runs this test on a throwaway PostgreSQL")
	}
	const limit, pages = 2, 30
	var inflight, most atomic.Int64
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var i int
		if r.URL.Path != "/" {
			if _, err := fmt.Sscanf(r.URL.Path, "/p/%d", &i); err != nil || i >= pages {
				http.NotFound(w, r)
				return
			}
		}
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(150 * time.Millisecond) // slow enough for the pages in flight to overlap
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<html><head><title>Page %d</title></head><body><main><h1>Page %d</h1><p>%s</p>", i, i,
			strings.Repeat("Words of a page of a site two nodes crawl at once. ", 8))
		if r.URL.Path == "/" {
			for k := range pages {
				fmt.Fprintf(w, `<a href="/p/%d">page %d</a> `, k, k)
			}
		}
		fmt.Fprint(w, "</main></body></html>")
	}))
	t.Cleanup(site.Close)
	db := pgdb.For(t, "politeness")
	const lease = 3 * time.Second
	t.Setenv("TRAWLER_ALLOW_PRIVATE_NETWORKS", "true")
	env := []string{"TRAWLER_DATABASE_URL=" + db, "TRAWLER_NODE_LEASE=" + lease.String(),
		"TRAWLER_HOST_CONCURRENCY=" + fmt.Sprint(limit), "TRAWLER_POOL_SIZE=4", "TRAWLER_JOB_WORKERS=3"}
	a := startBinary(t, t.TempDir(), freeAddr(t), env...)
	b := startBinary(t, t.TempDir(), freeAddr(t), env...)
	// Each node learns at its next renewal (a third of the lease) that
	// another is alive.
	time.Sleep(lease/3 + time.Second)

	crawl := map[string]any{"url": site.URL + "/", "sitemap": "skip", "limit": pages + 1}
	ids := map[*proc]string{}
	for _, p := range []*proc{a, b} {
		id, _ := p.post(t, "/v2/crawl", crawl)["id"].(string)
		require.NotEmpty(t, id, "no crawl id")
		ids[p] = id
	}
	for p, id := range ids {
		polltest.Until(t, 60*time.Second, "both crawls to complete", func() bool {
			st := p.call(t, "GET", "/v2/crawl/"+id)
			return st["status"] == "completed"
		})
		st := p.call(t, "GET", "/v2/crawl/"+id+"?limit=100")
		assert.EqualValues(t, pages+1, st["completed"], "pages of the crawl on %s", p.addr)
	}
	t.Logf("at most %d of the site's pages were in flight at once (limit %d, two nodes)", most.Load(), limit)
	assert.LessOrEqual(t, most.Load(), int64(limit), "the site's pages in flight at once across the nodes")
}
