package service_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/test/polltest"
)

// TestCDPProxyRefusesBypasses replays, as raw WebSocket frames through team
// B's cdpUrl, the four ways past the proxy's filter a tester found and the
// commands that reached the host through them: each is answered by
// Trawler, and the browser runs none of it. make test-docker runs it on the
// docker runtime too (test/node/confinement.test.mjs replays them with
// Playwright and Puppeteer).
func TestCDPProxyRefusesBypasses(t *testing.T) {
	t.Parallel()
	ts := start(t, nil)
	s := ts.create(keyGlobex, nil)
	c := dialCDP(t, s.str("cdpUrl"))
	targets, err := c.call("Target.getTargets", nil)
	require.NoError(t, err)
	var target string
	for _, ti := range targets["targetInfos"].([]any) {
		if m := ti.(map[string]any); m["type"] == "page" {
			target = m["targetId"].(string)
		}
	}
	require.NotEmpty(t, target, "the session has no page")
	att, err := c.call("Target.attachToTarget", map[string]any{"targetId": target, "flatten": true})
	require.NoError(t, err)
	sid := att["sessionId"].(string)
	href := func() string {
		r, err := c.callIn(sid, "Runtime.evaluate", map[string]any{"expression": "location.href + ' ' + typeof window.cdp", "returnByValue": true})
		require.NoError(t, err)
		return r["result"].(map[string]any)["value"].(string)
	}
	before := href()

	for _, tc := range []struct{ name, frame string }{
		{"escaped key", `{"id":%d,"sessionId":"` + sid + `","meth\u006fd":"Page.navigate","params":{"url":"file:///etc/passwd"}}`},
		{"NUL byte splitting the frame", "{\"id\":%d,\"sessionId\":\"" + sid + "\",\"method\":\"Runtime.evaluate\",\"params\":{\"expression\":\"1\x00{\\\"id\\\":999,\\\"sessionId\\\":\\\"" + sid + "\\\",\\\"method\\\":\\\"Page.navigate\\\",\\\"params\\\":{\\\"url\\\":\\\"file:///etc/passwd\\\"}}\"}}"},
		{"exposeDevToolsProtocol", `{"id":%d,"method":"Target.exposeDevToolsProtocol","params":{"targetId":"` + target + `","bindingName":"cdp"}}`},
		{"tab in the scheme", `{"id":%d,"sessionId":"` + sid + `","method":"Page.navigate","params":{"url":"fi\tle:///etc/passwd"}}`},
		{"bad escape", `{"id":%d,"sessionId":"` + sid + `","method":"Page.navigate","params":{"url":"file:///etc/passwd#%%zz"}}`},
		{"url and URL", `{"id":%d,"sessionId":"` + sid + `","method":"Page.navigate","params":{"url":"file:///etc/passwd","URL":"about:blank"}}`},
		{"data directory", `{"id":%d,"sessionId":"` + sid + `","method":"Page.navigate","params":{"url":"file://` + ts.Config.DataDir + `/trawler.db"}}`},
		{"new tab on a file", `{"id":%d,"method":"Target.createTarget","params":{"url":"file:///etc/shadow"}}`},
		{"context around the egress proxy", `{"id":%d,"method":"Target.createBrowserContext","params":{"proxyServer":"direct://"}}`},
		{"host processes", `{"id":%d,"method":"SystemInfo.getProcessInfo"}`},
		{"non-flat session", `{"id":%d,"method":"Target.attachToTarget","params":{"targetId":"` + target + `"}}`},
		{"message inside a message", `{"id":%d,"method":"Target.sendMessageToTarget","params":{"targetId":"` + target + `","message":"{\"id\":1,\"method\":\"Page.navigate\",\"params\":{\"url\":\"file:///etc/passwd\"}}"}}`},
	} {
		c.next++
		id := c.next
		require.NoError(t, c.ws.WriteMessage(websocket.TextMessage, []byte(fmt.Sprintf(tc.frame, id))), tc.name)
		reply := c.replyTo(id)
		e, _ := reply["error"].(map[string]any)
		if msg, _ := e["message"].(string); !strings.HasPrefix(msg, "Trawler: ") {
			t.Errorf("%s: answered %v, want Trawler's refusal", tc.name, reply)
		}
	}
	assert.Equal(t, before, href(), "the page moved, or got a DevTools binding")
	assert.Empty(t, c.seen(999), "the message after the NUL byte ran")
}

