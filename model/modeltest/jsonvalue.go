package modeltest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// A value is one decoded JSON value that keeps the order of object members:
// nil, bool, json.Number, string, []value or *object. encoding/json's maps
// lose that order, and both of this package's answers depend on it: OpenAI
// names the first property of a schema missing from 'required', and a model
// writes an object's members in the order its schema declares them.
type value = any

// object is a JSON object whose members keep their order.
type object struct {
	keys []string
	vals map[string]value
}

// get returns the member named key and whether it is present; a nil
// object has none.
func (o *object) get(key string) (value, bool) {
	if o == nil {
		return nil, false
	}
	v, ok := o.vals[key]
	return v, ok
}

// set adds or replaces a member, keeping the position of the first one.
func (o *object) set(key string, v value) {
	if o.vals == nil {
		o.vals = map[string]value{}
	}
	if _, ok := o.vals[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.vals[key] = v
}

// parseJSON decodes one JSON document, numbers as json.Number; anything
// after it is an error, as it is for OpenAI.
func parseJSON(data []byte) (value, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (value, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{vals: map[string]value{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				o.set(k, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return o, nil
		case '[':
			a := []value{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return a, nil
		}
		return nil, errors.New("unexpected delimiter")
	default:
		return t, nil
	}
}

// encodeJSON writes v compactly, object members in their order.
func encodeJSON(v value) string {
	var b strings.Builder
	writeJSON(&b, v)
	return b.String()
}

func writeJSON(b *strings.Builder, v value) {
	switch t := v.(type) {
	case *object:
		b.WriteByte('{')
		for i, k := range t.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			writeJSON(b, t.vals[k])
		}
		b.WriteByte('}')
	case []value:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, e)
		}
		b.WriteByte(']')
	case string:
		writeString(b, t)
	default:
		out, err := json.Marshal(t)
		if err != nil {
			out = []byte("null")
		}
		b.Write(out)
	}
}

// writeString writes s as a JSON string without encoding/json's HTML
// escapes, as a model's output would have it.
func writeString(b *strings.Builder, s string) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// kindOf names v's JSON type the way OpenAI's messages do ("a string", "an
// integer", "a decimal number", ...).
func kindOf(v value) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		if isInteger(t) {
			return "an integer"
		}
		return "a decimal number"
	case string:
		return "a string"
	case []value:
		return "an array"
	case *object:
		return "an object"
	}
	return "an unknown type"
}

// isInteger reports whether n was written as an integer: OpenAI, like
// Python's json module, types 5.0 and 1e3 as decimals.
func isInteger(n json.Number) bool {
	return !strings.ContainsAny(string(n), ".eE")
}
