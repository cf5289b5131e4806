package service_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/test/polltest"
)

// Every request field is checked against the spec's rules, and the message
// names the field and the rule.
func TestValidation(t *testing.T) {
	t.Parallel()
	ts := start(t, map[string]string{"TRAWLER_WARM_BROWSERS": "1"})
	s := ts.create(keyAcme, nil)
	exec := "/v2/browser/" + s.str("id") + "/execute"
	long := strings.Repeat("p", 129)

	for _, tc := range []struct {
		name, method, path string
		body               any
		status             int
		code, want         string // want: a fragment of the error message
	}{
		{"ttl below range", "POST", "/v2/browser", map[string]any{"ttl": 29}, 400, "BAD_REQUEST", "ttl must be between 30 and 3600"},
		{"ttl above range", "POST", "/v2/browser", map[string]any{"ttl": 3601}, 400, "BAD_REQUEST", "ttl must be between 30 and 3600"},
		{"ttl not integer", "POST", "/v2/browser", map[string]any{"ttl": 30.5}, 400, "BAD_REQUEST", "ttl must be an integer"},
		{"ttl string", "POST", "/v2/browser", map[string]any{"ttl": "60"}, 400, "BAD_REQUEST", "ttl must be an integer"},
		{"activityTtl below", "POST", "/v2/browser", map[string]any{"activityTtl": 9}, 400, "BAD_REQUEST", "activityTtl must be between 10 and 3600"},
		{"activityTtl above", "POST", "/v2/browser", map[string]any{"activityTtl": 3601}, 400, "BAD_REQUEST", "activityTtl must be between 10 and 3600"},
		{"both ranges", "POST", "/v2/browser", map[string]any{"ttl": 1, "activityTtl": 1}, 400, "BAD_REQUEST", "ttl must be between 30 and 3600; activityTtl must be between 10 and 3600"},
		{"streamWebView type", "POST", "/v2/browser", map[string]any{"streamWebView": "yes"}, 400, "BAD_REQUEST", "streamWebView must be a boolean"},
		{"profile without name", "POST", "/v2/browser", map[string]any{"profile": map[string]any{}}, 400, "BAD_REQUEST", "profile.name is required"},
		{"profile empty name", "POST", "/v2/browser", map[string]any{"profile": map[string]any{"name": ""}}, 400, "BAD_REQUEST", "profile.name: profile name must not be empty"},
		{"profile long name", "POST", "/v2/browser", map[string]any{"profile": map[string]any{"name": long}}, 400, "BAD_REQUEST", "profile.name: profile name must be at most 128 characters"},
		{"profile name characters", "POST", "/v2/browser", map[string]any{"profile": map[string]any{"name": "a/b"}}, 400, "BAD_REQUEST", "may contain only letters, digits"},
		{"profile saveChanges type", "POST", "/v2/browser", map[string]any{"profile": map[string]any{"name": "x", "saveChanges": "no"}}, 400, "BAD_REQUEST", "profile.saveChanges must be a boolean"},
		{"profile unknown key", "POST", "/v2/browser", map[string]any{"profile": map[string]any{"name": "x", "color": 1}}, 400, "BAD_REQUEST", `unknown key "color"`},
		{"unknown key", "POST", "/v2/browser", map[string]any{"ttl": 60, "timeToLive": 5}, 400, "BAD_REQUEST", `unknown key "timeToLive"`},
		{"not an object", "POST", "/v2/browser", "[1,2]", 400, "BAD_REQUEST", "request body must be a JSON object"},
		{"malformed JSON", "POST", "/v2/browser", `{"ttl": 60,`, 400, "BAD_REQUEST_INVALID_JSON", "not valid JSON"},
		{"trailing data", "POST", "/v2/browser", `{"ttl": 60} {}`, 400, "BAD_REQUEST_INVALID_JSON", "nothing after it"},
		{"bad status filter", "GET", "/v2/browser?status=alive", nil, 400, "BAD_REQUEST", "status must be active or destroyed"},
		{"unknown session", "GET", "/v2/browser/00000000-0000-0000-0000-000000000000", nil, 404, "NOT_FOUND", "not found"},
		{"execute without code", "POST", exec, map[string]any{"language": "js"}, 400, "BAD_REQUEST", "code is required"},
		{"execute empty code", "POST", exec, map[string]any{"code": ""}, 400, "BAD_REQUEST", "code is required"},
		{"execute bash off", "POST", exec, map[string]any{"code": "ls", "language": "bash"}, 400, "BAD_REQUEST", "language bash needs the execute sandbox, which is off on this server: its operator enables it with TRAWLER_EXECUTE=docker"},
		{"execute python", "POST", exec, map[string]any{"code": "print(1)", "language": "python"}, 400, "BAD_REQUEST", "language python is not supported: the languages are js"},
		{"execute ruby", "POST", exec, map[string]any{"code": "1", "language": "ruby"}, 400, "BAD_REQUEST", `language must be js, node or bash, got "ruby"`},
		{"execute timeout 0", "POST", exec, map[string]any{"code": "1", "timeout": 0}, 400, "BAD_REQUEST", "timeout must be between 1 and 300"},
		{"execute timeout big", "POST", exec, map[string]any{"code": "1", "timeout": 301}, 400, "BAD_REQUEST", "timeout must be between 1 and 300"},
		{"execute unknown key", "POST", exec, map[string]any{"code": "1", "args": []int{1}}, 400, "BAD_REQUEST", `unknown key "args"`},
		{"activity limit 0", "GET", "/v2/team/activity?limit=0", nil, 400, "BAD_REQUEST", "limit must be an integer between 1 and 100"},
		{"activity limit 101", "GET", "/v2/team/activity?limit=101", nil, 400, "BAD_REQUEST", "limit must be an integer between 1 and 100"},
		{"activity limit text", "GET", "/v2/team/activity?limit=ten", nil, 400, "BAD_REQUEST", "limit must be an integer between 1 and 100"},
		{"activity endpoint", "GET", "/v2/team/activity?endpoint=browse", nil, 400, "BAD_REQUEST", "endpoint must be one of"},
		{"activity cursor", "GET", "/v2/team/activity?cursor=bogus!", nil, 400, "BAD_REQUEST", "cursor must be a value returned"},
		{"unknown route", "GET", "/v2/nothing-here", nil, 404, "NOT_FOUND", "no such endpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.do(tc.method, tc.path, keyAcme, tc.body)
			if r.Status != tc.status || r.str("code") != tc.code || !strings.Contains(r.str("error"), tc.want) || r.Body["success"] != false {
				t.Fatalf("got %d %s\nwant %d %s with %q", r.Status, r.Raw, tc.status, tc.code, tc.want)
			}
		})
	}

	// What clients inject, and nulls, are accepted.
	r := ts.do("POST", "/v2/browser", keyAcme, map[string]any{"ttl": nil, "origin": "js-sdk@4.42.0", "integration": "n8n", "streamWebView": false})
	require.Equal(t, 200, r.Status, "origin/integration/null: %s", r.Raw)
	if g := ts.do("GET", "/v2/browser/"+r.str("id"), keyAcme, nil); g.Body["ttl"] != float64(300) || g.Body["activityTtl"] != float64(300) || g.Body["streamWebView"] != false {
		t.Fatalf("defaults: %s", g.Raw)
	}
	// A body over 10 MB is refused before it is read whole.
	big := `{"origin":"` + strings.Repeat("a", 11<<20) + `"}`
	if r := ts.do("POST", "/v2/browser", keyAcme, big); r.Status != 413 || r.str("code") != "PAYLOAD_TOO_LARGE" {
		t.Fatalf("11 MB body: %d %.200s", r.Status, r.Raw)
	}
}

