package service_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/test/polltest"
)

// creditsOf reads a document's creditsUsed.
func creditsOf(t *testing.T, doc map[string]any) int {
	t.Helper()
	md, _ := doc["metadata"].(map[string]any)
	n, ok := md["creditsUsed"].(float64)
	require.True(t, ok, "a document without creditsUsed: %v", md)
	return int(n)
}

// usage is GET /v2/team/credit-usage's data for key.
func (ts *testService) usage(key string) map[string]any {
	ts.t.Helper()
	r := ts.do("GET", "/v2/team/credit-usage", key, nil)
	require.Equal(ts.t, 200, r.Status, "credit-usage: %s", r.Raw)
	return r.Body["data"].(map[string]any)
}

// One service, two teams. acme runs a mixed workload (scrapes of every
// billing kind, a crawl, a batch, a search that scrapes its results, a
// parse, a browser session): its credit usage is the sum of what each
// answer said it cost, and globex sees none of it. globex has a limit of
// 2 credits: past it, every billable request is a 402 and the rest still
// answers. A scrape held back by acme's concurrency limit (1 browser, taken
// by a session) says so in its metadata.
func TestCreditUsageAndLimits(t *testing.T) {
	t.Parallel()
	site := newCrawlSite(t)
	ts := crawlService(t, map[string]string{
		"TRAWLER_TEAM_FEATURES":    "acme:zeroDataRetention",
		"TRAWLER_TEAM_CREDITS":     "globex:2",
		"TRAWLER_TEAM_CONCURRENCY": "1",
		"TRAWLER_QUEUE_WAIT":       "10s",
	})
	want := 0 // what acme's answers said it cost

	// Single scrapes: a fetch, a lockdown hit (5), a lockdown miss (1, no
	// document), a zero-data-retention scrape (not stored, billed alone).
	first := ts.scrape(map[string]any{"url": site.URL + "/docs/c1"})
	require.Equal(t, 200, first.Status, "%s", first.Raw)
	assert.Equal(t, false, meta(first)["concurrencyLimited"], "a scrape nothing held back")
	assert.NotContains(t, meta(first), "concurrencyQueueDurationMs")
	want += creditsOf(t, data(first))
	hit := ts.scrape(map[string]any{"url": site.URL + "/docs/c1", "lockdown": true})
	require.Equal(t, 200, hit.Status, "%s", hit.Raw)
	assert.Equal(t, 5, creditsOf(t, data(hit)), "a lockdown hit")
	want += 5
	miss := ts.scrape(map[string]any{"url": site.URL + "/docs/never-fetched", "lockdown": true})
	require.Equal(t, "SCRAPE_LOCKDOWN_CACHE_MISS", miss.str("code"), "%s", miss.Raw)
	want += 1
	zdr := ts.scrape(map[string]any{"url": site.URL + "/docs/c2", "zeroDataRetention": true})
	require.Equal(t, 200, zdr.Status, "%s", zdr.Raw)
	want += creditsOf(t, data(zdr))

	// A crawl and a batch: the sum of their pages, and their creditsUsed.
	_, st, docs := ts.runJob("/v2/crawl", keyAcme, map[string]any{"url": site.URL + "/blog/", "sitemap": "skip"})
	require.Len(t, docs, 2, "the crawl's pages")
	pages := 0
	for _, d := range docs {
		pages += creditsOf(t, d)
	}
	assert.EqualValues(t, pages, st["creditsUsed"], "the crawl's creditsUsed")
	want += pages
	_, st, docs = ts.runJob("/v2/batch/scrape", keyAcme, map[string]any{"urls": []string{site.URL + "/docs/c3", site.URL + "/missing-page"}})
	require.Len(t, docs, 2, "the batch's pages (a 404 is a page too)")
	pages = 0
	for _, d := range docs {
		pages += creditsOf(t, d)
	}
	assert.EqualValues(t, pages, st["creditsUsed"], "the batch's creditsUsed")
	want += pages

	// A search that scrapes its results; until the index has the pages it
	// finds nothing, which costs nothing.
	polltest.Until(t, 30*time.Second, "the search to find the pages", func() bool {
		r := ts.do("POST", "/v2/search", keyAcme, map[string]any{"query": "server-rendered", "limit": 2,
			"scrapeOptions": map[string]any{"formats": []string{"markdown"}}})
		require.Equal(t, 200, r.Status, "search: %s", r.Raw)
		n, _ := r.Body["creditsUsed"].(float64)
		want += int(n)
		web, _ := r.Body["data"].(map[string]any)["web"].([]any)
		return len(web) > 0
	})

	// A parse, and a browser session billed by the minute when it ends.
	p := ts.parseFile(keyAcme, upload{name: "file", filename: "note.html",
		data: []byte("<html><body><h1>Note</h1><p>A short note.</p></body></html>")})
	require.Equal(t, 200, p.Status, "%s", p.Raw)
	want += creditsOf(t, data(p))
	s := ts.create(keyAcme, nil)
	id := s.str("id")

	// acme's one browser is the session's: a scrape that needs a browser
	// (waitFor renders the page) waits for it, and its metadata says for
	// how long. A scrape that needs none is not held back by the team's
	// browsers.
	conc := ts.do("GET", "/v2/concurrency-check", keyAcme, nil)
	require.Equal(t, 200, conc.Status, "%s", conc.Raw)
	assert.EqualValues(t, 1, conc.Body["concurrency"], "acme's browsers: the session's")
	assert.EqualValues(t, 1, conc.Body["maxConcurrency"])
	var deleted response
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(700 * time.Millisecond) // the held scrape waits a while first, to be measured
		deleted = ts.do("DELETE", "/v2/browser/"+id, keyAcme, nil)
	}()
	static := ts.scrape(map[string]any{"url": site.URL + "/docs/c3"})
	require.Equal(t, 200, static.Status, "%s", static.Raw)
	assert.Equal(t, false, meta(static)["concurrencyLimited"], "a scrape without a browser held back by the session's browser")
	want += creditsOf(t, data(static))
	held := ts.scrape(map[string]any{"url": site.URL + "/docs/c4", "waitFor": 1})
	wg.Wait()
	require.Equal(t, 200, held.Status, "%s", held.Raw)
	assert.Equal(t, true, meta(held)["concurrencyLimited"], "a scrape held back by the team's limit")
	assert.GreaterOrEqual(t, meta(held)["concurrencyQueueDurationMs"], float64(500), "the time it was held back")
	want += creditsOf(t, data(held))
	require.Equal(t, 200, deleted.Status, "%s", deleted.Raw)
	assert.EqualValues(t, 2, deleted.Body["creditsBilled"], "a session of under a minute")
	want += 2

	u := ts.usage(keyAcme)
	assert.EqualValues(t, want, u["usedCredits"], "acme's credits: the sum of what each answer cost")
	assert.EqualValues(t, 99_999_999, u["planCredits"], "no limit")
	assert.EqualValues(t, 99_999_999-want, u["remainingCredits"])
	assert.Equal(t, true, u["unlimited"])
	hist := ts.do("GET", "/v2/team/credit-usage/historical?byApiKey=true", keyAcme, nil)
	require.Equal(t, 200, hist.Status, "%s", hist.Raw)
	periods := hist.Body["periods"].([]any)
	require.Len(t, periods, 1, "this month")
	assert.EqualValues(t, want, periods[0].(map[string]any)["totalCredits"])
	assert.Equal(t, u["billingPeriodStart"], periods[0].(map[string]any)["startDate"])
	if r := ts.do("GET", "/v2/team/credit-usage/historical?byApiKey=maybe", keyAcme, nil); r.Status != 400 || r.str("code") != "BAD_REQUEST" {
		t.Errorf("byApiKey=maybe: %d %s", r.Status, r.Raw)
	}
	q := ts.do("GET", "/v2/team/queue-status", keyAcme, nil)
	require.Equal(t, 200, q.Status, "%s", q.Raw)
	assert.EqualValues(t, 0, q.Body["jobsInQueue"], "nothing queued: %s", q.Raw)
	assert.EqualValues(t, 1, q.Body["maxConcurrency"])
	assert.NotNil(t, q.Body["mostRecentSuccess"], "acme's last success")

	// globex saw none of it, and has its own limit.
	g := ts.usage(keyGlobex)
	assert.EqualValues(t, 0, g["usedCredits"], "globex never sees acme's credits")
	assert.EqualValues(t, 2, g["planCredits"])
	assert.EqualValues(t, 2, g["remainingCredits"])
	gq := ts.do("GET", "/v2/team/queue-status", keyGlobex, nil)
	assert.Nil(t, gq.Body["mostRecentSuccess"], "globex never succeeded: %s", gq.Raw)
	gh := ts.do("GET", "/v2/team/credit-usage/historical", keyGlobex, nil)
	assert.Empty(t, gh.Body["periods"], "globex's history")

	for range 2 {
		r := ts.do("POST", "/v2/scrape", keyGlobex, map[string]any{"url": site.URL + "/docs/a"})
		require.Equal(t, 200, r.Status, "globex within its limit: %s", r.Raw)
	}
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/v2/scrape", map[string]any{"url": site.URL + "/docs/a"}},
		{"POST", "/v2/crawl", map[string]any{"url": site.URL + "/blog/"}},
		{"POST", "/v2/batch/scrape", map[string]any{"urls": []string{site.URL + "/docs/a"}}},
		{"POST", "/v2/search", map[string]any{"query": "server-rendered"}},
		{"POST", "/v2/extract", map[string]any{"urls": []string{site.URL + "/docs/a"}, "prompt": "x"}},
		{"POST", "/v2/browser", map[string]any{}},
	} {
		r := ts.do(c.method, c.path, keyGlobex, c.body)
		if r.Status != 402 || r.str("code") != "CREDITS_EXHAUSTED" {
			t.Errorf("%s %s over the limit: %d %s", c.method, c.path, r.Status, r.Raw)
		}
	}
	parsed := ts.parseFile(keyGlobex, upload{name: "file", filename: "note.html", data: []byte("<p>x</p>")})
	assert.Equal(t, 402, parsed.Status, "parse over the limit: %s", parsed.Raw)
	assert.Contains(t, parsed.str("error"), "its limit of 2", "the message names the limit")
	g = ts.usage(keyGlobex)
	assert.EqualValues(t, 2, g["usedCredits"])
	assert.EqualValues(t, 0, g["remainingCredits"])
	assert.Equal(t, 200, ts.do("POST", "/v2/map", keyGlobex, map[string]any{"url": site.URL + "/blog/"}).Status,
		"what costs nothing still answers")
	assert.EqualValues(t, want, ts.usage(keyAcme)["usedCredits"], "acme unchanged by globex")
}
