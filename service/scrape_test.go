package service_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// site is a local test site that records every request it serves.
type site struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

func (s *site) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// hit records a request for path.
func (s *site) hit(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hits == nil {
		s.hits = map[string]int{}
	}
	s.hits[path]++
}

const articleHTML = `<!doctype html><html lang="en"><head><title>Trawling the Deep</title>
<meta name="description" content="How trawlers work">
<meta property="og:title" content="Trawling (OG)"><meta name="keywords" content="boats, nets">
</head><body>
<header class="site-header"><a href="/">Home</a> <nav><a href="/about">About us</a><a href="/contact">Contact</a></nav></header>
<div id="onetrust-banner-sdk" class="cookie-banner">We use cookies. <button>Accept all</button></div>
<main><article>
<h1>Trawling the Deep</h1>
<p>A <strong>trawler</strong> drags a net through the water. Read <a href="/guide#nets">the guide</a> or the <a href="https://example.org/history">history</a>.</p>
<h2>Kinds of nets</h2>
<ul><li>Bottom trawls<ul><li>Beam trawls</li></ul></li><li>Midwater trawls</li></ul>
<table><thead><tr><th>Net</th><th>Depth</th></tr></thead><tbody><tr><td>Beam</td><td>200 m</td></tr><tr><td>Otter</td><td>1000 m</td></tr></tbody></table>
<pre><code class="language-go">fmt.Println("haul")</code></pre>
<p><img src="/img/boat.png" alt="A boat"></p>
<p>` + "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. " + `</p>
</article></main>
<aside class="sidebar">Related: <a href="/other">Other stories</a></aside>
<footer class="site-footer">Copyright Trawler Inc. <a href="/privacy">Privacy</a></footer>
</body></html>`

func newSite(t *testing.T) *site {
	s := &site{hits: map[string]int{}}
	mux := http.NewServeMux()
	html := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, body)
		}
	}
	mux.HandleFunc("/article", html(articleHTML))
	mux.HandleFunc("/spa", html(`<!doctype html><html><head><title>App</title></head><body><div id="root"></div>
<script>setTimeout(() => { document.getElementById('root').innerHTML = '<h1>Rendered by script</h1><p>Only a browser sees this paragraph.</p>'; }, 300);</script></body></html>`))
	// /settle renders after a timer of 900 ms with nothing on the network
	// meanwhile (the network-idle rule alone would have stopped waiting
	// before it), and shows what the page sees of the settle probe and of
	// its images (refused: no output needs them).
	mux.HandleFunc("/settle", html(`<!doctype html><html><head><title>Settle</title></head><body><div id="root"></div><img id="boat" src="/img/boat.png" alt="a boat">
<script>window.addEventListener('load', () => setTimeout(() => {
  const img = document.getElementById('boat');
  const hidden = Object.keys(window).some(k => /^_[0-9a-f]{16}$/.test(k)) ? 'probe enumerable' : 'probe hidden';
  const native = /\[native code\]/.test(setTimeout.toString()) && /\[native code\]/.test(Function.prototype.toString.toString()) && setTimeout.name === 'setTimeout' ? 'timers native' : 'timers wrapped';
  document.getElementById('root').innerHTML = '<h1>Settled</h1><p>Written after 900 ms: ' + hidden + ', ' + native + ', image width ' + img.naturalWidth + '.</p>';
}, 900));</script></body></html>`))
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/article", http.StatusFound) })
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(404)
		fmt.Fprint(w, "<html><body><h1>Not here</h1><p>This page does not exist, sorry about that. "+strings.Repeat("More text. ", 30)+"</p></body></html>")
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(20 * time.Second):
		}
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><body><main><p id="ua">UA=%s</p><p id="al">AL=%s</p><p id="x">X=%s</p><p id="js"></p></main>
<script>document.getElementById('js').textContent = 'LANGS=' + navigator.languages.join('|') + ' TZ=' + Intl.DateTimeFormat().resolvedOptions().timeZone + ' W=' + screen.width;</script></body></html>`,
			r.UserAgent(), r.Header.Get("Accept-Language"), r.Header.Get("X-Custom"))
	})
	mux.HandleFunc("/form", html(`<!doctype html><html><body><main><h1>Form</h1>
