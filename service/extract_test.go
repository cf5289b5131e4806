package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/config"
	"github.com/trawler-dev/trawler/model/modeltest"
	"github.com/trawler-dev/trawler/service"
	"github.com/trawler-dev/trawler/test/logtest"
	"github.com/trawler-dev/trawler/test/pgdb"
	"github.com/trawler-dev/trawler/test/polltest"
)

// shopSite is a small local site for extracts: a catalogue under
// /products/ and pages outside it. /slow answers once release is closed.
type shopSite struct {
	site
	release chan struct{}
	once    sync.Once
}

// letGo lets /slow answer.
func (s *shopSite) letGo() { s.once.Do(func() { close(s.release) }) }

// shopPage is a server-rendered page (page, of the crawl tests) with a
// paragraph of markup after its heading, so that Markdown and HTML tell
// apart.
func shopPage(title, text string, links ...string) string {
	h1 := "<h1>" + title + "</h1>"
	return strings.Replace(page(title, links...), h1, h1+"<p>"+text+"</p>", 1)
}

func newShopSite(t *testing.T) *shopSite {
	s := &shopSite{release: make(chan struct{})}
	pages := map[string]string{
		"/":               shopPage("Home", "Welcome to the shop.", "/products/", "/about"),
		"/products/":      shopPage("Products", "Our <em>catalogue</em> of widgets.", "/products/alpha", "/products/beta", "/about", "/"),
		"/products/alpha": shopPage("Alpha", "The <strong>Alpha</strong> widget costs 10 euros.", "/products/"),
		"/products/beta":  shopPage("Beta", "The <strong>Beta</strong> widget costs 20 euros.", "/products/"),
		"/about":          shopPage("About", "We make <strong>widgets</strong> since 1999.", "/"),
		"/slow":           shopPage("Slow", "The <strong>Slow</strong> widget costs 30 euros."),
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hit(r.URL.Path)
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if r.URL.Path == "/slow" {
			select {
			case <-s.release:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, body)
	}))
	t.Cleanup(func() {
		s.letGo()
		s.Close()
	})
	return s
}

// modelEnv points a service at a test model server.
func modelEnv(m *modeltest.Server, env map[string]string) map[string]string {
	vars := map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true", "TRAWLER_LLM_BASE_URL": m.URL,
		"TRAWLER_LLM_MODEL": modeltest.DefaultModel}
	for k, v := range env {
		vars[k] = v
	}
	return vars
}

// startExtract posts an extract and returns its id.
func (ts *testService) startExtract(key string, body map[string]any) (string, response) {
	ts.t.Helper()
	r := ts.do("POST", "/v2/extract", key, body)
	require.Equal(ts.t, 200, r.Status, "POST /v2/extract: %s", r.Raw)
	require.Equal(ts.t, true, r.Body["success"], "%s", r.Raw)
	id := r.str("id")
	require.NotEmpty(ts.t, id, "%s", r.Raw)
	return id, r
}

// waitExtract polls an extract, as the SDK's waitExtract does, until it
// ends.
func (ts *testService) waitExtract(key, id string) response {
	ts.t.Helper()
	var st response
	polltest.Until(ts.t, 3*time.Minute, "the extract to end", func() bool {
		st = ts.do("GET", "/v2/extract/"+id, key, nil)
		require.Equal(ts.t, 200, st.Status, "GET /v2/extract/%s: %s", id, st.Raw)
		return st.str("status") != "processing"
	})
	return st
}

// lastRequest is the model's last request.
func lastRequest(t *testing.T, m *modeltest.Server) modeltest.Request {
	t.Helper()
	reqs := m.Requests()
	require.NotEmpty(t, reqs, "the model was not called")
	return reqs[len(reqs)-1]
}

func decoded(t *testing.T, raw string) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(raw), &v))
	return v
}

var productsSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"products": map[string]any{"type": "array", "items": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"name":  map[string]any{"type": "string"},
				"price": map[string]any{"type": "number"},
			},
			"required": []string{"name", "price"},
		}},
	},
	"required": []string{"products"},
}

const productsAnswer = `{"products":[{"name":"Alpha","price":10},{"name":"Beta","price":20}]}`

