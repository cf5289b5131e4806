package browsers

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/docker/shim"
)

// ChromiumFlags are the flags every Chromium that Trawler starts runs with.
// The network ones matter on machines without internet access, where
// Chromium otherwise floods the network with refused background requests.
var ChromiumFlags = []string{
	"--headless=new",
	// What a page sees of the browser is an ordinary Chrome's (see
	// docs/stealth.md): navigator.webdriver false in pages, frames and
	// workers, as Chromium's own switch sets it; a 1920x1080 screen around
	// the window, where headless Chromium reports 800x600.
	"--disable-blink-features=AutomationControlled",
	"--screen-info={1920x1080}",
	"--window-size=1920,1080",
	// WebGL on Mesa's software rasteriser (llvmpipe, through ANGLE's EGL
	// backend), as a Linux machine without a GPU driver reports it, rather
	// than on SwiftShader, which only automated Chromium uses and which
	// detectors flag. The blocklist would refuse llvmpipe; the compositor
	// stays in software, as --disable-gpu had it.
	"--use-gl=angle",
	"--use-angle=gl-egl",
	"--ignore-gpu-blocklist",
	"--disable-gpu-compositing",
	"--disable-background-networking",
	"--disable-component-update",
	"--disable-sync",
	"--no-first-run",
	"--disable-quic",
	"--no-default-browser-check",
	"--disable-breakpad",
	"--disable-crash-reporter",
	"--disable-domain-reliability",
	// The WebUI omnibox popup and reload button are browser UI that no
	// headless user sees, and each browser window (so each browser context
	// a scrape opens) got a WebUI renderer of its own for them, whose CPU
	// and memory every context paid.
	"--disable-features=Translate,MediaRouter,OptimizationHints,WebUIReloadButton,WebUIOmniboxPopup,WebUIOmniboxAimPopup",
	"--disable-dev-shm-usage",
	"--metrics-recording-only",
	"--mute-audio",
	"--password-store=basic",
	"--use-mock-keychain",
	"--hide-scrollbars",
	// No GPU, so no compiled shaders worth keeping on disk; and clearing a
	// scrape's storage ("all" types, see scrape/recycle.go) clears that
	// cache too, which costs the browser's CPU for every origin cleared.
	"--disable-gpu-shader-disk-cache",
	// No UDP but through the proxy: WebRTC would otherwise reach any
	// address, the egress proxy's guard unseen.
	"--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
	// DevTools over file descriptors 3 and 4, never a TCP port that a page
	// of any browser could reach.
	"--remote-debugging-pipe",
}

// WithExtra returns ChromiumFlags and then extra, but for extra's
// --disable-features flags, whose features join those of ChromiumFlags'
// own: Chromium reads only the last --disable-features flag, and one of
// TRAWLER_CHROMIUM_FLAGS would otherwise turn Trawler's back on.
func WithExtra(extra []string) (flags, rest []string) {
	const disable = "--disable-features="
	flags = slices.Clone(ChromiumFlags)
	for _, f := range extra {
		v, ok := strings.CutPrefix(f, disable)
		if !ok {
			rest = append(rest, f)
			continue
		}
		for i, own := range flags {
			if strings.HasPrefix(own, disable) && v != "" {
				flags[i] = own + "," + v
			}
		}
	}
	return flags, rest
}

// ReservedFlag reports whether flag is one that Trawler sets for every
// browser, or one that would undo its isolation (a DevTools port, another
// proxy, UDP around the proxy, no sandbox): TRAWLER_CHROMIUM_FLAGS may not
// set it.
func ReservedFlag(flag string) bool {
	switch strings.SplitN(flag, "=", 2)[0] {
	case "--no-sandbox", "--disable-namespace-sandbox", "--disable-seccomp-filter-sandbox", "--no-zygote", "--single-process":
		return true
	case "--user-data-dir", "--remote-debugging-port", "--remote-debugging-address", "--remote-debugging-pipe",
		"--remote-debugging-io-pipes", "--remote-allow-origins", "--proxy-server", "--proxy-bypass-list",
		"--proxy-pac-url", "--no-proxy-server", "--proxy-auto-detect", "--force-webrtc-ip-handling-policy",
		"--webrtc-ip-handling-policy", "--enable-unsafe-extension-debugging", "--load-extension":
		return true
	}
	return false
}

