package service_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/model/modeltest"
	"github.com/trawler-dev/trawler/test/pgdb"
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

// checksOf lists monitor id's checks, newest first.
func (ts *testService) checksOf(key, id string) []map[string]any {
	ts.t.Helper()
	r := ts.do("GET", "/v2/monitor/"+id+"/checks?limit=100", key, nil)
	require.Equal(ts.t, 200, r.Status, "%s", r.Raw)
	var list struct{ Data []map[string]any }
	require.NoError(ts.t, json.Unmarshal(r.Raw, &list))
	return list.Data
}

// finished counts the checks that are done.
func finished(checks []map[string]any) int {
	n := 0
	for _, c := range checks {
		if s := c["status"]; s != "queued" && s != "running" {
			n++
		}
	}
	return n
}

// A monitor runs at each due time of its schedule, once, and stops when
// paused; a monitor whose pages keep failing backs off and says so.
func TestMonitorRunsOnSchedule(t *testing.T) {
	site := newChangingSite(t)
	site.set("/p", 200, "<h1>P</h1><p>steady text</p>")
	hooks := newHookLog(t)
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true", "TRAWLER_MONITOR_MIN_INTERVAL": "1s"})

	r := ts.do("POST", "/v2/monitor", keyAcme, map[string]any{
		"name": "every 2s", "schedule": map[string]any{"cron": "*/2 * * * * *"},
		"targets": []any{map[string]any{"type": "scrape", "urls": []string{site.URL + "/p"}}},
		"webhook": map[string]any{"url": hooks.addr, "events": []string{"monitor.check.completed"}},
	})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	id := data(r)["id"].(string)
	polltest.Until(t, 30*time.Second, "three scheduled checks", func() bool { return finished(ts.checksOf(keyAcme, id)) >= 3 })
	r = ts.do("PATCH", "/v2/monitor/"+id, keyAcme, map[string]any{"status": "paused"})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	assert.Nil(t, data(r)["nextRunAt"], "a paused monitor has no next run")
	polltest.Until(t, 30*time.Second, "the last check to finish", func() bool {
		cs := ts.checksOf(keyAcme, id)
		return finished(cs) == len(cs)
	})
	checks := ts.checksOf(keyAcme, id)
	time.Sleep(3 * time.Second)
	assert.Len(t, ts.checksOf(keyAcme, id), len(checks), "no run while paused")

	var due []time.Time
	for i := len(checks) - 1; i >= 0; i-- {
		c := checks[i]
		assert.Equal(t, "scheduled", c["trigger"])
		assert.Equal(t, false, c["late"])
		assert.Equal(t, "completed", c["status"], "%v", c)
		at, err := time.Parse(time.RFC3339Nano, c["scheduledFor"].(string))
		require.NoError(t, err)
		assert.Zero(t, at.Second()%2, "a due time of */2: %s", at)
		if len(due) > 0 {
			assert.Equal(t, 2*time.Second, at.Sub(due[len(due)-1]), "each due time once, none skipped")
		}
		due = append(due, at)
	}
	sums := []string{}
	for i := len(checks) - 1; i >= 0; i-- {
		s := checks[i]["summary"].(map[string]any)
		sums = append(sums, map[bool]string{true: "new", false: "same"}[s["new"] == 1.0])
	}
	assert.Equal(t, "new", sums[0])
	for _, s := range sums[1:] {
		assert.Equal(t, "same", s)
	}
	polltest.Until(t, 30*time.Second, "a webhook per check", func() bool {
		return len(hooks.ofType("monitor.check.completed")) >= len(checks)
	})
	time.Sleep(300 * time.Millisecond)
	seen := map[any]int{}
	for _, h := range hooks.ofType("monitor.check.completed") {
		seen[h["data"].([]any)[0].(map[string]any)["checkId"]]++
	}
	for _, c := range checks {
		assert.Equal(t, 1, seen[c["id"]], "one webhook for check %v", c["id"])
	}
	assert.Len(t, seen, len(checks))

	// Failing pages: the first two failures keep the schedule, then the
	// runs are put off, twice the interval and doubling.
	site.set("/p", 500, "down")
	r = ts.do("PATCH", "/v2/monitor/"+id, keyAcme, map[string]any{"status": "active",
		"schedule": map[string]any{"cron": "* * * * * *"}})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	before := len(checks)
	var m map[string]any
	polltest.Until(t, 30*time.Second, "three failed checks", func() bool {
		m = data(ts.do("GET", "/v2/monitor/"+id, keyAcme, nil))
		return m["consecutiveFailures"].(float64) >= 3
	})
	assert.Contains(t, m["warning"], "checks failed")
	next, err := time.Parse(time.RFC3339Nano, m["nextRunAt"].(string))
	require.NoError(t, err)
	last, err := time.Parse(time.RFC3339Nano, m["lastRunAt"].(string))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, next.Sub(last), 3*time.Second, "three failures: four times the interval")
	failed := ts.checksOf(keyAcme, id)[:len(ts.checksOf(keyAcme, id))-before]
	for _, c := range failed {
		if c["status"] != "running" && c["status"] != "queued" {
			assert.Equal(t, "failed", c["status"])
			assert.Contains(t, c["error"], "every page failed")
		}
	}
	assert.Equal(t, 200, ts.do("DELETE", "/v2/monitor/"+id, keyAcme, nil).Status)
}