<input id="q" autofocus><button id="go" onclick="document.getElementById('out').textContent = 'You searched for ' + document.getElementById('q').value">Go</button>
<div id="out"></div><div id="later"></div><div style="height:5000px"></div><p id="bottom">Bottom</p></main>
<script>document.getElementById('q').addEventListener('keydown', e => { if (e.key === 'Enter') document.getElementById('later').textContent = 'Enter pressed'; });
setTimeout(() => { const d = document.createElement('div'); d.id = 'late'; d.textContent = 'Late element'; document.querySelector('main').appendChild(d); }, 700);</script></body></html>`))
	mux.HandleFunc("/delayed", html(`<!doctype html><html><body><main><h1>Delayed</h1><p id="p">`+strings.Repeat("Words on the page. ", 20)+`</p></main>
<script>setTimeout(() => { document.getElementById('p').textContent += ' Arrived late.'; }, 1500);</script></body></html>`))
	mux.HandleFunc("/report.pdf", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, "../parse/testdata/report.pdf")
	})
	mux.HandleFunc("/tall", html(`<!doctype html><html><body style="margin:0"><div style="height:3000px;background:rgb(255,0,0)">tall</div></body></html>`))
	mux.HandleFunc("/img/boat.png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		png, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
		w.Write(png)
	})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hit(r.URL.Path)
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (ts *testService) scrape(body map[string]any) response {
	ts.t.Helper()
	return ts.do("POST", "/v2/scrape", keyAcme, body)
}

func data(r response) map[string]any {
	d, _ := r.Body["data"].(map[string]any)
	if d == nil {
		return map[string]any{}
	}
	return d
}

func meta(r response) map[string]any {
	m, _ := data(r)["metadata"].(map[string]any)
	if m == nil {
		return map[string]any{}
	}
	return m
}

func TestScrapeArticle(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true"})
	r := ts.scrape(map[string]any{"url": web.URL + "/redirect", "formats": []any{"markdown", "links", "images", "html", "rawHtml"}})
	require.Equal(t, 200, r.Status, "scrape: %s", r.Raw)
	md := data(r)["markdown"].(string)
	for _, want := range []string{"# Trawling the Deep", "**trawler**", "[the guide](" + web.URL + "/guide#nets)", "## Kinds of nets",
		"| Net | Depth |", "| Beam | 200 m |", "```go", `fmt.Println("haul")`, "![A boat](" + web.URL + "/img/boat.png)"} {
		assert.Contains(t, md, want, "markdown")
	}
	for _, unwanted := range []string{"About us", "We use cookies", "Copyright Trawler", "Other stories"} {
		assert.NotContains(t, md, unwanted, "markdown keeps the page chrome")
	}
	if t.Failed() {
		t.Logf("markdown:\n%s", md)
	}
	m := meta(r)
	if m["title"] != "Trawling the Deep" || m["description"] != "How trawlers work" || m["language"] != "en" ||
		m["ogTitle"] != "Trawling (OG)" || m["statusCode"] != float64(200) || m["sourceURL"] != web.URL+"/redirect" ||
		m["url"] != web.URL+"/article" || !strings.HasPrefix(m["contentType"].(string), "text/html") || m["scrapeId"] == nil {
		t.Fatalf("metadata: %v", m)
	}
	// Without rendering: with Go's client once the browsers' user agent is
	// known (from the start: TestFirstScrapeNeedsNoBrowser), else from the
	// browser's network stack.
	assert.Contains(t, []any{"fetch", "browser-fetch"}, m["engine"], "a server-rendered page was rendered")
	links := fmt.Sprint(data(r)["links"])
	if !strings.Contains(links, web.URL+"/guide") || strings.Contains(links, "#nets") || !strings.Contains(links, "https://example.org/history") {
		t.Errorf("links: %s", links)
	}
	assert.Contains(t, fmt.Sprint(data(r)["images"]), web.URL+"/img/boat.png", "images")
	assert.True(t, strings.Contains(data(r)["rawHtml"].(string), "site-footer"), "rawHtml lost the footer")
	if h := data(r)["html"].(string); strings.Contains(h, "site-footer") || !strings.Contains(h, "Kinds of nets") {
		t.Errorf("cleaned html: %.300s", h)
	}

	// The stored result is retrievable by id, by its team only.
	id := m["scrapeId"].(string)
	if g := ts.do("GET", "/v2/scrape/"+id, keyAcme, nil); g.Status != 200 || !strings.Contains(fmt.Sprint(g.Body["data"]), "Trawling the Deep") {
		t.Fatalf("GET /v2/scrape/{id}: %d %.200s", g.Status, g.Raw)
	}
	g := ts.do("GET", "/v2/scrape/"+id, keyGlobex, nil)
	require.Equal(t, 404, g.Status, "another team's scrape")
	act := ts.do("GET", "/v2/team/activity?endpoint=scrape", keyAcme, nil)
	require.Contains(t, string(act.Raw), id, "activity lacks the scrape")
}

