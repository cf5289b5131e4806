package service_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/model/modeltest"
	"github.com/trawler-dev/trawler/test/polltest"
)

// startWithModel runs a service whose language model is srv.
func startWithModel(t *testing.T, srv *modeltest.Server, env map[string]string) *testService {
	return start(t, modelEnv(srv, env))
}

// byPurpose answers each model-backed format from its system prompt, and
// falls back on the test server's default answer.
func byPurpose(answers map[string]string) func(modeltest.Request) modeltest.Reply {
	return func(r modeltest.Request) modeltest.Reply {
		sys := r.System()
		for key, content := range answers {
			if strings.Contains(sys, key) {
				return modeltest.Reply{Content: content, PromptTokens: 100, CompletionTokens: 10}
			}
		}
		return modeltest.DefaultReply(r)
	}
}

// A scrape with json, summary and question sends the model the page's
// main-content Markdown (never its HTML) with the normalised schema, and
// returns the answers; the page costs 4 credits more, and every call is
// in the scrape's activity entry and the team's token usage (and not in
// another team's).
func TestModelFormatsInScrape(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	llm := modeltest.Start(t)
	llm.Respond(byPurpose(map[string]string{
		"extract structured data": `{"title": "Trawling the Deep", "nets": ["Beam", "Otter"]}`,
		"summarise":               "A page about trawling nets.",
		"answer a question":       "Beam trawls reach 200 m.",
	}))
	ts := startWithModel(t, llm, nil)
	r := ts.scrape(map[string]any{"url": web.URL + "/article", "formats": []any{
		map[string]any{"type": "json", "schema": map[string]any{"title": "string", "nets": []any{"string"}}, "prompt": "the nets named"},
		"summary", map[string]any{"type": "question", "question": "How deep do beam trawls go?"}}})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	d := data(r)
	assert.Equal(t, map[string]any{"title": "Trawling the Deep", "nets": []any{"Beam", "Otter"}}, d["json"])
	assert.Equal(t, "A page about trawling nets.", d["summary"])
	assert.Equal(t, "Beam trawls reach 200 m.", d["answer"])
	assert.NotContains(t, d, "markdown", "markdown was not asked for")
	assert.EqualValues(t, 5, meta(r)["creditsUsed"])

	reqs := llm.Requests()
	require.Len(t, reqs, 3)
	for _, q := range reqs {
		user := q.User()
		assert.Contains(t, user, "# Trawling the Deep", "the model reads the Markdown")
		assert.Contains(t, user, "| Beam | 200 m |")
		assert.NotContains(t, user, "<p>", "never the HTML")
		assert.NotContains(t, user, "We use cookies", "the main content only")
		assert.Contains(t, user, web.URL+"/article")
		if q.ResponseFormat != nil && q.ResponseFormat.Type == "json_schema" {
			assert.JSONEq(t, `{"type":"object","properties":{"nets":{"type":["array","null"],"items":{"type":"string"}},
				"title":{"type":["string","null"]}},"required":["nets","title"],"additionalProperties":false}`,
				string(q.ResponseFormat.JSONSchema.Schema))
			assert.Contains(t, user, "Request: the nets named")
		}
		if strings.Contains(q.System(), "answer a question") {
			assert.Contains(t, user, "Question: How deep do beam trawls go?")
		}
	}

	act := ts.do("GET", "/v2/team/activity?endpoint=scrape", keyAcme, nil)
	require.Equal(t, 200, act.Status)
	entries := act.Body["data"].([]any)
	require.Len(t, entries, 1)
	calls, _ := entries[0].(map[string]any)["modelCalls"].([]any)
	require.Len(t, calls, 3, "the scrape's activity entry lists its model calls")
	purposes := map[string]bool{}
	for _, c := range calls {
		m := c.(map[string]any)
		purposes[m["purpose"].(string)] = true
		assert.EqualValues(t, 100, m["inputTokens"])
		assert.Equal(t, modeltest.DefaultModel, m["model"])
	}
	assert.Equal(t, map[string]bool{"json": true, "summary": true, "question": true}, purposes)

	usage := ts.do("GET", "/v2/team/token-usage", keyAcme, nil)
	require.Equal(t, 200, usage.Status, "%s", usage.Raw)
	u := usage.Body["data"].(map[string]any)
	assert.EqualValues(t, 330, u["usedTokens"])
	assert.EqualValues(t, 300, u["inputTokens"])
	assert.EqualValues(t, 3, u["calls"])
	// No team's tokens are limited: a number all the same, as the SDKs want.
	assert.EqualValues(t, 99_999_999-330, u["remainingTokens"])
	assert.Equal(t, true, u["unlimited"])
	other := ts.do("GET", "/v2/team/token-usage", keyGlobex, nil)
	assert.EqualValues(t, 0, other.Body["data"].(map[string]any)["usedTokens"], "another team's usage is its own")
}

