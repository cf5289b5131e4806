package service_test

import (
	"compress/gzip"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/test/polltest"
)

// crawlSite is a local site shaped to exercise every crawl rule: robots.txt
// with a disallowed tree and a sitemap index (one child gzipped), a depth
// chain, query-string variants, fragments, assets, a sibling tree outside
// the start path, links to a second host (127.0.0.2, "external"), and slow
// pages. It records every request.
type crawlSite struct {
	URL   string // http://127.0.0.1:port
	Ext   string // http://127.0.0.2:port
	delay time.Duration

	mu   sync.Mutex
	hits []hit
}

type hit struct {
	path string
	at   time.Time
}

func (s *crawlSite) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, h := range s.hits {
		if h.path == path {
			n++
		}
	}
	return n
}

func (s *crawlSite) last() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var t time.Time
	for _, h := range s.hits {
		if h.at.After(t) {
			t = h.at
		}
	}
	return t
}

func (s *crawlSite) pages() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, h := range s.hits {
		out = append(out, h.path)
	}
	return out
}

func page(title string, links ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html><html><head><title>%s</title></head><body><main><h1>%s</h1>", title, title)
	fmt.Fprintf(&b, "<p>%s</p><ul>", strings.Repeat("This page has enough text to be taken as server-rendered. ", 6))
	for _, l := range links {
		fmt.Fprintf(&b, `<li><a href="%s">%s</a></li>`, l, l)
	}
	b.WriteString("</ul></main></body></html>")
	return b.String()
}

