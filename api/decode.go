package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"

	"github.com/gofiber/fiber/v2"

	"github.com/trawler-dev/trawler/wire"
)

// decodeBody decodes a JSON request body strictly: a body must be labelled
// JSON (Content-Type application/json or application/*+json, any charset)
// and sent uncompressed, else it is a 415; an unknown key, a key in the wrong case or a key given
// twice is an error naming it, a value of the wrong type is an error naming
// the field and the type. An empty body decodes as {} and needs no
// Content-Type.
func decodeBody(c *fiber.Ctx, dst any) error {
	// The body as sent: Fiber's c.Body() would inflate a Content-Encoding
	// without bound (a 10 MB gzip is gigabytes).
	body := c.Request().Body()
	if ce := strings.TrimSpace(c.Get(fiber.HeaderContentEncoding)); len(body) > 0 && ce != "" && !strings.EqualFold(ce, "identity") {
		msg := fmt.Sprintf("Content-Encoding %q is not supported: send the body uncompressed", wire.Truncate(ce, 100))
		return &Error{Status: fiber.StatusUnsupportedMediaType, Code: "UNSUPPORTED_MEDIA_TYPE", Message: msg,
			Details: []FieldProblem{{Path: []string{"Content-Encoding"}, Message: msg}}}
	}
	if len(body) > 0 && !isJSONMediaType(c.Get(fiber.HeaderContentType)) {
		ct := c.Get(fiber.HeaderContentType)
		msg := "Content-Type must be application/json for a JSON body"
		if ct == "" {
			msg += ", and the request has none"
		} else {
			msg += fmt.Sprintf(", got %q", wire.Truncate(ct, 100))
		}
		return &Error{Status: fiber.StatusUnsupportedMediaType, Code: "UNSUPPORTED_MEDIA_TYPE", Message: msg,
			Details: []FieldProblem{{Path: []string{"Content-Type"}, Message: msg}}}
	}
	return decodeJSON(body, dst, "")
}

// isJSONMediaType accepts application/json and application/*+json, with
// any parameters.
func isJSONMediaType(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	sub, ok := strings.CutPrefix(mt, "application/")
	return ok && (sub == "json" || (strings.HasSuffix(sub, "+json") && len(sub) > len("+json") &&
		!strings.ContainsAny(sub, "/ \t")))
}

