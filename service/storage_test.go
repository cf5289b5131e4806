package service_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/profiles/miniotest"
	"github.com/trawler-dev/trawler/test/disktest"
	"github.com/trawler-dev/trawler/test/pgdb"
	"github.com/trawler-dev/trawler/test/polltest"
	"github.com/trawler-dev/trawler/test/relay"
)

// A data directory on a small filesystem that fills, then is freed: no
// request is answered as stored that was not (507 STORAGE_FULL instead),
// every answered result is retrievable, every charge matches an answer,
// no browser is left leased, /healthz and /metrics say so, and a crawl
// running through it waits and completes with each page once.
func TestFullDiskLosesNothing(t *testing.T) {
	t.Parallel()
	dir := disktest.Small(t, 48<<20)
	site := newCrawlSite(t)
	ts := crawlService(t, map[string]string{"TRAWLER_DATA_DIR": dir, "TRAWLER_DATABASE_URL": "", "TRAWLER_WARM_BROWSERS": "1", "TRAWLER_POOL_SIZE": "3"})
	used := func() float64 {
		r := ts.do("GET", "/v2/team/credit-usage", keyAcme, nil)
		require.Equal(t, 200, r.Status, "credit usage: %s", r.Raw)
		return r.Body["data"].(map[string]any)["usedCredits"].(float64)
	}
	storeState := func() string {
		r := ts.do("GET", "/healthz", "", nil)
		require.Equal(t, 200, r.Status)
		return r.Body["store"].(map[string]any)["state"].(string)
	}
	require.Equal(t, "ok", storeState())

	// A crawl whose pages arrive slowly, running when the disk fills.
	crawl := ts.do("POST", "/v2/crawl", keyAcme, map[string]any{"url": site.URL + "/slow/0", "limit": 12, "sitemap": "skip", "crawlEntireDomain": true,
		"scrapeOptions": map[string]any{"formats": []string{"markdown"}}})
	require.Equal(t, 200, crawl.Status, "crawl: %s", crawl.Raw)
	crawlID := crawl.str("id")
	polltest.Until(t, time.Minute, "the crawl's first pages", func() bool {
		n := 0
		for _, p := range site.pages() {
			if strings.Contains(p, "/slow/") {
				n++
			}
		}
		return n >= 3
	})

	// A session that ends while the disk is full is billed once it has room.
	early := ts.create(keyAcme, nil).str("id")

	free := disktest.Fill(t, dir)
	ended := ts.do("DELETE", "/v2/browser/"+early, keyAcme, nil)
	require.Equal(t, 200, ended.Status, "ending a session on a full disk: %s", ended.Raw)
	sessionCredits := ended.Body["creditsBilled"].(float64)
	var answered []string // scrape ids answered 200 while the disk was full
	charged := 0.0
	refused := 0
	for i := 0; i < 20 && refused < 3; i++ {
		r := ts.scrape(map[string]any{"url": fmt.Sprintf("%s/docs/c%d", site.URL, 1+i%4), "formats": []string{"markdown"}, "maxAge": 0})
		switch r.Status {
		case 200:
			answered = append(answered, meta(r)["scrapeId"].(string))
			charged += meta(r)["creditsUsed"].(float64)
		case 507:
			require.Equal(t, "STORAGE_FULL", r.str("code"), "%s", r.Raw)
			require.NotEmpty(t, r.Header.Get("Retry-After"))
			refused++
		default:
			t.Fatalf("a scrape on a full disk: %d %s", r.Status, r.Raw)
		}
	}
	require.Equal(t, 3, refused, "no scrape was refused on a full disk")
	assert.Equal(t, "full", storeState(), "/healthz names the full store")
	session := ts.do("POST", "/v2/browser", keyAcme, map[string]any{"ttl": 60})
	if session.Status == 200 {
		ts.do("DELETE", "/v2/browser/"+session.str("id"), keyAcme, nil)
	} else {
		assert.Equal(t, 507, session.Status, "a session on a full disk: %s", session.Raw)
	}
	polltest.Until(t, 30*time.Second, "no browser leased but the crawl's", func() bool { return ts.Pool.Stats().Leased <= 1 })
	metrics := ts.do("GET", "/metrics", "", nil)
	assert.Regexp(t, `trawler_store_failures_total\{kind="full"\} [1-9]`, string(metrics.Raw))

	time.Sleep(2 * time.Second) // the crawl waits with the disk full
	free()
	polltest.Until(t, 20*time.Second, "the store to report room again", func() bool { return storeState() == "ok" })

	// Everything answered is there, and charged; nothing else is.
	for _, id := range answered {
		r := ts.do("GET", "/v2/scrape/"+id, keyAcme, nil)
		assert.Equal(t, 200, r.Status, "scrape %s answered while the disk was full: %s", id, r.Raw)
	}
	var st response
	polltest.Until(t, 2*time.Minute, "the crawl to end", func() bool {
		st = ts.do("GET", "/v2/crawl/"+crawlID, keyAcme, nil)
		return st.Status == 200 && st.str("status") != "scraping"
	})
	require.Equal(t, "completed", st.str("status"), "%s", st.Raw)
	docs := ts.documents("/v2/crawl/"+crawlID+"?limit=1000", keyAcme)
	got := docURLs(docs, site.URL)
	var want []string
	for i := range 12 {
		want = append(want, fmt.Sprintf("/slow/%d", i))
	}
	slices.Sort(want)
	assert.Equal(t, want, got, "the crawl's pages, each once")
	crawlCredits := st.Body["creditsUsed"].(float64)
	polltest.Until(t, 30*time.Second, "the ended session to be recorded", func() bool {
		return ts.do("GET", "/v2/browser/"+early, keyAcme, nil).str("status") == "destroyed"
	})
	assert.Equal(t, charged+crawlCredits+sessionCredits, used(), "the ledger holds exactly what was answered")

	r := ts.scrape(map[string]any{"url": site.URL + "/docs/c1", "formats": []string{"markdown"}, "maxAge": 0})
	require.Equal(t, 200, r.Status, "a scrape once there is room: %s", r.Raw)
}

