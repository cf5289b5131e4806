package modeltest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/model/modeltest"
	"github.com/trawler-dev/trawler/test/polltest"
)

// A valid request's messages, for bodies that vary something else.
const hello = `"messages":[{"role":"user","content":"Say hello."}]`

// errorBody is OpenAI's error shape; Param and Code are nil for null.
type errorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// completionBody is the part of a chat.completion the tests read.
type completionBody struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Role    string  `json:"role"`
			Content string  `json:"content"`
			Refusal *string `json:"refusal"`
		} `json:"message"`
		Logprobs     json.RawMessage `json:"logprobs"`
		FinishReason string          `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
	SystemFingerprint string `json:"system_fingerprint"`
}

// do sends one request and returns the response with its body read.
func do(t *testing.T, method, url, contentType, body string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	return doCtx(t, context.Background(), method, url, contentType, body, header)
}

func doCtx(t *testing.T, ctx context.Context, method, url, contentType, body string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, out
}

// chat posts body as JSON to the server's chat completions endpoint.
func chat(t *testing.T, s *modeltest.Server, body string) (*http.Response, []byte) {
	t.Helper()
	return do(t, http.MethodPost, s.URL+modeltest.Path, "application/json", body, nil)
}

func decodeError(t *testing.T, body []byte) errorBody {
	t.Helper()
	var e errorBody
	require.NoError(t, json.Unmarshal(body, &e), "body: %s", body)
	return e
}

func decodeCompletion(t *testing.T, body []byte) completionBody {
	t.Helper()
	var c completionBody
	require.NoError(t, json.Unmarshal(body, &c), "body: %s", body)
	require.Len(t, c.Choices, 1, "body: %s", body)
	return c
}

func str(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}

// strictSchema wraps schema as a strict json_schema request named "out".
func strictSchema(schema string) string {
	return `{"model":"test-model",` + hello + `,"response_format":{"type":"json_schema",` +
		`"json_schema":{"name":"out","strict":true,"schema":` + schema + `}}}`
}

func TestValidationRefusesAsOpenAIDoes(t *testing.T) {
	t.Parallel()
	s := modeltest.Start(t)
	const null = "<null>"
	cases := []struct {
		name        string
		method      string // "" is POST
		path        string // "" is /v1/chat/completions
		contentType string // "" is application/json; "-" is none
		body        string
		status      int // 0 is 400
		message     string
		param       string
		code        string
	}{
		{name: "another path", path: "/v1/completions", body: `{}`, status: 404,
			message: "Invalid URL (POST /v1/completions)", param: null, code: null},
		{name: "another method", method: http.MethodGet, status: 405,
			message: "Invalid method for URL (GET /v1/chat/completions)", param: null, code: null},
		{name: "no content type", contentType: "-", body: `{}`,
			message: "This API method only accepts 'application/json' requests, but you did not specify a " +
				"'Content-Type' header. Please try again with a supported content type.",
			param: null, code: "unsupported_content_type"},
		{name: "form content type", contentType: "application/x-www-form-urlencoded", body: `{}`,
			message: "Unsupported content type: 'application/x-www-form-urlencoded'. This API method only " +
				"accepts 'application/json' requests, but you specified the header 'Content-Type: " +
				"application/x-www-form-urlencoded'. Please try again with a supported content type.",
			param: null, code: "unsupported_content_type"},
		{name: "malformed JSON", body: `{"model": "test-model",`,
			message: "We could not parse the JSON body of your request. (HINT: This likely means you aren't " +
				"using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent " +
				"was not valid JSON. If you have trouble figuring out how to fix this, please contact us " +
				"through our help center at help.openai.com.)",
			param: null, code: null},
		{name: "body not an object", body: `[{"model":"test-model"}]`,
			message: "We could not parse the JSON body of your request. (HINT: This likely means you aren't " +
				"using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent " +
				"was not valid JSON. If you have trouble figuring out how to fix this, please contact us " +
				"through our help center at help.openai.com.)",
			param: null, code: null},
		{name: "no model", body: `{` + hello + `}`,
			message: "you must provide a model parameter", param: null, code: null},
		{name: "model not a string", body: `{"model":4,` + hello + `}`,
			message: "Invalid type for 'model': expected a string, but got an integer instead.",
			param:   "model", code: "invalid_type"},
		{name: "no messages", body: `{"model":"test-model"}`,
			message: "Missing required parameter: 'messages'.", param: "messages", code: "missing_required_parameter"},
		{name: "messages not an array", body: `{"model":"test-model","messages":"hi"}`,
			message: "Invalid type for 'messages': expected an array of objects, but got a string instead.",
			param:   "messages", code: "invalid_type"},
		{name: "empty messages", body: `{"model":"test-model","messages":[]}`,
			message: "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an " +
				"empty array instead.", param: "messages", code: "empty_array"},
		{name: "message not an object", body: `{"model":"test-model","messages":["hi"]}`,
			message: "Invalid type for 'messages[0]': expected an object, but got a string instead.",
			param:   "messages[0]", code: "invalid_type"},
		{name: "message without role", body: `{"model":"test-model","messages":[{"content":"hi"}]}`,
			message: "Missing required parameter: 'messages[0].role'.", param: "messages[0].role",
			code: "missing_required_parameter"},
		{name: "unknown role", body: `{"model":"test-model","messages":[{"role":"user","content":"a"},{"role":"bot","content":"b"}]}`,
			message: "Invalid value: 'bot'. Supported values are: 'system', 'assistant', 'user', 'function', " +
				"'tool', and 'developer'.", param: "messages[1].role", code: "invalid_value"},
		{name: "user message without content", body: `{"model":"test-model","messages":[{"role":"user"}]}`,
			message: "Missing required parameter: 'messages[0].content'.", param: "messages[0].content",
			code: "missing_required_parameter"},
		{name: "content a number", body: `{"model":"test-model","messages":[{"role":"user","content":7}]}`,
			message: "Invalid type for 'messages[0].content': expected one of a string or array of objects, " +
				"but got an integer instead.", param: "messages[0].content", code: "invalid_type"},
		{name: "content part of unknown type", body: `{"model":"test-model","messages":[{"role":"user","content":[{"type":"txt","text":"hi"}]}]}`,
			message: "Invalid value: 'txt'. Supported values are: 'text', 'image_url', 'input_audio', 'file', " +
				"and 'refusal'.", param: "messages[0].content[0].type", code: "invalid_value"},
		{name: "text part without text", body: `{"model":"test-model","messages":[{"role":"user","content":[{"type":"text"}]}]}`,
			message: "Missing required parameter: 'messages[0].content[0].text'.",
			param:   "messages[0].content[0].text", code: "missing_required_parameter"},
		{name: "response_format a string", body: `{"model":"test-model",` + hello + `,"response_format":"json"}`,
			message: "Invalid type for 'response_format': expected an object, but got a string instead.",
			param:   "response_format", code: "invalid_type"},
		{name: "response_format without type", body: `{"model":"test-model",` + hello + `,"response_format":{}}`,
			message: "Missing required parameter: 'response_format.type'.", param: "response_format.type",
			code: "missing_required_parameter"},
		{name: "unknown response_format type", body: `{"model":"test-model",` + hello + `,"response_format":{"type":"yaml"}}`,
			message: "Invalid value: 'yaml'. Supported values are: 'json_object', 'json_schema', and 'text'.",
			param:   "response_format.type", code: "invalid_value"},
		{name: "json_object without the word", body: `{"model":"test-model",` + hello + `,"response_format":{"type":"json_object"}}`,
			message: "'messages' must contain the word 'json' in some form, to use 'response_format' of type " +
				"'json_object'.", param: "messages", code: null},
		{name: "json_schema without json_schema", body: `{"model":"test-model",` + hello + `,"response_format":{"type":"json_schema"}}`,
			message: "Missing required parameter: 'response_format.json_schema'.",
			param:   "response_format.json_schema", code: "missing_required_parameter"},
		{name: "json_schema without name", body: `{"model":"test-model",` + hello + `,"response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object"}}}}`,
			message: "Missing required parameter: 'response_format.json_schema.name'.",
			param:   "response_format.json_schema.name", code: "missing_required_parameter"},
		{name: "json_schema name with a space", body: `{"model":"test-model",` + hello + `,"response_format":{"type":"json_schema","json_schema":{"name":"my schema","schema":{"type":"object"}}}}`,
			message: "Invalid 'response_format.json_schema.name': string does not match pattern. Expected a " +
				"string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
			param: "response_format.json_schema.name", code: "invalid_value"},
		{name: "json_schema name too long", body: `{"model":"test-model",` + hello + `,"response_format":{"type":"json_schema","json_schema":{"name":"` + strings.Repeat("n", 65) + `","schema":{"type":"object"}}}}`,
			message: "Invalid 'response_format.json_schema.name': string too long. Expected a string with " +
				"maximum length 64, but got a string with length 65 instead.",
			param: "response_format.json_schema.name", code: "string_above_max_length"},
		{name: "json_schema without schema", body: `{"model":"test-model",` + hello + `,"response_format":{"type":"json_schema","json_schema":{"name":"out"}}}`,
			message: "Missing required parameter: 'response_format.json_schema.schema'.",
			param:   "response_format.json_schema.schema", code: "missing_required_parameter"},
		{name: "json_schema schema not an object", body: `{"model":"test-model",` + hello + `,"response_format":{"type":"json_schema","json_schema":{"name":"out","schema":"object"}}}`,
			message: "Invalid type for 'response_format.json_schema.schema': expected an object, but got a " +
				"string instead.", param: "response_format.json_schema.schema", code: "invalid_type"},
		{name: "strict root not closed",
			body: strictSchema(`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`),
			message: "Invalid schema for response_format 'out': In context=(), 'additionalProperties' is " +
				"required to be supplied and to be false.", param: "response_format", code: null},
		{name: "strict nested object open",
			body: strictSchema(`{"type":"object","properties":{"author":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":true}},"required":["author"],"additionalProperties":false}`),
			message: "Invalid schema for response_format 'out': In context=('properties', 'author'), " +
				"'additionalProperties' is required to be supplied and to be false.", param: "response_format", code: null},
		{name: "strict property not required",
			body: strictSchema(`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a"],"additionalProperties":false}`),
			message: "Invalid schema for response_format 'out': In context=(), 'required' is required to be " +
				"supplied and to be an array including every key in properties. Missing 'b'.",
			param: "response_format", code: null},
		{name: "strict array items",
			body: strictSchema(`{"type":"object","properties":{"steps":{"type":"array","items":{"type":"object","properties":{"s":{"type":"string"}},"additionalProperties":false}}},"required":["steps"],"additionalProperties":false}`),
			message: "Invalid schema for response_format 'out': In context=('properties', 'steps', 'items'), " +
				"'required' is required to be supplied and to be an array including every key in properties. " +
				"Missing 's'.", param: "response_format", code: null},
		{name: "strict anyOf branch",
			body: strictSchema(`{"type":"object","properties":{"x":{"anyOf":[{"type":"object","properties":{}},{"type":"null"}]}},"required":["x"],"additionalProperties":false}`),
			message: "Invalid schema for response_format 'out': In context=('properties', 'x', 'anyOf', 0), " +
				"'additionalProperties' is required to be supplied and to be false.", param: "response_format", code: null},
		{name: "strict $defs",
			body: strictSchema(`{"type":"object","properties":{"s":{"$ref":"#/$defs/Step"}},"required":["s"],"additionalProperties":false,"$defs":{"Step":{"type":"object","properties":{"n":{"type":"integer"}},"required":[]}}}`),
			message: "Invalid schema for response_format 'out': In context=('$defs', 'Step'), " +
				"'additionalProperties' is required to be supplied and to be false.", param: "response_format", code: null},
		{name: "strict root an array",
			body:    strictSchema(`{"type":"array","items":{"type":"string"}}`),
			message: `Invalid schema for response_format 'out': schema must be a JSON Schema of 'type: "object"', got 'type: "array"'.`,
			param:   "response_format", code: null},
		{name: "strict root an anyOf",
			body:    strictSchema(`{"anyOf":[{"type":"object","properties":{},"additionalProperties":false}]}`),
			message: `Invalid schema for response_format 'out': schema must be a JSON Schema of 'type: "object"', got 'type: "None"'.`,
			param:   "response_format", code: null},
		{name: "max_tokens zero", body: `{"model":"test-model",` + hello + `,"max_tokens":0}`,
			message: "Invalid 'max_tokens': integer below minimum value. Expected a value >= 1, but got 0 instead.",
			param:   "max_tokens", code: "integer_below_min_value"},
		{name: "max_completion_tokens negative", body: `{"model":"test-model",` + hello + `,"max_completion_tokens":-5}`,
			message: "Invalid 'max_completion_tokens': integer below minimum value. Expected a value >= 1, but " +
				"got -5 instead.", param: "max_completion_tokens", code: "integer_below_min_value"},
		{name: "max_tokens a decimal", body: `{"model":"test-model",` + hello + `,"max_tokens":1.5}`,
			message: "Invalid type for 'max_tokens': expected an integer, but got a decimal number instead.",
			param:   "max_tokens", code: "invalid_type"},
		{name: "max_tokens a string", body: `{"model":"test-model",` + hello + `,"max_tokens":"100"}`,
			message: "Invalid type for 'max_tokens': expected an integer, but got a string instead.",
			param:   "max_tokens", code: "invalid_type"},
		{name: "temperature too high", body: `{"model":"test-model",` + hello + `,"temperature":3}`,
			message: "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 3 instead.",
			param:   "temperature", code: "decimal_above_max_value"},
		{name: "temperature a string", body: `{"model":"test-model",` + hello + `,"temperature":"hot"}`,
			message: "Invalid type for 'temperature': expected a decimal, but got a string instead.",
			param:   "temperature", code: "invalid_type"},
		{name: "stream", body: `{"model":"test-model",` + hello + `,"stream":true}`,
			message: "Unsupported value: 'stream' does not support true with this server: modeltest does not " +
				"stream. Send 'stream': false or leave it out.", param: "stream", code: "unsupported_value"},
		{name: "unknown model", body: `{"model":"gpt-9",` + hello + `}`, status: 404,
			message: "The model `gpt-9` does not exist or you do not have access to it.", param: null,
			code: "model_not_found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			method, path, ct := tc.method, tc.path, tc.contentType
			if method == "" {
				method = http.MethodPost
			}
			if path == "" {
				path = modeltest.Path
			}
			switch ct {
			case "":
				ct = "application/json"
			case "-":
				ct = ""
			}
			resp, body := do(t, method, s.URL+path, ct, tc.body, nil)
			want := tc.status
			if want == 0 {
				want = http.StatusBadRequest
			}
			assert.Equal(t, want, resp.StatusCode, "body: %s", body)
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			e := decodeError(t, body)
			assert.Equal(t, tc.message, e.Error.Message)
			assert.Equal(t, "invalid_request_error", e.Error.Type)
			assert.Equal(t, tc.param, str(e.Error.Param), "param")
			assert.Equal(t, tc.code, str(e.Error.Code), "code")
		})
	}
}

