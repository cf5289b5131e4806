package egress

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/trawler-dev/trawler/netguard"
)

// through returns a client whose every request goes through p, as a
// browser's do.
func through(t *testing.T, p *Proxy) *http.Client {
	t.Helper()
	u, err := p.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pu, _ := url.Parse(u)
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu),
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the test site's own certificate
}

func newProxy(t *testing.T, allowPrivate bool, rules HostRules) *Proxy {
	t.Helper()
	p := New(Config{Guard: &netguard.Guard{AllowPrivate: allowPrivate}, Rules: rules})
	t.Cleanup(func() { p.Close() })
	return p
}

func site(t *testing.T, tls bool) *httptest.Server {
	t.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "hello %s", r.URL.Path) })
	var s *httptest.Server
	if tls {
		s = httptest.NewTLSServer(h)
	} else {
		s = httptest.NewServer(h)
	}
	t.Cleanup(s.Close)
	return s
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestProxyForwards(t *testing.T) {
	t.Parallel()
	c := through(t, newProxy(t, true, nil))
	for _, s := range []*httptest.Server{site(t, false), site(t, true)} {
		if code, body := get(t, c, s.URL+"/a"); code != 200 || body != "hello /a" {
			t.Errorf("%s: %d %q", s.URL, code, body)
		}
	}
}

func TestProxyGuard(t *testing.T) {
	t.Parallel()
	c := through(t, newProxy(t, false, nil))
	plain, secure := site(t, false), site(t, true)
	if code, body := get(t, c, plain.URL+"/a"); code != 403 || strings.Contains(body, "hello") {
		t.Errorf("plain HTTP to loopback with the guard on: %d %q", code, body)
	}
	if code, body := get(t, c, secure.URL+"/a"); code != 0 || strings.Contains(body, "hello") {
		t.Errorf("CONNECT to loopback with the guard on: %d %q", code, body)
	}
	if code, _ := get(t, c, "http://localhost:1/"); code != 403 {
		t.Errorf("localhost by name: %d", code)
	}
}

// TestProxyDeniesOwnAddresses: Trawler's own listeners stay out of reach
// when private networks are allowed, however the address is spelt.
func TestProxyDeniesOwnAddresses(t *testing.T) {
	t.Parallel()
	p := newProxy(t, true, nil)
	c := through(t, p)
	own, other := site(t, false), site(t, false)
	p.Deny(own.Listener.Addr().String())
	_, port, _ := net.SplitHostPort(own.Listener.Addr().String())
	for _, u := range []string{own.URL + "/metrics", "http://127.0.0.2:" + port + "/", "http://localhost:" + port + "/", "http://[::1]:" + port + "/"} {
		if code, body := get(t, c, u); code != 403 || strings.Contains(body, "hello") {
			t.Errorf("%s: %d %q", u, code, body)
		}
	}
	if code, _ := get(t, c, other.URL+"/"); code != 200 {
		t.Errorf("another loopback site: %d", code)
	}
	// The proxy itself is one of Trawler's listeners.
	pu, _ := p.Listen("127.0.0.1:0")
	if code, _ := get(t, c, pu+"/"); code != 403 {
		t.Errorf("the proxy through itself: %d", code)
	}

	// A listener on every interface denies its port on every local address.
	all := newProxy(t, true, nil)
	ca := through(t, all)
	all.Deny("0.0.0.0:" + port)
	if code, _ := get(t, ca, "http://127.0.0.1:"+port+"/"); code != 403 {
		t.Errorf("0.0.0.0 listener reached on 127.0.0.1: %d", code)
	}
}

func TestHostRules(t *testing.T) {
	t.Parallel()
	rules, err := HostRulesFromFlags([]string{"--lang=fr", `--host-resolver-rules="MAP *.trawler.test 127.0.0.1, EXCLUDE skip.trawler.test, MAP gone.test ~NOTFOUND"`})
	if err != nil {
		t.Fatal(err)
	}
	c := through(t, newProxy(t, true, rules))
	s := site(t, false)
	_, port, _ := net.SplitHostPort(s.Listener.Addr().String())
	if code, body := get(t, c, "http://www.trawler.test:"+port+"/x"); code != 200 || body != "hello /x" {
		t.Errorf("mapped host: %d %q", code, body)
	}
	if code, _ := get(t, c, "http://skip.trawler.test:"+port+"/"); code == 200 {
		t.Error("an excluded host was mapped")
	}
	if _, _, _, err := rules.Map("gone.test"); !errors.Is(err, ErrNotFound) {
		t.Errorf("~NOTFOUND: %v", err)
	}
	for _, bad := range []string{"MAP onlyone", "REDIRECT a b", "MAP a b c"} {
		if _, err := ParseHostRules(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
