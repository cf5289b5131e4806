package service_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/model/modeltest"
)

// changingSite is a local site whose pages a test rewrites between
// scrapes: each path answers the status and the main content last set.
type changingSite struct {
	*httptest.Server
	mu    sync.Mutex
	pages map[string]changingPage
}

type changingPage struct {
	status int
	body   string // inside <main>
}

func newChangingSite(t *testing.T) *changingSite {
	s := &changingSite{pages: map[string]changingPage{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		p, ok := s.pages[r.URL.Path]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(p.status)
		fmt.Fprintf(w, "<!doctype html><html><head><title>%s</title></head><body><main>%s<p>%s</p></main></body></html>",
			r.URL.Path, p.body, strings.Repeat("Enough words here for the page to be taken as server-rendered. ", 5))
	}))
	t.Cleanup(s.Close)
	return s
}

// set makes path answer status with body as its main content.
func (s *changingSite) set(path string, status int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pages[path] = changingPage{status, body}
}

// pricing is the main content of the site's pricing page.
func pricing(pro string) string {
	return "<h1>Pricing</h1><ul><li>Starter: $9/mo</li><li>Pro: " + pro + "/mo</li><li>Team: $99/mo</li></ul>"
}

// track is a scrape of u for key that asks for markdown and ct, always
// fetched (maxAge 0); it returns the document's changeTracking.
func (ts *testService) track(key, u string, ct map[string]any, extra map[string]any) (response, map[string]any) {
	ts.t.Helper()
	body := map[string]any{"url": u, "formats": []any{"markdown", ct}, "maxAge": 0}
	for k, v := range extra {
		body[k] = v
	}
	r := ts.do("POST", "/v2/scrape", key, body)
	require.Equal(ts.t, 200, r.Status, "%s", r.Raw)
	got, _ := data(r)["changeTracking"].(map[string]any)
	require.NotNil(ts.t, got, "changeTracking in %s", r.Raw)
	return r, got
}

// changes returns the changes of a changeTracking's diff, from its
// parse-diff structure.
func changes(t *testing.T, ct map[string]any) []map[string]any {
	t.Helper()
	diff, ok := ct["diff"].(map[string]any)
	require.True(t, ok, "a diff in %v", ct)
	files := diff["json"].(map[string]any)["files"].([]any)
	require.Len(t, files, 1)
	var out []map[string]any
	for _, c := range files[0].(map[string]any)["chunks"].([]any) {
		for _, ch := range c.(map[string]any)["changes"].([]any) {
			out = append(out, ch.(map[string]any))
		}
	}
	return out
}

