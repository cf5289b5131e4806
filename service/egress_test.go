package service_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/egress/egresstest"
	"github.com/trawler-dev/trawler/test/polltest"
)

// Scrapes leave through the upstream proxies of TRAWLER_PROXIES, by the
// tier and country they ask for, as the upstreams' own logs show; proxy
// auto retries a blocked page once on enhanced and bills it as such; and
// every byte is counted against the team and request it was for.
func TestScrapesLeaveThroughUpstreamProxies(t *testing.T) {
	basic := egresstest.StartTinyproxy(t, "")
	enhanced := egresstest.StartTinyproxy(t, "scraper:s3cret")
	// /guarded refuses the first two requests: Go's client and then the
	// browser, both on basic.
	var guarded atomic.Int32
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/guarded" && guarded.Add(1) <= 2 {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, "<title>Access denied</title><p>bots go away</p>")
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<title>%s</title><p>%s</p>", r.URL.Path, strings.Repeat("words of the page ", 200))
	}))
	t.Cleanup(site.Close)
	host := strings.TrimPrefix(site.URL, "http://")
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true",
		"TRAWLER_PROXIES": "basic=" + basic.URL("") + ",enhanced=" + enhanced.URL("scraper:s3cret")})
	connects := func(p *egresstest.Tinyproxy) int { return strings.Count(p.Log(), "CONNECT "+host) }

	scrape := func(key string, body map[string]any) map[string]any {
		t.Helper()
		body["formats"] = []string{"markdown"}
		r := ts.do("POST", "/v2/scrape", key, body)
		require.Equal(t, 200, r.Status, "%s", r.Raw)
		data, _ := r.Body["data"].(map[string]any)
		require.NotNil(t, data, "%s", r.Raw)
		return data
	}
	md := func(d map[string]any) map[string]any { m, _ := d["metadata"].(map[string]any); return m }

	d := scrape(keyAcme, map[string]any{"url": site.URL + "/basic"})
	assert.Equal(t, "basic", md(d)["proxyUsed"])
	assert.EqualValues(t, 1, md(d)["creditsUsed"])
	assert.Equal(t, 1, connects(basic), "the basic upstream's log:\n%s", basic.Log())
	assert.Zero(t, connects(enhanced))
	acmeScrape := md(d)["scrapeId"].(string)

	d = scrape(keyGlobex, map[string]any{"url": site.URL + "/enhanced", "proxy": "enhanced"})
	assert.Equal(t, "enhanced", md(d)["proxyUsed"])
	assert.EqualValues(t, 5, md(d)["creditsUsed"], "an enhanced scrape costs 5 credits")
	assert.Equal(t, 1, connects(enhanced), "the enhanced upstream's log:\n%s", enhanced.Log())

	// auto: blocked on basic (to Go's client, then to the browser), fetched
	// again on enhanced.
	d = scrape(keyAcme, map[string]any{"url": site.URL + "/guarded", "proxy": "auto"})
	assert.EqualValues(t, 200, md(d)["statusCode"])
	assert.Equal(t, "enhanced", md(d)["proxyUsed"])
	assert.EqualValues(t, 5, md(d)["creditsUsed"])
	assert.Contains(t, d["warning"], "fetched again through an enhanced upstream")
	assert.Equal(t, 3, connects(basic))
	assert.Equal(t, 2, connects(enhanced))

	// A country with no upstream goes direct, and says so.
	d = scrape(keyAcme, map[string]any{"url": site.URL + "/fr", "location": map[string]any{"country": "FR"}})
	assert.Equal(t, "basic", md(d)["proxyUsed"])
	assert.Contains(t, d["warning"], "no basic upstream proxy for country FR")
	assert.Equal(t, 3, connects(basic), "a request for FR went through the country-less basic upstream")

	// A batch's pages leave through its tier too, on the job's own tab.
	r := ts.do("POST", "/v2/batch/scrape", keyGlobex, map[string]any{"urls": []string{site.URL + "/b1", site.URL + "/b2"},
		"formats": []string{"markdown"}, "proxy": "enhanced"})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	batch := r.str("id")
	polltest.Until(t, 60*time.Second, "the batch to end", func() bool {
		return ts.do("GET", "/v2/batch/scrape/"+batch, keyGlobex, nil).str("status") == "completed"
	})
	docs := ts.documents("/v2/batch/scrape/"+batch, keyGlobex)
	require.Len(t, docs, 2)
	for _, d := range docs {
		assert.Equal(t, "enhanced", md(d)["proxyUsed"], "%v", md(d)["sourceURL"])
		assert.EqualValues(t, 5, md(d)["creditsUsed"])
	}
	assert.Greater(t, connects(enhanced), 2, "the batch's pages did not go through the enhanced upstream")

	// Bytes by team in the metrics, and by request in the activity log.
	resp, err := http.Get(ts.URL + "/metrics")
	require.NoError(t, err)
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, team := range []string{"acme", "globex"} {
		assert.Regexp(t, `trawler_egress_bytes\{direction="in",team="`+team+`"\} [1-9]`, string(metrics))
	}
	// A job's bytes are reported as each of its routes closes (one per
	// lane that took its pages): wait for at least least bytes in, and
	// some out.
	egressOf := func(key, id string, least float64) map[string]any {
		var egressed map[string]any
		polltest.UntilState(t, 30*time.Second, fmt.Sprintf("%s's activity entry to count %.0f bytes in", id, least), func() bool {
			r := ts.do("GET", "/v2/team/activity", key, nil)
			entries, _ := r.Body["data"].([]any)
			for _, e := range entries {
				if m, _ := e.(map[string]any); m["id"] == id {
					egressed, _ = m["egressBytes"].(map[string]any)
				}
			}
			in, _ := egressed["in"].(float64)
			out, _ := egressed["out"].(float64)
			return in >= least && out > 0
		}, func() string { return fmt.Sprintf("egressBytes %v", egressed) })
		return egressed
	}
	egressed := egressOf(keyAcme, acmeScrape, 3000)
	require.NotNil(t, egressed, "the scrape's activity entry has no egressBytes")
	assert.Greater(t, egressed["in"], float64(3000), "the page is over 3 kB")
	assert.Positive(t, egressed["out"])
	for _, e := range ts.do("GET", "/v2/team/activity", keyGlobex, nil).Body["data"].([]any) {
		assert.NotEqual(t, acmeScrape, e.(map[string]any)["id"], "another team sees the scrape")
	}
	egressed = egressOf(keyGlobex, batch, 6000)
	require.NotNil(t, egressed, "the batch's activity entry has no egressBytes")
	assert.Greater(t, egressed["in"], float64(6000), "two pages of over 3 kB")
}

