package service_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/test/polltest"
)

func TestSessionLifecycleWithChromedp(t *testing.T) {
	t.Parallel()
	ts := start(t, nil)
	before := time.Now()
	r := ts.create(keyAcme, map[string]any{"ttl": 600, "activityTtl": 120, "origin": "test", "integration": "go"})
	id, cdpURL := r.str("id"), r.str("cdpUrl")
	if !strings.HasPrefix(cdpURL, "ws://127.0.0.1:") || !strings.Contains(cdpURL, "/cdp/"+id+"?token=") {
		t.Fatalf("cdpUrl %q is not ws://<host>/cdp/<id>?token=...", cdpURL)
	}
	view, interact := r.str("liveViewUrl"), r.str("interactiveLiveViewUrl")
	if view == interact || !strings.Contains(view, "/live/"+id+"?token=") || !strings.Contains(interact, "/live/"+id+"?token=") {
		t.Fatalf("live view URLs must be distinct /live/<id>?token= URLs: %q %q", view, interact)
	}
	exp, err := time.Parse(time.RFC3339, r.str("expiresAt"))
	if err != nil || exp.Before(before.Add(599*time.Second)) || exp.After(time.Now().Add(601*time.Second)) {
		t.Fatalf("expiresAt %q should be 600 s from now", r.str("expiresAt"))
	}

	// chromedp attaches through the proxy. NoModifyURL: chromedp would
	// otherwise replace the path with /json/version on the same host.
	allocCtx, cancelAlloc := remote.NewAllocator(context.Background(), cdpURL, remote.NoModifyURL)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 30*time.Second)
	defer cancelT()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("data:text/html,<title>through the proxy</title><h1>hi</h1>")), "chromedp through the proxy")
	title, err := chromedp.Run(ctx, chromedp.Title())
	require.NoError(t, err, "chromedp through the proxy")
	require.Equal(t, "through the proxy", title, "title")

	// execute runs in the active page, which chromedp's tab now is.
	ex := ts.do("POST", "/v2/browser/"+id+"/execute", keyAcme, map[string]any{"code": "document.title + ' ' + (20 + 22)", "language": "js"})
	if ex.Status != 200 || ex.Body["success"] != true || ex.Body["result"] != "through the proxy 42" {
		t.Fatalf("execute: %d %s", ex.Status, ex.Raw)
	}
	ex = ts.do("POST", "/v2/browser/"+id+"/execute", keyAcme, map[string]any{"code": "await new Promise(r => setTimeout(r, 50)); ({a: [1, 2]})"})
	// result is the value as a string (Firecrawl's shape), value the value.
	if ex.Body["success"] != true || ex.Body["value"].(map[string]any)["a"].([]any)[1] != float64(2) || ex.Body["result"] != `{"a":[1,2]}` {
		t.Fatalf("execute with await: %s", ex.Raw)
	}
	for code, want := range map[string]any{
		"Promise.resolve(42)": float64(42),
		"new Promise(r => setTimeout(() => r('later'), 300))": "later",
		"(async () => [document.title.length])()":             []any{float64(len("through the proxy"))},
		"undefined": nil,
	} {
		ex = ts.do("POST", "/v2/browser/"+id+"/execute", keyAcme, map[string]any{"code": code})
		if ex.Body["success"] != true || fmt.Sprint(ex.Body["value"]) != fmt.Sprint(want) {
			t.Fatalf("execute %q: %s, want result %v", code, ex.Raw, want)
		}
	}
	ex = ts.do("POST", "/v2/browser/"+id+"/execute", keyAcme, map[string]any{"code": "throw new Error('boom')"})
	if ex.Status != 200 || ex.Body["success"] != false || !strings.Contains(ex.str("error"), "boom") {
		t.Fatalf("execute that throws: %d %s", ex.Status, ex.Raw)
	}
	ex = ts.do("POST", "/v2/browser/"+id+"/execute", keyAcme, map[string]any{"code": "while(true){}", "timeout": 1})
	if ex.Status != 200 || ex.Body["success"] != false || ex.Body["killed"] != true {
		t.Fatalf("execute past its timeout: %d %s", ex.Status, ex.Raw)
	}

	for _, u := range []string{view, interact} {
		lu, _ := url.Parse(u)
		if r := ts.do("GET", lu.RequestURI(), "", nil); r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("live view of a live session: %d %s", r.Status, r.Raw)
		}
		r := ts.do("GET", lu.Path+"?token=nope", "", nil)
		require.Equal(t, 401, r.Status, "live view with a wrong token: %s", r.Raw)
	}

	g := ts.do("GET", "/v2/browser/"+id, keyAcme, nil)
	if g.Status != 200 || g.str("status") != "active" || g.str("cdpUrl") != cdpURL {
		t.Fatalf("GET session: %d %s", g.Status, g.Raw)
	}
	l := ts.do("GET", "/v2/browser?status=active", keyAcme, nil)
	require.True(t, listed(l, id), "active list lacks the session: %s", l.Raw)

	// A raw client attached while the session is deleted gets a close frame
	// that names the reason.
	raw := dialCDP(t, cdpURL)
	_, err = raw.call("Browser.getVersion", nil)
	require.NoError(t, err)
	d := ts.do("DELETE", "/v2/browser/"+id, keyAcme, nil)
	if d.Status != 200 || d.Body["success"] != true || d.Body["sessionDurationMs"].(float64) <= 0 {
		t.Fatalf("DELETE: %d %s", d.Status, d.Raw)
	}
	ce := raw.waitClose(5 * time.Second)
	if ce.Code != websocket.CloseNormalClosure || !strings.Contains(ce.Text, "deleted") {
		t.Fatalf("close frame = %d %q, want 1000 naming the deletion", ce.Code, ce.Text)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		// chromedp notices the closed socket on its next command.
		_, err := chromedp.Run(ctx, chromedp.Title())
		require.Error(t, err, "chromedp still works after the session was deleted")
	}

	g = ts.do("GET", "/v2/browser/"+id, keyAcme, nil)
	if g.str("status") != "destroyed" || !strings.Contains(g.str("endReason"), "deleted") {
		t.Fatalf("GET after delete: %s", g.Raw)
	}
	if d := ts.do("DELETE", "/v2/browser/"+id, keyAcme, nil); d.Status != 410 || d.str("code") != "SESSION_DESTROYED" {
		t.Fatalf("second DELETE: %d %s", d.Status, d.Raw)
	}
	ex = ts.do("POST", "/v2/browser/"+id+"/execute", keyAcme, map[string]any{"code": "1"})
	require.Equal(t, 410, ex.Status, "execute on a destroyed session: %s", ex.Raw)
	lu, _ := url.Parse(view)
	require.Equal(t, 410, ts.do("GET", lu.RequestURI(), "", nil).Status, "a destroyed session's live view URL")
	require.Equal(t, 410, wsStatus(cdpURL), "dialing a destroyed session's cdpUrl")
	if !listed(ts.do("GET", "/v2/browser?status=destroyed", keyAcme, nil), id) ||
		listed(ts.do("GET", "/v2/browser?status=active", keyAcme, nil), id) {
		t.Fatal("the session should be listed as destroyed only")
	}
	polltest.Until(t, 10*time.Second, "the pool to hold only its warm browser", func() bool {
		st := ts.Pool.Stats()
		return st.Leased == 0 && st.Total == 1
	})
}

