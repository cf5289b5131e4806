package service_test

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestGuardBeforeCache: pages cached while private networks were allowed
// do not answer once they are not. The guard refuses the target before the
// cache is read, on every endpoint, and a page fetched from a private
// address is not served even when its host name passes the guard.
func TestGuardBeforeCache(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	_, port, _ := net.SplitHostPort(web.Listener.Addr().String())
	dir := t.TempDir()
	// A name that only the browsers resolve (to the loopback site); the
	// service's own resolver does not know it.
	flags := `--host-resolver-rules="MAP *.guard.test 127.0.0.1"`
	u := web.URL + "/article"
	named := fmt.Sprintf("http://www.guard.test:%s/article", port)

	t.Run("cached while private networks are allowed", func(t *testing.T) {
		ts := start(t, map[string]string{"TRAWLER_DATA_DIR": dir, "TRAWLER_ALLOW_PRIVATE_NETWORKS": "true",
			"TRAWLER_CHROMIUM_FLAGS": flags})
		for _, target := range []string{u, named} {
			if r := ts.scrape(map[string]any{"url": target}); r.Status != 200 || meta(r)["cacheState"] != "miss" {
				t.Fatalf("scrape %s: %d %s", target, r.Status, r.Raw)
			}
			if r := ts.scrape(map[string]any{"url": target, "lockdown": true}); r.Status != 200 || meta(r)["cacheState"] != "hit" {
				t.Fatalf("%s is not cached: %d %s", target, r.Status, r.Raw)
			}
		}
	}) // the first service is closed here; the second opens its data

	ts := start(t, map[string]string{"TRAWLER_DATA_DIR": dir, "TRAWLER_CHROMIUM_FLAGS": flags, "TRAWLER_WARM_BROWSERS": "0"})
	hits := web.count("/article")
	for _, tc := range []struct {
		name, path string
		body       map[string]any
	}{
		{"scrape", "/v2/scrape", map[string]any{"url": u}},
		{"scrape with lockdown", "/v2/scrape", map[string]any{"url": u, "lockdown": true}},
		{"scrape with minAge", "/v2/scrape", map[string]any{"url": u, "minAge": 1}},
		{"map", "/v2/map", map[string]any{"url": u}},
		{"crawl", "/v2/crawl", map[string]any{"url": u}},
		{"batch", "/v2/batch/scrape", map[string]any{"urls": []string{u}}},
	} {
		r := ts.do("POST", tc.path, keyAcme, tc.body)
		if r.Status != 403 || r.str("code") != "URL_BLOCKED" || strings.Contains(string(r.Raw), "Trawling the Deep") {
			t.Errorf("%s of the cached loopback page with the guard on: %d %.300s, want 403 URL_BLOCKED", tc.name, r.Status, r.Raw)
		}
	}
	// www.guard.test does not resolve here, so the guard cannot judge it; a
	// lockdown still reads the cache, but the page was fetched from loopback.
	if r := ts.scrape(map[string]any{"url": named, "lockdown": true}); r.Status != 404 || r.str("code") != "SCRAPE_LOCKDOWN_CACHE_MISS" {
		t.Errorf("lockdown of a page fetched from loopback, guard on: %d %.300s, want 404 SCRAPE_LOCKDOWN_CACHE_MISS", r.Status, r.Raw)
	}
	r := ts.scrape(map[string]any{"url": named})
	assert.NotEqual(t, 200, r.Status, "scrape of a page fetched from loopback, guard on: %.300s", r.Raw)
	assert.Equal(t, hits, web.count("/article"), "the loopback site was contacted with the guard on")
	a := ts.do("GET", "/v2/crawl/active", keyAcme, nil)
	assert.NotContains(t, string(a.Raw), "article", "a refused crawl is running")
}

// TestCacheIsTeamScoped: a page one team fetched is not another team's,
// with the cache shared or not, since loopback pages are never shared (the
// sharing of public pages is tested in package scrape: tests reach only
// loopback).
func TestCacheIsTeamScoped(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	for _, shared := range []string{"false", "true"} {
		t.Run("TRAWLER_SHARED_CACHE="+shared, func(t *testing.T) {
			ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true", "TRAWLER_SHARED_CACHE": shared})
			u := web.URL + "/article?shared=" + shared
			if r := ts.scrape(map[string]any{"url": u}); r.Status != 200 || meta(r)["cacheState"] != "miss" {
				t.Fatalf("acme's scrape: %d %s", r.Status, r.Raw)
			}
			// A batch's pages are cached for the batch's team too.
			v := web.URL + "/echo?shared=" + shared
			if _, st, docs := ts.runJob("/v2/batch/scrape", keyAcme, map[string]any{"urls": []string{v}}); st["status"] != "completed" || len(docs) != 1 {
				t.Fatalf("acme's batch: %v, %d documents", st, len(docs))
			}
			fetched := web.count("/article")

			globex := func(body map[string]any) response { return ts.do("POST", "/v2/scrape", keyGlobex, body) }
			for _, target := range []string{u, v} {
				if r := globex(map[string]any{"url": target, "lockdown": true}); r.Status != 404 || r.str("code") != "SCRAPE_LOCKDOWN_CACHE_MISS" {
					t.Errorf("globex's lockdown of acme's page %s: %d %.300s", target, r.Status, r.Raw)
				}
				if r := globex(map[string]any{"url": target, "minAge": 1}); r.Status != 404 || r.str("code") != "SCRAPE_NO_CACHED_DATA" {
					t.Errorf("globex's minAge of acme's page %s: %d %.300s", target, r.Status, r.Raw)
				}
			}
			r := globex(map[string]any{"url": u, "maxAge": 3600000})
			if r.Status != 200 || meta(r)["cacheState"] != "miss" || web.count("/article") != fetched+1 {
				t.Fatalf("globex's scrape of acme's page: %d %v, target fetched %d times (was %d)", r.Status, meta(r)["cacheState"],
					web.count("/article"), fetched)
			}
			// Each team now has its own entry.
			if r := globex(map[string]any{"url": u, "lockdown": true}); r.Status != 200 || meta(r)["cacheState"] != "hit" {
				t.Errorf("globex's own entry: %d %.300s", r.Status, r.Raw)
			}
			if r := ts.scrape(map[string]any{"url": u}); meta(r)["cacheState"] != "hit" || web.count("/article") != fetched+1 {
				t.Errorf("acme's own entry: %d %v", r.Status, meta(r)["cacheState"])
			}
		})
	}
}

