package cdp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/trawler-dev/trawler/test/polltest"
)

// pipeBrowser is a Chromium started with --remote-debugging-pipe.
type pipeBrowser struct {
	cmd *exec.Cmd
	mux *Mux
}

func chromium(t testing.TB) string {
	t.Helper()
	for _, p := range []string{os.Getenv("TRAWLER_CHROMIUM_PATH"), "chromium", "chromium-browser"} {
		if p == "" {
			continue
		}
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	t.Skip("no chromium on this machine")
	return ""
}

func startPipeBrowser(t testing.TB, opts MuxOptions) *pipeBrowser {
	t.Helper()
	toR, toW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fromR, fromW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(chromium(t), "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic", "--remote-debugging-pipe",
		"--user-data-dir="+t.TempDir(), "about:blank")
	cmd.ExtraFiles = []*os.File{toR, fromW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	toR.Close()
	fromW.Close()
	b := &pipeBrowser{cmd: cmd, mux: NewMux(fromR, toW, closers{toW, fromR}, opts)}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		b.mux.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.mux.Start(ctx); err != nil {
		t.Fatalf("starting the mux: %v", err)
	}
	return b
}

type closers []io.Closer

func (c closers) Close() error {
	var errs []error
	for _, x := range c {
		errs = append(errs, x.Close())
	}
	return errors.Join(errs...)
}

// raw is a test client that speaks raw messages over a channel.
type raw struct {
	t      *testing.T
	ch     *Channel
	nextID int
	events []map[string]any
}

func (r *raw) send(sessionID, method string, params any) int {
	r.t.Helper()
	r.nextID++
	m := map[string]any{"id": r.nextID, "method": method}
	if params != nil {
		m["params"] = params
	}
	if sessionID != "" {
		m["sessionId"] = sessionID
	}
	b, _ := json.Marshal(m)
	if err := r.ch.WriteMessage(b); err != nil {
		r.t.Fatalf("writing %s: %v", method, err)
	}
	return r.nextID
}

// reply waits for the reply to id, keeping events.
func (r *raw) reply(id int) map[string]any {
	r.t.Helper()
	for {
		msg, err := r.ch.ReadMessage()
		if err != nil {
			r.t.Fatalf("waiting for reply %d: %v", id, err)
		}
		var m map[string]any
		if err := json.Unmarshal(msg, &m); err != nil {
			r.t.Fatalf("a message that is not JSON: %q", msg)
		}
		if got, ok := m["id"].(float64); ok && int(got) == id {
			return m
		}
		r.events = append(r.events, m)
	}
}

func (r *raw) call(sessionID, method string, params any) map[string]any {
	r.t.Helper()
	m := r.reply(r.send(sessionID, method, params))
	if m["error"] != nil {
		r.t.Fatalf("%s: %v", method, m["error"])
	}
	res, _ := m["result"].(map[string]any)
	return res
}

func open(t *testing.T, m *Mux, target string) *raw {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch, err := m.Open(ctx, target)
	if err != nil {
		t.Fatalf("opening a channel: %v", err)
	}
	t.Cleanup(func() { ch.Close() })
	return &raw{t: t, ch: ch}
}

// TestMuxChannels drives one browser from two channels the way Playwright
// and Puppeteer drive a browser over a WebSocket: flat sessions, auto-attach,
// page endpoints. Each channel sees only its own sessions.
func TestMuxChannels(t *testing.T) {
	b := startPipeBrowser(t, MuxOptions{})
	a := open(t, b.mux, "")
	if v := a.call("", "Browser.getVersion", nil); !strings.Contains(fmt.Sprint(v["product"]), "Chrome") {
		t.Fatalf("Browser.getVersion through a channel: %v", v)
	}
	created := a.call("", "Target.createTarget", map[string]any{"url": "about:blank"})
	target := created["targetId"].(string)
	att := a.call("", "Target.attachToTarget", map[string]any{"targetId": target, "flatten": true})
	sid := att["sessionId"].(string)
	res := a.call(sid, "Runtime.evaluate", map[string]any{"expression": "6*7", "returnByValue": true})
	if v := res["result"].(map[string]any)["value"]; v != float64(42) {
		t.Fatalf("Runtime.evaluate in a flat session: %v", res)
	}

	// Another channel cannot address the first one's session.
	other := open(t, b.mux, "")
	m := other.reply(other.send(sid, "Runtime.evaluate", map[string]any{"expression": "1"}))
	if m["error"] == nil {
		t.Fatalf("a channel used another's session: %v", m)
	}

	// Auto-attach reports new tabs to the channel that asked, as flat
	// sessions it can drive.
	other.call("", "Target.setAutoAttach", map[string]any{"autoAttach": true, "waitForDebuggerOnStart": false, "flatten": true})
	a.call("", "Target.createTarget", map[string]any{"url": "about:blank"})
	var auto string
	deadline := time.Now().Add(10 * time.Second)
	for auto == "" && time.Now().Before(deadline) {
		other.reply(other.send("", "Browser.getVersion", nil))
		for _, e := range other.events {
			if e["method"] == "Target.attachedToTarget" {
				auto = e["params"].(map[string]any)["sessionId"].(string)
			}
			if e["sessionId"] != nil && e["method"] == "Target.attachedToTarget" {
				t.Errorf("a browser-level event carried the channel's own sessionId: %v", e)
			}
		}
	}
	if auto == "" {
		t.Fatal("no Target.attachedToTarget on the auto-attaching channel")
	}
	if res := other.call(auto, "Runtime.evaluate", map[string]any{"expression": "'auto'", "returnByValue": true}); res["result"].(map[string]any)["value"] != "auto" {
		t.Fatalf("evaluate in an auto-attached session: %v", res)
	}

	// A page channel is the page's own endpoint: no sessionId needed.
	p := open(t, b.mux, target)
	if res := p.call("", "Runtime.evaluate", map[string]any{"expression": "document.URL", "returnByValue": true}); res["result"].(map[string]any)["value"] != "about:blank" {
		t.Fatalf("page channel: %v", res)
	}
	if list := b.mux.Targets(context.Background()); len(list) < 3 || list[0].Type != "page" {
		t.Fatalf("Targets: %+v", list)
	}
	// Closing the page ends its channel.
	a.call("", "Target.closeTarget", map[string]any{"targetId": target})
	select {
	case <-p.ch.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the page channel outlived its page")
	}
}

// TestMuxDetachReleasesInterception: a client that paused requests and went
// away must not leave the page hanging, as a WebSocket client that
// disconnects does not.
func TestMuxDetachReleasesInterception(t *testing.T) {
	var hits atomic.Int32
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "<title>served</title>")
	}))
	defer site.Close()
	b := startPipeBrowser(t, MuxOptions{})
	a := open(t, b.mux, "")
	target := a.call("", "Target.createTarget", map[string]any{"url": "about:blank"})["targetId"].(string)
	sid := a.call("", "Target.attachToTarget", map[string]any{"targetId": target, "flatten": true})["sessionId"].(string)
	a.call(sid, "Fetch.enable", map[string]any{"patterns": []any{map[string]any{"urlPattern": "*"}}})
	a.send(sid, "Page.navigate", map[string]any{"url": site.URL})
	// Wait for the request to be paused, then go away.
	for deadline := time.Now().Add(10 * time.Second); ; {
		a.reply(a.send("", "Browser.getVersion", nil))
		paused := false
		for _, e := range a.events {
			paused = paused || e["method"] == "Fetch.requestPaused"
		}
		if paused {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no Fetch.requestPaused")
		}
	}
	a.ch.Close()
	p := open(t, b.mux, target)
	var title any
	polltest.UntilState(t, 10*time.Second, "the page to be served after its interceptor left", func() bool {
		res := p.call("", "Runtime.evaluate", map[string]any{"expression": "document.title", "returnByValue": true})
		title = res["result"].(map[string]any)["value"]
		return title == "served"
	}, func() string { return fmt.Sprintf("title %v, %d hits", title, hits.Load()) })
}

// TestMuxExitsWithPipe: a browser whose pipe closes (Trawler killed) exits.
func TestMuxExitsWithPipe(t *testing.T) {
	b := startPipeBrowser(t, MuxOptions{})
	exited := make(chan error, 1)
	go func() { exited <- b.cmd.Wait() }()
	b.mux.Close()
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		t.Fatal("the browser kept running after its DevTools pipe closed")
	}
}
