package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/config"
	"github.com/trawler-dev/trawler/service"
	"github.com/trawler-dev/trawler/sessions"
	"github.com/trawler-dev/trawler/test/logtest"
	"github.com/trawler-dev/trawler/test/pgdb"
)

const (
	keyAcme   = "acme-secret-key-1"
	keyGlobex = "globex-secret-key-2"
)

type testService struct {
	*service.Service
	URL string // http://127.0.0.1:port
	t   *testing.T
	// logs holds everything the service logged.
	logs *logtest.Buffer
	// requests records the URI of every request the service was sent.
	requests *requestLog
}

// requestLog records request URIs.
type requestLog struct {
	mu   sync.Mutex
	uris []string
}

func (l *requestLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.uris = append(l.uris, r.Method+" "+r.URL.RequestURI())
		l.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// containing returns the recorded requests whose line contains s.
func (l *requestLog) containing(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, u := range l.uris {
		if strings.Contains(u, s) {
			out = append(out, u)
		}
	}
	return out
}

// start runs a service on a loopback port with two teams (acme, globex)
// unless env overrides TRAWLER_API_KEYS.
func start(t *testing.T, env map[string]string) *testService {
	t.Helper()
	vars := map[string]string{
		"TRAWLER_DATA_DIR":      dataDir(t),
		"TRAWLER_API_KEYS":      "acme:" + keyAcme + ",globex:" + keyGlobex,
		"TRAWLER_WARM_BROWSERS": "1",
		"TRAWLER_POOL_SIZE":     "6",
		"TRAWLER_QUEUE_WAIT":    "2s",
		// No browser prepared for single scrapes at start: most tests count
		// the pool's browsers (TestSpareTabs has them).
		"TRAWLER_SPARE_TABS": "0",
	}
	// make test-docker runs the session suites again with browsers in
	// containers.
	if rt := os.Getenv("TRAWLER_TEST_RUNTIME"); rt != "" {
		vars["TRAWLER_RUNTIME"] = rt
	}
	for k, v := range env {
		vars[k] = v
	}
	// make test-postgres-all runs the suite again on PostgreSQL: a
	// database for each data directory.
	if _, set := vars["TRAWLER_DATABASE_URL"]; !set && pgdb.Enabled() {
		vars["TRAWLER_DATABASE_URL"] = pgdb.For(t, vars["TRAWLER_DATA_DIR"])
	}
	cfg, err := config.FromEnv(func(k string) string { return vars[k] })
	require.NoError(t, err, "config")
	level := slog.LevelInfo
	var out io.Writer = io.Discard
	if os.Getenv("TRAWLER_TEST_DEBUG") != "" {
		level, out = slog.LevelDebug, os.Stderr
	}
	logs := &logtest.Buffer{}
	// Warnings and errors go to stderr as before; the test can read all.
	log := slog.New(slog.NewTextHandler(io.MultiWriter(logs, levelWriter{out, os.Stderr}), &slog.HandlerOptions{Level: level}))
	svc, err := service.New(context.Background(), cfg, log)
	require.NoError(t, err, "service")
	requests := &requestLog{}
	srv := httptest.NewUnstartedServer(nil)
	srv.Config = service.Server(requests.wrap(svc.Handler()))
	srv.Listener = service.Listener(srv.Listener, cfg.MaxConnsPerAddress)
	srv.Start()
	svc.Listening(srv.Listener.Addr().String())
	t.Cleanup(func() {
		svc.Close()
		srv.Close()
	})
	return &testService{Service: svc, URL: srv.URL, t: t, logs: logs, requests: requests}
}

// dataDir is a test's data directory. It is removed after the service's
// cleanup as t.TempDir's would be, but a file written during the removal
// (a process of the closed service still exiting on a loaded machine) is
// named in the log and the removal tried again, rather than failing a test
// whose behaviour passed.
func dataDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "trawler-test-")
	require.NoError(t, err)
	t.Cleanup(func() {
		err := os.RemoveAll(dir)
		for i := 0; err != nil && i < 50; i++ {
			var late []string
			filepath.WalkDir(dir, func(p string, _ os.DirEntry, _ error) error {
				late = append(late, p)
				return nil
			})
			t.Logf("removing the data directory: %v; left: %v", err, late)
			time.Sleep(100 * time.Millisecond)
			err = os.RemoveAll(dir)
		}
		require.NoError(t, err, "removing the data directory")
	})
	return dir
}

// levelWriter sends lines of level WARN or ERROR to loud, the rest to quiet.
type levelWriter struct{ quiet, loud io.Writer }

