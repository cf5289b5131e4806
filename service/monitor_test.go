package service_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/test/polltest"
)

// hookLog collects the webhook bodies a local receiver got.
type hookLog struct {
	mu   sync.Mutex
	got  []map[string]any
	addr string
}

func newHookLog(t *testing.T) *hookLog {
	h := &hookLog{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m map[string]any
		json.Unmarshal(body, &m)
		h.mu.Lock()
		h.got = append(h.got, m)
		h.mu.Unlock()
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	h.addr = "http://" + ln.Addr().String() + "/hook"
	return h
}

func (h *hookLog) ofType(typ string) []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]any
	for _, m := range h.got {
		if m["type"] == typ {
			out = append(out, m)
		}
	}
	return out
}

// runCheck runs monitor id now and returns the finished check with its
// pages.
func (ts *testService) runCheck(key, id string) map[string]any {
	ts.t.Helper()
	r := ts.do("POST", "/v2/monitor/"+id+"/run", key, nil)
	require.Equal(ts.t, 200, r.Status, "%s", r.Raw)
	check := r.str("id")
	var got map[string]any
	polltest.Until(ts.t, 60*time.Second, "the check to finish", func() bool {
		r := ts.do("GET", "/v2/monitor/"+id+"/checks/"+check, key, nil)
		require.Equal(ts.t, 200, r.Status, "%s", r.Raw)
		got = data(r)
		s := got["status"]
		return s != "queued" && s != "running"
	})
	return got
}

// pageStatuses maps each page's path to its status.
func pageStatuses(check map[string]any, base string) map[string]string {
	out := map[string]string{}
	pages, _ := check["pages"].([]any)
	for _, p := range pages {
		m := p.(map[string]any)
		out[strings.TrimPrefix(m["url"].(string), base)] = m["status"].(string)
	}
	return out
}

func TestMonitorPagesAndSite(t *testing.T) {
	site := newChangingSite(t)
	site.set("/", 200, `<h1>Home</h1><a href="/a">a</a> <a href="/b">b</a>`)
	site.set("/a", 200, "<h1>A</h1><p>first text of a</p>")
	site.set("/b", 200, "<h1>B</h1><p>text of b</p>")
	hooks := newHookLog(t)
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true", "TRAWLER_MONITOR_MIN_INTERVAL": "1s"})

	r := ts.do("POST", "/v2/monitor", keyAcme, map[string]any{
		"name": "pages", "schedule": map[string]any{"text": "daily at 9:00", "timezone": "Europe/Berlin"},
		"targets": []any{map[string]any{"type": "scrape", "urls": []string{site.URL + "/a", site.URL + "/b"},
			"scrapeOptions": map[string]any{"maxAge": 3600000}}},
		"webhook": map[string]any{"url": hooks.addr, "metadata": map[string]any{"run": "x"}},
	})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	pagesID := data(r)["id"].(string)
	assert.Equal(t, map[string]any{"cron": "0 9 * * *", "timezone": "Europe/Berlin"}, data(r)["schedule"])
	next, err := time.Parse(time.RFC3339, data(r)["nextRunAt"].(string))
	require.NoError(t, err)
	assert.Contains(t, []int{7, 8}, next.UTC().Hour(), "9:00 in Berlin")

	first := ts.runCheck(keyAcme, pagesID)
	assert.Equal(t, "completed", first["status"])
	assert.Equal(t, map[string]string{"/a": "new", "/b": "new"}, pageStatuses(first, site.URL))

	site.set("/a", 200, "<h1>A</h1><p>second text of a</p>")
	site.set("/b", 404, "gone")
	second := ts.runCheck(keyAcme, pagesID)
	assert.Equal(t, map[string]string{"/a": "changed", "/b": "removed"}, pageStatuses(second, site.URL),
		"fetched fresh although scrapeOptions.maxAge allows an hour")
	for _, p := range second["pages"].([]any) {
		m := p.(map[string]any)
		if m["status"] == "changed" {
			diff := m["diff"].(map[string]any)
			assert.Contains(t, diff["text"], "-first text of a")
			assert.Contains(t, diff["text"], "+second text of a")
		}
	}
	site.set("/b", 200, "<h1>B</h1><p>text of b</p>")
	third := ts.runCheck(keyAcme, pagesID)
	assert.Equal(t, map[string]string{"/a": "same", "/b": "new"}, pageStatuses(third, site.URL))

	// The webhook: one check.completed per check, a page event for each
	// page that is not the same.
	polltest.Until(t, 30*time.Second, "the webhooks", func() bool {
		return len(hooks.ofType("monitor.check.completed")) == 3 && len(hooks.ofType("monitor.page")) == 5
	})
	time.Sleep(500 * time.Millisecond)
	assert.Len(t, hooks.ofType("monitor.check.completed"), 3, "one per check")
	for _, m := range hooks.ofType("monitor.check.completed") {
		assert.Equal(t, map[string]any{"run": "x"}, m["metadata"])
	}

	// The monitor shows the last summary; another team sees nothing.
	r = ts.do("GET", "/v2/monitor/"+pagesID, keyAcme, nil)
	sum := data(r)["lastCheckSummary"].(map[string]any)
	assert.Equal(t, map[string]any{"totalPages": 2.0, "same": 1.0, "new": 1.0, "changed": 0.0, "removed": 0.0, "error": 0.0}, sum)
	assert.Equal(t, 404, ts.do("GET", "/v2/monitor/"+pagesID, keyGlobex, nil).Status)
	assert.Equal(t, 404, ts.do("POST", "/v2/monitor/"+pagesID+"/run", keyGlobex, nil).Status)

	// A site monitor: a page the crawl no longer reaches is removed.
	r = ts.do("POST", "/v2/monitor", keyAcme, map[string]any{
		"name": "site", "schedule": map[string]any{"cron": "0 * * * *"},
		"targets": []any{map[string]any{"type": "crawl", "url": site.URL + "/", "crawlOptions": map[string]any{"limit": 10, "sitemap": "skip"}}},
	})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	siteID := data(r)["id"].(string)
	c1 := ts.runCheck(keyAcme, siteID)
	assert.Equal(t, map[string]string{"/": "new", "/a": "new", "/b": "new"}, pageStatuses(c1, site.URL))
	site.set("/", 200, `<h1>Home</h1><a href="/a">a</a>`)
	c2 := ts.runCheck(keyAcme, siteID)
	assert.Equal(t, map[string]string{"/": "changed", "/a": "same", "/b": "removed"}, pageStatuses(c2, site.URL))

	// Checks are listed, newest first.
	r = ts.do("GET", "/v2/monitor/"+siteID+"/checks", keyAcme, nil)
	require.Equal(t, 200, r.Status)
	var list struct{ Data []map[string]any }
	require.NoError(t, json.Unmarshal(r.Raw, &list))
	require.Len(t, list.Data, 2)
	assert.Equal(t, c2["id"], list.Data[0]["id"])

	assert.Equal(t, 200, ts.do("DELETE", "/v2/monitor/"+siteID, keyAcme, nil).Status)
	assert.Equal(t, 404, ts.do("GET", "/v2/monitor/"+siteID, keyAcme, nil).Status)
}

