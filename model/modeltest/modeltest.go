// Package modeltest runs a language-model server for tests, as
// net/http/httptest runs an HTTP server: it speaks OpenAI's Chat Completions
// protocol (POST {URL}/v1/chat/completions) on a loopback port, validates
// each request as OpenAI does and refuses a bad one with OpenAI's own error,
// and answers a good one with a reply the test chose (Enqueue, Respond) or
// a plausible default (DefaultReply). It records every request, so a test
// can check what its client sent.
//
// No model runs on a test machine; this server is what Trawler's model
// client is tested against, in Go tests and, through the fakellm command,
// in the Node.js end-to-end tests.
package modeltest

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// Path is where the server answers chat completions.
const Path = "/v1/chat/completions"

// StatusClientClosed is the Status of a request whose client went away
// before its answer (nginx's name and number for it): nothing was sent.
const StatusClientClosed = 499

// DefaultModel is the one model a server serves unless told otherwise.
const DefaultModel = "test-model"

// DefaultText is the content of DefaultReply to a request for text.
const DefaultText = "This is a reply from the modeltest server."

// Server is one running test server.
type Server struct {
	// URL is the base URL, http://127.0.0.1:PORT: clients post to
	// URL+"/v1/chat/completions".
	URL string

	cfg    config
	http   *http.Server
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once

	mu          sync.Mutex
	queue       []Reply
	responder   func(Request) Reply
	requests    []*Request
	inFlight    int
	maxInFlight int
}

// Reply is what the server answers one valid request with.
type Reply struct {
	// Status is the HTTP status; 0 is 200. A status of 400 or more with no
	// Body answers an error in OpenAI's shape, fitting the status (429 a
	// rate limit, 503 an overload, ...); Content, when set, is then its
	// message.
	Status int
	// Content is the assistant message's content.
	Content string
	// FinishReason is the choice's finish_reason; "" is "stop". "length"
	// simulates an answer cut short by max_tokens.
	FinishReason string
	// Delay is how long the server waits before answering. A client that
	// goes away meanwhile ends the wait, as it would end a real model's
	// work.
	Delay time.Duration
	// RetryAfter, when set, is the Retry-After header, in seconds ("1").
	RetryAfter string
	// Body, when set, is the whole response body, verbatim: invalid JSON,
	// a proxy's HTML error page.
	Body string
	// ContentType is the Content-Type of a Body; "" is application/json for
	// a body that starts like JSON and a sniffed type for any other.
	ContentType string
	// PromptTokens and CompletionTokens are the usage reported; 0 is an
	// estimate of a quarter of the characters (of the messages, of
	// Content), at least 1.
	PromptTokens, CompletionTokens int
}

// config is what the options set.
type config struct {
	addr         string
	apiKey       string
	models       []string
	noJSONSchema bool
	latency      time.Duration
	control      bool
}

// Option configures a Server.
type Option func(*config)

// WithAPIKey makes the server require "Authorization: Bearer key", and
// refuse a request without it (or with another key) with OpenAI's 401.
func WithAPIKey(key string) Option {
	return func(c *config) { c.apiKey = key }
}

// WithModels sets the models the server serves, instead of DefaultModel; a
// request for any other is OpenAI's 404 model_not_found.
func WithModels(names ...string) Option {
	return func(c *config) { c.models = append([]string(nil), names...) }
}

// WithoutJSONSchema makes the server refuse a json_schema response format
// as llama.cpp's llama-server does when it does not support one, so that a
// client's fallback to json_object can be tested: 400 with llama.cpp's error
// body, {"error":{"code":400,"message":...,"type":"invalid_request_error"}}.
func WithoutJSONSchema() Option {
	return func(c *config) { c.noJSONSchema = true }
}

// WithLatency makes every answer on the chat completions endpoint, errors
// included, take at least d, as a real model's would.
func WithLatency(d time.Duration) Option {
	return func(c *config) { c.latency = d }
}

// WithAddr sets the listening address, which must be on a loopback
// interface; the default, 127.0.0.1:0, takes a free port.
func WithAddr(addr string) Option {
	return func(c *config) { c.addr = addr }
}

// WithControlAPI also serves ControlHandler under /_test/ on the server's
// own port, for tests in another process (the fakellm command).
func WithControlAPI() Option {
	return func(c *config) { c.control = true }
}

// Start runs a server for t and closes it when t ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := New(opts...)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// New runs a server; the caller closes it.
func New(opts ...Option) (*Server, error) {
	cfg := config{addr: "127.0.0.1:0", models: []string{DefaultModel}}
	for _, o := range opts {
		o(&cfg)
	}
	if err := checkLoopback(cfg.addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", cfg.addr, err)
	}
	// Every request's context derives from ctx, so that Close ends the
	// waits of delayed replies instead of waiting for them.
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{URL: "http://" + ln.Addr().String(), cfg: cfg, cancel: cancel, done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/", s.serveChat)
	if cfg.control {
		mux.Handle("/_test/", s.ControlHandler())
	}
	s.http = &http.Server{
		Handler:           mux,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		defer close(s.done)
		_ = s.http.Serve(ln)
	}()
	return s, nil
}

// checkLoopback refuses an address that other machines could reach: the
// server has no authentication worth the name and a control API with none.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("address %q is not on a loopback interface (use 127.0.0.1:PORT)", addr)
}

