// Package egress owns Trawler's egress proxy: the one way out to the network
// for every browser Trawler runs, job browsers and interactive sessions
// alike, on either runtime. Browsers are started with --proxy-server
// pointing at it and no bypass (loopback included), so each request a page
// makes, WebSockets and service workers too, reaches the network only
// through Dial here: the host is resolved once, the network guard judges the
// address that will be dialled, and that address is dialled, leaving no
// window between check and use. Whatever the guard allows, Trawler's own
// listeners are never reachable from a page.
package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trawler-dev/trawler/netguard"
)

// Proxy is an HTTP proxy (CONNECT for TLS and WebSockets, absolute-form
// requests for plain HTTP) whose every connection passes the guard.
type Proxy struct {
	guard      *netguard.Guard
	rules      HostRules
	log        *slog.Logger
	up         upstreams
	streamPort int
	report     func(b Binding, in, out int64)
	// dialDirect dials an address the guard judged (tests replace it).
	dialDirect func(ctx context.Context, addr string) (net.Conn, error)

	mu        sync.Mutex
	denied    []netip.AddrPort // Trawler's own listeners
	local     map[netip.Addr]bool
	listening []string // the proxy's own addresses
	ownPorts  map[uint16]bool
	browsers  map[string]*Route              // each browser's own route
	routes    map[string]map[*Route]struct{} // every route, by browser
	byIP      map[netip.Addr]*Route          // context routes (stream mode)
	nextIP    uint32
	teams     map[string]*teamBytes

	transport *http.Transport
	server    *http.Server
	conns     *connListener
	wg        sync.WaitGroup
}

// Config configures a Proxy.
type Config struct {
	// Guard judges every address dialled.
	Guard *netguard.Guard
	// Rules rewrite host names first: the MAP rules of Chromium's
	// --host-resolver-rules, which a browser behind a proxy no longer
	// applies itself.
	Rules HostRules
	// Upstreams are TRAWLER_PROXIES: routes bound to a tier and country
	// leave through one of them.
	Upstreams []*Upstream
	// StreamPort, when set, is the loopback port in each browser's
	// container that its connections to the proxy arrive from (the docker
	// runtime's shim): routes are then told apart by the loopback address
	// dialled there, not by a listener of their own.
	StreamPort int
	// Report, when set, is told the bytes each binding of a route moved,
	// when the binding ends (the route closes or is bound anew). It must
	// not block.
	Report func(b Binding, in, out int64)
	Log    *slog.Logger
}

// New returns a proxy configured by c.
func New(c Config) *Proxy {
	log := c.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Proxy{guard: c.Guard, rules: c.Rules, log: log, local: localAddrs(), up: upstreams{all: c.Upstreams},
		streamPort: c.StreamPort, report: c.Report, ownPorts: map[uint16]bool{}, browsers: map[string]*Route{},
		routes: map[string]map[*Route]struct{}{}, byIP: map[netip.Addr]*Route{}, teams: map[string]*teamBytes{}}
	p.dialDirect = func(ctx context.Context, addr string) (net.Conn, error) {
		d := &net.Dialer{Timeout: 15 * time.Second, KeepAlive: 30 * time.Second}
		return d.DialContext(ctx, "tcp", addr)
	}
	p.transport = p.newTransport(p.Dial)
	p.conns = newConnListener()
	p.server = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second, ConnContext: connContext,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.server.Serve(p.conns)
	}()
	return p
}

func (p *Proxy) newTransport(dial func(context.Context, string, string) (net.Conn, error)) *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           dial,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 5 * time.Minute,
		// The browser negotiates what it wants; the proxy relays bytes.
		DisableCompression: true,
	}
}

// Upstreams are the configured upstream proxies.
func (p *Proxy) Upstreams() []*Upstream { return p.up.all }

// Listen serves the proxy on addr until Close, for connections bound to
// no route (counted against nobody, never chained to an upstream), and
// returns its URL. The address is denied to the browsers themselves.
// Browsers get routes instead (BrowserRoute, ContextRoute).
func (p *Proxy) Listen(addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("egress proxy: %w", err)
	}
	p.Deny(ln.Addr().String())
	p.mu.Lock()
	p.listening = append(p.listening, ln.Addr().String())
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.server.Serve(ln)
	}()
	return "http://" + ln.Addr().String(), nil
}

