package service_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/trawler-dev/trawler/test/polltest"
)

// stateSite serves pages that set state and report the state they found:
// /static/N sets a cookie through Set-Cookie and shows the cookies its
// request carried; /app/N is a client-rendered page whose script reads
// the cookies, localStorage, Cache Storage and service workers it finds,
// then leaves its own in each. Each request is counted by path.
func stateSite(t *testing.T) (*httptest.Server, func(string) int) {
	var mu sync.Mutex
	hits := map[string]int{}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		switch {
		case r.URL.Path == "/app/sw.js":
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, "self.addEventListener('fetch', () => {});")
		case strings.HasPrefix(r.URL.Path, "/static/"):
			n := strings.TrimPrefix(r.URL.Path, "/static/")
			http.SetCookie(w, &http.Cookie{Name: "visitor" + n, Value: n, Path: "/"})
			got := r.Header.Get("Cookie")
			if got == "" {
				got = "none"
			}
			fmt.Fprintf(w, "<title>static %s</title><main><h1>Page %s</h1><p>Cookies sent: %s.</p><p>%s</p></main>", n, n, got,
				strings.Repeat("A paragraph of server-rendered text, long enough to be taken as it is. ", 6))
		case strings.HasPrefix(r.URL.Path, "/app/"):
			n := strings.TrimPrefix(r.URL.Path, "/app/")
			fmt.Fprintf(w, `<title>app %s</title><div id="root"></div><script>
(async () => {
  const workers = (await navigator.serviceWorker.getRegistrations()).map((r) => r.scope);
  const found = ['cookies ' + (document.cookie || 'none'), 'storage ' + (Object.keys(localStorage).join(' ') || 'none'), 'caches ' + ((await caches.keys()).join(' ') || 'none'), 'workers ' + (workers.join(' ') || 'none')];
  document.cookie = 'app%s=%s; path=/';
  localStorage.setItem('app%s', '%s');
  await caches.open('app%s');
  await navigator.serviceWorker.register('/app/sw.js', {scope: '/app/'});
  document.getElementById('root').innerHTML = '<h1>App %s</h1><p>Found: ' + found.join(' | ') + '</p>';
})();
</script>`, n, n, n, n, n, n, n)
		}
	}))
	t.Cleanup(s.Close)
	return s, func(p string) int {
		mu.Lock()
		defer mu.Unlock()
		return hits[p]
	}
}

// Fifty scrapes at once, forty of server-rendered pages and ten of a
// client-rendered app, each setting cookies (and the app's localStorage and
// Cache Storage): no scrape sees another's state. The server-rendered pages
// are taken without a browser context (engine fetch); the app is rendered,
// from the response already fetched (the site sees each page once).
func TestConcurrentScrapesShareNoState(t *testing.T) {
	site, hits := stateSite(t)
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true", "TRAWLER_POOL_SIZE": "4", "TRAWLER_TEAM_CONCURRENCY": "50", "TRAWLER_QUEUE_WAIT": "60s"})
	// A first scrape, as before any burst (it learns the browsers' user
	// agent where their Chromium's version did not give it).
	r := ts.do("POST", "/v2/scrape", keyAcme, map[string]any{"url": site.URL + "/static/warm", "formats": []string{"markdown"}})
	require.Equal(t, 200, r.Status, "%s", r.Raw)

	var wg sync.WaitGroup
	var failed atomic.Int32
	docs := make([]map[string]any, 50)
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := fmt.Sprintf("/static/%d", i)
			if i%5 == 4 {
				path = fmt.Sprintf("/app/%d", i)
			}
			key := keyAcme
			if i%2 == 1 {
				key = keyGlobex
			}
			r := ts.do("POST", "/v2/scrape", key, map[string]any{"url": site.URL + path, "formats": []string{"markdown"}})
			if r.Status != 200 {
				failed.Add(1)
				t.Errorf("%s: %d %s", path, r.Status, r.Raw)
				return
			}
			docs[i], _ = r.Body["data"].(map[string]any)
		}()
	}
	wg.Wait()
	require.Zero(t, failed.Load())
	// The apps rendered in shared browsers, a context each, and still saw
	// none of each other's state.
	require.Positive(t, ts.Pool.Stats().Joined, "no scrape joined a browser another was rendering in")
	for i, d := range docs {
		md, _ := d["metadata"].(map[string]any)
		markdown, _ := d["markdown"].(string)
		if i%5 == 4 {
			assert.Contains(t, markdown, fmt.Sprintf("App %d", i), "the app was not rendered")
			assert.Contains(t, markdown, "Found: cookies none | storage none | caches none | workers none", "app %d found another scrape's state", i)
			assert.Equal(t, "browser-render", md["engine"], "app %d", i)
			assert.Equal(t, 1, hits(fmt.Sprintf("/app/%d", i)), "app %d was asked for more than once", i)
			continue
		}
		assert.Contains(t, markdown, "Cookies sent: none.", "page %d was sent another scrape's cookie", i)
		assert.Equal(t, "fetch", md["engine"], "page %d", i)
	}
}

