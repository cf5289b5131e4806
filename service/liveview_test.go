package service_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/jpeg"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/test/polltest"
)

// liveViewer is a live-view socket as the page opens it, read by a
// goroutine that keeps the JSON messages and the newest frame.
type liveViewer struct {
	t  *testing.T
	ws *websocket.Conn

	mu     sync.Mutex
	msgs   []map[string]any
	frame  *liveFrame
	frames int
	closed *websocket.CloseError
	done   chan struct{}
}

type liveFrame struct {
	Head map[string]any
	JPEG []byte
	At   time.Time
}

// liveSocketURL turns a live-view URL into its socket's URL.
func liveSocketURL(live string) string {
	u, _ := url.Parse(live)
	u.Scheme = "ws"
	u.Path += "/ws"
	return u.String()
}

func dialLive(t *testing.T, live string) *liveViewer {
	t.Helper()
	u, _ := url.Parse(live)
	h := http.Header{"Origin": {"http://" + u.Host}}
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	ws, resp, err := d.Dial(liveSocketURL(live)+"&width=800&height=600&dpr=1", h)
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	require.NoError(t, err, "dialing the live view (status %d)", status)
	v := &liveViewer{t: t, ws: ws, done: make(chan struct{})}
	t.Cleanup(func() { ws.Close() })
	go v.read()
	return v
}

func (v *liveViewer) read() {
	defer close(v.done)
	for {
		mt, b, err := v.ws.ReadMessage()
		if err != nil {
			v.mu.Lock()
			if ce, ok := err.(*websocket.CloseError); ok {
				v.closed = ce
			}
			v.mu.Unlock()
			return
		}
		v.mu.Lock()
		if mt == websocket.BinaryMessage && len(b) > 4 {
			n := binary.BigEndian.Uint32(b)
			f := &liveFrame{At: time.Now(), JPEG: b[4+n:]}
			json.Unmarshal(b[4:4+n], &f.Head)
			v.frame = f
			v.frames++
		} else if mt == websocket.TextMessage {
			var m map[string]any
			json.Unmarshal(b, &m)
			v.msgs = append(v.msgs, m)
		}
		v.mu.Unlock()
	}
}

func (v *liveViewer) send(m map[string]any) {
	v.t.Helper()
	require.NoError(v.t, v.ws.WriteJSON(m), "sending %v", m)
}

// message waits for a JSON message that match accepts.
func (v *liveViewer) message(d time.Duration, what string, match func(map[string]any) bool) map[string]any {
	v.t.Helper()
	var found map[string]any
	defer func() {
		if found == nil {
			v.mu.Lock()
			v.t.Logf("messages so far: %v", v.msgs)
			v.mu.Unlock()
		}
	}()
	polltest.Until(v.t, d, what, func() bool {
		v.mu.Lock()
		defer v.mu.Unlock()
		for _, m := range v.msgs {
			if match(m) {
				found = m
				return true
			}
		}
		return false
	})
	return found
}

func (v *liveViewer) count(typ string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := 0
	for _, m := range v.msgs {
		if m["type"] == typ {
			n++
		}
	}
	return n
}

// colourFrame waits for a frame whose pixel at (fx, fy), fractions of the
// frame, is near want.
func (v *liveViewer) colourFrame(d time.Duration, fx, fy float64, want [3]int) *liveFrame {
	v.t.Helper()
	last := "no frame"
	var found *liveFrame
	polltest.UntilState(v.t, d, fmt.Sprintf("a frame with %v at %.2f,%.2f", want, fx, fy), func() bool {
		v.mu.Lock()
		f := v.frame
		v.mu.Unlock()
		if f == nil {
			return false
		}
		img, err := jpeg.Decode(bytes.NewReader(f.JPEG))
		require.NoError(v.t, err, "a frame is not a JPEG")
		c := pixel(img, fx, fy)
		if near(c, want, 24) {
			found = f
			return true
		}
		last = fmt.Sprint(c)
		return false
	}, func() string { return "the last had " + last })
	return found
}

func pixel(img image.Image, fx, fy float64) [3]int {
	b := img.Bounds()
	r, g, bl, _ := img.At(b.Min.X+int(fx*float64(b.Dx())), b.Min.Y+int(fy*float64(b.Dy()))).RGBA()
	return [3]int{int(r >> 8), int(g >> 8), int(bl >> 8)}
}

