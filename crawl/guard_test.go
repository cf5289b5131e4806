package crawl

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
		assert.Equal(t, want, got[i] != nil, "%s blocked: %v", urls[i], got[i])
	}
	open := &Service{Guard: &netguard.Guard{AllowPrivate: true}}
	for i, b := range open.Blocked(context.Background(), urls) {
		assert.Nil(t, b, "%s blocked with private networks allowed", urls[i])
	}
}

func TestStartURLBlockedAtCreation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// No store and no lanes: a refused request never reaches them.
	s := &Service{Guard: &netguard.Guard{}}
	var blocked *netguard.BlockedError
	_, err := s.Create(ctx, "acme", &Spec{Kind: KindCrawl, URL: "http://127.0.0.1:8080/", Crawl: DefaultCrawlOptions()}, "")
	require.ErrorAs(t, err, &blocked, "crawl of a loopback start URL")
	_, err = s.Map(ctx, "acme", 1, MapRequest{URL: "http://10.0.0.1/", Sitemap: "include", Limit: 10})
	require.ErrorAs(t, err, &blocked, "map of a private start URL")
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
			got := guarded.CheckWebhook(ctx, tc.spec)
			require.Equal(t, tc.blocked, got != nil, "blocked with the guard on: %v", got)
			require.Nil(t, open.CheckWebhook(ctx, tc.spec), "blocked with private networks allowed")
		})
	}
}