// A job's pages are taken with Go's client while they need no browser; its
// cookies go with it when a page needs the job's browser context, and the
// context takes the job's later pages. With one lane the pages come in
// order: /static/1 and /static/2 directly (the second sends the first's
// cookie), the app rendered in a context that holds both cookies, then
// /static/4 from that context, sending all three. The next job starts
// with none of them.
func TestJobCookiesFollowItsPagesIntoTheBrowser(t *testing.T) {
	site, hits := stateSite(t)
	ts := crawlService(t, map[string]string{"TRAWLER_JOB_WORKERS": "1"})
	r := ts.do("POST", "/v2/scrape", keyAcme, map[string]any{"url": site.URL + "/static/warm", "formats": []string{"markdown"}})
	require.Equal(t, 200, r.Status, "%s", r.Raw)

	urls := []string{site.URL + "/static/1", site.URL + "/static/2", site.URL + "/app/3", site.URL + "/static/4"}
	_, st, docs := ts.runJob("/v2/batch/scrape", keyAcme, map[string]any{"urls": urls, "formats": []string{"markdown"}})
	require.Equal(t, "completed", st["status"], "%v", st)
	require.Len(t, docs, 4)
	byURL := map[string]map[string]any{}
	for _, d := range docs {
		byURL[d["metadata"].(map[string]any)["sourceURL"].(string)] = d
	}
	check := func(u, engine string, contains ...string) {
		t.Helper()
		d := byURL[u]
		require.NotNil(t, d, "%s: no document", u)
		assert.Equal(t, engine, d["metadata"].(map[string]any)["engine"], "%s", u)
		for _, c := range contains {
			assert.Contains(t, d["markdown"], c, "%s", u)
		}
	}
	check(urls[0], "fetch", "Cookies sent: none.")
	check(urls[1], "fetch", "visitor1=1")
	check(urls[2], "browser-render", "App 3", "visitor1=1", "visitor2=2")
	check(urls[3], "browser-fetch", "visitor1=1", "visitor2=2", "app3=3")
	for _, p := range []string{"/static/1", "/static/2", "/app/3", "/static/4"} {
		assert.Equal(t, 1, hits(p), "times %s was asked for", p)
	}

	_, st, docs = ts.runJob("/v2/batch/scrape", keyAcme, map[string]any{"urls": []string{site.URL + "/static/5"}, "formats": []string{"markdown"}})
	require.Equal(t, "completed", st["status"], "%v", st)
	require.Len(t, docs, 1)
	assert.Contains(t, docs[0]["markdown"], "Cookies sent: none.", "a job found the last job's cookies")
}

