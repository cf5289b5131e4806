package modeltest

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// strictProblem is OpenAI's refusal of a strict schema, or "" when the
// schema follows the rules: the root is an object, and every object in it
// closes its properties ('additionalProperties': false) and requires all of
// them. OpenAI reports one fault at a time, the first it meets.
func strictProblem(name string, schema value) string {
	prefix := fmt.Sprintf("Invalid schema for response_format '%s': ", name)
	root, _ := schema.(*object)
	if typ, _ := root.get("type"); typ != "object" {
		got := "None"
		switch t := typ.(type) {
		case string:
			got = t
		case []value:
			// A list of types: Python writes a list, not a tuple.
			got = "[" + strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(pyRepr(t), "("), ")"), ",") + "]"
		case nil:
		default:
			got = pyRepr(t)
		}
		return prefix + fmt.Sprintf(`schema must be a JSON Schema of 'type: "object"', got 'type: "%s"'.`, got)
	}
	if problem := strictWalk(root, nil); problem != "" {
		return prefix + problem
	}
	return ""
}

// strictWalk checks node and then the schemas under it, through every
// keyword OpenAI follows, path being the keys walked to reach it.
func strictWalk(node value, path []value) string {
	obj, ok := node.(*object)
	if !ok {
		return ""
	}
	where := fmt.Sprintf("In context=%s, ", pyRepr(path))
	if isObjectSchema(obj) {
		if ap, ok := obj.get("additionalProperties"); !ok || ap != false {
			return where + "'additionalProperties' is required to be supplied and to be false."
		}
		if props, ok := obj.vals["properties"].(*object); ok {
			required, _ := obj.vals["required"].([]value)
			for _, k := range props.keys {
				if !slices.Contains(required, value(k)) {
					return where + fmt.Sprintf("'required' is required to be supplied and to be an array "+
						"including every key in properties. Missing '%s'.", k)
				}
			}
		}
	}
	at := func(steps ...value) []value { return append(slices.Clip(path), steps...) }
	if props, ok := obj.vals["properties"].(*object); ok {
		for _, k := range props.keys {
			if p := strictWalk(props.vals[k], at("properties", k)); p != "" {
				return p
			}
		}
	}
	switch items := obj.vals["items"].(type) {
	case *object:
		if p := strictWalk(items, at("items")); p != "" {
			return p
		}
	case []value:
		for i, it := range items {
			if p := strictWalk(it, at("items", i)); p != "" {
				return p
			}
		}
	}
	for _, key := range []string{"anyOf", "oneOf", "allOf", "prefixItems"} {
		branches, _ := obj.vals[key].([]value)
		for i, b := range branches {
			if p := strictWalk(b, at(key, i)); p != "" {
				return p
			}
		}
	}
	for _, key := range []string{"$defs", "definitions"} {
		if defs, ok := obj.vals[key].(*object); ok {
			for _, k := range defs.keys {
				if p := strictWalk(defs.vals[k], at(key, k)); p != "" {
					return p
				}
			}
		}
	}
	return ""
}

// isObjectSchema reports whether a schema describes objects: its type is
// (or includes) "object", or it lists properties.
func isObjectSchema(o *object) bool {
	switch t := o.vals["type"].(type) {
	case string:
		return t == "object"
	case []value:
		return slices.Contains(t, value("object"))
	}
	_, ok := o.vals["properties"]
	return ok
}