// What the model fails at leaves a warning and the rest of the document;
// a scrape never fails because of its model.
func TestModelFailuresAreWarnings(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	llm := modeltest.Start(t)
	ts := startWithModel(t, llm, map[string]string{"TRAWLER_LLM_TIMEOUT": "2s"})
	jsonFormat := map[string]any{"type": "json", "schema": map[string]any{"type": "object",
		"properties": map[string]any{"n": map[string]any{"type": "integer"}}, "required": []any{"n"}}}
	cases := []struct {
		name    string
		replies []modeltest.Reply
		json    any
		warning string
	}{
		{"an invalid answer is asked again", []modeltest.Reply{{Content: `{"n": "x"}`}, {Content: `{"n": 7}`}},
			map[string]any{"n": float64(7)}, ""},
		{"two invalid answers", []modeltest.Reply{{Content: `{"n": "x"}`}, {Content: `{"m": 1}`}}, nil,
			"json: the model's answer did not match the schema"},
		{"a cut-off answer", []modeltest.Reply{{Content: `{"n": 1`, FinishReason: "length"}}, nil, "cut off"},
		{"a server error, also without json_schema", []modeltest.Reply{{Status: 400, Content: "context length exceeded"},
			{Status: 400, Content: "context length exceeded"}}, nil, "HTTP 400: context length exceeded"},
		{"a rate limit, then an answer", []modeltest.Reply{{Status: 429, RetryAfter: "0"}, {Content: `{"n": 2}`}},
			map[string]any{"n": float64(2)}, ""},
		{"a model slower than its timeout", []modeltest.Reply{{Content: `{"n": 3}`, Delay: 5 * time.Second}}, nil, "timeout"},
	}
	for _, tc := range cases {
		llm.Reset()
		llm.Enqueue(tc.replies...)
		r := ts.scrape(map[string]any{"url": web.URL + "/article", "formats": []any{"markdown", jsonFormat}})
		require.Equal(t, 200, r.Status, "%s: %s", tc.name, r.Raw)
		assert.Equal(t, tc.json, data(r)["json"], tc.name)
		assert.Contains(t, data(r)["markdown"], "# Trawling the Deep", tc.name)
		if tc.warning == "" {
			assert.Nil(t, data(r)["warning"], tc.name)
			assert.EqualValues(t, 5, meta(r)["creditsUsed"], tc.name)
		} else {
			assert.Contains(t, data(r)["warning"], tc.warning, tc.name)
			assert.EqualValues(t, 1, meta(r)["creditsUsed"], "%s: a format that failed is not billed", tc.name)
		}
	}
}