// trapSite serves /trap/N, a client-rendered page that reports every kind
// of state a scrape could leave in a tab or its browser context, then
// leaves each: cookies, localStorage, sessionStorage, IndexedDB, Cache
// Storage, a service worker, window.name, a history entry, a beacon on
// unload whose answer (a little late) sets a cookie, and, in a frame
// of another site (localhost), that site's partitioned localStorage and
// IndexedDB; and the device it is shown on (user agent, width, touch).
func trapSite(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var s *httptest.Server
	beacons := new(atomic.Int32)
	s = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
		switch {
		case r.URL.Path == "/trap/sw.js":
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, "self.addEventListener('fetch', () => {});")
		case strings.HasPrefix(r.URL.Path, "/beacon/"):
			beacons.Add(1)
			time.Sleep(200 * time.Millisecond) // a little late, past the cookies' clearing
			http.SetCookie(w, &http.Cookie{Name: "beacon" + n, Value: n, Path: "/"})
		case strings.HasPrefix(r.URL.Path, "/frame/"):
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<script>(async () => {
  const found = 'local ' + (Object.keys(localStorage).join(' ') || 'none') + ' idb ' + ((await indexedDB.databases()).map((d) => d.name).join(' ') || 'none');
  localStorage.setItem('frame%s', '%s');
  await new Promise((res) => { indexedDB.open('frame%s').onsuccess = res; });
  parent.postMessage(found, '*');
})();</script>`, n, n, n)
		case strings.HasPrefix(r.URL.Path, "/popup/"):
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<title>popup %[1]s</title><div id="root"></div><script>
window.open('/trap/opened');
document.getElementById('root').innerHTML = '<h1>Popup %[1]s</h1><p>This page opened a window.</p>';
</script>`, n)
		case strings.HasPrefix(r.URL.Path, "/trap/"):
			w.Header().Set("Content-Type", "text/html")
			frame := strings.Replace(s.URL, "127.0.0.1", "localhost", 1) + "/frame/" + n
			fmt.Fprintf(w, `<title>trap %[1]s</title><div id="root"></div><script>
(async () => {
  const framed = new Promise((res) => addEventListener('message', (e) => res(e.data)));
  const found = ['cookies ' + (document.cookie || 'none'),
    'local ' + (Object.keys(localStorage).join(' ') || 'none'),
    'session ' + (Object.keys(sessionStorage).join(' ') || 'none'),
    'idb ' + ((await indexedDB.databases()).map((d) => d.name).join(' ') || 'none'),
    'caches ' + ((await caches.keys()).join(' ') || 'none'),
    'workers ' + ((await navigator.serviceWorker.getRegistrations()).map((r) => r.scope).join(' ') || 'none'),
    'name ' + (window.name || 'none'), 'history ' + history.length];
  const f = document.createElement('iframe');
  f.src = '%[2]s';
  document.body.appendChild(f);
  found.push('frame ' + await framed);
  found.push('device ' + (/Mobile/.test(navigator.userAgent) ? 'mobile' : 'desktop') + ' ' + innerWidth + ' touch ' + navigator.maxTouchPoints);
  document.cookie = 'trap%[1]s=%[1]s; path=/';
  localStorage.setItem('trap%[1]s', '%[1]s');
  sessionStorage.setItem('trap%[1]s', '%[1]s');
  await new Promise((res) => { indexedDB.open('trap%[1]s').onsuccess = res; });
  await caches.open('trap%[1]s');
  await navigator.serviceWorker.register('/trap/sw.js', {scope: '/trap/'});
  window.name = 'trap%[1]s';
  history.pushState({}, '', '#left');
  addEventListener('pagehide', () => fetch('/beacon/%[1]s', {keepalive: true}));
  document.getElementById('root').innerHTML = '<h1>Trap %[1]s</h1><p>Found: ' + found.join(' | ') + '</p>';
})();
</script>`, n, frame)
		}
	}))
	t.Cleanup(s.Close)
	return s, beacons
}

// What the trap page finds where no page left state (then its history
// length), and what its frame finds.
const (
	clean = "Found: cookies none | local none | session none | idb none | caches none | workers none | name none | history "
	frame = " | frame local none idb none"
)

