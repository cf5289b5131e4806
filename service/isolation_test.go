package service_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/test/polltest"
)

// markerSite is a loopback site that records the requests carrying a
// marker and answers WebSocket handshakes, so that a test knows whether an
// attack could reach a server at all.
type markerSite struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newMarkerSite(t *testing.T) *markerSite {
	t.Helper()
	s := &markerSite{}
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.Method+" "+r.URL.RequestURI())
		s.mu.Unlock()
		if websocket.IsWebSocketUpgrade(r) {
			if c, err := up.Upgrade(w, r, nil); err == nil {
				c.Close()
			}
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<title>control</title><p>control site</p>")
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *markerSite) containing(marker string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range s.seen {
		if strings.Contains(l, marker) {
			out = append(out, l)
		}
	}
	return out
}

// attackJS is what the tester ran from a page: read another browser's
// DevTools (/json/list, /json/version), open a tab in it (PUT /json/new),
// drive it over a WebSocket, and read Trawler's API and metrics; against
// every base URL given. It resolves to what happened to each attempt; the
// servers' own logs say whether anything arrived.
const attackJS = `(async (bases, marker) => {
  const out = [];
  const tryFetch = async (u, method) => {
    try {
      // A PUT goes as CORS: its preflight is what reaches a server.
      const r = await fetch(u, {method, mode: method === 'GET' ? 'no-cors' : 'cors', cache: 'no-store'});
      out.push(method + ' ' + u + ' answered (' + r.type + ')');
    } catch (e) { out.push(method + ' ' + u + ' failed'); }
  };
  const tryWS = (u) => new Promise(done => {
    let ws;
    try { ws = new WebSocket(u); } catch (e) { out.push('ws ' + u + ' refused'); return done(); }
    const t = setTimeout(() => { out.push('ws ' + u + ' hung'); ws.close(); done(); }, 5000);
    ws.onopen = () => { out.push('ws ' + u + ' OPEN'); clearTimeout(t); ws.close(); done(); };
    ws.onerror = () => { out.push('ws ' + u + ' failed'); clearTimeout(t); done(); };
  });
  for (const b of bases) {
    const q = '?attack=' + marker;
    await tryFetch(b + '/json/list' + q, 'GET');
    await tryFetch(b + '/json/version' + q, 'GET');
    await tryFetch(b + '/json/new' + q, 'PUT');
    await tryFetch(b + '/metrics' + q, 'GET');
    await tryFetch(b + '/v2/browser' + q, 'GET');
    await tryWS(b.replace(/^http/, 'ws') + '/devtools/browser/x' + q);
  }
  return out;
})`

