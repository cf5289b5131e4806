package modeltest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// ControlReply is one reply as the control API takes it, in JSON: Reply's
// fields in camelCase, the delay in milliseconds (delayMs).
type ControlReply struct {
	Status           int    `json:"status,omitempty"`
	Content          string `json:"content,omitempty"`
	FinishReason     string `json:"finishReason,omitempty"`
	DelayMs          int    `json:"delayMs,omitempty"`
	RetryAfter       string `json:"retryAfter,omitempty"`
	Body             string `json:"body,omitempty"`
	ContentType      string `json:"contentType,omitempty"`
	PromptTokens     int    `json:"promptTokens,omitempty"`
	CompletionTokens int    `json:"completionTokens,omitempty"`
}

// Reply is the Reply r stands for.
func (r ControlReply) Reply() Reply {
	return Reply{
		Status: r.Status, Content: r.Content, FinishReason: r.FinishReason,
		Delay: time.Duration(r.DelayMs) * time.Millisecond, RetryAfter: r.RetryAfter,
		Body: r.Body, ContentType: r.ContentType,
		PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens,
	}
}

// ControlRequest is one recorded request as the control API lists it, in
// JSON: Request's fields in camelCase, the body as a string (raw).
type ControlRequest struct {
	Method         string                 `json:"method"`
	Path           string                 `json:"path"`
	Headers        http.Header            `json:"headers"`
	Model          string                 `json:"model"`
	Messages       []ControlMessage       `json:"messages"`
	ResponseFormat *ControlResponseFormat `json:"responseFormat"`
	MaxTokens      int                    `json:"maxTokens"`
	Temperature    *float64               `json:"temperature"`
	Status         int                    `json:"status"`
	// Raw is the body as received.
	Raw string `json:"raw"`
}

// ControlMessage is a Message in JSON.
type ControlMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ControlResponseFormat is a ResponseFormat in JSON.
type ControlResponseFormat struct {
	Type       string             `json:"type"`
	JSONSchema *ControlJSONSchema `json:"jsonSchema"`
}

// ControlJSONSchema is a JSONSchema in JSON.
type ControlJSONSchema struct {
	Name   string          `json:"name"`
	Strict bool            `json:"strict"`
	Schema json.RawMessage `json:"schema"`
}

// ControlStats is what GET /_test/stats answers.
type ControlStats struct {
	MaxInFlight int `json:"maxInFlight"`
	Requests    int `json:"requests"`
}

func controlRequest(r Request) ControlRequest {
	out := ControlRequest{
		Method: r.Method, Path: r.Path, Headers: r.Header, Model: r.Model,
		Messages: []ControlMessage{}, MaxTokens: r.MaxTokens, Temperature: r.Temperature,
		Status: r.Status, Raw: string(r.Raw),
	}
	for _, m := range r.Messages {
		out.Messages = append(out.Messages, ControlMessage{Role: m.Role, Content: m.Content})
	}
	if rf := r.ResponseFormat; rf != nil {
		out.ResponseFormat = &ControlResponseFormat{Type: rf.Type}
		if js := rf.JSONSchema; js != nil {
			schema := js.Schema
			if len(schema) == 0 {
				schema = json.RawMessage("null")
			}
			out.ResponseFormat.JSONSchema = &ControlJSONSchema{Name: js.Name, Strict: js.Strict, Schema: schema}
		}
	}
	return out
}

// ControlHandler returns the control API, for a test in another process
// to script the server; mount it at /_test/ (WithControlAPI does). It has
// no authentication, which is why the server listens on loopback only:
//
//	POST /_test/replies   a JSON array of ControlReply: Enqueue them
//	GET  /_test/requests  a JSON array of ControlRequest: Requests
//	POST /_test/reset     Reset
//	GET  /_test/stats     ControlStats
//
// Its errors are {"error": "..."}; a reply with an unknown field is one,
// so that a misspelt field fails the test that sent it.
func (s *Server) ControlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /_test/replies", func(w http.ResponseWriter, r *http.Request) {
		var in []ControlReply
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			controlError(w, http.StatusBadRequest, fmt.Sprintf("replies: %v", err))
			return
		}
		replies := make([]Reply, len(in))
		for i, c := range in {
			replies[i] = c.Reply()
		}
		s.Enqueue(replies...)
		controlJSON(w, map[string]int{"queued": len(replies)})
	})
	mux.HandleFunc("GET /_test/requests", func(w http.ResponseWriter, r *http.Request) {
		out := []ControlRequest{}
		for _, req := range s.Requests() {
			out = append(out, controlRequest(req))
		}
		controlJSON(w, out)
	})
	mux.HandleFunc("POST /_test/reset", func(w http.ResponseWriter, r *http.Request) {
		s.Reset()
		controlJSON(w, map[string]bool{"reset": true})
	})
	mux.HandleFunc("GET /_test/stats", func(w http.ResponseWriter, r *http.Request) {
		controlJSON(w, ControlStats{MaxInFlight: s.MaxInFlight(), Requests: len(s.Requests())})
	})
	mux.HandleFunc("/_test/", func(w http.ResponseWriter, r *http.Request) {
		controlError(w, http.StatusNotFound, fmt.Sprintf("no control endpoint %s %s", r.Method, r.URL.Path))
	})
	return mux
}

func controlJSON(w http.ResponseWriter, v any) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		controlError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeBody(w, http.StatusOK, "application/json", buf.Bytes())
}

func controlError(w http.ResponseWriter, status int, message string) {
	out, _ := json.Marshal(map[string]string{"error": message})
	writeBody(w, status, "application/json", out)
}
