package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schema is a user's JSON schema as the model is asked to satisfy it,
// normalised the way Firecrawl normalises extraction schemas:
//   - shorthand objects ({"price": "number", "tags": ["string"]}) are
//     expanded into JSON schema;
//   - every object of it is strict (every property required,
//     additionalProperties false, as OpenAI's strict structured output
//     demands); a property the user left optional becomes nullable, and a
//     null answer for it is dropped from the result;
//   - a root that is not an object (an array, a string) is wrapped in an
//     object under "items" (or "value") and unwrapped from the answer.
type Schema struct {
	sent      json.RawMessage
	validator *jsonschema.Schema
	// wrapKey is the member the root was wrapped under, "" when it was not.
	wrapKey string
	// optional mirrors the objects of the schema: which of their
	// properties the user left optional.
	optional *shape
}

// shape mirrors an object or array schema for dropping the nulls the
// model gave for optional properties.
type shape struct {
	optional map[string]bool
	props    map[string]*shape
	items    *shape
}

// MaxSchemaBytes bounds a schema's JSON.
const MaxSchemaBytes = 64 << 10

// maxSchemaDepth bounds how deeply a schema's objects nest.
const maxSchemaDepth = 32

// MarshalJSON is the schema sent to the model.
func (s *Schema) MarshalJSON() ([]byte, error) { return s.sent, nil }

// Name is the schema's name in the request (OpenAI wants one).
func (s *Schema) Name() string { return "extraction" }

// Wrapped reports whether the user's root was wrapped in an object.
func (s *Schema) Wrapped() bool { return s.wrapKey != "" }

// typeNames are the JSON schema type names a shorthand may use.
var typeNames = []string{"string", "number", "integer", "boolean", "array", "object", "null"}

// schemaKeywords are the keywords that make an object a JSON schema
// rather than a shorthand map of property names to types.
var schemaKeywords = []string{"type", "properties", "items", "$ref", "anyOf", "oneOf", "allOf", "enum", "const",
	"$defs", "definitions", "$schema", "required", "additionalProperties", "prefixItems", "not", "$id"}

// NormalizeSchema checks that raw is a JSON schema (or a shorthand of one)
// and returns it normalised; the error says what is wrong with it.
func NormalizeSchema(raw json.RawMessage) (*Schema, error) {
	if len(raw) > MaxSchemaBytes {
		return nil, fmt.Errorf("must be at most %d KB of JSON", MaxSchemaBytes>>10)
	}
	var root any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("must be a JSON schema object: %v", err)
	}
	obj, ok := root.(map[string]any)
	if !ok {
		return nil, errors.New("must be a JSON schema object, such as {\"type\": \"object\", \"properties\": {...}}")
	}
	if depth(obj, 0) > maxSchemaDepth {
		return nil, fmt.Errorf("must not nest more than %d levels", maxSchemaDepth)
	}
	expanded := expandShorthand(obj)
	// The user's schema must be a schema before it is changed, so that a
	// mistake is reported in the user's own terms.
	if _, err := compile(expanded); err != nil {
		return nil, err
	}
	s := &Schema{}
	if t, _ := expanded["type"].(string); t != "object" && !(t == "" && expanded["properties"] != nil) {
		s.wrapKey = "value"
		if t == "array" || expanded["items"] != nil {
			s.wrapKey = "items"
		}
		inner := expanded
		expanded = map[string]any{"type": "object", "properties": map[string]any{s.wrapKey: inner},
			"required": []any{s.wrapKey}}
		// $defs must stay at the root for the references into them.
		for _, k := range []string{"$defs", "definitions"} {
			if d, ok := inner[k]; ok {
				expanded[k] = d
				delete(inner, k)
			}
		}
	}
	delete(expanded, "$schema")
	delete(expanded, "$id")
	s.optional = strict(expanded)
	sent, err := json.Marshal(expanded)
	if err != nil {
		return nil, fmt.Errorf("cannot be encoded: %v", err)
	}
	if s.validator, err = compile(expanded); err != nil {
		return nil, err
	}
	s.sent = sent
	return s, nil
}

