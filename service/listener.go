package service

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trawler-dev/trawler/wire"
)

// Listener wraps ln, the listener Server serves the service's Handler on,
// with what net/http's server does not do on its own.
//
// It caps the connections one client address holds open at once at
// maxPerAddress (TRAWLER_MAX_CONNS_PER_ADDRESS): past it, a connection is
// answered 429 RATE_LIMITED with Retry-After and closed before net/http
// sees it, so that one client cannot take every descriptor of the process.
//
// And the answers net/http's server writes on its own, before any handler
// runs, come out in the API's error shape ({"success":false,"error":…,
// "code":…}) like every other answer rather than as Go's plain text: a
// request it cannot parse (a control character in a header value, a
// malformed request line or Host), headers past its size limit, a transfer
// coding or protocol version it does not speak, an Expect it cannot meet.
// The server writes each such answer in one Write on the connection, with a
// fixed header block no handler's answer has (a handler's always carries a
// Date), so it is recognised exactly; a connection that switched protocols
// (a WebSocket) is never inspected again.
func Listener(ln net.Listener, maxPerAddress int) net.Listener {
	body, _ := json.Marshal(wire.ErrorBody{Code: "RATE_LIMITED", Message: fmt.Sprintf(
		"too many connections from your address: at most %d are served at once; close one, or retry later", maxPerAddress)})
	return &serviceListener{
		Listener: ln,
		max:      maxPerAddress,
		open:     map[netip.Addr]int{},
		refusal: fmt.Appendf(nil, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nContent-Length: %d\r\nRetry-After: %d\r\nConnection: close\r\n\r\n%s",
			len(body), refusalRetryAfter, body),
		lingering: make(chan struct{}, maxLingering),
	}
}

const (
	// refusalRetryAfter is the Retry-After, in seconds, of a connection
	// refused for its address's cap.
	refusalRetryAfter = 5
	// refusalLinger is how long a refused connection is read from, after
	// its answer, before it is closed: a client whose request was still
	// unread would otherwise get a reset in place of the answer.
	refusalLinger = time.Second
	// maxLingering bounds the refused connections lingering at once; past
	// it, a refused connection is closed as soon as it is answered, so that
	// refusing cannot hold descriptors either.
	maxLingering = 64
)

type serviceListener struct {
	net.Listener
	max     int
	refusal []byte // the 429, whole

	mu   sync.Mutex
	open map[netip.Addr]int // connections open, by client address

	lingering chan struct{} // a token per refused connection lingering
}

func (l *serviceListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr, counted := clientAddr(c)
		if counted && !l.admit(addr) {
			go l.refuse(c)
			continue
		}
		jc := &jsonErrorConn{Conn: c}
		if counted {
			jc.release = func() { l.leave(addr) }
		}
		return jc, nil
	}
}

// clientAddr is the address c's connections are counted under; ok is
// false for a connection that is not over IP.
func clientAddr(c net.Conn) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return netip.Addr{}, false
	}
	return ap.Addr().Unmap(), true
}

// admit counts one more connection from addr, unless it has its most.
func (l *serviceListener) admit(addr netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[addr] >= l.max {
		return false
	}
	l.open[addr]++
	return true
}

func (l *serviceListener) leave(addr netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[addr]--; l.open[addr] <= 0 {
		delete(l.open, addr)
	}
}

// refuse answers c with the 429 and closes it, after reading what the
// client sends for a moment, when few refused connections are lingering.
func (l *serviceListener) refuse(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(refusalLinger))
	if _, err := c.Write(l.refusal); err != nil {
		return
	}
	select {
	case l.lingering <- struct{}{}:
		defer func() { <-l.lingering }()
	default:
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	io.Copy(io.Discard, c)
}

// jsonErrorConn is a connection the listener accepted: it rewrites
// net/http's own answers on it (Write), and gives its place under its
// address's cap back when closed.
type jsonErrorConn struct {
	net.Conn
	// upgraded is set once the connection switched protocols: what it
	// carries after that is not HTTP.
	upgraded atomic.Bool
	// release, when set, gives the connection's place under its address's
	// cap back, once, on the first Close.
	release func()
	closed  sync.Once
}