// ProxyFlags are the flags that send every request of a browser through
// Trawler's egress proxy at proxyURL, loopback included (Chromium bypasses
// the proxy for loopback unless told not to).
func ProxyFlags(proxyURL string) []string {
	if proxyURL == "" {
		return nil
	}
	return []string{"--proxy-server=" + proxyURL, "--proxy-bypass-list=<-loopback>"}
}

// ProcessRuntime runs each browser as a local Chromium process with its own
// user-data directory under Dir, in its own process group so that stopping
// it stops its renderers too.
type ProcessRuntime struct {
	// Chromium is the browser binary.
	Chromium string
	// Dir holds one user-data directory per browser; a browser's directory
	// also records its process id so that Reap can find it after a crash of
	// the service.
	Dir string
	// StartTimeout bounds how long Start waits for the DevTools endpoint.
	StartTimeout time.Duration
	// Log receives the browsers' own error output at debug level.
	Log *slog.Logger
	// ExtraFlags are added to ChromiumFlags (TRAWLER_CHROMIUM_FLAGS), e.g.
	// --lang.
	ExtraFlags []string
	// Proxy is the egress proxy every request of the browsers goes through
	// (http://127.0.0.1:port); empty lets them reach the network directly,
	// which only tests of the runtime itself do.
	Proxy string
	// ProxyFor, when set, names the egress proxy for browser id instead
	// (its own route, which the egress proxy counts and binds apart).
	// Unconfined browsers only.
	ProxyFor func(id string) (string, error)
	// Confinement is how each browser is walled in (Probe finds it out).
	// A confined browser's only way out is the proxy port of its own
	// network namespace, whose connections go to Egress.
	Confinement Confinement
	// Egress serves each connection a confined browser made to its proxy
	// port: to is the loopback address it dialled there (each browser
	// context gets its own, see egress.Proxy.ContextRoute).
	Egress func(id string, to netip.Addr, c net.Conn)

	// Unpresented starts browsers without PresentedFlags, saying what they
	// say of themselves: for the tests that check what is presented
	// against it.
	Unpresented bool

	present   sync.Once
	presented []string // PresentedFlags, found out at the first start
}

var _ Runtime = (*ProcessRuntime)(nil)

const pidFile = "trawler.pid"

// Start launches Chromium (in its sandbox when confined) and waits until
// it answers over its DevTools pipe.
func (r *ProcessRuntime) Start(ctx context.Context, id string) (Browser, error) {
	// The directory holds what Trawler keeps of the browser (its pid); a
	// confined browser's own files are on its private /tmp.
	dir := filepath.Join(r.Dir, id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the browser's directory: %w", err)
	}
	args, userData, err := r.chromiumArgs(id)
	if err != nil {
		return nil, err
	}
	pipes, err := newDevtoolsPipes()
	if err != nil {
		return nil, err
	}
	cmd, box, err := r.command(id, dir, args, pipes)
	if err != nil {
		pipes.closeAll()
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err == nil {
		err = cmd.Start()
	}
	// The child's ends are the child's now (or nobody's).
	pipes.toR.Close()
	pipes.fromW.Close()
	if box != nil {
		for _, f := range box.parentEnds {
			f.Close()
		}
	}
	if err != nil {
		pipes.toW.Close()
		pipes.fromR.Close()
		if box != nil {
			box.cleanup()
		}
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	b := &processBrowser{id: id, dir: dir, cmd: cmd, confined: box != nil, done: make(chan struct{})}
	downloads := filepath.Join(userData, "Downloads")
	b.mux = cdp.NewMux(pipes.fromR, pipes.toW, closeBoth{pipes.toW, pipes.fromR}, cdp.MuxOptions{DownloadDir: downloads})
	if err := os.WriteFile(filepath.Join(dir, pidFile), []byte(pidRecord(cmd.Process.Pid)), 0o600); err != nil {
		b.kill()
		cmd.Wait()
		b.mux.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("recording browser pid: %w", err)
	}

	tail := &LineTail{}
	logged := r.readOutput(id, stderr, tail)
	go b.wait()

	timeout := r.StartTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	startCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err = r.awaitReady(startCtx, b, box, timeout); err == nil {
		return b, nil
	}
	b.Close()
	return nil, startFailure(ctx, err, b, logged, tail, timeout)
}

// ChromiumVersion is the version of r's Chromium ("156.0.8078.114"), as
// its --version prints it: no browser starts, so it may be known before
// the first one has.
func (r *ProcessRuntime) ChromiumVersion(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.Chromium, "--version")
	// A wrapper script killed at the deadline may leave a child holding
	// its output open.
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", r.Chromium, err)
	}
	v := VersionIn(string(out))
	if v == "" {
		return "", fmt.Errorf("%s --version printed no version: %q", r.Chromium, out)
	}
	return v, nil
}

