package api

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/trawler-dev/trawler/model"
	"github.com/trawler-dev/trawler/scrape"
)

// memberFormats are the formats decodeMemberFormat reads, with the members
// their object form takes.
var memberFormats = map[string][]string{
	"json":       {"schema", "prompt"},
	"summary":    {},
	"question":   {"question"},
	"highlights": {"query"},
	// query is Firecrawl's deprecated form of both: freeform (the
	// default) is a question, directQuote highlights.
	"query":          {"prompt", "mode"},
	"changeTracking": {"modes", "schema", "prompt", "tag"},
	"branding":       {},
	"audio":          {},
	"video":          {},
}

// maxModelText bounds a json prompt, a question and a highlights query, in
// characters.
const maxModelText = 10000

// maxTag bounds a changeTracking tag, in characters.
const maxTag = 256

// decodeMemberFormat reads a format of memberFormats, given as its name or
// as an object: {"type": "json", "schema": {...}, "prompt": "..."} with a
// schema, a prompt or both; {"type": "question", "question": "..."};
// {"type": "highlights", "query": "..."}; Firecrawl's deprecated {"type":
// "query", "prompt": "...", "mode": "freeform" or "directQuote"}, read as
// a question or highlights; {"type": "changeTracking", "modes":
// ["git-diff", "json"], "schema": {...}, "prompt": "...", "tag": "..."};
// summary, branding, audio and video take no members. It returns the path
// of the member at fault with its message.
func decodeMemberFormat(raw json.RawMessage, name string) (scrape.Format, string, string) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return namedFormat(s, name)
	}
	var obj map[string]json.RawMessage
	_ = json.Unmarshal(raw, &obj)
	var t string
	_ = json.Unmarshal(obj["type"], &t)
	f := scrape.Format{Type: t}
	allowed := memberFormats[t]
	for k := range obj {
		if k != "type" && !slices.Contains(allowed, k) {
			takes := "no other members"
			if len(allowed) > 0 {
				takes = strings.Join(allowed, " and ")
			}
			return f, name + "." + k, fmt.Sprintf("%s.%s is not a member of a %s format (it takes %s)", name, k, t, takes)
		}
	}
	m := formatMembers{obj: obj, name: name}
	var msg string
	switch t {
	case "question":
		if f.Question, msg = m.text("question", true, maxModelText); msg != "" {
			return f, name + ".question", msg
		}
	case "highlights":
		if f.Query, msg = m.text("query", true, maxModelText); msg != "" {
			return f, name + ".query", msg
		}
	case "query":
		return m.query(f)
	case "json":
		if f.Prompt, msg = m.text("prompt", false, maxModelText); msg != "" {
			return f, name + ".prompt", msg
		}
		if msg = m.schema(&f); msg != "" {
			return f, name + ".schema", msg
		}
		if f.Prompt == "" && len(f.Schema) == 0 {
			return f, name, name + " of type json needs a schema, a prompt or both"
		}
	case "changeTracking":
		return m.changeTracking(f)
	}
	return f, "", ""
}

// namedFormat reads a format given by its name s, which the formats that
// take members may not be.
func namedFormat(s, name string) (scrape.Format, string, string) {
	switch s {
	case "json":
		return scrape.Format{}, name, name + ` "json" must be an object: {"type": "json", "schema": {...}, "prompt": "..."} with a schema, a prompt or both`
	case "question":
		return scrape.Format{}, name, name + ` "question" must be an object: {"type": "question", "question": "..."}`
	case "highlights":
		return scrape.Format{}, name, name + ` "highlights" must be an object: {"type": "highlights", "query": "..."}`
	case "query":
		return scrape.Format{}, name, name + ` "query" must be an object: {"type": "query", "prompt": "...", "mode": "freeform" or "directQuote"}`
	}
	return scrape.Format{Type: s}, "", ""
}

// formatMembers are the members of the format object named name.
type formatMembers struct {
	obj  map[string]json.RawMessage
	name string
}

// text reads member as a string of at most limit characters, not blank;
// it returns the message of what is wrong with it.
func (m formatMembers) text(member string, required bool, limit int) (string, string) {
	v, ok := m.obj[member]
	if !ok || string(v) == "null" {
		if required {
			return "", fmt.Sprintf("%s.%s is required", m.name, member)
		}
		return "", ""
	}
	var out string
	switch {
	case json.Unmarshal(v, &out) != nil:
		return "", fmt.Sprintf("%s.%s must be a string", m.name, member)
	case strings.TrimSpace(out) == "":
		return "", fmt.Sprintf("%s.%s must not be empty", m.name, member)
	case utf8.RuneCountInString(out) > limit:
		return "", fmt.Sprintf("%s.%s must be at most %d characters, got %d", m.name, member, limit, utf8.RuneCountInString(out))
	}
	return out, ""
}

// schema reads the schema member, when given, into f; it returns the
// message of what is wrong with it.
func (m formatMembers) schema(f *scrape.Format) string {
	if v, ok := m.obj["schema"]; ok && string(v) != "null" {
		if _, err := model.NormalizeSchema(v); err != nil {
			return fmt.Sprintf("%s.schema %v", m.name, err)
		}
		f.Schema = v
	}
	return ""
}

// query reads Firecrawl's deprecated query format as the question or the
// highlights format its mode names.
func (m formatMembers) query(f scrape.Format) (scrape.Format, string, string) {
	name := m.name
	prompt, msg := m.text("prompt", true, maxModelText)
	if msg != "" {
		return f, name + ".prompt", msg
	}
	mode, msg := m.text("mode", false, 20)
	switch {
	case msg != "":
		return f, name + ".mode", msg
	case mode == "" || mode == "freeform":
		return scrape.Format{Type: "question", Question: prompt}, "", ""
	case mode == "directQuote":
		return scrape.Format{Type: "highlights", Query: prompt}, "", ""
	}
	return f, name + ".mode", fmt.Sprintf(`%s.mode must be "freeform" or "directQuote", got %q`, name, mode)
}

// changeTracking reads the changeTracking format's modes, prompt, schema
// and tag: a prompt or a schema is for the json mode, which needs one.
func (m formatMembers) changeTracking(f scrape.Format) (scrape.Format, string, string) {
	name := m.name
	if v, ok := m.obj["modes"]; ok && string(v) != "null" {
		if json.Unmarshal(v, &f.Modes) != nil {
			return f, name + ".modes", name + `.modes must be an array of "git-diff" and "json"`
		}
		for i, mode := range f.Modes {
			if mode != "git-diff" && mode != "json" {
				return f, fmt.Sprintf("%s.modes[%d]", name, i), fmt.Sprintf(`%s.modes[%d] must be "git-diff" or "json", got %q`, name, i, mode)
			}
		}
		f.Modes = slices.Compact(slices.Sorted(slices.Values(f.Modes)))
	}
	var msg string
	if f.Prompt, msg = m.text("prompt", false, maxModelText); msg != "" {
		return f, name + ".prompt", msg
	}
	if msg = m.schema(&f); msg != "" {
		return f, name + ".schema", msg
	}
	if f.Tag, msg = m.text("tag", false, maxTag); msg != "" {
		return f, name + ".tag", msg
	}
	jsonMode := slices.Contains(f.Modes, "json")
	if jsonMode && f.Prompt == "" && len(f.Schema) == 0 {
		return f, name, name + ` of mode "json" needs a schema, a prompt or both`
	}
	if !jsonMode && (f.Prompt != "" || len(f.Schema) > 0) {
		return f, name + ".modes", name + `.schema and .prompt are for the "json" mode: add it to modes`
	}
	return f, "", ""
}