// The first scrape after a start, with no browser started yet, takes a
// server-rendered page with Go's client all the same, as a browser: the
// User-Agent it sends is the one the browsers send when they render. A
// --user-agent among the Chromium flags is learnt from the first browser,
// which that scrape waits for, and sent from then on.
func TestFirstScrapeNeedsNoBrowser(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, flags, firstEngine string
	}{
		{"Chromium's own user agent", "", "fetch"},
		{"a user agent flag", "--user-agent=Trawler-Test/1.0", "browser-fetch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			agents := map[string]string{}
			web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				agents[r.URL.Path] = r.UserAgent()
				mu.Unlock()
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				switch r.URL.Path {
				case "/article", "/another":
					fmt.Fprint(w, "<!doctype html><html><body><main><h1>Nets</h1><p>"+strings.Repeat("A paragraph about nets. ", 30)+"</p></main></body></html>")
				case "/app":
					fmt.Fprint(w, `<!doctype html><html><body><div id="root"></div><script>document.getElementById("root").innerHTML = "<p>Written by the page's script.</p>";</script></body></html>`)
				}
			}))
			t.Cleanup(web.Close)
			ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true", "TRAWLER_WARM_BROWSERS": "0", "TRAWLER_CHROMIUM_FLAGS": tc.flags})
			scrape := func(path, engine string) {
				t.Helper()
				r := ts.scrape(map[string]any{"url": web.URL + path, "formats": []string{"markdown"}})
				require.Equal(t, 200, r.Status, "%s", r.Raw)
				assert.Equal(t, engine, meta(r)["engine"], "%s", path)
			}

			scrape("/article", tc.firstEngine)
			if tc.firstEngine == "fetch" {
				assert.Zero(t, ts.Pool.Stats().Total, "a browser started for a page Go's client took")
			}
			scrape("/app", "browser-render")
			scrape("/another", "fetch")
			mu.Lock()
			defer mu.Unlock()
			if tc.flags == "" {
				assert.Contains(t, agents["/app"], "Chrome/", "the browser's User-Agent")
			} else {
				assert.Equal(t, "Trawler-Test/1.0", agents["/app"], "the browser's User-Agent")
			}
			assert.Equal(t, agents["/app"], agents["/article"], "the first scrape's User-Agent")
			assert.Equal(t, agents["/app"], agents["/another"], "Go's client's User-Agent")
		})
	}
}

func TestScrapeRendersClientSideApps(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true"})
	r := ts.scrape(map[string]any{"url": web.URL + "/spa"})
	if r.Status != 200 || !strings.Contains(data(r)["markdown"].(string), "Only a browser sees this paragraph.") {
		t.Fatalf("client-rendered page: %d %s", r.Status, r.Raw)
	}
	require.Equal(t, "browser-render", meta(r)["engine"], "engine")
	// A page that answers 404 is a document with the status, and a warning.
	r = ts.scrape(map[string]any{"url": web.URL + "/missing", "maxAge": 0})
	if r.Status != 200 || meta(r)["statusCode"] != float64(404) || meta(r)["error"] == nil || data(r)["warning"] == nil {
		t.Fatalf("404 page: %d %s", r.Status, r.Raw)
	}
}

// A rendered page is taken once it is quiet: its short timers have fired
// (the probe that counts them is invisible to it), and no image was
// downloaded when no output shows images; with a screenshot, images load.
func TestRenderedPagesSettleOnTheirTimers(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true"})
	r := ts.scrape(map[string]any{"url": web.URL + "/settle", "formats": []string{"markdown"}})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	assert.Contains(t, data(r)["markdown"], "Written after 900 ms: probe hidden, timers native, image width 0.")
	assert.Equal(t, "browser-render", meta(r)["engine"])
	assert.Zero(t, web.count("/img/boat.png"), "the image was downloaded for a page whose outputs show no image")

	r = ts.scrape(map[string]any{"url": web.URL + "/settle", "formats": []string{"markdown", "screenshot"}, "maxAge": 0})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	assert.Contains(t, data(r)["markdown"], "image width 1.")
	assert.Equal(t, 1, web.count("/img/boat.png"), "times the image was downloaded for a screenshot")
	// Both renders were counted, with their wait for the 900 ms timer.
	n, total, settle := ts.Crawler.Scrape.Renders.Read()
	assert.EqualValues(t, 2, n, "renders counted")
	assert.Greater(t, settle, 1500*time.Millisecond, "two waits for a 900 ms timer")
	assert.Greater(t, total, settle)
}

