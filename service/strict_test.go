package service_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// What docs/api.md promises about strictness, with the messages a user
// reads: each names the field (or header, or parameter) and the rule.
func TestStrictRequests(t *testing.T) {
	t.Parallel()
	ts := start(t, map[string]string{"TRAWLER_WARM_BROWSERS": "0"})
	post := func(path, contentType, body string) response {
		req, _ := http.NewRequest("POST", ts.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+keyAcme)
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		out := response{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
		jsonUnmarshal(raw, &out.Body)
		return out
	}
	for _, tc := range []struct {
		name, path, contentType, body string
		status                        int
		code, want                    string
	}{
		{"curl -d", "/v2/scrape", "application/x-www-form-urlencoded", `{"url": "https://example.org"}`, 415, "UNSUPPORTED_MEDIA_TYPE", `Content-Type must be application/json for a JSON body, got "application/x-www-form-urlencoded"`},
		{"no Content-Type", "/v2/map", "", `{"url": "https://example.org"}`, 415, "UNSUPPORTED_MEDIA_TYPE", "and the request has none"},
		{"repeated key", "/v2/scrape", "application/json", `{"url": "https://example.org", "url": "http://127.0.0.1/"}`, 400, "BAD_REQUEST", "url is given twice: a key may appear once in an object"},
		{"repeated nested key", "/v2/crawl", "application/json; charset=utf-8", `{"url": "https://example.org", "scrapeOptions": {"headers": {"X-A": "1", "X-A": "2"}}}`, 400, "BAD_REQUEST", "scrapeOptions.headers.X-A is given twice"},
		{"key in another case", "/v2/browser", "application/json", `{"TTL": 60}`, 400, "BAD_REQUEST", `unknown key "TTL" is not accepted here (keys are case-sensitive: did you mean "ttl"?)`},
		{"null body", "/v2/browser", "application/json", `null`, 400, "BAD_REQUEST", "request body must be a JSON object"},
		{"port", "/v2/scrape", "application/json", `{"url": "http://example.org:99999/"}`, 400, "BAD_REQUEST", "url has an invalid port: a port is a number from 1 to 65535"},
		{"map port", "/v2/map", "application/json", `{"url": "http://example.org:99999/"}`, 400, "BAD_REQUEST", "url has an invalid port"},
		{"batch port", "/v2/batch/scrape", "application/json", `{"urls": ["http://example.org:99999/"], "ignoreInvalidURLs": false}`, 400, "BAD_REQUEST", `urls[0] "http://example.org:99999/"`},
		{"webhook port", "/v2/crawl", "application/vnd.api+json", `{"url": "https://example.org", "webhook": {"url": "https://hooks.example.org:99999/"}}`, 400, "BAD_REQUEST", "webhook.url has an invalid port"},
		{"credentials", "/v2/scrape", "application/json", `{"url": "https://admin:s3cret@example.org/"}`, 400, "BAD_REQUEST", "url must not contain credentials"},
		{"webhook credentials", "/v2/crawl", "application/json", `{"url": "https://example.org", "webhook": "https://u:s3cret@hooks.example.org/"}`, 400, "BAD_REQUEST", "webhook must not contain credentials"},
		{"batch credentials", "/v2/batch/scrape", "application/json", `{"urls": ["https://u:s3cret@example.org/"], "ignoreInvalidURLs": false}`, 400, "BAD_REQUEST", `urls[0] "https://example.org/"`},
		{"header with CR LF", "/v2/scrape", "application/json", `{"url": "https://example.org", "headers": {"X-A": "1\r\nX-B: 2"}}`, 400, "BAD_REQUEST", "headers.X-A must not contain control characters such as CR, LF or NUL"},
		{"Host header", "/v2/scrape", "application/json", `{"url": "https://example.org", "headers": {"Host": "169.254.169.254"}}`, 400, "BAD_REQUEST", "headers must not set Host: the host comes from the URL"},
		{"octal loopback", "/v2/scrape", "application/json", `{"url": "http://0177.0.0.1/"}`, 403, "URL_BLOCKED", "127.0.0.1 is a loopback address"},
		{"short loopback", "/v2/map", "application/json", `{"url": "http://127.1:8080/"}`, 403, "URL_BLOCKED", "127.0.0.1 is a loopback address"},
		{"decimal loopback", "/v2/crawl", "application/json", `{"url": "http://2130706433/"}`, 403, "URL_BLOCKED", "127.0.0.1 is a loopback address"},
		{"hex metadata", "/v2/batch/scrape", "application/json", `{"urls": ["http://0xa9fea9fe/latest/meta-data/"]}`, 403, "URL_BLOCKED", "169.254.169.254 is a link-local or cloud metadata address"},
		{"unknown query", "/v2/scrape?verbose=1", "application/json", `{"url": "https://example.org"}`, 400, "BAD_REQUEST", `unknown query parameter "verbose": this endpoint takes no query parameters`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := post(tc.path, tc.contentType, tc.body)
			if r.Status != tc.status || r.str("code") != tc.code || !strings.Contains(r.str("error"), tc.want) || r.Body["success"] != false {
				t.Fatalf("got %d %s\nwant %d %s with %q", r.Status, r.Raw, tc.status, tc.code, tc.want)
			}
			require.NotContains(t, string(r.Raw), "s3cret", "the credentials are echoed")
		})
	}
	for _, tc := range []struct{ path, want string }{
		{"/v2/browser?status=active&verbose=1", `unknown query parameter "verbose": this endpoint takes only status`},
		{"/v2/team/activity?endpoint=scrape&page=2", `unknown query parameter "page": this endpoint takes only endpoint, limit, cursor`},
		{"/v2/crawl/00000000-0000-0000-0000-000000000000?limit=5&offset=5", `unknown query parameter "offset": this endpoint takes only skip, limit`},
		{"/v2/crawl/00000000-0000-0000-0000-000000000000?limit=5&limit=6", `query parameter "limit" is given more than once`},
		{"/v2/profiles?all", `unknown query parameter "all"`},
	} {
		if r := ts.do("GET", tc.path, keyAcme, nil); r.Status != 400 || !strings.Contains(r.str("error"), tc.want) {
			t.Errorf("GET %s: %d %s, want 400 with %q", tc.path, r.Status, r.Raw, tc.want)
		}
	}
	// A body-less POST needs no Content-Type, and the clients' origin
	// parameter is accepted.
	if r := post("/v2/crawl/params-preview?origin=js-sdk", "", ""); r.Status != 400 || !strings.Contains(r.str("error"), "url is required") {
		t.Errorf("a POST without a body: %d %s", r.Status, r.Raw)
	}

	// What net/http itself refuses comes out in the same shape.
	addr := strings.TrimPrefix(ts.URL, "http://")
	for _, tc := range []struct{ name, req, want string }{
		{"control character in x-idempotency-key", "POST /v2/crawl HTTP/1.1\r\nHost: x\r\nx-idempotency-key: a\x01b\r\nContent-Length: 2\r\n\r\n{}", "control characters such as CR, LF and NUL are not allowed in header values"},
		{"dot segments", "GET /v2/../v2/scrape HTTP/1.1\r\nHost: x\r\n\r\n", "a path must be canonical"},
		{"dot", "GET /v2/./scrape HTTP/1.1\r\nHost: x\r\n\r\n", "a path must be canonical"},
		{"empty segment", "GET //v2/scrape HTTP/1.1\r\nHost: x\r\n\r\n", "a path must be canonical"},
	} {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprint(conn, tc.req)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err, "%s", tc.name)
		raw, _ := io.ReadAll(resp.Body)
		conn.Close()
		if resp.StatusCode/100 != 4 || resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(raw), tc.want) {
			t.Errorf("%s: %d %s %s, want a 4xx in JSON with %q", tc.name, resp.StatusCode, resp.Header.Get("Content-Type"), raw, tc.want)
		}
	}
}

