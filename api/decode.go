package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// decodeBody decodes a JSON request body strictly: an unknown key is an
// error naming it, a value of the wrong type is an error naming the field and
// the type. An empty body decodes as {}. The Content-Type is not checked:
// clients such as curl -d send JSON labelled as a form.
func decodeBody(c *fiber.Ctx, dst any) error {
	return decodeJSON(c.Body(), dst, "")
}

// decodeJSON is decodeBody for any JSON text; prefix ("scrapeOptions.")
// names the object it is, in every message.
func decodeJSON(data []byte, dst any, prefix string) error {
	body := bytes.TrimSpace(data)
	if len(body) == 0 || (prefix != "" && string(body) == "null") {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			return &Error{Status: fiber.StatusBadRequest, Code: "BAD_REQUEST_INVALID_JSON",
				Message: "request body must hold one JSON object and nothing after it"}
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
		name := prefix + typ.Field
		return badRequest(fieldError(name, "%s must be %s", name, describeType(typ.Type)))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := prefix + strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return badRequest(fieldError(name, "unknown key %q is not accepted here", name))
	}
	return &Error{Status: fiber.StatusBadRequest, Code: "BAD_REQUEST_INVALID_JSON", Message: "request body: " + err.Error()}
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