// A page larger than the model's context is trimmed, with a warning; the
// onlyCleanContent pass replaces the Markdown, is skipped with a warning
// past the model's output limit, and is refused with zero data retention.
func TestTrimmingAndCleanContent(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("A sentence about fishing boats and their nets. ", 2000) // ~96 KB, ~24k tokens
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		switch r.URL.Path {
		case "/long":
			fmt.Fprintf(w, "<html><body><main><h1>Long</h1><p>%s</p></main></body></html>", long)
		default:
			fmt.Fprint(w, `<html><body><main><h1>Story</h1><p>The story itself, long enough to be the main content of the page.</p>
				<p>Share on Facebook | Subscribe to our newsletter</p></main></body></html>`)
		}
	}))
	t.Cleanup(web.Close)
	llm := modeltest.Start(t)
	ts := startWithModel(t, llm, map[string]string{"TRAWLER_LLM_CONTEXT_TOKENS": "4096", "TRAWLER_LLM_OUTPUT_TOKENS": "512",
		"TRAWLER_TEAM_FEATURES": "acme:zeroDataRetention"})

	llm.Respond(byPurpose(map[string]string{"summarise": "Long, about boats."}))
	r := ts.scrape(map[string]any{"url": web.URL + "/long", "formats": []any{"summary"}})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	assert.Equal(t, "Long, about boats.", data(r)["summary"])
	assert.Contains(t, data(r)["warning"], "was trimmed to fit the model's context of 4096 tokens")
	sent := llm.Requests()[0].User()
	assert.Less(t, len(sent), (4096-512)*4, "the page was cut to the context")
	assert.Greater(t, len(sent), 2000*4, "and not to nothing")

	llm.Reset()
	llm.Respond(byPurpose(map[string]string{"You clean": "# Story\n\nThe story itself, long enough to be the main content of the page."}))
	r = ts.scrape(map[string]any{"url": web.URL + "/story", "formats": []any{"markdown"}, "onlyCleanContent": true})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	assert.Equal(t, "# Story\n\nThe story itself, long enough to be the main content of the page.", data(r)["markdown"])
	require.Len(t, llm.Requests(), 1)
	assert.Contains(t, llm.Requests()[0].User(), "Subscribe to our newsletter", "the pass reads the Markdown as made")

	llm.Reset()
	r = ts.scrape(map[string]any{"url": web.URL + "/long", "formats": []any{"markdown"}, "onlyCleanContent": true})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	assert.Contains(t, data(r)["warning"], "onlyCleanContent was skipped")
	assert.Contains(t, data(r)["markdown"], "A sentence about fishing boats")
	assert.Empty(t, llm.Requests(), "a page past the output limit is not sent")

	r = ts.scrape(map[string]any{"url": web.URL + "/story", "onlyCleanContent": true, "zeroDataRetention": true})
	require.Equal(t, 400, r.Status, "%s", r.Raw)
	assert.Contains(t, r.str("error"), "onlyCleanContent is not supported with zero data retention")
}

// Without a model, every model-backed option is refused with
// MODEL_NOT_CONFIGURED naming it and the setting, on every endpoint that
// takes scrape options; malformed formats are 400s naming the member.
func TestModelFormatsRefused(t *testing.T) {
	t.Parallel()
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true"})
	target := "http://127.0.0.1:9/"
	cases := []struct {
		path string
		body map[string]any
		what string
	}{
		{"/v2/scrape", map[string]any{"url": target, "formats": []any{"markdown", map[string]any{"type": "json", "prompt": "x"}}}, "formats[1] (json)"},
		{"/v2/scrape", map[string]any{"url": target, "formats": []any{"summary"}}, "formats[0] (summary)"},
		{"/v2/scrape", map[string]any{"url": target, "onlyCleanContent": true}, "onlyCleanContent"},
		{"/v2/batch/scrape", map[string]any{"urls": []any{target}, "formats": []any{"markdown", "summary"}}, "formats[1] (summary)"},
		{"/v2/crawl", map[string]any{"url": target, "scrapeOptions": map[string]any{"formats": []any{"summary"}}}, "scrapeOptions.formats[0] (summary)"},
		{"/v2/crawl", map[string]any{"url": target, "prompt": "only the blog"}, "prompt"},
		{"/v2/crawl/params-preview", map[string]any{"url": target, "prompt": "only the blog"}, "prompt"},
		{"/v2/search", map[string]any{"query": "x", "scrapeOptions": map[string]any{"formats": []any{"summary"}}}, "scrapeOptions.formats[0] (summary)"},
	}
	for _, tc := range cases {
		r := ts.do("POST", tc.path, keyAcme, tc.body)
		assert.Equal(t, 400, r.Status, "%s %v: %s", tc.path, tc.body, r.Raw)
		assert.Equal(t, "MODEL_NOT_CONFIGURED", r.str("code"), "%s: %s", tc.path, r.Raw)
		assert.Contains(t, r.str("error"), tc.what, tc.path)
		assert.Contains(t, r.str("error"), "TRAWLER_LLM_BASE_URL", tc.path)
	}
	for _, tc := range []struct {
		format any
		want   string
	}{
		{"json", `formats[0] "json" must be an object`},
		{map[string]any{"type": "json"}, "needs a schema, a prompt or both"},
		{map[string]any{"type": "json", "schema": "price"}, "formats[0].schema must be a JSON schema object"},
		{map[string]any{"type": "json", "schema": map[string]any{"type": "nope"}}, "formats[0].schema is not a valid JSON schema"},
		{map[string]any{"type": "json", "prompt": strings.Repeat("p", 10001)}, "formats[0].prompt must be at most 10000 characters"},
		{map[string]any{"type": "json", "prompt": "x", "mode": "llm"}, "formats[0].mode is not a member of a json format"},
		{map[string]any{"type": "question"}, "formats[0].question is required"},
		{map[string]any{"type": "question", "question": 5}, "formats[0].question must be a string"},
		{map[string]any{"type": "summary", "length": 3}, "formats[0].length is not a member"},
	} {
		r := ts.scrape(map[string]any{"url": target, "formats": []any{tc.format}})
		assert.Equal(t, 400, r.Status, "%v: %s", tc.format, r.Raw)
		assert.Equal(t, "BAD_REQUEST", r.str("code"), "%v", tc.format)
		assert.Contains(t, r.str("error"), tc.want, "%v", tc.format)
	}
}