// Close stops the server, ending the requests still waiting to be answered
// (their clients see the connection close), and returns once they have
// ended, or after 5s if a responder does not return.
func (s *Server) Close() {
	s.once.Do(func() {
		// Not Shutdown: it waits up to 5s for connections a client opened
		// and never used, which http.Transport leaves behind, and a test
		// server has nothing to drain gracefully.
		s.cancel()
		_ = s.http.Close()
		<-s.done
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
			s.mu.Lock()
			n := s.inFlight
			s.mu.Unlock()
			if n == 0 {
				return
			}
			time.Sleep(time.Millisecond)
		}
	})
}

// Enqueue adds replies to the queue: each valid request takes the next
// one, in order, before the responder is asked.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, replies...)
}

// Respond sets the function that replies to valid requests once the queue
// is empty (DefaultReply until then). It is called concurrently when
// requests are.
func (s *Server) Respond(f func(Request) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.responder = f
}

// Requests returns every request received so far, valid or not, in the
// order they arrived.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	for i, r := range s.requests {
		out[i] = *r
	}
	return out
}

// Reset forgets the requests, the queue and the responder, so that one
// server can serve several tests in turn.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests, s.queue, s.responder = nil, nil, nil
	s.maxInFlight = s.inFlight
}

// MaxInFlight returns the most requests that were being answered at once
// since the server started or was Reset: what a client's concurrency limit
// let through.
func (s *Server) MaxInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxInFlight
}

func (s *Server) enter(r *Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
	s.inFlight++
	s.maxInFlight = max(s.maxInFlight, s.inFlight)
}

func (s *Server) leave(r *Request, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight--
	r.Status = status
}

// next is the reply to a valid request: the queue's head, or else the
// responder's.
func (s *Server) next(r Request) Reply {
	s.mu.Lock()
	if len(s.queue) > 0 {
		reply := s.queue[0]
		s.queue = s.queue[1:]
		s.mu.Unlock()
		return reply
	}
	f := s.responder
	s.mu.Unlock()
	if f == nil {
		f = DefaultReply
	}
	// Outside the lock: a responder may block, to hold requests in flight.
	return f(r)
}

// serveChat answers everything but the control API.
func (s *Server) serveChat(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	raw, _ := io.ReadAll(r.Body)
	req := &Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw}
	// The body is decoded, as far as it goes, before the request is
	// recorded: from then on Requests may read it concurrently.
	v, err := parseJSON(raw)
	body, _ := v.(*object)
	if err != nil {
		body = nil
	}
	if body != nil {
		req.fill(body)
	}
	s.enter(req)
	status := StatusClientClosed
	defer func() { s.leave(req, status) }()

	reply, fault := s.decide(r, *req, body)
	wait := max(s.cfg.latency, reply.Delay)
	if !sleep(r.Context(), start.Add(wait)) {
		// The client went away, or Close was called: drop the connection
		// rather than let net/http send an empty 200.
		panic(http.ErrAbortHandler)
	}
	w.Header().Set("X-Request-Id", "req_"+randomID(32))
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	if fault != nil {
		status = fault.status
		if status == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", http.MethodPost)
		}
		writeBody(w, status, "application/json", fault.body())
		return
	}
	status = s.write(w, *req, reply)
}

// decide checks a request as OpenAI would, in its order (route, key,
// body), and picks the reply to a valid one.
func (s *Server) decide(r *http.Request, req Request, body *object) (Reply, *apiError) {
	if r.URL.Path != Path {
		return Reply{}, &apiError{status: http.StatusNotFound, typ: "invalid_request_error",
			message: fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path)}
	}
	if r.Method != http.MethodPost {
		return Reply{}, &apiError{status: http.StatusMethodNotAllowed, typ: "invalid_request_error",
			message: fmt.Sprintf("Invalid method for URL (%s %s)", r.Method, r.URL.Path)}
	}
	if err := s.checkKey(r.Header.Get("Authorization")); err != nil {
		return Reply{}, err
	}
	if err := checkContentType(r.Header.Get("Content-Type")); err != nil {
		return Reply{}, err
	}
	if body == nil {
		return Reply{}, invalid("", "", msgParse)
	}
	if fault := s.validate(body, req); fault != nil {
		return Reply{}, fault
	}
	reply := s.next(req)
	if reply.Status >= 400 && reply.Body == "" {
		return reply, errForStatus(reply.Status, req.Model, reply.Content, reply.RetryAfter)
	}
	return reply, nil
}