// pyRepr writes v as Python's repr would: OpenAI's strict-mode messages
// name the place of a fault as a Python tuple, ('properties', 'items', 0).
func pyRepr(v value) string {
	switch t := v.(type) {
	case nil:
		return "None"
	case bool:
		if t {
			return "True"
		}
		return "False"
	case int:
		return strconv.Itoa(t)
	case json.Number:
		return t.String()
	case string:
		if strings.Contains(t, "'") && !strings.Contains(t, `"`) {
			return `"` + strings.ReplaceAll(t, `\`, `\\`) + `"`
		}
		return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(t) + "'"
	case []value:
		parts := make([]string, len(t))
		for i, e := range t {
			parts[i] = pyRepr(e)
		}
		// A path is a tuple; a one-element tuple keeps its comma.
		if len(parts) == 1 {
			return "(" + parts[0] + ",)"
		}
		return "(" + strings.Join(parts, ", ") + ")"
	}
	return encodeJSON(v)
}

// Examples of string formats, each valid for its format.
var formatExamples = map[string]string{
	"date-time":     "2024-01-01T00:00:00Z",
	"date":          "2024-01-01",
	"time":          "00:00:00Z",
	"duration":      "P1D",
	"email":         "user@example.com",
	"idn-email":     "user@example.com",
	"hostname":      "example.com",
	"idn-hostname":  "example.com",
	"ipv4":          "127.0.0.1",
	"ipv6":          "::1",
	"uri":           "https://example.com/",
	"iri":           "https://example.com/",
	"uri-reference": "https://example.com/",
	"url":           "https://example.com/",
	"uuid":          "00000000-0000-4000-8000-000000000000",
}

// generator writes the deterministic example value of a schema that
// DefaultReply answers with.
type generator struct {
	root value
}

// Beyond softDepth a recursive schema is cut short where it allows (no
// array items, the null branch); beyond hardDepth it is cut regardless.
const (
	softDepth = 8
	hardDepth = 32
)

func (g *generator) gen(s value, depth int) value {
	if depth > hardDepth {
		return nil
	}
	o, ok := s.(*object)
	if !ok {
		if s == false {
			return nil
		}
		return "example"
	}
	if ref, ok := o.vals["$ref"].(string); ok {
		if target := g.resolve(ref); target != nil {
			return g.gen(target, depth+1)
		}
	}
	if c, ok := o.get("const"); ok {
		return c
	}
	if e, ok := o.vals["enum"].([]value); ok && len(e) > 0 {
		return e[0]
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if branches, ok := o.vals[key].([]value); ok && len(branches) > 0 {
			return g.gen(g.branch(branches, depth > softDepth), depth+1)
		}
	}
	if all, ok := o.vals["allOf"].([]value); ok && len(all) > 0 {
		return g.gen(g.merge(o, all), depth+1)
	}
	switch g.typeOf(o, depth > softDepth) {
	case "null":
		return nil
	case "boolean":
		return true
	case "integer":
		return bounded(o, 1, true)
	case "number":
		return bounded(o, 1.5, false)
	case "array":
		return g.array(o, depth)
	case "object":
		return g.object(o, depth)
	default:
		return example(o)
	}
}

// typeOf is the type to write: the first one other than null, unless null
// is all the schema allows (or the value is deep in a recursion and null
// is allowed, to end it).
func (g *generator) typeOf(o *object, deep bool) string {
	switch t := o.vals["type"].(type) {
	case string:
		return t
	case []value:
		first := ""
		for _, e := range t {
			name, _ := e.(string)
			if name == "null" && deep {
				return "null"
			}
			if name != "null" && first == "" {
				first = name
			}
		}
		if first == "" {
			return "null"
		}
		return first
	}
	for _, k := range []string{"properties", "required", "additionalProperties"} {
		if _, ok := o.vals[k]; ok {
			return "object"
		}
	}
	for _, k := range []string{"items", "prefixItems"} {
		if _, ok := o.vals[k]; ok {
			return "array"
		}
	}
	return "string"
}

// branch picks the first branch of an anyOf that allows more than null,
// or a null branch when deep in a recursion.
func (g *generator) branch(branches []value, deep bool) value {
	for _, b := range branches {
		if g.onlyNull(b) == deep {
			return b
		}
	}
	return branches[0]
}

func (g *generator) onlyNull(b value) bool {
	o, ok := b.(*object)
	if !ok {
		return false
	}
	if ref, ok := o.vals["$ref"].(string); ok {
		if target, ok := g.resolve(ref).(*object); ok {
			o = target
		}
	}
	switch t := o.vals["type"].(type) {
	case string:
		return t == "null"
	case []value:
		return len(t) == 1 && t[0] == "null"
	}
	return false
}

// merge folds an allOf into one schema: properties and required lists
// combined, other keywords taken from the first that has them.
func (g *generator) merge(o *object, all []value) *object {
	out := &object{}
	props := &object{}
	var required []value
	add := func(s *object) {
		for _, k := range s.keys {
			switch k {
			case "allOf", "$ref":
			case "properties":
				if p, ok := s.vals[k].(*object); ok {
					for _, pk := range p.keys {
						props.set(pk, p.vals[pk])
					}
				}
			case "required":
				r, _ := s.vals[k].([]value)
				required = append(required, r...)
			default:
				if _, ok := out.vals[k]; !ok {
					out.set(k, s.vals[k])
				}
			}
		}
	}
	add(o)
	for _, s := range all {
		sub, _ := s.(*object)
		if ref, ok := sub.get("$ref"); ok {
			if r, ok := ref.(string); ok {
				if target, ok := g.resolve(r).(*object); ok {
					add(target)
				}
			}
		}
		if sub != nil {
			add(sub)
		}
	}
	if len(props.keys) > 0 {
		out.set("properties", props)
	}
	if len(required) > 0 {
		out.set("required", required)
	}
	return out
}

func (g *generator) array(o *object, depth int) value {
	out := []value{}
	if prefix, ok := o.vals["prefixItems"].([]value); ok {
		for _, p := range prefix {
			out = append(out, g.gen(p, depth+1))
		}
		return out
	}
	if tuple, ok := o.vals["items"].([]value); ok {
		for _, p := range tuple {
			out = append(out, g.gen(p, depth+1))
		}
		return out
	}
	n := 1
	if depth > softDepth {
		n = 0
	}
	if m, ok := number(o, "minItems"); ok && float64(n) < m {
		n = int(m)
	}
	if m, ok := number(o, "maxItems"); ok && float64(n) > m {
		n = int(m)
	}
	items, ok := o.get("items")
	if !ok {
		items = true
	}
	for range n {
		out = append(out, g.gen(items, depth+1))
	}
	return out
}

func (g *generator) object(o *object, depth int) value {
	out := &object{}
	props, _ := o.vals["properties"].(*object)
	if props != nil {
		for _, k := range props.keys {
			out.set(k, g.gen(props.vals[k], depth+1))
		}
	}
	// A required member with no property schema takes the schema of
	// additional properties, or any value.
	required, _ := o.vals["required"].([]value)
	for _, r := range required {
		k, ok := r.(string)
		if !ok || slices.Contains(out.keys, k) {
			continue
		}
		extra, ok := o.vals["additionalProperties"].(*object)
		if ok {
			out.set(k, g.gen(extra, depth+1))
		} else {
			out.set(k, "example")
		}
	}
	return out
}

// resolve follows a $ref within the schema: "#", or a JSON pointer from the
// root ("#/$defs/Step"). Other references resolve to nil.
func (g *generator) resolve(ref string) value {
	if ref == "#" {
		return g.root
	}
	if !strings.HasPrefix(ref, "#/") {
		return nil
	}
	cur := g.root
	for _, tok := range strings.Split(ref[2:], "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch c := cur.(type) {
		case *object:
			next, ok := c.vals[tok]
			if !ok {
				return nil
			}
			cur = next
		case []value:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

// example is a string for a schema: a valid example of its format, or
// "example", padded or cut to its length bounds.
func example(o *object) value {
	s := "example"
	if f, ok := o.vals["format"].(string); ok {
		if e, ok := formatExamples[f]; ok {
			s = e
		}
	}
	if m, ok := number(o, "minLength"); ok {
		for float64(len([]rune(s))) < m {
			s += "x"
		}
	}
	if m, ok := number(o, "maxLength"); ok && float64(len([]rune(s))) > m {
		s = string([]rune(s)[:int(m)])
	}
	return s
}

// bounded is start moved inside the schema's bounds and onto its multipleOf.
func bounded(o *object, start float64, integer bool) value {
	v := start
	step := 0.5
	if integer {
		step = 1
	}
	if m, ok := number(o, "minimum"); ok && v < m {
		v = m
	}
	if m, ok := number(o, "exclusiveMinimum"); ok && v <= m {
		v = m + step
	}
	if m, ok := number(o, "maximum"); ok && v > m {
		v = m
	}
	if m, ok := number(o, "exclusiveMaximum"); ok && v >= m {
		v = m - step
	}
	if m, ok := number(o, "multipleOf"); ok && m > 0 {
		v = math.Ceil(v/m) * m
	}
	if integer {
		v = math.Ceil(v)
		return json.Number(strconv.FormatInt(int64(v), 10))
	}
	return json.Number(strconv.FormatFloat(v, 'f', -1, 64))
}

// number is a numeric keyword of a schema.
func number(o *object, key string) (float64, bool) {
	n, ok := o.vals[key].(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}