func TestScrapeCache(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true"})
	u := web.URL + "/article"

	// Lockdown never contacts the target.
	r := ts.scrape(map[string]any{"url": u, "lockdown": true})
	if r.Status != 404 || r.str("code") != "SCRAPE_LOCKDOWN_CACHE_MISS" || web.count("/article") != 0 {
		t.Fatalf("lockdown miss: %d %s (target hit %d times)", r.Status, r.Raw, web.count("/article"))
	}
	r = ts.scrape(map[string]any{"url": u, "minAge": 1})
	if r.Status != 404 || r.str("code") != "SCRAPE_NO_CACHED_DATA" || web.count("/article") != 0 {
		t.Fatalf("minAge with nothing cached: %d %s", r.Status, r.Raw)
	}
	first := ts.scrape(map[string]any{"url": u})
	if first.Status != 200 || meta(first)["cacheState"] != "miss" || web.count("/article") != 1 {
		t.Fatalf("first scrape: %d %v, hits %d", first.Status, meta(first)["cacheState"], web.count("/article"))
	}
	second := ts.scrape(map[string]any{"url": u, "formats": []any{"links"}})
	if meta(second)["cacheState"] != "hit" || web.count("/article") != 1 || meta(second)["cachedAt"] == nil {
		t.Fatalf("second scrape should come from the cache: %v, hits %d", meta(second), web.count("/article"))
	}
	require.NotNil(t, data(second)["links"], "a cache hit must still give the requested formats")
	if r := ts.scrape(map[string]any{"url": u, "maxAge": 0}); meta(r)["cacheState"] != "miss" || web.count("/article") != 2 {
		t.Fatalf("maxAge 0 must scrape afresh: %v, hits %d", meta(r)["cacheState"], web.count("/article"))
	}
	if r := ts.scrape(map[string]any{"url": u, "minAge": 1}); meta(r)["cacheState"] != "hit" || web.count("/article") != 2 {
		t.Fatalf("minAge 1: %v", meta(r))
	}
	r = ts.scrape(map[string]any{"url": u, "minAge": 3600000})
	require.Equal(t, "SCRAPE_NO_CACHED_DATA", r.str("code"), "minAge of an hour on a fresh entry: %d %s", r.Status, r.Raw)
	r = ts.scrape(map[string]any{"url": u, "lockdown": true})
	if r.Status != 200 || meta(r)["cacheState"] != "hit" || meta(r)["creditsUsed"] != float64(5) || web.count("/article") != 2 {
		t.Fatalf("lockdown hit: %d %v", r.Status, meta(r))
	}
	// storeInCache false leaves nothing behind; headers force it.
	v := web.URL + "/echo"
	ts.scrape(map[string]any{"url": v, "storeInCache": false})
	ts.scrape(map[string]any{"url": v, "headers": map[string]string{"X-Custom": "1"}})
	r = ts.scrape(map[string]any{"url": v, "minAge": 1})
	require.Equal(t, "SCRAPE_NO_CACHED_DATA", r.str("code"), "storeInCache false / headers still cached the page: %d %s", r.Status, r.Raw)
}

func TestScrapeOptions(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true"})

	r := ts.scrape(map[string]any{"url": web.URL + "/echo", "headers": map[string]string{"X-Custom": "hello", "User-Agent": "TrawlerTest/1.0"},
		"location": map[string]any{"country": "DE"}, "onlyMainContent": false})
	md := data(r)["markdown"].(string)
	for _, want := range []string{"UA=TrawlerTest/1.0", "AL=de-DE", "X=hello", "LANGS=de-DE|de", "TZ=Europe/Berlin"} {
		assert.Contains(t, md, want, "headers/location: markdown")
	}
	r = ts.scrape(map[string]any{"url": web.URL + "/echo", "mobile": true, "maxAge": 0})
	md = data(r)["markdown"].(string)
	if !strings.Contains(md, "W=390") || !strings.Contains(md, "Mobile") {
		t.Errorf("mobile: %s", md)
	}
	assert.NotContains(t, md, "Headless", "the user agent gives the browser away")
	r = ts.scrape(map[string]any{"url": web.URL + "/article", "includeTags": []string{"table"}, "maxAge": 0})
	md = data(r)["markdown"].(string)
	if !strings.Contains(md, "| Beam |") || strings.Contains(md, "Kinds of nets") {
		t.Errorf("includeTags table: %s", md)
	}
	r = ts.scrape(map[string]any{"url": web.URL + "/article", "excludeTags": []string{"table", "pre"}, "maxAge": 0})
	md = data(r)["markdown"].(string)
	if strings.Contains(md, "| Beam |") || strings.Contains(md, "haul") || !strings.Contains(md, "Kinds of nets") {
		t.Errorf("excludeTags: %s", md)
	}
	r = ts.scrape(map[string]any{"url": web.URL + "/article", "onlyMainContent": false, "maxAge": 0})
	assert.Contains(t, data(r)["markdown"].(string), "Copyright Trawler", "onlyMainContent false dropped the footer")
	// A screenshot, full page: the PNG is as tall as the page.
	r = ts.scrape(map[string]any{"url": web.URL + "/tall", "formats": []any{map[string]any{"type": "screenshot", "fullPage": true}}})
	shot, _ := data(r)["screenshot"].(string)
	require.True(t, strings.HasPrefix(shot, "data:image/png;base64,"), "screenshot: %.200s", r.Raw)
	png, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(shot, "data:image/png;base64,"))
	if len(png) < 24 || be32(png[20:24]) != 3000 {
		t.Fatalf("full-page screenshot height %d, want 3000", be32(png[20:24]))
	}
	assert.Equal(t, "browser-render", meta(r)["engine"], "a screenshot needs rendering")
	// waitFor waits beyond the smart wait, which settles before 1.5 s.
	r = ts.scrape(map[string]any{"url": web.URL + "/delayed", "waitFor": 2500})
	assert.Contains(t, data(r)["markdown"].(string), "Arrived late.", "waitFor 2500")
	r = ts.scrape(map[string]any{"url": web.URL + "/delayed", "maxAge": 0})
	assert.NotContains(t, data(r)["markdown"].(string), "Arrived late.", "without waitFor the late text should not be there yet (the page is taken from the network)")
	// Firecrawl's Alexandria tools have no catalogue here: the warning says so.
	r = ts.scrape(map[string]any{"url": web.URL + "/article", "domainTools": true, "toolDetail": "compact"})
	require.Equal(t, 200, r.Status, "domainTools: %s", r.Raw)
	assert.Contains(t, data(r)["warning"], "domainTools", "domainTools: %.300s", r.Raw)
	// The deprecated query format: freeform asks a question.
	r = ts.scrape(map[string]any{"url": web.URL + "/article", "formats": []any{map[string]any{"type": "query", "prompt": "What does a trawler drag?"}}})
	require.Equal(t, 200, r.Status, "query format: %s", r.Raw)
	assert.Contains(t, data(r)["answer"], "drags a net", "query freeform: %.300s", r.Raw)
	// Timeouts: the page hangs, the scrape does not.
	began := time.Now()
	r = ts.scrape(map[string]any{"url": web.URL + "/hang", "timeout": 2000})
	if r.Status != 408 || r.str("code") != "SCRAPE_TIMEOUT" || time.Since(began) > 6*time.Second {
		t.Fatalf("hanging page: %d %s after %s", r.Status, r.Raw, time.Since(began))
	}
	// The pool is still healthy after the timeout.
	r = ts.scrape(map[string]any{"url": web.URL + "/article", "maxAge": 0})
	require.Equal(t, 200, r.Status, "scrape after a timeout: %s", r.Raw)
}

func be32(b []byte) int { return int(b[0])<<24 | int(b[1])<<16 | int(b[2])<<8 | int(b[3]) }