// One-off scrapes of a team reuse a cleared tab (scrape/recycle.go): each
// scrape of the trap page, one after another on one browser, finds none
// of the state the ones before it left, and most of them ran in a tab an
// earlier scrape used; no page's beacon on unload gets out while its tab
// is cleared, and a phone's emulation goes with its scrape. Another
// team's scrape never gets that tab.
func TestRecycledTabsKeepNoState(t *testing.T) {
	site, beacons := trapSite(t)
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true", "TRAWLER_POOL_SIZE": "1"})
	var ids []string // each scrape's id
	scrape := func(key string, n int) string {
		t.Helper()
		t0 := time.Now()
		// The third asks for a phone: the next ones must not be given its
		// emulation with its tab.
		r := ts.do("POST", "/v2/scrape", key, map[string]any{"url": fmt.Sprintf("%s/trap/%d", site.URL, n), "formats": []string{"markdown"}, "mobile": n == 3})
		require.Equal(t, 200, r.Status, "%s", r.Raw)
		t.Logf("trap %d in %s", n, time.Since(t0).Round(time.Millisecond))
		d, _ := r.Body["data"].(map[string]any)
		md, _ := d["markdown"].(string)
		meta, _ := d["metadata"].(map[string]any)
		id, _ := meta["scrapeId"].(string)
		ids = append(ids, id)
		require.Contains(t, md, fmt.Sprintf("Trap %d", n), "the trap page was not rendered")
		i := strings.Index(md, "Found: ")
		require.GreaterOrEqual(t, i, 0, "%s", md)
		return strings.TrimSpace(md[i:])
	}
	var history string
	for n := 1; n <= 6; n++ {
		found := scrape(keyAcme, n)
		require.True(t, strings.HasPrefix(found, clean), "scrape %d found another scrape's state: %s", n, found)
		h, _, _ := strings.Cut(strings.TrimPrefix(found, clean), " ")
		if history == "" {
			history = h
		}
		assert.Equal(t, history, h, "scrape %d's history length differs from the first's: %s", n, found)
		assert.Contains(t, found, frame, "scrape %d's frame found another scrape's state", n)
		device := "device desktop 1920 touch 0"
		if n == 3 {
			device = "device mobile 980 touch 5" // no viewport tag: a phone's 980-pixel layout
		}
		assert.Contains(t, found, device, "scrape %d", n)
		// The tab is cleared after the answer, and no count outside scrape
		// says when; a beacon would arrive in this window too.
		time.Sleep(400 * time.Millisecond)
	}
	// A frame of another site loads in a process of its own, whose end of
	// its document request the page's session never hears: the settle
	// wait must not count it in flight, or every scrape waits the 10 s cap.
	renders, _, settle := ts.Crawler.Scrape.Renders.Read()
	require.Positive(t, renders)
	assert.Less(t, settle/time.Duration(renders), 5*time.Second, "the pages waited for their cross-site frame's document")
	served := ts.Crawler.Scrape.Recycled()
	assert.GreaterOrEqual(t, served, int64(4), "few scrapes ran in a recycled tab")
	t.Logf("%d of 6 scrapes ran in a recycled tab; history length %s", served, history)
	assert.Zero(t, beacons.Load(), "a page's beacon on unload reached the site while its tab was cleared")
	// The last scrape's tab is kept, its route too: all its bytes are in
	// its activity entry all the same, with no later scrape of the team's,
	// as many as the scrape before it (the same page, but for its number),
	// whose tab the last one took.
	egressIn := func(id string) float64 {
		for _, e := range ts.do("GET", "/v2/team/activity", keyAcme, nil).Body["data"].([]any) {
			if m, _ := e.(map[string]any); m["id"] == id {
				if b, ok := m["egressBytes"].(map[string]any); ok {
					return b["in"].(float64)
				}
			}
		}
		return 0
	}
	var in5, in6 float64
	polltest.Until(t, 5*time.Second, "the last two scrapes' egressBytes", func() bool {
		in5, in6 = egressIn(ids[4]), egressIn(ids[5])
		return in5 > 0 && in5-in6 < 100
	})
	assert.InDelta(t, in5, in6, 100, "the kept tab's scrape's bytes in")
	found := scrape(keyGlobex, 7)
	assert.True(t, strings.HasPrefix(found, clean), "globex found state: %s", found)
	assert.Equal(t, served, ts.Crawler.Scrape.Recycled(), "globex's scrape was given acme's tab")

	// A page that opens a window leaves it in its context: that tab is
	// closed, not kept, and acme's next scrape gets a fresh one.
	r := ts.do("POST", "/v2/scrape", keyAcme, map[string]any{"url": site.URL + "/popup/8", "formats": []string{"markdown"}})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	assert.Equal(t, served+1, ts.Crawler.Scrape.Recycled(), "the popup page did not run in acme's kept tab")
	time.Sleep(400 * time.Millisecond) // time to clear the tab, were it kept
	found = scrape(keyAcme, 9)
	assert.True(t, strings.HasPrefix(found, clean), "scrape 9 found state: %s", found)
	assert.Equal(t, served+1, ts.Crawler.Scrape.Recycled(), "the tab that opened a window was kept")
}