// A script's value that JSON cannot carry comes back as its description,
// the same way from a scrape's executeJavascript action and from a
// session's execute.
func TestScriptValuesJSONCannotCarry(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true"})
	cases := []struct {
		code string // an expression
		typ  string // typeof, as the action reports it
		want string // the value, printed
	}{
		{"window", "object", "Window"},
		{"(() => { const a = {name: 'loop'}; a.self = a; return a; })()", "object", "Object"},
		{"Symbol('x')", "symbol", "Symbol(x)"},
		{"0 / 0", "number", "NaN"},
		{"2n ** 70n", "bigint", "1180591620717411303424n"},
		{"({a: [1, 2], b: 'c'})", "object", "map[a:[1 2] b:c]"},
		{"null", "null", "<nil>"},
	}
	var actions []any
	for _, c := range cases {
		actions = append(actions, map[string]any{"type": "executeJavascript", "script": "return " + c.code})
	}
	r := ts.scrape(map[string]any{"url": web.URL + "/article", "actions": actions})
	require.Equal(t, 200, r.Status, "scrape: %s", r.Raw)
	js := data(r)["actions"].(map[string]any)["javascriptReturns"].([]any)
	for i, c := range cases {
		ret := js[i].(map[string]any)
		if ret["type"] != c.typ || fmt.Sprint(ret["value"]) != c.want {
			t.Errorf("action returning %s: %v, want type %s and value %s", c.code, ret, c.typ, c.want)
		}
	}

	id := ts.create(keyAcme, nil).str("id")
	for _, c := range cases {
		ex := ts.do("POST", "/v2/browser/"+id+"/execute", keyAcme, map[string]any{"code": c.code})
		if ex.Status != 200 || ex.Body["success"] != true || fmt.Sprint(ex.Body["value"]) != c.want {
			t.Errorf("execute %s: %d %s, want result %s", c.code, ex.Status, ex.Raw, c.want)
		}
	}
	// Awaited, too.
	ex := ts.do("POST", "/v2/browser/"+id+"/execute", keyAcme, map[string]any{"code": "await Promise.resolve(window)"})
	if ex.Body["success"] != true || ex.Body["result"] != "Window" {
		t.Errorf("execute of a promise of window: %s", ex.Raw)
	}
}
