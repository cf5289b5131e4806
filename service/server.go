package service

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/trawler-dev/trawler/wire"
)

const (
	// headerTimeout bounds how long a client takes to send a request's
	// line and headers.
	headerTimeout = 10 * time.Second
	// idleTimeout is how long a kept-alive connection may wait for its
	// next request: a client's idle connections count against
	// TRAWLER_MAX_CONNS_PER_ADDRESS, so they must not be held forever.
	idleTimeout = 2 * time.Minute
	// maxHeaderBytes is the most a request's line and headers may take
	// together. net/http reads up to its MaxHeaderBytes plus 4096 bytes of
	// slack for its buffer before it refuses a request, so the server is
	// given the difference: the limit docs/api.md states is the real one.
	maxHeaderBytes = 1 << 20

	// bodyGrace is how long a request body may take before the floor rate
	// applies, counted from the first read of it: enough for a client that
	// waits for 100 Continue, or starts slowly.
	bodyGrace = 10 * time.Second
	// bodyFloorRate is the slowest, in bytes a second on average since the
	// first read, that a body may arrive once bodyGrace is spent. A client
	// that sends slower holds a connection and a handler for nothing: a
	// 10 MB JSON body gets about ten minutes, a 50 MB upload about an hour.
	bodyFloorRate = 16 << 10
	// bodyReadAllowance is the time one more read is given, as bytes at the
	// floor rate, on top of what the bytes read so far earned.
	bodyReadAllowance = 4 << 10
	// drainGrace is how long the server reads what is left of a body it
	// answered without reading to its end, before it closes the
	// connection: a client that has sent it all then reads the answer
	// rather than a reset, and one still sending is not waited for.
	drainGrace = time.Second
)

// Server is the HTTP server that serves h (the service's Handler) on a
// listener wrapped by Listener: the header timeout and limit, an idle
// timeout for kept-alive connections, and a deadline on reading every
// request body (see bodyDeadlines). cmd/trawler and the bench serve the
// service through it, so that its limits are written once.
func Server(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           bodyDeadlines(h),
		ReadHeaderTimeout: headerTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes - 4096,
		// OPTIONS * is the API's 404 too, not net/http's empty 200.
		DisableGeneralOptionsHandler: true,
	}
}

// bodyDeadlines puts a read deadline on each request body, scaled to what
// has been read: by bodyGrace after its first read, plus the time its bytes
// take at bodyFloorRate. net/http only bounds the headers; without this, a
// client that sends a declared body a byte at a time holds its connection
// and its handler for as long as it likes, JSON bodies and parse uploads
// alike, chunked or not.
//
// A body cut off is answered 408 REQUEST_TIMEOUT, whatever the handler made
// of the failed read, and the connection is closed. Of a body the handler
// answered without reading to its end, net/http reads what is left (up to
// 256 KB, to keep the connection); it is given drainGrace for it, after
// which the connection is closed, rather than no deadline at all.
//
// A request without a body is left alone, which leaves WebSocket handshakes
// (GET, without a body) and the connections they hijack to their own rules.
func bodyDeadlines(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		b := &deadlineBody{src: r.Body, rc: http.NewResponseController(w)}
		dw := &deadlineWriter{ResponseWriter: w, body: b}
		// net/http goes on seeing its own body in r: it decides from it
		// how to close the connection after the answer.
		r2 := *r
		r2.Body = b
		next.ServeHTTP(dw, &r2)
		dw.finish()
	})
}

// bodyState is where a deadlineBody is in its life.
type bodyState int

const (
	// bodyReading: each read is given a deadline.
	bodyReading bodyState = iota
	// bodyDone: read to its end or closed; the deadline is cleared, since
	// net/http's own read of the connection after a body (watching for
	// the client going away) would take it for the client's failure.
	bodyDone
	// bodyTimedOut: the client was too slow; every read fails.
	bodyTimedOut
	// bodyReleased: the handler answered or returned, and what is left of
	// the body is net/http's to drain; or it hijacked the connection.
	// Reads, if any, are no longer the deadline's business.
	bodyReleased
)

