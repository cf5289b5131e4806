package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/minio/minio-go/v7"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/profiles/miniotest"
	"github.com/trawler-dev/trawler/test/pgdb"
)

// recordedSite is a form whose name field the test types into, on
// loopback.
func recordedSite(t *testing.T) *httptest.Server {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>Form %s</title><input id="name"><input id="pw" type="password">
			<p id="out"></p><script>document.getElementById('name').addEventListener('input', e => {
			document.getElementById('out').textContent = 'hello ' + e.target.value; console.log('typed', e.target.value); });</script>`, r.URL.Path)
	}))
	t.Cleanup(site.Close)
	return site
}

// replayEvents reads every event of one recorded tab, following next.
func replayEvents(t *testing.T, ts *testService, key, id, page string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for next := "/v2/browser/" + id + "/replay/" + page; next != ""; {
		r := ts.do("GET", strings.TrimPrefix(next, ts.URL), key, nil)
		require.Equal(t, 200, r.Status, "GET %s: %s", next, r.Raw)
		for _, e := range r.Body["events"].([]any) {
			out = append(out, e.(map[string]any))
		}
		next, _ = r.Body["next"].(string)
	}
	return out
}

func typeInto(t *testing.T, cdpURL, url, text string) {
	drive(t, cdpURL, func(ctx context.Context) error {
		return chromedp.Do(ctx, chromedp.Navigate(url), chromedp.SendKeys("#name", text), chromedp.SendKeys("#pw", "s3cret-pass"),
			chromedp.WaitVisible(`//p[@id="out" and text()="hello `+text+`"]`))
	})
}

// TestSessionRecording: a recorded session's events are readable while it
// runs (a crash loses at most the last fetch), after it ends and after the
// service restarts; it is billed for the recording; another team, a wrong
// token and bad arguments are refused.
func TestSessionRecording(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	env := map[string]string{"TRAWLER_DATA_DIR": dir, "TRAWLER_ALLOW_PRIVATE_NETWORKS": "true",
		"TRAWLER_TEAM_FEATURES": "globex:recordSessions+zeroDataRetention"}
	ts, stop := startOwned(t, env)
	site := recordedSite(t)

	for _, c := range []struct {
		key  string
		body map[string]any
		code int
		want string
	}{
		{keyAcme, map[string]any{"recording": "yes"}, 400, "recording"},
		{keyGlobex, map[string]any{"recording": true, "zeroDataRetention": true}, 400, "cannot be combined with zeroDataRetention"},
		{keyAcme, map[string]any{"zeroDataRetention": true}, 403, "zeroDataRetention is not enabled"},
	} {
		r := ts.do("POST", "/v2/browser", c.key, c.body)
		assert.Equal(t, c.code, r.Status, "POST /v2/browser %v: %s", c.body, r.Raw)
		assert.Contains(t, string(r.Raw), c.want, "POST /v2/browser %v", c.body)
	}
	// globex records by default (recordSessions), unless it asks not to or
	// asks for zero data retention.
	for body, want := range map[string]bool{`{}`: true, `{"recording": false}`: false, `{"zeroDataRetention": true}`: false} {
		var b map[string]any
		require.NoError(t, json.Unmarshal([]byte(body), &b))
		r := ts.create(keyGlobex, b)
		assert.Equal(t, want, r.Body["recording"], "globex's session %s", body)
		ts.do("DELETE", "/v2/browser/"+r.str("id"), keyGlobex, nil)
	}

	s := ts.create(keyAcme, map[string]any{"recording": true})
	id := s.str("id")
	require.Equal(t, true, s.Body["recording"], "%s", s.Raw)
	replayURL := s.str("replayUrl")
	require.Contains(t, replayURL, "/replay/"+id+"?token=")
	typeInto(t, s.str("cdpUrl"), site.URL+"/one", "Ada")

	// Written as it runs: the typing is readable within a second or so.
	var page string
	require.Eventually(t, func() bool {
		r := ts.do("GET", "/v2/browser/"+id+"/replay", keyAcme, nil)
		if r.Status != 200 || r.Body["status"] != "recording" {
			return false
		}
		for _, p := range r.Body["pages"].([]any) {
			p := p.(map[string]any)
			if strings.HasPrefix(p["url"].(string), site.URL+"/one") {
				page = p["id"].(string)
			}
		}
		return page != "" && strings.Contains(string(r.Raw), `"text":"Ada"`)
	}, 3*time.Second, 100*time.Millisecond, "the typing is not in the recording while the session runs")

	assert.Equal(t, 404, ts.do("GET", "/v2/browser/"+id+"/replay", keyGlobex, nil).Status, "another team reads the recording")
	assert.Equal(t, 404, ts.do("GET", "/v2/browser/"+id+"/replay/nosuchpage", keyAcme, nil).Status, "an unknown page")
	bad := ts.do("GET", "/v2/browser/"+id+"/replay?cursor=x", keyAcme, nil)
	assert.Equal(t, 400, bad.Status, "a made-up cursor: %s", bad.Raw)
	assert.Contains(t, string(bad.Raw), "cursor")
	resp, err := http.Get(strings.Replace(replayURL, "?token=", "?token=x", 1))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 401, resp.StatusCode, "the replay page with a wrong token")
	resp, err = http.Get(replayURL)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode, "the replay page")
	assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'self'", "the replay page's CSP")

	del := ts.do("DELETE", "/v2/browser/"+id, keyAcme, nil)
	require.Equal(t, 200, del.Status, "%s", del.Raw)
	assert.Equal(t, float64(3), del.Body["creditsBilled"], "a recorded minute costs the browser's 2 credits and the recording's 1")

	// After a restart, on the same data directory.
	stop()
	ts, _ = startOwned(t, env)
	events := replayEvents(t, ts, keyAcme, id, page)
	raw, _ := json.Marshal(events)
	assert.NotContains(t, string(raw), "s3cret-pass", "the password is in the recording")
	var snapshots, inputs int
	var consoled, requested bool
	for _, e := range events {
		switch e["type"] {
		case float64(2):
			snapshots++
		case float64(3):
			if d := e["data"].(map[string]any); d["source"] == float64(5) && d["text"] == "Ada" {
				inputs++
			}
		case float64(5):
			d := e["data"].(map[string]any)
			p := d["payload"].(map[string]any)
			consoled = consoled || (d["tag"] == "trawler/console" && p["text"] == "typed Ada")
			requested = requested || (d["tag"] == "trawler/network" && p["url"] == site.URL+"/one" && p["status"] == float64(200))
		}
	}
	assert.GreaterOrEqual(t, snapshots, 1, "a full snapshot of the page")
	assert.GreaterOrEqual(t, inputs, 1, "the typed name as an input event")
	assert.True(t, consoled, "the page's console message")
	assert.True(t, requested, "the page's request")
	r := ts.do("GET", "/v2/browser/"+id+"/replay", keyAcme, nil)
	assert.Equal(t, "completed", r.Body["status"], "%s", r.Raw[:min(len(r.Raw), 300)])
	assert.Equal(t, 200, ts.do("GET", "/v2/browser/"+id, keyAcme, nil).Status)

	plain := ts.create(keyAcme, nil)
	assert.Equal(t, false, plain.Body["recording"])
	none := ts.do("GET", "/v2/browser/"+plain.str("id")+"/replay", keyAcme, nil)
	assert.Equal(t, 404, none.Status)
	assert.Contains(t, string(none.Raw), "was not recorded")
	ts.do("DELETE", "/v2/browser/"+plain.str("id"), keyAcme, nil)
}

