package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gorilla/websocket"

	"github.com/trawler-dev/trawler/cdp"
)

const (
	liveLatencySamples = 40
	liveWindow         = 6 * time.Second // each fps and CPU measurement
	// viewersEnv makes this binary a process of live-view clients (see
	// runViewers) instead of the bench: the CPU phase runs its viewers
	// outside the process it measures.
	viewersEnv = "TRAWLER_BENCH_LIVEVIEW_VIEWERS"
)

func init() {
	if spec := os.Getenv(viewersEnv); spec != "" {
		os.Exit(runViewers(spec))
	}
}

// livePage is the session's page: a full-window block whose colour paint()
// sets, and an animation (colour and a moving box, every animation frame)
// that animate() starts and stops.
const livePage = `<!doctype html><title>live view bench</title>
<style>html,body{margin:0;height:100%;overflow:hidden;background:#fff}
#b{position:fixed;inset:0;background:#000} #m{position:fixed;left:0;top:5%;width:120px;height:120px;background:#fff}</style>
<div id="b"></div><div id="m"></div>
<script>
let anim = false;
window.paint = (c) => { document.getElementById('b').style.background = c; };
window.animate = (on) => { anim = on; if (on) requestAnimationFrame(step); };
function step(t) {
  if (!anim) return;
  document.getElementById('m').style.transform = 'translateX(' + ((t / 4) % (innerWidth - 120)) + 'px)';
  document.getElementById('b').style.background = 'hsl(' + ((t / 10) % 360) + ' 60% 50%)';
  requestAnimationFrame(step);
}
</script>`

// viewerHooks go into the viewer's live-view page: arm() starts watching
// the drawn frames for a colour at the canvas's centre and resolves
// window.hit with the wall-clock time (ms) of the first frame drawn with it;
// countFrames() counts the frames drawn (the page sets data-seq after each
// drawImage).
const viewerHooks = `(() => {
  const c = document.getElementById('screen');
  const g = c.getContext('2d');
  window.arm = (r, gr, b) => {
    window.hit = new Promise((resolve) => {
      const check = () => {
        const d = g.getImageData(c.width >> 1, c.height >> 1, 1, 1).data;
        if (Math.abs(d[0] - r) < 40 && Math.abs(d[1] - gr) < 40 && Math.abs(d[2] - b) < 40) {
          obs.disconnect();
          clearTimeout(timer);
          resolve(performance.timeOrigin + performance.now());
        }
      };
      const obs = new MutationObserver(check);
      obs.observe(c, { attributes: true, attributeFilter: ['data-seq'] });
      const timer = setTimeout(() => { obs.disconnect(); resolve(-1); }, 5000);
    });
    return true;
  };
  window.drawn = 0;
  new MutationObserver((recs) => { window.drawn += recs.length; }).observe(c, { attributes: true, attributeFilter: ['data-seq'] });
  return true;
})()`

var livePalette = [][3]int{{230, 20, 20}, {20, 200, 40}, {30, 60, 230}, {240, 220, 20}, {220, 30, 220}, {20, 220, 220}}

// liveView measures the live view of one session of the warm service:
//   - liveview_frame_latency_p50_ms: the session's page changes colour (over
//     a direct CDP connection to its browser); the time until a viewer's
//     page (the real live-view page, in a headless Chromium) has drawn a
//     frame with the new colour on its canvas, read with getImageData after
//     each drawImage. Both clocks are this machine's wall clock.
//   - liveview_fps: frames that page draws per second while the session's
//     page animates on every animation frame.
//   - liveview_cpu_per_viewer_pct_1 and _5: with the page still animating
//     and the viewer Chromium closed, the CPU (percent of one core) of this
//     process (the service) plus the session browser's process group, over
//     a window with no viewer and with 1 and with 5 viewers: the growth
//     divided by the number of viewers. The first viewer pays for the
//     screencast itself (capture and JPEG encoding in the browser), the
//     others only for their copy of each frame. The viewers are WebSocket
//     clients reading frames in a child process, so their own work is not
//     counted.
func (b *bench) liveView(ctx context.Context, in *instance) error {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, livePage)
	}))
	defer site.Close()
	var c struct {
		ID          string `json:"id"`
		LiveViewURL string `json:"liveViewUrl"`
	}
	if err := in.do(ctx, http.MethodPost, "/v2/browser", []byte(`{"ttl":900,"activityTtl":900}`), &c); err != nil {
		return err
	}
	defer in.remove(context.Background(), c.ID)
	s, err := in.session(ctx, c.ID)
	if err != nil {
		return err
	}
	tab, err := openPage(ctx, s.CDP(), site.URL+"/")
	if err != nil {
		return err
	}
	defer tab.Conn.Close()
	size, err := evaluate(ctx, tab, "innerWidth + 'x' + innerHeight")
	if err != nil {
		return err
	}
	logf("live view: the session's page is %s CSS px", size)

	lat, fps, err := liveViewerPage(ctx, b.tmp, in.svc.Config.ChromiumPath, c.LiveViewURL, tab)
	if err != nil {
		return err
	}
	logf("frame latency ms: %s", msList(lat))
	logf("frame latency p50 %.1f ms, p90 %.1f ms, max %.1f ms", ms(median(lat)), ms(pct(lat, 0.9)), ms(pct(lat, 1)))
	figure("liveview_frame_latency_p50_ms", ms(median(lat)), "ms")
	figure("liveview_fps", fps, "fps")

	pid, _, err := browserPID(in.browsersDir(), s.BrowserID())
	if err != nil {
		return err
	}
	if _, err := evaluate(ctx, tab, "animate(true)"); err != nil {
		return err
	}
	wsURL := liveSocketURL(c.LiveViewURL)
	base, err := cpuWindow(ctx, pid, wsURL, 0)
	if err != nil {
		return err
	}
	logf("CPU with no viewer (page animating): %.1f%% of a core (service %.1f%%, session browser %.1f%%)", base.total(), base.service, base.browser)
	for _, n := range []int{1, 5} {
		w, err := cpuWindow(ctx, pid, wsURL, n)
		if err != nil {
			return err
		}
		per := (w.total() - base.total()) / float64(n)
		logf("CPU with %d viewer(s): %.1f%% of a core (service %.1f%%, session browser %.1f%%); frames/s per viewer: %s",
			n, w.total(), w.service, w.browser, w.fps)
		figure(fmt.Sprintf("liveview_cpu_per_viewer_pct_%d", n), per, "%")
	}
	_, err = evaluate(ctx, tab, "animate(false)")
	return err
}

