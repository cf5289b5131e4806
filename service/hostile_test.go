package service_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/test/polltest"
)

// hostile is one malformed or hostile request and what it must get.
type hostile struct {
	name   string
	method string
	path   string
	header map[string]string
	body   []byte
	// raw, when set, is the whole request as sent over the connection
	// (what Go's client refuses to send: bad header values, bad framing).
	raw string
	// status and code, when set, are what the answer must be; any 4xx
	// with a code otherwise.
	status int
	code   string
}

// Every malformed or hostile request gets a 4xx in the API's error shape,
// never a 5xx, a redirect or plain text; the service stays healthy through
// them all and leaves no browser and no file behind.
func TestHostileRequests(t *testing.T) {
	t.Parallel()
	began := time.Now()
	ts := start(t, map[string]string{"TRAWLER_WARM_BROWSERS": "1", "TRAWLER_POOL_SIZE": "3"})
	session := ts.create(keyAcme, nil).str("id")
	polltest.Until(t, 30*time.Second, "the pool to refill", func() bool { return ts.Pool.Stats().Idle == 1 })
	dataBefore := dataDirEntries(t, ts.Config.DataDir)

	batches := []struct {
		name string
		reqs []hostile
	}{
		{"JSON bodies", hostileBodies(session)},
		{"target URLs", hostileURLs()},
		{"query parameters and ids", hostileQueries(session)},
		{"paths and methods", hostilePaths(session)},
		{"headers and framing", hostileFraming()},
		{"parse uploads", hostileUploads()},
		{"crawl watcher", hostileWatch()},
	}
	// No hostile request gets as far as a browser: the session's is the
	// only one leased throughout.
	leased, stopWatching := make(chan int, 1), make(chan struct{})
	go func() {
		most := 0
		for {
			most = max(most, ts.Pool.Stats().Leased)
			select {
			case <-stopWatching:
				leased <- most
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	addr := strings.TrimPrefix(ts.URL, "http://")
	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 8},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	total := 0
	for _, b := range batches {
		start := time.Now()
		var wg sync.WaitGroup
		work := make(chan hostile)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for h := range work {
					assert.NoError(t, sendHostile(client, ts.URL, addr, h), "%s: %s %s", b.name, h.name, h.method+" "+truncated(h.path, 80))
				}
			}()
		}
		for _, h := range b.reqs {
			work <- h
		}
		close(work)
		wg.Wait()
		total += len(b.reqs)
		t.Logf("%s: %d requests in %s", b.name, len(b.reqs), time.Since(start).Round(time.Millisecond))
		healthy(t, ts, client)
	}
	watchUnknownJob(t, ts)
	total++
	close(stopWatching)
	assert.Equal(t, 1, <-leased, "browsers leased at once during the hostile requests; only the session's should be")
	assert.GreaterOrEqual(t, total, 500, "hostile requests")

	// Nothing is left behind: the session ends, the pool settles back to
	// its one warm browser, and the data directory holds what it held.
	r := ts.do("DELETE", "/v2/browser/"+session, keyAcme, nil)
	require.Equal(t, 200, r.Status, "deleting the session: %s", r.Raw)
	polltest.Until(t, 30*time.Second, "the pool to settle to its warm browser", func() bool {
		st := ts.Pool.Stats()
		return st.Leased == 0 && st.Starting == 0 && st.Waiters == 0 && st.Idle == 1 && st.Total == 1
	})
	assert.Zero(t, ts.Sessions.Stats(), "sessions still active")
	// Before, the data directory held the database, the profile store and
	// two browsers' directories (the session's and the warm one); after, the
	// same but for the session's browser.
	var stray, browsers []string
	polltest.UntilState(t, 20*time.Second, "the data directory to hold what it held and one warm browser", func() bool {
		stray, browsers = nil, nil
		for _, e := range dataDirEntries(t, ts.Config.DataDir) {
			switch {
			case strings.HasPrefix(e, "browsers/"):
				browsers = append(browsers, e)
			case !slices.Contains(dataBefore, e):
				stray = append(stray, e)
			}
		}
		return len(stray) == 0 && len(browsers) == 1
	}, func() string {
		return fmt.Sprintf("it holds %q beyond what it held and %q for browsers (before: %q)", stray, browsers, dataBefore)
	})
	t.Logf("%d hostile requests in %s; the data directory held %q", total, time.Since(began).Round(time.Millisecond), dataBefore)
}

