package sandboxshim

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/test/polltest"
)

// pipes connects Main, as the container would run it, to Run over two
// in-memory pipes standing for the container's stdin and stdout.
type pipes struct {
	r *io.PipeReader
	w *io.PipeWriter
}

func (p pipes) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p pipes) Write(b []byte) (int, error) { return p.w.Write(b) }

// Close is Trawler's end going: the sandbox's stdin ends, and what it
// writes goes nowhere (as the engine discards it).
func (p pipes) Close() error {
	p.r.Close()
	return p.w.Close()
}

// startSandbox runs Main in the background and returns Trawler's end of
// its session and a channel with Main's exit code.
func startSandbox(t *testing.T) (io.ReadWriteCloser, <-chan int) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	exited := make(chan int, 1)
	go func() {
		code := Main(inR, outW, io.Discard)
		outW.Close()
		exited <- code
	}()
	t.Cleanup(func() { inW.Close() })
	return pipes{r: outR, w: inW}, exited
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// The job's files are written, its output and exit code come back apart,
// and its connections to the loopback port reach Trawler's serve.
func TestRunCarriesOutputExitAndConnections(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	port := freePort(t)
	conn, exited := startSandbox(t)
	serve := func(c net.Conn) {
		defer c.Close()
		line, _ := bufio.NewReader(c).ReadString('\n')
		io.WriteString(c, "trawler heard "+line)
	}
	script := `cat note.txt; echo to-stderr >&2
exec 3<>/dev/tcp/127.0.0.1/` + strconv.Itoa(port) + `
echo ping >&3; head -1 <&3
exit 7`
	job := Job{
		Argv: []string{"bash", "-c", script}, Env: []string{"PATH=" + os.Getenv("PATH")},
		Dir: filepath.Join(dir, "run"), Port: port,
		Files: []File{{Path: filepath.Join(dir, "run", "note.txt"), Mode: 0o600, Data: "a note\n"}},
	}
	var stdout, stderr bytes.Buffer
	code, err := Run(context.Background(), conn, job, serve, &stdout, &stderr, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 7, code)
	assert.Equal(t, "a note\ntrawler heard ping\n", stdout.String())
	assert.Equal(t, "to-stderr\n", stderr.String())
	select {
	case c := <-exited:
		assert.Zero(t, c, "the sandbox's own exit code")
	case <-time.After(10 * time.Second):
		t.Fatal("the sandbox did not exit once Trawler had the outcome")
	}
}

// A program that cannot start is reported, not hung on.
func TestRunReportsAProgramThatCannotStart(t *testing.T) {
	t.Parallel()
	conn, _ := startSandbox(t)
	var stdout, stderr bytes.Buffer
	code, err := Run(context.Background(), conn, Job{Argv: []string{"/no/such/program"}}, nil, &stdout, &stderr, io.Discard)
	require.ErrorContains(t, err, "starting /no/such/program")
	assert.Equal(t, 127, code)
}

// When Trawler goes away (its end of the streams closes), the sandbox
// kills the program, and what it started, and exits.
func TestSandboxEndsWithTrawler(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	conn, exited := startSandbox(t)
	ctx, cancel := context.WithCancel(context.Background())
	stdout := &lineWaiter{line: "started\n", seen: make(chan struct{})}
	go func() {
		<-stdout.seen
		cancel()
	}()
	job := Job{Argv: []string{"bash", "-c", "sleep 60 & echo $! > " + pidFile + "; echo started; wait"}, Env: []string{"PATH=" + os.Getenv("PATH")}}
	_, err := Run(ctx, conn, job, nil, stdout, io.Discard, io.Discard)
	require.ErrorIs(t, err, context.Canceled)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the sandbox outlived Trawler's end of its streams")
	}
	raw, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	require.NoError(t, err)
	polltest.Until(t, 10*time.Second, fmt.Sprintf("the program's child %d to end", pid), func() bool {
		return syscall.Kill(pid, 0) != nil
	})
}

type lineWaiter struct {
	buf  bytes.Buffer
	line string
	seen chan struct{}
}

func (w *lineWaiter) Write(p []byte) (int, error) {
	had := strings.Contains(w.buf.String(), w.line)
	w.buf.Write(p)
	if !had && strings.Contains(w.buf.String(), w.line) {
		close(w.seen)
	}
	return len(p), nil
}