// liveViewerPage opens the live view in a headless Chromium and measures the
// frame latency and the frames drawn per second.
func liveViewerPage(ctx context.Context, tmp, chromium, liveURL string, tab cdp.Session) ([]time.Duration, float64, error) {
	opts := chromiumOptions(chromium, filepath.Join(tmp, "liveview-viewer"), chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	vctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	// The first action starts the browser, which lives as long as the
	// context of that action: vctx, not a timeout of its own.
	if err := chromedp.Do(vctx); err != nil {
		return nil, 0, fmt.Errorf("starting the viewer's browser: %w", err)
	}
	tctx, cancelT := context.WithTimeout(vctx, 30*time.Second)
	err := chromedp.Do(tctx, chromedp.Navigate(liveURL))
	if err == nil {
		_, err = chromedp.Run(tctx, chromedp.Poll[bool]("!!document.querySelector('canvas#screen[data-seq]')",
			chromedp.WithPollingInterval(100*time.Millisecond)))
	}
	cancelT()
	if err != nil {
		return nil, 0, fmt.Errorf("opening the live view: %w", err)
	}
	eval := func(expr string) (float64, error) {
		return chromedp.Run(vctx, chromedp.Evaluate[float64](expr, chromedp.EvalAwaitPromise))
	}
	if _, err := chromedp.Run(vctx, chromedp.Evaluate[bool](viewerHooks)); err != nil {
		return nil, 0, err
	}
	var lat []time.Duration
	for i := 0; i <= liveLatencySamples; i++ { // the first is a warm-up
		col := livePalette[i%len(livePalette)]
		if _, err := chromedp.Run(vctx, chromedp.Evaluate[bool](fmt.Sprintf("arm(%d,%d,%d)", col[0], col[1], col[2]))); err != nil {
			return nil, 0, err
		}
		t0 := float64(time.Now().UnixNano()) / 1e6
		if _, err := evaluate(ctx, tab, fmt.Sprintf("paint('rgb(%d,%d,%d)')", col[0], col[1], col[2])); err != nil {
			return nil, 0, err
		}
		at, err := eval("window.hit")
		if err != nil {
			return nil, 0, err
		}
		if at < 0 {
			return nil, 0, fmt.Errorf("sample %d: the viewer never drew the colour %v", i, col)
		}
		if i > 0 {
			lat = append(lat, time.Duration((at-t0)*1e6))
		}
		time.Sleep(150 * time.Millisecond)
	}

	if _, err := evaluate(ctx, tab, "animate(true)"); err != nil {
		return nil, 0, err
	}
	time.Sleep(time.Second)
	before, err := eval("window.drawn")
	if err != nil {
		return nil, 0, err
	}
	t := time.Now()
	time.Sleep(liveWindow)
	after, err := eval("window.drawn")
	if err != nil {
		return nil, 0, err
	}
	fps := (after - before) / time.Since(t).Seconds()
	if _, err := evaluate(ctx, tab, "animate(false)"); err != nil {
		return nil, 0, err
	}
	chromedp.Cancel(vctx)
	return lat, fps, nil
}

// liveSocketURL is the socket of a live-view URL, sized as a 1280x720 window.
func liveSocketURL(live string) string {
	u, _ := url.Parse(live)
	u.Scheme = "ws"
	u.Path += "/ws"
	return u.String() + "&width=1280&height=720&dpr=1"
}

type cpuUse struct {
	service, browser float64 // percent of one core
	fps              string  // frames per second of each viewer
}

func (c cpuUse) total() float64 { return c.service + c.browser }

// cpuWindow runs n viewers in a child process, lets them settle, and
// measures the CPU of this process and of the session browser's process
// group over liveWindow.
func cpuWindow(ctx context.Context, browserPGID int, wsURL string, n int) (cpuUse, error) {
	var out cpuUse
	var cmd *exec.Cmd
	var stdin io.WriteCloser
	var stdout *bufio.Reader
	if n > 0 {
		exe, err := os.Executable()
		if err != nil {
			return out, err
		}
		cmd = exec.CommandContext(ctx, exe)
		cmd.Env = append(os.Environ(), viewersEnv+"="+strconv.Itoa(n)+" "+wsURL)
		cmd.Stderr = os.Stderr
		if stdin, err = cmd.StdinPipe(); err != nil {
			return out, err
		}
		pipe, err := cmd.StdoutPipe()
		if err != nil {
			return out, err
		}
		stdout = bufio.NewReader(pipe)
		if err := cmd.Start(); err != nil {
			return out, err
		}
		defer cmd.Wait()
		defer stdin.Close()
		line, err := stdout.ReadString('\n')
		if err != nil || strings.TrimSpace(line) != "ready" {
			return out, fmt.Errorf("the viewers did not start: %q %v", line, err)
		}
	}
	time.Sleep(2 * time.Second) // screencast started, frames flowing
	self0, br0 := cpuTicks(os.Getpid()), cpuTicks(groupMembers(browserPGID)...)
	if stdin != nil {
		io.WriteString(stdin, "mark\n")
	}
	t := time.Now()
	time.Sleep(liveWindow)
	self1, br1 := cpuTicks(os.Getpid()), cpuTicks(groupMembers(browserPGID)...)
	el := time.Since(t).Seconds()
	const hz = 100 // USER_HZ: /proc's clock ticks per second on Linux
	out.service = float64(self1-self0) / hz / el * 100
	out.browser = float64(br1-br0) / hz / el * 100
	if stdin != nil {
		io.WriteString(stdin, "report\n")
		line, err := stdout.ReadString('\n')
		if err != nil {
			return out, fmt.Errorf("the viewers did not report: %w", err)
		}
		var rates []string
		for _, f := range strings.Fields(line) {
			frames, _ := strconv.Atoi(f)
			rates = append(rates, fmt.Sprintf("%.1f", float64(frames)/el))
		}
		out.fps = strings.Join(rates, " ")
	}
	return out, nil
}

// groupMembers lists the live processes of process group pgid.
func groupMembers(pgid int) []int {
	var pids []int
	for _, p := range listProcs() {
		if p.pgid == pgid && p.state != "Z" {
			pids = append(pids, p.pid)
		}
	}
	return pids
}

// cpuTicks is the utime+stime of the processes pids, together.
func cpuTicks(pids ...int) int64 {
	var total int64
	for _, p := range pids {
		total += statTicks(p, false)
	}
	return total
}

// statTicks is pid's CPU time in clock ticks: its utime+stime, plus the
// cutime+cstime of the children it reaped when reaped is set.
func statTicks(pid int, reaped bool) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	end := bytes.LastIndexByte(raw, ')')
	if end < 0 {
		return 0
	}
	// After the comm: state(0) ppid pgrp session tty tpgid flags minflt
	// cminflt majflt cmajflt utime(11) stime(12) cutime(13) cstime(14).
	f := strings.Fields(string(raw[end+1:]))
	if len(f) < 15 {
		return 0
	}
	fields := f[11:13]
	if reaped {
		fields = f[11:15]
	}
	var total int64
	for _, v := range fields {
		n, _ := strconv.ParseInt(v, 10, 64)
		total += n
	}
	return total
}