// TestJobsRefuseBlockedTargetsAtCreation: a crawl, batch or map that could
// not fetch its start page, and a webhook that could never be delivered,
// are refused when asked for, not accepted and failed page by page.
func TestJobsRefuseBlockedTargetsAtCreation(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	ts := start(t, map[string]string{"TRAWLER_WARM_BROWSERS": "0"})
	loopback := web.URL + "/article"
	const unresolved = "http://nowhere.invalid/" // not blocked: the guard cannot judge it, the page reports it

	for _, tc := range []struct {
		name, path string
		body       map[string]any
	}{
		{"crawl", "/v2/crawl", map[string]any{"url": loopback}},
		{"crawl of localhost", "/v2/crawl", map[string]any{"url": "http://localhost:1/"}},
		{"map", "/v2/map", map[string]any{"url": "http://169.254.169.254/latest/meta-data/"}},
		{"batch", "/v2/batch/scrape", map[string]any{"urls": []string{loopback}}},
		{"batch, every URL blocked", "/v2/batch/scrape", map[string]any{"urls": []string{loopback, "http://10.0.0.1/"}, "ignoreInvalidURLs": false}},
	} {
		r := ts.do("POST", tc.path, keyAcme, tc.body)
		if r.Status != 403 || r.str("code") != "URL_BLOCKED" || !strings.Contains(r.str("error"), "TRAWLER_ALLOW_PRIVATE_NETWORKS") {
			t.Errorf("%s: %d %s, want 403 URL_BLOCKED", tc.name, r.Status, r.Raw)
		}
	}

	// A batch's blocked URLs are invalid ones: skipped and listed, or a 400.
	r := ts.do("POST", "/v2/batch/scrape", keyAcme, map[string]any{"urls": []string{loopback, unresolved, "nope"}})
	if r.Status != 200 || fmt.Sprint(r.Body["invalidURLs"]) != fmt.Sprintf("[nope %s]", loopback) {
		t.Errorf("batch with a blocked URL: %d %s, want 200 listing it in invalidURLs", r.Status, r.Raw)
	} else if st := ts.do("GET", "/v2/batch/scrape/"+r.str("id"), keyAcme, nil); st.Body["total"] != float64(1) {
		t.Errorf("the batch holds %v URLs, want only the one not blocked", st.Body["total"])
	}
	r = ts.do("POST", "/v2/batch/scrape", keyAcme, map[string]any{"urls": []string{unresolved, loopback}, "ignoreInvalidURLs": false})
	if r.Status != 400 || r.str("code") != "BAD_REQUEST" || !strings.Contains(r.str("error"), fmt.Sprintf("urls[1] %q", loopback)) ||
		!strings.Contains(r.str("error"), "loopback") {
		t.Errorf("batch with a blocked URL and ignoreInvalidURLs false: %d %s, want a 400 naming urls[1]", r.Status, r.Raw)
	}

	// A webhook the guard refuses is a 400 naming the field that gave it.
	hook := "http://127.0.0.1:1/hook"
	for _, tc := range []struct {
		name, path string
		body       map[string]any
		field      string
	}{
		{"crawl, webhook string", "/v2/crawl", map[string]any{"url": unresolved, "webhook": hook}, "webhook"},
		{"crawl, webhook object", "/v2/crawl", map[string]any{"url": unresolved, "webhook": map[string]any{"url": hook, "events": []string{"completed"}}}, "webhook.url"},
		{"batch, webhook object", "/v2/batch/scrape", map[string]any{"urls": []string{unresolved}, "webhook": map[string]any{"url": "http://[::1]/hook"}}, "webhook.url"},
		{"batch, webhook string", "/v2/batch/scrape", map[string]any{"urls": []string{unresolved}, "webhook": "http://localhost/hook"}, "webhook"},
	} {
		r := ts.do("POST", tc.path, keyAcme, tc.body)
		details, _ := r.Body["details"].([]any)
		path := ""
		if len(details) == 1 {
			p, _ := details[0].(map[string]any)["path"].([]any)
			path = strings.Trim(strings.ReplaceAll(fmt.Sprint(p), " ", "."), "[]")
		}
		if r.Status != 400 || r.str("code") != "BAD_REQUEST" || path != tc.field || !strings.HasPrefix(r.str("error"), tc.field+" is refused") {
			t.Errorf("%s: %d %s, want a 400 naming %s", tc.name, r.Status, r.Raw, tc.field)
		}
	}
	assert.Zero(t, web.count("/article"), "times a blocked target was contacted")
}