// An object store that goes away mid-life: a session that names a profile
// is refused with 503 naming the profile store (not started without its
// state, not a 500), the profile endpoints say the same, and both work
// again once the store is back.
func TestProfileStoreDown(t *testing.T) {
	t.Parallel()
	m := miniotest.Start(t)
	r := relay.Start(t, m.Endpoint)
	env := m.Env("trawler-profiles")
	env["TRAWLER_S3_ENDPOINT"] = "http://" + r.Addr
	env["TRAWLER_WARM_BROWSERS"] = "0"
	ts := start(t, env)
	writer := map[string]any{"profile": map[string]any{"name": "shop", "saveChanges": true}}
	s := ts.create(keyAcme, writer)
	require.Equal(t, 200, ts.do("DELETE", "/v2/browser/"+s.str("id"), keyAcme, nil).Status)

	r.Cut()
	for _, req := range []struct{ method, path string }{{"POST", "/v2/browser"}, {"GET", "/v2/profiles"}} {
		var body any
		if req.method == "POST" {
			body = writer
		}
		got := ts.do(req.method, req.path, keyAcme, body)
		assert.Equal(t, 503, got.Status, "%s %s with the profile store down: %s", req.method, req.path, got.Raw)
		assert.Equal(t, "UNAVAILABLE", got.str("code"))
		assert.Contains(t, got.str("error"), "profile store")
	}
	polltest.Until(t, 30*time.Second, "no browser left leased", func() bool { return ts.Pool.Stats().Leased == 0 })

	r.Restore()
	polltest.Until(t, 30*time.Second, "the profile store to answer again", func() bool {
		return ts.do("GET", "/v2/profiles", keyAcme, nil).Status == 200
	})
	s = ts.create(keyAcme, writer)
	require.Equal(t, 200, ts.do("DELETE", "/v2/browser/"+s.str("id"), keyAcme, nil).Status)
}

// A PostgreSQL database that goes away mid-life (make test-postgres): a
// scrape is answered 503 naming the database rather than 200 with an id
// that finds nothing, /healthz says unavailable, and once the database is
// back the service works on without a restart.
func TestDatabaseDown(t *testing.T) {
	if !pgdb.Enabled() {
		t.Skip("needs PostgreSQL (" + pgdb.Env + ", see scripts/pgtest.sh)")
	}
	t.Parallel()
	dir := t.TempDir()
	u, err := url.Parse(pgdb.For(t, dir))
	require.NoError(t, err)
	r := relay.Start(t, u.Host)
	u.Host = r.Addr
	site := newCrawlSite(t)
	ts := crawlService(t, map[string]string{"TRAWLER_DATA_DIR": dir, "TRAWLER_DATABASE_URL": u.String(), "TRAWLER_WARM_BROWSERS": "1"})
	require.Equal(t, 200, ts.scrape(map[string]any{"url": site.URL + "/docs/c1", "formats": []string{"markdown"}}).Status)

	r.Cut()
	got := ts.scrape(map[string]any{"url": site.URL + "/docs/c2", "formats": []string{"markdown"}, "maxAge": 0})
	assert.Equal(t, 503, got.Status, "a scrape with the database down: %s", got.Raw)
	assert.Equal(t, "UNAVAILABLE", got.str("code"))
	assert.Contains(t, got.str("error"), "database is unavailable")
	health := ts.do("GET", "/healthz", "", nil)
	assert.Equal(t, "unavailable", health.Body["store"].(map[string]any)["state"], "%s", health.Raw)

	r.Restore()
	polltest.Until(t, 30*time.Second, "the service to reach its database again", func() bool {
		return ts.scrape(map[string]any{"url": site.URL + "/docs/c2", "formats": []string{"markdown"}, "maxAge": 0}).Status == 200
	})
	health = ts.do("GET", "/healthz", "", nil)
	assert.Equal(t, "ok", health.Body["store"].(map[string]any)["state"], "%s", health.Raw)
}