// TestRecordingInMinIO: with TRAWLER_RECORDINGS naming a bucket, the
// events are objects there and the database holds their index.
func TestRecordingInMinIO(t *testing.T) {
	t.Parallel()
	m := miniotest.Start(t)
	env := m.Env("trawler-recordings")
	delete(env, "TRAWLER_PROFILES")
	env["TRAWLER_RECORDINGS"] = "s3://trawler-recordings/rec/"
	env["TRAWLER_ALLOW_PRIVATE_NETWORKS"] = "true"
	ts := start(t, env)
	site := recordedSite(t)
	s := ts.create(keyAcme, map[string]any{"recording": true})
	id := s.str("id")
	typeInto(t, s.str("cdpUrl"), site.URL+"/two", "Grace")
	require.Equal(t, 200, ts.do("DELETE", "/v2/browser/"+id, keyAcme, nil).Status)

	client, err := m.Client()
	require.NoError(t, err)
	var objects int
	for o := range client.ListObjects(context.Background(), "trawler-recordings", minio.ListObjectsOptions{Prefix: "rec/acme/" + id + "/", Recursive: true}) {
		require.NoError(t, o.Err)
		objects++
	}
	assert.Greater(t, objects, 0, "no chunk in the bucket")
	r := ts.do("GET", "/v2/browser/"+id+"/replay", keyAcme, nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	assert.Contains(t, string(r.Raw), `"text":"Grace"`, "the events read back from the bucket")
	assert.Contains(t, string(r.Raw), `"pageId":`, "a replay of every tab names each event's tab")
}

// TestRecordingServedByAnyNode: a session recorded on node A is replayed
// by node B, which shares its PostgreSQL, while it runs. make
// test-postgres runs it.
func TestRecordingServedByAnyNode(t *testing.T) {
	if !pgdb.Enabled() {
		t.Skip(pgdb.Env + " is not set: make test-postgres runs this test on a throwaway PostgreSQL")
	}
	env := map[string]string{"TRAWLER_DATABASE_URL": pgdb.For(t, "shared"), "TRAWLER_ALLOW_PRIVATE_NETWORKS": "true", "TRAWLER_WARM_BROWSERS": "0"}
	a, b := start(t, env), start(t, env)
	site := recordedSite(t)
	s := a.create(keyAcme, map[string]any{"recording": true})
	id := s.str("id")
	typeInto(t, s.str("cdpUrl"), site.URL+"/three", "Lin")
	require.Eventually(t, func() bool {
		r := b.do("GET", "/v2/browser/"+id+"/replay", keyAcme, nil)
		return r.Status == 200 && strings.Contains(string(r.Raw), `"text":"Lin"`)
	}, 5*time.Second, 100*time.Millisecond, "node B does not serve node A's recording")
	resp, err := http.Get(strings.Replace(s.str("replayUrl"), a.URL, b.URL, 1))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode, "node B's replay page")
	require.Equal(t, 200, a.do("DELETE", "/v2/browser/"+id, keyAcme, nil).Status)
}
