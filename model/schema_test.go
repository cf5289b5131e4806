package model_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/model"
)

// The schema sent to the model is the user's, made strict the way
// OpenAI's structured output demands, and an answer is checked against it.
func TestNormalizeSchema(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   string
		// sent is the schema the model is asked to satisfy.
		sent string
		// answer is a model answer and want what the document carries.
		answer, want string
	}{
		{
			name: "shorthand",
			in:   `{"price": "number", "tags": ["string"], "seller": {"name": "string"}}`,
			sent: `{"type":"object","properties":{"price":{"type":["number","null"]},"seller":{"type":["object","null"],
				"properties":{"name":{"type":["string","null"]}},"required":["name"],"additionalProperties":false},
				"tags":{"type":["array","null"],"items":{"type":"string"}}},"required":["price","seller","tags"],"additionalProperties":false}`,
			answer: `{"price": 9.5, "tags": ["a"], "seller": {"name": null}}`,
			want:   `{"price": 9.5, "tags": ["a"], "seller": {}}`,
		},
		{
			name: "optional properties become nullable and their nulls are dropped",
			in: `{"type": "object", "properties": {"title": {"type": "string"}, "author": {"type": "string"}},
				"required": ["title"]}`,
			sent: `{"type":"object","properties":{"author":{"type":["string","null"]},"title":{"type":"string"}},
				"required":["author","title"],"additionalProperties":false}`,
			answer: `{"title": "T", "author": null}`,
			want:   `{"title": "T"}`,
		},
		{
			name: "an array root is wrapped and unwrapped",
			in:   `{"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}`,
			sent: `{"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"}},
				"required":["name"],"additionalProperties":false}}},"required":["items"],"additionalProperties":false}`,
			answer: `{"items": [{"name": "a"}, {"name": "b"}]}`,
			want:   `[{"name": "a"}, {"name": "b"}]`,
		},
		{
			name:   "a scalar root is wrapped under value",
			in:     `{"type": "string", "enum": ["yes", "no"]}`,
			sent:   `{"type":"object","properties":{"value":{"type":"string","enum":["yes","no"]}},"required":["value"],"additionalProperties":false}`,
			answer: "```json\n{\"value\": \"no\"}\n```",
			want:   `"no"`,
		},
		{
			name: "references into $defs stay valid",
			in: `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
				"properties": {"a": {"$ref": "#/$defs/p"}}, "required": ["a"], "$defs": {"p": {"type": "object", "properties": {"x": {"type": "integer"}}}}}`,
			sent: `{"type":"object","properties":{"a":{"$ref":"#/$defs/p"}},"required":["a"],"additionalProperties":false,
				"$defs":{"p":{"type":"object","properties":{"x":{"type":["integer","null"]}},"required":["x"],"additionalProperties":false}}}`,
			answer: `{"a": {"x": 3}}`,
			want:   `{"a": {"x": 3}}`,
		},
		{
			// JSON schema needs no type: a schema of properties is an
			// object's, and a property's may only describe or bound it.
			name: "schemas without a type are schemas, not shorthands",
			in: `{"properties": {"title": {"description": "the page's title"}, "price": {"minimum": 0},
				"author": {"properties": {"name": {"type": "string"}}, "required": ["name"]}}, "required": ["title", "price", "author"]}`,
			sent: `{"type":"object","properties":{"title":{"description":"the page's title"},"price":{"minimum":0},
				"author":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}},
				"required":["author","price","title"],"additionalProperties":false}`,
			answer: `{"title": "T", "price": 3, "author": {"name": "A"}}`,
			want:   `{"title": "T", "price": 3, "author": {"name": "A"}}`,
		},
		{
			name:   "an optional property without a type is allowed null through anyOf",
			in:     `{"type": "object", "properties": {"v": {"$ref": "#/$defs/n"}}, "$defs": {"n": {"type": "number"}}}`,
			sent:   `{"type":"object","properties":{"v":{"anyOf":[{"$ref":"#/$defs/n"},{"type":"null"}]}},"required":["v"],"additionalProperties":false,"$defs":{"n":{"type":"number"}}}`,
			answer: `{"v": null}`,
			want:   `{}`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := model.NormalizeSchema(json.RawMessage(tc.in))
			require.NoError(t, err)
			sent, err := json.Marshal(s)
			require.NoError(t, err)
			assert.JSONEq(t, tc.sent, string(sent))
			got, err := s.Check(tc.answer)
			require.NoError(t, err)
			raw, err := json.Marshal(got)
			require.NoError(t, err)
			assert.JSONEq(t, tc.want, string(raw))
		})
	}
}