func depth(v any, d int) int {
	most := d
	switch x := v.(type) {
	case map[string]any:
		for _, c := range x {
			most = max(most, depth(c, d+1))
		}
	case []any:
		for _, c := range x {
			most = max(most, depth(c, d+1))
		}
	}
	return most
}

// expandShorthand turns {"price": "number", "tags": ["string"], "seller":
// {"name": "string"}} into JSON schema. A schema is returned as it is but
// for shorthands given as its properties (or items), at any depth: a
// property's schema may carry no type at all ({"description": "..."},
// {"properties": {...}}), as JSON schema allows.
func expandShorthand(obj map[string]any) map[string]any {
	if !isShorthand(obj) {
		expandSubschemas(obj)
		return obj
	}
	props := map[string]any{}
	for k, v := range obj {
		s, _ := shorthandValue(v)
		props[k] = s
	}
	return map[string]any{"type": "object", "properties": props}
}

// expandSubschemas expands the shorthands among schema's properties and
// items, and looks into the subschemas that are not.
func expandSubschemas(schema map[string]any) {
	sub := func(v any) any {
		if s, ok := shorthandValue(v); ok {
			return s
		}
		if m, ok := v.(map[string]any); ok {
			expandSubschemas(m)
		}
		return v
	}
	if props, ok := schema["properties"].(map[string]any); ok {
		for k, v := range props {
			props[k] = sub(v)
		}
	}
	if items, ok := schema["items"]; ok {
		schema["items"] = sub(items)
	}
}

// isShorthand reports whether obj is a shorthand map of property names to
// shorthands rather than a schema: no schema keyword of structure, and
// every value a shorthand.
func isShorthand(obj map[string]any) bool {
	if len(obj) == 0 || isSchema(obj) {
		return false
	}
	for _, v := range obj {
		if _, ok := shorthandValue(v); !ok {
			return false
		}
	}
	return true
}

// shorthandValue expands one shorthand value: a type name, a list of one
// shorthand (an array of it), or a shorthand object.
func shorthandValue(v any) (any, bool) {
	switch x := v.(type) {
	case string:
		if slices.Contains(typeNames, x) {
			return map[string]any{"type": x}, true
		}
	case []any:
		if len(x) == 1 {
			if item, ok := shorthandValue(x[0]); ok {
				return map[string]any{"type": "array", "items": item}, true
			}
		}
	case map[string]any:
		if isShorthand(x) {
			return expandShorthand(x), true
		}
	}
	return nil, false
}

func isSchema(obj map[string]any) bool {
	for _, k := range schemaKeywords {
		if _, ok := obj[k]; ok {
			return true
		}
	}
	return false
}

// strict makes every object schema under s strict (all properties
// required, no others) and returns which properties were optional.
func strict(s map[string]any) *shape {
	sh := &shape{}
	for _, k := range []string{"$defs", "definitions"} {
		if defs, ok := s[k].(map[string]any); ok {
			for _, d := range defs {
				if m, ok := d.(map[string]any); ok {
					strict(m)
				}
			}
		}
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if list, ok := s[k].([]any); ok {
			for _, d := range list {
				if m, ok := d.(map[string]any); ok {
					strict(m)
				}
			}
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		sh.items = strict(items)
	}
	props, ok := s["properties"].(map[string]any)
	if !ok {
		if s["type"] == "object" {
			s["properties"] = map[string]any{}
			s["required"] = []any{}
			s["additionalProperties"] = false
		}
		return sh
	}
	if s["type"] == nil {
		s["type"] = "object"
	}
	required := map[string]bool{}
	if list, ok := s["required"].([]any); ok {
		for _, r := range list {
			if name, ok := r.(string); ok {
				required[name] = true
			}
		}
	}
	sh.optional, sh.props = map[string]bool{}, map[string]*shape{}
	names := make([]string, 0, len(props))
	for name, p := range props {
		names = append(names, name)
		m, ok := p.(map[string]any)
		if !ok {
			continue
		}
		sh.props[name] = strict(m)
		if !required[name] {
			sh.optional[name] = true
			props[name] = nullable(m)
		}
	}
	slices.Sort(names)
	all := make([]any, len(names))
	for i, n := range names {
		all[i] = n
	}
	s["required"] = all
	s["additionalProperties"] = false
	return sh
}

// nullable lets a property's schema be null too.
func nullable(m map[string]any) map[string]any {
	switch t := m["type"].(type) {
	case string:
		if t != "null" {
			m["type"] = []any{t, "null"}
		}
		if e, ok := m["enum"].([]any); ok && !slices.Contains(e, any(nil)) {
			m["enum"] = append(e, nil)
		}
		return m
	case []any:
		if !slices.Contains(t, any("null")) {
			m["type"] = append(t, "null")
		}
		return m
	}
	return map[string]any{"anyOf": []any{m, map[string]any{"type": "null"}}}
}

// noLoader refuses every reference outside the schema: a user's $ref must
// never make Trawler read a file or fetch a URL.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("references outside the schema are not followed (%s)", url)
}

