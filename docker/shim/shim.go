// Package shim is the program that runs in each browser container
// (cmd/trawler-shim, the image's entrypoint) and its counterpart in Trawler.
// The container has a network namespace of its own with nothing in it but
// loopback, so the only ways in and out are the container's standard
// streams, which Trawler attaches to through the Docker engine. Over them the
// two sides run one yamux session:
//
//   - the first stream Trawler opens is Chromium's DevTools pipe (Chromium
//     runs with --remote-debugging-pipe: it listens on no port, in the
//     container or anywhere else);
//   - every connection Chromium makes to its proxy, a port in the
//     container that the shim listens on, becomes a stream the shim opens,
//     which Trawler hands to its egress proxy. The stream starts with the
//     four bytes of the IPv4 address the connection was made to: the
//     browser's own proxy is 127.0.0.1, and each browser context Trawler
//     makes is given another loopback address, so that the egress proxy
//     tells contexts (and the teams and requests they serve) apart.
//
// So a page can reach neither the DevTools of its own browser nor anything
// else but what the egress proxy lets through, and no container can reach
// another. Chromium's own output goes to the container's stderr.
package shim

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/yamux"
)

// Protocol names the stream conventions above; the shim prints it first
// on stderr so that a mismatched image is named in Trawler's error.
const Protocol = "trawler-shim/2"

// ProxyPort is the loopback port in the container that Chromium's
// --proxy-server names.
const ProxyPort = 3128

// YamuxConfig is the yamux configuration of both sides: writes may wait on the
// engine for a while without the session being declared dead, and a
// screenshot of tens of megabytes moves in large windows.
func YamuxConfig(log io.Writer) *yamux.Config {
	c := yamux.DefaultConfig()
	c.ConnectionWriteTimeout = time.Minute
	c.MaxStreamWindowSize = 4 << 20
	c.StreamOpenTimeout = 30 * time.Second
	c.LogOutput = log
	return c
}

// Main runs the shim: trawler-shim [-proxy-port N] -- CHROMIUM ARGS...
// It returns the exit code: Chromium's, or 128+signal if a signal ended it.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("trawler-shim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	port := fs.Int("proxy-port", ProxyPort, "loopback port of the proxy Chromium is told to use")
	// In the container's own network namespace only loopback exists, so
	// listening on every address hears all of 127/8 and nothing else.
	host := fs.String("proxy-listen", "0.0.0.0", "address to listen on for the browser's proxy connections")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "usage: trawler-shim [-proxy-port N] -- CHROMIUM [ARGS...]")
		return 2
	}
	fmt.Fprintln(stderr, Protocol)
	code, err := run(fs.Args(), net.JoinHostPort(*host, strconv.Itoa(*port)), stdin, stdout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "trawler-shim:", err)
	}
	return code
}

func run(command []string, listen string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	ln, err := net.Listen("tcp4", listen)
	if err != nil {
		return 1, fmt.Errorf("listening for the browser's proxy connections: %w", err)
	}
	defer ln.Close()
	toR, toW, err := os.Pipe()
	if err != nil {
		return 1, err
	}
	fromR, fromW, err := os.Pipe()
	if err != nil {
		return 1, err
	}
	cmd := exec.Command(command[0], command[1:]...)
	// Chromium reads commands from fd 3 and writes to fd 4; stdout is the
	// yamux session's.
	cmd.ExtraFiles = []*os.File{toR, fromW}
	cmd.Stdout, cmd.Stderr = stderr, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	toR.Close()
	fromW.Close()
	if err != nil {
		return 1, fmt.Errorf("starting %s: %w", command[0], err)
	}
	kill := func(sig syscall.Signal) { syscall.Kill(-cmd.Process.Pid, sig) }
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	// The session is never closed: closing waits for its reader, which
	// waits on stdin, and the process is about to exit anyway.
	sess, err := yamux.Server(Stdio{stdin, stdout}, YamuxConfig(stderr))
	if err != nil {
		kill(syscall.SIGKILL)
		<-exited
		return 1, err
	}
	go func() {
		// The first stream is the DevTools pipe.
		s, err := sess.Accept()
		if err != nil {
			return
		}
		go func() {
			io.Copy(toW, s)
			toW.Close()
		}()
		io.Copy(s, fromR)
		s.Close()
	}()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				s, err := sess.Open()
				if err != nil {
					c.Close()
					return
				}
				var to [4]byte
				if a, ok := c.LocalAddr().(*net.TCPAddr); ok && a.IP.To4() != nil {
					copy(to[:], a.IP.To4())
				}
				if _, err := s.Write(to[:]); err != nil {
					c.Close()
					s.Close()
					return
				}
				Splice(c, s)
			}()
		}
	}()

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	var waitErr error
	select {
	case waitErr = <-exited:
	case <-sess.CloseChan():
		// Trawler went away: so does its browser.
		kill(syscall.SIGKILL)
		waitErr = <-exited
	case <-sigs:
		kill(syscall.SIGTERM)
		select {
		case waitErr = <-exited:
		case <-time.After(2 * time.Second):
			kill(syscall.SIGKILL)
			waitErr = <-exited
		}
	}
	return ExitCode(waitErr), nil
}

// ExitCode is the exit code of a program that ended with err: its own,
// 128+signal when a signal ended it.
func ExitCode(err error) int {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		if err == nil {
			return 0
		}
		return 1
	}
	if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
		return 128 + int(st.Signal())
	}
	return ee.ExitCode()
}

// Stdio is the container's end of a session: stdin in, stdout out.
type Stdio struct {
	io.Reader
	io.Writer
}

func (Stdio) Close() error { return nil }

// Session is Trawler's end of a browser container's yamux session.
type Session struct {
	sess *yamux.Session
	cdp  net.Conn
}

// Connect starts Trawler's end over conn (the container's attached
// streams: stdout to read, stdin to write), opens the DevTools stream and
// hands every proxy stream the shim opens to egress, with the loopback
// address the browser dialled, until the session ends.
func Connect(conn io.ReadWriteCloser, egress func(to netip.Addr, c net.Conn), log io.Writer) (*Session, error) {
	sess, err := yamux.Client(conn, YamuxConfig(log))
	if err != nil {
		return nil, err
	}
	cdp, err := sess.Open()
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("opening the DevTools stream: %w", err)
	}
	go func() {
		for {
			s, err := sess.Accept()
			if err != nil {
				return
			}
			if egress == nil {
				s.Close()
				continue
			}
			go func() {
				var to [4]byte
				s.SetReadDeadline(time.Now().Add(30 * time.Second))
				if _, err := io.ReadFull(s, to[:]); err != nil {
					s.Close()
					return
				}
				s.SetReadDeadline(time.Time{})
				egress(netip.AddrFrom4(to), s)
			}()
		}
	}()
	return &Session{sess: sess, cdp: cdp}, nil
}

// CDP is the browser's DevTools pipe.
func (s *Session) CDP() net.Conn { return s.cdp }

// Done is closed when the session has ended.
func (s *Session) Done() <-chan struct{} { return s.sess.CloseChan() }

// Close ends the session.
func (s *Session) Close() error { return s.sess.Close() }

// Splice copies both ways until either side ends, then closes both.
func Splice(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	cp := func(dst, src net.Conn) {
		defer wg.Done()
		io.Copy(dst, src)
		if c, ok := dst.(interface{ CloseWrite() error }); ok {
			c.CloseWrite()
		} else {
			dst.Close()
		}
	}
	go cp(a, b)
	go cp(b, a)
	wg.Wait()
	a.Close()
	b.Close()
}