// A page's life through scrapes: new, the same (also when only its
// whitespace changed), changed with the diff of its lines, removed, back.
func TestChangeTrackingScrape(t *testing.T) {
	t.Parallel()
	web := newChangingSite(t)
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true"})
	u := web.URL + "/pricing"
	gitDiff := map[string]any{"type": "changeTracking", "modes": []any{"git-diff"}}

	web.set("/pricing", 200, pricing("$29")+"<pre>ship  it\n\nnow</pre>")
	r, ct := ts.track(keyAcme, u, gitDiff, nil)
	assert.Equal(t, "new", ct["changeStatus"])
	assert.Nil(t, ct["previousScrapeAt"], "no previous scrape")
	assert.Contains(t, ct, "previousScrapeAt", "null, not left out")
	assert.Equal(t, "visible", ct["visibility"])
	assert.NotContains(t, ct, "diff")
	first := data(r)["markdown"].(string)
	assert.Contains(t, first, "Pro: $29/mo")
	assert.EqualValues(t, 1, meta(r)["creditsUsed"], "change tracking adds nothing")

	before := time.Now()
	_, ct = ts.track(keyAcme, u, gitDiff, nil)
	assert.Equal(t, "same", ct["changeStatus"])
	assert.NotContains(t, ct, "diff")
	prev, err := time.Parse(time.RFC3339, ct["previousScrapeAt"].(string))
	require.NoError(t, err, "previousScrapeAt is RFC 3339")
	assert.WithinDuration(t, before, prev, time.Minute, "the first scrape's time")

	// The code block keeps its whitespace in the Markdown; the page is the
	// same all the same.
	web.set("/pricing", 200, pricing("$29")+"<pre>ship it\nnow   </pre>")
	r, ct = ts.track(keyAcme, u, gitDiff, nil)
	require.NotEqual(t, first, data(r)["markdown"], "the Markdown changed in its whitespace")
	assert.Equal(t, "same", ct["changeStatus"], "whitespace only")

	web.set("/pricing", 200, pricing("$39")+"<pre>ship it\nnow   </pre>")
	_, ct = ts.track(keyAcme, u, gitDiff, nil)
	assert.Equal(t, "changed", ct["changeStatus"])
	diff := ct["diff"].(map[string]any)
	text := diff["text"].(string)
	assert.True(t, strings.HasPrefix(text, "--- previous\n+++ current\n@@ -"), "a unified diff: %q", text)
	assert.Contains(t, text, "\n-- Pro: $29/mo\n+- Pro: $39/mo\n")
	var del, add map[string]any
	for _, c := range changes(t, ct) {
		switch c["content"] {
		case "-- Pro: $29/mo":
			del = c
		case "+- Pro: $39/mo":
			add = c
		}
	}
	require.NotNil(t, del, "the deleted line in %v", diff["json"])
	require.NotNil(t, add, "the added line in %v", diff["json"])
	assert.Equal(t, "del", del["type"])
	assert.Equal(t, "add", add["type"])
	assert.Equal(t, del["ln"], add["ln"], "the line kept its number")

	web.set("/pricing", 404, "<h1>Not found</h1>")
	_, ct = ts.track(keyAcme, u, gitDiff, nil)
	assert.Equal(t, "removed", ct["changeStatus"])
	assert.NotNil(t, ct["previousScrapeAt"])

	web.set("/pricing", 200, pricing("$39"))
	_, ct = ts.track(keyAcme, u, gitDiff, nil)
	assert.Equal(t, "changed", ct["changeStatus"], "back after its removal")
	for _, c := range changes(t, ct) {
		assert.Equal(t, "add", c["type"], "a removed page had no content: every line is new")
	}

	// Without git-diff, the status alone; the document kept by id has it.
	r, ct = ts.track(keyAcme, u, map[string]any{"type": "changeTracking"}, nil)
	assert.Equal(t, "same", ct["changeStatus"])
	assert.NotContains(t, ct, "diff")
	kept := ts.do("GET", "/v2/scrape/"+meta(r)["scrapeId"].(string), keyAcme, nil)
	require.Equal(t, 200, kept.Status, "%s", kept.Raw)
	assert.Equal(t, ct, data(kept)["changeTracking"])

	// An answer from the cache is the page as it was fetched then, and
	// says so.
	web.set("/pricing", 200, pricing("$49"))
	r = ts.scrape(map[string]any{"url": u, "formats": []any{"markdown", gitDiff}})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	assert.Equal(t, "hit", meta(r)["cacheState"])
	assert.Equal(t, "same", data(r)["changeTracking"].(map[string]any)["changeStatus"])
	assert.Contains(t, data(r)["warning"], "changeTracking: the page came from the cache")
	assert.Contains(t, data(r)["warning"], "set maxAge to 0")
}

