package modeltest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// The enumerations OpenAI checks, and the lists its messages give them in.
var (
	roles          = []string{"system", "assistant", "user", "function", "tool", "developer"}
	rolesList      = "'system', 'assistant', 'user', 'function', 'tool', and 'developer'"
	formats        = []string{"json_object", "json_schema", "text"}
	formatsList    = "'json_object', 'json_schema', and 'text'"
	partTypes      = []string{"text", "image_url", "input_audio", "file", "refusal"}
	partTypesList  = "'text', 'image_url', 'input_audio', 'file', and 'refusal'"
	schemaName     = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
	schemaNameLen  = 64
	temperatureMax = 2.0
)

// validate checks a decoded body as OpenAI's Chat Completions endpoint
// does and reports the first fault, as OpenAI reports one at a time: the
// shape of every field, then whether the model exists, then the rules that
// span fields (the word "json", a strict schema). The order is modelled on
// OpenAI's, not measured against it.
func (s *Server) validate(body *object, req Request) *apiError {
	if err := checkModel(body); err != nil {
		return err
	}
	if err := checkMessages(body); err != nil {
		return err
	}
	if err := s.checkResponseFormat(body); err != nil {
		return err
	}
	for _, key := range []string{"max_tokens", "max_completion_tokens"} {
		if err := checkPositiveInteger(body, key); err != nil {
			return err
		}
	}
	if err := checkTemperature(body); err != nil {
		return err
	}
	if v := body.vals["stream"]; v != nil {
		if _, ok := v.(bool); !ok {
			return errType("stream", "a boolean", v)
		}
	}
	if !slices.Contains(s.cfg.models, req.Model) {
		return errNotFound(req.Model)
	}
	if body.vals["stream"] == true {
		// OpenAI streams; this server does not, and says so rather than
		// answering a stream request with a body the client cannot read.
		return invalid("stream", "unsupported_value",
			"Unsupported value: 'stream' does not support true with this server: modeltest "+
				"does not stream. Send 'stream': false or leave it out.")
	}
	if rf := req.ResponseFormat; rf != nil {
		switch rf.Type {
		case "json_object":
			if !mentionsJSON(req.Messages) {
				return invalid("messages", "", msgJSONWord)
			}
		case "json_schema":
			if rf.JSONSchema.Strict {
				schema := body.vals["response_format"].(*object).vals["json_schema"].(*object).vals["schema"]
				if problem := strictProblem(rf.JSONSchema.Name, schema); problem != "" {
					return invalid("response_format", "", "%s", problem)
				}
			}
		}
	}
	return nil
}

func checkModel(body *object) *apiError {
	switch m := body.vals["model"].(type) {
	case nil:
		return invalid("", "", msgNoModel)
	case string:
		if m == "" {
			return invalid("", "", msgNoModel)
		}
		return nil
	default:
		return errType("model", "a string", m)
	}
}

func checkMessages(body *object) *apiError {
	v := body.vals["messages"]
	if v == nil {
		return errMissing("messages")
	}
	msgs, ok := v.([]value)
	if !ok {
		return errType("messages", "an array of objects", v)
	}
	if len(msgs) == 0 {
		return errEmptyArray("messages")
	}
	for i, m := range msgs {
		if err := checkMessage(fmt.Sprintf("messages[%d]", i), m); err != nil {
			return err
		}
	}
	return nil
}

func errEmptyArray(param string) *apiError {
	return invalid(param, "empty_array", "Invalid '%s': empty array. Expected an array with minimum "+
		"length 1, but got an empty array instead.", param)
}

func checkMessage(p string, m value) *apiError {
	msg, ok := m.(*object)
	if !ok {
		return errType(p, "an object", m)
	}
	var role string
	switch r := msg.vals["role"].(type) {
	case nil:
		return errMissing(p + ".role")
	case string:
		if !slices.Contains(roles, r) {
			return errValue(p+".role", r, rolesList)
		}
		role = r
	default:
		return errType(p+".role", "a string", r)
	}
	switch c := msg.vals["content"].(type) {
	case nil:
		// An assistant message may carry tool_calls instead of content.
		if role != "assistant" {
			return errMissing(p + ".content")
		}
	case string:
	case []value:
		if len(c) == 0 {
			return errEmptyArray(p + ".content")
		}
		for j, part := range c {
			if err := checkPart(fmt.Sprintf("%s.content[%d]", p, j), part); err != nil {
				return err
			}
		}
	default:
		return errType(p+".content", "one of a string or array of objects", c)
	}
	return nil
}