const schemaURL = "urn:trawler:schema"

func compile(doc map[string]any) (*jsonschema.Schema, error) {
	// The compiler wants numbers as json.Number or float64: a round trip
	// through its own decoder gives it the document as it expects.
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(schemaURL, v); err != nil {
		return nil, fmt.Errorf("is not a JSON schema: %v", err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("is not a valid JSON schema: %s", schemaError(err))
	}
	return sch, nil
}

// schemaError shortens the compiler's message: its first line, without
// the internal URL.
func schemaError(err error) string {
	msg := err.Error()
	var se *jsonschema.SchemaValidationError
	if errors.As(err, &se) && se.Err != nil {
		msg = se.Err.Error()
	}
	msg = strings.ReplaceAll(msg, schemaURL+"#", "")
	msg = strings.ReplaceAll(msg, schemaURL, "")
	if i := strings.IndexByte(msg, '\n'); i > 0 {
		rest := strings.TrimSpace(msg[i+1:])
		msg = strings.TrimSpace(msg[:i])
		if rest != "" {
			msg += ": " + strings.Join(strings.Fields(rest), " ")
		}
	}
	return msg
}

// Check decodes a model's answer, validates it against the schema, drops
// the nulls of optional properties and unwraps a wrapped root.
func (s *Schema) Check(text string) (any, error) {
	v, err := decodeAnswer(text)
	if err != nil {
		return nil, err
	}
	if s == nil {
		if _, ok := v.(map[string]any); !ok {
			return nil, errors.New("the answer is not a JSON object")
		}
		return v, nil
	}
	if err := s.validator.Validate(v); err != nil {
		return nil, fmt.Errorf("the answer does not satisfy the schema: %s", schemaError(err))
	}
	v = dropNulls(v, s.optional)
	if s.wrapKey != "" {
		if m, ok := v.(map[string]any); ok {
			return m[s.wrapKey], nil
		}
	}
	return v, nil
}

// decodeAnswer reads one JSON value from text, forgiving a Markdown code
// fence around it (small local models add one even in JSON mode).
func decodeAnswer(text string) (any, error) {
	t := strings.TrimSpace(text)
	if strings.HasPrefix(t, "```") {
		t = strings.TrimPrefix(t, "```")
		t = strings.TrimPrefix(t, "json")
		t = strings.TrimSuffix(strings.TrimSpace(t), "```")
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(t))
	if err != nil {
		return nil, fmt.Errorf("the answer is not JSON: %v", err)
	}
	return v, nil
}

func dropNulls(v any, sh *shape) any {
	if sh == nil {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if c == nil && sh.optional[k] {
				delete(x, k)
				continue
			}
			x[k] = dropNulls(c, sh.props[k])
		}
	case []any:
		for i, c := range x {
			x[i] = dropNulls(c, sh.items)
		}
	}
	return v
}
