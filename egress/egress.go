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
	"syscall"
	"time"

	"github.com/trawler-dev/trawler/netguard"
)

// Proxy is an HTTP proxy (CONNECT for TLS and WebSockets, absolute-form
// requests for plain HTTP) whose every connection passes the guard.
type Proxy struct {
	guard *netguard.Guard
	rules HostRules
	log   *slog.Logger

	mu        sync.Mutex
	denied    []netip.AddrPort // Trawler's own listeners
	local     map[netip.Addr]bool
	listening []string // the proxy's own addresses

	transport *http.Transport
	server    *http.Server
	conns     *connListener
	wg        sync.WaitGroup
}

// New returns a proxy that applies guard, after rewriting host names by
// rules (the MAP rules of Chromium's --host-resolver-rules, which a browser
// behind a proxy no longer applies itself).
func New(guard *netguard.Guard, rules HostRules, log *slog.Logger) *Proxy {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Proxy{guard: guard, rules: rules, log: log, local: localAddrs()}
	p.transport = &http.Transport{
		Proxy:                 nil,
		DialContext:           p.Dial,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 5 * time.Minute,
		// The browser negotiates what it wants; the proxy relays bytes.
		DisableCompression: true,
	}
	p.conns = newConnListener()
	p.server = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.server.Serve(p.conns)
	}()
	return p
}

// Listen serves the proxy on addr (a loopback address: the process
// runtime's browsers reach it there) until Close, and returns its URL for
// --proxy-server. The address is denied to the browsers themselves.
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

// Addrs are the addresses the proxy listens on.
func (p *Proxy) Addrs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.listening...)
}

// ServeConn serves one connection that reached the proxy another way (a
// stream from a browser container). It returns at once.
func (p *Proxy) ServeConn(c net.Conn) {
	if !p.conns.push(c) {
		c.Close()
	}
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

// Close stops serving and closes every connection.
func (p *Proxy) Close() error {
	err := p.server.Close()
	p.conns.Close()
	p.transport.CloseIdleConnections()
	p.wg.Wait()
	return err
}

// DeniedError is a dial to one of Trawler's own listeners.
type DeniedError struct{ Addr string }

func (e *DeniedError) Error() string {
	return e.Addr + " is Trawler's own address: no browser may reach it"
}

// Dial connects to addr (host:port) for a browser: the host goes through
// the MAP rules, then is resolved once, and each address is judged by the
// guard and the deny list just before it is dialled.
func (p *Proxy) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
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
	d := &net.Dialer{Timeout: 15 * time.Second, KeepAlive: 30 * time.Second}
	d.ControlContext = func(ctx context.Context, network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return err
		}
		if p.isDenied(ap) {
			return &DeniedError{Addr: address}
		}
		return p.guard.CheckAddr(host, ap.Addr())
	}
	return d.DialContext(ctx, "tcp", net.JoinHostPort(host, port))
}

func (p *Proxy) isDenied(ap netip.AddrPort) bool {
	a := ap.Addr().Unmap()
	p.mu.Lock()
	defer p.mu.Unlock()
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
	resp, err := p.transport.RoundTrip(out)
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
	up, err := p.Dial(ctx, "tcp", r.Host)
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
	status := http.StatusBadGateway
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

// connListener is a net.Listener fed by ServeConn.
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