// Tags keep separate histories of a page, so does each team, and a scrape
// with zero data retention neither reads nor writes one.
func TestChangeTrackingHistories(t *testing.T) {
	t.Parallel()
	web := newChangingSite(t)
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true", "TRAWLER_TEAM_FEATURES": "acme:zeroDataRetention"})
	u := web.URL + "/pricing"
	plain := map[string]any{"type": "changeTracking"}
	tagged := func(tag string) map[string]any { return map[string]any{"type": "changeTracking", "tag": tag} }
	status := func(key string, ct map[string]any, extra map[string]any) string {
		t.Helper()
		_, got := ts.track(key, u, ct, extra)
		return got["changeStatus"].(string)
	}

	web.set("/pricing", 200, pricing("$29"))
	zdr := map[string]any{"zeroDataRetention": true}
	r, ct := ts.track(keyAcme, u, plain, zdr)
	assert.Equal(t, "new", ct["changeStatus"])
	assert.Contains(t, data(r)["warning"], "zero data retention", "the warning says why")
	assert.Equal(t, "new", status(keyAcme, plain, nil), "zero data retention wrote nothing")
	assert.Equal(t, "same", status(keyAcme, plain, nil))
	assert.Equal(t, "new", status(keyAcme, plain, zdr), "nor does it read")

	assert.Equal(t, "new", status(keyAcme, tagged("weekly"), nil), "a tag has its own history")
	assert.Equal(t, "new", status(keyGlobex, plain, nil), "a team has its own history")
	web.set("/pricing", 200, pricing("$39"))
	assert.Equal(t, "changed", status(keyAcme, tagged("weekly"), nil))
	assert.Equal(t, "new", status(keyAcme, tagged("daily"), nil))
	assert.Equal(t, "changed", status(keyAcme, plain, nil), "the default history compares with its own last scrape")
	assert.Equal(t, "same", status(keyAcme, tagged("weekly"), nil))
	assert.Equal(t, "changed", status(keyGlobex, plain, nil))
	assert.Equal(t, "same", status(keyGlobex, plain, nil))

	// The URL is normalised as the cache normalises it: a fragment does
	// not make another page.
	_, ct = ts.track(keyAcme, u+"#plans", plain, nil)
	assert.Equal(t, "same", ct["changeStatus"])
}

// The json mode compares what the model extracts with the format's schema
// from both versions, member by member; it asks only when the page
// changed, and never twice for a version.
func TestChangeTrackingJSONMode(t *testing.T) {
	t.Parallel()
	web := newChangingSite(t)
	llm := modeltest.Start(t)
	price := regexp.MustCompile(`Pro: \$(\d+)`)
	llm.Respond(func(q modeltest.Request) modeltest.Reply {
		return modeltest.Reply{Content: fmt.Sprintf(`{"starter": 9, "pro": %s}`, price.FindStringSubmatch(q.User())[1]),
			PromptTokens: 100, CompletionTokens: 10}
	})
	ts := startWithModel(t, llm, nil)
	u := web.URL + "/pricing"
	ct := map[string]any{"type": "changeTracking", "modes": []any{"git-diff", "json"}, "prompt": "the monthly prices",
		"schema": map[string]any{"type": "object", "properties": map[string]any{"starter": map[string]any{"type": "number"},
			"pro": map[string]any{"type": "number"}}, "required": []any{"starter", "pro"}}}
	calls := 0
	asked := func() int {
		n := len(llm.Requests()) - calls
		calls += n
		return n
	}

	web.set("/pricing", 200, pricing("$29"))
	_, got := ts.track(keyAcme, u, ct, nil)
	assert.Equal(t, "new", got["changeStatus"])
	assert.NotContains(t, got, "json")
	assert.Zero(t, asked(), "nothing to compare: the model is not asked")
	_, got = ts.track(keyAcme, u, ct, nil)
	assert.Equal(t, "same", got["changeStatus"])
	assert.Zero(t, asked(), "nothing changed: the model is not asked")

	web.set("/pricing", 200, pricing("$39"))
	_, got = ts.track(keyAcme, u, ct, nil)
	assert.Equal(t, "changed", got["changeStatus"])
	assert.Equal(t, map[string]any{"pro": map[string]any{"previous": float64(29), "current": float64(39)}}, got["json"])
	assert.Contains(t, got, "diff", "both modes")
	assert.Equal(t, 2, asked(), "both versions are read")
	for _, q := range llm.Requests() {
		assert.Contains(t, q.User(), "Request: the monthly prices")
		assert.Contains(t, q.User(), "# Pricing", "the model reads the Markdown")
		require.NotNil(t, q.ResponseFormat)
		assert.Equal(t, "json_schema", string(q.ResponseFormat.Type))
	}

	web.set("/pricing", 200, pricing("$49"))
	_, got = ts.track(keyAcme, u, ct, nil)
	assert.Equal(t, map[string]any{"pro": map[string]any{"previous": float64(39), "current": float64(49)}}, got["json"])
	assert.Equal(t, 1, asked(), "the previous version's extraction was kept")

	web.set("/pricing", 200, strings.Replace(pricing("$49"), "Team: $99", "Team: $109", 1))
	_, got = ts.track(keyAcme, u, ct, nil)
	assert.Equal(t, "changed", got["changeStatus"])
	assert.Equal(t, map[string]any{}, got["json"], "the page changed, not what is extracted from it")
	assert.Equal(t, 1, asked())

	act := ts.do("GET", "/v2/team/activity?endpoint=scrape&limit=1", keyAcme, nil)
	require.Equal(t, 200, act.Status, "%s", act.Raw)
	entry := act.Body["data"].([]any)[0].(map[string]any)
	modelCalls, _ := entry["modelCalls"].([]any)
	require.Len(t, modelCalls, 1, "the scrape's activity lists its model call")
	assert.Equal(t, "changeTracking", modelCalls[0].(map[string]any)["purpose"])
}