func checkPart(p string, v value) *apiError {
	part, ok := v.(*object)
	if !ok {
		return errType(p, "an object", v)
	}
	var typ string
	switch t := part.vals["type"].(type) {
	case nil:
		return errMissing(p + ".type")
	case string:
		if !slices.Contains(partTypes, t) {
			return errValue(p+".type", t, partTypesList)
		}
		typ = t
	default:
		return errType(p+".type", "a string", t)
	}
	if typ != "text" {
		return nil
	}
	switch t := part.vals["text"].(type) {
	case nil:
		return errMissing(p + ".text")
	case string:
		return nil
	default:
		return errType(p+".text", "a string", t)
	}
}

func (s *Server) checkResponseFormat(body *object) *apiError {
	v := body.vals["response_format"]
	if v == nil {
		return nil
	}
	rf, ok := v.(*object)
	if !ok {
		return errType("response_format", "an object", v)
	}
	var typ string
	switch t := rf.vals["type"].(type) {
	case nil:
		return errMissing("response_format.type")
	case string:
		if !slices.Contains(formats, t) {
			return errValue("response_format.type", t, formatsList)
		}
		typ = t
	default:
		return errType("response_format.type", "a string", t)
	}
	if typ != "json_schema" {
		return nil
	}
	if s.cfg.noJSONSchema {
		// llama.cpp's llama-server before json_schema support, word for
		// word, in its own error shape.
		return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", llama: true,
			message: `response_format type must be one of "text" or "json_object", but got: json_schema`}
	}
	js, ok := rf.vals["json_schema"].(*object)
	if !ok {
		if rf.vals["json_schema"] == nil {
			return errMissing("response_format.json_schema")
		}
		return errType("response_format.json_schema", "an object", rf.vals["json_schema"])
	}
	const p = "response_format.json_schema"
	switch n := js.vals["name"].(type) {
	case nil:
		return errMissing(p + ".name")
	case string:
		if l := utf8.RuneCountInString(n); l > schemaNameLen {
			return invalid(p+".name", "string_above_max_length", "Invalid '%s.name': string too long. "+
				"Expected a string with maximum length %d, but got a string with length %d instead.",
				p, schemaNameLen, l)
		}
		if !schemaName.MatchString(n) {
			return invalid(p+".name", "invalid_value", "Invalid '%s.name': string does not match "+
				"pattern. Expected a string that matches the pattern '%s'.", p, schemaName)
		}
	default:
		return errType(p+".name", "a string", n)
	}
	if st := js.vals["strict"]; st != nil {
		if _, ok := st.(bool); !ok {
			return errType(p+".strict", "a boolean", st)
		}
	}
	switch sc := js.vals["schema"].(type) {
	case nil:
		return errMissing(p + ".schema")
	case *object:
	default:
		return errType(p+".schema", "an object", sc)
	}
	return nil
}

func checkPositiveInteger(body *object, key string) *apiError {
	v := body.vals[key]
	if v == nil {
		return nil
	}
	n, ok := v.(json.Number)
	if !ok || !isInteger(n) {
		return errType(key, "an integer", v)
	}
	if strings.HasPrefix(string(n), "-") || strings.Trim(string(n), "0") == "" {
		return errIntegerBelow(key, 1, n)
	}
	return nil
}

func checkTemperature(body *object) *apiError {
	v := body.vals["temperature"]
	if v == nil {
		return nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return errType("temperature", "a decimal", v)
	}
	f, err := n.Float64()
	if err != nil {
		return errType("temperature", "a decimal", v)
	}
	if f < 0 {
		return invalid("temperature", "decimal_below_min_value", "Invalid 'temperature': decimal below "+
			"minimum value. Expected a value >= 0, but got %s instead.", n)
	}
	if f > temperatureMax {
		return invalid("temperature", "decimal_above_max_value", "Invalid 'temperature': decimal above "+
			"maximum value. Expected a value <= 2, but got %s instead.", n)
	}
	return nil
}

// mentionsJSON is OpenAI's condition for json_object: the word anywhere in
// any message, in any case.
func mentionsJSON(msgs []Message) bool {
	for _, m := range msgs {
		if strings.Contains(strings.ToLower(m.Content), "json") {
			return true
		}
	}
	return false
}
