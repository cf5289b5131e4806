package wire

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// PublicURL computes the public base URL of a request, from which the
// absolute URLs handed to clients (cdpUrl, liveViewUrl, a job's url, next)
// are built: the configured base when there is one, else the request's
// scheme and Host, honouring X-Forwarded-Proto and X-Forwarded-Host only
// from trusted proxies.
type PublicURL struct {
	// Base, when set, is used for every request (TRAWLER_PUBLIC_URL).
	Base *url.URL
	// Trusted are the proxies whose forwarding headers are believed.
	Trusted []netip.Prefix
}

// Request is what PublicURL needs to know of a request, for a server other
// than net/http (the API's Fiber side).
type Request struct {
	RemoteAddr     string // ip:port of the peer
	TLS            bool
	Host           string
	ForwardedProto string
	ForwardedHost  string
}

// For returns the base URL of req, such as http://127.0.0.1:3002, with no
// trailing slash.
func (p PublicURL) For(req Request) string {
	if p.Base != nil {
		return strings.TrimRight(p.Base.String(), "/")
	}
	scheme := "http"
	if req.TLS {
		scheme = "https"
	}
	host := req.Host
	if p.trusted(req.RemoteAddr) {
		if v := firstValue(req.ForwardedProto); v == "http" || v == "https" {
			scheme = v
		}
		if h := firstValue(req.ForwardedHost); h != "" {
			host = h
		}
	}
	return scheme + "://" + host
}

// ForHTTP is For of a net/http request.
func (p PublicURL) ForHTTP(r *http.Request) string {
	return p.For(Request{RemoteAddr: r.RemoteAddr, TLS: r.TLS != nil, Host: r.Host,
		ForwardedProto: r.Header.Get("X-Forwarded-Proto"), ForwardedHost: r.Header.Get("X-Forwarded-Host")})
}

// WebSocket turns an http(s) base into its ws(s) form.
func WebSocket(base string) string {
	if strings.HasPrefix(base, "https://") {
		return "wss://" + strings.TrimPrefix(base, "https://")
	}
	return "ws://" + strings.TrimPrefix(base, "http://")
}

func (p PublicURL) trusted(remote string) bool {
	if len(p.Trusted) == 0 {
		return false
	}
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, pre := range p.Trusted {
		if pre.Contains(a) {
			return true
		}
	}
	return false
}

func firstValue(h string) string {
	v, _, _ := strings.Cut(h, ",")
	return strings.TrimSpace(v)
}