// With spare tabs (TRAWLER_SPARE_TABS) the service prepares a browser for
// single scrapes at start, with blank tabs in fresh contexts ready on it.
// A session never gets that browser; scrapes of either team take the tabs
// and find no state in them; they are made again once the browser is
// quiet.
func TestSpareTabs(t *testing.T) {
	site, _ := trapSite(t)
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true", "TRAWLER_SPARE_TABS": "2",
		"TRAWLER_REUSE_TABS": "false"})
	spares := func() (int, []string, int64) { return ts.Crawler.Scrape.SpareTabsReady() }
	polltest.Until(t, 30*time.Second, "2 spare tabs", func() bool { n, _, _ := spares(); return n == 2 })
	_, on, _ := spares()
	require.Len(t, on, 1, "the spare tabs are on more than one browser")
	polltest.Until(t, 30*time.Second, "the warm browser beside the prepared one", func() bool {
		st := ts.Pool.Stats()
		return st.Idle == 2 && st.Total == 2 && st.Starting == 0
	})

	// A session gets the warm browser: its client sees its own tab only.
	r := ts.create(keyAcme, nil)
	sess, err := ts.Sessions.Lookup(t.Context(), r.str("id"))
	require.NoError(t, err)
	assert.NotEqual(t, on[0], sess.BrowserID(), "a session got the browser holding the spare tabs")
	pages := 0
	for _, tg := range sess.CDP().Targets(t.Context()) {
		if tg.Type == "page" {
			pages++
		}
		// Chromium's WebUI omnibox popup is off: it cost every window (so
		// every browser context) a renderer.
		assert.NotContains(t, tg.URL, "top-chrome", "a browser UI target")
	}
	assert.Equal(t, 1, pages, "the session's browser holds pages it did not open")

	for i, key := range []string{keyAcme, keyGlobex, keyAcme} {
		r := ts.do("POST", "/v2/scrape", key, map[string]any{"url": fmt.Sprintf("%s/trap/%d", site.URL, i+1), "formats": []string{"markdown"}})
		require.Equal(t, 200, r.Status, "%s", r.Raw)
		d, _ := r.Body["data"].(map[string]any)
		md, _ := d["markdown"].(string)
		found := md[max(0, strings.Index(md, "Found: ")):]
		assert.True(t, strings.HasPrefix(found, clean), "scrape %d found state: %s", i+1, found)
		assert.Contains(t, found, frame, "scrape %d's frame found state", i+1)
	}
	_, _, taken := spares()
	assert.GreaterOrEqual(t, taken, int64(2), "the scrapes did not take the spare tabs")
	polltest.Until(t, 30*time.Second, "the spare tabs made again", func() bool { n, _, _ := spares(); return n == 2 })
	ts.do("DELETE", "/v2/browser/"+sess.ID(), keyAcme, nil)
}