func TestScrapeActions(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true"})
	r := ts.scrape(map[string]any{"url": web.URL + "/form", "formats": []any{"markdown"}, "actions": []any{
		map[string]any{"type": "wait", "selector": "#late"},
		map[string]any{"type": "click", "selector": "#q"},
		map[string]any{"type": "write", "text": "nets ünd boats"},
		map[string]any{"type": "press", "key": "Enter"},
		map[string]any{"type": "click", "selector": "#go"},
		map[string]any{"type": "wait", "milliseconds": 100},
		map[string]any{"type": "scroll", "direction": "down"},
		map[string]any{"type": "executeJavascript", "script": "return window.scrollY > 0 ? document.getElementById('out').textContent : 'not scrolled'"},
		map[string]any{"type": "screenshot"},
		map[string]any{"type": "scrape"},
		map[string]any{"type": "pdf", "format": "A4"},
	}})
	require.Equal(t, 200, r.Status, "actions: %s", r.Raw)
	md := data(r)["markdown"].(string)
	for _, want := range []string{"You searched for nets ünd boats", "Enter pressed", "Late element"} {
		assert.Contains(t, md, want, "markdown")
	}
	acts := data(r)["actions"].(map[string]any)
	js := acts["javascriptReturns"].([]any)
	if len(js) != 1 || js[0].(map[string]any)["value"] != "You searched for nets ünd boats" || js[0].(map[string]any)["type"] != "string" {
		t.Errorf("javascriptReturns: %v", js)
	}
	if s := acts["screenshots"].([]any); len(s) != 1 || !strings.HasPrefix(s[0].(string), "data:image/png;base64,") {
		t.Errorf("screenshots: %.100v", s)
	}
	if s := acts["scrapes"].([]any); len(s) != 1 || !strings.Contains(s[0].(map[string]any)["html"].(string), "You searched for") {
		t.Errorf("scrapes: %.200v", s)
	}
	if p := acts["pdfs"].([]any); len(p) != 1 || !strings.HasPrefix(p[0].(string), "data:application/pdf;base64,JVBER") {
		t.Errorf("pdfs: %.100v", p)
	}
	// A failing action fails the scrape with a message naming it.
	began := time.Now()
	r = ts.scrape(map[string]any{"url": web.URL + "/form", "timeout": 5000, "actions": []any{map[string]any{"type": "click", "selector": "#nope"}}})
	t.Logf("failing action took %s", time.Since(began))
	if r.Status != 422 || r.str("code") != "SCRAPE_ACTION_ERROR" || !strings.Contains(r.str("error"), "action 0 (click)") {
		t.Fatalf("failing action: %d %s", r.Status, r.Raw)
	}
}

func TestScrapeRefusesPrivateTargets(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "false", "TRAWLER_WARM_BROWSERS": "0"})
	for _, u := range []string{web.URL + "/article", "http://localhost:1/", "http://[::1]/", "http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/"} {
		r := ts.scrape(map[string]any{"url": u})
		if r.Status != 403 || r.str("code") != "URL_BLOCKED" {
			t.Fatalf("%s: %d %s", u, r.Status, r.Raw)
		}
	}
	require.Zero(t, web.count("/article"), "times the blocked target was contacted")
}

