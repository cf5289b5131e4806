package execute

import (
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/trawler-dev/trawler/wire"
)

// endpoint serves one run's CDP: ws://HOST/TOKEN (and /TOKEN/devtools/...)
// is the session's browser, reached through the CDP proxy with the
// session's own token, which the run never sees; GET /TOKEN/json/version
// answers as the browser would, for clients that connect by http:// URL.
// Any other path is a 404.
type endpoint struct {
	cdp      http.Handler
	session  string
	cdpToken string
	token    string
	version  func() map[string]any
}

func (e *endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/"+e.token)
	if !ok || (rest != "" && !strings.HasPrefix(rest, "/")) {
		wire.WriteError(w, http.StatusNotFound, "NOT_FOUND", "not this run's CDP endpoint")
		return
	}
	if !websocket.IsWebSocketUpgrade(r) {
		if rest != "" && rest != "/" && rest != "/json/version" {
			wire.WriteError(w, http.StatusNotFound, "NOT_FOUND", "unknown CDP path "+rest)
			return
		}
		v := e.version()
		v["webSocketDebuggerUrl"] = "ws://" + r.Host + "/" + e.token
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path = "/cdp/" + e.session + rest
	r2.URL.RawPath = ""
	r2.URL.RawQuery = "token=" + url.QueryEscape(e.cdpToken)
	r2.RequestURI = r2.URL.RequestURI()
	e.cdp.ServeHTTP(w, r2)
}

// cdpServer serves an endpoint on a listener and, when closed, closes
// every connection it accepted, upgraded ones included (http.Server.Close
// leaves those alone).
type cdpServer struct {
	srv   *http.Server
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	done  chan struct{}
}

func serveCDP(ln net.Listener, h http.Handler) *cdpServer {
	c := &cdpServer{srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, conns: map[net.Conn]struct{}{}, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		c.srv.Serve(&trackingListener{Listener: ln, c: c})
	}()
	return c
}

func (c *cdpServer) Close() {
	c.srv.Close()
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	for conn := range c.conns {
		conn.Close()
	}
	c.conns = nil
}

type trackingListener struct {
	net.Listener
	c *cdpServer
}

func (l *trackingListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	if l.c.conns == nil {
		conn.Close()
		return nil, net.ErrClosed
	}
	l.c.conns[conn] = struct{}{}
	return conn, nil
}

// streamListener is a net.Listener of the connections handed to serve:
// those the sandbox carries over its streams.
type streamListener struct {
	conns     chan net.Conn
	done      chan struct{}
	closeOnce sync.Once
}

func newStreamListener() *streamListener {
	return &streamListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *streamListener) serve(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	}
}

func (l *streamListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *streamListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return nil
}

func (l *streamListener) Addr() net.Addr { return streamAddr{} }

type streamAddr struct{}

func (streamAddr) Network() string { return "sandbox" }
func (streamAddr) String() string  { return "sandbox" }