func TestValidationAcceptsWhatOpenAIAccepts(t *testing.T) {
	t.Parallel()
	s := modeltest.Start(t, modeltest.WithModels("small", "large"))
	cases := []struct{ name, body string }{
		{"unknown top-level members", `{"model":"small",` + hello + `,"seed":7,"user":"u1","top_p":0.5,"stream":false}`},
		{"second model", `{"model":"large",` + hello + `}`},
		{"content parts", `{"model":"small","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]}`},
		{"assistant without content", `{"model":"small","messages":[{"role":"user","content":"a"},{"role":"assistant","content":null,"tool_calls":[]},{"role":"tool","content":"r","tool_call_id":"c"}]}`},
		{"developer role", `{"model":"small","messages":[{"role":"developer","content":"Be brief."},{"role":"user","content":"a"}]}`},
		{"json_object with JSON in the system message", `{"model":"small","messages":[{"role":"system","content":"Answer in JSON."},{"role":"user","content":"a"}],"response_format":{"type":"json_object"}}`},
		{"text response format", `{"model":"small",` + hello + `,"response_format":{"type":"text"}}`},
		{"non-strict open schema", `{"model":"small",` + hello + `,"response_format":{"type":"json_schema","json_schema":{"name":"out","schema":{"type":"object"}}}}`},
		{"strict closed schema", strings.Replace(strictSchema(`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`), "test-model", "small", 1)},
		{"null optional members", `{"model":"small",` + hello + `,"max_tokens":null,"temperature":null,"response_format":null}`},
		{"token limits and temperature", `{"model":"small",` + hello + `,"max_tokens":10,"max_completion_tokens":20,"temperature":0}`},
		{"charset in content type", `{"model":"small",` + hello + `}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp, body := do(t, http.MethodPost, s.URL+modeltest.Path, "application/json; charset=utf-8", tc.body, nil)
			assert.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", body)
		})
	}
}

func TestAnswerHasOpenAIShape(t *testing.T) {
	t.Parallel()
	s := modeltest.Start(t)
	// 40 characters of messages: 10 prompt tokens.
	resp, body := chat(t, s, `{"model":"test-model","messages":[{"role":"system","content":"0123456789"},`+
		`{"role":"user","content":"012345678901234567890123456789"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", body)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	assert.True(t, strings.HasPrefix(resp.Header.Get("X-Request-Id"), "req_"))
	c := decodeCompletion(t, body)
	assert.Regexp(t, `^chatcmpl-[A-Za-z0-9]{29}$`, c.ID)
	assert.Equal(t, "chat.completion", c.Object)
	assert.InDelta(t, time.Now().Unix(), c.Created, 5)
	assert.Equal(t, "test-model", c.Model)
	assert.Equal(t, 0, c.Choices[0].Index)
	assert.Equal(t, "assistant", c.Choices[0].Message.Role)
	assert.Equal(t, modeltest.DefaultText, c.Choices[0].Message.Content)
	assert.Nil(t, c.Choices[0].Message.Refusal)
	assert.JSONEq(t, "null", string(c.Choices[0].Logprobs))
	assert.Equal(t, "stop", c.Choices[0].FinishReason)
	assert.Equal(t, 10, c.Usage.PromptTokens)
	assert.Equal(t, len(modeltest.DefaultText)/4, c.Usage.CompletionTokens)
	assert.Equal(t, c.Usage.PromptTokens+c.Usage.CompletionTokens, c.Usage.TotalTokens)
	assert.Equal(t, "fp_modeltest", c.SystemFingerprint)
	// The members come in OpenAI's order, for clients that stream-parse.
	assert.Regexp(t, `^\{"id":.*"object":.*"created":.*"model":.*"choices":.*"usage":.*"system_fingerprint":`, string(body))
}

func TestDefaultReplyFollowsTheFormat(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		format string // the response_format member; "" sends none
		want   string
	}{
		{"text", "", modeltest.DefaultText},
		{"explicit text", `{"type":"text"}`, modeltest.DefaultText},
		{"json_object", `{"type":"json_object"}`, "{}"},
	}
	s := modeltest.Start(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := `{"model":"test-model","messages":[{"role":"user","content":"Reply in json."}]`
			if tc.format != "" {
				body += `,"response_format":` + tc.format
			}
			resp, out := chat(t, s, body+`}`)
			require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", out)
			assert.Equal(t, tc.want, decodeCompletion(t, out).Choices[0].Message.Content)
		})
	}
}

func TestDefaultReplySatisfiesTheSchema(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		schema string
		want   string // the exact content; "" checks validity only
	}{
		{
			name: "nested objects in schema order",
			schema: `{"type":"object","properties":{"title":{"type":"string"},"count":{"type":"integer"},` +
				`"score":{"type":"number"},"ok":{"type":"boolean"},"author":{"type":"object",` +
				`"properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name","age"],` +
				`"additionalProperties":false}},"required":["title","count","score","ok","author"],` +
				`"additionalProperties":false}`,
			want: `{"title":"example","count":1,"score":1.5,"ok":true,"author":{"name":"example","age":1}}`,
		},
		{
			name: "arrays",
			schema: `{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"}},` +
				`"pairs":{"type":"array","items":{"type":"integer"},"minItems":3},` +
				`"none":{"type":"array","items":{"type":"string"},"maxItems":0},` +
				`"rows":{"type":"array","items":{"type":"object","properties":{"k":{"type":"string"}},` +
				`"required":["k"],"additionalProperties":false}}},` +
				`"required":["tags","pairs","none","rows"],"additionalProperties":false}`,
			want: `{"tags":["example"],"pairs":[1,1,1],"none":[],"rows":[{"k":"example"}]}`,
		},
		{
			name: "enums and consts",
			schema: `{"type":"object","properties":{"level":{"type":"string","enum":["low","high"]},` +
				`"n":{"enum":[3,5]},"kind":{"const":"fixed"}},"required":["level","n","kind"],` +
				`"additionalProperties":false}`,
			want: `{"level":"low","n":3,"kind":"fixed"}`,
		},
		{
			name: "$defs and $ref",
			schema: `{"type":"object","properties":{"steps":{"type":"array","items":{"$ref":"#/$defs/Step"}},` +
				`"first":{"$ref":"#/$defs/Step"}},"required":["steps","first"],"additionalProperties":false,` +
				`"$defs":{"Step":{"type":"object","properties":{"action":{"$ref":"#/$defs/Action"}},` +
				`"required":["action"],"additionalProperties":false},"Action":{"type":"string","enum":["click","type"]}}}`,
			want: `{"steps":[{"action":"click"}],"first":{"action":"click"}}`,
		},
		{
			name: "recursive $ref",
			schema: `{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array",` +
				`"items":{"$ref":"#"}}},"required":["name","children"],"additionalProperties":false}`,
		},
		{
			name: "recursive nullable $ref",
			schema: `{"type":"object","properties":{"next":{"anyOf":[{"$ref":"#"},{"type":"null"}]}},` +
				`"required":["next"],"additionalProperties":false}`,
		},
		{
			name: "anyOf takes the first branch that is not null",
			schema: `{"type":"object","properties":{"v":{"anyOf":[{"type":"null"},{"type":"integer"},{"type":"string"}]},` +
				`"w":{"oneOf":[{"type":"string","enum":["a"]},{"type":"integer"}]}},"required":["v","w"],` +
				`"additionalProperties":false}`,
			want: `{"v":1,"w":"a"}`,
		},
		{
			name: "nullable types",
			schema: `{"type":"object","properties":{"a":{"type":["null","string"]},"b":{"type":["integer","null"]},` +
				`"c":{"type":"null"}},"required":["a","b","c"],"additionalProperties":false}`,
			want: `{"a":"example","b":1,"c":null}`,
		},
		{
			name: "formats and bounds",
			schema: `{"type":"object","properties":{"when":{"type":"string","format":"date-time"},` +
				`"day":{"type":"string","format":"date"},"mail":{"type":"string","format":"email"},` +
				`"id":{"type":"string","format":"uuid"},"link":{"type":"string","format":"uri"},` +
				`"code":{"type":"string","minLength":12},"short":{"type":"string","maxLength":3},` +
				`"year":{"type":"integer","minimum":1900,"maximum":2100},"below":{"type":"integer","exclusiveMaximum":0},` +
				`"ratio":{"type":"number","minimum":0,"maximum":1},"step":{"type":"integer","minimum":7,"multipleOf":5}},` +
				`"required":["when","day","mail","id","link","code","short","year","below","ratio","step"],` +
				`"additionalProperties":false}`,
		},
		{
			name: "allOf",
			schema: `{"type":"object","allOf":[{"$ref":"#/$defs/Base"},{"properties":{"extra":{"type":"boolean"}},` +
				`"required":["extra"]}],"$defs":{"Base":{"properties":{"id":{"type":"integer"}},"required":["id"]}}}`,
			want: `{"id":1,"extra":true}`,
		},
		{
			name:   "empty object schema",
			schema: `{"type":"object","properties":{},"additionalProperties":false}`,
			want:   `{}`,
		},
	}
	s := modeltest.Start(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp, out := chat(t, s, `{"model":"test-model",`+hello+`,"response_format":{"type":"json_schema",`+
				`"json_schema":{"name":"out","schema":`+tc.schema+`}}}`)
			require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", out)
			content := decodeCompletion(t, out).Choices[0].Message.Content
			if tc.want != "" {
				assert.Equal(t, tc.want, content)
			}
			validate(t, tc.schema, content)
		})
	}
}