func TestActivityPaging(t *testing.T) {
	t.Parallel()
	ts := start(t, map[string]string{"TRAWLER_WARM_BROWSERS": "1", "TRAWLER_TEAM_CONCURRENCY": "6"})
	var ids []string
	for i := 0; i < 5; i++ {
		r := ts.create(keyAcme, nil)
		ids = append(ids, r.str("id"))
		ts.do("DELETE", "/v2/browser/"+r.str("id"), keyAcme, nil)
	}
	seen := map[string]bool{}
	cursor := ""
	pages := 0
	for {
		path := "/v2/team/activity?limit=2&endpoint=browser"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		r := ts.do("GET", path, keyAcme, nil)
		require.Equal(t, 200, r.Status, "%s: %s", path, r.Raw)
		pages++
		for _, e := range r.Body["data"].([]any) {
			id := e.(map[string]any)["id"].(string)
			require.False(t, seen[id], "entry %s listed twice", id)
			seen[id] = true
		}
		if r.Body["has_more"] != true {
			require.Nil(t, r.Body["cursor"], "last page with a cursor: %s", r.Raw)
			break
		}
		cursor = r.str("cursor")
	}
	if pages != 3 || len(seen) != 5 {
		t.Fatalf("%d pages, %d entries; want 3 pages of 5 entries", pages, len(seen))
	}
	// Newest first.
	first := ts.do("GET", "/v2/team/activity?limit=1", keyAcme, nil)
	require.Equal(t, ids[4], first.Body["data"].([]any)[0].(map[string]any)["id"], "first entry is not the newest: %s", first.Raw)
}

func TestHealthAndMetrics(t *testing.T) {
	t.Parallel()
	ts := start(t, nil)
	r := ts.do("GET", "/healthz", "", nil)
	require.Equal(t, 200, r.Status, "/healthz")
	require.Equal(t, "ok", r.Body["store"].(map[string]any)["state"], "/healthz: %s", r.Raw)
	ts.create(keyAcme, nil)
	polltest.Until(t, 20*time.Second, "the pool to refill", func() bool { return ts.Pool.Stats().Idle == 1 })
	r = ts.do("GET", "/metrics", "", nil)
	body := string(r.Raw)
	for _, want := range []string{"trawler_browsers_warm 1", "trawler_browsers_leased 1", "trawler_pool_waiters 0", `trawler_sessions{status="active"} 1`,
		`trawler_store_failures_total{kind="full"} 0`} {
		require.Contains(t, body, want, "/metrics")
	}
}
