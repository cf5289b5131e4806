package api

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Target URLs are read as a browser reads them, and what a browser would
// read differently from what was typed is refused or normalised before
// anything sees it.
func TestCheckURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string // want: the normalised URL, or a fragment of the problem
		ok       bool
	}{
		{"https://example.org/article", "https://example.org/article", true},
		{"example.org", "http://example.org/", true},
		{"localhost:3000/x", "http://localhost:3000/x", true},
		{"http:example.org", "http://example.org/", true},
		{"  https://Example.ORG:443/a/../b?q=1#f ", "https://example.org/b?q=1#f", true},
		{"http://bücher.de/", "http://xn--bcher-kva.de/", true},
		{"http://0177.0.0.1/", "http://127.0.0.1/", true},
		{"http://127.1", "http://127.0.0.1/", true},
		{"http://0x7f.0.0.1/x", "http://127.0.0.1/x", true},
		{"http://127.000.000.001/", "http://127.0.0.1/", true},
		{"http://2130706433/", "http://127.0.0.1/", true},
		{"http://%31%32%37.0.0.1/", "http://127.0.0.1/", true},
		{"http://\u2460\u2461\u2466.0.0.1/", "http://127.0.0.1/", true},
		{"http://127\u30020\u30020\u30021/", "http://127.0.0.1/", true},
		{"http://\uff11\uff12\uff17.0.0.1/", "http://127.0.0.1/", true},
		{"http://[::ffff:127.0.0.1]:8080/", "http://[::ffff:7f00:1]:8080/", true},
		{"http://example.com:8080/", "http://example.com:8080/", true},
		{"http://example.com\\@127.0.0.1/", "http://example.com/@127.0.0.1/", true},
		{"http://@example.com/", "http://example.com/", true},
		{"http://example.com:99999/", "url has an invalid port", false},
		{"http://example.com:0/", "url has an invalid port", false},
		{"http://example.com:80:80/", "url has an invalid port", false},
		{"http://example.com:-1/", "url has an invalid port", false},
		{"http://user:s3cret@example.com/", "url must not contain credentials", false},
		{"https://s3cret@example.com/", "url must not contain credentials", false},
		{"http://:s3cret@example.com/", "url must not contain credentials", false},
		{"", "url is required", false},
		{"   ", "url is required", false},
		{"ftp://example.com/", "absolute http or https URL", false},
		{"javascript:alert(1)", "absolute http or https URL", false},
		{"mailto:a@example.org", "absolute http or https URL", false},
		{"data:text/html,hi", "absolute http or https URL", false},
		{"nope", "absolute http or https URL", false},
		{"http://exa mple.com/", "absolute http or https URL", false},
		{"http://1.2.3.256/", "absolute http or https URL", false},
		{"http://foo.0x7f/", "absolute http or https URL", false},
		{"http://a.b/%zz", "absolute http or https URL", false},
		{"http://ex\x00ample.com/", "absolute http or https URL", false},
		{"http://[::1/", "absolute http or https URL", false},
		{"http://" + strings.Repeat("a", 9000) + ".com/", "at most 8192 characters", false},
	} {
		got, p := checkURL("url", tc.in)
		switch {
		case tc.ok && p != nil:
			t.Errorf("checkURL(%q): %s, want %s", tc.in, p.Message, tc.want)
		case tc.ok && got != tc.want:
			t.Errorf("checkURL(%q) = %q, want %q", tc.in, got, tc.want)
		case !tc.ok && p == nil:
			t.Errorf("checkURL(%q) = %q, want a problem with %q", tc.in, got, tc.want)
		case !tc.ok && !strings.Contains(p.Message, tc.want):
			t.Errorf("checkURL(%q): %q, want %q", tc.in, p.Message, tc.want)
		case !tc.ok && strings.Contains(p.Message, "s3cret"):
			t.Errorf("checkURL(%q) echoes the credentials: %q", tc.in, p.Message)
		}
	}
}

func TestDecodeJSONStrictKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		want       string // a fragment of the message; "" for no error
	}{
		{"plain", `{"url":"https://example.org","formats":["markdown"]}`, ""},
		{"duplicate at the top", `{"url":"https://a.example","url":"http://127.0.0.1"}`, "url is given twice"},
		{"duplicate escaped", `{"url":"https://a.example","\u0075rl":"http://127.0.0.1"}`, "url is given twice"},
		{"duplicate in a struct", `{"location":{"country":"US","country":"DE"}}`, "location.country is given twice"},
		{"duplicate in a map", `{"headers":{"X-A":"1","X-A":"2"}}`, "headers.X-A is given twice"},
		{"duplicate in raw JSON", `{"actions":[{"type":"wait","type":"click"}]}`, "actions[0].type is given twice"},
		{"duplicate deep in raw JSON", `{"formats":[[[{"a":{"b":1,"b":2}}]]]}`, "formats[0][0][0].a.b is given twice"},
		{"same key in sibling objects", `{"actions":[{"type":"wait","milliseconds":1},{"type":"wait","milliseconds":2}]}`, ""},
		{"wrong case", `{"URL":"https://example.org"}`, `unknown key "URL" is not accepted here (keys are case-sensitive: did you mean "url"?)`},
		{"wrong case nested", `{"profile":{"Name":"x"}}`, `did you mean "name"?`},
		{"map keys keep their case", `{"headers":{"x-a":"1","X-A":"2"}}`, ""},
		{"unknown", `{"colour":1}`, `unknown key "colour"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var req scrapeRequest
			err := decodeJSON([]byte(tc.body), &req, "")
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
	// Nested objects are named by their prefix (the options of a parse).
	var pr parseRequest
	assert.ErrorContains(t, decodeJSON([]byte(`{"timeout":1000,"timeout":2000}`), &pr, "options."), "options.timeout is given twice", "parse options")
	// The deepest nesting encoding/json takes is walked without trouble.
	deep := `{"formats":[` + strings.Repeat("[", 9990) + strings.Repeat("]", 9990) + `]}`
	var req scrapeRequest
	assert.NoError(t, decodeJSON([]byte(deep), &req, ""), "deep nesting")
	var e *Error
	if assert.ErrorAs(t, decodeJSON([]byte(`{"formats":`+strings.Repeat("[", 10001)+`}`), &req, ""), &e, "too deep") {
		assert.Equal(t, "BAD_REQUEST_INVALID_JSON", e.Code, "too deep")
	}
}

func TestJSONMediaType(t *testing.T) {
	t.Parallel()
	for _, ct := range []string{
		"application/json",
		"Application/JSON; charset=utf-8",
		"application/json;charset=latin1",
		"application/merge-patch+json",
		"application/vnd.api+json ; q=1",
	} {
		assert.True(t, isJSONMediaType(ct), "isJSONMediaType(%q)", ct)
	}
	for _, ct := range []string{
		"",
		"text/plain",
		"application/x-www-form-urlencoded",
		"multipart/form-data; boundary=x",
		"application/+json",
		"application/jsonx",
		"text/json",
		"application/json/x",
	} {
		assert.False(t, isJSONMediaType(ct), "isJSONMediaType(%q)", ct)
	}
}

func TestQueryProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw   string
		names []string
		want  []string // the messages
	}{
		{"", nil, nil},
		{"status=active", []string{"status"}, nil},
		{"origin=js-sdk&integration=n8n", nil, nil},
		{"&&", nil, nil},
		{"statuz=active", []string{"status"}, []string{`unknown query parameter "statuz": this endpoint takes only status`}},
		{"x=1", nil, []string{`unknown query parameter "x": this endpoint takes no query parameters`}},
		{"limit=1&limit=2&limit=3", []string{"skip", "limit"}, []string{`query parameter "limit" is given more than once`}},
		{"a%20b=1&a+b=2", nil, []string{`unknown query parameter "a b": this endpoint takes no query parameters`}},
		{"%zz=1", nil, []string{`unknown query parameter "%zz": this endpoint takes no query parameters`}},
	} {
		var got []string
		for _, p := range queryProblems(tc.raw, tc.names...) {
			got = append(got, p.Message)
		}
		assert.Equal(t, tc.want, got, "queryProblems(%q)", tc.raw)
	}
}

func TestCheckHeaders(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		headers map[string]string
		want    string
	}{
		{map[string]string{"Accept-Language": "de", "Cookie": "a=b", "User-Agent": "x/1.0"}, ""},
		{map[string]string{"X-A": "1\r\nX-Injected: 2"}, "headers.X-A must not contain control characters"},
		{map[string]string{"X-A": "a\nb"}, "headers.X-A must not contain control characters"},
		{map[string]string{"X-A": "a\x00b"}, "headers.X-A must not contain control characters"},
		{map[string]string{"Host": "internal.example"}, "headers must not set Host: the host comes from the URL"},
		{map[string]string{"host": "internal.example"}, "headers must not set host"},
		{map[string]string{"Content-Length": "5"}, "headers must not set Content-Length"},
		{map[string]string{"Transfer-Encoding": "chunked"}, "headers must not set Transfer-Encoding"},
		{map[string]string{"X A": "1"}, `"X A" is not a header name`},
		{map[string]string{"": "1"}, `"" is not a header name`},
		{map[string]string{"X-A": strings.Repeat("a", 9000)}, "headers.X-A must be at most 8192 bytes"},
	} {
		var got []string
		checkHeaders(tc.headers, func(format string, args ...any) {
			got = append(got, fieldError("headers", format, args...).Message)
		})
		msg := strings.Join(got, "; ")
		if tc.want == "" {
			assert.Empty(t, msg, "checkHeaders(%q)", tc.headers)
		} else {
			assert.Contains(t, msg, tc.want, "checkHeaders(%q)", tc.headers)
		}
	}
	many := map[string]string{}
	for i := range 101 {
		many["X-"+strings.Repeat("a", i+1)] = "1"
	}
	var got []string
	checkHeaders(many, func(format string, args ...any) { got = append(got, format) })
	if assert.Len(t, got, 1, "101 headers") {
		assert.Contains(t, got[0], "at most", "101 headers")
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://u:s3cret@example.org/a":     "http://example.org/a",
		"http://u:s3cret@example.org:99999": "http://example.org:99999",
		"http://u:s3cret@exa mple.org/x":    "http://exa mple.org/x",
		"http://example.org/@x":             "http://example.org/@x",
		"nope":                              "nope",
	} {
		assert.Equal(t, want, redactURL(in), "redactURL(%q)", in)
	}
}

// TestWrongTypeNamesTheKey: a value of the wrong type in options that a
// request shares with others (scrape options in a scrape, a batch, a
// parse) is named by its key alone, not by the Go struct holding it.
func TestWrongTypeNamesTheKey(t *testing.T) {
	t.Parallel()
	var s scrapeRequest
	assert.EqualError(t, decodeJSON([]byte(`{"url":"https://example.org/","timeout":"x"}`), &s, ""), "timeout must be an integer")
	var b batchRequest
	assert.EqualError(t, decodeJSON([]byte(`{"urls":["https://example.org/"],"onlyMainContent":1}`), &b, ""), "onlyMainContent must be a boolean")
}
