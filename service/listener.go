package service

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"sync/atomic"

	"github.com/trawler-dev/trawler/wire"
)

// Listener wraps ln so that the answers net/http's server writes on its
// own, before any handler runs, come out in the API's error shape
// ({"success":false,"error":…,"code":…}) like every other answer rather
// than as Go's plain text: a request it cannot parse (a control character
// in a header value, a malformed request line or Host), headers past its
// size limit, a transfer coding or protocol version it does not speak, an
// Expect it cannot meet. Whoever serves Handler serves it on a listener
// wrapped by Listener.
//
// The server writes each such answer in one Write on the connection, with a
// fixed header block no handler's answer has (a handler's always carries a
// Date), so it is recognised exactly; a connection that switched protocols
// (a WebSocket) is never inspected again.
func Listener(ln net.Listener) net.Listener { return jsonErrorListener{ln} }

type jsonErrorListener struct{ net.Listener }

func (l jsonErrorListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &jsonErrorConn{Conn: c}, nil
}

type jsonErrorConn struct {
	net.Conn
	// upgraded is set once the connection switched protocols: what it
	// carries after that is not HTTP.
	upgraded atomic.Bool
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
		return status, "HEADERS_TOO_LARGE", "the request's headers are larger than the server accepts (1 MB)"
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