// No more model calls are in flight than TRAWLER_LLM_CONCURRENCY while a
// batch's pages ask for json at once, and every page gets its answer.
func TestModelConcurrencyInBatch(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	llm := modeltest.Start(t, modeltest.WithLatency(200*time.Millisecond))
	ts := startWithModel(t, llm, map[string]string{"TRAWLER_LLM_CONCURRENCY": "2", "TRAWLER_JOB_WORKERS": "4",
		"TRAWLER_TEAM_CONCURRENCY": "4"})
	var urls []any
	for i := 0; i < 8; i++ {
		urls = append(urls, fmt.Sprintf("%s/article?n=%d", web.URL, i))
	}
	r := ts.do("POST", "/v2/batch/scrape", keyAcme, map[string]any{"urls": urls, "formats": []any{
		map[string]any{"type": "json", "schema": map[string]any{"title": "string"}}}})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	id := r.str("id")
	var st response
	polltest.Until(t, 60*time.Second, "the batch to complete", func() bool {
		st = ts.do("GET", "/v2/batch/scrape/"+id, keyAcme, nil)
		return st.str("status") == "completed"
	})
	docs := st.Body["data"].([]any)
	require.Len(t, docs, 8)
	for _, d := range docs {
		assert.Equal(t, map[string]any{"title": "example"}, d.(map[string]any)["json"])
	}
	assert.EqualValues(t, 8*5, st.Body["creditsUsed"])
	assert.Equal(t, 2, llm.MaxInFlight())
	act := ts.do("GET", "/v2/team/activity?endpoint=batch_scrape", keyAcme, nil)
	calls := act.Body["data"].([]any)[0].(map[string]any)["modelCalls"].([]any)
	assert.Len(t, calls, 8, "the batch's activity entry lists its pages' model calls")
}

