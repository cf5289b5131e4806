// Package egresstest runs real upstream proxies from Debian, tinyproxy
// (HTTP) and microsocks (SOCKS5), for the egress proxy's tests, and reads
// their logs to prove what went through them.
package egresstest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Tinyproxy is a running tinyproxy on a loopback port.
type Tinyproxy struct {
	Addr string // 127.0.0.1:port
	log  string
	cmd  *exec.Cmd
}

// URL is the proxy's URL for TRAWLER_PROXIES, with user:password when
// given.
func (p *Tinyproxy) URL(userinfo string) string {
	if userinfo != "" {
		userinfo += "@"
	}
	return "http://" + userinfo + p.Addr
}

// Log is tinyproxy's log so far.
func (p *Tinyproxy) Log() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// Saw says whether tinyproxy's log shows a request for target (host:port,
// or an absolute URL's host and port).
func (p *Tinyproxy) Saw(target string) bool { return strings.Contains(p.Log(), target) }

// Stop kills tinyproxy: its port then refuses connections.
func (p *Tinyproxy) Stop() {
	if p.cmd.Process != nil {
		p.cmd.Process.Kill()
		p.cmd.Wait()
	}
}

// StartTinyproxy starts tinyproxy for the test, with basic auth when
// userinfo (user:password) is given. The test is skipped when tinyproxy is
// not installed, unless CI is set (make test-deps installs it).
func StartTinyproxy(t testing.TB, userinfo string) *Tinyproxy {
	t.Helper()
	bin, port := program(t, "tinyproxy")
	dir := t.TempDir()
	p := &Tinyproxy{Addr: fmt.Sprintf("127.0.0.1:%d", port), log: filepath.Join(dir, "tinyproxy.log")}
	// No ConnectPort line: CONNECT to any port (test sites are on high
	// loopback ports).
	conf := fmt.Sprintf("Port %d\nListen 127.0.0.1\nTimeout 60\nLogFile %q\nLogLevel Info\nMaxClients 100\nAllow 127.0.0.1\nDisableViaHeader Yes\n", port, p.log)
	if userinfo != "" {
		user, pw, _ := strings.Cut(userinfo, ":")
		conf += fmt.Sprintf("BasicAuth %s %s\n", user, pw)
	}
	cf := filepath.Join(dir, "tinyproxy.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin, "-d", "-c", cf)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	waitListening(t, "tinyproxy", p.Addr)
	return p
}

// Microsocks is a running microsocks, Debian's small SOCKS5 server, on a
// loopback port.
type Microsocks struct {
	Addr string // 127.0.0.1:port
	out  *lockedBuffer
	cmd  *exec.Cmd
}

// URL is the server's URL for TRAWLER_PROXIES, with user:password when
// given.
func (p *Microsocks) URL(userinfo string) string {
	if userinfo != "" {
		userinfo += "@"
	}
	return "socks5://" + userinfo + p.Addr
}

// Saw says whether microsocks reported a connection to target (host:port).
func (p *Microsocks) Saw(target string) bool {
	return strings.Contains(p.out.String(), "connected to "+target)
}

// StartMicrosocks starts microsocks for the test, requiring user:password
// (userinfo). Skipped like StartTinyproxy when it is not installed.
func StartMicrosocks(t testing.TB, userinfo string) *Microsocks {
	t.Helper()
	bin, port := program(t, "microsocks")
	user, pw, _ := strings.Cut(userinfo, ":")
	p := &Microsocks{Addr: fmt.Sprintf("127.0.0.1:%d", port), out: &lockedBuffer{}}
	p.cmd = exec.Command(bin, "-i", "127.0.0.1", "-p", fmt.Sprint(port), "-u", user, "-P", pw)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		p.cmd.Wait()
	})
	waitListening(t, "microsocks", p.Addr)
	return p
}

// lockedBuffer is a bytes.Buffer that a process writes while a test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// program finds Debian's program name and a free loopback port for it. The
// test is skipped when the program is not installed, unless CI is set
// (make test-deps installs it).
func program(t testing.TB, name string) (bin string, port int) {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed (scripts/install-deps.sh test installs it)", name)
		}
		t.Skipf("%s is not installed (apt-get install %s)", name, name)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return bin, port
}

// waitListening waits up to 10 s for name to accept connections at addr.
func waitListening(t testing.TB, name, addr string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not listen on %s: %v", name, addr, err)
		}
	}
}
