// Package model is Trawler's one language-model client. It speaks the
// OpenAI-compatible Chat Completions protocol (POST {base}/v1/chat/completions),
// which OpenAI, Ollama, vLLM, LM Studio and llama.cpp's llama-server all
// serve, through github.com/sashabaranov/go-openai. It bounds the calls in
// flight, retries what a backend asks to be retried (429 and 5xx, honouring
// Retry-After), asks for structured output against a normalised JSON schema
// and validates every answer against it, and reports each call's token usage
// to a Recorder.
package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Config says which model to call and how.
type Config struct {
	// BaseURL is the server, e.g. http://127.0.0.1:11434 or
	// https://api.openai.com/v1: /v1 is added when it is not the path's end.
	BaseURL string
	// APIKey is sent as a bearer token when set.
	APIKey string
	// Model is the model name every call asks for.
	Model string
	// Concurrency is the most calls in flight at once.
	Concurrency int
	// Timeout bounds one HTTP exchange with the server.
	Timeout time.Duration
	// ContextTokens is the model's context window; the input of a call is
	// trimmed to fit it together with OutputTokens.
	ContextTokens int
	// OutputTokens is the most a call may answer (max_tokens).
	OutputTokens int
}

// Usage is what one call (with its retries) cost.
type Usage struct {
	Team, Request string
	// Purpose names what the call was for: json, summary, question,
	// onlyCleanContent, crawlPrompt, extract.
	Purpose      string
	Model        string
	InputTokens  int
	OutputTokens int
	// Attempts counts the HTTP exchanges the call made.
	Attempts int
	Duration time.Duration
	At       time.Time
	// Error is why the call failed, empty when it answered.
	Error string
}

// Recorder keeps the usage of every call (store.Store implements it).
type Recorder interface {
	RecordModelUsage(ctx context.Context, u Usage) error
}

// Errors callers branch on.
var (
	// ErrTruncated: the answer stopped at the output limit
	// (finish_reason "length"); it is a failure, never a truncated answer.
	ErrTruncated = errors.New("the model's answer was cut off at its output limit")
	// ErrInvalidAnswer: the answer did not satisfy the schema, twice.
	ErrInvalidAnswer = errors.New("the model's answer did not match the schema")
)

// Call is one question to the model.
type Call struct {
	// Team and Request attribute the usage; Purpose names the call.
	Team, Request, Purpose string
	System, User           string
	// Schema asks for a JSON answer that satisfies it; nil with JSON unset
	// asks for text.
	Schema *Schema
	// JSON asks for any JSON object (json_object) when Schema is nil.
	JSON bool
}

// Answer is the model's answer.
type Answer struct {
	// Text is the message content as answered.
	Text string
	// JSON is the decoded answer of a structured call (unwrapped when the
	// schema's root was wrapped).
	JSON any
	// Usage sums every exchange of the call.
	Usage Usage
}

// Client calls the configured model.
type Client struct {
	cfg      Config
	api      *openai.Client
	slots    chan struct{}
	recorder Recorder
	// noSchema is set once the server refused a json_schema response
	// format: later calls go straight to json_object.
	noSchema atomic.Bool

	inFlight    atomic.Int64
	mu          sync.Mutex
	maxInFlight int64
	calls       atomic.Int64
	failures    atomic.Int64
}

// New returns a client for cfg; r, when not nil, records usage.
func New(cfg Config, r Recorder) *Client {
	if cfg.Concurrency < 1 {
		cfg.Concurrency = 1
	}
	oc := openai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = APIBase(cfg.BaseURL)
	oc.HTTPClient = retryAfterDoer{c: &http.Client{}}
	return &Client{cfg: cfg, api: openai.NewClientWithConfig(oc), slots: make(chan struct{}, cfg.Concurrency),
		recorder: r}
}

// APIBase returns the base that request paths (/chat/completions) are
// appended to: base with /v1 at its end.
func APIBase(base string) string {
	base = strings.TrimRight(strings.TrimSpace(base), "/")
	if strings.HasSuffix(base, "/v1") {
		return base
	}
	return base + "/v1"
}

// Model is the model's name.
func (c *Client) Model() string { return c.cfg.Model }

// Config is the client's configuration.
func (c *Client) Config() Config { return c.cfg }

// Stats are the client's counters since it started.
type Stats struct {
	InFlight, MaxInFlight, Calls, Failures int64
}

// Stats returns the calls in flight now and at most, and how many calls
// were made and failed.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	m := c.maxInFlight
	c.mu.Unlock()
	return Stats{InFlight: c.inFlight.Load(), MaxInFlight: m, Calls: c.calls.Load(), Failures: c.failures.Load()}
}

// maxAttempts bounds the exchanges of one call that the server asks to
// retry (429, 5xx, a dropped connection).
const maxAttempts = 4

// maxBackoff caps one wait between attempts, whatever Retry-After says.
const maxBackoff = 30 * time.Second

// Complete asks the model and returns its answer. A structured call's
// answer is validated against the schema; an invalid one is asked again
// once, then the call fails with ErrInvalidAnswer.
func (c *Client) Complete(ctx context.Context, call Call) (*Answer, error) {
	start := time.Now()
	u := Usage{Team: call.Team, Request: call.Request, Purpose: call.Purpose, Model: c.cfg.Model, At: start}
	ans, err := c.complete(ctx, call, &u)
	u.Duration = time.Since(start)
	c.calls.Add(1)
	if err != nil {
		c.failures.Add(1)
		u.Error = err.Error()
	}
	if c.recorder != nil {
		// The usage is recorded even when the caller has gone: the tokens
		// were spent.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = c.recorder.RecordModelUsage(rctx, u)
		cancel()
	}
	if err != nil {
		return nil, err
	}
	ans.Usage = u
	return ans, nil
}

func (c *Client) complete(ctx context.Context, call Call, u *Usage) (*Answer, error) {
	msgs := []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: call.User}}
	if call.System != "" {
		msgs = append([]openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem, Content: call.System}}, msgs...)
	}
	if call.Schema == nil && !call.JSON {
		text, err := c.exchange(ctx, msgs, nil, u)
		if err != nil {
			return nil, err
		}
		return &Answer{Text: text}, nil
	}
	var lastErr error
	for try := 0; try < 2; try++ {
		text, err := c.structured(ctx, call, msgs, u)
		if err != nil {
			return nil, err
		}
		v, err := call.Schema.Check(text)
		if err == nil {
			return &Answer{Text: text, JSON: v}, nil
		}
		lastErr = err
	}
	return nil, fmt.Errorf("%w: %v", ErrInvalidAnswer, lastErr)
}

// structured asks for JSON: with the schema as a json_schema response
// format, or, when the server refuses that (llama-server answers 400 when
// a schema meets its own grammar), as a json_object with the schema in
// the prompt.
func (c *Client) structured(ctx context.Context, call Call, msgs []openai.ChatCompletionMessage, u *Usage) (string, error) {
	if call.Schema != nil && !c.noSchema.Load() {
		rf := &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{Name: call.Schema.Name(), Schema: call.Schema,
				Strict: true}}
		text, err := c.exchange(ctx, msgs, rf, u)
		var se *ServerError
		if !errors.As(err, &se) || se.Status != http.StatusBadRequest {
			return text, err
		}
		// A server that does not take json_schema at all is remembered;
		// one that refused this schema (OpenAI's strict mode refuses some
		// keywords) is asked this call's way once more.
		if strings.Contains(se.Message, "json_schema") && !strings.Contains(se.Message, "Invalid schema") {
			c.noSchema.Store(true)
		}
	}
	// json_object needs the word JSON in the messages (OpenAI refuses it
	// otherwise), and the schema, when there is one, is only in the prompt.
	hint := "Answer with one JSON object only."
	if call.Schema != nil {
		hint = "Answer with one JSON object only, which must satisfy this JSON schema:\n" + string(call.Schema.sent)
	}
	withHint := append([]openai.ChatCompletionMessage{}, msgs...)
	withHint[0].Content = strings.TrimSpace(withHint[0].Content + "\n\n" + hint)
	return c.exchange(ctx, withHint, &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}, u)
}