// VersionIn is the first Chromium version (four numbers with dots between
// them) among the words of s, or "".
func VersionIn(s string) string {
	for _, w := range strings.Fields(s) {
		parts := strings.Split(w, ".")
		if len(parts) == 4 && !slices.ContainsFunc(parts, func(p string) bool {
			_, err := strconv.ParseUint(p, 10, 32)
			return err != nil
		}) {
			return w
		}
	}
	return ""
}

// chromiumArgs are the arguments of browser id's Chromium, and the
// user-data directory they name: its own directory under Dir, or the
// sandbox's for a confined browser, whose proxy is the port of its own
// network namespace.
func (r *ProcessRuntime) chromiumArgs(id string) (args []string, userData string, err error) {
	conf := r.Confinement
	userData, proxy := filepath.Join(r.Dir, id), r.Proxy
	if conf.Confined {
		userData, proxy = UserDataDir, "http://127.0.0.1:"+strconv.Itoa(shim.ProxyPort)
	} else if r.ProxyFor != nil {
		if proxy, err = r.ProxyFor(id); err != nil {
			return nil, "", err
		}
	}
	own, extra := WithExtra(r.ExtraFlags)
	if !r.Unpresented {
		r.present.Do(func() { r.presented = PresentedFlags(context.Background(), r) })
		own = append(own, r.presented...)
	}
	if !conf.Sandbox {
		own = append(own, "--no-sandbox")
	}
	args = append(append(append(own, ProxyFlags(proxy)...), extra...), "--user-data-dir="+userData, "about:blank")
	if conf.Confined {
		// The marker is a switch Chromium ignores (see Marker).
		args = append([]string{"--trawler-browser=" + Marker(r.Dir, id)}, args...)
	}
	return args, userData, nil
}

// devtoolsPipes are the two pipes of a browser's DevTools connection:
// Chromium reads commands from fd 3 (toR) and writes to fd 4 (fromW).
type devtoolsPipes struct {
	toR, toW, fromR, fromW *os.File
}

func newDevtoolsPipes() (*devtoolsPipes, error) {
	toR, toW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	fromR, fromW, err := os.Pipe()
	if err != nil {
		toR.Close()
		toW.Close()
		return nil, err
	}
	return &devtoolsPipes{toR: toR, toW: toW, fromR: fromR, fromW: fromW}, nil
}

func (p *devtoolsPipes) closeAll() {
	p.toR.Close()
	p.toW.Close()
	p.fromR.Close()
	p.fromW.Close()
}

// command is the process of browser id's Chromium: in its sandbox (box)
// when confined, else a child of Trawler's in dir. Either way the
// DevTools pipes' child ends are its fds 3 and 4.
func (r *ProcessRuntime) command(id, dir string, args []string, pipes *devtoolsPipes) (*exec.Cmd, *sandboxed, error) {
	conf := r.Confinement
	var cmd *exec.Cmd
	var box *sandboxed
	if conf.Confined {
		var err error
		if box, err = conf.command(r.Chromium, args); err != nil {
			return nil, nil, err
		}
		cmd = box.cmd
		cmd.ExtraFiles = append([]*os.File{pipes.toR, pipes.fromW}, box.files...)
	} else {
		cmd = exec.Command(r.Chromium, args...)
		cmd.Dir = dir
		cmd.ExtraFiles = []*os.File{pipes.toR, pipes.fromW}
	}
	cmd.Env = browserEnv()
	cmd.SysProcAttr = conf.procAttr()
	return cmd, box, nil
}