func TestScrapeValidation(t *testing.T) {
	t.Parallel()
	ts := start(t, map[string]string{"TRAWLER_WARM_BROWSERS": "0"})
	for _, tc := range []struct {
		name string
		body map[string]any
		code string
		want string
	}{
		{"no url", map[string]any{}, "BAD_REQUEST", "url is required"},
		{"bad url", map[string]any{"url": "ftp://x/y"}, "BAD_REQUEST", "url must be an absolute http or https URL"},
		{"timeout low", map[string]any{"url": "http://a.example", "timeout": 999}, "BAD_REQUEST", "timeout must be between 1000 and 300000"},
		{"waitFor half", map[string]any{"url": "http://a.example", "timeout": 10000, "waitFor": 6000}, "BAD_REQUEST", "waitFor must not exceed half of timeout"},
		{"model format", map[string]any{"url": "http://a.example", "formats": []any{"markdown", "summary"}}, "MODEL_NOT_CONFIGURED", `formats[1] (summary) needs a language model`},
		{"json format", map[string]any{"url": "http://a.example", "formats": []any{map[string]any{"type": "json", "schema": map[string]any{}}}}, "MODEL_NOT_CONFIGURED", `formats[0] (json) needs a language model`},
		{"unsupported format", map[string]any{"url": "http://a.example", "formats": []any{"product"}}, "BAD_REQUEST", `formats[0] "product" is not supported yet`},
		{"unknown format", map[string]any{"url": "http://a.example", "formats": []any{"pdf"}}, "BAD_REQUEST", "formats[0] must be one of"},
		{"screenshot quality", map[string]any{"url": "http://a.example", "formats": []any{map[string]any{"type": "screenshot", "quality": 101}}}, "BAD_REQUEST", "quality must be between 1 and 100"},
		{"selector", map[string]any{"url": "http://a.example", "includeTags": []string{"div[["}}, "BAD_REQUEST", "includeTags[0] must be a CSS selector"},
		{"country", map[string]any{"url": "http://a.example", "location": map[string]any{"country": "Germany"}}, "BAD_REQUEST", "location.country must be a two-letter"},
		{"proxy", map[string]any{"url": "http://a.example", "proxy": "tor"}, "BAD_REQUEST", "proxy must be basic, enhanced or auto"},
		{"action type", map[string]any{"url": "http://a.example", "actions": []any{map[string]any{"type": "hover"}}}, "BAD_REQUEST", "actions[0] type must be one of"},
		{"action member", map[string]any{"url": "http://a.example", "actions": []any{map[string]any{"type": "press", "key": "a", "selector": "#x"}}}, "BAD_REQUEST", `actions[0] of type press does not take "selector"`},
		{"wait both", map[string]any{"url": "http://a.example", "actions": []any{map[string]any{"type": "wait", "milliseconds": 5, "selector": "#x"}}}, "BAD_REQUEST", "exactly one of milliseconds or selector"},
		{"click no selector", map[string]any{"url": "http://a.example", "actions": []any{map[string]any{"type": "click"}}}, "BAD_REQUEST", "of type click needs a selector"},
		{"profile", map[string]any{"url": "http://a.example", "profile": map[string]any{"saveChanges": false}}, "BAD_REQUEST", "profile.name is required"},
		{"parsers", map[string]any{"url": "http://a.example", "parsers": []any{"docx"}}, "BAD_REQUEST", `parsers[0] must be "pdf"`},
		{"clean content", map[string]any{"url": "http://a.example", "onlyCleanContent": true}, "MODEL_NOT_CONFIGURED", "onlyCleanContent needs a language model"},
		{"unknown key", map[string]any{"url": "http://a.example", "render": true}, "BAD_REQUEST", `unknown key "render"`},
		{"toolDetail", map[string]any{"url": "http://a.example", "toolDetail": "all"}, "BAD_REQUEST", "toolDetail must be compact, summary or full"},
		{"threatProtection", map[string]any{"url": "http://a.example", "threatProtection": map[string]any{"mode": "normal"}}, "BAD_REQUEST", "threatProtection is not available"},
		{"query mode", map[string]any{"url": "http://a.example", "formats": []any{map[string]any{"type": "query", "prompt": "p", "mode": "quote"}}}, "BAD_REQUEST", `formats[0].mode must be "freeform" or "directQuote"`},
		{"zdr", map[string]any{"url": "http://a.example", "zeroDataRetention": true}, "FEATURE_NOT_ENABLED", "zeroDataRetention is not enabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.scrape(tc.body)
			if r.str("code") != tc.code || !strings.Contains(r.str("error"), tc.want) {
				t.Fatalf("got %d %s, want %s with %q", r.Status, r.Raw, tc.code, tc.want)
			}
		})
	}
}

