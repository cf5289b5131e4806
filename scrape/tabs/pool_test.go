package tabs_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/target"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/browsers/browserstest"
	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/egress"
	"github.com/trawler-dev/trawler/netguard"
	"github.com/trawler-dev/trawler/scrape/tabs"
	"github.com/trawler-dev/trawler/test/polltest"
)

// A one-off scrape's tab from Get, on a real browser: it renders what a
// page's script writes, takes a text body from the network as it came,
// passes its requests through the network guard, and the function Get
// returns closes the tab and gives the browser back, kept or destroyed
// as the outcome says.
func TestGetOwnsTheTab(t *testing.T) {
	pool, _ := browserstest.NewPool(t, browsers.PoolOptions{Size: 1, Warm: 1, QueueWait: 30 * time.Second})
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/app":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, `<!doctype html><body><div id="root"></div><script>
setTimeout(() => { document.getElementById("root").innerHTML = "<p>written by the page's script</p>"; }, 50);
</script></body>`)
		case "/data.json":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"answer": 42}`)
		}
	}))
	defer site.Close()
	tp := &tabs.Pool{NewRoute: func(string) (*egress.Route, error) { return nil, nil },
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	open := func(ctx context.Context, set tabs.Setup) (*tabs.Tab, context.Context, func(tabs.Outcome), browsers.Browser) {
		lease, err := pool.Acquire(ctx, browsers.LeaseRequest{Lifetime: time.Minute, Reusable: true, Shareable: true})
		require.NoError(t, err)
		set.Log = tp.Log
		tab, tctx, done, err := tp.Get(ctx, lease, tabs.Request{Setup: set})
		require.NoError(t, err)
		return tab, tctx, done, lease.Browser()
	}
	private := &netguard.Cache{Guard: &netguard.Guard{AllowPrivate: true}, TTL: time.Minute}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	tab, tctx, done, b := open(ctx, tabs.Setup{Guard: private})
	require.NoError(t, tab.Navigate(tctx, site.URL+"/app"))
	tab.Settle(tctx, 5*time.Second)
	html, u, err := tab.HTML(tctx)
	require.NoError(t, err)
	assert.Contains(t, html, "written by the page's script", "the tab did not wait for the page's script")
	assert.Equal(t, site.URL+"/app", u)
	m, ok := tab.Main()
	require.True(t, ok, "the main response was not seen")
	assert.Equal(t, 200, m.Status)
	assert.Equal(t, egress.TierBasic, tab.Traffic().ProxyUsed)
	done(tabs.Outcome{Drove: true})
	polltest.Until(t, 10*time.Second, "the lease is given back", func() bool { return pool.Stats().Leased == 0 })
	assert.Equal(t, 1, pool.Stats().Idle, "a browser that served its scrape well was not kept")
	conn, err := b.CDP().Dial(ctx)
	require.NoError(t, err)
	defer conn.Close()
	targets, err := cdp.Do(ctx, cdp.Browser(conn), target.GetTargets, target.GetTargetsParams{})
	require.NoError(t, err)
	for _, ti := range targets.TargetInfos {
		assert.NotContains(t, ti.URL, site.URL, "the scrape's tab is still open")
	}

	// A static tab takes a text body from the network, as it came.
	tab, tctx, done, b2 := open(ctx, tabs.Setup{Guard: private, Static: true})
	assert.Equal(t, b.ID(), b2.ID(), "the kept browser did not serve the next scrape")
	tab.Navigate(tctx, site.URL+"/data.json")
	select {
	case tb := <-tab.Taken():
		assert.JSONEq(t, `{"answer": 42}`, string(tb.Body))
		assert.False(t, tb.Binary)
	case <-time.After(10 * time.Second):
		t.Fatal("the JSON body was not taken from the network")
	}
	// A scrape that failed for a reason not the page's leaves its browser
	// in doubt: it is destroyed.
	done(tabs.Outcome{Err: errors.New("the browser stopped answering")})
	polltest.Until(t, 20*time.Second, "the failed scrape's browser is replaced", func() bool {
		s := pool.Stats()
		return s.Leased == 0 && s.Idle == 1
	})

	// The guard refuses what the setup's guard refuses: here, loopback.
	public := &netguard.Cache{Guard: &netguard.Guard{}, TTL: time.Minute}
	tab, tctx, done, b3 := open(ctx, tabs.Setup{Guard: public})
	assert.NotEqual(t, b.ID(), b3.ID(), "the failed scrape's browser served again")
	err = tab.Navigate(tctx, site.URL+"/app")
	require.Error(t, err, "a loopback page was loaded past a guard that refuses it")
	done(tabs.Outcome{Err: err, Drove: true})
}

// The user agent and client hints derived from the Chromium binary's
// version, before any browser starts, are those a started browser of that
// binary reports of itself (with nothing presented): in the browser's
// product and, on a loopback page (a secure context), in navigator.userAgent
// and navigator.userAgentData.
func TestPresentedIdentityIsTheBrowsers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt := browserstest.Runtime(t, t.TempDir())
	rt.Unpresented = true
	version, err := rt.ChromiumVersion(ctx)
	require.NoError(t, err)
	derived, ok := browsers.ReducedUserAgent(version)
	require.True(t, ok, "no user agent for Chromium %q", version)
	hints := tabs.ChromiumHints(version)
	require.NotNil(t, hints, "no client hints for Chromium %q", version)

	b, err := rt.Start(ctx, "ua")
	require.NoError(t, err)
	defer b.Close()
	conn, err := b.CDP().Dial(ctx)
	require.NoError(t, err)
	defer conn.Close()
	reported, err := tabs.BrowserUserAgent(ctx, conn)
	require.NoError(t, err)
	assert.Equal(t, reported, derived, "Chromium %s", version)

	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<!doctype html><title>hints</title>")
	}))
	defer site.Close()
	sess, err := cdp.OpenTarget(ctx, conn, target.CreateTargetParams{URL: site.URL})
	require.NoError(t, err)
	var seen struct {
		Brands, FullVersionList []struct{ Brand, Version string }
		Platform, Architecture  string
		Bitness                 string
		Mobile                  bool
	}
	require.Eventually(t, func() bool {
		raw, err := sess.Evaluate(ctx, `navigator.userAgentData ? navigator.userAgentData.getHighEntropyValues(
  ["fullVersionList", "platform", "architecture", "bitness"]) : null`)
		return err == nil && json.Unmarshal(raw, &seen) == nil && len(seen.Brands) > 0
	}, 20*time.Second, 100*time.Millisecond, "navigator.userAgentData on a loopback page")
	pairs := func(bs []*emulation.UserAgentBrandVersion) (out []string) {
		for _, b := range bs {
			out = append(out, b.Brand+"/"+b.Version)
		}
		return out
	}
	seenPairs := func(bs []struct{ Brand, Version string }) (out []string) {
		for _, b := range bs {
			out = append(out, b.Brand+"/"+b.Version)
		}
		return out
	}
	assert.Equal(t, seenPairs(seen.Brands), pairs(hints.Brands), "brands")
	assert.Equal(t, seenPairs(seen.FullVersionList), pairs(hints.FullVersionList), "full version list")
	assert.Equal(t, []string{seen.Platform, seen.Architecture, seen.Bitness}, []string{hints.Platform, hints.Architecture, hints.Bitness})
	assert.False(t, seen.Mobile, "mobile")
}
