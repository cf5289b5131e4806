package crawl

import (
	"context"
	"errors"
	"testing"

	"github.com/trawler-dev/trawler/netguard"
	"github.com/trawler-dev/trawler/webhook"
)

// The start checks need no network: the targets are IP literals and local
// names, which the guard judges without DNS, and .invalid names, which
// never resolve.

func TestBlocked(t *testing.T) {
	t.Parallel()
	urls := []string{"http://93.184.215.14/a", "http://127.0.0.1:8080/a", "http://nowhere.invalid/", "http://127.0.0.1:8080/b",
		"http://localhost/", "http://[::1]/", "http://169.254.169.254/latest/meta-data/"}
	s := &Service{Guard: &netguard.Guard{}}
	got := s.Blocked(context.Background(), urls)
	for i, want := range []bool{false, true, false, true, true, true, true} {
		if (got[i] != nil) != want {
			t.Errorf("%s: blocked %v, want %v", urls[i], got[i], want)
		}
	}
	open := &Service{Guard: &netguard.Guard{AllowPrivate: true}}
	for i, b := range open.Blocked(context.Background(), urls) {
		if b != nil {
			t.Errorf("%s blocked with private networks allowed: %v", urls[i], b)
		}
	}
}

func TestStartURLBlockedAtCreation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// No store and no lanes: a refused request never reaches them.
	s := &Service{Guard: &netguard.Guard{}}
	var blocked *netguard.BlockedError
	_, err := s.Create(ctx, "acme", &Spec{Kind: KindCrawl, URL: "http://127.0.0.1:8080/", Crawl: DefaultCrawlOptions()}, "")
	if !errors.As(err, &blocked) {
		t.Fatalf("crawl of a loopback start URL: %v, want a BlockedError", err)
	}
	if _, err := s.Map(ctx, "acme", 1, MapRequest{URL: "http://10.0.0.1/", Sitemap: "include", Limit: 10}); !errors.As(err, &blocked) {
		t.Fatalf("map of a private start URL: %v, want a BlockedError", err)
	}
}

func TestCheckWebhook(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	guarded := &Service{Guard: &netguard.Guard{}}
	open := &Service{Guard: &netguard.Guard{AllowPrivate: true}}
	for _, tc := range []struct {
		name    string
		spec    *webhook.Spec
		blocked bool
	}{
		{"none", nil, false},
		{"loopback", &webhook.Spec{URL: "http://127.0.0.1:9000/hook"}, true},
		{"metadata", &webhook.Spec{URL: "http://169.254.169.254/hook"}, true},
		{"public", &webhook.Spec{URL: "https://93.184.215.14/hook"}, false},
		{"unresolvable for now", &webhook.Spec{URL: "https://hooks.invalid/hook"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := guarded.CheckWebhook(ctx, tc.spec); (got != nil) != tc.blocked {
				t.Fatalf("guard on: %v, want blocked %v", got, tc.blocked)
			}
			if got := open.CheckWebhook(ctx, tc.spec); got != nil {
				t.Fatalf("private networks allowed: %v", got)
			}
		})
	}
}