func newCrawlSite(t *testing.T) *crawlSite {
	s := &crawlSite{}
	ln1, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln1.Addr().(*net.TCPAddr).Port
	ln2, err := net.Listen("tcp", fmt.Sprintf("127.0.0.2:%d", port))
	if err != nil {
		ln2, err = net.Listen("tcp", "127.0.0.2:0")
		require.NoError(t, err)
	}
	s.URL = "http://" + ln1.Addr().String()
	s.Ext = "http://" + ln2.Addr().String()
	pages := map[string]string{
		"/":                      page("Home", "/docs/", "/blog/"),
		"/docs/":                 page("Docs", "/docs/c1", "a?x=1", "a?x=2", "/docs/a?x=1#top", "#section", "/docs/private/secret", "/docs/logo.png", "/blog/", s.Ext+"/ext/page", "mailto:someone@example.org"),
		"/docs/c1":               page("C1", "/docs/c2"),
		"/docs/c2":               page("C2", "/docs/c3"),
		"/docs/c3":               page("C3", "/docs/c4"),
		"/docs/c4":               page("C4", "/docs/"),
		"/docs/a":                page("A", "/docs/c1"),
		"/docs/private/secret":   page("Secret"),
		"/docs/from-sitemap-1":   page("Sitemap one"),
		"/docs/from-sitemap-2":   page("Sitemap two"),
		"/docs/private/from-map": page("Private sitemap page"),
		"/blog/":                 page("Blog", "/blog/post"),
		"/blog/post":             page("Post"),
		"/ext/page":              page("External"),
	}
	for i := 0; i < 30; i++ {
		pages[fmt.Sprintf("/slow/%d", i)] = page(fmt.Sprintf("Slow %d", i), fmt.Sprintf("/slow/%d", i+1))
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits = append(s.hits, hit{r.Host + r.URL.RequestURI(), time.Now()})
		s.mu.Unlock()
		host := "http://" + r.Host
		switch r.URL.Path {
		case "/robots.txt":
			fmt.Fprintf(w, "User-agent: *\nDisallow: /docs/private/\n\nSitemap: %s/sitemap_index.xml\n", host)
			return
		case "/sitemap_index.xml":
			w.Header().Set("Content-Type", "application/xml")
			fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc>%s/sitemap-a.xml</loc></sitemap><sitemap><loc>%s/sitemap-b.xml.gz</loc></sitemap></sitemapindex>`, host, host)
			return
		case "/sitemap-a.xml":
			fmt.Fprintf(w, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>%s/docs/from-sitemap-1</loc></url></urlset>`, host)
			return
		case "/sitemap-b.xml.gz":
			zw := gzip.NewWriter(w)
			fmt.Fprintf(zw, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>%s/docs/from-sitemap-2</loc></url><url><loc>%s/docs/private/from-map</loc></url></urlset>`, host, host)
			zw.Close()
			return
		case "/docs/logo.png":
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte("\x89PNG"))
			return
		}
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/slow/") {
			select {
			case <-time.After(400 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, body)
	})
	srv1, srv2 := &http.Server{Handler: handler}, &http.Server{Handler: handler}
	go srv1.Serve(ln1)
	go srv2.Serve(ln2)
	t.Cleanup(func() {
		srv1.Close()
		srv2.Close()
	})
	return s
}

// crawlService is a service that may reach the loopback test sites.
func crawlService(t *testing.T, env map[string]string) *testService {
	vars := map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true"}
	for k, v := range env {
		vars[k] = v
	}
	return start(t, vars)
}

// runJob starts a job and waits for it to end; it returns the final status
// and every document (following next).
func (ts *testService) runJob(path, key string, body any) (string, map[string]any, []map[string]any) {
	ts.t.Helper()
	r := ts.do("POST", path, key, body)
	require.Equal(ts.t, 200, r.Status, "POST %s: %s", path, r.Raw)
	id := r.str("id")
	statusPath := path + "/" + id
	if path == "/v2/crawl" {
		statusPath = "/v2/crawl/" + id
	}
	var st response
	polltest.Until(ts.t, 4*time.Minute, "the job to end", func() bool {
		st = ts.do("GET", statusPath, key, nil)
		return st.Status == 200 && st.str("status") != "scraping"
	})
	return id, st.Body, ts.documents(statusPath+"?limit=1000", key)
}

func (ts *testService) documents(path, key string) []map[string]any {
	ts.t.Helper()
	var docs []map[string]any
	for path != "" {
		r := ts.do("GET", path, key, nil)
		require.Equal(ts.t, 200, r.Status, "GET %s: %s", path, r.Raw)
		data, _ := r.Body["data"].([]any)
		for _, d := range data {
			docs = append(docs, d.(map[string]any))
		}
		path = ""
		if next := r.str("next"); next != "" {
			u, _ := url.Parse(next)
			path = u.RequestURI()
		}
	}
	return docs
}

func docURLs(docs []map[string]any, base string) []string {
	var out []string
	for _, d := range docs {
		md := d["metadata"].(map[string]any)
		u, _ := md["sourceURL"].(string)
		out = append(out, strings.TrimPrefix(u, base))
	}
	sort.Strings(out)
	return out
}

func TestCrawlFollowsScopeRobotsAndSitemaps(t *testing.T) {
	site := newCrawlSite(t)
	ts := crawlService(t, nil)
	id, st, docs := ts.runJob("/v2/crawl", keyAcme, map[string]any{"url": site.URL + "/docs/", "limit": 100})
	require.Equal(t, "completed", st["status"], "status %v", st)
	got := docURLs(docs, site.URL)
	want := []string{"/docs/", "/docs/a?x=1", "/docs/a?x=2", "/docs/c1", "/docs/c2", "/docs/c3", "/docs/c4",
		"/docs/from-sitemap-1", "/docs/from-sitemap-2"}
	assert.Equal(t, want, got, "crawled")
	if int(st["completed"].(float64)) != len(want) || int(st["total"].(float64)) != len(want) {
		t.Errorf("completed %v total %v, want %d", st["completed"], st["total"], len(want))
	}
	for _, p := range []string{"/docs/private/secret", "/docs/private/from-map", "/blog/", "/docs/logo.png", "/ext/page"} {
		assert.Zero(t, site.count(strings.TrimPrefix(site.URL, "http://")+p),
			"times %s was requested; it is out of scope, an asset or disallowed by robots.txt", p)
	}
	assert.Zero(t, site.count(strings.TrimPrefix(site.Ext, "http://")+"/ext/page"), "times the external host was contacted without allowExternalLinks")
	for _, p := range want {
		assert.Equal(t, 1, site.count(strings.TrimPrefix(site.URL, "http://")+p), "times %s was requested", p)
	}
	errs := ts.do("GET", "/v2/crawl/"+id+"/errors", keyAcme, nil)
	blocked := fmt.Sprint(errs.Body["robotsBlocked"])
	assert.Contains(t, blocked, "/docs/private/secret", "robotsBlocked")
	assert.Contains(t, blocked, "/docs/private/from-map", "robotsBlocked")
	w, _ := st["warning"].(string)
	assert.Contains(t, w, "robots.txt", "warning: want one about robots.txt")
	for _, d := range docs {
		md := d["metadata"].(map[string]any)
		assert.Equal(t, "fetch", md["engine"], "%v's engine (a server-rendered page)", md["sourceURL"])
		assert.Contains(t, d["markdown"].(string), "# ", "%v has no markdown heading", md["sourceURL"])
	}
}

func TestCrawlOptions(t *testing.T) {
	site := newCrawlSite(t)
	ts := crawlService(t, nil)
	cases := []struct {
		name string
		body map[string]any
		want []string
	}{
		{"depth 1 without sitemap", map[string]any{"maxDiscoveryDepth": 1, "sitemap": "skip"},
			[]string{"/docs/", "/docs/a?x=1", "/docs/a?x=2", "/docs/c1"}},
		{"ignoreQueryParameters", map[string]any{"maxDiscoveryDepth": 1, "sitemap": "skip", "ignoreQueryParameters": true},
			[]string{"/docs/", "/docs/a?x=1", "/docs/c1"}},
		{"sitemap only", map[string]any{"sitemap": "only"},
			[]string{"/docs/", "/docs/from-sitemap-1", "/docs/from-sitemap-2"}},
		{"includePaths", map[string]any{"includePaths": []string{"^/docs/c[12]$", "^/docs/$"}, "sitemap": "skip"},
			[]string{"/docs/", "/docs/c1", "/docs/c2"}},
		// A start page the patterns leave out is fetched for its links
		// only, and not counted.
		{"includePaths without the start page", map[string]any{"includePaths": []string{"^/docs/c[12]$"}, "sitemap": "skip"},
			[]string{"/docs/c1", "/docs/c2"}},
		{"a links-only start page takes no place of the limit", map[string]any{"includePaths": []string{"^/docs/c[12]$"}, "sitemap": "skip", "limit": 1},
			[]string{"/docs/c1"}},
		{"includePaths from the home page", map[string]any{"url": site.URL + "/", "includePaths": []string{"^/blog/.*"}, "sitemap": "skip"},
			[]string{"/blog/", "/blog/post"}},
		{"excludePaths the start page", map[string]any{"excludePaths": []string{"^/docs/$"}, "maxDiscoveryDepth": 1, "sitemap": "skip"},
			[]string{"/docs/a?x=1", "/docs/a?x=2", "/docs/c1"}},
		{"excludePaths first", map[string]any{"includePaths": []string{"^/docs/"}, "excludePaths": []string{"c[2-4]", "^/docs/a$"}, "sitemap": "skip"},
			[]string{"/docs/", "/docs/c1"}},
		{"regexOnFullURL", map[string]any{"includePaths": []string{`x=2|/docs/$`}, "regexOnFullURL": true, "sitemap": "skip"},
			[]string{"/docs/", "/docs/a?x=2"}},
		{"crawlEntireDomain", map[string]any{"crawlEntireDomain": true, "sitemap": "skip", "maxDiscoveryDepth": 1},
			[]string{"/blog/", "/docs/", "/docs/a?x=1", "/docs/a?x=2", "/docs/c1"}},
		{"limit", map[string]any{"limit": 3, "sitemap": "skip"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := map[string]any{"url": site.URL + "/docs/"}
			for k, v := range c.body {
				body[k] = v
			}
			_, st, docs := ts.runJob("/v2/crawl", keyAcme, body)
			got := docURLs(docs, site.URL)
			if c.want == nil {
				if len(got) != 3 || st["total"].(float64) != 3 {
					t.Errorf("limit 3 crawled %v (total %v)", got, st["total"])
				}
				return
			}
			assert.Equal(t, c.want, got, "crawled")
			assert.Equal(t, float64(len(c.want)), st["total"], "total")
		})
	}
	t.Run("allowExternalLinks", func(t *testing.T) {
		_, _, docs := ts.runJob("/v2/crawl", keyAcme, map[string]any{"url": site.URL + "/docs/", "allowExternalLinks": true,
			"maxDiscoveryDepth": 1, "sitemap": "skip"})
		found := false
		for _, d := range docs {
			if d["metadata"].(map[string]any)["sourceURL"] == site.Ext+"/ext/page" {
				found = true
			}
		}
		assert.True(t, found, "the external page was not crawled: %v", docURLs(docs, ""))
	})
}

func TestCrawlValidation(t *testing.T) {
	ts := crawlService(t, nil)
	cases := []struct {
		body   string
		status int
		want   string
	}{
		{`{}`, 400, "url is required"},
		{`{"url": "nope"}`, 400, "url must be an absolute http or https URL"},
		{`{"url": "http://example.org", "includePaths": ["ok", "(unclosed"]}`, 400, "includePaths[1] is not a valid regular expression"},
		{`{"url": "http://example.org", "sitemap": "maybe"}`, 400, "sitemap must be skip, include or only"},
		{`{"url": "http://example.org", "limit": 0}`, 400, "limit must be between 1 and 100000"},
		{`{"url": "http://example.org", "delay": -1}`, 400, "delay must be between 0 and 3600"},
		{`{"url": "http://example.org", "maxConcurrency": 0}`, 400, "maxConcurrency must be between 1 and 1000"},
		{`{"url": "http://example.org", "prompt": "docs only"}`, 400, "prompt needs a language model"},
		{`{"url": "http://example.org", "scrapeOptions": {"formats": ["markdown"], "colour": 1}}`, 400, `unknown key "scrapeOptions.colour"`},
		{`{"url": "http://example.org", "scrapeOptions": {"timeout": 10}}`, 400, "scrapeOptions.timeout must be between 1000 and 300000"},
		{`{"url": "http://example.org", "scrapeOptions": {"zeroDataRetention": true}}`, 400, `unknown key "scrapeOptions.zeroDataRetention"`},
		{`{"url": "http://example.org", "webhook": {"url": "ftp://x"}}`, 400, "webhook.url must be an absolute http or https URL"},
		{`{"url": "http://example.org", "webhook": {"url": "http://x.example", "events": ["page", "finished"]}}`, 400, "webhook.events[1]"},
		{`{"url": "http://example.org", "ignoreRobotsTxt": true}`, 403, "ignoreRobotsTxt is not enabled for this team"},
		{`{"url": "http://example.org", "zeroDataRetention": true}`, 403, "zeroDataRetention is not enabled for this team"},
	}
	for _, c := range cases {
		r := ts.do("POST", "/v2/crawl", keyAcme, c.body)
		if r.Status != c.status || !strings.Contains(r.str("error"), c.want) {
			t.Errorf("%s: %d %s, want %d with %q", c.body, r.Status, r.Raw, c.status, c.want)
		}
	}
	r := ts.do("POST", "/v2/crawl/params-preview", keyAcme, `{"url": "http://example.org", "prompt": "x"}`)
	assert.Equal(t, 400, r.Status, "params-preview: %s", r.Raw)
	assert.Equal(t, "MODEL_NOT_CONFIGURED", r.str("code"), "params-preview without a model: %s", r.Raw)
	for _, p := range []string{"/v2/crawl/00000000-0000-0000-0000-000000000000", "/v2/batch/scrape/nope", "/v2/crawl/nope/errors"} {
		if r := ts.do("GET", p, keyAcme, nil); r.Status != 404 || r.str("code") != "NOT_FOUND" {
			t.Errorf("GET %s: %d %s", p, r.Status, r.Raw)
		}
	}
	if r := ts.do("GET", "/v2/crawl/x?limit=5000", keyAcme, nil); r.Status != 400 || !strings.Contains(r.str("error"), "limit must be") {
		t.Errorf("limit=5000: %d %s", r.Status, r.Raw)
	}
}

func TestCrawlStatusPagesAndTeams(t *testing.T) {
	site := newCrawlSite(t)
	ts := crawlService(t, nil)
	id, st, docs := ts.runJob("/v2/crawl", keyAcme, map[string]any{"url": site.URL + "/docs/", "limit": 100})
	require.Equal(t, int(st["completed"].(float64)), len(docs), "documents over the pages against completed")
	first := ts.do("GET", "/v2/crawl/"+id+"?limit=4", keyAcme, nil)
	next := first.str("next")
	if len(first.Body["data"].([]any)) != 4 || !strings.HasPrefix(next, ts.URL+"/v2/crawl/"+id+"?skip=4") {
		t.Fatalf("first page: %d documents, next %q", len(first.Body["data"].([]any)), next)
	}
	paged := ts.documents("/v2/crawl/"+id+"?limit=4", keyAcme)
	seen := map[string]bool{}
	for _, d := range paged {
		u := d["metadata"].(map[string]any)["sourceURL"].(string)
		assert.False(t, seen[u], "%s appears twice over the pages", u)
		seen[u] = true
	}
	assert.Equal(t, len(docs), len(paged), "documents in pages of 4 against one page of 1000")
	last := ts.do("GET", fmt.Sprintf("/v2/crawl/%s?skip=%d", id, len(docs)), keyAcme, nil)
	if _, ok := last.Body["next"]; ok || len(last.Body["data"].([]any)) != 0 {
		t.Errorf("past the end: %s", last.Raw)
	}
	for _, k := range []string{"expiresAt", "createdAt", "completedAt"} {
		_, err := time.Parse(time.RFC3339, st[k].(string))
		assert.NoError(t, err, "%s = %v", k, st[k])
	}
	r := ts.do("GET", "/v2/crawl/"+id, keyGlobex, nil)
	assert.Equal(t, 404, r.Status, "another team's crawl")
	r = ts.do("DELETE", "/v2/crawl/"+id, keyGlobex, nil)
	assert.Equal(t, 404, r.Status, "another team cancelling")
	act := ts.do("GET", "/v2/team/activity", keyAcme, nil)
	assert.Contains(t, string(act.Raw), id, "activity lacks the crawl")
	assert.Contains(t, string(act.Raw), `"crawl"`, "activity lacks the crawl")
}

func TestCrawlCancelStopsAtOnce(t *testing.T) {
	site := newCrawlSite(t)
	ts := crawlService(t, nil)
	r := ts.do("POST", "/v2/crawl", keyAcme, map[string]any{"url": site.URL + "/slow/0", "crawlEntireDomain": true, "sitemap": "skip"})
	id := r.str("id")
	polltest.Until(t, 30*time.Second, "a few slow pages", func() bool {
		return ts.do("GET", "/v2/crawl/"+id, keyAcme, nil).Body["completed"].(float64) >= 2
	})
	active := ts.do("GET", "/v2/crawl/active", keyAcme, nil)
	assert.Contains(t, string(active.Raw), id, "active")
	assert.Contains(t, string(active.Raw), `"teamId":"acme"`, "active")
	other := ts.do("GET", "/v2/crawl/active", keyGlobex, nil)
	assert.NotContains(t, string(other.Raw), id, "another team sees the crawl")
	// More documents are coming: next says where they will be.
	running := ts.do("GET", "/v2/crawl/"+id, keyAcme, nil)
	next, _ := running.Body["next"].(string)
	require.NotEmpty(t, next, "a running crawl's status has no next: %.300s", running.Raw)
	assert.Contains(t, next, fmt.Sprintf("skip=%d", len(running.Body["data"].([]any))), "next starts after the documents given")
	// Past the documents so far, a page waits for the next one (a slow
	// page takes 400 ms), rather than answer an empty page at once for
	// the SDK's pager to ask again.
	asks := 0
	for past := len(running.Body["data"].([]any)); asks < 5; {
		asks++
		p := ts.do("GET", fmt.Sprintf("/v2/crawl/%s?skip=%d", id, past), keyAcme, nil)
		if len(p.Body["data"].([]any)) > 0 {
			break
		}
	}
	assert.Less(t, asks, 5, "five asks past the documents so far found no new one")
	// Firecrawl v2's other name for the list.
	ongoing := ts.do("GET", "/v2/crawl/ongoing", keyAcme, nil)
	assert.Equal(t, 200, ongoing.Status, "%s", ongoing.Raw)
	assert.Contains(t, string(ongoing.Raw), id, "ongoing")
	c := ts.do("DELETE", "/v2/crawl/"+id, keyAcme, nil)
	cancelled := time.Now()
	if c.Status != 200 || c.str("status") != "cancelled" {
		t.Fatalf("cancel: %d %s", c.Status, c.Raw)
	}
	time.Sleep(1500 * time.Millisecond) // a window in which nothing may start
	// A request already on the wire when the cancel came may land a moment
	// later (its tab is gone by then); nothing may start afterwards.
	if last := site.last(); last.After(cancelled.Add(250 * time.Millisecond)) {
		t.Errorf("the site got a request %s after the cancel returned", last.Sub(cancelled))
	}
	st := ts.do("GET", "/v2/crawl/"+id, keyAcme, nil)
	assert.Equal(t, "cancelled", st.str("status"), "status after cancel: %s", st.Raw)
	active = ts.do("GET", "/v2/crawl/active", keyAcme, nil)
	assert.NotContains(t, string(active.Raw), id, "a cancelled crawl is still active")
}

func TestBatchScrape(t *testing.T) {
	site := newCrawlSite(t)
	ts := crawlService(t, nil)
	r := ts.do("POST", "/v2/batch/scrape", keyAcme, map[string]any{"urls": []string{site.URL + "/docs/c1", "nope", site.URL + "/missing-page"},
		"formats": []string{"markdown", "links"}})
	if r.Status != 200 || fmt.Sprint(r.Body["invalidURLs"]) != "[nope]" {
		t.Fatalf("batch: %d %s", r.Status, r.Raw)
	}
	id := r.str("id")
	assert.True(t, strings.HasSuffix(r.str("url"), "/v2/batch/scrape/"+id), "url %q", r.str("url"))
	polltest.Until(t, 60*time.Second, "the batch to end", func() bool {
		return ts.do("GET", "/v2/batch/scrape/"+id, keyAcme, nil).str("status") == "completed"
	})
	docs := ts.documents("/v2/batch/scrape/"+id, keyAcme)
	require.Len(t, docs, 2, "documents")
	for _, d := range docs {
		md := d["metadata"].(map[string]any)
		switch md["sourceURL"] {
		case site.URL + "/docs/c1":
			if !strings.Contains(d["markdown"].(string), "# C1") || len(d["links"].([]any)) == 0 {
				t.Errorf("c1: %v", d)
			}
		case site.URL + "/missing-page":
			assert.Equal(t, float64(404), md["statusCode"], "missing page: %v", md)
		}
	}
	strict := ts.do("POST", "/v2/batch/scrape", keyAcme, map[string]any{"urls": []string{site.URL + "/docs/c1", "nope"}, "ignoreInvalidURLs": false})
	if strict.Status != 400 || !strings.Contains(strict.str("error"), `"nope"`) {
		t.Errorf("ignoreInvalidURLs false: %d %s", strict.Status, strict.Raw)
	}
	ok := ts.do("POST", "/v2/batch/scrape", keyAcme, map[string]any{"urls": []string{site.URL + "/docs/c2"}, "ignoreInvalidURLs": false})
	if _, has := ok.Body["invalidURLs"]; ok.Status != 200 || has {
		t.Errorf("ignoreInvalidURLs false, all valid: %d %s", ok.Status, ok.Raw)
	}
	for body, want := range map[string]string{
		`{"urls": []}`:       "urls must hold at least one URL",
		`{"urls": ["nope"]}`: "urls holds no valid URL",
		`{"urls": [1]}`:      "urls[0] must be a string",
		`{"urls": ["http://a.example"], "waitFor": -1}`: "waitFor",
	} {
		if r := ts.do("POST", "/v2/batch/scrape", keyAcme, body); r.Status != 400 || !strings.Contains(r.str("error"), want) {
			t.Errorf("%s: %d %s, want 400 with %q", body, r.Status, r.Raw, want)
		}
	}
}

func TestBatchTimeoutReportedInErrors(t *testing.T) {
	site := newCrawlSite(t)
	hang := httptestHang(t)
	ts := crawlService(t, nil)
	// The timeout leaves the good page room for a browser started cold on
	// a busy machine (2 s did not, under -race); the hanging one reaches it.
	id, st, docs := ts.runJob("/v2/batch/scrape", keyAcme, map[string]any{"urls": []string{site.URL + "/docs/c3", hang}, "timeout": 6000})
	errs := ts.do("GET", "/v2/batch/scrape/"+id+"/errors", keyAcme, nil)
	if st["status"] != "completed" || len(docs) != 1 {
		t.Fatalf("status %v, %d documents; errors %s", st["status"], len(docs), errs.Raw)
	}
	list, _ := errs.Body["errors"].([]any)
	require.Len(t, list, 1, "errors: %s", errs.Raw)
	e := list[0].(map[string]any)
	if e["url"] != hang || e["code"] != "SCRAPE_TIMEOUT" || e["id"] == "" || e["timestamp"] == "" || e["error"] == "" {
		t.Errorf("error entry %v", e)
	}
	w, _ := st["warning"].(string)
	assert.Contains(t, w, "1 pages failed", "warning")
}

func httptestHang(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/hang"
}

func TestMap(t *testing.T) {
	site := newCrawlSite(t)
	ts := crawlService(t, nil)
	r := ts.do("POST", "/v2/map", keyAcme, map[string]any{"url": site.URL + "/docs/"})
	require.Equal(t, 200, r.Status, "map: %s", r.Raw)
	var urls []string
	for _, l := range r.Body["links"].([]any) {
		urls = append(urls, strings.TrimPrefix(l.(map[string]any)["url"].(string), site.URL))
	}
	joined := " " + strings.Join(urls, " ") + " "
	for _, want := range []string{" /docs/ ", " /docs/c1 ", " /docs/c2 ", " /docs/from-sitemap-1 ", " /docs/from-sitemap-2 ", " /docs/a ", " /blog/ "} {
		assert.Contains(t, joined, want, "map")
	}
	if strings.Contains(joined, "?x=") || strings.Contains(joined, "logo.png") || strings.Contains(joined, "#") {
		t.Errorf("map has query variants, assets or fragments: %v", urls)
	}
	s := ts.do("POST", "/v2/map", keyAcme, map[string]any{"url": site.URL + "/docs/", "search": "c2", "limit": 2})
	links := s.Body["links"].([]any)
	if len(links) != 2 || !strings.HasSuffix(links[0].(map[string]any)["url"].(string), "/docs/c2") {
		t.Errorf("search c2, limit 2: %s", s.Raw)
	}
	r = ts.do("POST", "/v2/map", keyAcme, `{"url": "http://example.org", "limit": 100001}`)
	assert.Equal(t, 400, r.Status, "limit over the maximum")
}

// TestWebhooksInOrderAndSigned checks every event of a crawl, its order
// and its signature, and the per-team secret.
func TestWebhooksInOrderAndSigned(t *testing.T) {
	site := newCrawlSite(t)
	const secret = "whsec-test"
	var mu sync.Mutex
	var got []map[string]any
	var bad []string
	fails := 0
	hook := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		mu.Lock()
		defer mu.Unlock()
		if r.Header.Get("X-Firecrawl-Signature") != "sha256="+hex.EncodeToString(mac.Sum(nil)) {
			bad = append(bad, r.Header.Get("X-Firecrawl-Signature"))
		}
		if r.Header.Get("X-Custom") != "yes" {
			bad = append(bad, "custom header missing")
		}
		var m map[string]any
		json.Unmarshal(body, &m)
		// The first page event fails once: it must be retried before any later event.
		if m["type"] == "crawl.page" && fails == 0 {
			fails++
			w.WriteHeader(500)
			return
		}
		got = append(got, m)
	})
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	srv := &http.Server{Handler: hook}
	go srv.Serve(ln)
	defer srv.Close()
	ts := crawlService(t, map[string]string{"TRAWLER_WEBHOOK_SECRETS": "acme:" + secret})
	id, _, docs := ts.runJob("/v2/crawl", keyAcme, map[string]any{"url": site.URL + "/docs/", "sitemap": "skip", "maxDiscoveryDepth": 1,
		"webhook": map[string]any{"url": "http://" + ln.Addr().String() + "/hook", "headers": map[string]string{"X-Custom": "yes"},
			"metadata": map[string]any{"run": 7}}})
	polltest.Until(t, 30*time.Second, "every webhook", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == len(docs)+2
	})
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, bad, "bad deliveries")
	if got[0]["type"] != "crawl.started" || got[len(got)-1]["type"] != "crawl.completed" {
		t.Errorf("first %v, last %v", got[0]["type"], got[len(got)-1]["type"])
	}
	pages := map[string]bool{}
	for _, m := range got[1 : len(got)-1] {
		if m["type"] != "crawl.page" || m["id"] != id || m["success"] != true {
			t.Errorf("event %v", m)
			continue
		}
		md, _ := m["metadata"].(map[string]any)
		assert.Equal(t, float64(7), md["run"], "metadata %v", m["metadata"])
		data := m["data"].([]any)
		pages[data[0].(map[string]any)["metadata"].(map[string]any)["sourceURL"].(string)] = true
	}
	assert.Equal(t, len(docs), len(pages), "distinct page events against documents")
}

func TestWatchSocket(t *testing.T) {
	site := newCrawlSite(t)
	ts := crawlService(t, nil)
	r := ts.do("POST", "/v2/crawl", keyAcme, map[string]any{"url": site.URL + "/slow/0", "limit": 6, "sitemap": "skip", "crawlEntireDomain": true})
	id := r.str("id")
	wsURL := "ws" + strings.TrimPrefix(ts.URL, "http") + "/v2/crawl/" + id
	if _, resp, err := websocket.DefaultDialer.Dial(wsURL, http.Header{"Sec-WebSocket-Protocol": {"wrong-key"}}); err == nil || resp.StatusCode != 401 {
		t.Errorf("a wrong key was accepted")
	}
	conn, resp, err := websocket.DefaultDialer.Dial(wsURL, http.Header{"Sec-WebSocket-Protocol": {keyAcme}})
	require.NoError(t, err, "dial")
	defer conn.Close()
	assert.Equal(t, keyAcme, resp.Header.Get("Sec-WebSocket-Protocol"), "subprotocol not echoed")
	var types []string
	urls := map[string]bool{}
	conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	for {
		var m map[string]any
		if err := conn.ReadJSON(&m); err != nil {
			break
		}
		types = append(types, m["type"].(string))
		switch m["type"] {
		case "catchup":
			for _, d := range m["data"].(map[string]any)["data"].([]any) {
				urls[d.(map[string]any)["metadata"].(map[string]any)["sourceURL"].(string)] = true
			}
		case "document":
			urls[m["data"].(map[string]any)["metadata"].(map[string]any)["sourceURL"].(string)] = true
		case "done":
			assert.Equal(t, "completed", m["data"].(map[string]any)["status"], "done %v", m)
		}
	}
	if types[0] != "catchup" || types[len(types)-1] != "done" || len(urls) != 6 {
		t.Errorf("messages %v, %d distinct documents", types, len(urls))
	}
	// A finished job still answers: catchup then done.
	conn2, _, err := websocket.DefaultDialer.Dial(wsURL, http.Header{"Sec-WebSocket-Protocol": {keyAcme}})
	require.NoError(t, err)
	defer conn2.Close()
	var a, b map[string]any
	conn2.ReadJSON(&a)
	conn2.ReadJSON(&b)
	if a["type"] != "catchup" || len(a["data"].(map[string]any)["data"].([]any)) != 6 || b["type"] != "done" {
		t.Errorf("after the end: %v / %v", a["type"], b["type"])
	}
}

// TestFairness runs a big crawl of one team and a small one of another
// started after it: the small one finishes while the big one still runs,
// and an interactive session still gets a browser.
func TestFairness(t *testing.T) {
	site := newCrawlSite(t)
	ts := crawlService(t, map[string]string{"TRAWLER_POOL_SIZE": "4", "TRAWLER_JOB_WORKERS": "2"})
	big := ts.do("POST", "/v2/crawl", keyAcme, map[string]any{"url": site.URL + "/slow/0", "crawlEntireDomain": true, "sitemap": "skip"})
	polltest.Until(t, 30*time.Second, "the big crawl to record a page", func() bool {
		n, _ := ts.do("GET", "/v2/crawl/"+big.str("id"), keyAcme, nil).Body["completed"].(float64)
		return n >= 1
	})
	small := ts.do("POST", "/v2/batch/scrape", keyGlobex, map[string]any{"urls": []string{site.URL + "/docs/c1", site.URL + "/docs/c2", site.URL + "/docs/c3"}})
	began := time.Now()
	polltest.Until(t, 30*time.Second, "the small batch", func() bool {
		return ts.do("GET", "/v2/batch/scrape/"+small.str("id"), keyGlobex, nil).str("status") == "completed"
	})
	if d := time.Since(began); d > 10*time.Second {
		t.Errorf("the small batch took %s behind the big crawl", d)
	}
	st := ts.do("GET", "/v2/crawl/"+big.str("id"), keyAcme, nil)
	assert.Equal(t, "scraping", st.str("status"), "the big crawl has ended already; the test proves nothing")
	s := ts.do("POST", "/v2/browser", keyGlobex, map[string]any{})
	assert.Equal(t, 200, s.Status, "an interactive session during the crawl: %s", s.Raw)
	ts.do("DELETE", "/v2/crawl/"+big.str("id"), keyAcme, nil)
}

// TestCrawlPageKinds: a crawl takes pages with Go's client while they need
// no browser, then (from the client-rendered page on, which moves the job
// into its tab) with fetch() in the tab; a PDF, a text file, a
// client-rendered page and a Latin-1 page must come out as they do through
// a navigation, each fetched once.
func TestCrawlPageKinds(t *testing.T) {
	pdf, err := os.ReadFile("../parse/testdata/report.pdf")
	require.NoError(t, err)
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		switch r.URL.Path {
		case "/k/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, page("Kinds", "/k/static", "/k/report.pdf", "/k/notes.txt", "/k/app", "/k/latin"))
		case "/k/static":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, page("Static page"))
		case "/k/report.pdf":
			w.Header().Set("Content-Type", "application/pdf")
			w.Write(pdf)
		case "/k/notes.txt":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			io.WriteString(w, "plain notes <not a tag> & more")
		case "/k/app":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, `<!doctype html><html><head><title>App</title></head><body><div id="root"></div>
<script>setTimeout(() => { document.getElementById('root').innerHTML = '<h1>Rendered by script</h1><p>Only a browser sees this.</p>'; }, 200);</script></body></html>`)
		case "/k/latin":
			w.Header().Set("Content-Type", "text/html; charset=iso-8859-1")
			io.WriteString(w, "<html><head><title>Latin</title></head><body><main><h1>Caf\xe9 cr\xe8me</h1><p>"+strings.Repeat("Du texte en fran\xe7ais. ", 20)+"</p></main></body></html>")
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ts := crawlService(t, map[string]string{"TRAWLER_JOB_WORKERS": "1"})
	_, st, docs := ts.runJob("/v2/crawl", keyAcme, map[string]any{"url": srv.URL + "/k/", "sitemap": "skip",
		"scrapeOptions": map[string]any{"formats": []string{"markdown"}, "maxAge": 0}})
	if st["status"] != "completed" || len(docs) != 6 {
		t.Fatalf("status %v, %d documents: %v", st["status"], len(docs), docURLs(docs, srv.URL))
	}
	byPath := map[string]map[string]any{}
	for _, d := range docs {
		byPath[strings.TrimPrefix(d["metadata"].(map[string]any)["sourceURL"].(string), srv.URL)] = d
	}
	check := func(path, want, engine string) {
		d := byPath[path]
		md := d["metadata"].(map[string]any)
		if !strings.Contains(d["markdown"].(string), want) || (engine != "" && md["engine"] != engine) {
			t.Errorf("%s: engine %v, markdown %q; want %q from %s", path, md["engine"], d["markdown"], want, engine)
		}
	}
	check("/k/static", "# Static page", "fetch")
	check("/k/report.pdf", "# Harbour Water Quality Report", "fetch")
	check("/k/notes.txt", "plain notes <not a tag> & more", "fetch")
	check("/k/app", "Rendered by script", "browser-render")
	check("/k/latin", "# Café crème", "browser-fetch")
	assert.NotNil(t, byPath["/k/report.pdf"]["metadata"].(map[string]any)["numPages"], "the PDF has no numPages")
	mu.Lock()
	defer mu.Unlock()
	for p, n := range hits {
		if n != 1 && p != "/robots.txt" && p != "/sitemap.xml" {
			t.Errorf("%s was fetched %d times", p, n)
		}
	}
}

// TestZeroDataRetentionJob: a zero-data-retention batch answers with its
// documents while nothing of them reaches the store or the cache.
func TestZeroDataRetentionJob(t *testing.T) {
	site := newCrawlSite(t)
	ts := crawlService(t, map[string]string{"TRAWLER_TEAM_FEATURES": "acme:zeroDataRetention"})
	id, st, docs := ts.runJob("/v2/batch/scrape", keyAcme, map[string]any{"urls": []string{site.URL + "/docs/c1", site.URL + "/docs/c2"},
		"zeroDataRetention": true})
	if st["status"] != "completed" || len(docs) != 2 || !strings.Contains(docs[0]["markdown"].(string), "# C") {
		t.Fatalf("status %v, %d documents", st["status"], len(docs))
	}
	stored, _, err := ts.Store.JobDocuments(context.Background(), id, 0, 100, 1<<30)
	require.NoError(t, err)
	for _, d := range stored {
		if d != nil {
			t.Errorf("a document of a zero-data-retention job is in the store: %.80s", d)
		}
	}
	act := ts.do("GET", "/v2/team/activity", keyAcme, nil)
	assert.NotContains(t, string(act.Raw), id, "the job is in the activity log")
	// Nothing was cached: the same pages scraped again come from the site.
	before := site.count(strings.TrimPrefix(site.URL, "http://") + "/docs/c1")
	r := ts.do("POST", "/v2/scrape", keyAcme, map[string]any{"url": site.URL + "/docs/c1"})
	if r.Status != 200 || site.count(strings.TrimPrefix(site.URL, "http://")+"/docs/c1") != before+1 {
		t.Errorf("the page came from a cache the zero-data-retention job must not have written")
	}
	r = ts.do("POST", "/v2/batch/scrape", keyGlobex, map[string]any{"urls": []string{site.URL + "/docs/c1"}, "zeroDataRetention": true})
	assert.Equal(t, 403, r.Status, "a team without the feature: %s", r.Raw)
}

// TestCrawlSubdomains maps *.crawl.test to loopback in the browsers
// (--host-resolver-rules through TRAWLER_CHROMIUM_FLAGS): allowSubdomains
// follows docs.crawl.test from www.crawl.test, and only then.
func TestCrawlSubdomains(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	var mu sync.Mutex
	hosts := map[string]int{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hosts[r.Host]++
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch {
		case strings.HasPrefix(r.Host, "www.") && r.URL.Path == "/":
			io.WriteString(w, page("Home", fmt.Sprintf("http://docs.crawl.test:%d/guide", port), fmt.Sprintf("http://other.test:%d/x", port), "/about"))
		case r.URL.Path == "/robots.txt", r.URL.Path == "/sitemap.xml":
			http.NotFound(w, r)
		default:
			io.WriteString(w, page("Page "+r.Host+r.URL.Path))
		}
	})}
	go srv.Serve(ln)
	defer srv.Close()
	ts := crawlService(t, map[string]string{"TRAWLER_CHROMIUM_FLAGS": `--host-resolver-rules="MAP *.crawl.test 127.0.0.1, MAP other.test 127.0.0.1"`})
	start := fmt.Sprintf("http://www.crawl.test:%d/", port)
	_, _, docs := ts.runJob("/v2/crawl", keyAcme, map[string]any{"url": start, "sitemap": "skip", "allowSubdomains": true})
	want := fmt.Sprintf("http://docs.crawl.test:%d/guide http://www.crawl.test:%d/ http://www.crawl.test:%d/about", port, port, port)
	assert.Equal(t, want, strings.Join(docURLs(docs, ""), " "), "with allowSubdomains")
	_, _, docs = ts.runJob("/v2/crawl", keyAcme, map[string]any{"url": start, "sitemap": "skip", "scrapeOptions": map[string]any{"maxAge": 0}})
	if got := strings.Join(docURLs(docs, ""), " "); strings.Contains(got, "docs.crawl.test") || !strings.Contains(got, "/about") {
		t.Errorf("without allowSubdomains: %s", got)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Zero(t, hosts[fmt.Sprintf("other.test:%d", port)], "times another domain was contacted")
}

func TestIdempotencyKey(t *testing.T) {
	site := newCrawlSite(t)
	ts := crawlService(t, nil)
	post := func(path, key, body string) int {
		req, _ := http.NewRequest("POST", ts.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+keyAcme)
		req.Header.Set("x-idempotency-key", key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	body := `{"url": "` + site.URL + `/docs/c4", "limit": 1}`
	if a, b := post("/v2/crawl", "k-1", body), post("/v2/crawl", "k-1", body); a != 200 || b != 409 {
		t.Errorf("the same key twice: %d then %d, want 200 then 409", a, b)
	}
	batch := `{"urls": ["` + site.URL + `/docs/c4"]}`
	if a, b := post("/v2/batch/scrape", "k-2", batch), post("/v2/batch/scrape", "k-2", batch); a != 200 || b != 409 {
		t.Errorf("a batch with the same key twice: %d then %d", a, b)
	}
	assert.Equal(t, 400, post("/v2/crawl", strings.Repeat("k", 300), body), "a 300-character key")
}

// The links of a crawl's first page are taken as soon as that page is
// recorded, not when something else wakes the lanes: here the site's
// sitemap answers only once the linked pages have been asked for (or after
// 20 s, failing the test), and the lanes' own idle wake-up comes after 5 s.
func TestCrawlTakesTheFirstPagesLinksAtOnce(t *testing.T) {
	var mu sync.Mutex
	hits := map[string]int{}
	release := make(chan struct{})
	var once sync.Once
	// Enough text that the pages are plainly server-rendered: they are
	// taken without a browser.
	text := strings.Repeat("A paragraph of the page, written on the server. ", 12)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		both := hits["/a"] > 0 && hits["/b"] > 0
		mu.Unlock()
		if both {
			once.Do(func() { close(release) })
		}
		switch r.URL.Path {
		case "/":
			fmt.Fprintf(w, `<html><body><h1>Home</h1><p>%s</p><a href="/a">A</a> <a href="/b">B</a></body></html>`, text)
		case "/a", "/b":
			fmt.Fprintf(w, `<html><body><h1>Page %s</h1><p>%s</p></body></html>`, r.URL.Path, text)
		case "/sitemap.xml":
			select {
			case <-release:
			case <-time.After(20 * time.Second):
			}
			http.NotFound(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	ts := crawlService(t, nil)
	start := time.Now()
	_, st, docs := ts.runJob("/v2/crawl", keyAcme, map[string]any{"url": srv.URL + "/", "limit": 10})
	require.Equal(t, "completed", st["status"], "status %v", st)
	assert.Equal(t, []string{"/", "/a", "/b"}, docURLs(docs, srv.URL))
	assert.Less(t, time.Since(start), 4*time.Second,
		"the crawl waited for the sitemap or the lanes' idle wake-up before taking the first page's links")
}
