package netguard

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCheckHost(t *testing.T) {
	t.Parallel()
	g := &Guard{}
	ctx := context.Background()
	for _, host := range []string{"127.0.0.1", "localhost", "LOCALHOST.", "foo.localhost", "10.1.2.3", "172.20.0.1", "192.168.1.1",
		"169.254.169.254", "metadata.google.internal", "::1", "[::1]", "fe80::1", "fd00::1", "0.0.0.0", "100.64.0.1", "::ffff:127.0.0.1"} {
		var b *BlockedError
		assert.ErrorAs(t, g.CheckHost(ctx, host), &b, host)
	}
	for _, host := range []string{"93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "8.8.8.8"} {
		assert.NoError(t, g.CheckHost(ctx, host), "%s, want allowed", host)
	}
	assert.NoError(t, (&Guard{AllowPrivate: true}).CheckHost(ctx, "127.0.0.1"), "AllowPrivate still blocks")
	// A name is judged by what it resolves to.
	assert.Error(t, g.CheckHost(ctx, "no-such-host.invalid"), "an unresolvable name was allowed")
}

// Every notation a browser reads as an IPv4 address is judged as that
// address, without asking DNS.
func TestIPv4Notations(t *testing.T) {
	t.Parallel()
	g := &Guard{Resolver: &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("DNS must not be asked")
	}}}
	for _, tc := range []struct {
		host string
		want string // "" when host is no IPv4 address
	}{
		{"127.0.0.1", "127.0.0.1"},
		{"0177.0.0.1", "127.0.0.1"},
		{"127.1", "127.0.0.1"},
		{"0x7f.0.0.1", "127.0.0.1"},
		{"0X7F.1", "127.0.0.1"},
		{"127.000.000.001", "127.0.0.1"},
		{"2130706433", "127.0.0.1"},
		{"017700000001", "127.0.0.1"},
		{"0x7f000001", "127.0.0.1"},
		{"127.0.0.1.", "127.0.0.1"},
		{"10.0x10000", "10.1.0.0"},
		{"169.254.43518", "169.254.169.254"},
		{"0", "0.0.0.0"},
		{"0x", "0.0.0.0"},
		{"8.8.8.8", "8.8.8.8"},
		{"1.2.3.256", ""},
		{"256.1", ""},
		{"1.2.3.4.5", ""},
		{"4294967296", ""},
		{"08.0.0.1", ""},
		{"0x7g.0.0.1", ""},
		{"1..2", ""},
		{"example.com", ""},
		{"", ""},
		{"99999999999999999999999", ""},
	} {
		a, ok := ParseIPv4(tc.host)
		got := ""
		if ok {
			got = a.String()
		}
		assert.Equal(t, tc.want, got, "ParseIPv4(%q)", tc.host)
		if tc.want == "" || tc.want == "8.8.8.8" {
			continue
		}
		var b *BlockedError
		assert.ErrorAs(t, g.CheckHost(context.Background(), tc.host), &b, "CheckHost(%q)", tc.host)
	}
	assert.NoError(t, g.CheckHost(context.Background(), "8.8.8.8"), "8.8.8.8")
	var b *BlockedError
	assert.ErrorAs(t, g.CheckHost(context.Background(), "::7f00:1"), &b, "an IPv4-compatible IPv6 address")
}