func TestScrapeTLSAndZeroDataRetention(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	secure := httptest.NewTLSServer(web.Config.Handler)
	t.Cleanup(secure.Close)
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true", "TRAWLER_TEAM_FEATURES": "acme:zeroDataRetention"})

	// A self-signed certificate: skipped by default, refused on request.
	if r := ts.scrape(map[string]any{"url": secure.URL + "/article"}); r.Status != 200 || !strings.Contains(data(r)["markdown"].(string), "Trawling the Deep") {
		t.Fatalf("self-signed site with skipTlsVerification by default: %d %.300s", r.Status, r.Raw)
	}
	// The cached copy was taken without the check: it must not answer.
	if r := ts.scrape(map[string]any{"url": secure.URL + "/article", "skipTlsVerification": false}); r.Status != 502 || !strings.Contains(r.str("error"), "CERT") {
		t.Fatalf("self-signed site with skipTlsVerification false, after a scrape that skipped it: %d %s", r.Status, r.Raw)
	}
	// Nor one fetched through another proxy tier than the one asked for.
	if r := ts.scrape(map[string]any{"url": secure.URL + "/article", "proxy": "enhanced"}); r.Status != 200 || meta(r)["cacheState"] != "miss" {
		t.Fatalf("proxy enhanced after a scrape on auto: %d %.300s", r.Status, r.Raw)
	}
	if r := ts.scrape(map[string]any{"url": secure.URL + "/article"}); r.Status != 200 || meta(r)["cacheState"] != "hit" {
		t.Fatalf("the same scrape again: %d %.300s", r.Status, r.Raw)
	}
	// The same through the browser: a tab that took the page without
	// checking its certificate (and so holds a connection to the site) is
	// never reused for a scrape that asks for the check.
	for _, skip := range []bool{true, false} {
		r := ts.scrape(map[string]any{"url": secure.URL + "/article", "skipTlsVerification": skip, "maxAge": 0, "waitFor": 50})
		if skip && r.Status != 200 || !skip && (r.Status != 502 || !strings.Contains(r.str("error"), "CERT")) {
			t.Fatalf("rendered self-signed site with skipTlsVerification %v: %d %.300s", skip, r.Status, r.Raw)
		}
	}

	// Zero data retention: the result is returned and nothing is kept.
	r := ts.scrape(map[string]any{"url": web.URL + "/form", "zeroDataRetention": true})
	if r.Status != 200 || !strings.Contains(data(r)["markdown"].(string), "Form") {
		t.Fatalf("zdr scrape: %d %s", r.Status, r.Raw)
	}
	id, _ := meta(r)["scrapeId"].(string)
	g := ts.do("GET", "/v2/scrape/"+id, keyAcme, nil)
	require.Equal(t, 404, g.Status, "a zero-data-retention scrape was stored")
	act := ts.do("GET", "/v2/team/activity", keyAcme, nil)
	require.NotContains(t, string(act.Raw), web.URL+"/form", "a zero-data-retention scrape was logged")
	c := ts.scrape(map[string]any{"url": web.URL + "/form", "minAge": 1})
	require.Equal(t, "SCRAPE_NO_CACHED_DATA", c.str("code"), "a zero-data-retention scrape was cached: %d %s", c.Status, c.Raw)
	// globex has no such feature.
	if g := ts.do("POST", "/v2/scrape", keyGlobex, map[string]any{"url": web.URL + "/form", "zeroDataRetention": true}); g.Status != 403 || g.str("code") != "FEATURE_NOT_ENABLED" {
		t.Fatalf("zdr for a team without it: %d %s", g.Status, g.Raw)
	}
}

func TestScrapeBlockAdsHidesConsentBanners(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true"})
	check := []any{map[string]any{"type": "executeJavascript", "script": "return getComputedStyle(document.getElementById('onetrust-banner-sdk')).display"}}
	r := ts.scrape(map[string]any{"url": web.URL + "/article", "actions": check})
	js := data(r)["actions"].(map[string]any)["javascriptReturns"].([]any)
	require.Equal(t, "none", js[0].(map[string]any)["value"], "blockAds left the cookie banner visible: %v", js)
	r = ts.scrape(map[string]any{"url": web.URL + "/article", "actions": check, "blockAds": false})
	js = data(r)["actions"].(map[string]any)["javascriptReturns"].([]any)
	require.NotEqual(t, "none", js[0].(map[string]any)["value"], "blockAds false still hid the banner: %v", js)
}

func TestScrapePDF(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true"})
	r := ts.scrape(map[string]any{"url": web.URL + "/report.pdf", "formats": []any{"markdown", "html"}})
	require.Equal(t, 200, r.Status, "PDF scrape: %s", r.Raw)
	md := data(r)["markdown"].(string)
	for _, want := range []string{"# Harbour Water Quality Report", "## Key findings", "- Dissolved oxygen stayed above the legal minimum at every station.", "1. Add two stations in the southern basin."} {
		assert.Contains(t, md, want, "PDF markdown")
	}
	m := meta(r)
	if m["contentType"] != "application/pdf" || m["numPages"] != float64(1) || m["creditsUsed"] != float64(1) || m["statusCode"] != float64(200) {
		t.Errorf("PDF metadata: %v", m)
	}
	assert.Contains(t, data(r)["html"].(string), "<h1>Harbour Water Quality Report</h1>", "PDF html")
	// parsers: [] returns the PDF itself, base64.
	r = ts.scrape(map[string]any{"url": web.URL + "/report.pdf", "parsers": []any{}, "maxAge": 0})
	raw, err := base64.StdEncoding.DecodeString(data(r)["markdown"].(string))
	if err != nil || !strings.HasPrefix(string(raw), "%PDF-") {
		t.Fatalf("parsers [] should return the PDF base64: %.200s", r.Raw)
	}
}