// TestConfinedBrowsersReachNothing is the second wall alone: a browser
// driven over Trawler's own channel, which no policy filters (as if a
// client had got every command past the proxy), is told to open the data
// directory, the host's /etc/shadow and another session's browser, to
// download into the data directory and to leave its egress proxy. It gets
// none of it. make test-docker runs it on the docker runtime too.
func TestConfinedBrowsersReachNothing(t *testing.T) {
	t.Parallel()
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true"})
	secret := "secret-" + uuid.NewString()
	var hits atomic.Int32
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.RawQuery, "bypass") {
			hits.Add(1)
		}
		if r.URL.Path == "/download" {
			w.Header().Set("Content-Disposition", `attachment; filename="payload.txt"`)
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<title>%s</title><p>%s</p>", secret, secret)
	}))
	defer site.Close()

	// Team A's scraped page lands in the database; team A's session runs
	// beside team B's.
	r := ts.do("POST", "/v2/scrape", keyAcme, map[string]any{"url": site.URL + "/a", "formats": []string{"markdown"}})
	require.Equal(t, 200, r.Status, "scrape: %s", r.Raw)
	victim := ts.create(keyAcme, nil)
	attacker := ts.create(keyGlobex, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	vs, err := ts.Sessions.Lookup(ctx, victim.str("id"))
	require.NoError(t, err)
	as, err := ts.Sessions.Lookup(ctx, attacker.str("id"))
	require.NoError(t, err)
	conn, err := as.CDP().Dial(ctx) // Trawler's own channel: no policy
	require.NoError(t, err)
	defer conn.Close()
	tab := func(params map[string]any) string {
		var created struct{ TargetID string }
		require.NoError(t, conn.Call(ctx, "", "Target.createTarget", params, &created))
		var att struct{ SessionID string }
		require.NoError(t, conn.Call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": created.TargetID, "flatten": true}, &att))
		return att.SessionID
	}
	text := func(sid string) string {
		var res cdp.EvalResult
		require.NoError(t, conn.Call(ctx, sid, "Runtime.evaluate", map[string]any{"expression": "document.documentElement.innerText", "returnByValue": true}, &res))
		var s string
		jsonUnmarshal(res.Result.Value, &s)
		return s
	}
	open := func(sid, u string) string {
		conn.Call(ctx, sid, "Page.navigate", map[string]any{"url": u}, nil)
		// Page.navigate answers once the navigation committed (or failed):
		// what is left is the new document's load.
		polltest.Until(t, 20*time.Second, "the page to load "+u, func() bool {
			var res cdp.EvalResult
			require.NoError(t, conn.Call(ctx, sid, "Runtime.evaluate", map[string]any{"expression": "document.readyState", "returnByValue": true}, &res))
			return string(res.Result.Value) == `"complete"`
		})
		return text(sid)
	}
	page := tab(map[string]any{"url": "about:blank"})
	// The control: the attacker's browser loads the site through its proxy.
	require.Contains(t, open(page, site.URL+"/control"), secret, "the browser loads nothing: the test proves nothing")

	// A Docker browser sees its image's own /etc/passwd (root and nobody
	// are in it too), so the host is recognised by the users only it has.
	var hostOnlyUsers []string
	passwd, _ := os.ReadFile("/etc/passwd")
	for _, line := range strings.Split(string(passwd), "\n") {
		if user, _, ok := strings.Cut(line, ":"); ok && user != "root" && user != "nobody" && user != "trawler" {
			hostOnlyUsers = append(hostOnlyUsers, "\n"+user+":x:")
		}
	}
	require.NotEmpty(t, hostOnlyUsers, "the host's /etc/passwd names no users of its own")
	dataDir := ts.Config.DataDir
	for _, u := range []string{"file://" + dataDir + "/", "file://" + dataDir + "/trawler.db", "file://" + dataDir + "/trawler.db-wal",
		"file://" + filepath.Join(dataDir, "browsers", vs.BrowserID()) + "/", "file:///etc/shadow", "file:///etc/passwd", "file:///"} {
		got := open(page, u)
		assert.NotContains(t, got, secret, "%s showed team A's page", u)
		assert.NotContains(t, got, "trawler.db", "%s listed the data directory", u)
		for _, user := range hostOnlyUsers {
			assert.NotContains(t, got, user, "%s showed the host's users", u)
		}
	}
	if ts.Config.Runtime != "docker" {
		// The victim's browser, seen through /proc as root would.
		pid := ts.browserPID(vs)
		for _, u := range []string{"file:///proc/" + strconv.Itoa(pid) + "/root/tmp/", "file:///proc/" + strconv.Itoa(pid) + "/environ"} {
			got := open(page, u)
			assert.NotContains(t, got, "trawler-user-data", "%s showed the other browser's files", u)
			assert.NotContains(t, got, "HOME", "%s showed the other browser's environment", u)
		}
	}

	// A download told to land in the data directory does not.
	before, _ := os.ReadDir(dataDir)
	var bc struct{ BrowserContextID string }
	require.NoError(t, conn.Call(ctx, "", "Target.createBrowserContext", nil, &bc))
	require.NoError(t, conn.Call(ctx, "", "Browser.setDownloadBehavior", map[string]any{"behavior": "allow",
		"downloadPath": dataDir, "browserContextId": bc.BrowserContextID, "eventsEnabled": true}, nil))
	var downloaded atomic.Bool
	conn.OnEvent(func(e cdp.Event) {
		var p struct{ State string }
		if e.Method == "Browser.downloadProgress" && jsonUnmarshal(e.Params, &p) == nil && (p.State == "completed" || p.State == "canceled") {
			downloaded.Store(true)
		}
	})
	dl := tab(map[string]any{"url": "about:blank", "browserContextId": bc.BrowserContextID})
	open(dl, site.URL+"/download")
	polltest.Until(t, 20*time.Second, "the download to end", downloaded.Load)
	after, _ := os.ReadDir(dataDir)
	assert.Equal(t, names(before), names(after), "a download landed in the data directory")

	// A browser context with no proxy, or another one, reaches neither a
	// loopback site nor Trawler.
	marker := uuid.NewString()
	for _, proxy := range []string{"direct://", strings.Replace(site.URL, "127.0.0.1", "localhost", 1)} {
		var c struct{ BrowserContextID string }
		require.NoError(t, conn.Call(ctx, "", "Target.createBrowserContext", map[string]any{"proxyServer": proxy}, &c))
		sid := tab(map[string]any{"url": "about:blank", "browserContextId": c.BrowserContextID})
		open(sid, site.URL+"/?bypass="+marker)
		open(sid, ts.URL+"/metrics?bypass="+marker)
	}
	assert.Zero(t, hits.Load(), "a context around the egress proxy reached a loopback site")
	assert.Empty(t, ts.requests.containing(marker), "a context around the egress proxy reached Trawler")
}

func names(entries []os.DirEntry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// TestUnconfinedHostRefusesSessions: where browsers cannot be confined
// (here: no bubblewrap), the service says so in its health answer and
// refuses sessions with a 503 that names the way out, while scrapes go on;
// an operator who allows it gets sessions.
func TestUnconfinedHostRefusesSessions(t *testing.T) {
	t.Parallel()
	if os.Getenv("TRAWLER_TEST_RUNTIME") == "docker" {
		t.Skip("the docker runtime confines browsers in their containers")
	}
	ts := start(t, map[string]string{"TRAWLER_BWRAP": "/nonexistent/bwrap", "TRAWLER_WARM_BROWSERS": "0"})
	h := ts.do("GET", "/healthz", "", nil)
	require.Equal(t, 200, h.Status)
	b, _ := h.Body["browsers"].(map[string]any)
	assert.Equal(t, false, b["confined"], "health: %s", h.Raw)
	assert.Equal(t, false, b["sessions"], "health: %s", h.Raw)
	assert.Contains(t, b["detail"], "bubblewrap", "health: %s", h.Raw)
	assert.Contains(t, ts.logs.String(), "browsers cannot be confined", "no log line says the browsers are not confined")

	r := ts.do("POST", "/v2/browser", keyAcme, map[string]any{})
	require.Equal(t, 503, r.Status, "%s", r.Raw)
	assert.Contains(t, r.str("error"), "TRAWLER_ALLOW_UNCONFINED_SESSIONS", "%s", r.Raw)

	allowed := start(t, map[string]string{"TRAWLER_BWRAP": "/nonexistent/bwrap", "TRAWLER_ALLOW_UNCONFINED_SESSIONS": "true"})
	h = allowed.do("GET", "/healthz", "", nil)
	b, _ = h.Body["browsers"].(map[string]any)
	assert.Equal(t, true, b["sessions"], "health: %s", h.Raw)
	s := allowed.create(keyAcme, nil)
	c := dialCDP(t, s.str("cdpUrl"))
	_, err := c.call("Browser.getVersion", nil)
	require.NoError(t, err, "an allowed unconfined session answers")

	h = start(t, nil).do("GET", "/healthz", "", nil)
	b, _ = h.Body["browsers"].(map[string]any)
	assert.Equal(t, true, b["confined"], "a host with bubblewrap: %s", h.Raw)
}
