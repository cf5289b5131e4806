package egress

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/trawler-dev/trawler/egress/egresstest"
	"github.com/trawler-dev/trawler/netguard"
)

// via returns a client whose requests enter the proxy by route r, as a
// browser context's do.
func via(r *Route) *http.Client {
	pu, _ := url.Parse(r.URL())
	return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(pu),
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the test site's own certificate
}

type reported struct {
	mu   sync.Mutex
	byRq map[string][2]int64
	team map[string]string
}

func (r *reported) add(b Binding, in, out int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.byRq[b.Request]
	r.byRq[b.Request] = [2]int64{v[0] + in, v[1] + out}
	r.team[b.Request] = b.Team
}

func newRouted(t *testing.T, ups []*Upstream) (*Proxy, *reported) {
	t.Helper()
	rep := &reported{byRq: map[string][2]int64{}, team: map[string]string{}}
	p := New(Config{Guard: &netguard.Guard{AllowPrivate: true}, Upstreams: ups, Report: rep.add})
	t.Cleanup(func() { p.Close() })
	return p, rep
}

func upstreamsOf(t *testing.T, v string) []*Upstream {
	t.Helper()
	ups, err := ParseUpstreams(v)
	require.NoError(t, err)
	return ups
}

// Two contexts of one browser are told apart: each one's traffic leaves
// through the upstream of its binding's tier and is counted against its
// team and request, and tinyproxy's own log proves which went through it.
func TestRoutesChainToTheirTier(t *testing.T) {
	basic := egresstest.StartTinyproxy(t, "")
	enhanced := egresstest.StartTinyproxy(t, "u:secret")
	p, rep := newRouted(t, upstreamsOf(t, "basic="+basic.URL("")+",enhanced:DE="+enhanced.URL("u:secret")))
	plain, secure := site(t, false), site(t, true)

	a, err := p.ContextRoute("browser-1")
	require.NoError(t, err)
	b, err := p.ContextRoute("browser-1")
	require.NoError(t, err)
	assert.Empty(t, a.Bind(Binding{Team: "acme", Request: "ra"}).Warning)
	assert.Empty(t, b.Bind(Binding{Team: "globex", Request: "rb", Tier: TierEnhanced, Country: "de"}).Warning)

	for _, u := range []string{plain.URL + "/a", secure.URL + "/a"} {
		code, body := get(t, via(a), u)
		assert.Equal(t, 200, code, body)
	}
	code, body := get(t, via(b), secure.URL+"/b")
	assert.Equal(t, 200, code, body)

	host := func(s string) string { u, _ := url.Parse(s); return u.Host }
	assert.True(t, basic.Saw(host(plain.URL)), "the basic upstream's log has no request for the plain site:\n%s", basic.Log())
	assert.True(t, basic.Saw(host(secure.URL)), "the basic upstream's log has no CONNECT to the TLS site")
	assert.True(t, enhanced.Saw(host(secure.URL)), "the enhanced upstream's log has no CONNECT:\n%s", enhanced.Log())
	assert.Equal(t, TierBasic, a.Upstream().Tier)
	assert.Equal(t, TierEnhanced, b.Upstream().Tier)

	inA, outA := a.Bytes()
	inB, _ := b.Bytes()
	assert.Positive(t, inA)
	assert.Positive(t, outA)
	assert.Positive(t, inB)
	a.Close()
	b.Close()
	rep.mu.Lock()
	defer rep.mu.Unlock()
	assert.Equal(t, [2]int64{inA, outA}, rep.byRq["ra"], "the report of request ra")
	assert.Equal(t, "acme", rep.team["ra"])
	assert.Equal(t, "globex", rep.team["rb"])
	teams := map[string]int64{}
	for _, tb := range p.TeamBytes() {
		teams[tb.Team] = tb.In
	}
	assert.Equal(t, inA, teams["acme"])
	assert.Equal(t, inB, teams["globex"])
}

