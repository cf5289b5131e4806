package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trawler-dev/trawler/cmd/bench/transform"
	"github.com/trawler-dev/trawler/model"
	"github.com/trawler-dev/trawler/model/modeltest"
)

const (
	// modelLatency is the test model's answer time: no weights can be had
	// here, so the model is modeltest's server answering after a fixed
	// delay, and what is measured is Trawler's part around it.
	modelLatency       = 50 * time.Millisecond
	modelOverheadPairs = 30
	modelBatchPages    = 100
	modelConcurrency   = 4
)

// modelPerformance measures the model-backed formats against an
// OpenAI-compatible test server that answers in 50 ms:
//   - model_overhead_p50_ms: a scrape with json minus the same scrape with
//     Markdown only (both answered from the cache, so the fetch is not
//     in it) minus the model's 50 ms, over pairs taken alternately;
//   - model_input_tokens_per_page and model_input_over_raw_html: what
//     Trawler sends the model for python3.11-doc pages (the whole user
//     message, estimated as characters / 4), against the pages' raw HTML;
//   - model_calls_in_flight_max: the most calls the server saw at once
//     while a 100-page batch asked for json, against
//     TRAWLER_LLM_CONCURRENCY (4).
func (b *bench) modelPerformance(ctx context.Context, _ *instance) error {
	srv, err := modeltest.New(modeltest.WithLatency(modelLatency))
	if err != nil {
		return err
	}
	defer srv.Close()
	env := scrapeEnv(poolSize, 30*time.Second)
	env["TRAWLER_LLM_BASE_URL"] = srv.URL
	env["TRAWLER_LLM_MODEL"] = modeltest.DefaultModel
	env["TRAWLER_LLM_CONCURRENCY"] = strconv.Itoa(modelConcurrency)
	// The input measured is the page as converted, not as trimmed.
	env["TRAWLER_LLM_CONTEXT_TOKENS"] = "1000000"
	in, err := b.startWith(ctx, "model", 1, poolSize, env)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := b.modelOverhead(ctx, in, srv); err != nil {
		return err
	}
	return b.modelBatch(ctx, in, srv)
}

var benchSchema = json.RawMessage(`{"type": "object", "properties": {"title": {"type": "string"},
	"topics": {"type": "array", "items": {"type": "string"}}}, "required": ["title"]}`)

func (b *bench) modelOverhead(ctx context.Context, in *instance, srv *modeltest.Server) error {
	u := b.siteURL() + "/articles/7"
	scrape := func(formats []any) (time.Duration, map[string]any, error) {
		body, _ := json.Marshal(map[string]any{"url": u, "formats": formats})
		var out struct {
			Data map[string]any `json:"data"`
		}
		t := time.Now()
		err := in.do(ctx, http.MethodPost, "/v2/scrape", body, &out)
		return time.Since(t), out.Data, err
	}
	markdown := []any{"markdown"}
	withJSON := []any{"markdown", map[string]any{"type": "json", "schema": benchSchema}}
	// The first scrape fills the cache; every timed one is answered from it.
	if _, _, err := scrape(markdown); err != nil {
		return err
	}
	for i := 0; i < 3; i++ {
		if _, _, err := scrape(withJSON); err != nil {
			return err
		}
	}
	var diffs, plain, extracted []time.Duration
	for i := 0; i < modelOverheadPairs; i++ {
		a, _, err := scrape(markdown)
		if err != nil {
			return err
		}
		j, doc, err := scrape(withJSON)
		if err != nil {
			return err
		}
		if doc["json"] == nil {
			return fmt.Errorf("the scrape with json has no json: %v", doc["warning"])
		}
		plain, extracted = append(plain, a), append(extracted, j)
		diffs = append(diffs, j-a-modelLatency)
	}
	logf("model: scrape from the cache %.1f ms (p50) with Markdown, %.1f ms with json; the model answers in %s",
		ms(median(plain)), ms(median(extracted)), modelLatency)
	figure("model_overhead_p50_ms", ms(median(diffs)), "ms")
	return nil
}

func (b *bench) modelBatch(ctx context.Context, in *instance, srv *modeltest.Server) error {
	pages, err := libraryPages(modelBatchPages)
	if err != nil {
		return err
	}
	site := httptest.NewServer(http.FileServer(http.Dir(transform.PythonDocs)))
	defer site.Close()
	urls := make([]string, len(pages))
	rawHTML := 0
	for i, p := range pages {
		urls[i] = site.URL + "/" + p.rel
		rawHTML += len(p.body)
	}
	srv.Reset()
	body, _ := json.Marshal(map[string]any{"urls": urls, "formats": []any{map[string]any{"type": "json", "schema": benchSchema}}})
	var started struct {
		ID string `json:"id"`
	}
	t := time.Now()
	if err := in.do(ctx, http.MethodPost, "/v2/batch/scrape", body, &started); err != nil {
		return err
	}
	if err := in.waitBatch(ctx, started.ID); err != nil {
		return err
	}
	wall := time.Since(t)
	sent, calls := 0, 0
	for _, r := range srv.Requests() {
		if r.Status == http.StatusOK {
			sent += model.EstimateTokens(r.User())
			calls++
		}
	}
	if calls < len(pages) {
		return fmt.Errorf("the batch made %d model calls for %d pages", calls, len(pages))
	}
	logf("model: a batch of %d python3.11-doc pages with json in %s, %d model calls; %.1f MB of raw HTML",
		len(pages), wall.Round(time.Millisecond), calls, float64(rawHTML)/(1<<20))
	figure("model_input_tokens_per_page", float64(sent)/float64(calls), "tokens")
	figure("model_raw_html_tokens_per_page", float64(rawHTML)/4/float64(len(pages)), "tokens")
	figure("model_input_over_raw_html", float64(sent)/float64((rawHTML+3)/4), "x")
	figure("model_calls_in_flight_max", float64(srv.MaxInFlight()), "calls")
	figure("model_concurrency_setting", modelConcurrency, "calls")
	return nil
}

// libraryPages returns n of python3.11-doc's library pages, in name
// order.
func libraryPages(n int) ([]docPage, error) {
	all, err := readPythonDocs()
	if err != nil {
		return nil, fmt.Errorf("the model phase reads python3.11-doc (make bench installs it): %w", err)
	}
	var out []docPage
	for _, p := range all {
		if strings.HasPrefix(p.rel, "library/") {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b docPage) int { return strings.Compare(a.rel, b.rel) })
	return out[:min(n, len(out))], nil
}

// waitBatch polls a batch until it completes.
func (in *instance) waitBatch(ctx context.Context, id string) error {
	for {
		var st struct {
			Status    string `json:"status"`
			Completed int    `json:"completed"`
			Total     int    `json:"total"`
		}
		if err := in.do(ctx, http.MethodGet, "/v2/batch/scrape/"+id+"?limit=1", nil, &st); err != nil {
			return err
		}
		switch st.Status {
		case "completed":
			return nil
		case "failed", "cancelled":
			return fmt.Errorf("batch %s ended %s after %d of %d pages", id, st.Status, st.Completed, st.Total)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
