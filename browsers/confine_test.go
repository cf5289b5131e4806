package browsers_test

import (
	"context"
	"encoding/json"
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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/browsers/browserstest"
	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/test/polltest"
)

// TestConfinedBrowserReachesNothing drives a confined browser over
// Trawler's own, unfiltered channel, as a client that got every command
// past the CDP proxy would: it opens the host's files, another browser's
// files and Trawler's directory, downloads into a host directory, bypasses
// the egress proxy and looks for Trawler's environment. It gets nothing,
// while a control site reached through the proxy shows the browser works.
// Both ways of making the sandbox's proxy listener are tried: by Trawler
// in the sandbox's network namespace (as root), by the launcher inside it
// (as an unprivileged Trawler).
func TestConfinedBrowserReachesNothing(t *testing.T) {
	// Trawler's environment holds its secrets (TRAWLER_API_KEYS and the
	// like): none may reach a browser.
	t.Setenv("TRAWLER_SECRET_FOR_TEST", "do-not-leak")
	for _, launcher := range []bool{false, true} {
		t.Run(map[bool]string{false: "Trawler listens", true: "the launcher listens"}[launcher], func(t *testing.T) {
			dir := t.TempDir()
			rt := browserstest.Runtime(t, dir)
			if launcher {
				rt.Confinement = browsers.WithLauncher(rt.Confinement)
			}
			confinedReachesNothing(t, rt, dir)
		})
	}
}

func confinedReachesNothing(t *testing.T, rt *browsers.ProcessRuntime, dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	b, err := rt.Start(ctx, "victim-neighbour")
	require.NoError(t, err)
	defer b.Close()
	a, err := rt.Start(ctx, "attacker")
	require.NoError(t, err)
	defer a.Close()

	// What the attacker is after: a secret in the data directory, one in a
	// directory of the host, the neighbour's profile (its cookie store).
	secret := "secret-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trawler.db"), []byte(secret), 0o644))
	hostDir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(hostDir, "notes.txt"), []byte(secret), 0o644))
	require.NoError(t, os.Chmod(hostDir, 0o777))

	var hits atomic.Int32
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/download" {
			w.Header().Set("Content-Disposition", `attachment; filename="payload.txt"`)
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<title>control</title><p>control site</p><a id=d href=/download download>d</a>")
	}))
	defer site.Close()

	conn, err := a.CDP().Dial(ctx)
	require.NoError(t, err)
	defer conn.Close()
	page := newTab(t, ctx, conn, "")
	eval := func(sid, expr string) string {
		var r struct {
			Result struct{ Value string } `json:"result"`
		}
		require.NoError(t, conn.Call(ctx, sid, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r))
		return r.Result.Value
	}
	text := func() string { return eval(page, "document.documentElement.innerText") }
	navigate := func(sid, u string) {
		var r struct{ ErrorText string }
		require.NoError(t, conn.Call(ctx, sid, "Page.navigate", map[string]any{"url": u}, &r))
		// Page.navigate answers once the navigation committed (or failed):
		// what is left is the new document's load.
		polltest.Until(t, 20*time.Second, "the page to load "+u, func() bool { return eval(sid, "document.readyState") == "complete" })
	}

	// The control: a loopback site through the egress proxy loads.
	navigate(page, site.URL)
	require.Contains(t, text(), "control site", "the browser cannot load a site through its proxy: the test proves nothing")

	// Files of the host, of Trawler and of the other browser.
	neighbour := filepath.Join(dir, "victim-neighbour")
	for _, u := range []string{"file:///etc/shadow", "file:///etc/hostname", "file:///etc/passwd",
		"file://" + filepath.Join(dir, "trawler.db"), "file://" + filepath.Join(hostDir, "notes.txt"),
		"file://" + neighbour, "file://" + browsers.UserDataDir + "/../", "file:///proc/1/environ", "file:///root/"} {
		navigate(page, u)
		got := text()
		assert.NotContains(t, got, secret, "%s showed a host file", u)
		assert.NotContains(t, got, "root:", "%s showed the host's user database", u)
		assert.NotContains(t, got, "TRAWLER", "%s showed Trawler's environment", u)
		if h, err := os.ReadFile("/etc/hostname"); err == nil && len(strings.TrimSpace(string(h))) > 3 && u == "file:///etc/hostname" {
			assert.NotContains(t, got, strings.TrimSpace(string(h)), "the page shows the host's name")
		}
	}

	// A download told to land in a host directory lands in the sandbox.
	var ctxID struct{ BrowserContextID string }
	require.NoError(t, conn.Call(ctx, "", "Target.createBrowserContext", nil, &ctxID))
	dl := newTab(t, ctx, conn, ctxID.BrowserContextID)
	require.NoError(t, conn.Call(ctx, "", "Browser.setDownloadBehavior", map[string]any{"behavior": "allow",
		"downloadPath": hostDir, "browserContextId": ctxID.BrowserContextID, "eventsEnabled": true}, nil))
	var downloaded atomic.Bool
	conn.OnEvent(func(e cdp.Event) {
		var p struct{ State string }
		if e.Method == "Browser.downloadProgress" && json.Unmarshal(e.Params, &p) == nil && (p.State == "completed" || p.State == "canceled") {
			downloaded.Store(true)
		}
	})
	navigate(dl, site.URL+"/download")
	polltest.Until(t, 20*time.Second, "the download to end", downloaded.Load)
	entries, _ := os.ReadDir(hostDir)
	for _, e := range entries {
		assert.Equal(t, "notes.txt", e.Name(), "a download landed in the host directory %s", hostDir)
	}

	// A context with its own proxy, or none, reaches no host address.
	before := hits.Load()
	for _, proxy := range []string{"direct://", "http://" + strings.TrimPrefix(site.URL, "http://")} {
		var c struct{ BrowserContextID string }
		require.NoError(t, conn.Call(ctx, "", "Target.createBrowserContext", map[string]any{"proxyServer": proxy}, &c))
		tab := newTab(t, ctx, conn, c.BrowserContextID)
		navigate(tab, site.URL+"/bypass")
	}
	assert.Equal(t, before, hits.Load(), "a browser context around the egress proxy reached a loopback site")

	// The browser runs as the browser user with nothing of Trawler's
	// environment, its renderers under Chromium's seccomp sandbox.
	pids := processesOf(t, browserstest.PID(t, rt, a))
	require.NotEmpty(t, pids)
	conf := browserstest.Confinement(t)
	sandboxed := 0
	for _, pid := range pids {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		if uid := field(string(status), "Uid:"); os.Getuid() == 0 && uid != strconv.Itoa(conf.UID) {
			t.Errorf("process %d runs as uid %s, want %d", pid, uid, conf.UID)
		}
		if field(string(status), "Seccomp:") == "2" {
			sandboxed++
		}
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		assert.NotContains(t, string(env), "TRAWLER", "process %d has Trawler's environment", pid)
	}
	assert.NotZero(t, sandboxed, "no process of the browser runs under Chromium's seccomp sandbox")
}

