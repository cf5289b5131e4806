package netguard

import (
	"context"
	"errors"
	"testing"
)

func TestCheckHost(t *testing.T) {
	t.Parallel()
	g := &Guard{}
	ctx := context.Background()
	for _, host := range []string{"127.0.0.1", "localhost", "LOCALHOST.", "foo.localhost", "10.1.2.3", "172.20.0.1", "192.168.1.1",
		"169.254.169.254", "metadata.google.internal", "::1", "[::1]", "fe80::1", "fd00::1", "0.0.0.0", "100.64.0.1", "::ffff:127.0.0.1"} {
		var b *BlockedError
		if err := g.CheckHost(ctx, host); !errors.As(err, &b) {
			t.Errorf("%s: %v, want a BlockedError", host, err)
		}
	}
	for _, host := range []string{"93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "8.8.8.8"} {
		if err := g.CheckHost(ctx, host); err != nil {
			t.Errorf("%s: %v, want allowed", host, err)
		}
	}
	if err := (&Guard{AllowPrivate: true}).CheckHost(ctx, "127.0.0.1"); err != nil {
		t.Errorf("AllowPrivate still blocks: %v", err)
	}
	// A name is judged by what it resolves to.
	if err := g.CheckHost(ctx, "no-such-host.invalid"); err == nil {
		t.Error("an unresolvable name was allowed")
	}
}
