package egress

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Binding says whose a route's traffic is and how it leaves: the team and
// request it is counted against, and the upstream tier and country it goes
// through.
type Binding struct {
	Team    string
	Request string
	Tier    string // basic (the default) or enhanced
	Country string // ISO 3166-1 alpha-2; empty for any
}

// Route is one way into the egress proxy: a browser's own (its
// --proxy-server, which every context inherits) or a browser context's
// (Target.createBrowserContext's proxyServer). Connections that arrive on
// it are counted against, and leave as, its binding; so two jobs sharing a
// browser in separate contexts are told apart.
type Route struct {
	p       *Proxy
	browser string
	url     string
	ip      netip.Addr   // the loopback address a container dials (stream mode)
	ln      net.Listener // its own listener (process mode)

	mu        sync.Mutex
	b         Binding
	choice    Choice
	used      *Upstream // the last upstream a connection went through
	transport *http.Transport
	closed    bool
	in0, out0 int64 // the counts when the binding began
	// hosts is every host:port the route was asked to reach since the
	// last TakeHosts, as the browser named it (before MAP rules).
	hosts map[string]struct{}

	in, out atomic.Int64
}

// URL is the proxy server the browser or context is given.
func (r *Route) URL() string { return r.url }

// Bind makes the route's next connections count against b and leave
// through an upstream of b's tier and country. The choice says which, and
// carries a warning when none is configured and connections go direct.
func (r *Route) Bind(b Binding) Choice {
	if b.Tier == "" {
		b.Tier = TierBasic
	}
	c := r.p.up.pick(b.Tier, b.Country)
	r.mu.Lock()
	if r.b != b && r.transport != nil {
		// Pooled plain-HTTP connections were made for the old binding.
		r.transport.CloseIdleConnections()
	}
	r.report()
	r.b, r.choice, r.used = b, c, nil
	r.mu.Unlock()
	return c
}

// report hands the bytes of the binding that ends to the proxy's Report;
// r.mu is held.
func (r *Route) report() {
	in, out := r.in.Load(), r.out.Load()
	b, din, dout := r.b, in-r.in0, out-r.out0
	r.in0, r.out0 = in, out
	if r.p.report != nil && (din > 0 || dout > 0) && (b.Team != "" || b.Request != "") {
		r.p.report(b, din, dout)
	}
}

// Binding is what the route is bound to.
func (r *Route) Binding() Binding {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.b
}

// Bytes are the bytes received from and sent to the network over the
// route so far.
func (r *Route) Bytes() (in, out int64) { return r.in.Load(), r.out.Load() }

// TakeHosts returns every host:port the route was asked to reach since
// the last call (refused ones too), and starts a new list. Every request
// of a context with its own route (HTTP, CONNECT, WebSocket, preconnects)
// asks for one, so the list names every origin that can have left state
// in the context: what a recycled tab clears (scrape/recycle.go).
func (r *Route) TakeHosts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Collect(maps.Keys(r.hosts))
	r.hosts = nil
	return out
}

func (r *Route) noteHost(addr string) {
	r.mu.Lock()
	if r.hosts == nil {
		r.hosts = map[string]struct{}{}
	}
	r.hosts[addr] = struct{}{}
	r.mu.Unlock()
}

// Upstream is the upstream the route's last connection went through; nil
// when it went direct.
func (r *Route) Upstream() *Upstream {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.used
}

// Close ends the route: its listener closes and a container's connections
// to its address are refused. Connections already open run on.
func (r *Route) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	t := r.transport
	r.report()
	r.mu.Unlock()
	if t != nil {
		t.CloseIdleConnections()
	}
	if r.ln != nil {
		r.ln.Close()
	}
	r.p.mu.Lock()
	delete(r.p.byIP, r.ip)
	if r.p.browsers[r.browser] == r {
		delete(r.p.browsers, r.browser)
	}
	if set := r.p.routes[r.browser]; set != nil {
		delete(set, r)
		if len(set) == 0 {
			delete(r.p.routes, r.browser)
		}
	}
	r.p.mu.Unlock()
}

func (r *Route) state() (Binding, Choice) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.b, r.choice
}

func (r *Route) httpTransport() *http.Transport {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.transport == nil {
		r.transport = r.p.newTransport(func(ctx context.Context, _, addr string) (net.Conn, error) {
			return r.p.dialRoute(ctx, r, addr)
		})
	}
	return r.transport
}

// BrowserRoute is the route of browser id's own --proxy-server, made on
// first use. ForgetBrowser ends it.
func (p *Proxy) BrowserRoute(id string) (*Route, error) {
	p.mu.Lock()
	r := p.browsers[id]
	p.mu.Unlock()
	if r != nil {
		return r, nil
	}
	r, err := p.newRoute(id, true, false)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if old := p.browsers[id]; old != nil {
		// Made twice at once: keep the first.
		go r.Close()
		return old, nil
	}
	p.browsers[id] = r
	return r, nil
}

// ContextRoute is a new route for one browser context of browser id. Its
// holder closes it with the context; ForgetBrowser closes it too.
func (p *Proxy) ContextRoute(id string) (*Route, error) { return p.newRoute(id, false, false) }

