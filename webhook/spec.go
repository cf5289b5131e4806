// Package webhook owns job webhooks: decoding the "webhook" option of crawl
// and batch-scrape requests, building each event's Firecrawl-shaped body, and
// delivering the stored events (signed, in order per job, with retries)
// through a guarded HTTP client.
package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"

	"golang.org/x/net/http/httpguts"
)

// Events a user can ask for; a job also ends with "cancelled", delivered to
// whoever wants its end (see Spec.Wants).
var userEvents = []string{"started", "page", "completed", "failed"}

// Spec is a job's webhook as the user gave it: a URL string or
// {url, headers, metadata, events}.
type Spec struct {
	URL      string            `json:"url"`
	Headers  map[string]string `json:"headers,omitempty"`
	Metadata map[string]any    `json:"metadata,omitempty"`
	Events   []string          `json:"events,omitempty"`

	// urlField is the request field that gave URL, for error messages.
	urlField string
}

// URLField names the request field that gave the URL: "webhook" for a
// URL string, "webhook.url" for an object (with the field Decode was given).
func (s *Spec) URLField() string { return s.urlField }

// Wants reports whether the spec asks for event ("started", "page",
// "completed", "failed" or "cancelled"). No events means all of them;
// "cancelled" goes to whoever wants "completed" or "failed", since a cancel
// ends the job as they do. A nil spec wants nothing.
func (s *Spec) Wants(event string) bool {
	if s == nil {
		return false
	}
	if len(s.Events) == 0 {
		return true
	}
	if event == "cancelled" {
		return slices.Contains(s.Events, "completed") || slices.Contains(s.Events, "failed")
	}
	return slices.Contains(s.Events, event)
}

// Decode reads the "webhook" member of a request, strictly. It returns one
// problem per fault, each naming its path under field ("webhook.events[1]
// must be one of ..."). A missing member or JSON null is no webhook: nil, nil.
func Decode(raw json.RawMessage, field string) (*Spec, []string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	switch raw[0] {
	case '"':
		var u string
		if err := json.Unmarshal(raw, &u); err != nil {
			return nil, []string{field + " must be a URL string or an object"}
		}
		if !validURL(u) {
			return nil, []string{field + " must be an absolute http or https URL"}
		}
		return &Spec{URL: u, urlField: field}, nil
	case '{':
		return decodeObject(raw, field)
	default:
		return nil, []string{field + " must be a URL string or an object"}
	}
}

func decodeObject(raw json.RawMessage, field string) (*Spec, []string) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return nil, []string{field + " must be a URL string or an object"}
	}
	s := Spec{urlField: field + ".url"}
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, field+fmt.Sprintf(format, args...)) }

	if v, ok := members["url"]; !ok || isNull(v) {
		bad(".url is required")
	} else if err := json.Unmarshal(v, &s.URL); err != nil || !validURL(s.URL) {
		bad(".url must be an absolute http or https URL")
	}

	if v, ok := members["headers"]; ok && !isNull(v) {
		var headers map[string]json.RawMessage
		if err := json.Unmarshal(v, &headers); err != nil {
			bad(".headers must be an object of header names to strings")
		} else {
			s.Headers = make(map[string]string, len(headers))
			for _, name := range slices.Sorted(maps.Keys(headers)) {
				var value string
				switch {
				case !httpguts.ValidHeaderFieldName(name):
					bad(".headers key %q is not a valid HTTP header name", name)
				case json.Unmarshal(headers[name], &value) != nil:
					bad(".headers.%s must be a string", name)
				case !httpguts.ValidHeaderFieldValue(value):
					bad(".headers.%s is not a valid HTTP header value", name)
				default:
					s.Headers[name] = value
				}
			}
		}
	}

	if v, ok := members["metadata"]; ok && !isNull(v) {
		// UseNumber keeps large integers exact when the metadata is echoed.
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.UseNumber()
		if err := dec.Decode(&s.Metadata); err != nil || s.Metadata == nil {
			bad(".metadata must be an object")
		}
	}

	if v, ok := members["events"]; ok && !isNull(v) {
		var events []json.RawMessage
		if err := json.Unmarshal(v, &events); err != nil {
			bad(".events must be an array of event names")
		} else {
			for i, ev := range events {
				var name string
				if json.Unmarshal(ev, &name) != nil || !slices.Contains(userEvents, name) {
					bad(".events[%d] must be one of started, page, completed, failed", i)
					continue
				}
				s.Events = append(s.Events, name)
			}
		}
	}

	for _, k := range slices.Sorted(maps.Keys(members)) {
		switch k {
		case "url", "headers", "metadata", "events":
		default:
			bad(".%s is not a known field", k)
		}
	}
	if problems != nil {
		return nil, problems
	}
	return &s, nil
}

// validURL accepts an absolute http or https URL with a host.
func validURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Hostname() != ""
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }
