package model_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/model"
	"github.com/trawler-dev/trawler/model/modeltest"
)

// usageLog is a Recorder that keeps what it is told.
type usageLog struct {
	mu   sync.Mutex
	uses []model.Usage
}

func (l *usageLog) RecordModelUsage(_ context.Context, u model.Usage) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.uses = append(l.uses, u)
	return nil
}

func (l *usageLog) all() []model.Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]model.Usage(nil), l.uses...)
}

func client(t *testing.T, srv *modeltest.Server, edit func(*model.Config)) (*model.Client, *usageLog) {
	cfg := model.Config{BaseURL: srv.URL, APIKey: "sk-test-key", Model: modeltest.DefaultModel, Concurrency: 4,
		Timeout: 10 * time.Second, ContextTokens: 8192, OutputTokens: 1024}
	if edit != nil {
		edit(&cfg)
	}
	log := &usageLog{}
	return model.New(cfg, log), log
}

func productSchema(t *testing.T) *model.Schema {
	s, err := model.NormalizeSchema(json.RawMessage(`{"type": "object", "properties": {"name": {"type": "string"},
		"price": {"type": "number"}}, "required": ["name"]}`))
	require.NoError(t, err)
	return s
}

// A structured call sends the normalised schema as OpenAI's strict
// json_schema response format, and returns the validated answer; its
// usage is recorded with the team and request.
func TestStructuredCall(t *testing.T) {
	t.Parallel()
	srv := modeltest.Start(t, modeltest.WithAPIKey("sk-test-key"))
	c, log := client(t, srv, nil)
	srv.Enqueue(modeltest.Reply{Content: `{"name": "Net", "price": null}`, PromptTokens: 120, CompletionTokens: 9})
	ans, err := c.Complete(context.Background(), model.Call{Team: "acme", Request: "r1", Purpose: "json",
		System: "extract", User: "the page", Schema: productSchema(t)})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"name": "Net"}, ans.JSON, "an optional property's null is dropped")
	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	r := reqs[0]
	assert.Equal(t, 200, r.Status)
	assert.Equal(t, "extract", r.System())
	assert.Equal(t, "the page", r.User())
	assert.Equal(t, 1024, r.MaxTokens)
	require.NotNil(t, r.ResponseFormat)
	assert.Equal(t, "json_schema", r.ResponseFormat.Type)
	require.NotNil(t, r.ResponseFormat.JSONSchema)
	assert.True(t, r.ResponseFormat.JSONSchema.Strict)
	assert.JSONEq(t, `{"type":"object","properties":{"name":{"type":"string"},"price":{"type":["number","null"]}},
		"required":["name","price"],"additionalProperties":false}`, string(r.ResponseFormat.JSONSchema.Schema))
	uses := log.all()
	require.Len(t, uses, 1)
	assert.Equal(t, model.Usage{Team: "acme", Request: "r1", Purpose: "json", Model: modeltest.DefaultModel,
		InputTokens: 120, OutputTokens: 9, Attempts: 1}, model.Usage{Team: uses[0].Team, Request: uses[0].Request,
		Purpose: uses[0].Purpose, Model: uses[0].Model, InputTokens: uses[0].InputTokens, OutputTokens: uses[0].OutputTokens,
		Attempts: uses[0].Attempts})
	assert.Equal(t, 9, ans.Usage.OutputTokens)
}

// A server that refuses json_schema (as llama.cpp's llama-server can) is
// asked again with json_object and the schema in the prompt, and later
// calls go straight there.
func TestJSONObjectFallback(t *testing.T) {
	t.Parallel()
	srv := modeltest.Start(t, modeltest.WithoutJSONSchema())
	c, log := client(t, srv, nil)
	for i := 0; i < 2; i++ {
		srv.Enqueue(modeltest.Reply{Content: `{"name": "Net", "price": 3}`})
		ans, err := c.Complete(context.Background(), model.Call{User: "the page", Schema: productSchema(t)})
		require.NoError(t, err)
		assert.Equal(t, map[string]any{"name": "Net", "price": json.Number("3")}, ans.JSON)
	}
	reqs := srv.Requests()
	require.Len(t, reqs, 3, "one refusal, then two json_object calls")
	assert.Equal(t, 400, reqs[0].Status)
	assert.Equal(t, "json_schema", reqs[0].ResponseFormat.Type)
	for _, r := range reqs[1:] {
		assert.Equal(t, 200, r.Status)
		assert.Equal(t, "json_object", r.ResponseFormat.Type)
		assert.Contains(t, r.User(), `"additionalProperties":false`, "the schema is in the prompt")
		assert.Contains(t, r.User(), "JSON")
	}
	assert.Equal(t, 2, log.all()[0].Attempts, "the refused exchange counts")
}

// An answer that breaks the schema is asked again once; a second bad
// answer fails the call. A cut-off answer is a failure, not a short one.
func TestInvalidAndTruncatedAnswers(t *testing.T) {
	t.Parallel()
	srv := modeltest.Start(t)
	c, log := client(t, srv, nil)
	ctx := context.Background()
	call := model.Call{User: "p", Schema: productSchema(t)}

	srv.Enqueue(modeltest.Reply{Content: `{"price": 1}`}, modeltest.Reply{Content: `{"name": "ok", "price": 1}`})
	ans, err := c.Complete(ctx, call)
	require.NoError(t, err)
	assert.Equal(t, "ok", ans.JSON.(map[string]any)["name"])

	srv.Enqueue(modeltest.Reply{Content: `not json`}, modeltest.Reply{Content: `{"name": 5, "price": 1}`})
	_, err = c.Complete(ctx, call)
	require.ErrorIs(t, err, model.ErrInvalidAnswer)
	assert.Contains(t, err.Error(), "name")

	srv.Enqueue(modeltest.Reply{Content: `{"name": "cut`, FinishReason: "length"})
	_, err = c.Complete(ctx, call)
	require.ErrorIs(t, err, model.ErrTruncated)

	srv.Enqueue(modeltest.Reply{Content: "free text", FinishReason: "length"})
	_, err = c.Complete(ctx, model.Call{User: "p"})
	require.ErrorIs(t, err, model.ErrTruncated, "a text answer cut off fails too")

	uses := log.all()
	require.Len(t, uses, 4)
	assert.Empty(t, uses[0].Error)
	assert.Equal(t, 2, uses[0].Attempts)
	for _, u := range uses[1:] {
		assert.NotEmpty(t, u.Error, "a failed call is recorded with its reason")
	}
}

// 429 and 5xx are retried, after Retry-After when the server gives one;
// other refusals and a model slower than the timeout are not.
func TestRetries(t *testing.T) {
	t.Parallel()
	srv := modeltest.Start(t)
	c, _ := client(t, srv, func(cfg *model.Config) { cfg.Timeout = 500 * time.Millisecond })
	ctx := context.Background()

	srv.Enqueue(modeltest.Reply{Status: 429, RetryAfter: "1"}, modeltest.Reply{Content: "fine"})
	began := time.Now()
	ans, err := c.Complete(ctx, model.Call{User: "p"})
	require.NoError(t, err)
	assert.Equal(t, "fine", ans.Text)
	assert.GreaterOrEqual(t, time.Since(began), time.Second, "Retry-After was honoured")
	assert.Equal(t, 2, ans.Usage.Attempts)

	srv.Reset()
	srv.Enqueue(modeltest.Reply{Status: 502, RetryAfter: "0"}, modeltest.Reply{Status: 503, RetryAfter: "0"}, modeltest.Reply{Status: 500, RetryAfter: "0"}, modeltest.Reply{Status: 500, RetryAfter: "0"})
	_, err = c.Complete(ctx, model.Call{User: "p"})
	var se *model.ServerError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 500, se.Status)
	assert.Len(t, srv.Requests(), 4, "four attempts in all")

	srv.Reset()
	bad := modeltest.Reply{Status: 502, Body: "<html><body>Bad Gateway from the proxy</body></html>", ContentType: "text/html", RetryAfter: "0"}
	srv.Enqueue(bad, bad, bad, bad)
	_, err = c.Complete(ctx, model.Call{User: "p"})
	require.ErrorAs(t, err, &se)
	assert.Contains(t, se.Message, "Bad Gateway from the proxy", "a body that is not OpenAI's shape is quoted")

	srv.Reset()
	other, _ := client(t, srv, func(cfg *model.Config) { cfg.Model = "no-such-model" })
	_, err = other.Complete(ctx, model.Call{User: "p"})
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 404, se.Status)
	assert.Contains(t, se.Message, "does not exist")
	assert.Len(t, srv.Requests(), 1, "a 404 is not retried")

	srv.Reset()
	srv.Enqueue(modeltest.Reply{Content: "late", Delay: 3 * time.Second})
	began = time.Now()
	_, err = c.Complete(ctx, model.Call{User: "p"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "timeout")
	assert.Less(t, time.Since(began), 2*time.Second, "a slow model is not asked again")
}

// No more calls are in flight than the configured concurrency, and a
// cancelled caller stops waiting at once.
func TestConcurrencyAndCancel(t *testing.T) {
	t.Parallel()
	srv := modeltest.Start(t, modeltest.WithLatency(150*time.Millisecond))
	c, _ := client(t, srv, func(cfg *model.Config) { cfg.Concurrency = 2 })
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Complete(context.Background(), model.Call{User: "p"})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, 2, srv.MaxInFlight())
	assert.EqualValues(t, 2, c.Stats().MaxInFlight)
	assert.EqualValues(t, 8, c.Stats().Calls)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	srv.Enqueue(modeltest.Reply{Content: "late", Delay: 5 * time.Second})
	began := time.Now()
	_, err := c.Complete(ctx, model.Call{User: "p"})
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "deadline"), err.Error())
	assert.Less(t, time.Since(began), time.Second)
}