func listed(r response, id string) bool {
	list, _ := r.Body["sessions"].([]any)
	for _, s := range list {
		if s.(map[string]any)["id"] == id {
			return true
		}
	}
	return false
}

// wsStatus is the HTTP status a WebSocket handshake to u gets (101 on success).
func wsStatus(u string) int {
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	ws, resp, err := d.Dial(u, nil)
	if err == nil {
		ws.Close()
		return 101
	}
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}

func TestAuthenticationAndTeamIsolation(t *testing.T) {
	t.Parallel()
	ts := start(t, nil)
	for _, tc := range []struct{ name, header string }{
		{"no header", ""},
		{"wrong key", "Bearer not-a-key-at-all"},
		{"not bearer", "Basic " + keyAcme},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", ts.URL+"/v2/browser", nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, 401, resp.StatusCode, "status")
		})
	}

	r := ts.create(keyAcme, nil)
	id := r.str("id")
	for _, tc := range []struct{ method, path string }{
		{"GET", "/v2/browser/" + id},
		{"DELETE", "/v2/browser/" + id},
		{"POST", "/v2/browser/" + id + "/execute"},
	} {
		var body any
		if tc.method == "POST" {
			body = map[string]any{"code": "1"}
		}
		if g := ts.do(tc.method, tc.path, keyGlobex, body); g.Status != 404 || g.str("code") != "NOT_FOUND" {
			t.Fatalf("globex %s %s: %d %s, want 404", tc.method, tc.path, g.Status, g.Raw)
		}
	}
	require.False(t, listed(ts.do("GET", "/v2/browser", keyGlobex, nil), id), "globex sees acme's session in its list")
	act := ts.do("GET", "/v2/team/activity", keyGlobex, nil)
	require.Empty(t, act.Body["data"].([]any), "globex sees activity entries of acme")
	act = ts.do("GET", "/v2/team/activity?endpoint=browser", keyAcme, nil)
	data := act.Body["data"].([]any)
	if len(data) != 1 || data[0].(map[string]any)["id"] != id || data[0].(map[string]any)["api_version"] != "v2" {
		t.Fatalf("acme's activity: %s", act.Raw)
	}
	// The session is still acme's and alive.
	g := ts.do("GET", "/v2/browser/"+id, keyAcme, nil)
	require.Equal(t, "active", g.str("status"), "acme's session after globex's attempts: %s", g.Raw)
	// The CDP proxy wants the session's token, not anyone's.
	u, _ := url.Parse(r.str("cdpUrl"))
	require.Equal(t, 401, wsStatus("ws://"+u.Host+u.Path+"?token=wrong"), "wrong token")
	require.Equal(t, 401, wsStatus("ws://"+u.Host+u.Path), "no token")
	require.Equal(t, 404, wsStatus("ws://"+u.Host+"/cdp/00000000-0000-0000-0000-000000000000?token=x"), "unknown session")
}