// An extract over two pages with a schema: one model call reads both
// pages' Markdown under their URLs, and its answer is the data.
func TestExtractPagesWithSchema(t *testing.T) {
	shop := newShopSite(t)
	m := modeltest.Start(t)
	m.Respond(func(modeltest.Request) modeltest.Reply { return modeltest.Reply{Content: productsAnswer} })
	ts := start(t, modelEnv(m, nil))

	alpha, beta := shop.URL+"/products/alpha", shop.URL+"/products/beta"
	id, created := ts.startExtract(keyAcme, map[string]any{"urls": []string{alpha, beta},
		"prompt": "List the widgets with their prices.", "schema": productsSchema, "origin": "js-sdk@4"})
	assert.Equal(t, []any{}, created.Body["invalidURLs"], "invalidURLs")
	st := ts.waitExtract(keyAcme, id)
	require.Equal(t, "completed", st.str("status"), "%s", st.Raw)
	assert.Equal(t, decoded(t, productsAnswer), st.Body["data"], "data")
	assert.NotEmpty(t, st.str("expiresAt"))
	assert.Greater(t, st.Body["tokensUsed"], float64(0), "tokensUsed")
	assert.Equal(t, float64(2+4), st.Body["creditsUsed"], "creditsUsed: two pages and the extraction")
	assert.EqualValues(t, 2+4, ts.usage(keyAcme)["usedCredits"], "the team is billed the extract's credits, once")
	assert.NotContains(t, st.Body, "sources", "sources without showSources")
	assert.NotContains(t, st.Body, "error")

	reqs := m.Requests()
	require.Len(t, reqs, 1, "one model call for the whole extract")
	req := reqs[0]
	require.NotNil(t, req.ResponseFormat)
	assert.Equal(t, "json_schema", req.ResponseFormat.Type, "a schema asks for structured output")
	assert.Contains(t, req.System(), "extract structured data")
	user := req.User()
	assert.Contains(t, user, "List the widgets with their prices.")
	for _, want := range []string{alpha, beta, "The **Alpha** widget costs 10 euros.", "The **Beta** widget costs 20 euros."} {
		assert.Contains(t, user, want, "the model reads each page's Markdown under its URL")
	}
	for _, html := range []string{"<strong>", "<p>", "<main>"} {
		assert.NotContains(t, user, html, "the model reads Markdown, not HTML")
	}

	act := ts.do("GET", "/v2/team/activity?endpoint=extract", keyAcme, nil)
	require.Equal(t, 200, act.Status, "%s", act.Raw)
	entries, _ := act.Body["data"].([]any)
	require.Len(t, entries, 1, "%s", act.Raw)
	entry := entries[0].(map[string]any)
	assert.Equal(t, id, entry["id"])
	assert.Equal(t, alpha, entry["target"])
	assert.NotEmpty(t, entry["modelCalls"], "the activity entry lists the model call")
	batches := ts.do("GET", "/v2/team/activity?endpoint=batch_scrape", keyAcme, nil)
	assert.Equal(t, []any{}, batches.Body["data"], "the internal batch has no activity entry of its own")

	other := ts.do("GET", "/v2/extract/"+id, keyGlobex, nil)
	assert.Equal(t, 404, other.Status, "another team's extract: %s", other.Raw)
	assert.Equal(t, "NOT_FOUND", other.str("code"))
	unknown := ts.do("GET", "/v2/extract/00000000-0000-4000-8000-000000000000", keyAcme, nil)
	assert.Equal(t, 404, unknown.Status, "%s", unknown.Raw)
	assert.Equal(t, "NOT_FOUND", unknown.str("code"))
}