// readOutput keeps the last lines of browser id's error output in tail
// (and logs them at debug level); the channel is closed when the output
// has ended.
func (r *ProcessRuntime) readOutput(id string, stderr io.Reader, tail *LineTail) <-chan struct{} {
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			tail.Add(sc.Text())
			if r.Log != nil {
				r.Log.Debug("chromium", "browser", id, "line", sc.Text())
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	return logged
}

// wait waits for the browser's process to end, then records why and
// closes done.
func (b *processBrowser) wait() {
	err := b.cmd.Wait()
	if err == nil {
		err = errors.New("exit status 0")
	}
	b.mu.Lock()
	b.err = err
	b.mu.Unlock()
	close(b.done)
}

// awaitReady waits until browser b answers on its DevTools pipe, within
// ctx; a confined one first has its sandbox hand over its proxy listener,
// which Chromium waits for. It returns errExitedEarly if the browser's
// process ends first.
func (r *ProcessRuntime) awaitReady(ctx context.Context, b *processBrowser, box *sandboxed, timeout time.Duration) error {
	ready := make(chan error, 1)
	go func() {
		if box != nil {
			// The sandbox exists; Chromium starts once its proxy
			// listener is Trawler's.
			ln, err := box.handOff(timeout)
			if err != nil {
				ready <- err
				return
			}
			if b.setProxy(ln) {
				go r.serveProxy(b.id, ln)
			}
		}
		ready <- b.mux.Start(ctx)
	}()
	select {
	case err := <-ready:
		return err
	case <-b.done:
		return errExitedEarly
	}
}

// startFailure is the error of a browser that did not become ready (err),
// with the last lines of its output when it exited or did not answer in
// time. ctx is Start's own: its end is reported as it is.
func startFailure(ctx context.Context, err error, b *processBrowser, logged <-chan struct{}, tail *LineTail, timeout time.Duration) error {
	switch {
	case errors.Is(err, errExitedEarly) || errors.Is(err, cdp.ErrMuxClosed):
		select {
		case <-logged:
		case <-time.After(time.Second):
		}
		return fmt.Errorf("chromium exited before it answered on its DevTools pipe (%v): %s", b.Err(), tail.String())
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("chromium did not answer on its DevTools pipe within %s: %s", timeout, tail.String())
	}
	return fmt.Errorf("chromium's DevTools pipe: %w", err)
}

var errExitedEarly = errors.New("exited")

// closeBoth closes both ends of a browser's DevTools pipe.
type closeBoth [2]io.Closer

func (c closeBoth) Close() error { return errors.Join(c[0].Close(), c[1].Close()) }

// LineTail keeps the last lines of a browser's output, for the error
// message of a browser that failed to start. The zero value keeps five.
type LineTail struct {
	mu    sync.Mutex
	lines []string
}

// Add records one line of output.
func (t *LineTail) Add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	if len(t.lines) > 5 {
		t.lines = t.lines[1:]
	}
}

// String joins the lines kept with " | ".
func (t *LineTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == 0 {
		return "(no output)"
	}
	return strings.Join(t.lines, " | ")
}

// Reap kills the browsers of an earlier run found under Dir and removes
// their directories.
func (r *ProcessRuntime) Reap(ctx context.Context) (int, error) {
	entries, err := os.ReadDir(r.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("listing %s: %w", r.Dir, err)
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(r.Dir, e.Name())
		if raw, err := os.ReadFile(filepath.Join(dir, pidFile)); err == nil {
			if pid, ok := recordedProcess(string(raw), dir); ok {
				// The browser leads its own process group: kill all of it.
				syscall.Kill(-pid, syscall.SIGKILL)
				waitGone(pid, 5*time.Second)
				n++
			}
		}
		// Helpers that left the group (crashpad's handler daemonizes) or
		// are still dying are found by the directory on their command line.
		for _, pid := range dirUsers(dir) {
			syscall.Kill(pid, syscall.SIGKILL)
			waitGone(pid, 5*time.Second)
		}
		os.RemoveAll(dir)
	}
	return n, nil
}