func TestLocalModeAcceptsAnyCaller(t *testing.T) {
	t.Parallel()
	ts := start(t, map[string]string{"TRAWLER_API_KEYS": "", "TRAWLER_WARM_BROWSERS": "0"})
	for _, key := range []string{"", "anything"} {
		r := ts.do("GET", "/v2/browser", key, nil)
		require.Equal(t, 200, r.Status, "local mode with key %q: %s", key, r.Raw)
	}
}

func TestDiscoveryEndpointsAndManyClients(t *testing.T) {
	t.Parallel()
	ts := start(t, nil)
	r := ts.create(keyAcme, nil)
	id, cdpURL := r.str("id"), r.str("cdpUrl")
	httpURL := strings.Replace(cdpURL, "ws://", "http://", 1)
	u, _ := url.Parse(httpURL)
	for _, path := range []string{"/json/version", "/json/version/"} {
		v := ts.do("GET", u.Path+path+"?"+u.RawQuery, "", nil)
		if v.Status != 200 || v.str("webSocketDebuggerUrl") != cdpURL || !strings.Contains(v.str("Browser"), "Chrome") {
			t.Fatalf("%s: %d %s", path, v.Status, v.Raw)
		}
	}
	list := ts.do("GET", u.Path+"/json/list?"+u.RawQuery, "", nil)
	var pages []map[string]any
	if err := jsonUnmarshal(list.Raw, &pages); err != nil || len(pages) == 0 {
		t.Fatalf("/json/list: %d %s", list.Status, list.Raw)
	}
	pageURL, _ := pages[0]["webSocketDebuggerUrl"].(string)
	require.True(t, strings.HasPrefix(pageURL, "ws://"+u.Host+"/cdp/"+id+"/devtools/page/"), "page URL not rewritten to the proxy: %q", pageURL)
	page := dialCDP(t, pageURL)
	if res, err := page.call("Runtime.evaluate", map[string]any{"expression": "6*7", "returnByValue": true}); err != nil ||
		res["result"].(map[string]any)["value"] != float64(42) {
		t.Fatalf("evaluate on the proxied page endpoint: %v %v", res, err)
	}
	st := ts.do("GET", u.Path+"/json/version?token=nope", "", nil)
	require.Equal(t, 401, st.Status, "json/version with a wrong token")

	// Two clients at once; one leaving does not end the session.
	a, b := dialCDP(t, cdpURL), dialCDP(t, cdpURL)
	_, err := a.call("Target.getTargets", nil)
	require.NoError(t, err)
	_, err = b.call("Target.getTargets", nil)
	require.NoError(t, err)
	a.ws.Close()
	time.Sleep(200 * time.Millisecond) // a window in which the session must not end
	_, err = b.call("Browser.getVersion", nil)
	require.NoError(t, err, "second client after the first left")
	g := ts.do("GET", "/v2/browser/"+id, keyAcme, nil)
	require.Equal(t, "active", g.str("status"), "session after a client left: %s", g.Raw)

	// A 30 MB message passes the proxy both ways.
	res, err := page.call("Runtime.evaluate", map[string]any{"expression": "'x'.repeat(30*1024*1024)", "returnByValue": true})
	require.NoError(t, err)
	require.Equal(t, 30*1024*1024, len(res["result"].(map[string]any)["value"].(string)), "bytes the 30 MB result arrived as")
	big := strings.Repeat("y", 20*1024*1024)
	res, err = page.call("Runtime.evaluate", map[string]any{"expression": "'" + big + "'.length", "returnByValue": true})
	if err != nil || res["result"].(map[string]any)["value"] != float64(len(big)) {
		t.Fatalf("20 MB command: %v", err)
	}
}