// A wildcard URL stands for the pages its map finds under its path, and
// only those; showSources lists the pages read; a prompt alone asks for
// any JSON object.
func TestExtractWildcardPromptOnlyWithSources(t *testing.T) {
	shop := newShopSite(t)
	m := modeltest.Start(t)
	answer := `{"widgets":["Alpha","Beta"]}`
	m.Respond(func(modeltest.Request) modeltest.Reply { return modeltest.Reply{Content: answer} })
	ts := start(t, modelEnv(m, nil))

	id, created := ts.startExtract(keyAcme, map[string]any{"urls": []string{shop.URL + "/products/*", "not a url"},
		"prompt": "Which widgets are sold?", "showSources": true})
	assert.Equal(t, []any{"not a url"}, created.Body["invalidURLs"], "invalid URLs are dropped and listed")
	st := ts.waitExtract(keyAcme, id)
	require.Equal(t, "completed", st.str("status"), "%s", st.Raw)
	assert.Equal(t, decoded(t, answer), st.Body["data"])

	// Sources are by field, as Firecrawl's: each value's pages.
	sources := map[string][]string{}
	require.IsType(t, map[string]any{}, st.Body["sources"], "sources: %s", st.Raw)
	for field, urls := range st.Body["sources"].(map[string]any) {
		for _, u := range urls.([]any) {
			sources[field] = append(sources[field], strings.TrimPrefix(u.(string), shop.URL))
		}
	}
	require.Len(t, sources, 2, "one entry per field of the result: %v", sources)
	assert.Contains(t, sources["widgets[0]"], "/products/alpha", "Alpha's page")
	assert.NotContains(t, sources["widgets[0]"], "/products/beta", "Alpha is not on Beta's page")
	assert.Contains(t, sources["widgets[1]"], "/products/beta", "Beta's page")
	assert.NotContains(t, sources["widgets[1]"], "/products/alpha", "Beta is not on Alpha's page")

	req := lastRequest(t, m)
	require.NotNil(t, req.ResponseFormat)
	assert.Equal(t, "json_object", req.ResponseFormat.Type, "a prompt alone asks for a JSON object")
	user := req.User()
	assert.Contains(t, user, "Which widgets are sold?")
	assert.Contains(t, user, "The **Beta** widget costs 20 euros.")
	assert.NotContains(t, user, ": "+shop.URL+"/about\n", "a page outside the wildcard's path")
	assert.NotContains(t, user, ": "+shop.URL+"/\n", "a page outside the wildcard's path")
	assert.NotContains(t, user, "since 1999", "a page outside the wildcard's path")
}

// A model that keeps failing fails the extract with what it answered.
func TestExtractModelFailure(t *testing.T) {
	shop := newShopSite(t)
	m := modeltest.Start(t)
	m.Respond(func(modeltest.Request) modeltest.Reply {
		return modeltest.Reply{Status: 500, Content: "the model fell over", RetryAfter: "0.05"}
	})
	ts := start(t, modelEnv(m, nil))

	id, _ := ts.startExtract(keyAcme, map[string]any{"urls": []string{shop.URL + "/products/alpha"}, "prompt": "Price?"})
	st := ts.waitExtract(keyAcme, id)
	require.Equal(t, "failed", st.str("status"), "%s", st.Raw)
	assert.Contains(t, st.str("error"), "the language model failed")
	assert.Contains(t, st.str("error"), "HTTP 500")
	assert.Nil(t, st.Body["data"], "no data")
	assert.Len(t, m.Requests(), 4, "the client tries a 500 four times")
}

