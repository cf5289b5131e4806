package service_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScrapeBranding asks for the branding format over HTTP, on a design
// of scrape's branding tests: it is read from the rendered page every time
// (a page in the cache does not answer it), and a request that may only
// be answered from the cache says why it has none.
func TestScrapeBranding(t *testing.T) {
	site := httptest.NewServer(http.FileServer(http.Dir("../scrape/branding/testdata")))
	t.Cleanup(site.Close)
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true"})
	u := site.URL + "/harbor/"

	for i := 0; i < 2; i++ {
		r := ts.do("POST", "/v2/scrape", keyAcme, map[string]any{"url": u, "formats": []any{"markdown", map[string]any{"type": "branding"}}})
		require.Equal(t, 200, r.Status, "scrape %d: %s", i, r.Raw)
		data := r.Body["data"].(map[string]any)
		md := data["metadata"].(map[string]any)
		assert.Equal(t, "miss", md["cacheState"], "scrape %d: branding is never answered from the cache", i)
		assert.Equal(t, "browser-render", md["engine"], "scrape %d", i)
		assert.Contains(t, data["markdown"], "Ship containers, not worries", "scrape %d", i)
		b, ok := data["branding"].(map[string]any)
		require.True(t, ok, "scrape %d: no branding: %s", i, r.Raw)
		assert.Equal(t, "light", b["colorScheme"])
		assert.Equal(t, site.URL+"/harbor/logo.svg", b["logo"])
		colors := b["colors"].(map[string]any)
		assert.Equal(t, "#2563eb", colors["primary"])
		assert.Equal(t, "#ffffff", colors["background"])
		primary := b["components"].(map[string]any)["buttonPrimary"].(map[string]any)
		assert.Equal(t, map[string]any{"background": "#2563eb", "textColor": "#ffffff", "borderRadius": "8px"}, primary)
		assert.Equal(t, float64(8), b["spacing"].(map[string]any)["baseUnit"])
		assert.NotContains(t, b, "personality")
	}

	r := ts.do("POST", "/v2/scrape", keyAcme, map[string]any{"url": u, "formats": []any{"branding"}, "minAge": 1})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	data := r.Body["data"].(map[string]any)
	assert.Equal(t, "hit", data["metadata"].(map[string]any)["cacheState"])
	assert.NotContains(t, data, "branding")
	assert.Contains(t, data["warning"], "branding, audio and video are read from the rendered page")
}
