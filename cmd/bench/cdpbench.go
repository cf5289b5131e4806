package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/gorilla/websocket"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/cdp"
)

// wsConn is a deliberately lean, synchronous CDP client: one command in
// flight, no reader goroutine, so that the client adds as little as possible
// to what is measured. The same client is used for the direct and the
// proxied connection.
type wsConn struct {
	ws *websocket.Conn
	id int64
}

func dialWS(ctx context.Context, u string) (*wsConn, error) {
	// The same buffer sizes as the repository's cdp package and the proxy.
	d := websocket.Dialer{ReadBufferSize: 64 << 10, WriteBufferSize: 64 << 10, HandshakeTimeout: 10 * time.Second}
	ws, _, err := d.DialContext(ctx, u, nil)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", u, err)
	}
	ws.SetReadLimit(-1)
	return &wsConn{ws: ws}, nil
}

func (c *wsConn) Close() { c.ws.Close() }

type cdpReply struct {
	ID     int64           `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *cdp.Error      `json:"error"`
}

// call sends one command and reads until its reply, skipping events. It
// returns the raw result.
func (c *wsConn) call(method string, params any) (json.RawMessage, error) {
	c.id++
	msg, err := json.Marshal(struct {
		ID     int64  `json:"id"`
		Method string `json:"method"`
		Params any    `json:"params,omitempty"`
	}{c.id, method, params})
	if err != nil {
		return nil, err
	}
	c.ws.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if err := c.ws.WriteMessage(websocket.TextMessage, msg); err != nil {
		return nil, fmt.Errorf("sending %s: %w", method, err)
	}
	c.ws.SetReadDeadline(time.Now().Add(60 * time.Second))
	for {
		_, raw, err := c.ws.ReadMessage()
		if err != nil {
			return nil, fmt.Errorf("reading the reply to %s: %w", method, err)
		}
		var r cdpReply
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("decoding the reply to %s: %w", method, err)
		}
		if r.ID != c.id {
			continue // an event
		}
		if r.Error != nil {
			return nil, fmt.Errorf("%s: %w", method, r.Error)
		}
		return r.Result, nil
	}
}

// proxiedPage returns the WebSocket URL, through the proxy (as its
// /cdp/<id>/json/list names it), of session c's front page.
func proxiedPage(ctx context.Context, in *instance, c created) (string, error) {
	u, err := url.Parse(c.CDPURL)
	if err != nil {
		return "", err
	}
	token := u.Query().Get("token")
	var list []cdp.Target
	if err := in.do(ctx, "GET", "/cdp/"+c.ID+"/json/list?token="+url.QueryEscape(token), nil, &list); err != nil {
		return "", err
	}
	for _, t := range list {
		if t.Type == "page" {
			return t.WebSocketDebuggerURL, nil
		}
	}
	return "", fmt.Errorf("the proxy's /json/list lists no page")
}

// plainChromium starts the baseline: a local Chromium with Trawler's flags
// but its DevTools on a loopback port (what a Playwright user without
// Trawler connects to), and returns its page's /devtools/page/<id> URL and a
// function that stops it. Like Trawler's, it runs with Chromium's sandbox
// on, as the browser user when this is root (its directory is then made
// under the system's temporary directory, which that user can reach).
func plainChromium(ctx context.Context, chromium, dir string) (string, func(), error) {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if os.Getuid() == 0 {
		var err error
		if dir, err = os.MkdirTemp("", "trawler-bench-plain-"); err != nil {
			return "", nil, err
		}
		uid := browsers.DefaultBrowserUID
		if err := os.Chown(dir, uid, uid); err != nil {
			return "", nil, err
		}
		attr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}
	}
	args := []string{"--remote-debugging-port=0", "--user-data-dir=" + dir, "about:blank"}
	for _, f := range browsers.ChromiumFlags {
		if f != "--remote-debugging-pipe" {
			args = append(args, f)
		}
	}
	cmd := exec.Command(chromium, args...)
	cmd.SysProcAttr = attr
	cmd.Env = append(os.Environ(), "HOME="+dir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		os.RemoveAll(dir)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if _, u, ok := strings.Cut(sc.Text(), "DevTools listening on "); ok {
				found <- strings.TrimSpace(u)
			}
		}
	}()
	var ws string
	select {
	case ws = <-found:
	case <-time.After(30 * time.Second):
		stop()
		return "", nil, fmt.Errorf("the baseline Chromium did not open its DevTools port")
	}
	bu, _ := url.Parse(ws)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+bu.Host+"/json/list", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			continue
		}
		var list []cdp.Target
		json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		for _, t := range list {
			if t.Type == "page" {
				return t.WebSocketDebuggerURL, stop, nil
			}
		}
	}
	stop()
	return "", nil, fmt.Errorf("the baseline Chromium lists no page")
}

// roundtripBlock is how many round trips run on one connection before the
// other takes its turn.
const roundtripBlock = 50

// roundtrips times n sequential Runtime.evaluate("1+1") on each connection.
// The two run in alternating blocks (direct first in even blocks, proxied
// first in odd ones) so that drift in machine load hits both alike.
func roundtrips(ctx context.Context, direct, proxied *wsConn, n int) (d, p []time.Duration, err error) {
	params := byValue("1+1")
	one := func(c *wsConn, into *[]time.Duration) error {
		t := time.Now()
		res, err := c.call(runtime.Evaluate.Method, params)
		el := time.Since(t)
		if err != nil {
			return err
		}
		if into != nil {
			if !bytes.Contains(res, []byte(`"value":2`)) {
				return fmt.Errorf("Runtime.evaluate(1+1) answered %s", res)
			}
			*into = append(*into, el)
		}
		return nil
	}
	for i := 0; i < 100; i++ { // warm-up, not recorded
		if err := one(direct, nil); err != nil {
			return nil, nil, err
		}
		if err := one(proxied, nil); err != nil {
			return nil, nil, err
		}
	}
	const block = roundtripBlock
	for b := 0; len(d) < n; b++ {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		order := []*wsConn{direct, proxied}
		if b%2 == 1 {
			order = []*wsConn{proxied, direct}
		}
		for _, c := range order {
			into := &d
			if c == proxied {
				into = &p
			}
			for i := 0; i < block && len(*into) < n; i++ {
				if err := one(c, into); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	return d, p, nil
}

// longPageJS builds a long page (more than 15000 CSS px at 1280 px wide) of
// varied content in the current document: headings, paragraphs of
// pseudo-random words in assorted sizes and colours, gradient tiles and
// tables, so that the PNG does not compress to nothing. It is deterministic.
const longPageJS = `(() => {
  let seed = 12345;
  const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const pick = a => a[Math.floor(rnd() * a.length)];
  const words = "trawler browser session proxy chromium devtools protocol screenshot latency throughput memory pool warm cold lease websocket frame render paint layout glyph pixel gradient table column row".split(" ");
  const col = () => "hsl(" + Math.floor(rnd()*360) + "," + (40+Math.floor(rnd()*60)) + "%," + (25+Math.floor(rnd()*50)) + "%)";
  const para = n => { let s = []; for (let i = 0; i < n; i++) s.push(pick(words)); return s.join(" "); };
  document.body.style.margin = "0";
  document.body.style.width = "1280px";
  document.body.style.fontFamily = "sans-serif";
  const parts = [];
  for (let i = 0; i < 220; i++) {
    parts.push('<h2 style="color:' + col() + ';margin:8px 16px">' + (i+1) + '. ' + para(6) + '</h2>');
    parts.push('<p style="font-size:' + (11 + Math.floor(rnd()*10)) + 'px;color:' + col() + ';margin:4px 16px">' + para(60 + Math.floor(rnd()*60)) + '</p>');
    let tiles = '<div style="display:flex;gap:4px;margin:4px 16px">';
    for (let j = 0; j < 10; j++) tiles += '<div style="flex:1;height:' + (20 + Math.floor(rnd()*40)) + 'px;background:linear-gradient(' + Math.floor(rnd()*360) + 'deg,' + col() + ',' + col() + ');border-radius:' + Math.floor(rnd()*12) + 'px"></div>';
    parts.push(tiles + '</div>');
    if (i % 4 === 0) {
      let t = '<table style="margin:4px 16px;border-collapse:collapse;font-size:12px">';
      for (let r = 0; r < 4; r++) { t += '<tr>'; for (let c = 0; c < 8; c++) t += '<td style="border:1px solid ' + col() + ';padding:2px 6px;background:' + (rnd() < 0.3 ? col() : '#fff') + '">' + pick(words) + ' ' + Math.floor(rnd()*100000) + '</td>'; t += '</tr>'; }
      parts.push(t + '</table>');
    }
  }
  document.body.innerHTML = parts.join("");
  return document.documentElement.scrollHeight;
})()`

// screenshotParams is a full-page capture of 1280x15000 CSS px.
var screenshotParams = page.CaptureScreenshotParams{
	Format:                page.CaptureScreenshotFormatPng,
	CaptureBeyondViewport: &yes,
	Clip:                  &page.Viewport{X: 0, Y: 0, Width: 1280, Height: 15000, Scale: 1},
}

var viewportParams = emulation.SetDeviceMetricsOverrideParams{Width: 1280, Height: 800, DeviceScaleFactor: 1, Mobile: false}

// yes is true, for cdproto's optional booleans.
var yes = true

// byValue is Runtime.evaluate's parameters for expression, its value
// returned by JSON.
func byValue(expression string) runtime.EvaluateParams {
	return runtime.EvaluateParams{Expression: expression, ReturnByValue: &yes}
}

// preparePage loads the long page and sets a 1280 px viewport on both
// connections (a device metrics override belongs to the CDP session that
// set it). It returns the page's height in CSS px.
func preparePage(direct, proxied *wsConn) (int, error) {
	var r struct {
		Result struct {
			Value int `json:"value"`
		} `json:"result"`
	}
	for _, c := range []*wsConn{direct, proxied} {
		res, err := c.call(runtime.Evaluate.Method, byValue(longPageJS))
		if err != nil {
			return 0, err
		}
		if err := json.Unmarshal(res, &r); err != nil {
			return 0, err
		}
		if _, err := c.call(emulation.SetDeviceMetricsOverride.Method, viewportParams); err != nil {
			return 0, err
		}
	}
	return r.Result.Value, nil
}

// screenshot captures the page and returns the PNG, base64-encoded.
func screenshot(c *wsConn) ([]byte, error) {
	res, err := c.call(page.CaptureScreenshot.Method, screenshotParams)
	if err != nil {
		return nil, err
	}
	var r struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return nil, err
	}
	if len(r.Data) < 2 {
		return nil, fmt.Errorf("Page.captureScreenshot answered no data")
	}
	return r.Data[1 : len(r.Data)-1], nil
}

// pngSize decodes a screenshot, checks that it is a PNG and returns its
// size in bytes.
func pngSize(b64 []byte) (int, error) {
	png, err := base64.StdEncoding.DecodeString(string(b64))
	if err != nil {
		return 0, fmt.Errorf("screenshot data: %w", err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG")) {
		return 0, fmt.Errorf("screenshot is not a PNG")
	}
	return len(png), nil
}

// screenshots takes n screenshots on each connection, alternating which goes
// first, and returns the total and median time per screenshot on each side
// and the PNG size.
func screenshots(ctx context.Context, direct, proxied *wsConn, n int) (dTotal, pTotal, dMed, pMed time.Duration, size int, err error) {
	var dl, pl []string
	var ds, ps []time.Duration
	defer func() {
		logf("screenshot ms direct:  %s", strings.Join(dl, " "))
		logf("screenshot ms proxied: %s", strings.Join(pl, " "))
	}()
	// Warm-up: one each, not timed; the first also checks the PNG.
	b64, err := screenshot(direct)
	if err == nil {
		size, err = pngSize(b64)
	}
	if err != nil {
		return 0, 0, 0, 0, 0, err
	}
	if _, err = screenshot(proxied); err != nil {
		return 0, 0, 0, 0, 0, err
	}
	for i := 0; i < n; i++ {
		if err := ctx.Err(); err != nil {
			return 0, 0, 0, 0, 0, err
		}
		order := []*wsConn{direct, proxied}
		if i%2 == 1 {
			order = []*wsConn{proxied, direct}
		}
		for _, c := range order {
			t := time.Now()
			if _, err := screenshot(c); err != nil {
				return 0, 0, 0, 0, 0, err
			}
			el := time.Since(t)
			if c == direct {
				dTotal += el
				ds = append(ds, el)
				dl = append(dl, fmt.Sprintf("%.0f", ms(el)))
			} else {
				pTotal += el
				ps = append(ps, el)
				pl = append(pl, fmt.Sprintf("%.0f", ms(el)))
			}
		}
	}
	return dTotal, pTotal, median(ds), median(ps), size, nil
}

// largeReplies times n Runtime.evaluate calls on each connection whose reply
// carries a string of size bytes (the size of a screenshot's base64), so
// that the proxy's cost of relaying a big message is seen apart from the
// browser's rendering and encoding time, which dominates a screenshot.
func largeReplies(ctx context.Context, direct, proxied *wsConn, size, n int) (d, p []time.Duration, err error) {
	params := byValue(fmt.Sprintf("'x'.repeat(%d)", size))
	for i := 0; i < 2*n+2; i++ {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		c, into := direct, &d
		if i%2 == 1 {
			c, into = proxied, &p
		}
		t := time.Now()
		res, err := c.call(runtime.Evaluate.Method, params)
		el := time.Since(t)
		if err != nil {
			return nil, nil, err
		}
		if len(res) < size {
			return nil, nil, fmt.Errorf("Runtime.evaluate answered %d bytes, want %d or more", len(res), size)
		}
		if i >= 2 { // the first pair is a warm-up
			*into = append(*into, el)
		}
	}
	return d, p, nil
}