// Addrs are the addresses the proxy listens on, routes' own included.
func (p *Proxy) Addrs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := append([]string(nil), p.listening...)
	for _, set := range p.routes {
		for r := range set {
			if r.ln != nil {
				out = append(out, r.ln.Addr().String())
			}
		}
	}
	return out
}

// Deny makes a listen address unreachable through the proxy whatever the
// guard says: Trawler's own API, for one. A listener on every interface
// (0.0.0.0:port, [::]:port) denies its port on every local address.
func (p *Proxy) Deny(addr string) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		host, port, err2 := net.SplitHostPort(addr)
		if err2 != nil {
			return
		}
		n, err3 := strconv.ParseUint(port, 10, 16)
		if err3 != nil {
			return
		}
		if host == "" || host == "localhost" {
			host = "0.0.0.0"
		}
		a, err4 := netip.ParseAddr(host)
		if err4 != nil {
			return
		}
		ap = netip.AddrPortFrom(a, uint16(n))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.denied = append(p.denied, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
}

// Hide makes addr, a listener of Trawler's on a local address, unreachable
// through the proxy until the returned function is called (a short-lived
// endpoint, such as an execute run's).
func (p *Proxy) Hide(addr string) (unhide func()) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return func() {}
	}
	p.mu.Lock()
	p.ownPorts[ap.Port()] = true
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		delete(p.ownPorts, ap.Port())
		p.mu.Unlock()
	}
}

// Close stops serving and closes every connection.
func (p *Proxy) Close() error {
	err := p.server.Close()
	p.conns.Close()
	p.transport.CloseIdleConnections()
	p.mu.Lock()
	var rs []*Route
	for _, set := range p.routes {
		for r := range set {
			rs = append(rs, r)
		}
	}
	p.mu.Unlock()
	for _, r := range rs {
		r.Close()
	}
	p.wg.Wait()
	return err
}

// DeniedError is a dial to one of Trawler's own listeners.
type DeniedError struct{ Addr string }

func (e *DeniedError) Error() string {
	return e.Addr + " is Trawler's own address: no browser may reach it"
}

// Dial connects to addr (host:port) for a browser, directly, counted
// against no route.
func (p *Proxy) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return p.dialRoute(ctx, nil, addr)
}

// dialRoute connects to addr (host:port) for route r: the host goes
// through the MAP rules, then is resolved once, each address is judged by
// the guard and the deny list, and the address judged is the one dialled,
// directly or through an upstream of r's binding (which is handed the
// address, not the name, so that nothing resolves the name again).
func (p *Proxy) dialRoute(ctx context.Context, r *Route, addr string) (net.Conn, error) {
	if r != nil {
		r.noteHost(addr)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if mapped, mport, ok, err := p.rules.Map(host); err != nil {
		return nil, err
	} else if ok {
		host = mapped
		if mport != "" {
			port = mport
		}
	}
	if err := p.guard.CheckName(host); err != nil {
		return nil, err
	}
	pn, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("port %q: %w", port, err)
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else if a, ok := netguard.ParseIPv4(host); ok {
		addrs = []netip.Addr{a}
	} else {
		res := p.guard.Resolver
		if res == nil {
			res = net.DefaultResolver
		}
		if addrs, err = res.LookupNetIP(ctx, "ip", host); err != nil {
			return nil, &netguard.ResolveError{Host: host, Err: err}
		}
	}
	var b Binding
	var choice Choice
	if r != nil {
		b, choice = r.state()
	}
	ctx, cancel := context.WithTimeout(ctx, routeDialTimeout)
	defer cancel()
	var lastErr error
	for _, a := range addrs {
		ap := netip.AddrPortFrom(a.Unmap(), uint16(pn))
		if p.isDenied(ap) {
			lastErr = &DeniedError{Addr: ap.String()}
			continue
		}
		if err := p.guard.CheckAddr(host, ap.Addr()); err != nil {
			lastErr = err
			continue
		}
		var c net.Conn
		var used *Upstream
		if len(choice.Upstreams) > 0 {
			c, used, err = dialVia(ctx, choice, ap.String())
		} else {
			c, err = p.dialDirect(ctx, ap.String())
		}
		if err != nil {
			lastErr = err
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if r == nil {
			return c, nil
		}
		r.mu.Lock()
		r.used = used
		r.mu.Unlock()
		return &countedConn{Conn: c, r: r, team: p.teamCounter(b.Team)}, nil
	}
	if lastErr == nil {
		lastErr = fmt.Errorf("%s has no address", host)
	}
	return nil, lastErr
}

func (p *Proxy) isDenied(ap netip.AddrPort) bool {
	a := ap.Addr().Unmap()
	p.mu.Lock()
	defer p.mu.Unlock()
	if (a.IsLoopback() || a.IsUnspecified() || p.local[a]) && p.ownPorts[ap.Port()] {
		return true // a route's own listener
	}
	for _, d := range p.denied {
		if d.Port() != ap.Port() {
			continue
		}
		da := d.Addr()
		switch {
		case da == a:
			return true
		case da.IsUnspecified() || da.IsLoopback():
			// A listener on every interface, or on loopback (any
			// 127.x address reaches a socket bound to 0.0.0.0, and
			// 127.0.0.1 may be spelt otherwise): any local address.
			if a.IsLoopback() || a.IsUnspecified() || p.local[a] {
				return true
			}
		}
	}
	return false
}

// localAddrs lists the machine's own addresses.
func localAddrs() map[netip.Addr]bool {
	out := map[netip.Addr]bool{}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out[ip.Unmap()] = true
			}
		}
	}
	return out
}