// LocalRoute is a new route for a client in Trawler's own process (Go's
// HTTP client taking a page without a browser): a loopback listener of its
// own, whatever the runtime. Its holder closes it.
func (p *Proxy) LocalRoute() (*Route, error) { return p.newRoute("", false, true) }

// ProxyFor is the URL browser id's --proxy-server names (process mode).
func (p *Proxy) ProxyFor(id string) (string, error) {
	r, err := p.BrowserRoute(id)
	if err != nil {
		return "", err
	}
	return r.URL(), nil
}

// ForgetBrowser ends every route of browser id: it has gone.
func (p *Proxy) ForgetBrowser(id string) {
	p.mu.Lock()
	var rs []*Route
	for r := range p.routes[id] {
		rs = append(rs, r)
	}
	p.mu.Unlock()
	for _, r := range rs {
		r.Close()
	}
}

func (p *Proxy) newRoute(browser string, own, local bool) (*Route, error) {
	r := &Route{p: p, browser: browser, b: Binding{Tier: TierBasic}}
	if p.streamPort != 0 && !local {
		p.mu.Lock()
		if own {
			r.ip = netip.AddrFrom4([4]byte{127, 0, 0, 1})
		} else {
			// 127.0.1.0 up: the container's loopback answers all of
			// 127/8, and the shim hears which address was dialled.
			for {
				p.nextIP++
				n := p.nextIP%(1<<24-256) + 256
				a := netip.AddrFrom4([4]byte{127, byte(n >> 16), byte(n >> 8), byte(n)})
				if _, taken := p.byIP[a]; !taken {
					r.ip = a
					p.byIP[a] = r
					break
				}
			}
		}
		r.url = "http://" + net.JoinHostPort(r.ip.String(), strconv.Itoa(p.streamPort))
		p.addLocked(r)
		p.mu.Unlock()
		return r, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	r.ln = ln
	r.url = "http://" + ln.Addr().String()
	p.mu.Lock()
	p.ownPorts[uint16(ln.Addr().(*net.TCPAddr).Port)] = true
	p.addLocked(r)
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.server.Serve(routedListener{ln, r})
		p.mu.Lock()
		delete(p.ownPorts, uint16(ln.Addr().(*net.TCPAddr).Port))
		p.mu.Unlock()
	}()
	return r, nil
}

func (p *Proxy) addLocked(r *Route) {
	set := p.routes[r.browser]
	if set == nil {
		set = map[*Route]struct{}{}
		p.routes[r.browser] = set
	}
	set[r] = struct{}{}
}

// ServeStream serves one connection a container's browser made to local,
// the loopback address it dialled (stream mode). It returns at once.
func (p *Proxy) ServeStream(browser string, local netip.Addr, c net.Conn) {
	var r *Route
	if local == netip.AddrFrom4([4]byte{127, 0, 0, 1}) {
		var err error
		if r, err = p.BrowserRoute(browser); err != nil {
			c.Close()
			return
		}
	} else {
		p.mu.Lock()
		r = p.byIP[local]
		p.mu.Unlock()
		if r == nil || r.browser != browser {
			// Not a route of this browser: a page cannot pick another's.
			c.Close()
			return
		}
	}
	if !p.conns.push(routedConn{c, r}) {
		c.Close()
	}
}

// routedConn is a connection that arrived on a route.
type routedConn struct {
	net.Conn
	r *Route
}

type routedListener struct {
	net.Listener
	r *Route
}

func (l routedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return routedConn{c, l.r}, nil
}

type routeKey struct{}

func connContext(ctx context.Context, c net.Conn) context.Context {
	if rc, ok := c.(routedConn); ok {
		return context.WithValue(ctx, routeKey{}, rc.r)
	}
	return ctx
}

func routeOf(ctx context.Context) *Route {
	r, _ := ctx.Value(routeKey{}).(*Route)
	return r
}

// countedConn counts the bytes of one connection to the network against
// its route and team.
type countedConn struct {
	net.Conn
	r    *Route
	team *teamBytes
}

func (c *countedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.r.in.Add(int64(n))
		c.team.in.Add(int64(n))
	}
	return n, err
}

func (c *countedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if n > 0 {
		c.r.out.Add(int64(n))
		c.team.out.Add(int64(n))
	}
	return n, err
}

func (c *countedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

type teamBytes struct{ in, out atomic.Int64 }

// TeamBytes is one team's egress so far.
type TeamBytes struct {
	Team    string
	In, Out int64
}

// TeamBytes lists the bytes every team's browsers received and sent, by
// team name ("" for traffic no lease was bound to).
func (p *Proxy) TeamBytes() []TeamBytes {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]TeamBytes, 0, len(p.teams))
	for name, t := range p.teams {
		out = append(out, TeamBytes{Team: name, In: t.in.Load(), Out: t.out.Load()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Team < out[j].Team })
	return out
}

func (p *Proxy) teamCounter(team string) *teamBytes {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.teams[team]
	if t == nil {
		t = &teamBytes{}
		p.teams[team] = t
	}
	return t
}

// routeDialTimeout bounds one dial, through an upstream or not.
const routeDialTimeout = 20 * time.Second