// Answers that break the schema are refused with the reason.
func TestSchemaRefusesBadAnswers(t *testing.T) {
	t.Parallel()
	s, err := model.NormalizeSchema(json.RawMessage(`{"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}},
		"required": ["n"]}`))
	require.NoError(t, err)
	for answer, why := range map[string]string{
		`{"n": 0}`:            "minimum",
		`{"n": "1"}`:          "integer",
		`{}`:                  "missing",
		`{"n": 1, "x": 2}`:    "additional",
		`{"n": 1`:             "not JSON",
		`{"n": 1} trailing`:   "not JSON",
		`Sure! {"n": 1}`:      "not JSON",
		`[{"n": 1}]`:          "object",
		`{"n": 1, "n": null}`: "integer",
	} {
		_, err := s.Check(answer)
		if assert.Error(t, err, answer) {
			assert.Contains(t, err.Error(), why, answer)
		}
	}
}

// A schema that is not a JSON schema is refused with a reason a user can
// act on, before anything is sent; a $ref never reads files or URLs.
func TestNormalizeSchemaRefuses(t *testing.T) {
	t.Parallel()
	for in, why := range map[string]string{
		`[]`:                                         "must be a JSON schema object",
		`"string"`:                                   "must be a JSON schema object",
		`{"type": "nonsense"}`:                       "not a valid JSON schema",
		`{"type": "object", "properties": 5}`:        "not a valid JSON schema",
		`{"type": "object", "required": "a"}`:        "not a valid JSON schema",
		`{"$ref": "file:///etc/passwd"}`:             "not followed",
		`{"$ref": "http://127.0.0.1:1/schema"}`:      "not followed",
		`{"type": "string", "pattern": "(unclosed"}`: "not a valid JSON schema",
		`{`: "must be a JSON schema object",
	} {
		_, err := model.NormalizeSchema(json.RawMessage(in))
		if assert.Error(t, err, in) {
			assert.Contains(t, err.Error(), why, in)
		}
	}
	deep := `{"type": "object", "properties": {"a": `
	for i := 0; i < 40; i++ {
		deep += `{"type": "object", "properties": {"a": `
	}
	deep += `{"type": "string"}`
	for i := 0; i < 41; i++ {
		deep += `}}`
	}
	deep += `}`
	_, err := model.NormalizeSchema(json.RawMessage(deep))
	assert.ErrorContains(t, err, "must not nest")
}

func TestFit(t *testing.T) {
	t.Parallel()
	text := "line one\nline two\nline three\n"
	got, cut := model.Fit(text, 100)
	assert.False(t, cut)
	assert.Equal(t, text, got)
	got, cut = model.Fit(text, 4) // 16 bytes
	assert.True(t, cut)
	assert.Equal(t, "line one\nline two"[:16], got[:len(got)])
	assert.LessOrEqual(t, len(got), 16)
	got, _ = model.Fit("ééééééééé", 1) // never splits a character
	assert.Equal(t, "éé", got)
	assert.Equal(t, "http://h:1/v1", model.APIBase("http://h:1"))
	assert.Equal(t, "http://h:1/v1", model.APIBase("http://h:1/v1/"))
	assert.Equal(t, "https://api.openai.com/v1", model.APIBase("https://api.openai.com/v1"))
}