// exchange sends one request, retrying what the server asks to be retried,
// and returns the message content.
func (c *Client) exchange(ctx context.Context, msgs []openai.ChatCompletionMessage, rf *openai.ChatCompletionResponseFormat, u *Usage) (string, error) {
	req := openai.ChatCompletionRequest{Model: c.cfg.Model, Messages: msgs, ResponseFormat: rf, Temperature: 0}
	if c.cfg.OutputTokens > 0 {
		req.MaxTokens = c.cfg.OutputTokens
	}
	for attempt := 1; ; attempt++ {
		hint := &retryHint{}
		resp, err := c.once(withRetryHint(ctx, hint), req)
		u.Attempts++
		if err == nil {
			u.InputTokens += resp.Usage.PromptTokens
			u.OutputTokens += resp.Usage.CompletionTokens
			if len(resp.Choices) == 0 {
				return "", errors.New("the model answered no choices")
			}
			ch := resp.Choices[0]
			if ch.FinishReason == openai.FinishReasonLength {
				return "", ErrTruncated
			}
			return ch.Message.Content, nil
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("calling the model: %w", ctx.Err())
		}
		wait, retry := retryable(err, hint, attempt)
		if !retry || attempt == maxAttempts {
			return "", describe(err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", fmt.Errorf("calling the model: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// once is one HTTP exchange, in a slot and within the per-call timeout.
func (c *Client) once(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return openai.ChatCompletionResponse{}, ctx.Err()
	}
	n := c.inFlight.Add(1)
	c.mu.Lock()
	c.maxInFlight = max(c.maxInFlight, n)
	c.mu.Unlock()
	defer func() {
		c.inFlight.Add(-1)
		<-c.slots
	}()
	if c.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	return c.api.CreateChatCompletion(ctx, req)
}

// retryable says whether err is worth another attempt, and after how
// long: 429 and 5xx answers and dropped connections are; Retry-After,
// when given, says how long, else the wait doubles from one second.
func retryable(err error, hint *retryHint, attempt int) (time.Duration, bool) {
	status := 0
	var ae *openai.APIError
	var re *openai.RequestError
	switch {
	case errors.As(err, &ae):
		status = ae.HTTPStatusCode
	case errors.As(err, &re):
		status = re.HTTPStatusCode
	}
	switch {
	case status == http.StatusTooManyRequests || status >= 500:
	case status != 0:
		return 0, false
	case errors.Is(err, context.DeadlineExceeded):
		return 0, false // the per-call timeout: a slow model stays slow
	case !dropped(err):
		return 0, false // an answer that is not JSON will not become JSON
	}
	wait := time.Second << (attempt - 1)
	if hint.given {
		wait = hint.retryAfter
	}
	return min(wait, maxBackoff), true
}

// dropped reports whether err is a connection that failed or closed
// before the answer was read.
func dropped(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED)
}

// describe turns a failed exchange into an error that says what the
// server answered.
func describe(err error) error {
	var ae *openai.APIError
	var re *openai.RequestError
	switch {
	case errors.As(err, &ae):
		return &ServerError{Status: ae.HTTPStatusCode, Message: ae.Message}
	case errors.As(err, &re):
		// Not OpenAI's error shape: a proxy's page, a server's own text.
		msg := strings.Join(strings.Fields(string(re.Body)), " ")
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		return &ServerError{Status: re.HTTPStatusCode, Message: msg}
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("calling the model: no answer within the model timeout: %w", err)
	}
	return fmt.Errorf("calling the model: %w", err)
}

// ServerError is an answer of the model server other than success.
type ServerError struct {
	Status  int
	Message string
}

func (e *ServerError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("the model server answered HTTP %d", e.Status)
	}
	return fmt.Sprintf("the model server answered HTTP %d: %s", e.Status, e.Message)
}

// retryHint carries a Retry-After header from the HTTP layer (which
// go-openai does not expose) back to the retry loop.
type retryHint struct {
	retryAfter time.Duration
	given      bool // a Retry-After was read, 0 included
}

type retryHintKey struct{}

func withRetryHint(ctx context.Context, h *retryHint) context.Context {
	return context.WithValue(ctx, retryHintKey{}, h)
}

// retryAfterDoer is the HTTP client of go-openai; it reads Retry-After.
type retryAfterDoer struct{ c *http.Client }

func (d retryAfterDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.c.Do(req)
	if err != nil || resp.StatusCode < 400 {
		return resp, err
	}
	if h, ok := req.Context().Value(retryHintKey{}).(*retryHint); ok {
		h.retryAfter, h.given = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return resp, nil
}

// parseRetryAfter reads seconds or an HTTP date; ok is false when the
// header is absent or unreadable.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 && s < 1e6 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now)), true
	}
	return 0, false
}

// EstimateTokens estimates the tokens of text as a quarter of its bytes,
// the usual rule of thumb for English with BPE tokenizers.
func EstimateTokens(text string) int { return (len(text) + 3) / 4 }

// InputBudget is how many tokens of page text one call may carry: the
// context window less the answer's room and reserve for the prompt around
// the text.
func (c *Client) InputBudget(reserve int) int {
	return max(256, c.cfg.ContextTokens-c.cfg.OutputTokens-reserve)
}

// Fit trims text to budget tokens (estimated), cutting at a line break
// when one is near; it reports whether it cut.
func Fit(text string, budget int) (string, bool) {
	limit := budget * 4
	if len(text) <= limit {
		return text, false
	}
	cut := limit
	if nl := strings.LastIndexByte(text[:limit], '\n'); nl > limit*3/4 {
		cut = nl
	}
	for cut > 0 && cut < len(text) && !utf8RuneStart(text[cut]) {
		cut--
	}
	return text[:cut], true
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
