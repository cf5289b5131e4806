package execute

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/browsers/browserstest"
	"github.com/trawler-dev/trawler/cdpproxy"
	"github.com/trawler-dev/trawler/sessions"
	"github.com/trawler-dev/trawler/store"
	"github.com/trawler-dev/trawler/test/polltest"
	"github.com/trawler-dev/trawler/wire"
)

func TestCappedOutput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		max     int
		writes  []string
		want    string
		dropped int64
	}{
		{"under the limit", 10, []string{"abc", "def"}, "abcdef", 0},
		{"at the limit", 6, []string{"abc", "def"}, "abcdef", 0},
		{"over the limit", 4, []string{"abc", "def", "gh"}, "abcd", 4},
		{"cut before a split character", 4, []string{"abcé"}, "abc", 2},
		{"nothing kept after the cut", 4, []string{"abcé", "x"}, "abc", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &capped{max: tc.max}
			for _, w := range tc.writes {
				n, err := c.Write([]byte(w))
				require.NoError(t, err)
				require.Equal(t, len(w), n, "a capped writer takes every byte")
			}
			assert.Equal(t, tc.dropped, c.dropped)
			if tc.dropped == 0 {
				assert.Equal(t, tc.want, c.String())
				return
			}
			assert.Equal(t, fmt.Sprintf("%s\n[output truncated by Trawler: %d more bytes not shown; the limit is %d bytes]\n", tc.want, tc.dropped, OutputLimit), c.String())
		})
	}
}

// A run's endpoint answers only under its token, and hands WebSocket
// upgrades to the CDP proxy as the session's own URL with the session's
// token, which the run never sees.
func TestEndpointRoutes(t *testing.T) {
	t.Parallel()
	var got *http.Request
	e := &endpoint{
		cdp:     http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r }),
		session: "sess-1", cdpToken: "cdp+secret", token: "run-token",
		version: func() map[string]any { return map[string]any{"Browser": "Chrome/1"} },
	}
	for _, tc := range []struct {
		name, path string
		upgrade    bool
		status     int
		forwarded  string // the proxied request URI, when forwarded
	}{
		{"wrong token", "/nope", true, 404, ""},
		{"token prefix only", "/run-tokenX", true, 404, ""},
		{"browser socket", "/run-token", true, 200, "/cdp/sess-1?token=cdp%2Bsecret"},
		{"page socket", "/run-token/devtools/page/ABC", true, 200, "/cdp/sess-1/devtools/page/ABC?token=cdp%2Bsecret"},
		{"version", "/run-token/json/version", false, 200, ""},
		{"list is not served", "/run-token/json/list", false, 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got = nil
			r := httptest.NewRequest("GET", "http://127.0.0.1:9222"+tc.path+"?token=ignored", nil)
			if tc.upgrade {
				r.Header.Set("Connection", "Upgrade")
				r.Header.Set("Upgrade", "websocket")
			}
			w := httptest.NewRecorder()
			e.ServeHTTP(w, r)
			require.Equal(t, tc.status, w.Code, w.Body.String())
			if tc.forwarded == "" {
				require.Nil(t, got, "forwarded to the proxy")
			} else {
				require.NotNil(t, got, "not forwarded to the proxy")
				assert.Equal(t, tc.forwarded, got.URL.RequestURI())
			}
			if tc.name == "version" {
				assert.Contains(t, w.Body.String(), `"webSocketDebuggerUrl":"ws://127.0.0.1:9222/run-token"`)
				assert.Contains(t, w.Body.String(), `"Browser":"Chrome/1"`)
			}
		})
	}
}

// rig is a real session (a local Chromium from the pool, the sessions
// manager, the CDP proxy) and an execute service of mode node on it.
type rig struct {
	svc  *Service
	mgr  *sessions.Manager
	site *httptest.Server
}