// validate checks content against schema, formats asserted.
func validate(t *testing.T, schema, content string) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	require.NoError(t, c.AddResource("out.json", doc))
	compiled, err := c.Compile("out.json")
	require.NoError(t, err)
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(content))
	require.NoError(t, err, "content: %s", content)
	assert.NoError(t, compiled.Validate(inst), "content: %s", content)
}

func TestEnqueuedReplies(t *testing.T) {
	t.Parallel()
	const null = "<null>"
	cases := []struct {
		name        string
		reply       modeltest.Reply
		status      int
		contentType string
		retryAfter  string
		body        string // the exact body, when set
		errType     string // an OpenAI error's type and code, when set
		errCode     string
		errMessage  string
		content     string // a completion's content and finish reason, when set
		finish      string
	}{
		{name: "overloaded", reply: modeltest.Reply{Status: 503}, status: 503, contentType: "application/json",
			errType: "server_error", errCode: null, errMessage: "The server is overloaded or not ready yet."},
		{name: "server error", reply: modeltest.Reply{Status: 500}, status: 500, contentType: "application/json",
			errType: "server_error", errCode: null,
			errMessage: "The server had an error while processing your request. Sorry about that!"},
		{name: "rate limited", reply: modeltest.Reply{Status: 429, RetryAfter: "1"}, status: 429,
			contentType: "application/json", retryAfter: "1", errType: "requests", errCode: "rate_limit_exceeded",
			errMessage: "Rate limit reached for test-model in organization org-modeltest on requests per min " +
				"(RPM): Limit 3, Used 3, Requested 1. Please try again in 1s. Visit " +
				"https://platform.openai.com/account/rate-limits to learn more."},
		{name: "error with its own message", reply: modeltest.Reply{Status: 400, Content: "This model's maximum context length is 8192 tokens."},
			status: 400, contentType: "application/json", errType: "invalid_request_error", errCode: null,
			errMessage: "This model's maximum context length is 8192 tokens."},
		{name: "invalid JSON", reply: modeltest.Reply{Body: `{"choices": [`}, status: 200,
			contentType: "application/json", body: `{"choices": [`},
		{name: "HTML error page", reply: modeltest.Reply{Status: 502, Body: "<html><body><h1>502 Bad Gateway</h1></body></html>"},
			status: 502, contentType: "text/html; charset=utf-8", body: "<html><body><h1>502 Bad Gateway</h1></body></html>"},
		{name: "raw body with its type", reply: modeltest.Reply{Body: "upstream timed out", ContentType: "text/plain"},
			status: 200, contentType: "text/plain", body: "upstream timed out"},
		{name: "truncated", reply: modeltest.Reply{Content: `{"title":"Exa`, FinishReason: "length"}, status: 200,
			contentType: "application/json", content: `{"title":"Exa`, finish: "length"},
		{name: "retry after on success", reply: modeltest.Reply{Content: "ok", RetryAfter: "3"}, status: 200,
			contentType: "application/json", retryAfter: "3", content: "ok", finish: "stop"},
	}
	s := modeltest.Start(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// One server, one queue: these run in turn.
			s.Enqueue(tc.reply)
			resp, body := chat(t, s, `{"model":"test-model",`+hello+`}`)
			assert.Equal(t, tc.status, resp.StatusCode, "body: %s", body)
			assert.Equal(t, tc.contentType, resp.Header.Get("Content-Type"))
			assert.Equal(t, tc.retryAfter, resp.Header.Get("Retry-After"))
			if tc.body != "" {
				assert.Equal(t, tc.body, string(body))
			}
			if tc.errType != "" {
				e := decodeError(t, body)
				assert.Equal(t, tc.errType, e.Error.Type)
				assert.Equal(t, tc.errCode, str(e.Error.Code))
				assert.Equal(t, tc.errMessage, e.Error.Message)
			}
			if tc.content != "" {
				c := decodeCompletion(t, body)
				assert.Equal(t, tc.content, c.Choices[0].Message.Content)
				assert.Equal(t, tc.finish, c.Choices[0].FinishReason)
			}
			reqs := s.Requests()
			assert.Equal(t, tc.status, reqs[len(reqs)-1].Status)
		})
	}
}