func near(c, want [3]int, tol int) bool {
	for i := range c {
		if d := c[i] - want[i]; d > tol || d < -tol {
			return false
		}
	}
	return true
}

// livePage drives the session's tab over its cdpUrl, as an agent would.
type livePage struct {
	t       *testing.T
	conn    *cdp.Conn
	session string
}

func attachPage(t *testing.T, cdpURL string) *livePage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := cdp.Dial(ctx, cdpURL)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	var targets struct {
		TargetInfos []struct {
			TargetID string `json:"targetId"`
			Type     string `json:"type"`
		} `json:"targetInfos"`
	}
	require.NoError(t, conn.Call(ctx, "", "Target.getTargets", nil, &targets))
	for _, ti := range targets.TargetInfos {
		if ti.Type != "page" {
			continue
		}
		var at struct {
			SessionID string `json:"sessionId"`
		}
		require.NoError(t, conn.Call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": ti.TargetID, "flatten": true}, &at))
		return &livePage{t: t, conn: conn, session: at.SessionID}
	}
	t.Fatal("the session has no page")
	return nil
}

func (p *livePage) call(method string, params, result any) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(p.t, p.conn.Call(ctx, p.session, method, params, result), "%s", method)
}

func (p *livePage) eval(expr string) json.RawMessage {
	p.t.Helper()
	var r cdp.EvalResult
	p.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &r)
	require.Empty(p.t, r.Exception(), "evaluating %s", expr)
	return r.Result.Value
}

func (p *livePage) evalString(expr string) string {
	p.t.Helper()
	var s string
	json.Unmarshal(p.eval(expr), &s)
	return s
}

func (p *livePage) navigate(u string) {
	p.t.Helper()
	p.call("Page.navigate", map[string]any{"url": u}, nil)
	polltest.Until(p.t, 10*time.Second, "the page to load "+u, func() bool {
		return p.evalString("location.href + ' ' + document.readyState") == strings.TrimSuffix(u, "#")+" complete"
	})
}