// Every rule of the request is a 400 naming its field; a blocked target
// is a 403.
func TestExtractValidation(t *testing.T) {
	m := modeltest.Start(t)
	ts := start(t, map[string]string{"TRAWLER_LLM_BASE_URL": m.URL, "TRAWLER_LLM_MODEL": modeltest.DefaultModel})
	ok := []string{"https://example.com/a"}
	many := make([]string, 11)
	for i := range many {
		many[i] = fmt.Sprintf("https://example.com/%d", i)
	}
	long := strings.Repeat("x", 10001)
	for _, tc := range []struct {
		name string
		body map[string]any
		path string
	}{
		{"no urls", map[string]any{"prompt": "p"}, "urls"},
		{"empty urls", map[string]any{"urls": []string{}, "prompt": "p"}, "urls"},
		{"too many urls", map[string]any{"urls": many, "prompt": "p"}, "urls"},
		{"url not a string", map[string]any{"urls": []any{42}, "prompt": "p"}, "urls[0]"},
		{"invalid url kept", map[string]any{"urls": []string{"ftp://example.com/"}, "prompt": "p", "ignoreInvalidURLs": false}, "urls[0]"},
		{"only invalid urls", map[string]any{"urls": []string{"ftp://example.com/"}, "prompt": "p"}, "urls"},
		{"star inside", map[string]any{"urls": []string{"https://example.com/a*"}, "prompt": "p", "ignoreInvalidURLs": false}, "urls[0]"},
		{"wildcard after a query", map[string]any{"urls": []string{"https://example.com/a?q=/*"}, "prompt": "p", "ignoreInvalidURLs": false}, "urls[0]"},
		{"neither prompt nor schema", map[string]any{"urls": ok}, "prompt"},
		{"empty prompt", map[string]any{"urls": ok, "prompt": " "}, "prompt"},
		{"long prompt", map[string]any{"urls": ok, "prompt": long}, "prompt"},
		{"bad schema", map[string]any{"urls": ok, "schema": "string"}, "schema"},
		{"long systemPrompt", map[string]any{"urls": ok, "prompt": "p", "systemPrompt": long}, "systemPrompt"},
		{"web search", map[string]any{"urls": ok, "prompt": "p", "enableWebSearch": true}, "enableWebSearch"},
		{"agent", map[string]any{"urls": ok, "prompt": "p", "agent": map[string]any{"model": "FIRE-1"}}, "agent"},
		{"webhook", map[string]any{"urls": ok, "prompt": "p", "webhook": "https://example.com/hook"}, "webhook"},
		{"showSources not a boolean", map[string]any{"urls": ok, "prompt": "p", "showSources": "yes"}, "showSources"},
		{"bad scrape option", map[string]any{"urls": ok, "prompt": "p", "scrapeOptions": map[string]any{"timeout": 5}}, "scrapeOptions.timeout"},
		{"lockdown", map[string]any{"urls": ok, "prompt": "p", "scrapeOptions": map[string]any{"lockdown": true}}, "scrapeOptions.lockdown"},
		{"unknown key", map[string]any{"urls": ok, "prompt": "p", "limit": 5}, "limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.do("POST", "/v2/extract", keyAcme, tc.body)
			require.Equal(t, 400, r.Status, "%s", r.Raw)
			assert.Equal(t, "BAD_REQUEST", r.str("code"), "%s", r.Raw)
			var paths []string
			for _, d := range r.Body["details"].([]any) {
				var p []string
				for _, s := range d.(map[string]any)["path"].([]any) {
					p = append(p, s.(string))
				}
				paths = append(paths, strings.Join(p, "."))
			}
			assert.Contains(t, paths, tc.path, "%s", r.Raw)
		})
	}
	t.Run("blocked target", func(t *testing.T) {
		shop := newShopSite(t)
		r := ts.do("POST", "/v2/extract", keyAcme, map[string]any{"urls": []string{shop.URL + "/products/*"}, "prompt": "p"})
		assert.Equal(t, 403, r.Status, "%s", r.Raw)
		assert.Equal(t, "URL_BLOCKED", r.str("code"), "%s", r.Raw)
	})
	assert.Empty(t, m.Requests(), "no request reached the model")
}

// Without a model, an extract is refused before anything runs.
func TestExtractWithoutModel(t *testing.T) {
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true"})
	r := ts.do("POST", "/v2/extract", keyAcme, map[string]any{"urls": []string{"https://example.com/"}, "schema": productsSchema})
	require.Equal(t, 400, r.Status, "%s", r.Raw)
	assert.Equal(t, "MODEL_NOT_CONFIGURED", r.str("code"))
	assert.Contains(t, r.str("error"), "TRAWLER_LLM_BASE_URL")
}

// startOwned is start for a test that stops the service itself (to start
// another on the same data directory); stop may be called more than once.
func startOwned(t *testing.T, env map[string]string) (*testService, func()) {
	t.Helper()
	vars := map[string]string{
		"TRAWLER_API_KEYS":      "acme:" + keyAcme + ",globex:" + keyGlobex,
		"TRAWLER_WARM_BROWSERS": "1",
		"TRAWLER_POOL_SIZE":     "6",
		"TRAWLER_QUEUE_WAIT":    "2s",
	}
	for k, v := range env {
		vars[k] = v
	}
	if _, set := vars["TRAWLER_DATABASE_URL"]; !set && pgdb.Enabled() {
		vars["TRAWLER_DATABASE_URL"] = pgdb.For(t, vars["TRAWLER_DATA_DIR"])
	}
	cfg, err := config.FromEnv(func(k string) string { return vars[k] })
	require.NoError(t, err, "config")
	logs := &logtest.Buffer{}
	var out io.Writer = io.Discard
	if os.Getenv("TRAWLER_TEST_DEBUG") != "" {
		out = os.Stderr
	}
	log := slog.New(slog.NewTextHandler(io.MultiWriter(logs, levelWriter{out, os.Stderr}), nil))
	svc, err := service.New(context.Background(), cfg, log)
	require.NoError(t, err, "service")
	srv := httptest.NewUnstartedServer(nil)
	srv.Config = service.Server(svc.Handler())
	srv.Listener = service.Listener(srv.Listener, cfg.MaxConnsPerAddress)
	srv.Start()
	svc.Listening(srv.Listener.Addr().String())
	var once sync.Once
	stop := func() {
		once.Do(func() {
			srv.Close()
			svc.Close()
		})
	}
	t.Cleanup(stop)
	return &testService{Service: svc, URL: srv.URL, t: t, logs: logs, requests: &requestLog{}}, stop
}