func (w levelWriter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(" level=WARN ")) || bytes.Contains(p, []byte(" level=ERROR ")) {
		return w.loud.Write(p)
	}
	return w.quiet.Write(p)
}

type response struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

func (r response) str(key string) string {
	s, _ := r.Body[key].(string)
	return s
}

func (ts *testService) do(method, path, key string, body any) response {
	ts.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, ts.URL+path, rd)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(ts.t, err, "%s %s", method, path)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := response{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	json.Unmarshal(raw, &out.Body)
	return out
}

// create makes a session for key and fails the test unless it succeeds.
func (ts *testService) create(key string, body map[string]any) response {
	ts.t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	r := ts.do("POST", "/v2/browser", key, body)
	require.Equal(ts.t, 200, r.Status, "POST /v2/browser: %s", r.Raw)
	return r
}

// cdpClient is a raw CDP client over the proxy.
type cdpClient struct {
	t      *testing.T
	ws     *websocket.Conn
	next   int
	others []map[string]any // messages read that answered no call
}

func dialCDP(t *testing.T, url string) *cdpClient {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	ws, resp, err := d.Dial(url, nil)
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	require.NoError(t, err, "dialing %s (status %d)", url, status)
	ws.SetReadLimit(-1)
	t.Cleanup(func() { ws.Close() })
	return &cdpClient{t: t, ws: ws}
}

// call sends a command and waits for its reply, skipping events.
func (c *cdpClient) call(method string, params any) (map[string]any, error) {
	return c.callIn("", method, params)
}

// callIn sends a command to flat session sessionID ("" for the
// connection's own) and waits for its reply.
func (c *cdpClient) callIn(sessionID, method string, params any) (map[string]any, error) {
	c.next++
	id := c.next
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if sessionID != "" {
		msg["sessionId"] = sessionID
	}
	if err := c.ws.WriteJSON(msg); err != nil {
		return nil, err
	}
	m := c.replyTo(id)
	if e, ok := m["error"]; ok {
		return nil, fmt.Errorf("cdp error: %v", e)
	}
	res, _ := m["result"].(map[string]any)
	return res, nil
}

// replyTo reads until the reply to id, keeping the other messages.
func (c *cdpClient) replyTo(id int) map[string]any {
	c.t.Helper()
	c.ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		var m map[string]any
		err := c.ws.ReadJSON(&m)
		require.NoError(c.t, err, "waiting for the reply to %d", id)
		if n, ok := m["id"].(float64); ok && int(n) == id {
			return m
		}
		c.others = append(c.others, m)
	}
}

// seen returns the messages read so far that answer id.
func (c *cdpClient) seen(id int) []map[string]any {
	var out []map[string]any
	for _, m := range c.others {
		if n, ok := m["id"].(float64); ok && int(n) == id {
			out = append(out, m)
		}
	}
	return out
}

// waitClose reads until the connection closes and returns the close frame.
func (c *cdpClient) waitClose(within time.Duration) *websocket.CloseError {
	c.t.Helper()
	c.ws.SetReadDeadline(time.Now().Add(within))
	for {
		_, _, err := c.ws.ReadMessage()
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		require.ErrorAs(c.t, err, &ce, "connection ended without a close frame")
		return ce
	}
}

// killBrowser kills the browser behind session id from outside, as a crash
// or the out-of-memory killer would: its process, or its container.
func (ts *testService) killBrowser(id string) {
	ts.t.Helper()
	s, err := ts.Sessions.Lookup(context.Background(), id)
	require.NoError(ts.t, err, "lookup %s", id)
	if ts.Config.Runtime == "docker" {
		out, err := exec.Command("docker", "kill", "trawler-browser-"+s.BrowserID()).CombinedOutput()
		require.NoError(ts.t, err, "docker kill: %s", out)
		return
	}
	require.NoError(ts.t, syscall.Kill(ts.browserPID(s), syscall.SIGKILL))
}

// browserPID is the main process of a session's local browser.
func (ts *testService) browserPID(s *sessions.Session) int {
	ts.t.Helper()
	return readPID(ts.t, filepath.Join(ts.Config.DataDir, "browsers", s.BrowserID(), "trawler.pid"))
}

// readPID reads a local browser's pid file.
func readPID(t *testing.T, file string) int {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err, "reading pid")
	// The pid, then its start time.
	f := strings.Fields(string(raw))
	require.NotEmpty(t, f, "empty pid file %s", file)
	pid, _ := strconv.Atoi(f[0])
	return pid
}

func jsonUnmarshal(raw []byte, v any) error { return json.Unmarshal(raw, v) }
