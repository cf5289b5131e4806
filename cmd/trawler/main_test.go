package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/model/modeltest"
	"github.com/trawler-dev/trawler/test/logtest"
	"github.com/trawler-dev/trawler/test/pgdb"
	"github.com/trawler-dev/trawler/test/polltest"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "trawler-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "trawler")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building trawler: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type proc struct {
	cmd    *exec.Cmd
	addr   string
	stderr *logtest.Buffer
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// startBinary runs `trawler serve` with dataDir and addr, plus extra
// NAME=value settings.
func startBinary(t *testing.T, dataDir, addr string, extra ...string) *proc {
	t.Helper()
	cmd := exec.Command(binary, "serve")
	cmd.Env = append(os.Environ(), "TRAWLER_DATA_DIR="+dataDir, "TRAWLER_ADDR="+addr,
		"TRAWLER_API_KEYS=acme:acme-key-0001", "TRAWLER_WARM_BROWSERS=1")
	if pgdb.Enabled() && !slices.ContainsFunc(extra, func(e string) bool { return strings.HasPrefix(e, "TRAWLER_DATABASE_URL=") }) {
		cmd.Env = append(cmd.Env, "TRAWLER_DATABASE_URL="+pgdb.For(t, dataDir))
	}
	cmd.Env = append(cmd.Env, extra...)
	p := &proc{cmd: cmd, addr: addr, stderr: &logtest.Buffer{}}
	cmd.Stderr = p.stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		// The killed service's browsers leave on their own when their
		// DevTools pipe closes; the data directory is removed after them,
		// or a browser still writing its profile makes RemoveAll fail.
		// Polled by hand: one still there at the deadline is killed, which
		// is no failure of the test.
		deadline := time.Now().Add(15 * time.Second)
		for len(browserPIDs(dataDir)) > 0 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		for _, pid := range browserPIDs(dataDir) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if t.Failed() {
			t.Logf("service log:\n%s", p.stderr)
		}
	})
	polltest.UntilState(t, 20*time.Second, "the service to come up", func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	}, func() string { return "its log:\n" + p.stderr.String() })
	return p
}

func (p *proc) call(t *testing.T, method, path string) map[string]any {
	t.Helper()
	_, out := p.send(t, method, path, "{}")
	return out
}

