package modeltest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// Request is one request the server received, decoded as far as it could
// be: a request refused for a bad field still has the fields before it.
type Request struct {
	// Method and Path are the request line's, so that a client posting to
	// the wrong place shows up here rather than only as a 404.
	Method, Path string
	// Header is the request's headers, Authorization included.
	Header http.Header
	// Raw is the body as received, byte for byte.
	Raw []byte

	// Model is the body's "model".
	Model string
	// Messages are the body's "messages", in order.
	Messages []Message
	// ResponseFormat is the body's "response_format", nil when absent.
	ResponseFormat *ResponseFormat
	// MaxTokens is "max_completion_tokens", or else "max_tokens"; 0 when
	// neither was given.
	MaxTokens int
	// Temperature is "temperature", nil when absent.
	Temperature *float64

	// Status is what the server answered: 0 while the request is still
	// being answered, StatusClientClosed when the client went away first.
	Status int
}

// Message is one chat message.
type Message struct {
	// Role is "system", "developer", "user", "assistant", "tool" or
	// "function".
	Role string
	// Content is the message's text; content sent as an array of parts is
	// the texts of its "text" parts joined by newlines (other parts, such as
	// images, carry no text).
	Content string
}

// ResponseFormat is the body's "response_format".
type ResponseFormat struct {
	// Type is "text", "json_object" or "json_schema".
	Type string
	// JSONSchema is "json_schema", set for that type.
	JSONSchema *JSONSchema
}

// JSONSchema is a "json_schema" response format.
type JSONSchema struct {
	// Name is the schema's "name".
	Name string
	// Strict is "strict": the schema must then follow OpenAI's strict-mode
	// rules.
	Strict bool
	// Schema is the JSON Schema, its members in the order they were sent.
	Schema json.RawMessage
}

// System returns the contents of the system and developer messages, joined
// by blank lines: newer OpenAI models take "developer" where older ones took
// "system", and a client may send either.
func (r Request) System() string {
	return r.joined("system", "developer")
}

// User returns the contents of the user messages, joined by blank lines.
func (r Request) User() string {
	return r.joined("user")
}

func (r Request) joined(roles ...string) string {
	var parts []string
	for _, m := range r.Messages {
		for _, role := range roles {
			if m.Role == role {
				parts = append(parts, m.Content)
			}
		}
	}
	return strings.Join(parts, "\n\n")
}

// fill sets the decoded fields from body, leniently: a field of the wrong
// type is left empty, for validate to refuse.
func (r *Request) fill(body *object) {
	r.Model, _ = body.vals["model"].(string)
	if msgs, ok := body.vals["messages"].([]value); ok {
		for _, m := range msgs {
			obj, ok := m.(*object)
			if !ok {
				continue
			}
			role, _ := obj.vals["role"].(string)
			r.Messages = append(r.Messages, Message{Role: role, Content: contentText(obj.vals["content"])})
		}
	}
	if rf, ok := body.vals["response_format"].(*object); ok {
		f := &ResponseFormat{}
		f.Type, _ = rf.vals["type"].(string)
		if js, ok := rf.vals["json_schema"].(*object); ok {
			s := &JSONSchema{}
			s.Name, _ = js.vals["name"].(string)
			s.Strict, _ = js.vals["strict"].(bool)
			if schema, ok := js.vals["schema"]; ok {
				s.Schema = json.RawMessage(encodeJSON(schema))
			}
			f.JSONSchema = s
		}
		r.ResponseFormat = f
	}
	for _, key := range []string{"max_completion_tokens", "max_tokens"} {
		if n, ok := body.vals[key].(json.Number); ok {
			if i, err := strconv.Atoi(string(n)); err == nil {
				r.MaxTokens = i
				break
			}
		}
	}
	if n, ok := body.vals["temperature"].(json.Number); ok {
		if f, err := n.Float64(); err == nil {
			r.Temperature = &f
		}
	}
}

// contentText is a message content's text: the string itself, or the texts
// of the "text" parts of an array.
func contentText(v value) string {
	switch c := v.(type) {
	case string:
		return c
	case []value:
		var texts []string
		for _, p := range c {
			part, ok := p.(*object)
			if !ok || part.vals["type"] != "text" {
				continue
			}
			if text, ok := part.vals["text"].(string); ok {
				texts = append(texts, text)
			}
		}
		return strings.Join(texts, "\n")
	}
	return ""
}