func TestRateLimitAndQueue(t *testing.T) {
	t.Parallel()
	ts := start(t, map[string]string{"TRAWLER_TEAM_CONCURRENCY": "1", "TRAWLER_QUEUE_WAIT": "800ms"})
	first := ts.create(keyAcme, nil)
	r := ts.do("POST", "/v2/browser", keyAcme, map[string]any{})
	if r.Status != 429 || r.str("code") != "RATE_LIMITED" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("second session over the team limit: %d %s (Retry-After %q)", r.Status, r.Raw, r.Header.Get("Retry-After"))
	}
	// Another team is not held back by acme's limit.
	other := ts.create(keyGlobex, nil)
	ts.do("DELETE", "/v2/browser/"+other.str("id"), keyGlobex, nil)

	// A waiting request is served as soon as the slot frees.
	go func() {
		time.Sleep(300 * time.Millisecond) // the request below is waiting by then
		ts.do("DELETE", "/v2/browser/"+first.str("id"), keyAcme, nil)
	}()
	r = ts.do("POST", "/v2/browser", keyAcme, map[string]any{})
	require.Equal(t, 200, r.Status, "queued request after the slot freed: %s", r.Raw)
}

func TestPoolFullQueues(t *testing.T) {
	t.Parallel()
	ts := start(t, map[string]string{"TRAWLER_POOL_SIZE": "1", "TRAWLER_WARM_BROWSERS": "1", "TRAWLER_QUEUE_WAIT": "5s"})
	first := ts.create(keyAcme, nil)
	if r := ts.do("POST", "/v2/browser", keyGlobex, map[string]any{}); r.Status != 429 || !strings.Contains(r.str("error"), "pool") {
		t.Fatalf("pool full: %d %s", r.Status, r.Raw)
	}
	ts.do("DELETE", "/v2/browser/"+first.str("id"), keyAcme, nil)
	ts.create(keyGlobex, nil)
}

func TestBrowserCrashDestroysSession(t *testing.T) {
	t.Parallel()
	ts := start(t, nil)
	r := ts.create(keyAcme, nil)
	id := r.str("id")
	client := dialCDP(t, r.str("cdpUrl"))
	_, err := client.call("Browser.getVersion", nil)
	require.NoError(t, err)
	ts.killBrowser(id)
	ce := client.waitClose(10 * time.Second)
	if ce.Code != websocket.CloseInternalServerErr || !strings.Contains(ce.Text, "exited") {
		t.Fatalf("close frame after a crash: %d %q", ce.Code, ce.Text)
	}
	polltest.Until(t, 10*time.Second, "the session to be destroyed", func() bool {
		g := ts.do("GET", "/v2/browser/"+id, keyAcme, nil)
		return g.str("status") == "destroyed" && strings.Contains(g.str("endReason"), "browser exited unexpectedly")
	})
	polltest.Until(t, 20*time.Second, "the pool to refill", func() bool {
		st := ts.Pool.Stats()
		return st.Idle == 1 && st.Leased == 0
	})
	// The pool still serves.
	r2 := ts.create(keyAcme, nil)
	_, err = dialCDP(t, r2.str("cdpUrl")).call("Browser.getVersion", nil)
	require.NoError(t, err, "a new session after the crash")
}

func TestActivityTTLAndTTLExpiry(t *testing.T) {
	t.Parallel()
	ts := start(t, map[string]string{"TRAWLER_WARM_BROWSERS": "2"})

	// activityTtl: a message at 6 s postpones the end to about 16 s.
	idle := ts.create(keyAcme, map[string]any{"activityTtl": 10})
	idleClient := dialCDP(t, idle.str("cdpUrl"))
	// ttl: ends at 30 s however busy the client is.
	life := ts.create(keyAcme, map[string]any{"ttl": 30, "activityTtl": 3600})
	lifeClient := dialCDP(t, life.str("cdpUrl"))
	begin := time.Now()

	time.Sleep(6 * time.Second)
	_, err := idleClient.call("Browser.getVersion", nil)
	require.NoError(t, err)
	ce := idleClient.waitClose(20 * time.Second)
	idleFor := time.Since(begin)
	require.Contains(t, ce.Text, "activityTtl of 10s", "idle close frame (code %d)", ce.Code)
	if idleFor < 15*time.Second || idleFor > 19*time.Second {
		t.Fatalf("idle session ended after %s; activity at 6 s should have moved the end to about 16 s", idleFor)
	}
	g := ts.do("GET", "/v2/browser/"+idle.str("id"), keyAcme, nil)
	if g.str("status") != "destroyed" || !strings.Contains(g.str("endReason"), "activityTtl") {
		t.Fatalf("idle session record: %s", g.Raw)
	}

	// Keep the ttl session busy; it must still end at 30 s.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for time.Since(begin) < 29*time.Second {
			if _, err := lifeClient.call("Browser.getVersion", nil); err != nil {
				return
			}
			time.Sleep(time.Second)
		}
	}()
	<-done
	ce = lifeClient.waitClose(10 * time.Second)
	lived := time.Since(begin)
	if !strings.Contains(ce.Text, "ttl of 30s") || lived < 29*time.Second || lived > 34*time.Second {
		t.Fatalf("ttl close frame %q after %s", ce.Text, lived)
	}
}