func TestMonitorValidation(t *testing.T) {
	ts := start(t, map[string]string{"TRAWLER_TEAM_FEATURES": "acme:zeroDataRetention"})
	target := []any{map[string]any{"type": "scrape", "urls": []string{"https://example.com/"}}}
	for _, c := range []struct {
		body   map[string]any
		status int
		want   string
	}{
		{map[string]any{"schedule": map[string]any{"text": "hourly"}, "targets": target}, 400, "name is required"},
		{map[string]any{"name": "x", "targets": target}, 400, "schedule is required"},
		{map[string]any{"name": "x", "schedule": map[string]any{"cron": "* * * * *"}, "targets": target}, 400, "TRAWLER_MONITOR_MIN_INTERVAL"},
		{map[string]any{"name": "x", "schedule": map[string]any{"text": "hourly", "timezone": "Mars/Base"}, "targets": target}, 400, "schedule.timezone"},
		{map[string]any{"name": "x", "schedule": map[string]any{"text": "hourly"}, "targets": []any{}}, 400, "targets must hold"},
		{map[string]any{"name": "x", "schedule": map[string]any{"text": "hourly"}, "targets": []any{map[string]any{"type": "scrape"}}}, 400, "targets[0].urls"},
		{map[string]any{"name": "x", "schedule": map[string]any{"text": "hourly"}, "targets": []any{map[string]any{"type": "search", "queries": []string{"q"}}}}, 400, "targets[0].type search"},
		{map[string]any{"name": "x", "schedule": map[string]any{"text": "hourly"}, "targets": target,
			"notification": map[string]any{"email": map[string]any{"enabled": true, "recipients": []string{"a@example.com"}}}}, 400, "notification.email"},
		{map[string]any{"name": "x", "schedule": map[string]any{"text": "hourly"}, "targets": target, "goal": "tell me"}, 400, "MODEL_NOT_CONFIGURED"},
		{map[string]any{"name": "x", "schedule": map[string]any{"text": "hourly"}, "targets": target, "zeroDataRetention": true}, 403, "zero data retention"},
		{map[string]any{"name": "x", "schedule": map[string]any{"text": "hourly"}, "targets": target,
			"webhook": map[string]any{"url": "http://x.example/", "events": []string{"page"}}}, 400, "webhook.events[0]"},
	} {
		r := ts.do("POST", "/v2/monitor", keyAcme, c.body)
		assert.Equal(t, c.status, r.Status, "%v: %s", c.body, r.Raw)
		assert.Contains(t, string(r.Raw), c.want, "%v", c.body)
	}
	assert.Equal(t, 404, ts.do("GET", "/v2/monitor/nope", keyAcme, nil).Status)
}