func TestRepliesComeInOrderThenFromTheResponder(t *testing.T) {
	t.Parallel()
	s := modeltest.Start(t)
	s.Enqueue(modeltest.Reply{Content: "one", PromptTokens: 100, CompletionTokens: 7}, modeltest.Reply{Content: "two"})
	s.Respond(func(r modeltest.Request) modeltest.Reply {
		return modeltest.Reply{Content: "echo: " + r.User()}
	})
	// An invalid request takes no reply: the queue is for what the model
	// would answer.
	resp, _ := chat(t, s, `{"model":"test-model"}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)

	var contents []string
	for range 3 {
		resp, body := chat(t, s, `{"model":"test-model",`+hello+`}`)
		require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", body)
		c := decodeCompletion(t, body)
		contents = append(contents, c.Choices[0].Message.Content)
		if len(contents) == 1 {
			assert.Equal(t, 100, c.Usage.PromptTokens)
			assert.Equal(t, 7, c.Usage.CompletionTokens)
			assert.Equal(t, 107, c.Usage.TotalTokens)
		}
	}
	assert.Equal(t, []string{"one", "two", "echo: Say hello."}, contents)

	s.Reset()
	resp, body := chat(t, s, `{"model":"test-model",`+hello+`}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, modeltest.DefaultText, decodeCompletion(t, body).Choices[0].Message.Content)
	assert.Len(t, s.Requests(), 1)
}

