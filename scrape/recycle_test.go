package scrape

import (
	"net/url"
	"testing"

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