// liveSite serves the pages the live-view tests show.
func liveSite(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		colour := r.URL.Query().Get("colour")
		if colour == "" {
			colour = "#ff0000"
		}
		io.WriteString(w, `<!doctype html><title>`+r.URL.Path+`</title>
<style>html,body{margin:0;height:100%;overflow:hidden} #block{position:fixed;inset:0;background:`+colour+`}
input{position:fixed;left:40px;top:40px;width:300px;height:40px;font-size:20px}</style>
<div id="block"></div><input id="field">
<script>window.clicks = 0; document.getElementById('block').addEventListener('mousedown', () => window.clicks++);
document.getElementById('field').addEventListener('mousedown', () => window.clicks++);</script>`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestLiveViewPageAndURLContracts(t *testing.T) {
	t.Parallel()
	ts := start(t, nil)
	r := ts.create(keyAcme, map[string]any{"ttl": 120})
	id, view, interact := r.str("id"), r.str("liveViewUrl"), r.str("interactiveLiveViewUrl")
	lu, _ := url.Parse(view)

	for _, u := range []string{view, interact} {
		pu, _ := url.Parse(u)
		p := ts.do("GET", pu.RequestURI(), "", nil)
		if p.Status != 200 || !strings.HasPrefix(p.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("live view page: %d %s %s", p.Status, p.Header.Get("Content-Type"), p.Raw)
		}
		csp := p.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"} {
			require.Contains(t, csp, want, "Content-Security-Policy")
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Fatalf("Content-Security-Policy %q allows inline code", csp)
		}
		if p.Header.Get("Cache-Control") != "no-store" || p.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Fatalf("page headers: %v", p.Header)
		}
		if bytes.Contains(p.Raw, []byte("<script>")) || bytes.Contains(p.Raw, []byte("style=")) {
			t.Fatal("the page has inline script or style, which its CSP forbids")
		}
		require.NotContains(t, string(p.Raw), pu.Query().Get("token"), "the page embeds its token")
	}
	page := ts.do("GET", lu.RequestURI(), "", nil)
	for _, asset := range []string{"liveview.js", "liveview.css"} {
		i := bytes.Index(page.Raw, []byte(`"static/`+asset+`?v=`))
		if i < 0 {
			t.Fatalf("the page does not link static/%s", asset)
		}
		href := string(page.Raw[i+1 : i+1+bytes.IndexByte(page.Raw[i+1:], '"')])
		a := ts.do("GET", "/live/"+href, "", nil)
		if a.Status != 200 || a.Header.Get("Content-Security-Policy") == "" || len(a.Raw) < 500 {
			t.Fatalf("GET /live/%s: %d %v", href, a.Status, a.Header)
		}
	}

	// The contracts of the URLs: wrong token, unknown session, a browser
	// shown a page rather than JSON.
	if r := ts.do("GET", lu.Path+"?token=nope", "", nil); r.Status != 401 || r.str("code") != "UNAUTHORIZED" {
		t.Fatalf("wrong token: %d %s", r.Status, r.Raw)
	}
	r = ts.do("GET", lu.Path+"/ws?token=nope", "", nil)
	require.Equal(t, 401, r.Status, "socket with a wrong token: %s", r.Raw)
	require.Equal(t, 401, wsStatus(strings.Replace(liveSocketURL(view), lu.Query().Get("token"), "nope", 1)), "socket upgrade with a wrong token")
	r = ts.do("GET", "/live/00000000-0000-0000-0000-000000000000?token=x", "", nil)
	require.Equal(t, 404, r.Status, "unknown session: %s", r.Raw)
	req, _ := http.NewRequest("GET", ts.URL+lu.Path+"?token=nope", nil)
	req.Header.Set("Accept", "text/html,application/xhtml+xml")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !bytes.Contains(b, []byte("does not match")) {
		t.Fatalf("a browser with a wrong token: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}

	// A page of another site may not open the socket.
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	if _, resp, err := d.Dial(liveSocketURL(view), http.Header{"Origin": {"http://evil.example"}}); err == nil || resp == nil || resp.StatusCode != 403 {
		t.Fatalf("a cross-origin socket was not refused: %v", err)
	}
	if r := ts.do("GET", lu.Path+"/status?"+lu.RawQuery, "", nil); r.Status != 200 || r.str("status") != "active" {
		t.Fatalf("status: %d %s", r.Status, r.Raw)
	}

	// streamWebView:false has no live view, whichever URL.
	off := ts.create(keyAcme, map[string]any{"streamWebView": false})
	for _, u := range []string{off.str("liveViewUrl"), off.str("interactiveLiveViewUrl")} {
		ou, _ := url.Parse(u)
		if r := ts.do("GET", ou.RequestURI(), "", nil); r.Status != 409 || r.str("code") != "LIVE_VIEW_DISABLED" || !strings.Contains(r.str("error"), "streamWebView") {
			t.Fatalf("live view of a streamWebView:false session: %d %s", r.Status, r.Raw)
		}
		require.Equal(t, 409, wsStatus(liveSocketURL(u)), "socket of a streamWebView:false session")
	}

	// Destroyed: 410 with the reason, page, status and socket alike.
	ts.do("DELETE", "/v2/browser/"+id, keyAcme, nil)
	for _, path := range []string{lu.RequestURI(), lu.Path + "/status?" + lu.RawQuery} {
		if r := ts.do("GET", path, "", nil); r.Status != 410 || !strings.Contains(r.str("error"), "deleted") {
			t.Fatalf("GET %s of a destroyed session: %d %s", path, r.Status, r.Raw)
		}
	}
	require.Equal(t, 410, wsStatus(liveSocketURL(view)), "socket of a destroyed session")
}

func TestLiveViewStreamsAndTakesInput(t *testing.T) {
	t.Parallel()
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true"}) // the site is on loopback
	site := liveSite(t)
	r := ts.create(keyAcme, map[string]any{"ttl": 300})
	pg := attachPage(t, r.str("cdpUrl"))
	pg.navigate(site.URL + "/first?colour=%23ff0000")

	view := dialLive(t, r.str("liveViewUrl"))
	drive := dialLive(t, r.str("interactiveLiveViewUrl"))
	m := view.message(10*time.Second, "hello", func(m map[string]any) bool { return m["type"] == "hello" })
	require.Equal(t, "view", m["mode"], "view-only hello: %v", m)
	m = drive.message(10*time.Second, "hello", func(m map[string]any) bool { return m["type"] == "hello" })
	require.Equal(t, "interactive", m["mode"], "interactive hello: %v", m)
	// Frames are JPEGs of the tab, with the viewport they show.
	f := view.colourFrame(15*time.Second, 0.8, 0.8, [3]int{255, 0, 0})
	drive.colourFrame(15*time.Second, 0.8, 0.8, [3]int{255, 0, 0})
	w, _ := f.Head["deviceWidth"].(float64)
	require.GreaterOrEqual(t, w, float64(100), "frame header without the viewport: %v", f.Head)
	view.message(5*time.Second, "the tab strip", func(m map[string]any) bool {
		return m["type"] == "tabs" && strings.Contains(fmt.Sprint(m["tabs"]), "/first")
	})

	// A change of the page shows.
	pg.eval(`document.getElementById('block').style.background = '#0000ff'`)
	view.colourFrame(5*time.Second, 0.8, 0.8, [3]int{0, 0, 255})
	// After a burst of changes faster than the frames go out, the last
	// state is what stays on screen.
	pg.eval(`new Promise((done) => {
		let n = 0;
		const step = () => {
			document.getElementById('block').style.background = n % 2 ? '#ff00ff' : '#00ffff';
			if (++n < 40) { requestAnimationFrame(step); return; }
			document.getElementById('block').style.background = '#804000';
			done(true);
		};
		requestAnimationFrame(step);
	})`)
	view.colourFrame(5*time.Second, 0.8, 0.8, [3]int{128, 64, 0})

	// Navigation shows, with the new URL and title.
	pg.navigate(site.URL + "/second?colour=%2300ff00")
	view.colourFrame(10*time.Second, 0.8, 0.8, [3]int{0, 255, 0})
	view.message(5*time.Second, "the new URL and title", func(m map[string]any) bool {
		s := fmt.Sprint(m["tabs"])
		return m["type"] == "tabs" && strings.Contains(s, "/second?colour") && strings.Contains(s, "title:/second")
	})

	// The field sits at 40..340 x 40..80 CSS px: aim at its middle, as a
	// fraction of the viewport the frames show.
	var vp struct{ W, H float64 }
	json.Unmarshal(pg.eval(`({W: innerWidth, H: innerHeight})`), &vp)
	fx, fy := 190/vp.W, 60/vp.H
	click := func(v *liveViewer) {
		for _, a := range []string{"move", "down", "up"} {
			v.send(map[string]any{"type": "mouse", "action": a, "x": fx, "y": fy, "button": "left", "buttons": map[string]int{"down": 1}[a], "clickCount": 1})
		}
	}
	typeText := func(v *liveViewer) {
		for _, k := range []string{"a", "b"} {
			v.send(map[string]any{"type": "key", "action": "down", "key": k, "code": "Key" + strings.ToUpper(k), "keyCode": int(k[0]) - 32, "text": k})
			v.send(map[string]any{"type": "key", "action": "up", "key": k, "code": "Key" + strings.ToUpper(k), "keyCode": int(k[0]) - 32})
		}
		v.send(map[string]any{"type": "text", "text": " héllo 日本 ✓"})
	}

	// The view-only socket's input is refused by the server: nothing
	// reaches the page.
	click(view)
	typeText(view)
	view.send(map[string]any{"type": "navigate", "url": site.URL + "/elsewhere"})
	view.message(5*time.Second, "a read-only refusal", func(m map[string]any) bool { return m["type"] == "error" && m["code"] == "READ_ONLY" })
	time.Sleep(time.Second) // a window in which nothing may reach the page
	require.Equal(t, "0||/second", pg.evalString(`String(window.clicks) + '|' + document.getElementById('field').value + '|' + location.pathname`), "view-only input reached the page")

	// The interactive socket's click focuses the field and its typing fills it.
	click(drive)
	polltest.Until(t, 5*time.Second, "the click to reach the page", func() bool {
		return pg.evalString(`String(window.clicks) + '|' + (document.activeElement && document.activeElement.id)`) == "1|field"
	})
	typeText(drive)
	polltest.Until(t, 5*time.Second, "the typing to reach the page", func() bool {
		return pg.evalString(`document.getElementById('field').value`) == "ab héllo 日本 ✓"
	})
	require.Zero(t, drive.count("error"), "errors the interactive socket got")

	// Navigation from the URL bar, then back.
	drive.send(map[string]any{"type": "navigate", "url": "javascript:alert(1)"})
	drive.message(5*time.Second, "a refused URL", func(m map[string]any) bool { return m["type"] == "error" && m["code"] == "BAD_URL" })
	drive.send(map[string]any{"type": "navigate", "url": site.URL + "/third?colour=%23ffff00"})
	view.colourFrame(10*time.Second, 0.8, 0.8, [3]int{255, 255, 0})
	drive.send(map[string]any{"type": "back"})
	view.colourFrame(10*time.Second, 0.8, 0.8, [3]int{0, 255, 0})
	polltest.Until(t, 5*time.Second, "back to /second", func() bool { return pg.evalString(`location.pathname`) == "/second" })

	// A tab opened from the live view is shown; closing it shows the one left.
	drive.send(map[string]any{"type": "newTab", "url": site.URL + "/fourth?colour=%23ff8000"})
	view.colourFrame(10*time.Second, 0.8, 0.8, [3]int{255, 128, 0})
	tabs := view.message(5*time.Second, "the new tab in the strip", func(m map[string]any) bool {
		return m["type"] == "tabs" && strings.Contains(fmt.Sprint(m["tabs"]), "/fourth")
	})
	drive.send(map[string]any{"type": "closeTab", "tab": tabs["active"]})
	view.colourFrame(10*time.Second, 0.8, 0.8, [3]int{0, 255, 0})
}

func TestLiveViewTabsKeepAliveAndEnd(t *testing.T) {
	t.Parallel()
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true"}) // the site is on loopback
	site := liveSite(t)
	r := ts.create(keyAcme, map[string]any{"ttl": 300, "activityTtl": 10})
	id := r.str("id")
	pg := attachPage(t, r.str("cdpUrl"))
	pg.navigate(site.URL + "/one?colour=%23ff0000")
	start := time.Now()
	v := dialLive(t, r.str("liveViewUrl"))
	v.colourFrame(15*time.Second, 0.5, 0.5, [3]int{255, 0, 0})

	// A new tab is followed; picking the first tab shows it again.
	var created struct {
		TargetID string `json:"targetId"`
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, pg.conn.Call(ctx, "", "Target.createTarget", map[string]any{"url": site.URL + "/two?colour=%230000ff"}, &created))
	v.colourFrame(15*time.Second, 0.5, 0.5, [3]int{0, 0, 255})
	tabs := v.message(5*time.Second, "two tabs, the new one watched", func(m map[string]any) bool {
		list, _ := m["tabs"].([]any)
		return m["type"] == "tabs" && len(list) == 2 && m["watching"] == created.TargetID
	})
	first := tabs["tabs"].([]any)[0].(map[string]any)["id"].(string)
	v.send(map[string]any{"type": "pick", "tab": first})
	v.colourFrame(10*time.Second, 0.5, 0.5, [3]int{255, 0, 0})

	// Nothing but the viewer touches the session, past its activityTtl.
	for time.Since(start) < 14*time.Second {
		time.Sleep(500 * time.Millisecond)
	}
	g := ts.do("GET", "/v2/browser/"+id, keyAcme, nil)
	require.Equal(t, "active", g.str("status"), "a watched session ended while watched: %s", g.Raw)

	// The end reaches the viewer with its reason, then a close frame.
	ts.do("DELETE", "/v2/browser/"+id, keyAcme, nil)
	m := v.message(5*time.Second, "ended", func(m map[string]any) bool { return m["type"] == "ended" })
	require.Contains(t, fmt.Sprint(m["reason"]), "deleted", "ended: %v", m)
	select {
	case <-v.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the socket did not close")
	}
	if v.closed == nil || v.closed.Code != websocket.CloseNormalClosure || !strings.Contains(v.closed.Text, "session ended: session deleted") {
		t.Fatalf("close frame: %v", v.closed)
	}
}