func (s *Server) checkKey(auth string) *apiError {
	if s.cfg.apiKey == "" {
		return nil
	}
	key, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || strings.TrimSpace(key) == "" {
		return &apiError{status: http.StatusUnauthorized, typ: "invalid_request_error", message: msgNoKey}
	}
	if key != s.cfg.apiKey {
		return errWrongKey(key)
	}
	return nil
}

func checkContentType(ct string) *apiError {
	if ct == "" {
		return invalid("", "unsupported_content_type", "This API method only accepts 'application/json' "+
			"requests, but you did not specify a 'Content-Type' header. Please try again with a "+
			"supported content type.")
	}
	if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "application/json" {
		return nil
	}
	return invalid("", "unsupported_content_type", "Unsupported content type: '%s'. This API method "+
		"only accepts 'application/json' requests, but you specified the header 'Content-Type: %s'. "+
		"Please try again with a supported content type.", ct, ct)
}

// completion is OpenAI's chat.completion object, members in its order.
type completion struct {
	ID                string   `json:"id"`
	Object            string   `json:"object"`
	Created           int64    `json:"created"`
	Model             string   `json:"model"`
	Choices           []choice `json:"choices"`
	Usage             usage    `json:"usage"`
	SystemFingerprint string   `json:"system_fingerprint"`
}

type choice struct {
	Index        int             `json:"index"`
	Message      answerMessage   `json:"message"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
}

type answerMessage struct {
	Role    string  `json:"role"`
	Content string  `json:"content"`
	Refusal *string `json:"refusal"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// write answers a valid request with reply and returns the status sent.
func (s *Server) write(w http.ResponseWriter, req Request, reply Reply) int {
	status := reply.Status
	if status == 0 {
		status = http.StatusOK
	}
	if reply.Body != "" {
		ct := reply.ContentType
		if ct == "" {
			ct = sniff(reply.Body)
		}
		writeBody(w, status, ct, []byte(reply.Body))
		return status
	}
	prompt := reply.PromptTokens
	if prompt == 0 {
		chars := 0
		for _, m := range req.Messages {
			chars += utf8.RuneCountInString(m.Content)
		}
		prompt = max(chars/4, 1)
	}
	completionTokens := reply.CompletionTokens
	if completionTokens == 0 {
		completionTokens = max(utf8.RuneCountInString(reply.Content)/4, 1)
	}
	finish := reply.FinishReason
	if finish == "" {
		finish = "stop"
	}
	out, _ := json.Marshal(completion{
		ID:      "chatcmpl-" + randomID(29),
		Object:  "chat.completion",
		Created: time.Now().Unix(),
		Model:   req.Model,
		Choices: []choice{{
			Message:      answerMessage{Role: "assistant", Content: reply.Content},
			Logprobs:     json.RawMessage("null"),
			FinishReason: finish,
		}},
		Usage:             usage{PromptTokens: prompt, CompletionTokens: completionTokens, TotalTokens: prompt + completionTokens},
		SystemFingerprint: "fp_modeltest",
	})
	writeBody(w, status, "application/json", out)
	return status
}

func writeBody(w http.ResponseWriter, status int, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// sniff is the Content-Type of a raw body: JSON for what starts like JSON
// (valid or not, as a broken server would label it), else what
// net/http sniffs (text/html for an error page).
func sniff(body string) string {
	if t := strings.TrimSpace(body); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		return "application/json"
	}
	return http.DetectContentType([]byte(body))
}

// sleep waits until t and reports whether it got there before ctx ended.
func sleep(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

const idAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// randomID is n random letters and digits, as in OpenAI's ids.
func randomID(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(errors.New("modeltest: no randomness: " + err.Error()))
	}
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return string(b)
}

// DefaultReply is the reply to a request when the test set none: for a
// json_schema response format, a JSON value that satisfies the schema,
// deterministic (the first enum value, strings "example" or an example of
// their format, integers 1, numbers 1.5, booleans true, arrays of one item,
// objects with every property in the schema's order, null only where the
// type allows nothing else, the first non-null branch of anyOf and oneOf,
// $ref followed within the schema, bounds and lengths respected); for
// json_object, "{}"; for text, DefaultText.
func DefaultReply(r Request) Reply {
	rf := r.ResponseFormat
	if rf == nil {
		return Reply{Content: DefaultText}
	}
	switch rf.Type {
	case "json_object":
		return Reply{Content: "{}"}
	case "json_schema":
		if rf.JSONSchema == nil {
			return Reply{Content: "{}"}
		}
		schema, err := parseJSON(rf.JSONSchema.Schema)
		if err != nil {
			return Reply{Content: "{}"}
		}
		g := &generator{root: schema}
		return Reply{Content: encodeJSON(g.gen(schema, 0))}
	}
	return Reply{Content: DefaultText}
}
