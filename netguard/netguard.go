// Package netguard decides which network targets Trawler may reach on a
// user's behalf (scrapes, crawls, webhooks): loopback, private, link-local,
// cloud-metadata and other non-public addresses are refused unless the
// operator allows private networks. Host names are checked after DNS
// resolution, so a public name that resolves to a private address is caught.
package netguard

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// BlockedError says why a target was refused.
type BlockedError struct {
	Host   string
	Reason string
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("%s is not allowed: %s (private networks are not reachable unless the operator sets TRAWLER_ALLOW_PRIVATE_NETWORKS=true)", e.Host, e.Reason)
}

// Guard checks targets.
type Guard struct {
	// AllowPrivate lets every address through.
	AllowPrivate bool
	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver *net.Resolver
}

var nonPublic = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "an unspecified address"},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a carrier-grade NAT address"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local or cloud metadata address"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol address"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
	{netip.MustParsePrefix("::/128"), "an unspecified address"},
	{netip.MustParsePrefix("::1/128"), "a loopback address"},
	{netip.MustParsePrefix("::/96"), "an IPv4-compatible address"},
	{netip.MustParsePrefix("fc00::/7"), "a private address"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast address"},
	{netip.MustParsePrefix("64:ff9b::/96"), "a NAT64 address"},
}

// CheckAddr refuses a non-public address.
func (g *Guard) CheckAddr(host string, a netip.Addr) error {
	if g.AllowPrivate {
		return nil
	}
	a = a.Unmap()
	for _, n := range nonPublic {
		if n.prefix.Contains(a) {
			return &BlockedError{Host: host, Reason: a.String() + " is " + n.reason}
		}
	}
	return nil
}

// CheckName refuses what can be refused without resolving host: names of
// the local machine and of cloud metadata services, and non-public IP
// literals.
func (g *Guard) CheckName(host string) error {
	if g.AllowPrivate {
		return nil
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	lower := strings.ToLower(host)
	if lower == "localhost" || strings.HasSuffix(lower, ".localhost") || lower == "metadata.google.internal" || strings.HasSuffix(lower, ".internal") {
		return &BlockedError{Host: host, Reason: "a local or metadata host name"}
	}
	if a, ok := ParseIPv4(host); ok {
		return g.CheckAddr(host, a)
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return g.CheckAddr(host, a)
	}
	return nil
}

// ParseIPv4 reads host as a browser does when it is an IPv4 address in any
// notation the WHATWG URL standard accepts, which is what Chromium resolves:
// 1 to 4 dot-separated parts, each decimal, octal (leading 0) or hex (0x),
// the last filling the remaining bytes, so 0177.0.0.1, 127.1, 0x7f.0.0.1,
// 127.000.000.001 and 2130706433 are all 127.0.0.1. ok is false for
// anything else, names included. A host whose last part is a number but
// which is no valid address (1.2.3.256) is not an address either: browsers
// refuse such a URL, and no resolver is asked for it (see CheckHost).
func ParseIPv4(host string) (netip.Addr, bool) {
	parts := strings.Split(host, ".")
	if len(parts) > 1 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1] // one trailing dot is allowed
	}
	if len(parts) == 0 || len(parts) > 4 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, ok := ipv4Number(p)
		if !ok {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	for _, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, false
		}
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, false
	}
	v := last
	for i, n := range nums[:len(nums)-1] {
		v += n << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// ipv4Number is the WHATWG IPv4 number parser: decimal, 0x hex (0x alone
// is 0) or 0-prefixed octal.
func ipv4Number(s string) (uint64, bool) {
	base := 10
	switch {
	case s == "":
		return 0, false
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		s, base = s[2:], 16
		if s == "" {
			return 0, true
		}
	case len(s) >= 2 && s[0] == '0':
		s, base = s[1:], 8
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		var d uint64
		switch c := s[i] | 0x20; {
		case s[i] >= '0' && s[i] <= '9':
			d = uint64(s[i] - '0')
		case base == 16 && c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		default:
			return 0, false
		}
		if d >= uint64(base) {
			return 0, false
		}
		n = n*uint64(base) + d
		if n > 1<<32 {
			return 0, false // past any address; stops overflow too
		}
	}
	return n, true
}

// CheckHost resolves host (a name or an IP literal) and refuses it when any
// of its addresses is not public.
func (g *Guard) CheckHost(ctx context.Context, host string) error {
	if g.AllowPrivate {
		return nil
	}
	if err := g.CheckName(host); err != nil {
		return err
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	if _, ok := ParseIPv4(host); ok {
		return nil // an address in another notation, checked by CheckName
	}
	r := g.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return &ResolveError{Host: host, Err: err}
	}
	for _, a := range addrs {
		if err := g.CheckAddr(host, a); err != nil {
			return err
		}
	}
	return nil
}

// ResolveError is a host name that could not be resolved.
type ResolveError struct {
	Host string
	Err  error
}

func (e *ResolveError) Error() string { return fmt.Sprintf("resolving %s: %v", e.Host, e.Err) }
func (e *ResolveError) Unwrap() error { return e.Err }

// Cache remembers the verdict on each host for a short time, so that a page
// with a hundred sub-resources on one host resolves it once.
type Cache struct {
	Guard *Guard
	TTL   time.Duration

	mu   sync.Mutex
	seen map[string]verdict
}

type verdict struct {
	err error
	at  time.Time
}

// CheckHost is Guard.CheckHost through the cache.
func (c *Cache) CheckHost(ctx context.Context, host string) error {
	if c.Guard.AllowPrivate {
		return nil
	}
	c.mu.Lock()
	v, ok := c.seen[host]
	c.mu.Unlock()
	if ok && time.Since(v.at) < c.TTL {
		return v.err
	}
	err := c.Guard.CheckHost(ctx, host)
	c.mu.Lock()
	if c.seen == nil {
		c.seen = map[string]verdict{}
	}
	c.seen[host] = verdict{err: err, at: time.Now()}
	c.mu.Unlock()
	return err
}
