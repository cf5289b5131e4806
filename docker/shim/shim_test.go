package shim

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trawler-dev/trawler/test/polltest"
)

// TestShim runs the shim in-process around a stand-in for Chromium that
// echoes its DevTools pipe (fd 3 to fd 4), and checks both halves of the
// protocol: the first stream Trawler opens is that pipe, and a connection to
// the shim's proxy port arrives at Trawler as a stream.
func TestShim(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()

	// The shim's stdin and stdout, seen from Trawler's side.
	toShimR, toShimW := io.Pipe()
	fromShimR, fromShimW := io.Pipe()
	stderrR, stderrW := io.Pipe()
	stderr := bufio.NewReader(stderrR)
	exited := make(chan int, 1)
	go func() {
		exited <- Main([]string{"-proxy-listen", "127.0.0.1", "-proxy-port", strconv.Itoa(port), "--", "sh", "-c", "cat <&3 >&4"}, toShimR, fromShimW, stderrW)
		fromShimW.Close()
		stderrW.Close()
	}()
	if line, _ := stderr.ReadString('\n'); strings.TrimSpace(line) != Protocol {
		t.Fatalf("first line on stderr %q, want %q", line, Protocol)
	}
	go io.Copy(io.Discard, stderr)

	egress := make(chan net.Conn, 1)
	sess, err := Connect(pipeConn{fromShimR, toShimW}, func(to netip.Addr, c net.Conn) {
		if to != netip.MustParseAddr("127.0.0.1") {
			t.Errorf("the stream says the browser dialled %s, want 127.0.0.1", to)
		}
		egress <- c
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	msg := `{"id":1,"method":"Browser.getVersion"}` + "\x00"
	if _, err := io.WriteString(sess.CDP(), msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(sess.CDP(), got); err != nil || string(got) != msg {
		t.Fatalf("the DevTools stream echoed %q, %v", got, err)
	}

	// A connection to the proxy port reaches Trawler as a stream.
	var c net.Conn
	polltest.UntilState(t, 10*time.Second, "the proxy port to accept", func() bool {
		c, err = net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		return err == nil
	}, func() string { return err.Error() })
	defer c.Close()
	io.WriteString(c, "CONNECT example.org:443 HTTP/1.1\r\n\r\n")
	select {
	case s := <-egress:
		line, _ := bufio.NewReader(s).ReadString('\n')
		if !strings.HasPrefix(line, "CONNECT example.org:443") {
			t.Errorf("the proxy stream carried %q", line)
		}
		s.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("no stream for the proxy connection")
	}

	// Trawler going away ends the shim and its browser.
	sess.Close()
	toShimW.Close()
	select {
	case code := <-exited:
		if code != 128+9 {
			t.Logf("exit code %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the shim outlived Trawler's end of the session")
	}
}

type pipeConn struct {
	io.Reader
	w io.WriteCloser
}

func (p pipeConn) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p pipeConn) Close() error                { return p.w.Close() }