// newTab opens a blank tab (in browser context bc, or the default one) and
// returns its flat session.
func newTab(t *testing.T, ctx context.Context, conn *cdp.Conn, bc string) string {
	t.Helper()
	params := map[string]any{"url": "about:blank"}
	if bc != "" {
		params["browserContextId"] = bc
	}
	var created struct{ TargetID string }
	require.NoError(t, conn.Call(ctx, "", "Target.createTarget", params, &created))
	var att struct{ SessionID string }
	require.NoError(t, conn.Call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": created.TargetID, "flatten": true}, &att))
	return att.SessionID
}

// processesOf lists the processes in pid's process group.
func processesOf(t *testing.T, pgid int) []int {
	t.Helper()
	return processes(func(proc string) bool {
		stat, err := os.ReadFile(filepath.Join(proc, "stat"))
		if err != nil {
			return false
		}
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		return len(f) > 2 && f[2] == strconv.Itoa(pgid)
	})
}

// processes lists the processes whose /proc directory keep takes.
func processes(keep func(proc string) bool) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && keep(filepath.Join("/proc", e.Name())) {
			out = append(out, pid)
		}
	}
	return out
}

// field is the first value of a /proc status line.
func field(status, name string) string {
	for _, l := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(l, name); ok {
			if f := strings.Fields(v); len(f) > 0 {
				return f[0]
			}
		}
	}
	return ""
}

// TestCloseEndsEveryProcessOfTheBrowser: once Close returns, no process of
// the confined browser is left in its pid namespace, the crash handler
// (which Chromium starts in a session of its own) included.
func TestCloseEndsEveryProcessOfTheBrowser(t *testing.T) {
	dir := t.TempDir()
	rt := browserstest.Runtime(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 3 {
		b, err := rt.Start(ctx, fmt.Sprintf("closed-%d", i))
		require.NoError(t, err)
		pids := processesOf(t, browserstest.PID(t, rt, b))
		require.NotEmpty(t, pids)
		ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pids[len(pids)-1]))
		require.NoError(t, err)
		require.NoError(t, b.Close())
		assert.Empty(t, inNamespace(ns), "processes of browser %d's namespace after Close", i)
	}
}

// inNamespace lists the live (not zombie) processes in pid namespace ns.
func inNamespace(ns string) []int {
	return processes(func(proc string) bool {
		if l, err := os.Readlink(filepath.Join(proc, "ns/pid")); err != nil || l != ns {
			return false
		}
		stat, err := os.ReadFile(filepath.Join(proc, "stat"))
		return err == nil && !strings.Contains(string(stat), ") Z ")
	})
}