func TestRequestsRecordWhatWasSent(t *testing.T) {
	t.Parallel()
	s := modeltest.Start(t)
	body := `{"model":"test-model","messages":[{"role":"system","content":"You extract."},` +
		`{"role":"developer","content":"Be exact."},{"role":"user","content":[{"type":"text","text":"Page:"},` +
		`{"type":"text","text":"Hello"}]},{"role":"assistant","content":"ok"},{"role":"user","content":"More."}],` +
		`"max_completion_tokens":256,"temperature":0.2,"response_format":{"type":"json_schema","json_schema":` +
		`{"name":"page","strict":true,"schema":{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"string"}},` +
		`"required":["z","a"],"additionalProperties":false}}}}`
	resp, _ := do(t, http.MethodPost, s.URL+modeltest.Path, "application/json", body, http.Header{"X-Trace": {"t1"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	// Invalid requests are recorded too, as far as they decode.
	resp, _ = chat(t, s, `{"model":"test-model","messages":[{"role":"user","content":"x"}],"max_tokens":0}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	resp, _ = do(t, http.MethodGet, s.URL+"/v1/models", "", "", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	reqs := s.Requests()
	require.Len(t, reqs, 3)
	r := reqs[0]
	assert.Equal(t, http.MethodPost, r.Method)
	assert.Equal(t, modeltest.Path, r.Path)
	assert.Equal(t, "t1", r.Header.Get("X-Trace"))
	assert.Equal(t, body, string(r.Raw))
	assert.Equal(t, "test-model", r.Model)
	assert.Equal(t, "You extract.\n\nBe exact.", r.System())
	assert.Equal(t, "Page:\nHello\n\nMore.", r.User())
	assert.Len(t, r.Messages, 5)
	assert.Equal(t, 256, r.MaxTokens)
	require.NotNil(t, r.Temperature)
	assert.InDelta(t, 0.2, *r.Temperature, 1e-9)
	require.NotNil(t, r.ResponseFormat)
	assert.Equal(t, "json_schema", r.ResponseFormat.Type)
	require.NotNil(t, r.ResponseFormat.JSONSchema)
	assert.Equal(t, "page", r.ResponseFormat.JSONSchema.Name)
	assert.True(t, r.ResponseFormat.JSONSchema.Strict)
	// The schema keeps the order it was sent in.
	assert.Equal(t, `{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"string"}},`+
		`"required":["z","a"],"additionalProperties":false}`, string(r.ResponseFormat.JSONSchema.Schema))
	assert.Equal(t, http.StatusOK, r.Status)

	assert.Equal(t, http.StatusBadRequest, reqs[1].Status)
	assert.Equal(t, "x", reqs[1].User())
	assert.Equal(t, 0, reqs[1].MaxTokens)
	assert.Equal(t, "/v1/models", reqs[2].Path)
	assert.Equal(t, http.StatusNotFound, reqs[2].Status)
}

func TestDelayEndsWhenTheClientGoesAway(t *testing.T) {
	t.Parallel()
	s := modeltest.Start(t)
	s.Enqueue(modeltest.Reply{Content: "late", Delay: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+modeltest.Path,
		strings.NewReader(`{"model":"test-model",`+hello+`}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	_, err = http.DefaultClient.Do(req)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	polltest.Until(t, 5*time.Second, "the server to give up the request", func() bool {
		reqs := s.Requests()
		return len(reqs) == 1 && reqs[0].Status == modeltest.StatusClientClosed
	})

	// A delay the client waits for is answered.
	s.Enqueue(modeltest.Reply{Content: "on time", Delay: 20 * time.Millisecond})
	resp, body := chat(t, s, `{"model":"test-model",`+hello+`}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "on time", decodeCompletion(t, body).Choices[0].Message.Content)
}

func TestCloseEndsDelayedRequests(t *testing.T) {
	t.Parallel()
	s, err := modeltest.New()
	require.NoError(t, err)
	s.Enqueue(modeltest.Reply{Delay: time.Minute})
	errs := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, s.URL+modeltest.Path, strings.NewReader(`{"model":"test-model",`+hello+`}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errs <- err
	}()
	polltest.Until(t, 5*time.Second, "the request to arrive", func() bool { return len(s.Requests()) == 1 })
	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for a delayed reply")
	}
	assert.Error(t, <-errs, "the client gets no answer")
}

func TestLatencyDelaysEveryAnswer(t *testing.T) {
	t.Parallel()
	const latency = 50 * time.Millisecond
	s := modeltest.Start(t, modeltest.WithLatency(latency))
	cases := []struct {
		name, body string
		status     int
	}{
		{"valid", `{"model":"test-model",` + hello + `}`, http.StatusOK},
		{"invalid", `{"model":"test-model"}`, http.StatusBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			resp, _ := chat(t, s, tc.body)
			assert.Equal(t, tc.status, resp.StatusCode)
			assert.GreaterOrEqual(t, time.Since(start), latency)
		})
	}
}