// An extract survives a restart of the service, whether it stopped while
// the pages were being scraped or while the model was answering: the new
// service waits for the same batch and asks the model.
func TestExtractResumesAfterRestart(t *testing.T) {
	t.Run("while scraping", func(t *testing.T) {
		shop := newShopSite(t)
		m := modeltest.Start(t)
		m.Respond(func(modeltest.Request) modeltest.Reply { return modeltest.Reply{Content: productsAnswer} })
		env := modelEnv(m, map[string]string{"TRAWLER_DATA_DIR": t.TempDir()})
		first, stop := startOwned(t, env)
		id, _ := first.startExtract(keyAcme, map[string]any{"urls": []string{shop.URL + "/products/alpha", shop.URL + "/slow"},
			"schema": productsSchema})
		polltest.Until(t, time.Minute, "the slow page to be asked for", func() bool { return shop.count("/slow") > 0 })
		stop()
		require.Empty(t, m.Requests(), "the model was not called before the restart")

		shop.letGo()
		second, _ := startOwned(t, env)
		st := second.waitExtract(keyAcme, id)
		require.Equal(t, "completed", st.str("status"), "%s", st.Raw)
		assert.Equal(t, decoded(t, productsAnswer), st.Body["data"])
		assert.Contains(t, lastRequest(t, m).User(), "The **Slow** widget costs 30 euros.")
		assertOneBatch(t, second)
	})
	t.Run("while the model answers", func(t *testing.T) {
		shop := newShopSite(t)
		m := modeltest.Start(t)
		m.Enqueue(modeltest.Reply{Content: productsAnswer, Delay: time.Minute})
		m.Respond(func(modeltest.Request) modeltest.Reply { return modeltest.Reply{Content: productsAnswer} })
		env := modelEnv(m, map[string]string{"TRAWLER_DATA_DIR": t.TempDir()})
		first, stop := startOwned(t, env)
		id, _ := first.startExtract(keyAcme, map[string]any{"urls": []string{shop.URL + "/products/alpha", shop.URL + "/products/beta"},
			"schema": productsSchema, "showSources": true})
		polltest.Until(t, 2*time.Minute, "the model to be asked", func() bool { return len(m.Requests()) > 0 })
		stop()
		fetched := shop.count("/products/alpha")

		second, _ := startOwned(t, env)
		st := second.waitExtract(keyAcme, id)
		require.Equal(t, "completed", st.str("status"), "%s", st.Raw)
		assert.Equal(t, decoded(t, productsAnswer), st.Body["data"])
		assert.NotEmpty(t, st.Body["sources"], "%s", st.Raw)
		reqs := m.Requests()
		require.Len(t, reqs, 2, "the interrupted call and the resumed one")
		assert.Equal(t, modeltest.StatusClientClosed, reqs[0].Status, "the first call was abandoned")
		assertOneBatch(t, second)
		assert.Equal(t, fetched, shop.count("/products/alpha"), "the pages were not scraped again")
	})
}

// assertOneBatch checks that acme has exactly one batch: a resumed extract
// waits for its batch rather than starting another.
func assertOneBatch(t *testing.T, ts *testService) {
	t.Helper()
	jobs, err := ts.Store.Jobs(context.Background(), "acme", "batch", "completed")
	require.NoError(t, err)
	assert.Len(t, jobs, 1, "batches of the extract")
}