// With no upstream of the tier or country asked for, the route goes direct
// and says so; the upstreams that exist see nothing.
func TestRouteWithoutUpstreamGoesDirect(t *testing.T) {
	basic := egresstest.StartTinyproxy(t, "")
	p, _ := newRouted(t, upstreamsOf(t, "basic:us="+basic.URL("")))
	s := site(t, false)
	r, err := p.ContextRoute("b")
	require.NoError(t, err)
	for _, tc := range []struct {
		b    Binding
		want string
	}{
		{Binding{Tier: TierEnhanced}, "no enhanced upstream proxy is configured"},
		{Binding{Country: "FR"}, "no basic upstream proxy for country FR"},
	} {
		c := r.Bind(tc.b)
		assert.Contains(t, c.Warning, tc.want)
		code, _ := get(t, via(r), s.URL+"/direct")
		assert.Equal(t, 200, code)
		assert.Nil(t, r.Upstream())
	}
	assert.False(t, basic.Saw(strings.TrimPrefix(s.URL, "http://")), "the US upstream carried a request that asked for another country")
	assert.Empty(t, r.Bind(Binding{Country: "us"}).Warning)
	code, _ := get(t, via(r), s.URL+"/us")
	assert.Equal(t, 200, code)
	assert.True(t, basic.Saw(strings.TrimPrefix(s.URL, "http://")), "the US upstream did not carry the US request:\n%s", basic.Log())
}

// An upstream that is down, or refuses the credentials, is taken out of
// rotation and the next one carries the connection.
func TestUpstreamFailover(t *testing.T) {
	good := egresstest.StartTinyproxy(t, "")
	authed := egresstest.StartTinyproxy(t, "u:right")
	dead := egresstest.StartTinyproxy(t, "")
	dead.Stop()
	ups := upstreamsOf(t, "basic="+dead.URL("")+",basic="+authed.URL("u:wrong")+",basic="+good.URL(""))
	p, _ := newRouted(t, ups)
	s := site(t, true)
	r, err := p.ContextRoute("b")
	require.NoError(t, err)
	r.Bind(Binding{Team: "acme", Request: "r"})
	for i := 0; i < 3; i++ {
		code, body := get(t, via(r), s.URL+fmt.Sprintf("/%d", i))
		require.Equal(t, 200, code, body)
		assert.Same(t, ups[2], r.Upstream())
	}
	// The failing two are now tried last.
	c := p.up.pick(TierBasic, "")
	assert.Same(t, ups[2], c.Upstreams[0])
	assert.Contains(t, authed.Log(), "Request (file descriptor", "the upstream with the wrong password was not asked")

	// With every upstream failing the connection fails: it never leaves
	// directly, from Trawler's own address.
	p2, _ := newRouted(t, upstreamsOf(t, "basic="+dead.URL("")))
	r2, err := p2.ContextRoute("b")
	require.NoError(t, err)
	r2.Bind(Binding{Team: "acme"})
	code, body := get(t, via(r2), s.URL+"/x")
	assert.Equal(t, 0, code, "a request with its only upstream down succeeded: %s", body)
}

// The guard judges the address the upstream is told to connect to: a
// blocked target never reaches the upstream.
func TestUpstreamBehindTheGuard(t *testing.T) {
	up := egresstest.StartTinyproxy(t, "")
	p := New(Config{Guard: &netguard.Guard{}, Upstreams: upstreamsOf(t, "basic="+up.URL(""))})
	t.Cleanup(func() { p.Close() })
	s := site(t, true)
	r, err := p.ContextRoute("b")
	require.NoError(t, err)
	r.Bind(Binding{Team: "acme"})
	_, err = via(r).Get(s.URL + "/secret")
	require.Error(t, err)
	assert.NotContains(t, up.Log(), strings.TrimPrefix(s.URL, "https://"))
}

// dnsServer answers A queries for name from answers, one after another
// (the last one repeats), and counts the queries.
type dnsServer struct {
	conn    net.PacketConn
	answers []netip.Addr
	queries atomic.Int32
}