// With a goal, the model judges each changed page's diff against it; the
// check says whether the change matters and why, and the judgment costs
// 4 credits a page.
func TestMonitorGoal(t *testing.T) {
	site := newChangingSite(t)
	page := func(pro, date string) string {
		return "<h1>Pricing</h1><p>Updated " + date + "</p><ul><li>Starter: $9/mo</li><li>Pro: " + pro + "/mo</li></ul>"
	}
	site.set("/pricing", 200, page("$29", "May 1"))
	llm := modeltest.Start(t)
	llm.Respond(func(q modeltest.Request) modeltest.Reply {
		if strings.Contains(q.User(), "+- Pro:") || strings.Contains(q.User(), "+ - Pro:") || regexp.MustCompile(`(?m)^\+.*Pro: \$`).MatchString(q.User()) {
			return modeltest.Reply{Content: `{"meaningful": true, "confidence": "high", "reason": "the Pro price went up",
				"meaningfulChanges": [{"type": "changed", "before": "Pro: $29/mo", "after": "Pro: $39/mo", "reason": "price"}]}`}
		}
		return modeltest.Reply{Content: `{"meaningful": false, "confidence": "high", "reason": "only the date changed", "meaningfulChanges": []}`}
	})
	ts := startWithModel(t, llm, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true"})
	r := ts.do("POST", "/v2/monitor", keyAcme, map[string]any{
		"name": "prices", "schedule": map[string]any{"text": "hourly"}, "goal": "tell me when the Pro price changes",
		"targets": []any{map[string]any{"type": "scrape", "urls": []string{site.URL + "/pricing"}}},
	})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	id := data(r)["id"].(string)
	assert.Equal(t, true, data(r)["judgeEnabled"])

	first := ts.runCheck(keyAcme, id)
	assert.Equal(t, map[string]string{"/pricing": "new"}, pageStatuses(first, site.URL))
	assert.Empty(t, llm.Requests(), "a new page is not judged")

	judged := func(check map[string]any) map[string]any {
		p := check["pages"].([]any)[0].(map[string]any)
		require.Equal(t, "changed", p["status"], "%v", p)
		j, _ := p["judgment"].(map[string]any)
		require.NotNil(t, j, "%v", p)
		return j
	}
	site.set("/pricing", 200, page("$29", "May 2"))
	second := ts.runCheck(keyAcme, id)
	j := judged(second)
	assert.Equal(t, false, j["meaningful"])
	assert.Equal(t, "only the date changed", j["reason"])
	require.Len(t, llm.Requests(), 1)
	q := llm.Requests()[0]
	assert.Contains(t, q.User(), "tell me when the Pro price changes")
	assert.Contains(t, q.User(), "+Updated May 2")

	site.set("/pricing", 200, page("$39", "May 2"))
	third := ts.runCheck(keyAcme, id)
	j = judged(third)
	assert.Equal(t, true, j["meaningful"])
	assert.Equal(t, "the Pro price went up", j["reason"])
	assert.Len(t, j["meaningfulChanges"], 1)
	assert.Equal(t, first["actualCredits"].(float64)+4, third["actualCredits"], "a judged page costs 4 credits more")
}

// Two nodes sharing one PostgreSQL database run each due time of a
// monitor once, whichever claims it, and send one webhook per check.
func TestMonitorOnTwoNodes(t *testing.T) {
	if !pgdb.Enabled() {
		t.Skip(pgdb.Env + " is not set: make test-postgres runs this test on a throwaway PostgreSQL")
	}
	site := newChangingSite(t)
	site.set("/p", 200, "<h1>P</h1><p>steady text</p>")
	hooks := newHookLog(t)
	env := map[string]string{"TRAWLER_DATABASE_URL": pgdb.For(t, "shared"), "TRAWLER_ALLOW_PRIVATE_NETWORKS": "true",
		"TRAWLER_WARM_BROWSERS": "0", "TRAWLER_MONITOR_MIN_INTERVAL": "1s"}
	a, b := start(t, env), start(t, env)
	r := a.do("POST", "/v2/monitor", keyAcme, map[string]any{
		"name": "shared", "schedule": map[string]any{"cron": "* * * * * *"},
		"targets": []any{map[string]any{"type": "scrape", "urls": []string{site.URL + "/p"}}},
		"webhook": map[string]any{"url": hooks.addr, "events": []string{"monitor.check.completed"}},
	})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	id := data(r)["id"].(string)
	polltest.Until(t, 30*time.Second, "six checks", func() bool { return finished(b.checksOf(keyAcme, id)) >= 6 })
	require.Equal(t, 200, b.do("PATCH", "/v2/monitor/"+id, keyAcme, map[string]any{"status": "paused"}).Status)
	polltest.Until(t, 30*time.Second, "the last check to finish", func() bool {
		cs := a.checksOf(keyAcme, id)
		return finished(cs) == len(cs)
	})
	checks := a.checksOf(keyAcme, id)
	seen := map[string]bool{}
	for _, c := range checks {
		at := c["scheduledFor"].(string)
		assert.False(t, seen[at], "due time %s run twice", at)
		seen[at] = true
		assert.Contains(t, []any{"completed"}, c["status"], "%v", c)
	}
	polltest.Until(t, 30*time.Second, "a webhook per check", func() bool {
		return len(hooks.ofType("monitor.check.completed")) >= len(checks)
	})
	time.Sleep(500 * time.Millisecond)
	assert.Len(t, hooks.ofType("monitor.check.completed"), len(checks), "one webhook per check")
}