// deadlineBody is a request body read under a deadline (see bodyDeadlines).
// It may be read on another goroutine than the handler's (a reverse proxy
// sends it from its transport), so its state is behind mu.
type deadlineBody struct {
	src io.ReadCloser
	rc  *http.ResponseController

	mu    sync.Mutex
	state bodyState
	start time.Time // the first read
	n     int64     // bytes read
	err   error     // the deadline's error, once it passed
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	switch b.state {
	case bodyTimedOut:
		err := b.err
		b.mu.Unlock()
		return 0, err
	case bodyReading:
		if b.start.IsZero() {
			b.start = time.Now()
		}
		earned := time.Duration(b.n+bodyReadAllowance) * (time.Second / bodyFloorRate)
		// A server that cannot set deadlines (not net/http's HTTP/1) just
		// reads without one.
		b.rc.SetReadDeadline(b.start.Add(bodyGrace + earned))
	}
	b.mu.Unlock()

	n, err := b.src.Read(p)

	b.mu.Lock()
	defer b.mu.Unlock()
	b.n += int64(n)
	if b.state != bodyReading {
		return n, err
	}
	switch {
	case err == io.EOF:
		b.state = bodyDone
		b.rc.SetReadDeadline(time.Time{})
	case errors.Is(err, os.ErrDeadlineExceeded):
		b.state, b.err = bodyTimedOut, err
	}
	return n, err
}

// Close closes the body; net/http then reads what is left of it, up to
// 256 KB, to keep the connection, which it is given drainGrace to do.
func (b *deadlineBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == bodyReading {
		b.rc.SetReadDeadline(time.Now().Add(drainGrace))
	}
	err := b.src.Close()
	if b.state == bodyReading {
		b.state = bodyDone
		b.rc.SetReadDeadline(time.Time{})
	}
	return err
}

// release ends the deadline's watch over the body, and returns the state
// it was in. A body still being read is given drainGrace to be drained
// (the handler answered or returned), or no deadline at all (hijacked).
func (b *deadlineBody) release(hijacked bool) bodyState {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.state
	switch {
	case s == bodyReading && hijacked:
		b.rc.SetReadDeadline(time.Time{})
	case s == bodyReading:
		b.rc.SetReadDeadline(time.Now().Add(drainGrace))
	}
	if s == bodyReading || s == bodyDone {
		b.state = bodyReleased
	}
	return s
}

// deadlineWriter is the handler's ResponseWriter for a request with a body:
// it puts the 408 in place of the handler's answer when the body was cut
// off, and gives what is left of a body still unread when the answer
// starts drainGrace to be drained.
type deadlineWriter struct {
	http.ResponseWriter
	body *deadlineBody
	// answered is set once the status was written; replaced once it was the
	// 408, after which what the handler writes is dropped.
	answered, replaced bool
}

func (w *deadlineWriter) WriteHeader(status int) {
	if w.answered || status < 200 {
		if !w.replaced {
			w.ResponseWriter.WriteHeader(status)
		}
		return
	}
	w.answered = true
	if w.body.release(false) == bodyTimedOut {
		w.replaced = true
		writeBodyTimeout(w.ResponseWriter)
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	if !w.answered {
		w.WriteHeader(http.StatusOK)
	}
	if w.replaced {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// Flush sends what was written, through WriteHeader like a Write.
func (w *deadlineWriter) Flush() {
	if !w.answered {
		w.WriteHeader(http.StatusOK)
	}
	if !w.replaced {
		http.NewResponseController(w.ResponseWriter).Flush()
	}
}

// Hijack hands the connection over without a deadline.
func (w *deadlineWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.body.release(true)
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// Unwrap lets http.ResponseController reach the connection.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish runs when the handler returned: the 408 if the body was cut off
// and the handler wrote nothing.
func (w *deadlineWriter) finish() {
	if w.body.release(false) == bodyTimedOut && !w.answered {
		w.answered, w.replaced = true, true
		writeBodyTimeout(w.ResponseWriter)
	}
}

// writeBodyTimeout answers a request whose body arrived too slowly, in
// place of anything the handler set.
func writeBodyTimeout(w http.ResponseWriter) {
	h := w.Header()
	for k := range h {
		delete(h, k)
	}
	h.Set("Connection", "close")
	wire.WriteError(w, http.StatusRequestTimeout, "REQUEST_TIMEOUT", fmt.Sprintf(
		"the request body arrived slower than %d KB a second (after the first %s): send it faster, or in a smaller request",
		bodyFloorRate>>10, bodyGrace))
}