// A scraped page's service worker and WebSocket go through the egress
// proxy like the page: toward Trawler's own address they are refused (as
// any blocked address is), while the same worker reaches a site the guard
// allows, which proves it ran.
func TestServiceWorkersAndWebSocketsAreGuarded(t *testing.T) {
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true"})
	control := newMarkerSite(t)
	marker := uuid.NewString()
	sw := fmt.Sprintf(`self.addEventListener('install', e => e.waitUntil((async () => {
  for (const u of [%q, %q]) { try { await fetch(u, {mode: 'no-cors'}); } catch (e) {} }
})()));`, ts.URL+"/healthz?sw="+marker, control.URL+"/from-worker?sw="+marker)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/sw.js" {
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, sw)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<title>worker</title><p>a page with a worker</p>")
	}))
	t.Cleanup(site.Close)
	script := fmt.Sprintf(`const out = [];
const reg = await navigator.serviceWorker.register('/sw.js');
await new Promise(done => {
  const w = reg.installing || reg.waiting || reg.active;
  if (!w || w.state !== 'installing') return done();
  w.addEventListener('statechange', () => { if (w.state !== 'installing') done(); });
  setTimeout(done, 8000);
});
out.push('worker ' + (reg.active || reg.waiting ? 'installed' : 'not installed'));
for (const u of [%q, %q]) {
  out.push(await new Promise(done => {
    const ws = new WebSocket(u);
    const t = setTimeout(() => { ws.close(); done(u + ' hung'); }, 5000);
    ws.onopen = () => { clearTimeout(t); ws.close(); done(u + ' OPEN'); };
    ws.onerror = () => { clearTimeout(t); done(u + ' failed'); };
  }));
}
return out;`, strings.Replace(ts.URL, "http", "ws", 1)+"/v2/browser?ws="+marker, strings.Replace(control.URL, "http", "ws", 1)+"/ws?ws="+marker)
	r := ts.do("POST", "/v2/scrape", keyAcme, map[string]any{"url": site.URL + "/", "formats": []string{"markdown"},
		"actions": []map[string]any{{"type": "executeJavascript", "script": script}}})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	t.Logf("page: %v", r.Body["data"].(map[string]any)["actions"])

	assert.Empty(t, ts.requests.containing(marker), "Trawler's own listener answered a service worker or a WebSocket")
	assert.NotEmpty(t, control.containing("/from-worker?sw="+marker), "the service worker never fetched the control site: did it run?")
	assert.NotEmpty(t, control.containing("/ws?ws="+marker), "the WebSocket to the control site never arrived: did the script run?")
}