func newDNSServer(t *testing.T, answers ...netip.Addr) *dnsServer {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	d := &dnsServer{conn: pc, answers: answers}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var m dnsmessage.Message
			if m.Unpack(buf[:n]) != nil || len(m.Questions) == 0 {
				continue
			}
			q := m.Questions[0]
			resp := dnsmessage.Message{Header: dnsmessage.Header{ID: m.ID, Response: true, Authoritative: true},
				Questions: m.Questions}
			if q.Type == dnsmessage.TypeA {
				i := int(d.queries.Add(1)) - 1
				a := d.answers[min(i, len(d.answers)-1)].As4()
				resp.Answers = []dnsmessage.Resource{{Header: dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA,
					Class: dnsmessage.ClassINET, TTL: 0}, Body: &dnsmessage.AResource{A: a}}}
			}
			out, _ := resp.Pack()
			pc.WriteTo(out, from)
		}
	}()
	return d
}

func (d *dnsServer) resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", d.conn.LocalAddr().String())
	}}
}

// A name that resolves to a public address when judged and to loopback
// when resolved again cannot reach loopback: the proxy resolves once, and
// dials the address it judged. (The dial itself is caught, so that no
// packet leaves for the public address.)
func TestDNSRebindingCannotReachLoopback(t *testing.T) {
	s := site(t, false)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(s.URL, "http://"))
	public := netip.MustParseAddr("203.0.113.7") // TEST-NET-3: public to the guard
	dns := newDNSServer(t, public, netip.MustParseAddr("127.0.0.1"))
	p := New(Config{Guard: &netguard.Guard{Resolver: dns.resolver()}})
	t.Cleanup(func() { p.Close() })
	var dialled []string
	var mu sync.Mutex
	p.dialDirect = func(ctx context.Context, addr string) (net.Conn, error) {
		mu.Lock()
		dialled = append(dialled, addr)
		mu.Unlock()
		if strings.HasPrefix(addr, "127.") {
			return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		}
		return nil, errors.New("the test does not dial public addresses")
	}
	r, err := p.ContextRoute("b")
	require.NoError(t, err)
	r.Bind(Binding{Team: "acme"})
	code, body := get(t, via(r), "http://rebind.test:"+port+"/x")
	assert.NotEqual(t, 200, code, "the rebinding name reached the loopback site: %s", body)
	assert.NotContains(t, body, "hello")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"203.0.113.7:" + port}, dialled, "the proxy must dial exactly the address it judged")
	assert.Equal(t, int32(1), dns.queries.Load(), "the name was resolved more than once")

	// The second answer (loopback) is refused when it is the one judged.
	code, _ = get(t, via(r), "http://rebind.test:"+port+"/y")
	assert.Equal(t, http.StatusForbidden, code)
}

// A container's connection is served on the route whose loopback address
// it dialled, and only if that route is its own browser's.
func TestStreamRoutes(t *testing.T) {
	p := New(Config{Guard: &netguard.Guard{AllowPrivate: true}, StreamPort: 3128})
	t.Cleanup(func() { p.Close() })
	s := site(t, false)
	r, err := p.ContextRoute("b1")
	require.NoError(t, err)
	u, _ := url.Parse(r.URL())
	ip := netip.MustParseAddr(u.Hostname())
	assert.True(t, ip.IsLoopback() && ip != netip.MustParseAddr("127.0.0.1"), "a context route's address %s", ip)
	r.Bind(Binding{Team: "acme", Request: "r1"})

	ask := func(browser string, to netip.Addr) string {
		c1, c2 := net.Pipe()
		p.ServeStream(browser, to, c2)
		defer c1.Close()
		c1.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(c1, "GET %s/s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", s.URL, strings.TrimPrefix(s.URL, "http://"))
		buf := make([]byte, 4096)
		n, _ := c1.Read(buf)
		return string(buf[:n])
	}
	assert.Contains(t, ask("b1", ip), "200 OK")
	in, _ := r.Bytes()
	assert.Positive(t, in, "the context route counted nothing")
	assert.Empty(t, ask("b2", ip), "another browser's container used b1's route")
	assert.Contains(t, ask("b2", netip.MustParseAddr("127.0.0.1")), "200 OK", "a browser's own route")
	p.ForgetBrowser("b1")
	assert.Empty(t, ask("b1", ip), "a forgotten route still served")
}