// runViewers is the child process of cpuWindow: spec is "N wsURL". It
// opens N live-view sockets, prints "ready", and reads frames; on "mark"
// from stdin it starts counting, on "report" it prints each viewer's frame
// count since the mark; it exits when stdin closes.
func runViewers(spec string) int {
	nStr, wsURL, _ := strings.Cut(spec, " ")
	n, err := strconv.Atoi(nStr)
	if err != nil || n < 1 {
		fmt.Fprintln(os.Stderr, "bad", viewersEnv, spec)
		return 2
	}
	counts := make([]int64, n)
	var mu sync.Mutex
	counting := false
	var conns []*websocket.Conn
	for i := range n {
		ws, _, err := websocket.DefaultDialer.Dial(wsURL, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, "live view viewer:", err)
			return 1
		}
		ws.SetReadLimit(-1)
		conns = append(conns, ws)
		go func() {
			for {
				mt, _, err := ws.ReadMessage()
				if err != nil {
					return
				}
				if mt == websocket.BinaryMessage {
					mu.Lock()
					if counting {
						counts[i]++
					}
					mu.Unlock()
				}
			}
		}()
	}
	fmt.Println("ready")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		switch sc.Text() {
		case "mark":
			mu.Lock()
			counting = true
			mu.Unlock()
		case "report":
			mu.Lock()
			var f []string
			for _, c := range counts {
				f = append(f, strconv.FormatInt(c, 10))
			}
			mu.Unlock()
			fmt.Println(strings.Join(f, " "))
		}
	}
	for _, ws := range conns {
		ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		ws.Close()
	}
	return 0
}
