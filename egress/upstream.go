package egress

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/proxy"
)

// Tiers of upstream proxies, as the scrape option proxy names them.
const (
	TierBasic    = "basic"
	TierEnhanced = "enhanced"
)

// Upstream is one proxy of TRAWLER_PROXIES that the egress proxy chains a
// lease's connections to.
type Upstream struct {
	Tier    string   // basic or enhanced
	Country string   // ISO 3166-1 alpha-2, upper case; empty serves any
	URL     *url.URL // http://[user:pw@]host:port or socks5://[user:pw@]host:port

	down atomic.Int64 // unix nanoseconds until which it is out of rotation
	used atomic.Int64 // connections made through it
}

// Name is the upstream without its credentials, for logs and warnings.
func (u *Upstream) Name() string {
	c := *u.URL
	c.User = nil
	return u.Tier + "=" + c.String()
}

// Used is how many connections went through the upstream.
func (u *Upstream) Used() int64 { return u.used.Load() }

// ParseUpstreams reads TRAWLER_PROXIES: a comma-separated list of
// tier[:country]=URL, the tier basic or enhanced, the country a two-letter
// ISO code, the URL http:// or socks5:// with optional credentials.
func ParseUpstreams(v string) ([]*Upstream, error) {
	var out []*Upstream
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		key, raw, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want tier[:country]=URL, e.g. basic=http://user:pw@10.0.0.5:3128", part)
		}
		tier, country, _ := strings.Cut(strings.TrimSpace(key), ":")
		tier = strings.ToLower(tier)
		if tier != TierBasic && tier != TierEnhanced {
			return nil, fmt.Errorf("%q: the tier must be basic or enhanced, got %q", part, tier)
		}
		country = strings.ToUpper(strings.TrimSpace(country))
		if country != "" && (len(country) != 2 || strings.Trim(country, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "") {
			return nil, fmt.Errorf("%q: the country must be a two-letter ISO 3166-1 code, got %q", part, country)
		}
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil {
			return nil, fmt.Errorf("%q: %w", part, err)
		}
		if u.Scheme != "http" && u.Scheme != "socks5" && u.Scheme != "socks5h" {
			return nil, fmt.Errorf("%q: the proxy URL must be http:// or socks5://, got %q", part, u.Scheme)
		}
		if u.Hostname() == "" || u.Port() == "" {
			return nil, fmt.Errorf("%q: the proxy URL needs a host and a port", part)
		}
		if u.Path != "" && u.Path != "/" || u.RawQuery != "" {
			return nil, fmt.Errorf("%q: the proxy URL takes no path or query", part)
		}
		out = append(out, &Upstream{Tier: tier, Country: country, URL: u})
	}
	return out, nil
}

// upstreamDownFor is how long a failing upstream stays out of rotation.
const upstreamDownFor = 30 * time.Second

// upstreams picks among the configured upstreams.
type upstreams struct {
	all  []*Upstream
	next atomic.Uint64
	mu   sync.Mutex
}

// Choice is what Pick found for a tier and country.
type Choice struct {
	// Upstreams are the candidates, in the order to try; none means the
	// connections go direct.
	Upstreams []*Upstream
	// Warning says why a request that asked for a proxy goes direct.
	Warning string
}

// pick returns the upstreams that serve tier and country, healthy ones
// first, starting at a rotating offset so that load spreads.
func (s *upstreams) pick(tier, country string) Choice {
	country = strings.ToUpper(country)
	var match []*Upstream
	for _, u := range s.all {
		if u.Tier == tier && (country == "" || u.Country == country) {
			match = append(match, u)
		}
	}
	if len(match) == 0 {
		switch {
		case country != "":
			return Choice{Warning: fmt.Sprintf("no %s upstream proxy for country %s is configured (TRAWLER_PROXIES), so the page was fetched directly, from Trawler's own address", tier, country)}
		case tier != TierBasic:
			return Choice{Warning: fmt.Sprintf("no %s upstream proxy is configured (TRAWLER_PROXIES), so the page was fetched directly, from Trawler's own address", tier)}
		}
		return Choice{}
	}
	start := int(s.next.Add(1) % uint64(len(match)))
	now := time.Now().UnixNano()
	var healthy, down []*Upstream
	for i := range match {
		u := match[(start+i)%len(match)]
		if u.down.Load() > now {
			down = append(down, u)
		} else {
			healthy = append(healthy, u)
		}
	}
	return Choice{Upstreams: append(healthy, down...)}
}