// Close closes the connection, net/http's or a hijacker's.
func (c *jsonErrorConn) Close() error {
	if c.release != nil {
		c.closed.Do(c.release)
	}
	return c.Conn.Close()
}

// CloseWrite lets the server half-close the connection as it does on a
// bare TCP connection, so that a client still sending reads the answer
// rather than a reset.
func (c *jsonErrorConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *jsonErrorConn) Write(p []byte) (int, error) {
	if c.upgraded.Load() || !bytes.HasPrefix(p, []byte("HTTP/1.1 ")) {
		return c.Conn.Write(p)
	}
	if bytes.HasPrefix(p, []byte("HTTP/1.1 101 ")) {
		c.upgraded.Store(true)
		return c.Conn.Write(p)
	}
	out, ok := rewriteCanned(p)
	if !ok {
		return c.Conn.Write(p)
	}
	if _, err := c.Conn.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

var (
	// cannedError is net/http's own answer to a request it cannot serve
	// (server.go: "HTTP/1.1 "+status+errorHeaders+text).
	cannedError = regexp.MustCompile("^HTTP/1\\.1 (\\d{3}) ([^\r\n]*)\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n([^\r\n]*)$")
	// cannedExpectation is its answer to an Expect other than
	// 100-continue: a 417 without a body.
	cannedExpectation = regexp.MustCompile("^HTTP/1\\.1 417 Expectation Failed\r\n(?:[A-Za-z-]+: [^\r\n]*\r\n)*\r\n$")
)

// rewriteCanned turns one of net/http's own error answers into the API's
// error shape; ok is false for anything else.
func rewriteCanned(p []byte) (out []byte, ok bool) {
	var status int
	var code, msg string
	switch m := cannedError.FindSubmatch(p); {
	case m != nil:
		status, _ = strconv.Atoi(string(m[1]))
		status, code, msg = describeCanned(status, string(m[2]))
	case cannedExpectation.Match(p) && bytes.Contains(p, []byte("\r\nContent-Length: 0\r\n")):
		status, code, msg = http.StatusExpectationFailed, "EXPECTATION_FAILED",
			"the Expect header must be 100-continue or absent"
	default:
		return nil, false
	}
	body, _ := json.Marshal(wire.ErrorBody{Code: code, Message: msg})
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(body), body), true
}

// describeCanned says what went wrong in a request net/http refused, given
// the status and reason of its answer. A request the server cannot read is
// the client's mistake: it is answered with a 4xx even where net/http says
// 501 (a transfer coding) or 505 (a protocol version).
func describeCanned(status int, reason string) (int, string, string) {
	switch {
	case status == http.StatusRequestHeaderFieldsTooLarge:
		return status, "HEADERS_TOO_LARGE", fmt.Sprintf("the request's line and headers are larger than the server accepts (%d MB together)", maxHeaderBytes>>20)
	case status == http.StatusNotImplemented:
		return http.StatusBadRequest, "BAD_REQUEST", "the request's Transfer-Encoding is not supported: send chunked or a Content-Length"
	case status == http.StatusHTTPVersionNotSupported:
		return http.StatusBadRequest, "BAD_REQUEST", "the request's HTTP version is not supported: send HTTP/1.1"
	}
	switch reason {
	case "Bad Request: invalid header value":
		return http.StatusBadRequest, "BAD_REQUEST", "a request header has an invalid value: control characters such as CR, LF and NUL are not allowed in header values"
	case "Bad Request: invalid header name":
		return http.StatusBadRequest, "BAD_REQUEST", "a request header has an invalid name"
	case "Bad Request: missing required Host header":
		return http.StatusBadRequest, "BAD_REQUEST", "the request has no Host header"
	case "Bad Request: malformed Host header":
		return http.StatusBadRequest, "BAD_REQUEST", "the request's Host header is malformed"
	}
	return http.StatusBadRequest, "BAD_REQUEST", "the request is not valid HTTP/1.1: its request line or a header is malformed " +
		"(control characters such as CR, LF and NUL are not allowed in header values)"
}
