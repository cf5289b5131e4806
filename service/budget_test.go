package service_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Inputs that would cost the host memory are refused before the work, with
// a 400 naming the field and the limit, and the answer to a request with a
// great many bad values stays small.
func TestBudgetsRefuseUpFront(t *testing.T) {
	t.Parallel()
	ts := start(t, map[string]string{"TRAWLER_WARM_BROWSERS": "0"})

	// The tester's request: 3,000 short patterns, each compiling large.
	many := make([]string, 3000)
	for i := range many {
		many[i] = "(?i)(abc|def){999}"
	}
	began := time.Now()
	r := ts.do("POST", "/v2/crawl", keyAcme, map[string]any{"url": "https://example.com/", "includePaths": many})
	assert.Less(t, time.Since(began), 5*time.Second)
	require.Equal(t, 400, r.Status, "%s", r.Raw)
	assert.Contains(t, r.str("error"), "includePaths has 3000 patterns; at most 1000")
	r = ts.do("POST", "/v2/crawl", keyAcme, map[string]any{"url": "https://example.com/", "excludePaths": many[:50]})
	require.Equal(t, 400, r.Status, "%s", r.Raw)
	assert.Contains(t, r.str("error"), "excludePaths[5]")
	assert.Contains(t, r.str("error"), "instructions")
	assert.Empty(t, ts.do("GET", "/v2/crawl/active", keyAcme, nil).Body["crawls"], "a refused crawl is not running")

	// A batch past its count is refused on the count, in a short answer.
	urls := make([]string, 100001)
	for i := range urls {
		urls[i] = "x"
	}
	r = ts.do("POST", "/v2/batch/scrape", keyAcme, map[string]any{"urls": urls})
	require.Equal(t, 400, r.Status, "%s", r.Raw)
	assert.Less(t, len(r.Raw), 1000, "the answer to 100,001 URLs: %d bytes", len(r.Raw))
	assert.Contains(t, r.str("error"), "at most 100000")

	// 50,000 invalid URLs: the first few are quoted, the rest counted.
	r = ts.do("POST", "/v2/batch/scrape", keyAcme, map[string]any{"urls": urls[:50000], "ignoreInvalidURLs": false})
	require.Equal(t, 400, r.Status, "%s", r.Raw)
	assert.Less(t, len(r.Raw), 10000, "the answer to 50,000 invalid URLs: %d bytes", len(r.Raw))
	assert.Contains(t, r.str("error"), "and 49980 more")

	// Many problems: the details list the first 50 and count the rest.
	var bad []any
	for range 80 {
		bad = append(bad, 1)
	}
	r = ts.do("POST", "/v2/batch/scrape", keyAcme, map[string]any{"urls": bad})
	require.Equal(t, 400, r.Status, "%s", r.Raw)
	details := r.Body["details"].([]any)
	require.Len(t, details, 51)
	assert.Equal(t, "and 30 more problems", details[50].(map[string]any)["message"])
	assert.Equal(t, 51, strings.Count(r.str("error"), ";")+1, "the message joins the details it lists")

	// A long value is quoted cut short.
	long := "ftp://" + strings.Repeat("a", 5000) + ".example/"
	r = ts.do("POST", "/v2/scrape", keyAcme, map[string]any{"url": long})
	require.Equal(t, 400, r.Status, "%s", r.Raw)
	assert.Less(t, len(r.Raw), 4000, "a 5 KB bad URL quoted back: %d bytes", len(r.Raw))
}