// UpstreamError is a connection no upstream of the choice could make.
type UpstreamError struct {
	Target string
	Errs   []error
}

func (e *UpstreamError) Error() string {
	return fmt.Sprintf("no upstream proxy reached %s: %v", e.Target, errors.Join(e.Errs...))
}

// dialVia connects to target (an address the guard has judged: ip:port)
// through the first upstream of c that answers; an upstream that fails is
// taken out of rotation for a while. The target itself refusing, as an
// upstream reports it, does not count against the upstream.
func dialVia(ctx context.Context, c Choice, target string) (net.Conn, *Upstream, error) {
	var errs []error
	for _, u := range c.Upstreams {
		conn, upstreamFault, err := dialUpstream(ctx, u, target)
		if err == nil {
			u.used.Add(1)
			return conn, u, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", u.Name(), err))
		if !upstreamFault || ctx.Err() != nil {
			break
		}
		u.down.Store(time.Now().Add(upstreamDownFor).UnixNano())
	}
	return nil, nil, &UpstreamError{Target: target, Errs: errs}
}

// dialUpstream opens a tunnel to target through u. upstreamFault says
// whether the failure was the upstream's own (unreachable, refusing our
// credentials, failing) rather than the target's.
func dialUpstream(ctx context.Context, u *Upstream, target string) (c net.Conn, upstreamFault bool, err error) {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if u.URL.Scheme != "http" {
		var auth *proxy.Auth
		if u.URL.User != nil {
			pw, _ := u.URL.User.Password()
			auth = &proxy.Auth{User: u.URL.User.Username(), Password: pw}
		}
		sd, err := proxy.SOCKS5("tcp", u.URL.Host, auth, d)
		if err != nil {
			return nil, true, err
		}
		conn, err := sd.(proxy.ContextDialer).DialContext(ctx, "tcp", target)
		if err != nil {
			// The upstream's fault when it could not be dialled or refused
			// our credentials; a failure it reports for the target is not.
			return nil, dialFailed(err) || strings.Contains(err.Error(), "authentication"), err
		}
		return conn, false, nil
	}
	conn, err := d.DialContext(ctx, "tcp", u.URL.Host)
	if err != nil {
		return nil, true, err
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	req := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n"
	if u.URL.User != nil {
		pw, _ := u.URL.User.Password()
		req += "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(u.URL.User.Username()+":"+pw)) + "\r\n"
	}
	if _, err := conn.Write([]byte(req + "\r\n")); err != nil {
		conn.Close()
		return nil, true, err
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		conn.Close()
		return nil, true, fmt.Errorf("reading the answer to CONNECT: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		conn.Close()
		// 407 (401 from some, tinyproxy among them) and 5xx other than
		// the target's 502/504 are the upstream's.
		fault := resp.StatusCode == http.StatusProxyAuthRequired || resp.StatusCode == http.StatusUnauthorized ||
			resp.StatusCode >= 500 && resp.StatusCode != http.StatusBadGateway && resp.StatusCode != http.StatusGatewayTimeout
		return nil, fault, fmt.Errorf("CONNECT answered %s", resp.Status)
	}
	conn.SetDeadline(time.Time{})
	if br.Buffered() > 0 {
		// The upstream sent target bytes after its answer: keep them.
		return &bufferedConn{Conn: conn, r: br}, false, nil
	}
	return conn, false, nil
}

// bufferedConn is a conn whose first bytes were read into r.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// dialFailed says whether err, somewhere in its chain, is a failure to dial.
func dialFailed(err error) bool {
	for err != nil {
		if oe, ok := err.(*net.OpError); ok && oe.Op == "dial" {
			return true
		}
		err = errors.Unwrap(err)
	}
	return false
}
