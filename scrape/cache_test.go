package scrape

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/netguard"
	"github.com/trawler-dev/trawler/store"
)

// cacheRig runs scrapes through Service.run with a fetcher that counts its
// calls instead of a browser: what the cache answers, and for whom.
type cacheRig struct {
	t       *testing.T
	st      *store.Store
	fetched int
	// final is the URL the fetched page ends on ("" for the requested one).
	final string
	// private is what the tab would have seen: a request of the page went
	// to a non-public address.
	private bool
}

func newCacheRig(t *testing.T) *cacheRig {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "t.db"))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return &cacheRig{t: t, st: st}
}

// scrape runs team's scrape of u on a service with the given guard and
// cache settings, and returns its cacheState ("hit" or "miss") or error.
func (r *cacheRig) scrape(team, u string, allowPrivate, shared bool, edit func(*Options)) (string, error) {
	r.t.Helper()
	s := &Service{Store: r.st, Guard: &netguard.Guard{AllowPrivate: allowPrivate}, SharedCache: shared,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	o := DefaultOptions()
	if edit != nil {
		edit(&o)
	}
	doc, err := s.run(context.Background(), Request{Team: team, URL: u, Options: o, Job: true}, s.hostGuard(),
		func(context.Context, Request) (*page, error) {
			r.fetched++
			final := u
			if r.final != "" {
				final = r.final
			}
			return &page{status: 200, finalURL: final, contentType: "text/html", engine: "browser-fetch",
				body: []byte("<html><body><main><p>Hello</p></main></body></html>"), private: r.private}, nil
		})
	if err != nil {
		return "", err
	}
	return doc.Metadata["cacheState"].(string), nil
}

// TestCacheSharing is the sharing decision, without a network: public
// addresses are IP literals, which the guard judges without DNS.
func TestCacheSharing(t *testing.T) {
	t.Parallel()
	const public = "http://93.184.215.14/page"
	lockdown := func(o *Options) {
		o.Lockdown, o.ZeroDataRetention = true, true
	}
	for _, tc := range []struct {
		name         string
		url          string
		final        string // where the page ended, if elsewhere
		private      bool   // a request of the page went to a non-public address
		allowPrivate bool
		shared       bool
		want         string // globex's cacheState after acme's fetch
	}{
		{name: "public page, cache not shared", url: public, want: "miss"},
		{name: "public page, shared", url: public, shared: true, want: "hit"},
		{name: "public page, shared, private networks allowed", url: public, shared: true, allowPrivate: true, want: "hit"},
		{name: "loopback page, shared", url: "http://127.0.0.1:8080/page", shared: true, allowPrivate: true, want: "miss"},
		{name: "private page, shared", url: "http://10.1.2.3/page", shared: true, allowPrivate: true, want: "miss"},
		{name: "localhost, shared", url: "http://localhost:8080/page", shared: true, allowPrivate: true, want: "miss"},
		{name: "public page redirected to a private one, shared", url: public, final: "http://192.168.1.1/", shared: true,
			allowPrivate: true, want: "miss"},
		{name: "public page that loaded from a private address, shared", url: public, private: true, shared: true,
			allowPrivate: true, want: "miss"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newCacheRig(t)
			r.final, r.private = tc.final, tc.private
			state, err := r.scrape("acme", tc.url, tc.allowPrivate, tc.shared, nil)
			require.NoError(t, err, "acme's first scrape")
			require.Equal(t, "miss", state, "acme's first scrape")
			state, err = r.scrape("acme", tc.url, tc.allowPrivate, tc.shared, nil)
			require.NoError(t, err, "acme's own page")
			require.Equal(t, "hit", state, "acme's own page")
			require.Equal(t, 1, r.fetched, "times acme's own page was fetched")
			// Lockdown answers from the cache only: it shows what globex may read.
			_, err = r.scrape("globex", tc.url, tc.allowPrivate, tc.shared, lockdown)
			require.Equal(t, tc.want, map[bool]string{true: "hit", false: "miss"}[err == nil], "globex's lockdown: %v", err)
			if err != nil {
				require.ErrorIs(t, err, ErrLockdownMiss, "globex's lockdown")
			}
			state, err = r.scrape("globex", tc.url, tc.allowPrivate, tc.shared, nil)
			require.NoError(t, err, "globex")
			require.Equal(t, tc.want, state, "globex")
			require.Equal(t, map[string]int{"hit": 1, "miss": 2}[tc.want], r.fetched, "times the target was fetched")
		})
	}
}

// TestCacheAfterGuardTurnsOn: pages cached while private networks were
// allowed answer nobody once they are not, the team that fetched them
// included, and the guard refuses the target before the cache is read.
func TestCacheAfterGuardTurnsOn(t *testing.T) {
	t.Parallel()
	r := newCacheRig(t)
	const loopback, public = "http://127.0.0.1:8080/page", "http://93.184.215.14/page"
	for _, u := range []string{loopback, public} {
		_, err := r.scrape("acme", u, true, false, nil)
		require.NoError(t, err)
	}
	var blocked *netguard.BlockedError
	_, err := r.scrape("acme", loopback, false, false, nil)
	require.ErrorAs(t, err, &blocked, "loopback page with the guard on")
	require.Equal(t, 2, r.fetched, "times fetched after the loopback page with the guard on")
	_, err = r.scrape("acme", loopback, false, false, func(o *Options) { o.Lockdown = true })
	require.ErrorAs(t, err, &blocked, "lockdown of a loopback page with the guard on")
	state, err := r.scrape("acme", public, false, false, nil)
	require.NoError(t, err, "a public page cached while private networks were allowed")
	require.Equal(t, "hit", state, "a public page cached while private networks were allowed")

	// A page that took something from a private address (its name now
	// resolving to a public one, say) is not served with the guard on.
	r.private = true
	_, err = r.scrape("acme", public, true, false, func(o *Options) { o.MaxAge = 0 })
	require.NoError(t, err)
	_, err = r.scrape("acme", public, false, false, func(o *Options) { o.Lockdown = true })
	require.ErrorIs(t, err, ErrLockdownMiss, "lockdown of a page fetched from a private address, guard on")
	_, err = r.scrape("acme", public, true, false, func(o *Options) { o.Lockdown = true })
	require.NoError(t, err, "the same lockdown with private networks allowed")
}

func TestNonPublic(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		urls []string
		want bool
	}{
		{"public address", []string{"http://93.184.215.14/"}, false},
		{"public IPv6 address", []string{"http://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/"}, false},
		{"loopback", []string{"http://127.0.0.1:3000/"}, true},
		{"IPv6 loopback", []string{"http://[::1]/"}, true},
		{"private", []string{"https://10.0.0.7/"}, true},
		{"link-local metadata", []string{"http://169.254.169.254/latest/meta-data/"}, true},
		{"localhost", []string{"http://localhost/"}, true},
		{"redirected to a private address", []string{"http://93.184.215.14/", "http://192.168.0.1/"}, true},
		{"a page without a host", []string{"http://93.184.215.14/", "about:blank"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, nonPublic(context.Background(), nil, tc.urls...), "nonPublic(%q)", tc.urls)
		})
	}
}
