// Package publicurl builds the absolute URLs Trawler hands to clients
// (cdpUrl, liveViewUrl, job URLs): from the configured public base URL, else
// from the request's scheme and Host, honouring X-Forwarded-Proto and
// X-Forwarded-Host only from trusted proxies.
package publicurl

import (
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// Resolver computes a request's public base URL.
type Resolver struct {
	// Base, when set, is used for every request.
	Base *url.URL
	// Trusted are the proxies whose forwarding headers are believed.
	Trusted []netip.Prefix
}

// Request is what the resolver needs to know of a request.
type Request struct {
	RemoteAddr     string // ip:port of the peer
	TLS            bool
	Host           string
	ForwardedProto string
	ForwardedHost  string
}

// BaseURL returns the base, such as http://127.0.0.1:3002, with no trailing
// slash.
func (r Resolver) BaseURL(req Request) string {
	if r.Base != nil {
		return strings.TrimRight(r.Base.String(), "/")
	}
	scheme := "http"
	if req.TLS {
		scheme = "https"
	}
	host := req.Host
	if r.trusted(req.RemoteAddr) {
		if p := firstValue(req.ForwardedProto); p == "http" || p == "https" {
			scheme = p
		}
		if h := firstValue(req.ForwardedHost); h != "" {
			host = h
		}
	}
	return scheme + "://" + host
}

// WebSocket turns an http(s) base into its ws(s) form.
func WebSocket(base string) string {
	if strings.HasPrefix(base, "https://") {
		return "wss://" + strings.TrimPrefix(base, "https://")
	}
	return "ws://" + strings.TrimPrefix(base, "http://")
}

func (r Resolver) trusted(remote string) bool {
	if len(r.Trusted) == 0 {
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
	for _, p := range r.Trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func firstValue(h string) string {
	v, _, _ := strings.Cut(h, ",")
	return strings.TrimSpace(v)
}