// sendHostile sends one request and checks its answer.
func sendHostile(client *http.Client, base, addr string, h hostile) error {
	var status int
	var header http.Header
	var body []byte
	if h.raw != "" {
		resp, b, err := rawRequest(addr, h.raw)
		if err != nil {
			return err
		}
		status, header, body = resp.StatusCode, resp.Header, b
	} else {
		req, err := http.NewRequest(h.method, base+h.path, bytes.NewReader(h.body))
		if err != nil {
			return err
		}
		if h.body == nil {
			req.Body, req.ContentLength = http.NoBody, 0
		}
		req.Header.Set("Authorization", "Bearer "+keyAcme)
		for k, v := range h.header {
			if v == "" {
				delete(req.Header, k)
				continue
			}
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if body, err = io.ReadAll(resp.Body); err != nil {
			return err
		}
		status, header = resp.StatusCode, resp.Header
	}
	return checkErrorAnswer(status, header, body, h.status, h.code)
}

// checkErrorAnswer checks that an answer is a client error in the API's
// error shape (and the status and code asked for, when given).
func checkErrorAnswer(status int, header http.Header, body []byte, wantStatus int, wantCode string) error {
	var e struct {
		Success *bool  `json:"success"`
		Error   string `json:"error"`
		Code    string `json:"code"`
	}
	switch {
	case status < 400 || status >= 500:
		return fmt.Errorf("status %d, want a 4xx: %.300s", status, body)
	case wantStatus != 0 && status != wantStatus:
		return fmt.Errorf("status %d, want %d: %.300s", status, wantStatus, body)
	case !strings.HasPrefix(header.Get("Content-Type"), "application/json"):
		return fmt.Errorf("status %d with Content-Type %q: %.300s", status, header.Get("Content-Type"), body)
	case json.Unmarshal(body, &e) != nil:
		return fmt.Errorf("status %d with a body that is not JSON: %.300s", status, body)
	case e.Success == nil || *e.Success || e.Error == "" || e.Code == "":
		return fmt.Errorf("status %d without the error shape: %.300s", status, body)
	case wantCode != "" && e.Code != wantCode:
		return fmt.Errorf("code %s, want %s: %.300s", e.Code, wantCode, body)
	}
	return nil
}

// rawRequest sends req as is on a new connection and reads one answer.
// Writing goes on while the answer is read: the server may answer (and
// close) before it has read a request it refuses.
func rawRequest(addr, req string) (*http.Response, []byte, error) {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	go func() {
		io.WriteString(conn, req)
		conn.(*net.TCPConn).CloseWrite()
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the answer: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// healthy checks that the service still serves: its health, a listing and
// a parse (a real pipeline that needs no browser).
func healthy(t *testing.T, ts *testService, client *http.Client) {
	t.Helper()
	r := ts.do("GET", "/healthz", "", nil)
	require.Equal(t, 200, r.Status, "/healthz: %s", r.Raw)
	if r := ts.do("GET", "/v2/browser?status=active", keyAcme, nil); r.Status != 200 || r.Body["success"] != true {
		t.Fatalf("GET /v2/browser: %d %s", r.Status, r.Raw)
	}
	ct, body := multipartBody(func(mw *multipart.Writer) {
		w, _ := mw.CreateFormFile("file", "ok.html")
		io.WriteString(w, "<html><body><h1>Still here</h1><p>Parsed.</p></body></html>")
	})
	req, _ := http.NewRequest("POST", ts.URL+"/v2/parse", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+keyAcme)
	req.Header.Set("Content-Type", ct)
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !bytes.Contains(raw, []byte("# Still here")) {
		t.Fatalf("a valid parse: %d %s", resp.StatusCode, raw)
	}
}

// dataDirEntries lists the data directory two levels deep (the database
// and its journal files, browsers/<id>, profiles/<team>).
func dataDirEntries(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	top, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range top {
		out = append(out, e.Name())
		if !e.IsDir() {
			continue
		}
		sub, _ := os.ReadDir(filepath.Join(dir, e.Name()))
		for _, s := range sub {
			out = append(out, e.Name()+"/"+s.Name())
		}
	}
	return out
}

func multipartBody(fill func(*multipart.Writer)) (string, []byte) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fill(mw)
	mw.Close()
	return mw.FormDataContentType(), buf.Bytes()
}

func truncated(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// The blocked target every request that must get past validation uses: a
// loopback address, refused by the guard without a browser or DNS.
const blockedTarget = "http://127.0.0.1:1/"

func jsonReq(name, method, path, body string, status int, code string) hostile {
	return hostile{name: name, method: method, path: path, body: []byte(body),
		header: map[string]string{"Content-Type": "application/json"}, status: status, code: code}
}

// hostileBodies are malformed JSON bodies for every endpoint that takes one.
func hostileBodies(session string) []hostile {
	mb := strings.Repeat("a", 1<<20)
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	deepObj := strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001)
	endpoints := []struct {
		path string
		base string // a valid member, so that the body fails for its own fault
	}{
		{"/v2/browser", `"ttl": 60`},
		{"/v2/browser/" + session + "/execute", `"code": "1"`},
		{"/v2/scrape", `"url": "` + blockedTarget + `"`},
		{"/v2/crawl", `"url": "` + blockedTarget + `"`},
		{"/v2/crawl/params-preview", `"url": "` + blockedTarget + `", "prompt": "docs"`},
		{"/v2/batch/scrape", `"urls": ["` + blockedTarget + `"]`},
		{"/v2/map", `"url": "` + blockedTarget + `"`},
		{"/v2/search", `"query": "x"`},
		{"/v2/extract", `"urls": ["` + blockedTarget + `"], "prompt": "x"`},
		{"/v2/support/docs-search", `"question": "what is a profile"`},
	}
	var out []hostile
	for _, e := range endpoints {
		add := func(name, body string, status int, code string) {
			out = append(out, jsonReq(name, "POST", e.path, body, status, code))
		}
		// Not an object, not JSON, cut short.
		for _, body := range []string{`[]`, `"text"`, `1`, `true`, `null`, `[{` + e.base + `}]`} {
			add("not an object: "+body, body, 400, "")
		}
		for _, body := range []string{`{`, `{"a":`, `{` + e.base + `,`, `{"url": "http://exa`, `{` + e.base + `,}`,
			`{'url': 'x'}`, `{"ttl": NaN}`, `{"ttl": 0x10}`, "// c\n{}", "\xef\xbb\xbf{" + e.base + "}",
			`{` + e.base + `} {}`, `{` + e.base + `}]`, `{"a" 1}`, `{"ttl": 1e999}`, "{\"\x00\": 1}", "{\"a\": \"\x00\"}",
			`{"ttl": "` + "\xff\xfe" + `"}`, "\x00{}", `{"a": ` + deep + `}`, deepObj} {
			add("malformed: "+truncated(body, 40), body, 400, "")
		}
		// Wrong keys: unknown, repeated, in the wrong case, huge.
		add("unknown key", `{`+e.base+`, "bogus": 1}`, 400, "BAD_REQUEST")
		add("invalid UTF-8 key", "{"+e.base+", \"\xff\": 1}", 400, "BAD_REQUEST")
		add("NUL in a key", `{`+e.base+`, "a\u0000b": 1}`, 400, "BAD_REQUEST")
		add("repeated key", `{`+e.base+`, `+e.base+`}`, 400, "BAD_REQUEST")
		add("repeated escaped key", `{"url": "x", "\u0075rl": "y", "ttl": 1, "t\u0074l": 2, "code": "1", "c\u006fde": "2", "urls": [], "\u0075rls": []}`, 400, "BAD_REQUEST")
		add("key in the wrong case", `{`+strings.ToUpper(e.base[:3])+e.base[3:]+`}`, 400, "BAD_REQUEST")
		add("1 MB key", `{`+e.base+`, "`+mb+`": 1}`, 400, "BAD_REQUEST")
		add("1 MB unknown value", `{`+e.base+`, "bogus": "`+mb+`"}`, 400, "BAD_REQUEST")
		add("deep unknown value", `{`+e.base+`, "bogus": `+deep[1:len(deep)-1]+`}`, 400, "BAD_REQUEST")
		add("repeated key deep in an array", `{`+e.base+`, "bogus": [[{"a": 1, "a": 2}]]}`, 400, "BAD_REQUEST")
		// The body must be labelled JSON.
		for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
			"application/jsonx", "text/json", "application/json-patch", "application/+json", "*/*", "application/json\u00e9"} {
			h := jsonReq("Content-Type "+ct, "POST", e.path, `{`+e.base+`, "bogus": 1}`, 415, "UNSUPPORTED_MEDIA_TYPE")
			h.header["Content-Type"] = ct
			if ct == "" || ct == "application/json\u00e9" {
				h.header["Content-Type"] = "" // none at all; Go refuses non-ASCII values
			}
			out = append(out, h)
		}
		form := jsonReq("a form body", "POST", e.path, "url=http%3A%2F%2F127.0.0.1%2F&ttl=60&code=1", 415, "UNSUPPORTED_MEDIA_TYPE")
		form.header["Content-Type"] = "application/x-www-form-urlencoded"
		out = append(out, form)
	}

	// Wrong types and out-of-range values, endpoint by endpoint.
	for _, body := range []string{`{"ttl": "60"}`, `{"ttl": 60.5}`, `{"ttl": -1}`, `{"ttl": 1e10}`, `{"ttl": 9223372036854775808}`,
		`{"ttl": 29}`, `{"activityTtl": 3601}`, `{"streamWebView": "yes"}`, `{"streamWebView": 1}`, `{"profile": "x"}`,
		`{"profile": {}}`, `{"profile": {"name": "../../etc/passwd"}}`, `{"profile": {"name": "a\u0000b"}}`,
		`{"profile": {"name": "` + strings.Repeat("p", 200) + `"}}`, `{"profile": {"name": "x", "saveChanges": "no"}}`,
		`{"ttl": "` + mb + `"}`, `{"origin": 1}`, `{"integration": {}}`} {
		out = append(out, jsonReq("browser "+truncated(body, 40), "POST", "/v2/browser", body, 400, "BAD_REQUEST"))
	}
	exec := "/v2/browser/" + session + "/execute"
	for _, body := range []string{`{}`, `{"code": 1}`, `{"code": ""}`, `{"code": null}`, `{"code": ["1"]}`,
		`{"code": "1", "language": "python"}`, `{"code": "1", "language": 1}`, `{"code": "1", "timeout": 0}`,
		`{"code": "1", "timeout": 301}`, `{"code": "1", "timeout": "5"}`, `{"code": "` + mb + `a"}`, `{"code": "1", "args": []}`} {
		out = append(out, jsonReq("execute "+truncated(body, 40), "POST", exec, body, 400, "BAD_REQUEST"))
	}
	url := `"url": "` + blockedTarget + `"`
	for _, member := range []string{`"url": 1`, `"url": null`, `"url": ["x"]`, `"url": {}`, `"formats": "markdown"`,
		`"formats": ["bogus"]`, `"formats": ["summary"]`, `"formats": [{"type": "screenshot", "quality": 101}]`,
		`"formats": [{"type": 1}]`, `"formats": ["markdown", "markdown"]`, `"timeout": 1`, `"timeout": "60000"`,
		`"waitFor": -1`, `"waitFor": 40000`, `"maxAge": -1`, `"minAge": "1"`, `"headers": []`, `"headers": {"X-A": 1}`,
		`"headers": {"X-A": "a\r\nX-B: b"}`, `"headers": {"X-A": "a\nb"}`, `"headers": {"X-A": "a\u0000b"}`,
		`"headers": {"Host": "169.254.169.254"}`, `"headers": {"host": "x"}`, `"headers": {"Content-Length": "1"}`,
		`"headers": {"Transfer-Encoding": "chunked"}`, `"headers": {"X A": "1"}`, `"headers": {"": "1"}`,
		`"headers": {"X-A": "` + mb + `"}`, `"actions": {}`, `"actions": [1]`, `"actions": [{"type": "hack"}]`,
		`"actions": [{"type": "wait"}]`, `"actions": [{"type": "click", "selector": "!!!"}]`,
		`"actions": [{"type": "executeJavascript"}]`, `"actions": [{"type": "wait", "milliseconds": 1, "x": 1}]`,
		`"actions": [` + strings.Repeat(`{"type": "scrape"},`, 50) + `{"type": "scrape"}]`, `"location": {"country": "XYZ"}`,
		`"location": {"languages": ["a b"]}`, `"location": "US"`, `"proxy": "stealthy"`, `"zeroDataRetention": "yes"`,
		`"lockdown": 1`, `"parsers": ["docx"]`, `"includeTags": ["<<"]`, `"profile": {"name": ""}`, `"onlyCleanContent": true`,
		`"useMock": "x"`, `"formats": ` + deep} {
		body := `{` + url + `, ` + member + `}`
		if strings.HasPrefix(member, `"url"`) {
			body = `{` + member + `}`
		}
		code := "BAD_REQUEST"
		switch {
		case strings.HasSuffix(member, deep):
			code = "BAD_REQUEST_INVALID_JSON" // past encoding/json's depth
		case member == `"formats": ["summary"]` || member == `"onlyCleanContent": true`:
			code = "MODEL_NOT_CONFIGURED" // this service has no language model
		}
		out = append(out, jsonReq("scrape "+truncated(member, 40), "POST", "/v2/scrape", body, 400, code))
	}
	for _, member := range []string{`"limit": 0`, `"limit": 100001`, `"includePaths": ["("]`, `"excludePaths": [1]`,
		`"sitemap": "sometimes"`, `"delay": -1`, `"maxConcurrency": 0`, `"maxDiscoveryDepth": -1`, `"prompt": "all docs"`,
		`"scrapeOptions": "x"`, `"scrapeOptions": {"url": "x"}`, `"scrapeOptions": {"formats": ["x"]}`,
		`"scrapeOptions": {"timeout": 1, "timeout": 2}`, `"scrapeOptions": {"Timeout": 1000}`,
		`"scrapeOptions": {"profile": {"name": "p", "saveChanges": true}}`, `"robotsUserAgent": ""`,
		`"webhook": 5`, `"webhook": "nope"`, `"webhook": {"url": "` + blockedTarget + `", "events": ["exploded"]}`,
		`"webhook": {"url": "` + blockedTarget + `", "headers": {"X-A": "a\r\nb"}}`, `"webhook": {"url": "` + blockedTarget + `", "x": 1}`,
		// Budgets: too many patterns, one too long, and few that compile
		// too large together (issue 36).
		`"includePaths": [` + strings.Repeat(`"^/a",`, 3000) + `"^/b"]`,
		`"excludePaths": ["` + strings.Repeat("a", 2049) + `"]`,
		`"includePaths": [` + strings.Repeat(`"(?i)(abc|def){999}",`, 20) + `"x"]`} {
		code := "BAD_REQUEST"
		if member == `"prompt": "all docs"` {
			code = "MODEL_NOT_CONFIGURED"
		}
		out = append(out, jsonReq("crawl "+truncated(member, 40), "POST", "/v2/crawl", `{`+url+`, `+member+`}`, 400, code))
	}
	for _, body := range []string{`{"urls": []}`, `{"urls": "x"}`, `{"urls": [1]}`, `{"urls": [null]}`, `{"urls": ["nope"]}`,
		`{"urls": ["` + mb + `"]}`, `{"urls": ["nope"], "ignoreInvalidURLs": false}`, `{"urls": ["` + blockedTarget + `"], "appendToId": "x"}`,
		`{"urls": ["` + blockedTarget + `"], "ignoreInvalidURLs": "no"}`, `{"urls": ["` + blockedTarget + `"], "maxConcurrency": -1}`,
		`{"urls": ["` + blockedTarget + `"], "profile": {"name": "p", "saveChanges": true}}`,
		`{"urls": [` + strings.Repeat(`"nope",`, 100000) + `"nope"]}`, `{"urls": [` + strings.Repeat(`"nope",`, 60000) + `"nope"], "ignoreInvalidURLs": false}`,
		`{"urls": [` + strings.Repeat(`1,`, 5000) + `1]}`} {
		out = append(out, jsonReq("batch "+truncated(body, 40), "POST", "/v2/batch/scrape", body, 400, "BAD_REQUEST"))
	}
	for _, member := range []string{`"limit": 0`, `"limit": 100001`, `"search": "` + strings.Repeat("s", 501) + `"`,
		`"sitemap": "x"`, `"timeout": 5`, `"location": {"country": "1"}`, `"includeSubdomains": "yes"`} {
		out = append(out, jsonReq("map "+truncated(member, 40), "POST", "/v2/map", `{`+url+`, `+member+`}`, 400, "BAD_REQUEST"))
	}
	for _, body := range []string{`{}`, `{"query": null}`, `{"query": 1}`, `{"query": ["x"]}`, `{"query": ""}`, `{"query": "  "}`,
		`{"query": "` + strings.Repeat("q", 501) + `"}`, `{"query": "` + mb + `"}`, `{"query": "imagesize:big"}`,
		`{"query": "larger:0x"}`, `{"query": "x", "limit": 0}`, `{"query": "x", "limit": 101}`, `{"query": "x", "limit": "5"}`,
		`{"query": "x", "limit": 1.5}`, `{"query": "x", "sources": "web"}`, `{"query": "x", "sources": ["maps"]}`,
		`{"query": "x", "sources": [{"type": "web", "x": 1}]}`, `{"query": "x", "sources": [{"type": 1}]}`,
		`{"query": "x", "categories": ["videos"]}`, `{"query": "x", "categories": [null]}`,
		`{"query": "x", "includeDomains": ["a.com"], "excludeDomains": ["b.com"]}`, `{"query": "x", "includeDomains": ["http://a.com/"]}`,
		`{"query": "x", "excludeDomains": ["a.com/path"]}`, `{"query": "x", "includeDomains": [1]}`, `{"query": "x", "tbs": "qdr:x"}`,
		`{"query": "x", "tbs": "cdr:1,cd_min:13/45/2020"}`, `{"query": "x", "tbs": 1}`, `{"query": "x", "country": "USA"}`,
		`{"query": "x", "location": "` + strings.Repeat("l", 201) + `"}`, `{"query": "x", "timeout": 10}`,
		`{"query": "x", "timeout": "60000"}`, `{"query": "x", "ignoreInvalidURLs": "yes"}`, `{"query": "x", "enterprise": ["vip"]}`,
		`{"query": "x", "enterprise": "zdr"}`, `{"query": "x", "scrapeOptions": "x"}`, `{"query": "x", "scrapeOptions": {"formats": ["x"]}}`,
		`{"query": "x", "scrapeOptions": {"formats": ["markdown"], "waitFor": -1}}`, `{"query": "x", "scrapeOptions": {"formats": ["markdown"], "url": "x"}}`} {
		out = append(out, jsonReq("search "+truncated(body, 40), "POST", "/v2/search", body, 400, "BAD_REQUEST"))
	}
	for _, body := range []string{`{}`, `{"url": "` + blockedTarget + `"}`, `{"prompt": "x"}`, `{"url": "nope", "prompt": "x"}`} {
		out = append(out, jsonReq("params-preview "+body, "POST", "/v2/crawl/params-preview", body, 400, "BAD_REQUEST"))
	}
	// A compressed body is refused, not inflated: this one is 100 MB.
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zw.Write(make([]byte, 100<<20))
	zw.Close()
	for _, ce := range []string{"gzip", "deflate", "br", "gzip, gzip"} {
		h := jsonReq("Content-Encoding "+ce, "POST", "/v2/scrape", bomb.String(), 415, "UNSUPPORTED_MEDIA_TYPE")
		h.header["Content-Encoding"] = ce
		out = append(out, h)
	}
	// An 11 MB body is refused before it is read whole.
	out = append(out, jsonReq("11 MB body", "POST", "/v2/scrape", `{"url": "`+strings.Repeat("a", 11<<20)+`"}`, 413, "PAYLOAD_TOO_LARGE"))
	return out
}

// hostileURLs are target URLs in every notation that could slip past the
// guard, and malformed ones, for every field that takes a target URL.
func hostileURLs() []hostile {
	// Loopback, private and metadata addresses in other notations: each is
	// the address it is, blocked.
	blocked := []string{"http://0177.0.0.1/", "http://127.1/", "http://0x7f.0.0.1/", "http://127.000.000.001/",
		"http://2130706433/", "http://017700000001/", "http://0x7f000001/", "http://0x7F.1/", "http://127.0.0.1./",
		"http://%31%32%37.0.0.1/", "http://127\u3002" + "0\u30020\u30021/", "http://\u2460\u2461\u2466.0.0.1/",
		"http://[::1]/", "http://[0:0:0:0:0:0:0:1]/", "http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/",
		"http://[::127.0.0.1]/", "http://localhost/", "http://LOCALHOST./", "http://a.localhost/",
		"http://169.254.169.254/latest/meta-data/", "http://169.254.43518/", "http://0xa9fea9fe/", "http://metadata.google.internal/",
		"http://0.0.0.0/", "http://0/", "http://10.0.0.1/", "http://0xa.1/", "http://192.168.1.1:8080/",
		"http://172.16.0.1/", "http://100.64.0.1/", "http://[fe80::1]/", "http://[fd00::1]/", "http://127.0.0.1\\@example.com/",
		"http://127.0.0.1#@example.com/", "http://127.0.0\t.1/", "HTTP://127.0.0.1:80/", "127.1", "localhost:3002/v2/browser"}
	// Malformed, or carrying credentials: refused as the field's mistake.
	invalid := []string{"http://example.com:99999/", "http://127.0.0.1:65536/", "http://example.com:0/",
		"http://example.com:80:80/", "http://example.com:-1/", "http://user:pass@example.com/",
		"https://token@127.0.0.1/", "http://example.com@127.0.0.1/", "http://:pass@example.com/", "javascript:alert(1)",
		"file:///etc/passwd", "ftp://127.0.0.1/", "data:text/html,hi", "gopher://127.0.0.1:25/", "ws://127.0.0.1/", "http://",
		"http:///x", "", " ", "http://[::1/", "http://1.2.3.256/", "http://256.256.256.256/", "http://0x100000000/",
		"http://1.2.3.4.5/", "http://foo.0x7f/", "http://exa mple.com/", "http://ex\u0000ample.com/", "http://a.b/%zz",
		"http://" + strings.Repeat("a", 9000) + ".com/", "http://\u00ad/", "nope", "http://%00/", "\u0000"}
	var out []hostile
	fields := []struct {
		name, path string
		body       func(u string) string
	}{
		{"scrape url", "/v2/scrape", func(u string) string { return `{"url": ` + u + `}` }},
		{"map url", "/v2/map", func(u string) string { return `{"url": ` + u + `}` }},
		{"crawl url", "/v2/crawl", func(u string) string { return `{"url": ` + u + `}` }},
		{"batch urls", "/v2/batch/scrape", func(u string) string { return `{"urls": [` + u + `], "ignoreInvalidURLs": false}` }},
		{"webhook", "/v2/crawl", func(u string) string { return `{"url": "` + blockedTarget + `", "webhook": ` + u + `}` }},
		{"webhook.url", "/v2/batch/scrape", func(u string) string {
			return `{"urls": ["` + blockedTarget + `"], "webhook": {"url": ` + u + `}}`
		}},
	}
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	for _, f := range fields {
		for _, u := range blocked {
			status, code := 403, "URL_BLOCKED"
			switch {
			case !strings.Contains(u, "://") && strings.HasPrefix(f.name, "webhook"):
				status, code = 400, "BAD_REQUEST" // a webhook URL needs its scheme
			case strings.HasPrefix(f.name, "webhook"):
				status, code = 0, "" // refused as the field's problem, or with the job's blocked URL
			}
			out = append(out, jsonReq(f.name+" "+u, "POST", f.path, f.body(quote(u)), status, code))
		}
		for _, u := range invalid {
			out = append(out, jsonReq(f.name+" "+truncated(u, 40), "POST", f.path, f.body(quote(u)), 400, "BAD_REQUEST"))
		}
	}
	return out
}

// hostileQueries are unknown, repeated and malformed query parameters and
// ids on every route.
func hostileQueries(session string) []hostile {
	const none = "00000000-0000-0000-0000-000000000000"
	routes := []struct{ method, path, takes string }{
		{"GET", "/v2/browser", "status"},
		{"GET", "/v2/browser/" + session, ""},
		{"DELETE", "/v2/browser/" + none, ""},
		{"GET", "/v2/team/activity", "limit"},
		{"GET", "/v2/scrape/" + none, ""},
		{"GET", "/v2/crawl/active", ""},
		{"GET", "/v2/crawl/" + none, "limit"},
		{"DELETE", "/v2/crawl/" + none, ""},
		{"GET", "/v2/crawl/" + none + "/errors", ""},
		{"GET", "/v2/batch/scrape/" + none, "skip"},
		{"DELETE", "/v2/batch/scrape/" + none, ""},
		{"GET", "/v2/batch/scrape/" + none + "/errors", ""},
		{"GET", "/v2/profiles", ""},
		{"DELETE", "/v2/profiles/nothing", ""},
		{"POST", "/v2/browser", ""},
		{"POST", "/v2/scrape", ""},
		{"POST", "/v2/crawl", ""},
		{"POST", "/v2/map", ""},
		{"POST", "/v2/batch/scrape", ""},
		{"POST", "/v2/browser/" + session + "/execute", ""},
	}
	var out []hostile
	for _, r := range routes {
		qs := []string{"bogus=1", "%00=1", "a%zz=1", strings.Repeat("q", 5000) + "=1", "status=active&statuz=1", "x"}
		if r.takes != "" {
			qs = append(qs, r.takes+"=1&"+r.takes+"=2")
		}
		for _, q := range qs {
			h := hostile{name: "query " + truncated(q, 30), method: r.method, path: r.path + "?" + q, status: 400, code: "BAD_REQUEST"}
			if r.method == "POST" {
				h.body = []byte(`{"ttl": 60, "code": "1", "url": "` + blockedTarget + `", "urls": ["` + blockedTarget + `"]}`)
				h.header = map[string]string{"Content-Type": "application/json"}
			}
			out = append(out, h)
		}
	}
	// Values out of range.
	for _, p := range []string{"/v2/browser?status=alive", "/v2/team/activity?limit=0",
		"/v2/team/activity?limit=1e3", "/v2/team/activity?limit=-1", "/v2/team/activity?endpoint=%00",
		"/v2/team/activity?cursor=%ff%fe", "/v2/team/activity?cursor=" + strings.Repeat("c", 5000),
		"/v2/crawl/" + none + "?skip=-1", "/v2/crawl/" + none + "?limit=1001", "/v2/crawl/" + none + "?limit=abc",
		"/v2/batch/scrape/" + none + "?skip=99999999999999999999"} {
		out = append(out, hostile{name: "query value", method: "GET", path: p, status: 400, code: "BAD_REQUEST"})
	}
	// Ids that are no ids.
	for _, id := range []string{"%00", "' OR 1=1 --", "%ff%fe", "..%2f..%2fetc", strings.Repeat("9", 100000), "%E2%80%AE", "null", "-1"} {
		for _, base := range []string{"/v2/browser/", "/v2/scrape/", "/v2/crawl/", "/v2/batch/scrape/"} {
			out = append(out, hostile{name: "id " + truncated(id, 20), method: "GET", path: base + id, status: 404, code: "NOT_FOUND"})
		}
		out = append(out, hostile{name: "delete id " + truncated(id, 20), method: "DELETE", path: "/v2/crawl/" + id, status: 404, code: "NOT_FOUND"})
		out = append(out, jsonReq("execute id "+truncated(id, 20), "POST", "/v2/browser/"+id+"/execute", `{"code": "1"}`, 404, "NOT_FOUND"))
	}
	for _, name := range []string{"a%2Fb", "%00", strings.Repeat("p", 200), "..", "a b", "%ff"} {
		out = append(out, hostile{name: "profile " + truncated(name, 20), method: "DELETE", path: "/v2/profiles/" + name})
	}
	// Authentication.
	for _, auth := range []string{"", "Bearer", "Bearer wrong", "Basic " + keyAcme, "bearer  ", "Bearer " + strings.Repeat("k", 100000), "Bearer " + keyAcme + "x"} {
		out = append(out, hostile{name: "authorization " + truncated(auth, 20), method: "GET", path: "/v2/browser",
			header: map[string]string{"Authorization": auth}, status: 401, code: "UNAUTHORIZED"})
	}
	return out
}

// hostilePaths are paths that are not canonical, unknown paths and wrong
// methods on every route.
func hostilePaths(session string) []hostile {
	var out []hostile
	for _, p := range []string{"/v2/../v2/scrape", "/v2/./scrape", "//v2/scrape", "/v2//scrape", "/v2/scrape/.",
		"/v2/scrape/..", "/v2/%2e%2e/v2/scrape", "/v2/%2E/scrape", "/v2/browser/%2e%2e", "/x/../v2/browser",
		"/v2/browser/" + session + "/../" + session, "/v2/crawl/active/..", "/v2/parse/../parse", "/v2/./parse"} {
		for _, m := range []string{"GET", "POST"} {
			out = append(out, hostile{name: "path", method: m, raw: m + " " + p + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + keyAcme +
				"\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}", status: 404, code: "NOT_FOUND"})
		}
	}
	for _, p := range []string{"/v2", "/v2/", "/v2/nothing", "/v2/search/x", "/v2/extract/a/b", "/v2/crawl/a/b/c",
		"/v2/browser/" + session + "/execute/x", "/v2/" + strings.Repeat("x", 50000), "/v2/%00", "/v2/team/nothing"} {
		out = append(out, hostile{name: "unknown path", method: "GET", path: p, status: 404, code: "NOT_FOUND"})
	}
	out = append(out, hostile{name: "trailing slash", method: "GET", path: "/v2/scrape/"})
	out = append(out, hostile{name: "search GET", method: "GET", path: "/v2/search", status: 405, code: "METHOD_NOT_ALLOWED"})
	out = append(out, hostile{name: "extract GET", method: "GET", path: "/v2/extract", status: 405, code: "METHOD_NOT_ALLOWED"})
	for _, m := range []string{"POST", "DELETE", "PROPFIND"} {
		out = append(out, hostile{name: "healthz " + m, method: m, path: "/healthz", status: 405, code: "METHOD_NOT_ALLOWED"})
	}
	routes := []string{"/v2/browser", "/v2/browser/" + session, "/v2/browser/" + session + "/execute", "/v2/team/activity",
		"/v2/scrape", "/v2/crawl", "/v2/crawl/active", "/v2/crawl/params-preview", "/v2/batch/scrape", "/v2/map", "/v2/search", "/v2/profiles", "/v2/extract", "/v2/team/token-usage", "/v2/support/docs-search",
		"/v2/team/credit-usage", "/v2/team/credit-usage/historical", "/v2/team/queue-status", "/v2/concurrency-check"}
	for _, p := range routes {
		for _, m := range []string{"PUT", "PATCH", "OPTIONS", "TRACE", "PROPFIND"} {
			out = append(out, hostile{name: "method " + m, method: m, path: p, status: 405, code: "METHOD_NOT_ALLOWED"})
		}
	}
	return out
}

// hostileFraming are requests Go's client will not send: bad header names
// and values, bad framing, bad request lines.
func hostileFraming() []hostile {
	auth := "Authorization: Bearer " + keyAcme + "\r\n"
	post := func(path, extra, body string) string {
		return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\n%sContent-Type: application/json\r\n%sContent-Length: %d\r\nConnection: close\r\n\r\n%s",
			path, auth, extra, len(body), body)
	}
	crawl := `{"url": "` + blockedTarget + `"}`
	var out []hostile
	add := func(name, raw string, status int, code string) {
		out = append(out, hostile{name: name, method: "RAW", path: strings.SplitN(raw, "\r\n", 2)[0], raw: raw, status: status, code: code})
	}
	for _, v := range []string{"a\x01b", "a\x00b", "a\x7fb", "a\rb", "a\x1bb", "\x08"} {
		add(fmt.Sprintf("x-idempotency-key %q", v), post("/v2/crawl", "x-idempotency-key: "+v+"\r\n", crawl), 400, "BAD_REQUEST")
		add(fmt.Sprintf("header value %q", v), post("/v2/scrape", "X-Custom: "+v+"\r\n", crawl), 400, "BAD_REQUEST")
		add(fmt.Sprintf("authorization %q", v), "GET /v2/browser HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+v+"\r\nConnection: close\r\n\r\n", 400, "BAD_REQUEST")
	}
	add("x-idempotency-key of 257 characters", post("/v2/crawl", "x-idempotency-key: "+strings.Repeat("k", 257)+"\r\n", `{"url": "nope"}`), 400, "BAD_REQUEST")
	for _, name := range []string{"X A", "X\x00A", "(X)", "Ä"} {
		add(fmt.Sprintf("header name %q", name), post("/v2/scrape", name+": 1\r\n", crawl), 400, "BAD_REQUEST")
	}
	add("empty header name", post("/v2/scrape", ": 1\r\n", crawl), 400, "BAD_REQUEST")
	add("line without a colon", post("/v2/scrape", "garbage\r\n", crawl), 400, "BAD_REQUEST")
	add("2 MB header", post("/v2/scrape", "X-Big: "+strings.Repeat("b", 2<<20)+"\r\n", crawl), 431, "HEADERS_TOO_LARGE")
	add("20000 headers", post("/v2/scrape", strings.Repeat("X-Many: 1234567890123456789012345678901234567890123456789012345678901234567890\r\n", 20000), crawl), 431, "HEADERS_TOO_LARGE")
	add("2 MB path", "GET /v2/browser/"+strings.Repeat("i", 2<<20)+" HTTP/1.1\r\nHost: x\r\n\r\n", 431, "HEADERS_TOO_LARGE")
	add("no Host", "GET /v2/browser HTTP/1.1\r\n"+auth+"Connection: close\r\n\r\n", 400, "BAD_REQUEST")
	add("two Hosts", "GET /v2/browser HTTP/1.1\r\nHost: a\r\nHost: b\r\n"+auth+"Connection: close\r\n\r\n", 400, "BAD_REQUEST")
	add("Host with a space", "GET /v2/browser HTTP/1.1\r\nHost: a b\r\n"+auth+"Connection: close\r\n\r\n", 400, "BAD_REQUEST")
	add("Transfer-Encoding gzip", "POST /v2/scrape HTTP/1.1\r\nHost: x\r\n"+auth+"Transfer-Encoding: gzip\r\nConnection: close\r\n\r\n", 400, "BAD_REQUEST")
	add("Transfer-Encoding twice", "POST /v2/scrape HTTP/1.1\r\nHost: x\r\n"+auth+"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n", 400, "BAD_REQUEST")
	add("malformed chunk", "POST /v2/scrape HTTP/1.1\r\nHost: x\r\n"+auth+"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", 400, "BAD_REQUEST")
	add("chunked cut short", "POST /v2/scrape HTTP/1.1\r\nHost: x\r\n"+auth+"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n10\r\n{\"url\":", 400, "BAD_REQUEST")
	add("body cut short", "POST /v2/scrape HTTP/1.1\r\nHost: x\r\n"+auth+"Content-Type: application/json\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{\"url\":", 400, "BAD_REQUEST")
	add("negative Content-Length", "POST /v2/scrape HTTP/1.1\r\nHost: x\r\n"+auth+"Content-Length: -1\r\nConnection: close\r\n\r\n", 400, "BAD_REQUEST")
	add("Content-Length not a number", "POST /v2/scrape HTTP/1.1\r\nHost: x\r\n"+auth+"Content-Length: ten\r\nConnection: close\r\n\r\n", 400, "BAD_REQUEST")
	add("two Content-Lengths", "POST /v2/scrape HTTP/1.1\r\nHost: x\r\n"+auth+"Content-Length: 2\r\nContent-Length: 3\r\nConnection: close\r\n\r\n{}", 400, "BAD_REQUEST")
	add("Content-Length 11 MB, no body", "POST /v2/scrape HTTP/1.1\r\nHost: x\r\n"+auth+"Content-Type: application/json\r\nContent-Length: 11534336\r\nConnection: close\r\n\r\n", 413, "PAYLOAD_TOO_LARGE")
	add("chunked 11 MB", "POST /v2/scrape HTTP/1.1\r\nHost: x\r\n"+auth+"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"+
		fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", 11<<20, strings.Repeat("a", 11<<20)), 413, "PAYLOAD_TOO_LARGE")
	add("Expect", post("/v2/scrape", "Expect: the-unexpected\r\n", crawl), 417, "EXPECTATION_FAILED")
	add("HTTP/2.0 request line", "GET /v2/browser HTTP/2.0\r\nHost: x\r\n\r\n", 400, "BAD_REQUEST")
	add("HTTP/9.9 request line", "GET /v2/browser HTTP/9.9\r\nHost: x\r\n\r\n", 400, "BAD_REQUEST")
	add("HTTP/0.9 request line", "GET /v2/browser\r\n\r\n", 400, "BAD_REQUEST")
	add("garbage request line", "GARBAGE\r\n\r\n", 400, "BAD_REQUEST")
	add("extra words in the request line", "GET /v2/browser HTTP/1.1 extra\r\nHost: x\r\n\r\n", 400, "BAD_REQUEST")
	add("control character in the path", "GET /v2/\x01 HTTP/1.1\r\nHost: x\r\n\r\n", 400, "BAD_REQUEST")
	add("binary", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 400, "BAD_REQUEST")
	add("lower-case method", "get /v2/browser HTTP/1.1\r\nHost: x\r\n"+auth+"Connection: close\r\n\r\n", 405, "METHOD_NOT_ALLOWED")
	add("absolute-form without a key", "GET http://evil.example/v2/browser HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n", 401, "UNAUTHORIZED")
	add("asterisk-form", "OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 404, "NOT_FOUND")
	add("CONNECT", "CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\nConnection: close\r\n\r\n", 0, "")
	add("obsolete line folding", post("/v2/scrape", "X-Folded: a\r\n b\r\n", crawl), 0, "")
	add("NUL Content-Type", post("/v2/scrape", "Content-Type: application/json\x00\r\n", crawl), 400, "BAD_REQUEST")
	for _, p := range []string{"/healthz", "/metrics", "/cdp/x", "/live/x"} {
		add("bad header outside /v2 "+p, "GET "+p+" HTTP/1.1\r\nHost: x\r\nX-A: \x01\r\n\r\n", 400, "BAD_REQUEST")
	}
	return out
}

// hostileUploads are malformed multipart uploads for POST /v2/parse.
func hostileUploads() []hostile {
	upload := func(name string, ct string, body []byte, status int, code string) hostile {
		return hostile{name: name, method: "POST", path: "/v2/parse", header: map[string]string{"Content-Type": ct}, body: body, status: status, code: code}
	}
	form := func(name string, status int, code string, fill func(*multipart.Writer)) hostile {
		ct, body := multipartBody(fill)
		return upload(name, ct, body, status, code)
	}
	file := func(mw *multipart.Writer, name, content string) {
		w, _ := mw.CreateFormFile("file", name)
		io.WriteString(w, content)
	}
	options := func(mw *multipart.Writer, opts string) {
		w, _ := mw.CreateFormField("options")
		io.WriteString(w, opts)
	}
	html := "<h1>x</h1>"
	var out []hostile
	out = append(out,
		upload("no Content-Type", "", []byte("x"), 400, "BAD_REQUEST"),
		upload("JSON", "application/json", []byte(`{"file": "x"}`), 400, "BAD_REQUEST"),
		upload("form", "application/x-www-form-urlencoded", []byte("file=x"), 400, "BAD_REQUEST"),
		upload("no boundary", "multipart/form-data", []byte("--x\r\n"), 400, "BAD_REQUEST"),
		upload("empty multipart", "multipart/form-data; boundary=x", nil, 400, "BAD_REQUEST"),
		upload("only the end", "multipart/form-data; boundary=x", []byte("--x--\r\n"), 400, "BAD_REQUEST"),
		upload("cut short", "multipart/form-data; boundary=x", []byte("--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.html\"\r\n\r\n<h1>"), 400, "BAD_REQUEST"),
		upload("no part headers", "multipart/form-data; boundary=x", []byte("--x\r\n\r\nhello\r\n--x--\r\n"), 400, "BAD_REQUEST"),
		upload("1 MB part header", "multipart/form-data; boundary=x", []byte("--x\r\nX-Big: "+strings.Repeat("b", 1<<20)+"\r\n\r\nhello\r\n--x--\r\n"), 400, "BAD_REQUEST"),
		upload("empty boundary", "multipart/form-data; boundary=\"\"", []byte("--\r\n"), 400, "BAD_REQUEST"),
		upload("bad media type", "multipart/form-data; boundary", []byte("x"), 400, "BAD_REQUEST"),
		form("no file part", 400, "BAD_REQUEST", func(mw *multipart.Writer) { options(mw, `{}`) }),
		form("file without a name", 400, "BAD_REQUEST", func(mw *multipart.Writer) {
			w, _ := mw.CreateFormField("file")
			io.WriteString(w, html)
		}),
		form("unknown part", 400, "BAD_REQUEST", func(mw *multipart.Writer) { file(mw, "a.html", html); options(mw, `{}`); mw.CreateFormField("evil") }),
		form("two files", 400, "BAD_REQUEST", func(mw *multipart.Writer) { file(mw, "a.html", html); file(mw, "b.html", html) }),
		form("two options", 400, "BAD_REQUEST", func(mw *multipart.Writer) { options(mw, `{}`); options(mw, `{}`); file(mw, "a.html", html) }),
		form("empty file", 400, "BAD_REQUEST", func(mw *multipart.Writer) { file(mw, "a.html", "") }),
		form("unsupported type", 415, "UNSUPPORTED_FILE_TYPE", func(mw *multipart.Writer) { file(mw, "a.exe", "MZ") }),
		form("no extension", 415, "UNSUPPORTED_FILE_TYPE", func(mw *multipart.Writer) { file(mw, "README", html) }),
		form("traversal in the name", 415, "UNSUPPORTED_FILE_TYPE", func(mw *multipart.Writer) { file(mw, "../../../etc/passwd", "root:x:0:0") }),
		form("NUL in the name", 400, "BAD_REQUEST", func(mw *multipart.Writer) { file(mw, "a.html\x00.exe", html) }),
		form("pdf that is not", 0, "", func(mw *multipart.Writer) { file(mw, "a.pdf", "not a pdf at all") }),
		form("truncated pdf", 422, "PARSE_ERROR", func(mw *multipart.Writer) { file(mw, "a.pdf", "%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 2 0 R") }),
		form("docx that is no zip", 0, "", func(mw *multipart.Writer) { file(mw, "a.docx", "PK\x03\x04garbage") }),
		form("xlsx that is empty zip", 0, "", func(mw *multipart.Writer) { file(mw, "a.xlsx", "PK\x05\x06"+strings.Repeat("\x00", 18)) }),
	)
	for _, opts := range []string{`{`, `[]`, `"x"`, `{"formats": "markdown"}`, `{"waitFor": 100}`, `{"actions": []}`, `{"bogus": 1}`,
		`{"timeout": 1000, "timeout": 2000}`, `{"Formats": ["markdown"]}`, `{"headers": {"X-A": "a\r\nb"}}`, `{"headers": {"Host": "x"}}`,
		`{"formats": ["screenshot"]}`, `{"zeroDataRetention": "yes"}`, `{"formats": ` + strings.Repeat("[", 10001) + `}`,
		`{"formats": ["markdown"], "origin": "` + strings.Repeat("o", 2<<20) + `"}`, "\x00", `{"profile": {"name": "p"}}`} {
		code := "BAD_REQUEST"
		if opts == `{` || opts == "\x00" || strings.Contains(opts, "[[[") {
			code = "BAD_REQUEST_INVALID_JSON"
		}
		out = append(out, form("options "+truncated(opts, 30), 400, code, func(mw *multipart.Writer) { options(mw, opts); file(mw, "a.html", html) }))
	}
	for _, q := range []string{"?bogus=1", "?formats=markdown", "?%00"} {
		h := form("query "+q, 400, "BAD_REQUEST", func(mw *multipart.Writer) { file(mw, "a.html", html) })
		h.path += q
		out = append(out, h)
	}
	for _, m := range []string{"GET", "PUT", "DELETE"} {
		out = append(out, hostile{name: "method " + m, method: m, path: "/v2/parse", status: 405, code: "METHOD_NOT_ALLOWED"})
	}
	bad := form("wrong key", 401, "UNAUTHORIZED", func(mw *multipart.Writer) { file(mw, "a.html", html) })
	bad.header["Authorization"] = "Bearer wrong"
	out = append(out, bad)
	out = append(out, hostile{name: "declared 60 MB", method: "RAW", raw: "POST /v2/parse HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + keyAcme +
		"\r\nContent-Type: multipart/form-data; boundary=x\r\nContent-Length: 62914560\r\nConnection: close\r\n\r\n--x\r\n", status: 413, code: "FILE_TOO_LARGE"})
	return out
}

// hostileWatch are malformed WebSocket handshakes on the crawl watcher's
// paths.
func hostileWatch() []hostile {
	const none = "00000000-0000-0000-0000-000000000000"
	var out []hostile
	handshake := func(method, path, headers string) string {
		return method + " " + path + " HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" + headers + "Connection: close\r\n\r\n"
	}
	key := "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
	for _, path := range []string{"/v2/crawl/" + none, "/v2/batch/scrape/" + none} {
		for _, c := range []struct {
			name, method, path, headers string
			status                      int
			code                        string
		}{
			{"no key", "GET", path, key, 401, "UNAUTHORIZED"},
			{"wrong key as subprotocol", "GET", path, key + "Sec-WebSocket-Protocol: wrong\r\n", 401, "UNAUTHORIZED"},
			{"wrong bearer", "GET", path, key + "Authorization: Bearer wrong\r\n", 401, "UNAUTHORIZED"},
			{"no Sec-WebSocket-Key", "GET", path, "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: " + keyAcme + "\r\n", 400, "BAD_REQUEST"},
			{"version 12", "GET", path, "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 12\r\nSec-WebSocket-Protocol: " + keyAcme + "\r\n", 400, "BAD_REQUEST"},
			{"bad Sec-WebSocket-Key", "GET", path, "Sec-WebSocket-Key: short\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: " + keyAcme + "\r\n", 400, "BAD_REQUEST"},
			{"POST", "POST", path, key + "Sec-WebSocket-Protocol: " + keyAcme + "\r\n", 405, "METHOD_NOT_ALLOWED"},
			{"unknown query", "GET", path + "?bogus=1", key + "Sec-WebSocket-Protocol: " + keyAcme + "\r\n", 400, "BAD_REQUEST"},
			{"deeper path", "GET", path + "/x", key + "Sec-WebSocket-Protocol: " + keyAcme + "\r\n", 0, ""},
			{"not canonical", "GET", path + "/../" + none, key + "Sec-WebSocket-Protocol: " + keyAcme + "\r\n", 404, "NOT_FOUND"},
			{"control character in the key", "GET", path, key + "Sec-WebSocket-Protocol: a\x01b\r\n", 400, "BAD_REQUEST"},
		} {
			out = append(out, hostile{name: "watch " + c.name, method: "RAW", path: c.path, raw: handshake(c.method, c.path, c.headers), status: c.status, code: c.code})
		}
	}
	return out
}

// watchUnknownJob checks the one handshake that succeeds: a job that does
// not exist is said so in a message, then a close frame.
func watchUnknownJob(t *testing.T, ts *testService) {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, Subprotocols: []string{keyAcme}}
	ws, _, err := d.Dial("ws"+strings.TrimPrefix(ts.URL, "http")+"/v2/crawl/00000000-0000-0000-0000-000000000000", nil)
	require.NoError(t, err, "watching an unknown job")
	defer ws.Close()
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	var msg map[string]any
	if err := ws.ReadJSON(&msg); err != nil || msg["type"] != "error" || msg["error"] != "job not found" {
		t.Fatalf("first message %v (%v), want an error saying the job is not found", msg, err)
	}
	if _, _, err := ws.ReadMessage(); !websocket.IsCloseError(err, websocket.ClosePolicyViolation) {
		t.Fatalf("after the error: %v, want a close frame", err)
	}
}