// TestPagesReachNeitherBrowsersNorTrawler replays, from inside team B's
// pages, the attack an outside tester ran: no browser listens on any port,
// and nothing on Trawler's own addresses (API, metrics, CDP proxy, egress
// proxy) is reachable from a session's page, from its CDP client's
// navigations or from a scrape's executeJavascript action, whether private
// networks are allowed or not. A control site on loopback proves that the
// same attempts do reach a server when the guard lets them. make
// test-docker runs it again on the docker runtime.
func TestPagesReachNeitherBrowsersNorTrawler(t *testing.T) {
	for _, allow := range []bool{false, true} {
		t.Run("private networks allowed "+strconv.FormatBool(allow), func(t *testing.T) {
			t.Parallel()
			ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": strconv.FormatBool(allow)})
			control := newMarkerSite(t)
			victim := ts.create(keyAcme, nil)
			attacker := ts.create(keyGlobex, nil)
			for _, id := range []string{victim.str("id"), attacker.str("id")} {
				ts.assertNoListeners(id)
			}

			bases := []string{ts.URL, control.URL}
			for _, a := range ts.Egress.Addrs() {
				bases = append(bases, "http://"+a)
			}
			pg := attachPage(t, attacker.str("cdpUrl"))
			pg.call("Page.navigate", map[string]any{"url": "data:text/html,<title>attacker</title>"}, nil)
			marker := uuid.NewString()
			raw := pg.eval(attackJS + "(" + mustJSON(bases) + "," + mustJSON(marker) + ")")
			t.Logf("attempts: %s", raw)

			// The client's own navigations go through the same proxy.
			for _, u := range []string{ts.URL + "/healthz?attack=" + marker, ts.URL + "/cdp/" + victim.str("id") + "/json/list?attack=" + marker} {
				var nav map[string]any
				pg.call("Page.navigate", map[string]any{"url": u}, &nav)
				// Page.navigate answers once the navigation committed (or
				// failed): what is left is the new document's load.
				polltest.Until(t, 20*time.Second, "the page to load "+u, func() bool { return pg.evalString("document.readyState") == "complete" })
				if body := pg.evalString("document.body ? document.body.innerText : ''"); strings.Contains(body, `"ok"`) || strings.Contains(body, "webSocketDebuggerUrl") {
					t.Errorf("navigating to %s showed Trawler's answer: %s", u, body)
				}
			}

			assert.Empty(t, ts.requests.containing(marker), "Trawler's own listener answered a page")
			reached := control.containing(marker)
			if allow && len(reached) < 6 {
				t.Errorf("with private networks allowed the control site saw %d of the attempts (%v): the harness cannot tell reachable from not", len(reached), reached)
			}
			if !allow {
				assert.Empty(t, reached, "with private networks refused a page reached a loopback site")
			}

			// The CDP client cannot open the host's files or leave the proxy.
			for _, tc := range []struct {
				method string
				params map[string]any
			}{
				{"Page.navigate", map[string]any{"url": "file:///etc/passwd"}},
				{"Page.navigate", map[string]any{"url": "file://" + ts.Config.DataDir + "/trawler.db"}},
				{"Target.createTarget", map[string]any{"url": "file:///etc/hostname"}},
				{"Target.createBrowserContext", map[string]any{"proxyServer": "direct://"}},
			} {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := pg.conn.Call(ctx, "", tc.method, tc.params, nil)
				cancel()
				if err == nil || !strings.Contains(err.Error(), "Trawler") {
					t.Errorf("%s %v: %v, want Trawler's refusal", tc.method, tc.params, err)
				}
			}

			if !allow {
				return
			}
			// A scrape's page attacks the same way (private networks must
			// be allowed for it to load a loopback page at all).
			r := ts.do("POST", "/v2/scrape", keyGlobex, map[string]any{"url": control.URL + "/page", "formats": []string{"markdown"},
				"actions": []map[string]any{{"type": "executeJavascript", "script": "return await " + attackJS + "(" + mustJSON(bases) + "," + mustJSON(marker+"-scrape") + ")"}}})
			require.Equal(t, 200, r.Status, "scrape with the attack: %s", r.Raw)
			assert.Empty(t, ts.requests.containing(marker+"-scrape"), "Trawler's own listener answered a scraped page")
			if got := control.containing(marker + "-scrape"); len(got) < 6 {
				t.Errorf("the scrape's script reached the control site %d times (%v): did it run?", len(got), got)
			}
		})
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// assertNoListeners checks that session id's browser accepts no TCP
// connection: a confined browser's network namespace (its container's, or
// its sandbox's) holds only the proxy port on loopback, which the shim or
// Trawler itself listens on; an unconfined browser's processes hold no
// listening socket.
func (ts *testService) assertNoListeners(id string) {
	ts.t.Helper()
	s, err := ts.Sessions.Lookup(context.Background(), id)
	require.NoError(ts.t, err)
	var inside string // a process in the browser's network namespace
	var pgid int
	if ts.Config.Runtime == "docker" {
		out, err := exec.Command("docker", "inspect", "-f", "{{.State.Pid}}", "trawler-browser-"+s.BrowserID()).Output()
		require.NoError(ts.t, err, "docker inspect")
		inside = strings.TrimSpace(string(out))
	} else {
		// A confined browser's sandbox starts with the child of its
		// bubblewrap (Chromium's renderers have namespaces of their own).
		pgid = ts.browserPID(s)
		own, _ := os.Readlink("/proc/self/ns/net")
		for _, p := range groupProcesses(pgid) {
			ns, err := os.Readlink("/proc/" + p + "/ns/net")
			if stat, _ := os.ReadFile("/proc/" + p + "/stat"); err == nil && ns != own &&
				strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))[1] == strconv.Itoa(pgid) {
				inside = p
			}
		}
	}
	if inside != "" {
		var listening []string
		for _, f := range []string{"tcp", "tcp6"} {
			listening = append(listening, listeningSockets(ts.t, "/proc/"+inside+"/net/"+f, nil)...)
		}
		// 00000000:0C38 is *:3128, the proxy port: in a namespace that
		// holds only loopback (each browser context dials its own 127/8
		// address there).
		if len(listening) != 1 || !strings.HasPrefix(listening[0], "00000000:0C38") {
			ts.t.Errorf("the browser's network namespace listens on %v, want only the proxy's *:3128", listening)
		}
		return
	}
	inodes := map[string]bool{}
	for _, p := range groupProcesses(pgid) {
		fds, _ := os.ReadDir(filepath.Join("/proc", p, "fd"))
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join("/proc", p, "fd", fd.Name())); err == nil && strings.HasPrefix(l, "socket:[") {
				inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
			}
		}
	}
	var listening []string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		listening = append(listening, listeningSockets(ts.t, f, inodes)...)
	}
	assert.Empty(ts.t, listening, "the browser of session %s listens", id)
}

// groupProcesses lists the pids of process group pgid.
func groupProcesses(pgid int) []string {
	var out []string
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		stat, err := os.ReadFile(filepath.Join("/proc", p.Name(), "stat"))
		if err != nil {
			continue
		}
		// The fields after the command name: state, ppid, pgrp.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) >= 3 && f[2] == strconv.Itoa(pgid) {
			out = append(out, p.Name())
		}
	}
	return out
}

// listeningSockets returns the local addresses of the listening sockets in
// a /proc/net/tcp table, only those with one of inodes when it is not nil.
func listeningSockets(t *testing.T, table string, inodes map[string]bool) []string {
	t.Helper()
	f, err := os.Open(table)
	require.NoError(t, err)
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		col := strings.Fields(sc.Text())
		if len(col) < 10 || col[3] != "0A" { // 0A: LISTEN
			continue
		}
		if inodes == nil || inodes[col[9]] {
			out = append(out, col[1])
		}
	}
	return out
}
