package webhook

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		raw      string
		want     *Spec
		problems []string
	}{
		{name: "absent", raw: ""},
		{name: "null", raw: "null"},
		{name: "string", raw: `"https://hooks.example/x?t=1"`, want: &Spec{URL: "https://hooks.example/x?t=1", urlField: "webhook"}},
		{name: "object", raw: `{"url":"http://hooks.example","headers":{"Authorization":"Bearer t"},
			"metadata":{"run":12345678901234567890,"tag":"a"},"events":["page","completed"]}`,
			want: &Spec{URL: "http://hooks.example", Headers: map[string]string{"Authorization": "Bearer t"},
				Metadata: map[string]any{"run": json.Number("12345678901234567890"), "tag": "a"},
				Events:   []string{"page", "completed"}, urlField: "webhook.url"}},
		{name: "object with nulls", raw: `{"url":"http://hooks.example","headers":null,"metadata":null,"events":null}`,
			want: &Spec{URL: "http://hooks.example", urlField: "webhook.url"}},
		{name: "string not a URL", raw: `"hooks.example/x"`, problems: []string{"webhook must be an absolute http or https URL"}},
		{name: "string with another scheme", raw: `"ftp://hooks.example"`, problems: []string{"webhook must be an absolute http or https URL"}},
		{name: "number", raw: `42`, problems: []string{"webhook must be a URL string or an object"}},
		{name: "array", raw: `["http://hooks.example"]`, problems: []string{"webhook must be a URL string or an object"}},
		{name: "no url", raw: `{"events":["page"]}`, problems: []string{"webhook.url is required"}},
		{name: "url not a string", raw: `{"url":7}`, problems: []string{"webhook.url must be an absolute http or https URL"}},
		{name: "url without host", raw: `{"url":"http:///x"}`, problems: []string{"webhook.url must be an absolute http or https URL"}},
		{name: "headers not an object", raw: `{"url":"http://h.example","headers":["a"]}`,
			problems: []string{"webhook.headers must be an object of header names to strings"}},
		{name: "header value not a string", raw: `{"url":"http://h.example","headers":{"X-N":1}}`,
			problems: []string{"webhook.headers.X-N must be a string"}},
		{name: "header name invalid", raw: `{"url":"http://h.example","headers":{"X N":"1"}}`,
			problems: []string{`webhook.headers key "X N" is not a valid HTTP header name`}},
		{name: "header value with a newline", raw: `{"url":"http://h.example","headers":{"X-A":"1\r\nX-B: 2"}}`,
			problems: []string{"webhook.headers.X-A is not a valid HTTP header value"}},
		{name: "metadata not an object", raw: `{"url":"http://h.example","metadata":"x"}`,
			problems: []string{"webhook.metadata must be an object"}},
		{name: "events not an array", raw: `{"url":"http://h.example","events":"page"}`,
			problems: []string{"webhook.events must be an array of event names"}},
		{name: "unknown event", raw: `{"url":"http://h.example","events":["page","cancelled",3]}`,
			problems: []string{"webhook.events[1] must be one of started, page, completed, failed",
				"webhook.events[2] must be one of started, page, completed, failed"}},
		{name: "unknown keys, all faults at once", raw: `{"colour":"red","URL":"http://h.example","metadata":[]}`,
			problems: []string{"webhook.url is required", "webhook.metadata must be an object",
				"webhook.URL is not a known field", "webhook.colour is not a known field"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, problems := Decode(json.RawMessage(tc.raw), "webhook")
			require.Equal(t, tc.problems, problems, "problems")
			require.Equal(t, tc.want, got, "spec")
		})
	}
}

func TestDecodeNamesTheFieldGiven(t *testing.T) {
	t.Parallel()
	_, problems := Decode(json.RawMessage(`{"url":"x"}`), "scrapeOptions.webhook")
	require.Equal(t, []string{"scrapeOptions.webhook.url must be an absolute http or https URL"}, problems, "problems")
}

func TestWants(t *testing.T) {
	t.Parallel()
	all := []string{"started", "page", "completed", "failed", "cancelled"}
	for _, tc := range []struct {
		name   string
		spec   *Spec
		wanted []string
	}{
		{"no webhook", nil, nil},
		{"no events: all", &Spec{URL: "http://h.example"}, all},
		{"pages only", &Spec{Events: []string{"page"}}, []string{"page"}},
		{"completion gets the cancel", &Spec{Events: []string{"started", "completed"}}, []string{"started", "completed", "cancelled"}},
		{"failure gets the cancel", &Spec{Events: []string{"failed"}}, []string{"failed", "cancelled"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, ev := range all {
				assert.Equal(t, slices.Contains(tc.wanted, ev), tc.spec.Wants(ev), "Wants(%q)", ev)
			}
		})
	}
}

func TestPayload(t *testing.T) {
	t.Parallel()
	spec := &Spec{URL: "http://h.example", Metadata: map[string]any{"run": "nightly"}}
	doc := json.RawMessage(`{"markdown":"a <b> & c","metadata":{"sourceURL":"https://a.example","statusCode":200}}`)
	for _, tc := range []struct {
		name    string
		kind    string
		event   string
		spec    *Spec
		docs    []json.RawMessage
		errMsg  string
		success bool
		data    string
		meta    string
	}{
		{name: "crawl started", kind: "crawl", event: "started", spec: spec, success: true, data: `[]`, meta: `{"run":"nightly"}`},
		{name: "crawl page", kind: "crawl", event: "page", spec: spec, docs: []json.RawMessage{doc}, success: true,
			data: `[` + string(doc) + `]`, meta: `{"run":"nightly"}`},
		{name: "failed page", kind: "crawl", event: "page", spec: spec, errMsg: "timed out", data: `[]`, meta: `{"run":"nightly"}`},
		{name: "batch completed without metadata", kind: "batch_scrape", event: "completed", spec: &Spec{URL: "http://h.example"},
			success: true, data: `[]`, meta: `{}`},
		{name: "crawl failed", kind: "crawl", event: "failed", spec: spec, errMsg: "robots.txt forbids it", data: `[]`, meta: `{"run":"nightly"}`},
		{name: "crawl cancelled", kind: "crawl", event: "cancelled", spec: nil, success: true, data: `[]`, meta: `{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			raw := Payload(tc.kind, tc.event, "job-1", tc.spec, tc.docs, tc.errMsg)
			var got map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(raw, &got), "%s", raw)
			var b body
			json.Unmarshal(raw, &b)
			if b.Success != tc.success || b.Type != tc.kind+"."+tc.event || b.ID != "job-1" || b.Error != tc.errMsg {
				t.Errorf("payload %s", raw)
			}
			_, err := uuid.Parse(b.WebhookID)
			assert.NoError(t, err, "webhookId %q", b.WebhookID)
			assert.Equal(t, tc.data, string(got["data"]), "data")
			assert.Equal(t, tc.meta, string(got["metadata"]), "metadata")
			_, has := got["error"]
			assert.Equal(t, tc.errMsg != "", has, "error present in %s", raw)
			assert.Len(t, got, 6+boolInt(tc.errMsg != ""), "members of %s", raw)
		})
	}
	a, b := Payload("crawl", "started", "j", spec, nil, ""), Payload("crawl", "started", "j", spec, nil, "")
	assert.NotEqual(t, string(a), string(b), "two events share a webhookId")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
