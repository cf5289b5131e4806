package sessions

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ChromiumFlags are the flags every Chromium that Trawler starts runs with.
// The network ones matter on machines without internet access, where
// Chromium otherwise floods the network with refused background requests.
var ChromiumFlags = []string{
	"--headless=new",
	"--no-sandbox",
	"--disable-gpu",
	"--disable-background-networking",
	"--disable-component-update",
	"--disable-sync",
	"--no-first-run",
	"--disable-quic",
	"--no-default-browser-check",
	"--disable-breakpad",
	"--disable-crash-reporter",
	"--disable-domain-reliability",
	"--disable-features=Translate,MediaRouter,OptimizationHints",
	"--disable-dev-shm-usage",
	"--metrics-recording-only",
	"--mute-audio",
	"--password-store=basic",
	"--use-mock-keychain",
	"--hide-scrollbars",
	"--remote-debugging-address=127.0.0.1",
	"--remote-debugging-port=0",
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
	// --host-resolver-rules or --proxy-server.
	ExtraFlags []string
}

var _ Runtime = (*ProcessRuntime)(nil)

const pidFile = "trawler.pid"

var devtoolsLine = regexp.MustCompile(`DevTools listening on (ws://\S+)`)

// Start launches Chromium and waits for its DevTools endpoint.
func (r *ProcessRuntime) Start(ctx context.Context, id string) (Browser, error) {
	dir := filepath.Join(r.Dir, id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating user-data directory: %w", err)
	}
	args := append(append(append([]string{}, ChromiumFlags...), r.ExtraFlags...), "--user-data-dir="+dir, "about:blank")
	cmd := exec.Command(r.Chromium, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Dir = dir
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting %s: %w", r.Chromium, err)
	}
	b := &processBrowser{id: id, dir: dir, cmd: cmd, done: make(chan struct{})}
	if err := os.WriteFile(filepath.Join(dir, pidFile), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600); err != nil {
		b.kill()
		cmd.Wait()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("recording browser pid: %w", err)
	}

	found := make(chan string, 1)
	failed := make(chan string, 1) // the last lines before an early exit
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		var tail []string
		sent := false
		for sc.Scan() {
			line := sc.Text()
			if !sent {
				if m := devtoolsLine.FindStringSubmatch(line); m != nil {
					found <- m[1]
					sent = true
					continue
				}
				tail = append(tail, line)
				if len(tail) > 5 {
					tail = tail[1:]
				}
			}
			if r.Log != nil {
				r.Log.Debug("chromium", "browser", id, "line", line)
			}
		}
		if !sent {
			failed <- strings.Join(tail, " | ")
		}
		io.Copy(io.Discard, stderr)
	}()
	go func() {
		err := cmd.Wait()
		if err == nil {
			err = errors.New("exit status 0")
		}
		b.mu.Lock()
		b.err = err
		b.mu.Unlock()
		close(b.done)
	}()

	timeout := r.StartTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case u := <-found:
		b.url = u
		return b, nil
	case <-b.done:
		b.Close()
		var lines string
		select {
		case lines = <-failed:
		case <-time.After(time.Second):
		}
		return nil, fmt.Errorf("chromium exited before its DevTools endpoint was ready (%v): %s", b.Err(), lines)
	case <-timer.C:
		b.Close()
		return nil, fmt.Errorf("chromium did not open its DevTools endpoint within %s", timeout)
	case <-ctx.Done():
		b.Close()
		return nil, ctx.Err()
	}
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
			if pid, err := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil && ownsDir(pid, dir) {
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

// ownsDir reports whether process pid is a Chromium using dir, so that a
// recycled pid never gets another program killed.
func ownsDir(pid int, dir string) bool {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	return strings.Contains(string(raw), "--user-data-dir="+dir+"\x00")
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
	id, dir, url string
	cmd          *exec.Cmd
	done         chan struct{}

	mu        sync.Mutex
	err       error
	closeOnce sync.Once
}

func (b *processBrowser) ID() string            { return b.id }
func (b *processBrowser) DevToolsURL() string   { return b.url }
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

func (b *processBrowser) Close() error {
	b.closeOnce.Do(func() {
		b.kill()
		<-b.done
		os.RemoveAll(b.dir)
	})
	return nil
}