func newRig(t *testing.T, maxRuns int) *rig {
	t.Helper()
	pool, _ := browserstest.NewPool(t, browsers.PoolOptions{Size: 2, QueueWait: 30 * time.Second})
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "trawler.db"))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	mgr, err := sessions.NewManager(context.Background(), pool, st, log)
	require.NoError(t, err)
	t.Cleanup(mgr.Close)
	proxy := cdpproxy.New(mgr, wire.PublicURL{}, log)
	svc, err := New(Config{Mode: Node, CDP: proxy, Dir: t.TempDir(), Playwright: playwrightCore(t), MaxRuns: maxRuns, QueueWait: time.Second, Log: log})
	require.NoError(t, err)
	t.Cleanup(svc.Close)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<title>Test site</title><h1>Hello from the site</h1><input id="q"><button onclick="document.querySelector('h1').textContent = 'Clicked ' + document.querySelector('#q').value">go</button>`)
	}))
	t.Cleanup(site.Close)
	return &rig{svc: svc, mgr: mgr, site: site}
}

func (r *rig) session(t *testing.T) *sessions.Session {
	t.Helper()
	s, err := r.mgr.Create(context.Background(), sessions.CreateOptions{Team: "t", TeamLimit: 2, TTL: 5 * time.Minute, ActivityTTL: 5 * time.Minute})
	require.NoError(t, err)
	t.Cleanup(func() { s.End(sessions.Deleted) })
	return s
}

// playwrightCore is the test suite's playwright-core (make test-deps).
func playwrightCore(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../test/node/node_modules/playwright-core")
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, "package.json"))
	require.NoError(t, err, "playwright-core is missing: make test-deps installs it (npm ci in test/node)")
	return dir
}

// Mode node runs bash with the browser command and node with Playwright
// against the session, reports output and exit codes, kills a run at its
// timeout with what it started, and caps the output.
func TestLocalRuns(t *testing.T) {
	t.Parallel()
	r := newRig(t, 4)
	s := r.session(t)
	run := func(lang, code string, timeout time.Duration) Result {
		t.Helper()
		res, err := r.svc.Run(context.Background(), s, lang, code, timeout)
		require.NoError(t, err)
		return res
	}

	t.Run("bash", func(t *testing.T) {
		res := run(LangBash, "echo out; echo err >&2; exit 3", 30*time.Second)
		assert.Equal(t, Result{Stdout: "out\n", Stderr: "err\n", ExitCode: 3}, withoutDuration(res))
	})
	t.Run("browser command", func(t *testing.T) {
		res := run(LangBash, "browser open "+r.site.URL+" && browser type '#q' Trawler && browser click button && browser text h1 && browser title", time.Minute)
		assert.Equal(t, Result{Stdout: "Clicked Trawler\nTest site\n"}, withoutDuration(res), res.Stderr)
	})
	t.Run("node", func(t *testing.T) {
		// The page the browser command left is the session's active page.
		res := run(LangNode, `console.log(page.url()); return {title: await page.title(), contexts: browser.contexts().length, same: context === page.context()}`, time.Minute)
		assert.Equal(t, r.site.URL+"/\n"+`{
  "title": "Test site",
  "contexts": 1,
  "same": true
}
`, res.Stdout, res.Stderr)
		assert.Zero(t, res.ExitCode)
		res = run(LangNode, `throw new Error("boom")`, time.Minute)
		assert.Equal(t, 1, res.ExitCode)
		assert.True(t, strings.HasPrefix(res.Stderr, "Error: boom\n"), res.Stderr)
	})
	t.Run("timeout", func(t *testing.T) {
		began := time.Now()
		res := run(LangBash, "sleep 100 & echo started; wait", 2*time.Second)
		assert.Less(t, time.Since(began), 5*time.Second, "the run outlived its timeout")
		assert.True(t, res.Killed)
		assert.Equal(t, KilledExitCode, res.ExitCode)
		assert.Equal(t, "started\n", res.Stdout)
	})
	t.Run("output cap", func(t *testing.T) {
		res := run(LangBash, "head -c 3000000 /dev/zero | tr '\\0' x; echo done >&2", 30*time.Second)
		assert.True(t, res.Truncated)
		assert.Equal(t, strings.Repeat("x", OutputLimit)+"\n[output truncated by Trawler: 1951424 more bytes not shown; the limit is 1048576 bytes]\n", res.Stdout)
		assert.Equal(t, "done\n", res.Stderr)
	})
}

// What a run starts in the background is killed with it.
func TestLocalRunLeavesNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t, 1)
	s := r.session(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	res, err := r.svc.Run(context.Background(), s, LangBash, "sleep 100 & echo $! > "+pidFile, 30*time.Second)
	require.NoError(t, err)
	require.Zero(t, res.ExitCode, res.Stderr)
	raw, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	require.NoError(t, err)
	polltest.Until(t, 10*time.Second, fmt.Sprintf("the run's background process %d to end", pid), func() bool {
		return syscall.Kill(pid, 0) != nil
	})
}

// A session that ends during a run ends the run; a run waits for a free
// slot, and is refused when none frees in time.
func TestLocalRunEndsWithItsSession(t *testing.T) {
	t.Parallel()
	r := newRig(t, 1)
	s := r.session(t)
	done := make(chan error, 1)
	go func() {
		_, err := r.svc.Run(context.Background(), s, LangBash, "sleep 60", time.Minute)
		done <- err
	}()
	polltest.Until(t, 10*time.Second, "the run to take the only slot", func() bool { return len(r.svc.slots) == 1 })
	// The only slot is taken.
	_, err := r.svc.Run(context.Background(), s, LangBash, "true", time.Minute)
	require.ErrorIs(t, err, ErrBusy)
	s.End(sessions.Deleted)
	select {
	case err := <-done:
		var destroyed *sessions.DestroyedError
		require.True(t, errors.As(err, &destroyed), "run of an ended session: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("the run did not end with its session")
	}
}

// Off refuses; an unknown language is a bug of the caller.
func TestOff(t *testing.T) {
	t.Parallel()
	svc, err := New(Config{})
	require.NoError(t, err)
	_, err = svc.Run(context.Background(), nil, LangNode, "1", time.Second)
	require.ErrorIs(t, err, ErrDisabled)
}

func withoutDuration(r Result) Result {
	r.Duration = 0
	return r
}