// Crawls and batch scrapes track changes page by page, in the team's
// history: a second crawl finds the changed page changed and the others
// the same.
func TestChangeTrackingCrawlAndBatch(t *testing.T) {
	web := newChangingSite(t)
	ts := crawlService(t, nil)
	web.set("/", 200, `<h1>Home</h1><a href="/a">A</a> <a href="/b">B</a>`)
	web.set("/a", 200, "<h1>A</h1><p>Alpha version one.</p>")
	web.set("/b", 200, "<h1>B</h1><p>Beta stays put.</p>")
	scrapeOptions := map[string]any{"formats": []any{"markdown", map[string]any{"type": "changeTracking", "modes": []any{"git-diff"}}},
		"maxAge": 0}
	crawl := func() map[string]map[string]any {
		t.Helper()
		_, st, docs := ts.runJob("/v2/crawl", keyAcme, map[string]any{"url": web.URL + "/", "limit": 10, "sitemap": "skip",
			"scrapeOptions": scrapeOptions})
		require.Equal(t, "completed", st["status"], "%v", st)
		return byPath(t, web.URL, docs)
	}
	statuses := func(docs map[string]map[string]any) map[string]any {
		out := map[string]any{}
		for p, ct := range docs {
			out[p] = ct["changeStatus"]
		}
		return out
	}

	assert.Equal(t, map[string]any{"/": "new", "/a": "new", "/b": "new"}, statuses(crawl()))
	web.set("/a", 200, "<h1>A</h1><p>Alpha version two.</p>")
	second := crawl()
	assert.Equal(t, map[string]any{"/": "same", "/a": "changed", "/b": "same"}, statuses(second))
	assert.Contains(t, second["/a"]["diff"].(map[string]any)["text"], "-Alpha version one.\n+Alpha version two.\n")
	for p, ct := range second {
		assert.Equal(t, "visible", ct["visibility"], p)
		assert.NotNil(t, ct["previousScrapeAt"], p)
	}

	// A batch scrape reads and extends the same history.
	web.set("/b", 200, "<h1>B</h1><p>Beta moved after all.</p>")
	batch := map[string]any{"urls": []string{web.URL + "/a", web.URL + "/b", web.URL + "/c"}}
	for k, v := range scrapeOptions {
		batch[k] = v
	}
	_, st, docs := ts.runJob("/v2/batch/scrape", keyAcme, batch)
	require.Equal(t, "completed", st["status"], "%v", st)
	assert.Equal(t, map[string]any{"/a": "same", "/b": "changed", "/c": "removed"}, statuses(byPath(t, web.URL, docs)))
	_, _, docs = ts.runJob("/v2/batch/scrape", keyGlobex, batch)
	assert.Equal(t, map[string]any{"/a": "new", "/b": "new", "/c": "removed"}, statuses(byPath(t, web.URL, docs)),
		"another team's crawl history is not globex's")
}