// A crawl prompt becomes crawl options the same rules check: options the
// request sets win, an option the API would refuse is left out with a
// warning, and the enterprise options are never generated.
func TestCrawlPrompt(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	hits := map[string]bool{}
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path] = true
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<html><body><main><h1>%s</h1><p>Some words so the page is content.</p>
			<a href="/blog/one">one</a> <a href="/blog/two">two</a> <a href="/shop/cart">cart</a> <a href="/blog/three">three</a></main></body></html>`, r.URL.Path)
	}))
	t.Cleanup(web.Close)
	llm := modeltest.Start(t)
	generated := `{"includePaths": ["^/blog/.*", "^/$"], "excludePaths": ["(unclosed"], "limit": 3, "maxDiscoveryDepth": null,
		"sitemap": "skip", "crawlEntireDomain": true, "allowExternalLinks": null, "allowSubdomains": null,
		"ignoreQueryParameters": null, "deduplicateSimilarURLs": null, "delay": null}`
	llm.Respond(byPurpose(map[string]string{"options of a web crawl": generated}))
	ts := startWithModel(t, llm, nil)

	pv := ts.do("POST", "/v2/crawl/params-preview", keyAcme, map[string]any{"url": web.URL + "/", "prompt": "the blog posts, at most three"})
	require.Equal(t, 200, pv.Status, "%s", pv.Raw)
	d := pv.Body["data"].(map[string]any)
	assert.Equal(t, []any{"^/blog/.*", "^/$"}, d["includePaths"])
	assert.Equal(t, []any{}, d["excludePaths"], "an invalid regular expression is left out")
	assert.EqualValues(t, 3, d["limit"])
	assert.Equal(t, "skip", d["sitemap"])
	assert.Equal(t, true, d["crawlEntireDomain"])
	assert.Equal(t, false, d["ignoreRobotsTxt"])
	assert.Contains(t, pv.str("warning"), "excludePaths")
	req := llm.Requests()[0]
	assert.Contains(t, req.User(), "the blog posts, at most three")
	assert.NotContains(t, string(req.ResponseFormat.JSONSchema.Schema), "ignoreRobotsTxt", "enterprise options are not the model's")

	r := ts.do("POST", "/v2/crawl", keyAcme, map[string]any{"url": web.URL + "/", "prompt": "the blog posts, at most three",
		"limit": 2})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	assert.Contains(t, r.str("warning"), "excludePaths")
	id := r.str("id")
	var st response
	polltest.Until(t, 60*time.Second, "the crawl to complete", func() bool {
		st = ts.do("GET", "/v2/crawl/"+id, keyAcme, nil)
		return st.str("status") == "completed"
	})
	docs := st.Body["data"].([]any)
	assert.Len(t, docs, 2, "the request's own limit wins over the prompt's")
	for _, doc := range docs {
		u := doc.(map[string]any)["metadata"].(map[string]any)["url"].(string)
		assert.NotContains(t, u, "/shop/", "the prompt's includePaths applied")
	}
	act := ts.do("GET", "/v2/team/activity?endpoint=crawl", keyAcme, nil)
	calls := act.Body["data"].([]any)[0].(map[string]any)["modelCalls"].([]any)
	require.Len(t, calls, 1)
	assert.Equal(t, "crawlPrompt", calls[0].(map[string]any)["purpose"])

	bad := ts.do("POST", "/v2/crawl", keyAcme, map[string]any{"url": web.URL + "/", "prompt": strings.Repeat("p", 10001)})
	assert.Equal(t, 400, bad.Status)
	assert.Contains(t, bad.str("error"), "prompt must be at most 10000 characters")
	bad = ts.do("POST", "/v2/crawl/params-preview", keyAcme, map[string]any{"url": web.URL + "/"})
	assert.Equal(t, 400, bad.Status)
	assert.Contains(t, bad.str("error"), "prompt is required")

	llm.Reset()
	llm.Enqueue(modeltest.Reply{Status: 500, RetryAfter: "0"}, modeltest.Reply{Status: 500, RetryAfter: "0"},
		modeltest.Reply{Status: 500, RetryAfter: "0"}, modeltest.Reply{Status: 500, RetryAfter: "0"})
	failed := ts.do("POST", "/v2/crawl/params-preview", keyAcme, map[string]any{"url": web.URL + "/", "prompt": "blog"})
	assert.Equal(t, 502, failed.Status, "%s", failed.Raw)
	assert.Equal(t, "UPSTREAM_ERROR", failed.str("code"))
}

// The model-backed formats work for parse uploads and search results too.
func TestModelFormatsInParseAndSearch(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	llm := modeltest.Start(t)
	llm.Respond(byPurpose(map[string]string{"summarise": "Summary of the page."}))
	ts := startWithModel(t, llm, nil)

	r := ts.scrape(map[string]any{"url": web.URL + "/article", "formats": []any{"markdown"}})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	var s response
	polltest.Until(t, 20*time.Second, "the page to be searchable", func() bool {
		s = ts.do("POST", "/v2/search", keyAcme, map[string]any{"query": "trawling", "scrapeOptions": map[string]any{
			"formats": []any{"summary"}}})
		web, _ := s.Body["data"].(map[string]any)["web"].([]any)
		return s.Status == 200 && len(web) > 0
	})
	first := s.Body["data"].(map[string]any)["web"].([]any)[0].(map[string]any)
	assert.Equal(t, "Summary of the page.", first["summary"])
	act := ts.do("GET", "/v2/team/activity?endpoint=search", keyAcme, nil)
	found := false
	for _, e := range act.Body["data"].([]any) {
		if calls, ok := e.(map[string]any)["modelCalls"].([]any); ok && len(calls) > 0 {
			found = true
		}
	}
	assert.True(t, found, "the search's activity entry lists its results' model calls")

	p := ts.parseFile(keyAcme, upload{name: "file", filename: "note.html",
		data: []byte("<html><body><h1>Note</h1><p>A short note to summarise.</p></body></html>")},
		options(map[string]any{"formats": []any{"markdown", "summary"}}))
	require.Equal(t, 200, p.Status, "%s", p.Raw)
	assert.Equal(t, "Summary of the page.", data(p)["summary"])
	assert.Contains(t, llm.Requests()[len(llm.Requests())-1].User(), "# Note")
}

// With a model, branding's personality is the model's judgement of the
// page and its colours; the rest of branding is read from the page.
func TestBrandingPersonality(t *testing.T) {
	t.Parallel()
	site := httptest.NewServer(http.FileServer(http.Dir("../scrape/branding/testdata")))
	t.Cleanup(site.Close)
	llm := modeltest.Start(t)
	llm.Respond(byPurpose(map[string]string{"personality of a brand": `{"tone": "calm and practical", "energy": "low", "targetAudience": "harbour masters"}`}))
	ts := startWithModel(t, llm, nil)
	r := ts.scrape(map[string]any{"url": site.URL + "/harbor/index.html", "formats": []any{"branding"}})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	b, _ := data(r)["branding"].(map[string]any)
	require.NotNil(t, b, "%s", r.Raw)
	assert.Equal(t, map[string]any{"tone": "calm and practical", "energy": "low", "targetAudience": "harbour masters"}, b["personality"])
	assert.NotEmpty(t, b["colors"], "the rest is read from the page")
	require.Len(t, llm.Requests(), 1)
	user := llm.Requests()[0].User()
	assert.Contains(t, user, "Colours and typography:")
	assert.Contains(t, user, `"primary":"#2563eb"`)
	assert.NotContains(t, data(r), "markdown", "the Markdown the model read is not returned unasked")
}

// highlights needs no model: the passages that answer the query, as the
// page has them.
func TestHighlightsFormat(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true"})
	r := ts.scrape(map[string]any{"url": web.URL + "/article", "formats": []any{
		map[string]any{"type": "highlights", "query": "how deep does a beam trawl reach"}}})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	h, _ := data(r)["highlights"].(string)
	assert.Contains(t, h, "200 m", "%s", r.Raw)
	assert.NotContains(t, data(r), "markdown")
	r = ts.scrape(map[string]any{"url": web.URL + "/article", "formats": []any{"highlights"}})
	assert.Equal(t, 400, r.Status)
	assert.Contains(t, r.str("error"), `formats[0] "highlights" must be an object`)
	r = ts.scrape(map[string]any{"url": web.URL + "/article", "formats": []any{map[string]any{"type": "highlights", "query": ""}}})
	assert.Equal(t, 400, r.Status)
	assert.Contains(t, r.str("error"), "formats[0].query must not be empty")
}

// Without a model, a question is answered by the page's own passage that
// best matches it, with a warning that says so.
func TestQuestionWithoutModel(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true"})
	r := ts.scrape(map[string]any{"url": web.URL + "/article", "formats": []any{
		map[string]any{"type": "question", "question": "what does a trawler drag through the water?"}}})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	assert.Contains(t, data(r)["answer"], "drags a net through the water")
	assert.Contains(t, data(r)["warning"], "no language model is configured")
	assert.EqualValues(t, 1, meta(r)["creditsUsed"], "no model, no extra credits")
}
