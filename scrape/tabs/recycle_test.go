package tabs

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The origins and storage keys a cleared tab asks Chromium to clear, in
// the forms Chromium keys data by: an origin with its port unless it is
// the scheme's default, a site with no port and the registrable domain,
// a frame's partitioned key as its origin, "/^0" and the top-level site.
// (TestRecycledTabsKeepNoState in package service shows Chromium takes
// them: a frame's partitioned storage is gone.)
func TestClearedOriginsAndKeys(t *testing.T) {
	assert.Equal(t, []string{"http://example.com", "https://example.com:80"}, clearOrigins("example.com:80"))
	assert.Equal(t, []string{"http://shop.example.co.uk:443", "https://shop.example.co.uk"}, clearOrigins("shop.example.co.uk:443"))
	assert.Equal(t, []string{"http://127.0.0.1:8080", "https://127.0.0.1:8080"}, clearOrigins("127.0.0.1:8080"))
	assert.Equal(t, []string{"http://[::1]:3000", "https://[::1]:3000"}, clearOrigins("[::1]:3000"))
	assert.Nil(t, clearOrigins("no port"))

	site := func(raw string) string {
		u, err := url.Parse(raw)
		assert.NoError(t, err)
		return schemefulSite(u)
	}
	assert.Equal(t, "https://example.co.uk", site("https://a.b.example.co.uk:8443/x"))
	assert.Equal(t, "http://127.0.0.1", site("http://127.0.0.1:5000/"))
	assert.Equal(t, "http://localhost", site("http://localhost:5000/"))
	assert.Equal(t, "http://[::1]", site("http://[::1]:5000/"))

	tops := map[string]struct{}{"https://news.example": {}, "https://example.org": {}}
	assert.ElementsMatch(t, []string{
		"https://a.cdn.example.org/^31",
		"https://a.cdn.example.org/^0https://news.example",
	}, storageKeys("https://a.cdn.example.org", tops), "no key of the frame under its own site")
}

// A team with recycleLive tabs out on a browser waits for one to come
// back before opening another; a tab given up wakes it, and another team
// or another browser does not wait.
func TestTeamWaitsForItsTabs(t *testing.T) {
	var r recycled
	ctx := context.Background()
	for range recycleLive {
		assert.Nil(t, r.get(ctx, "b1", "acme"), "no tab is kept yet: open one")
	}
	got := make(chan struct{})
	go func() {
		r.get(ctx, "b1", "acme")
		close(got)
	}()
	select {
	case <-got:
		t.Fatal("a fifth tab was opened at once")
	case <-time.After(200 * time.Millisecond):
	}
	assert.Nil(t, r.get(ctx, "b1", "globex"), "another team waited")
	assert.Nil(t, r.get(ctx, "b2", "acme"), "another browser waited")
	r.done("b1", "acme")
	select {
	case <-got:
	case <-time.After(recycleWait / 2):
		t.Fatal("the waiting scrape was not woken when a tab was given up")
	}
	r.mu.Lock()
	assert.Equal(t, recycleLive, r.live[liveKey{"b1", "acme"}], "the woken scrape holds the place given up")
	r.mu.Unlock()

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	start := time.Now()
	assert.Nil(t, r.get(cctx, "b1", "acme"))
	assert.Less(t, time.Since(start), recycleWait/2, "a cancelled request waited")
}