// byPath maps each document's path to its changeTracking.
func byPath(t *testing.T, base string, docs []map[string]any) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, d := range docs {
		src, _ := d["metadata"].(map[string]any)["sourceURL"].(string)
		ct, ok := d["changeTracking"].(map[string]any)
		require.True(t, ok, "changeTracking of %s: %v", src, d)
		out[strings.TrimPrefix(src, base)] = ct
	}
	return out
}

// Malformed changeTracking formats are 400s naming the member at fault;
// the json mode without a language model is MODEL_NOT_CONFIGURED.
func TestChangeTrackingBadInput(t *testing.T) {
	t.Parallel()
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true"})
	target := "http://127.0.0.1:9/"
	ct := func(members map[string]any) map[string]any {
		out := map[string]any{"type": "changeTracking"}
		for k, v := range members {
			out[k] = v
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		formats []any
		code    string
		field   string
		want    string
	}{
		{"an unknown mode", []any{"markdown", ct(map[string]any{"modes": []any{"git-diff", "word-diff"}})}, "BAD_REQUEST",
			"formats[1].modes[1]", `formats[1].modes[1] must be "git-diff" or "json", got "word-diff"`},
		{"modes not an array", []any{"markdown", ct(map[string]any{"modes": "git-diff"})}, "BAD_REQUEST",
			"formats[1].modes", `formats[1].modes must be an array of "git-diff" and "json"`},
		{"without markdown", []any{ct(nil)}, "BAD_REQUEST",
			"formats[0]", "formats[0] changeTracking compares the page's Markdown: add markdown to the formats"},
		{"without markdown, as a name", []any{"html", "changeTracking"}, "BAD_REQUEST",
			"formats[1]", "formats[1] changeTracking compares the page's Markdown"},
		{"a schema without the json mode", []any{"markdown", ct(map[string]any{"schema": map[string]any{"a": "string"}})}, "BAD_REQUEST",
			"formats[1].modes", `formats[1].schema and .prompt are for the "json" mode: add it to modes`},
		{"the json mode without a schema or a prompt", []any{"markdown", ct(map[string]any{"modes": []any{"json"}})}, "BAD_REQUEST",
			"formats[1]", `formats[1] of mode "json" needs a schema, a prompt or both`},
		{"a tag too long", []any{"markdown", ct(map[string]any{"tag": strings.Repeat("t", 257)})}, "BAD_REQUEST",
			"formats[1].tag", "formats[1].tag must be at most 256 characters"},
		{"an empty tag", []any{"markdown", ct(map[string]any{"tag": " "})}, "BAD_REQUEST",
			"formats[1].tag", "formats[1].tag must not be empty"},
		{"an unknown member", []any{"markdown", ct(map[string]any{"diff": true})}, "BAD_REQUEST",
			"formats[1].diff", "formats[1].diff is not a member of a changeTracking format"},
		{"the json mode without a model", []any{"markdown", ct(map[string]any{"modes": []any{"json"}, "prompt": "prices"})},
			"MODEL_NOT_CONFIGURED", "formats[1]", "formats[1] (changeTracking) needs a language model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.scrape(map[string]any{"url": target, "formats": tc.formats})
			require.Equal(t, 400, r.Status, "%s", r.Raw)
			assert.Equal(t, tc.code, r.str("code"), "%s", r.Raw)
			assert.Contains(t, r.str("error"), tc.want)
			assert.Contains(t, fieldPaths(r), tc.field, "details name the field: %s", r.Raw)
		})
	}
}

// fieldPaths are the paths of an error's details, dotted.
func fieldPaths(r response) []string {
	var out []string
	details, _ := r.Body["details"].([]any)
	for _, d := range details {
		p, _ := d.(map[string]any)["path"].([]any)
		var b strings.Builder
		for _, part := range p {
			switch v := part.(type) {
			case float64:
				fmt.Fprintf(&b, "[%d]", int(v))
			default:
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				fmt.Fprint(&b, v)
			}
		}
		out = append(out, b.String())
	}
	return out
}
