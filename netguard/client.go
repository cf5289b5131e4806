package netguard

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// TLSCheck says whether a client checks the certificates servers show it.
type TLSCheck int

const (
	// VerifyTLS refuses a certificate that does not verify.
	VerifyTLS TLSCheck = iota
	// SkipTLSVerify accepts any certificate, as a scrape does with its
	// skipTlsVerification option.
	SkipTLSVerify
)

// Client returns an HTTP client whose every connection, redirects included,
// is checked against the guard at the moment it is dialled, on the address
// actually dialled: a name that resolves to a private address is refused
// even when it resolved to a public one a moment earlier.
func (g *Guard) Client(timeout time.Duration, tlsCheck TLSCheck) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	d.ControlContext = func(ctx context.Context, network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return err
		}
		host, _ := ctx.Value(hostKey{}).(string)
		if host == "" {
			host = ap.Addr().String()
		}
		return g.CheckAddr(host, ap.Addr())
	}
	tr := &http.Transport{
		Proxy: nil, // never an environment proxy: the guard must see the target
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, _ := net.SplitHostPort(addr)
			return d.DialContext(context.WithValue(ctx, hostKey{}, host), network, addr)
		},
		TLSClientConfig:       &tls.Config{InsecureSkipVerify: tlsCheck == SkipTLSVerify}, //nolint:gosec // the scrape option skipTlsVerification
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout,
	}
	return &http.Client{Transport: tr, Timeout: timeout}
}

type hostKey struct{}