// send calls the service with a JSON body and returns the status and the
// decoded answer. It is safe to use from several goroutines.
func (p *proc) send(t *testing.T, method, path, body string) (int, map[string]any) {
	req, _ := http.NewRequest(method, "http://"+p.addr+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer acme-key-0001")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if !assert.NoError(t, err, "%s %s", method, path) {
		return 0, nil
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// browserPIDs lists the pids of Chromium processes using a directory under
// dataDir.
func browserPIDs(dataDir string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	// An unconfined browser names its directory; a confined one's sandbox
	// its marker.
	marker := []byte("--user-data-dir=" + filepath.Join(dataDir, "browsers") + "/")
	confined := []byte(strings.TrimSuffix(browsers.Marker(filepath.Join(dataDir, "browsers"), ""), "/"))
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && (bytes.Contains(raw, marker) || bytes.Contains(raw, confined)) {
			if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && strings.Contains(string(st), ") Z ") {
				continue // a zombie waiting for its parent is gone for our purposes
			}
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestRestartAfterKillReapsOrphans kills the service with SIGKILL: its
// confined browsers die with it (bubblewrap's --die-with-parent), and the
// restarted service removes what the killed run left of them and marks its
// sessions destroyed. (browsers.TestReapKillsBrowsersOfAnEarlierRun reaps
// browsers that still run.)
func TestRestartAfterKillReapsOrphans(t *testing.T) {
	dataDir, addr := t.TempDir(), freeAddr(t)
	p := startBinary(t, dataDir, addr)
	s := p.call(t, "POST", "/v2/browser")
	id, _ := s["id"].(string)
	require.NotEmpty(t, id, "POST /v2/browser: %v", s)
	polltest.Until(t, 20*time.Second, "the warm browser and the session's browser", func() bool {
		return len(browserPIDs(dataDir)) >= 2
	})
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()
	polltest.Until(t, 10*time.Second, "the killed service's browsers to die with it", func() bool {
		return len(browserPIDs(dataDir)) == 0
	})
	left, err := os.ReadDir(filepath.Join(dataDir, "browsers"))
	require.NoError(t, err)
	require.NotEmpty(t, left, "the killed run left no browser directory: the test cannot show reaping")

	p2 := startBinary(t, dataDir, addr)
	for _, d := range left {
		assert.NoDirExists(t, filepath.Join(dataDir, "browsers", d.Name()), "the killed run's browser directory after the restart")
	}
	g := p2.call(t, "GET", "/v2/browser/"+id)
	if g["status"] != "destroyed" || g["endReason"] != "service restarted" {
		t.Fatalf("the killed run's session after restart: %v", g)
	}
}

func TestSIGTERMClosesSessionsAndBrowsers(t *testing.T) {
	dataDir, addr := t.TempDir(), freeAddr(t)
	p := startBinary(t, dataDir, addr)
	s := p.call(t, "POST", "/v2/browser")
	cdpURL, _ := s["cdpUrl"].(string)
	ws, _, err := websocket.DefaultDialer.Dial(cdpURL, nil)
	require.NoError(t, err)
	defer ws.Close()
	p.cmd.Process.Signal(syscall.SIGTERM)
	ws.SetReadDeadline(time.Now().Add(15 * time.Second))
	_, _, err = ws.ReadMessage()
	ce, ok := err.(*websocket.CloseError)
	if !ok || ce.Code != websocket.CloseGoingAway || !strings.Contains(ce.Text, "shutting down") {
		t.Fatalf("client saw %v, want a 1001 close frame naming the shutdown", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	select {
	case err := <-exited:
		require.NoError(t, err, "service exit")
	case <-time.After(20 * time.Second):
		t.Fatal("service did not exit after SIGTERM")
	}
	require.Empty(t, browserPIDs(dataDir), "browsers left after shutdown")
	entries, _ := os.ReadDir(filepath.Join(dataDir, "browsers"))
	require.Empty(t, entries, "user-data directories left after shutdown")
}

func TestConfigErrorsNameTheSetting(t *testing.T) {
	cmd := exec.Command(binary, "serve")
	cmd.Env = append(os.Environ(), "TRAWLER_DATA_DIR="+t.TempDir(), "TRAWLER_POOL_SIZE=0", "TRAWLER_ADDR=0.0.0.0:0")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "serve started with an invalid configuration")
	for _, want := range []string{"TRAWLER_POOL_SIZE must be between 1 and 1000", "TRAWLER_ADDR", "local mode"} {
		require.Contains(t, string(out), want, "output")
	}
}

func TestScrapeCommand(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><title>CLI page</title></head><body><nav>Menu</nav><main><h1>Hello from the CLI</h1><p>`+
			strings.Repeat("Some words worth reading. ", 20)+`<a href="/next">next</a></p></main></body></html>`)
	}))
	defer site.Close()
	run := func(args ...string) (string, string, error) {
		cmd := exec.Command(binary, append([]string{"scrape"}, args...)...)
		cmd.Env = append(os.Environ(), "TRAWLER_ALLOW_PRIVATE_NETWORKS=true", "TRAWLER_DATA_DIR=")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	out, stderr, err := run(site.URL + "/page")
	if err != nil || !strings.HasPrefix(out, "# Hello from the CLI") || strings.Contains(out, "Menu") {
		t.Fatalf("trawler scrape: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
	}
	out, stderr, err = run("--format", "json", site.URL+"/page")
	var doc struct {
		Markdown string
		Metadata map[string]any
	}
	if err != nil || json.Unmarshal([]byte(out), &doc) != nil || doc.Metadata["title"] != "CLI page" {
		t.Fatalf("trawler scrape --format json: %v\n%s\n%s", err, out, stderr)
	}
	out, _, _ = run(site.URL+"/page", "--format", "links")
	require.Equal(t, site.URL+"/next", strings.TrimSpace(out), "--format links")
	if _, stderr, err := run(); err == nil || !strings.Contains(stderr, "a URL is required") {
		t.Fatalf("no URL: %v %s", err, stderr)
	}
	// Without the operator's consent, local targets are refused.
	cmd := exec.Command(binary, "scrape", site.URL)
	cmd.Env = append(os.Environ(), "TRAWLER_ALLOW_PRIVATE_NETWORKS=false")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "not allowed") {
		t.Fatalf("scrape of a loopback URL without consent: %v %s", err, out)
	}
}

// trawler scrape --schema/--prompt/--summary/--question print the model's
// answers; without a model they say which setting is missing.
func TestScrapeCommandWithModel(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><body><main><h1>Lantern</h1><p>`+strings.Repeat("A brass lantern for 64 euros. ", 10)+`</p></main></body></html>`)
	}))
	defer site.Close()
	llm := modeltest.Start(t)
	llm.Respond(func(r modeltest.Request) modeltest.Reply {
		if r.ResponseFormat != nil && r.ResponseFormat.Type == "json_schema" {
			return modeltest.Reply{Content: `{"price": 64}`}
		}
		return modeltest.Reply{Content: "A brass lantern."}
	})
	run := func(model bool, args ...string) (string, string, error) {
		cmd := exec.Command(binary, append([]string{"scrape"}, args...)...)
		cmd.Env = append(os.Environ(), "TRAWLER_ALLOW_PRIVATE_NETWORKS=true", "TRAWLER_DATA_DIR=")
		if model {
			cmd.Env = append(cmd.Env, "TRAWLER_LLM_BASE_URL="+llm.URL, "TRAWLER_LLM_MODEL="+modeltest.DefaultModel)
		}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	out, stderr, err := run(true, "--schema", `{"price": "number"}`, site.URL)
	require.NoError(t, err, stderr)
	assert.JSONEq(t, `{"price": 64}`, out)
	assert.Contains(t, llm.Requests()[0].User(), "# Lantern", "the model was sent the page's Markdown")
	out, stderr, err = run(true, "--summary", site.URL)
	require.NoError(t, err, stderr)
	assert.Equal(t, "A brass lantern.\n", out)
	_, stderr, err = run(false, "--question", "How much?", site.URL)
	require.Error(t, err)
	assert.Contains(t, stderr, "TRAWLER_LLM_BASE_URL")
	_, stderr, err = run(true, "--schema", `{"type": "nope"}`, site.URL)
	require.Error(t, err)
	assert.Contains(t, stderr, "--schema is not a valid JSON schema")
}