// ServeHTTP handles one proxy request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.tunnel(w, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		http.Error(w, "Trawler's egress proxy takes absolute http:// URLs and CONNECT", http.StatusBadRequest)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	removeHopHeaders(out.Header)
	t := p.transport
	if rt := routeOf(r.Context()); rt != nil {
		t = rt.httpTransport()
		// Noted per request: the transport reuses its connections.
		host := r.URL.Host
		if r.URL.Port() == "" {
			host = net.JoinHostPort(r.URL.Hostname(), "80")
		}
		rt.noteHost(host)
	}
	resp, err := t.RoundTrip(out)
	if err != nil {
		p.refuse(w, r.URL.Host, err)
		return
	}
	defer resp.Body.Close()
	removeHopHeaders(resp.Header)
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	copyFlushing(w, resp.Body)
}

// tunnel serves CONNECT: https and WebSockets.
func (p *Proxy) tunnel(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 20*time.Second)
	up, err := p.dialRoute(ctx, routeOf(r.Context()), r.Host)
	cancel()
	if err != nil {
		p.refuse(w, r.Host, err)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "cannot tunnel on this connection", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		client.Close()
		up.Close()
		return
	}
	// Bytes the client sent after its CONNECT are in the reader's buffer.
	if n := buf.Reader.Buffered(); n > 0 {
		head, _ := buf.Reader.Peek(n)
		if _, err := up.Write(head); err != nil {
			client.Close()
			up.Close()
			return
		}
	}
	splice(client, up)
}

// refuse answers a request the proxy could not or would not forward.
func (p *Proxy) refuse(w http.ResponseWriter, host string, err error) {
	var blocked *netguard.BlockedError
	var denied *DeniedError
	var upstream *UpstreamError
	status := http.StatusBadGateway
	if errors.As(err, &upstream) {
		p.log.Warn("egress: no upstream proxy answered", "host", host, "err", err)
	}
	if errors.As(err, &blocked) || errors.As(err, &denied) {
		status = http.StatusForbidden
		p.log.Debug("egress refused", "host", host, "err", err)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Trawler-Egress-Error", "1")
	w.WriteHeader(status)
	fmt.Fprintf(w, "Trawler's egress proxy did not reach %s: %v\n", host, err)
}

// splice copies both ways until either side ends, then closes both.
func splice(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		io.Copy(dst, src)
		if c, ok := dst.(interface{ CloseWrite() error }); ok {
			c.CloseWrite()
		} else {
			dst.Close()
		}
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	<-done
	a.Close()
	b.Close()
}

func copyFlushing(w http.ResponseWriter, r io.Reader) {
	f, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if f != nil {
				f.Flush()
			}
		}
		if err != nil {
			return
		}
	}
}

// hopHeaders are meant for one connection only (RFC 9110 7.6.1), the
// proxy's own included.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHopHeaders(h http.Header) {
	for _, f := range h.Values("Connection") {
		for _, name := range strings.Split(f, ",") {
			h.Del(strings.TrimSpace(name))
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
}

// connListener is a net.Listener fed by ServeStream.
type connListener struct {
	ch     chan net.Conn
	mu     sync.Mutex
	closed bool
	done   chan struct{}
}

func newConnListener() *connListener {
	return &connListener{ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *connListener) push(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		return false
	}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		close(l.done)
	}
	return nil
}

func (l *connListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4zero} }