// pidRecord is what a browser's pid file holds: its pid and its start
// time, so that Reap never kills another program that got the pid since.
func pidRecord(pid int) string { return strconv.Itoa(pid) + " " + startTime(pid) }

// recordedProcess returns the pid a pid file records when that process is
// still the one recorded: the same start time, or (a file from before
// start times were kept) a Chromium using dir.
func recordedProcess(record, dir string) (int, bool) {
	f := strings.Fields(record)
	if len(f) == 0 {
		return 0, false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return 0, false
	}
	if len(f) > 1 {
		return pid, f[1] != "" && startTime(pid) == f[1]
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return pid, err == nil && strings.Contains(string(raw), "--user-data-dir="+dir+"\x00")
}

// startTime is field 22 of /proc/PID/stat, the process's start time in
// clock ticks since boot, or "" when there is no such process.
func startTime(pid int) string {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The fields after the command name, which may hold spaces: state is
	// field 3, the start time field 22.
	rest := string(raw[bytes.LastIndexByte(raw, ')')+1:])
	f := strings.Fields(rest)
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// dirUsers lists the live processes whose command line names dir.
func dirUsers(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(raw, []byte(dir)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// childPIDs are the pids of process pid's children.
func childPIDs(pid int) []int {
	raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	var pids []int
	for _, f := range strings.Fields(string(raw)) {
		if n, err := strconv.Atoi(f); err == nil {
			pids = append(pids, n)
		}
	}
	return pids
}

func waitGone(pid int, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); err != nil {
			return
		}
		// A zombie still answers kill(0); its /proc status says Z.
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			if f := strings.Fields(string(st)); len(f) > 2 && f[2] == "Z" {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type processBrowser struct {
	id, dir  string
	cmd      *exec.Cmd
	confined bool // in bubblewrap's namespaces
	mux      *cdp.Mux
	done     chan struct{}

	mu        sync.Mutex
	err       error
	proxy     net.Listener // a confined browser's proxy port
	closed    bool
	closeOnce sync.Once
}

func (b *processBrowser) ID() string            { return b.id }
func (b *processBrowser) CDP() *cdp.Mux         { return b.mux }
func (b *processBrowser) Done() <-chan struct{} { return b.done }

func (b *processBrowser) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

func (b *processBrowser) kill() {
	// Negative pid: the whole process group (zygote, renderers, GPU process).
	syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
}

// closeWait is how long Close lets a confined browser's namespace empty
// before it kills the process group.
const closeWait = 2 * time.Second

func (b *processBrowser) Close() error {
	b.closeOnce.Do(func() {
		// A confined browser's processes live in bubblewrap's pid
		// namespace, whose init (the bubblewrap process's child) ends only
		// once every process in it has, and the crash handler that
		// Chromium starts in a session of its own is beyond the process
		// group's reach. Killing that init first, the outer bubblewrap
		// exits when the namespace is empty, so that no process of the
		// browser outlives Close; killing the group at once would let the
		// outer one end first.
		if b.confined {
			for _, pid := range childPIDs(b.cmd.Process.Pid) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			select {
			case <-b.done:
			case <-time.After(closeWait):
			}
		}
		b.kill()
		<-b.done
		b.mux.Close()
		b.mu.Lock()
		b.closed = true
		if b.proxy != nil {
			b.proxy.Close()
		}
		b.mu.Unlock()
		os.RemoveAll(b.dir)
	})
	return nil
}

// setProxy records the proxy listener of a confined browser, or closes it
// when the browser is closed already.
func (b *processBrowser) setProxy(ln net.Listener) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		ln.Close()
		return false
	}
	b.proxy = ln
	return true
}

// serveProxy hands each connection the browser makes to its proxy port to
// the egress proxy, until the listener closes with the browser.
func (r *ProcessRuntime) serveProxy(id string, ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		to, ok := netip.AddrFromSlice(c.LocalAddr().(*net.TCPAddr).IP.To4())
		if !ok || r.Egress == nil {
			c.Close()
			continue
		}
		r.Egress(id, to, c)
	}
}