// decodeJSON is decodeBody for any JSON text; prefix ("scrapeOptions.")
// names the object it is, in every message.
func decodeJSON(data []byte, dst any, prefix string) error {
	body := bytes.TrimSpace(data)
	if len(body) == 0 || (prefix != "" && string(body) == "null") {
		return nil
	}
	if prefix == "" && string(body) == "null" {
		return badRequest(FieldProblem{Path: []string{}, Message: "request body must be a JSON object"})
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			return &Error{Status: fiber.StatusBadRequest, Code: "BAD_REQUEST_INVALID_JSON",
				Message: "request body must hold one JSON object and nothing after it"}
		}
		// encoding/json takes the last of repeated keys and matches keys
		// in any case; neither is what the client meant to be lenient.
		if p := checkKeys(body, reflect.TypeOf(dst), prefix); p != nil {
			return badRequest(*p)
		}
		return nil
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn), errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{Status: fiber.StatusBadRequest, Code: "BAD_REQUEST_INVALID_JSON",
			Message: "request body is not valid JSON: " + err.Error()}
	case errors.As(err, &typ):
		if typ.Field == "" {
			if prefix != "" {
				name := strings.TrimSuffix(prefix, ".")
				return badRequest(fieldError(name, "%s must be a JSON object", name))
			}
			return badRequest(FieldProblem{Path: []string{}, Message: "request body must be a JSON object"})
		}
		name := prefix + jsonPath(reflect.TypeOf(dst), typ.Field)
		return badRequest(fieldError(name, "%s must be %s", name, describeType(typ.Type)))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := prefix + wire.Truncate(strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`), 100)
		return badRequest(fieldError(name, "unknown key %q is not accepted here", name))
	}
	return &Error{Status: fiber.StatusBadRequest, Code: "BAD_REQUEST_INVALID_JSON", Message: "request body: " + err.Error()}
}

// clientTags are members that clients add to every request body (the
// Firecrawl SDKs' origin, n8n's integration): accepted, and ignored.
type clientTags struct {
	Origin      *string `json:"origin"`
	Integration *string `json:"integration"`
}

// jsonPath is a decoding error's field path as the client wrote it:
// encoding/json names embedded structs in it (scrapeOptionsRequest.timeout),
// which are no part of the JSON.
func jsonPath(t reflect.Type, field string) string {
	var out []string
	for _, seg := range strings.Split(field, ".") {
		t = concrete(t)
		if t != nil && t.Kind() == reflect.Struct {
			if f, ok := t.FieldByName(seg); ok && f.Anonymous {
				t = f.Type
				continue
			}
			t = structFields(t)[seg]
		} else {
			t = elemType(t)
		}
		out = append(out, seg)
	}
	return strings.Join(out, ".")
}

func describeType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return fmt.Sprintf("of type %s", t)
}

// intRange checks an optional integer against [lo, hi] and returns it or def.
func intRange(problems *[]FieldProblem, name string, v *int, lo, hi, def int) int {
	if v == nil {
		return def
	}
	if *v < lo || *v > hi {
		*problems = append(*problems, fieldError(name, "%s must be between %d and %d", name, lo, hi))
	}
	return *v
}

// checkKeys walks JSON text that decoded into a value of type t and reports
// the first key given twice in one object, at any depth (encoding/json would
// silently keep the last), or, in an object that decodes into a struct, a
// key that names a field only in another case (encoding/json would accept
// it). prefix names the text as decodeJSON's does. The walk keeps its own
// stack, so nesting costs no goroutine stack.
func checkKeys(body []byte, t reflect.Type, prefix string) *FieldProblem {
	type frame struct {
		object   bool
		t        reflect.Type // what the container decodes into; nil: unknown
		path     string
		seen     map[string]bool
		wantKey  bool
		next     reflect.Type // the member being read (objects)
		nextPath string
		index    int // the element being read (arrays)
	}
	var stack []*frame
	top := func() *frame {
		if len(stack) == 0 {
			return nil
		}
		return stack[len(stack)-1]
	}
	valueDone := func() {
		if f := top(); f != nil {
			if f.object {
				f.wantKey = true
			} else {
				f.index++
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end: the text was decoded once already
		}
		f := top()
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			valueDone()
			continue
		}
		if f != nil && f.object && f.wantKey {
			key, _ := tok.(string)
			path := joinPath(f.path, wire.Truncate(key, 100))
			if f.seen[key] {
				p := fieldError(path, "%s is given twice: a key may appear once in an object", path)
				return &p
			}
			f.seen[key] = true
			mt, other := memberType(f.t, key)
			if other != "" {
				p := fieldError(path, "unknown key %q is not accepted here (keys are case-sensitive: did you mean %q?)", path, other)
				return &p
			}
			f.next, f.nextPath, f.wantKey = mt, path, false
			continue
		}
		// A value: of the root, of an object's member or of an array.
		vt, vpath := t, strings.TrimSuffix(prefix, ".")
		switch {
		case f != nil && f.object:
			vt, vpath = f.next, f.nextPath
		case f != nil:
			vt, vpath = elemType(f.t), fmt.Sprintf("%s[%d]", f.path, f.index)
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, t: concrete(vt), path: vpath, seen: map[string]bool{}, wantKey: true})
		case json.Delim('['):
			stack = append(stack, &frame{t: concrete(vt), path: vpath})
		default:
			valueDone()
		}
	}
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// concrete is the type a JSON value decodes into behind pointers; nil when
// it is not known (an interface, json.RawMessage: decoded later, if at all).
func concrete(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t == rawMessageType || t.Kind() == reflect.Interface {
		return nil
	}
	return t
}

func elemType(t reflect.Type) reflect.Type {
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		return t.Elem()
	}
	return nil
}

// memberType is the type of member key of an object that decodes into t;
// other is set when t is a struct with a field of that name in another
// case only.
func memberType(t reflect.Type, key string) (mt reflect.Type, other string) {
	switch {
	case t == nil:
		return nil, ""
	case t.Kind() == reflect.Map:
		return t.Elem(), ""
	case t.Kind() != reflect.Struct:
		return nil, ""
	}
	fields := structFields(t)
	if ft, ok := fields[key]; ok {
		return ft, ""
	}
	for name := range fields {
		if strings.EqualFold(name, key) {
			return nil, name
		}
	}
	return nil, ""
}

var fieldCache sync.Map // reflect.Type → map[string]reflect.Type

// structFields maps the JSON names of a struct's fields, those of embedded
// structs included, to their types.
func structFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" && tag == "-" {
			continue
		}
		if f.Anonymous && tag == "" {
			if et := concrete(f.Type); et != nil && et.Kind() == reflect.Struct {
				for k, v := range structFields(et) {
					if _, ok := m[k]; !ok {
						m[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		m[name] = f.Type
	}
	fieldCache.Store(t, m)
	return m
}