func TestMaxInFlightCountsConcurrentRequests(t *testing.T) {
	t.Parallel()
	const n = 5
	s := modeltest.Start(t)
	// Each reply waits for all n requests to be in flight, so they overlap
	// for certain, not by the scheduler's grace.
	var arrived sync.WaitGroup
	arrived.Add(n)
	s.Respond(func(modeltest.Request) modeltest.Reply {
		arrived.Done()
		arrived.Wait()
		return modeltest.Reply{Content: "ok"}
	})
	var done sync.WaitGroup
	for range n {
		done.Add(1)
		go func() {
			defer done.Done()
			resp, _ := chat(t, s, `{"model":"test-model",`+hello+`}`)
			assert.Equal(t, http.StatusOK, resp.StatusCode)
		}()
	}
	done.Wait()
	assert.Equal(t, n, s.MaxInFlight())

	s.Reset()
	assert.Equal(t, 0, s.MaxInFlight())
	resp, _ := chat(t, s, `{"model":"test-model",`+hello+`}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, 1, s.MaxInFlight())
}

func TestAPIKey(t *testing.T) {
	t.Parallel()
	const null = "<null>"
	s := modeltest.Start(t, modeltest.WithAPIKey("sk-test-0123456789"))
	cases := []struct {
		name     string
		auth     string // "" sends none
		status   int
		message  string
		code     string
		response string
	}{
		{name: "right key", auth: "Bearer sk-test-0123456789", status: http.StatusOK},
		{name: "no header", status: http.StatusUnauthorized, code: null,
			message: "You didn't provide an API key. You need to provide your API key in an Authorization " +
				"header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field " +
				"(with blank username) if you're accessing the API from your browser and are prompted for a " +
				"username and password. You can obtain an API key from https://platform.openai.com/account/api-keys."},
		{name: "not bearer", auth: "Basic c2stdGVzdA==", status: http.StatusUnauthorized, code: null,
			message: "You didn't provide an API key. You need to provide your API key in an Authorization " +
				"header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field " +
				"(with blank username) if you're accessing the API from your browser and are prompted for a " +
				"username and password. You can obtain an API key from https://platform.openai.com/account/api-keys."},
		{name: "wrong key", auth: "Bearer sk-live-9876543210", status: http.StatusUnauthorized, code: "invalid_api_key",
			message: "Incorrect API key provided: sk-***********3210. You can find your API key at " +
				"https://platform.openai.com/account/api-keys."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			header := http.Header{}
			if tc.auth != "" {
				header.Set("Authorization", tc.auth)
			}
			resp, body := do(t, http.MethodPost, s.URL+modeltest.Path, "application/json",
				`{"model":"test-model",`+hello+`}`, header)
			require.Equal(t, tc.status, resp.StatusCode, "body: %s", body)
			if tc.status == http.StatusOK {
				return
			}
			e := decodeError(t, body)
			assert.Equal(t, tc.message, e.Error.Message)
			assert.Equal(t, "invalid_request_error", e.Error.Type)
			assert.Equal(t, null, str(e.Error.Param))
			assert.Equal(t, tc.code, str(e.Error.Code))
		})
	}
}

func TestWithoutJSONSchemaRefusesAsLlamaServer(t *testing.T) {
	t.Parallel()
	s := modeltest.Start(t, modeltest.WithoutJSONSchema())
	resp, body := chat(t, s, strictSchema(`{"type":"object","properties":{},"additionalProperties":false}`))
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.JSONEq(t, `{"error":{"code":400,"message":"response_format type must be one of \"text\" or `+
		`\"json_object\", but got: json_schema","type":"invalid_request_error"}}`, string(body))

	// json_object, the fallback, still works.
	resp, body = chat(t, s, `{"model":"test-model","messages":[{"role":"user","content":"Answer in JSON."}],`+
		`"response_format":{"type":"json_object"}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", body)
	assert.Equal(t, "{}", decodeCompletion(t, body).Choices[0].Message.Content)
}

func TestNewListensOnLoopbackOnly(t *testing.T) {
	t.Parallel()
	cases := []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:0", true},
		{"localhost:0", true},
		{"0.0.0.0:0", false},
		{":0", false},
		{"192.0.2.1:0", false},
		{"127.0.0.1", false},
	}
	for _, tc := range cases {
		t.Run(tc.addr, func(t *testing.T) {
			t.Parallel()
			s, err := modeltest.New(modeltest.WithAddr(tc.addr))
			if !tc.ok {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			defer s.Close()
			resp, _ := chat(t, s, `{"model":"test-model",`+hello+`}`)
			assert.Equal(t, http.StatusOK, resp.StatusCode)
		})
	}
}

func TestControlAPI(t *testing.T) {
	t.Parallel()
	s := modeltest.Start(t, modeltest.WithControlAPI(), modeltest.WithAPIKey("k"))
	auth := http.Header{"Authorization": {"Bearer k"}}

	// Enqueue two replies: a rate limit, then a truncated answer.
	resp, body := do(t, http.MethodPost, s.URL+"/_test/replies", "application/json",
		`[{"status":429,"retryAfter":"1"},{"content":"{\"a\":","finishReason":"length","delayMs":10,`+
			`"promptTokens":9,"completionTokens":2}]`, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", body)
	assert.JSONEq(t, `{"queued":2}`, string(body))

	resp, _ = do(t, http.MethodPost, s.URL+modeltest.Path, "application/json", `{"model":"test-model",`+hello+`}`, auth)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	resp, body = do(t, http.MethodPost, s.URL+modeltest.Path, "application/json",
		`{"model":"test-model","messages":[{"role":"user","content":"Reply in json."}],"max_tokens":2,`+
			`"response_format":{"type":"json_object"}}`, auth)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	c := decodeCompletion(t, body)
	assert.Equal(t, `{"a":`, c.Choices[0].Message.Content)
	assert.Equal(t, "length", c.Choices[0].FinishReason)
	assert.Equal(t, 11, c.Usage.TotalTokens)

	// The control API needs no key, and is not recorded.
	resp, body = do(t, http.MethodGet, s.URL+"/_test/requests", "", "", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var reqs []map[string]any
	require.NoError(t, json.Unmarshal(body, &reqs))
	require.Len(t, reqs, 2)
	assert.Equal(t, "test-model", reqs[1]["model"])
	assert.Equal(t, []any{map[string]any{"role": "user", "content": "Reply in json."}}, reqs[1]["messages"])
	assert.Equal(t, map[string]any{"type": "json_object", "jsonSchema": nil}, reqs[1]["responseFormat"])
	assert.EqualValues(t, 2, reqs[1]["maxTokens"])
	assert.EqualValues(t, 200, reqs[1]["status"])
	assert.EqualValues(t, 429, reqs[0]["status"])
	assert.Contains(t, reqs[1]["raw"], `"max_tokens":2`)

	resp, body = do(t, http.MethodGet, s.URL+"/_test/stats", "", "", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.JSONEq(t, `{"maxInFlight":1,"requests":2}`, string(body))

	resp, _ = do(t, http.MethodPost, s.URL+"/_test/reset", "", "", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, body = do(t, http.MethodGet, s.URL+"/_test/stats", "", "", nil)
	assert.JSONEq(t, `{"maxInFlight":0,"requests":0}`, string(body))
	_, body = do(t, http.MethodGet, s.URL+"/_test/requests", "", "", nil)
	assert.JSONEq(t, `[]`, string(body))

	// A misspelt field is refused rather than ignored.
	resp, body = do(t, http.MethodPost, s.URL+"/_test/replies", "application/json", `[{"stauts":500}]`, nil)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(body), "stauts")
	resp, _ = do(t, http.MethodGet, s.URL+"/_test/nothing", "", "", nil)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestControlAPIIsOffByDefault(t *testing.T) {
	t.Parallel()
	s := modeltest.Start(t)
	resp, body := do(t, http.MethodGet, s.URL+"/_test/stats", "", "", nil)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Equal(t, "Invalid URL (GET /_test/stats)", decodeError(t, body).Error.Message)
}
