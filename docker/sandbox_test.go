package docker

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/docker/dockertest"
	"github.com/trawler-dev/trawler/docker/sandboxshim"
	"github.com/trawler-dev/trawler/test/polltest"
)

func newSandboxes(t *testing.T) *Sandboxes {
	t.Helper()
	dockertest.RequireSandboxImage(t)
	s, err := NewSandboxes(SandboxConfig{Instance: "test-" + uuid.NewString()[:8]})
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := s.Reap(context.Background())
		assert.NoError(t, err)
		s.Close()
	})
	return s
}

func bashJob(script string) sandboxshim.Job {
	return sandboxshim.Job{Argv: []string{"/usr/bin/bash", "-c", script}, Env: []string{"PATH=/usr/bin:/bin"}, Dir: "/tmp/run", Port: 9222}
}

func sandboxContainers(t *testing.T, s *Sandboxes) []string {
	return dockertest.Containers(t, "label="+labelInstance+"="+s.cfg.Instance)
}

// A sandbox runs its program with its output and exit code carried back,
// its connections to its loopback port served by Trawler and nothing else
// reachable, within its limits, and goes when the program ends.
func TestSandboxRunsAProgram(t *testing.T) {
	t.Parallel()
	s := newSandboxes(t)
	// A server on the host's loopback, which the sandbox must not reach.
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "host") }))
	defer host.Close()
	served := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "trawler saw %s", r.URL.Path)
	})}
	ln := &connListener{conns: make(chan net.Conn), done: make(chan struct{})}
	go served.Serve(ln)
	defer served.Close()

	script := strings.Join([]string{
		`echo out; echo err >&2`,
		`node -e 'fetch("http://127.0.0.1:9222/hello").then(r => r.text()).then(console.log)'`,
		`node -e 'fetch("` + host.URL + `").then(() => console.log("reached the host"), () => console.log("host unreachable"))'`,
		`node -e 'fetch("http://1.1.1.1/").then(() => console.log("reached the internet"), () => console.log("internet unreachable"))'`,
		// cgroup v2, else v1
		`cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes`,
		`cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max`,
		`touch /root-file 2>/dev/null && echo root writable || echo root read-only`,
		`echo tmp > /tmp/file && cat /tmp/file`,
		`echo uid $EUID`,
		`exit 3`,
	}, "\n")
	var stdout, stderr bytes.Buffer
	code, err := s.Run(context.Background(), uuid.NewString(), bashJob(script), ln.serve, &stdout, &stderr)
	require.NoError(t, err, "stderr: %s", stderr.String())
	assert.Equal(t, 3, code)
	assert.Equal(t, "err\n", stderr.String())
	want := fmt.Sprintf("out\ntrawler saw /hello\nhost unreachable\ninternet unreachable\n%d\n%d\nroot read-only\ntmp\nuid 1000\n", DefaultSandboxMemory, DefaultSandboxPids)
	assert.Equal(t, want, stdout.String())
	polltest.Until(t, 30*time.Second, "the sandbox's container removed after its run", func() bool { return len(sandboxContainers(t, s)) == 0 })
}

// A run cut off by its context (the execute timeout) returns at once with
// what the program wrote before, and its container, and what ran in it, go.
func TestSandboxKilledAtItsTimeout(t *testing.T) {
	t.Parallel()
	s := newSandboxes(t)
	// Cut off once the program runs: a busy engine may take seconds to
	// start it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stdout := &signalWriter{seen: make(chan struct{}), want: "started\n"}
	var stderr bytes.Buffer
	var cutAt time.Time
	go func() {
		<-stdout.seen
		cutAt = time.Now()
		cancel()
	}()
	_, err := s.Run(ctx, uuid.NewString(), bashJob(`echo started; sleep 60`), nil, stdout, &stderr)
	require.ErrorIs(t, err, context.Canceled, "stderr: %s", stderr.String())
	assert.Less(t, time.Since(cutAt), 5*time.Second, "the run returned long after it was cut off")
	assert.Equal(t, "started\n", stdout.String())
	polltest.Until(t, 30*time.Second, "the killed sandbox's container removed", func() bool { return len(sandboxContainers(t, s)) == 0 })
}

// signalWriter closes seen once what was written holds want.
type signalWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	had := strings.Contains(w.buf.String(), w.want)
	w.buf.Write(p)
	if !had && strings.Contains(w.buf.String(), w.want) {
		close(w.seen)
	}
	return len(p), nil
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// A sandbox whose Trawler died (kill -9: the attached streams drop) ends
// its program and goes by itself; one that never ran is removed by Reap.
func TestSandboxOrphansGo(t *testing.T) {
	t.Parallel()
	s := newSandboxes(t)
	labels := []string{"--label", labelSandbox + "=1", "--label", labelInstance + "=" + s.cfg.Instance}
	// The docker CLI stands in for Trawler: attached, then killed.
	args := append([]string{"run", "-i", "--rm", "--network", "none"}, labels...)
	cli := exec.Command("docker", append(args, DefaultSandboxImage)...)
	stdin, err := cli.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cli.Start())
	defer stdin.Close()
	polltest.Until(t, time.Minute, "the attached sandbox running", func() bool {
		out, err := exec.Command("docker", "ps", "-q", "--filter", "status=running", "--filter", "label="+labelInstance+"="+s.cfg.Instance).Output()
		return err == nil && len(strings.Fields(string(out))) == 1
	})
	require.NoError(t, cli.Process.Kill())
	cli.Wait()
	polltest.Until(t, 30*time.Second, "the abandoned sandbox gone by itself", func() bool { return len(sandboxContainers(t, s)) == 0 })

	out, err := exec.Command("docker", append(append([]string{"create"}, labels...), DefaultSandboxImage)...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	n, err := s.Reap(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, n, "sandboxes reaped")
	assert.Empty(t, sandboxContainers(t, s))
}

// connListener is a net.Listener of the connections handed to serve.
type connListener struct {
	conns chan net.Conn
	done  chan struct{}
}

func (l *connListener) serve(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	select {
	case <-l.done:
	default:
		close(l.done)
	}
	return nil
}

func (l *connListener) Addr() net.Addr { return &net.UnixAddr{Name: "sandbox", Net: "unix"} }