func TestParseUpstreams(t *testing.T) {
	ups, err := ParseUpstreams(" basic=http://user:pw@10.0.0.5:3128 , enhanced:de=socks5://10.0.0.6:1080")
	require.NoError(t, err)
	require.Len(t, ups, 2)
	assert.Equal(t, "basic", ups[0].Tier)
	assert.Equal(t, "", ups[0].Country)
	assert.Equal(t, "basic=http://10.0.0.5:3128", ups[0].Name(), "the name hides the credentials")
	assert.Equal(t, "DE", ups[1].Country)
	for in, want := range map[string]string{
		"http://10.0.0.5:3128":        "want tier[:country]=URL",
		"premium=http://10.0.0.5:1":   "the tier must be basic or enhanced",
		"basic:deu=http://10.0.0.5:1": "two-letter ISO 3166-1 code",
		"basic=ftp://10.0.0.5:1":      "must be http:// or socks5://",
		"basic=http://10.0.0.5":       "needs a host and a port",
		"basic=http://10.0.0.5:1/x":   "takes no path",
	} {
		_, err := ParseUpstreams(in)
		if assert.Error(t, err, in) {
			assert.Contains(t, err.Error(), want, in)
		}
	}
}

// A listener Trawler hides is unreachable through the proxy while hidden,
// even with private networks allowed.
func TestHiddenListener(t *testing.T) {
	p, _ := newRouted(t, nil)
	s := site(t, false)
	r, err := p.ContextRoute("b")
	require.NoError(t, err)
	unhide := p.Hide(strings.TrimPrefix(s.URL, "http://"))
	code, _ := get(t, via(r), s.URL+"/hidden")
	assert.Equal(t, http.StatusForbidden, code)
	unhide()
	code, _ = get(t, via(r), s.URL+"/shown")
	assert.Equal(t, 200, code)
}

// A SOCKS5 upstream (microsocks, with a password) carries a route's
// connections; one that refuses the credentials is the upstream's fault,
// and the next upstream is tried.
func TestSOCKS5Upstream(t *testing.T) {
	socks := egresstest.StartMicrosocks(t, "u:s3cret")
	p, _ := newRouted(t, upstreamsOf(t, "enhanced="+socks.URL("u:wrong")+",enhanced="+socks.URL("u:s3cret")))
	s := site(t, true)
	r, err := p.ContextRoute("b")
	require.NoError(t, err)
	for i := 0; i < 2; i++ {
		// Each binding picks anew, starting at the next upstream: one of
		// the two tries the wrong password first.
		r.Bind(Binding{Team: "acme", Tier: TierEnhanced})
		code, body := get(t, via(r), s.URL+"/socks")
		require.Equal(t, 200, code, body)
	}
	assert.True(t, socks.Saw(strings.TrimPrefix(s.URL, "https://")), "microsocks reported no connection to the site")
	assert.Equal(t, "socks5", r.Upstream().URL.Scheme)
	assert.Equal(t, "u:s3cret", r.Upstream().URL.User.String())
	assert.Equal(t, p.Upstreams()[1], p.up.pick(TierEnhanced, "").Upstreams[0], "the upstream with the wrong password was not taken out of rotation")
}

// A local route is a listener of its own even when the browsers' routes
// are told apart by address (the docker runtime): Trawler's own HTTP
// client reaches it.
func TestLocalRouteInStreamMode(t *testing.T) {
	p := New(Config{Guard: &netguard.Guard{AllowPrivate: true}, StreamPort: 3128})
	t.Cleanup(func() { p.Close() })
	s := site(t, false)
	r, err := p.LocalRoute()
	require.NoError(t, err)
	defer r.Close()
	r.Bind(Binding{Team: "acme", Request: "local"})
	code, body := get(t, via(r), s.URL+"/local")
	assert.Equal(t, 200, code, body)
	in, _ := r.Bytes()
	assert.Positive(t, in)
}
