package service_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// upload is one part of a parse request.
type upload struct {
	name, filename string
	data           []byte
}

// parseFile posts parts to /v2/parse as multipart/form-data.
func (ts *testService) parseFile(key string, parts ...upload) response {
	ts.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		if p.filename != "" {
			h.Set("Content-Disposition", `form-data; name="`+p.name+`"; filename="`+p.filename+`"`)
			h.Set("Content-Type", "application/octet-stream")
		} else {
			h.Set("Content-Disposition", `form-data; name="`+p.name+`"`)
		}
		w, _ := mw.CreatePart(h)
		w.Write(p.data)
	}
	mw.Close()
	req, _ := http.NewRequest("POST", ts.URL+"/v2/parse", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return ts.send(req)
}

func (ts *testService) send(req *http.Request) response {
	ts.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(ts.t, err, "POST /v2/parse")
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := response{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	json.Unmarshal(raw, &out.Body)
	return out
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../parse/testdata", name))
	require.NoError(t, err)
	return b
}

func options(v map[string]any) upload {
	raw, _ := json.Marshal(v)
	return upload{name: "options", data: raw}
}

// TestParseDocuments uploads a document of each format and checks the
// Document a user gets: Markdown with the document's structure, metadata
// naming the file, and the other formats asked for.
func TestParseDocuments(t *testing.T) {
	ts := start(t, nil)
	for _, tc := range []struct {
		file, name string
		want       []string // in the Markdown
		title      string
		pages      int
		links      []string
	}{
		{"report.pdf", "q3-report.pdf", []string{"# Harbour Water Quality Report", "## Key findings", "- Dissolved oxygen", "1. Add two stations"}, "Harbour Water Quality Report", 1, nil},
		{"table.pdf", "sales.PDF", []string{"# Quarterly Sales by Region", "| Region | Q1 units | Q2 units | Change |"}, "Quarterly Sales", 1, nil},
		{"office-rich.docx", "notes.docx", []string{"## Equipment", "- Probes\n    - Steel probes\n        - One metre sections", "3. Calibrate the gauge",
			"| Site | Measurements |  |", "[the project site](https://example.org/method?id=7)", "[^1]: Measured at low tide."}, "Harbour Survey Notes", 2, []string{"https://example.org/method?id=7"}},
		{"office-rich.odt", "notes.odt", []string{"## Equipment", "    - Steel probes", "| North | 120 cm | 5 January |", "**north basin**"}, "Harbour Survey Notes", 2, []string{"https://example.org/method?id=7"}},
		{"legacy.rtf", "ferry.rtf", []string{"# Lake Ferry Guide", "Zürich — 東京 ✓", "2. Show your ticket\n    1. paper tickets", "| South | Closed for repairs |  |"}, "Lake Ferry Guide", 0, []string{"https://ferry.example.org/live?pier=north"}},
		{"legacy.doc", "ferry.doc", []string{"# Lake Ferry Guide", "Zürich — 東京 ✓", "## Departures", "| East | 09:30 | 19:30 |"}, "Lake Ferry Guide", 0, []string{"https://ferry.example.org/live?pier=north"}},
		{"sheets.xlsx", "figures.xlsx", []string{"## Sales", "| North | 1,234,567 | 3.14 | 2024-03-15 | 15 Mar 2024 | 25% | $1,234.50 | a \\| b |", "## Résumé"}, "Quarterly figures", 2, nil},
		{"sheets.xls", "figures.xls", []string{"## Sales", "| Total | 1,237,109 | 6.64 |", "| Greek | Ελληνικά |"}, "Quarterly figures", 2, nil},
		{"src/report.html", "report.html", []string{"# Harbour Water Quality Report", "## Key findings", "- Dissolved oxygen"}, "Harbour Water Quality Report", 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.parseFile(keyAcme, upload{name: "file", filename: tc.name, data: fixture(t, tc.file)},
				options(map[string]any{"formats": []any{"markdown", "html", "links"}}))
			require.Equal(t, 200, r.Status, "parse: %s", r.Raw)
			d, m := data(r), meta(r)
			md, _ := d["markdown"].(string)
			for _, w := range tc.want {
				assert.Contains(t, md, w, "markdown")
			}
			if h, _ := d["html"].(string); !strings.Contains(h, "<h") {
				t.Errorf("html lacks headings: %.300s", h)
			}
			if len(tc.links) > 0 {
				links, _ := d["links"].([]any)
				for _, l := range tc.links {
					assert.Contains(t, links, any(l), "links")
				}
			}
			if m["sourceURL"] != tc.name || m["title"] != tc.title || m["statusCode"] != float64(200) {
				t.Errorf("metadata: %v", m)
			}
			if tc.pages > 0 {
				assert.Equal(t, float64(tc.pages), m["numPages"], "numPages")
			}
			// The document is kept like a scrape's.
			id, _ := m["scrapeId"].(string)
			if g := ts.do("GET", "/v2/scrape/"+id, keyAcme, nil); g.Status != 200 || data(g)["markdown"] != md {
				t.Errorf("GET /v2/scrape/%s: %d %.200s", id, g.Status, g.Raw)
			}
		})
	}

	t.Run("pdf pages are billed and parsers [] returns the PDF", func(t *testing.T) {
		pdf := fixture(t, "threepage.pdf")
		r := ts.parseFile(keyAcme, upload{name: "file", filename: "survey.pdf", data: pdf})
		if r.Status != 200 || meta(r)["creditsUsed"] != float64(3) || meta(r)["numPages"] != float64(3) {
			t.Fatalf("three pages: %d %v", r.Status, meta(r))
		}
		r = ts.parseFile(keyAcme, upload{name: "file", filename: "survey.pdf", data: pdf}, options(map[string]any{"parsers": []any{}}))
		raw, err := base64.StdEncoding.DecodeString(data(r)["markdown"].(string))
		if r.Status != 200 || err != nil || !bytes.Equal(raw, pdf) || meta(r)["creditsUsed"] != float64(1) {
			t.Fatalf("parsers []: %d %v %.100s", r.Status, meta(r), r.Raw)
		}
	})

	t.Run("uploads at once all answer, in turn", func(t *testing.T) {
		// More uploads than parse slots: the rest wait, none is refused.
		pdf := fixture(t, "report.pdf")
		errs := make(chan string, 8)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := ts.parseFile(keyAcme, upload{name: "file", filename: fmt.Sprintf("r%d.pdf", i), data: pdf})
				if r.Status != 200 || !strings.HasPrefix(data(r)["markdown"].(string), "# Harbour Water Quality Report") || meta(r)["sourceURL"] != fmt.Sprintf("r%d.pdf", i) {
					errs <- fmt.Sprintf("upload %d: %d %.200s", i, r.Status, r.Raw)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
	})

	t.Run("a page without text is reported", func(t *testing.T) {
		r := ts.parseFile(keyAcme, upload{name: "file", filename: "scan.pdf", data: fixture(t, "scanned.pdf")})
		if r.Status != 200 || !strings.Contains(r.str("warning")+data(r)["warning"].(string), "page 2") {
			t.Fatalf("scanned: %d %s", r.Status, r.Raw)
		}
	})
}

// TestParseErrors: every way an upload is refused, each with its status,
// code and a message naming the problem.
func TestParseErrors(t *testing.T) {
	ts := start(t, nil)
	pdf := fixture(t, "report.pdf")
	file := upload{name: "file", filename: "report.pdf", data: pdf}
	for _, tc := range []struct {
		name   string
		key    string
		parts  []upload
		status int
		code   string
		msg    string
	}{
		{"no key", "", []upload{file}, 401, "UNAUTHORIZED", "API key"},
		{"no file", keyAcme, []upload{options(map[string]any{})}, 400, "BAD_REQUEST", "file is required"},
		{"no file name", keyAcme, []upload{{name: "file", data: []byte("<p>x</p>")}}, 400, "BAD_REQUEST", "file name"},
		{"empty file", keyAcme, []upload{{name: "file", filename: "a.pdf"}}, 400, "BAD_REQUEST", "file is empty"},
		{"unknown part", keyAcme, []upload{file, {name: "url", data: []byte("x")}}, 400, "BAD_REQUEST", `unknown part "url"`},
		{"options not JSON", keyAcme, []upload{file, {name: "options", data: []byte("{formats")}}, 400, "BAD_REQUEST_INVALID_JSON", "not valid JSON"},
		{"unknown option", keyAcme, []upload{file, options(map[string]any{"colour": "red"})}, 400, "BAD_REQUEST", `options.colour`},
		{"bad format", keyAcme, []upload{file, options(map[string]any{"formats": []any{"pdf"}})}, 400, "BAD_REQUEST", "options.formats[0]"},
		{"bad timeout", keyAcme, []upload{file, options(map[string]any{"timeout": 5})}, 400, "BAD_REQUEST", "options.timeout must be between"},
		{"waitFor", keyAcme, []upload{file, options(map[string]any{"waitFor": 1000})}, 400, "BAD_REQUEST", "options.waitFor does not apply to parse"},
		{"actions", keyAcme, []upload{file, options(map[string]any{"actions": []any{map[string]any{"type": "wait", "milliseconds": 10}}})}, 400, "BAD_REQUEST", "options.actions does not apply"},
		{"mobile", keyAcme, []upload{file, options(map[string]any{"mobile": true})}, 400, "BAD_REQUEST", "options.mobile does not apply"},
		{"location", keyAcme, []upload{file, options(map[string]any{"location": map[string]any{"country": "DE"}})}, 400, "BAD_REQUEST", "options.location does not apply"},
		{"screenshot", keyAcme, []upload{file, options(map[string]any{"formats": []any{"markdown", "screenshot"}})}, 400, "BAD_REQUEST", "options.formats[1] does not apply to parse: screenshot"},
		{"changeTracking", keyAcme, []upload{file, options(map[string]any{"formats": []any{"changeTracking"}})}, 400, "BAD_REQUEST", "options.formats[0] does not apply to parse: changeTracking"},
		{"branding", keyAcme, []upload{file, options(map[string]any{"formats": []any{map[string]any{"type": "branding"}}})}, 400, "BAD_REQUEST", "options.formats[0] does not apply to parse: branding"},
		{"maxAge", keyAcme, []upload{file, options(map[string]any{"maxAge": 1000})}, 400, "BAD_REQUEST", "options.maxAge does not apply"},
		{"zeroDataRetention not enabled", keyAcme, []upload{file, options(map[string]any{"zeroDataRetention": true})}, 403, "FEATURE_NOT_ENABLED", "zeroDataRetention"},
		{"unknown extension", keyAcme, []upload{{name: "file", filename: "setup.exe", data: []byte("MZ\x90\x00")}}, 415, "UNSUPPORTED_FILE_TYPE", `"setup.exe" has an extension parse does not read`},
		{"no extension", keyAcme, []upload{{name: "file", filename: "README", data: []byte("hello")}}, 415, "UNSUPPORTED_FILE_TYPE", ".pdf"},
		{"pdf named docx", keyAcme, []upload{{name: "file", filename: "letter.docx", data: pdf}}, 415, "UNSUPPORTED_FILE_TYPE", "named a DOCX file but its content is PDF"},
		{"text named pdf", keyAcme, []upload{{name: "file", filename: "notes.pdf", data: []byte("just some notes")}}, 415, "UNSUPPORTED_FILE_TYPE", "named a PDF file but its content is not one"},
		{"binary named html", keyAcme, []upload{{name: "file", filename: "page.html", data: pdf}}, 415, "UNSUPPORTED_FILE_TYPE", "content is PDF"},
		{"damaged pdf", keyAcme, []upload{{name: "file", filename: "broken.pdf", data: pdf[:len(pdf)/3]}}, 422, "PARSE_ERROR", "parsing the document"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.parseFile(tc.key, tc.parts...)
			if r.Status != tc.status || r.str("code") != tc.code || !strings.Contains(r.str("error"), tc.msg) || r.Body["success"] != false {
				t.Errorf("got %d %s, want %d %s with %q", r.Status, r.Raw, tc.status, tc.code, tc.msg)
			}
		})
	}

	t.Run("not multipart", func(t *testing.T) {
		r := ts.do("POST", "/v2/parse", keyAcme, map[string]any{"file": "x"})
		if r.Status != 400 || !strings.Contains(r.str("error"), "multipart/form-data") {
			t.Errorf("JSON body: %d %s", r.Status, r.Raw)
		}
	})
}

// endless is an upload body of n bytes of a PDF that counts what the server
// read of it.
type endless struct {
	n, read int64
	head    []byte
}

func (e *endless) Read(p []byte) (int, error) {
	if e.read >= e.n {
		return 0, io.EOF
	}
	k := int64(len(p))
	if k > e.n-e.read {
		k = e.n - e.read
	}
	for i := range p[:k] {
		p[i] = ' '
	}
	if e.read < int64(len(e.head)) {
		copy(p, e.head[e.read:])
	}
	atomic.AddInt64(&e.read, k)
	return int(k), nil
}

// TestParseTooLarge: an upload over 50 MB is refused with 413 while it
// streams, both when its length is declared and when it is chunked, and the
// server stops reading it.
func TestParseTooLarge(t *testing.T) {
	ts := start(t, nil)
	head := "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.pdf\"\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.7\n"
	for _, declared := range []bool{true, false} {
		body := &endless{n: 400 << 20, head: []byte(head)}
		req, _ := http.NewRequest("POST", ts.URL+"/v2/parse", body)
		req.Header.Set("Content-Type", "multipart/form-data; boundary=b")
		req.Header.Set("Authorization", "Bearer "+keyAcme)
		if declared {
			req.ContentLength = body.n
		} else {
			req.ContentLength = -1
		}
		r := ts.send(req)
		if r.Status != 413 || r.str("code") != "FILE_TOO_LARGE" || !strings.Contains(r.str("error"), "50 MB") {
			t.Errorf("declared=%v: %d %s", declared, r.Status, r.Raw)
		}
		if got := atomic.LoadInt64(&body.read); got > 200<<20 {
			t.Errorf("declared=%v: the server read %d MB of a 400 MB upload", declared, got>>20)
		}
	}
	// Just under the limit is accepted (and fails only as a damaged PDF).
	data := append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte(" "), 50<<20-9)...)
	r := ts.parseFile(keyAcme, upload{name: "file", filename: "padded.pdf", data: data})
	assert.Equal(t, 422, r.Status, "50 MB exactly: %s", r.Raw)
}

// TestParseZeroDataRetention: a team with zero data retention parses a
// document and nothing of it is kept: not retrievable by id, not in the
// database or anywhere in the data directory, not in the log.
func TestParseZeroDataRetention(t *testing.T) {
	dir := t.TempDir()
	ts := start(t, map[string]string{"TRAWLER_TEAM_FEATURES": "acme:zeroDataRetention", "TRAWLER_DATA_DIR": dir})
	marker := "Zebracorn" + strings.Repeat("x", 5)
	html := "<html><head><title>" + marker + "</title></head><body><h1>" + marker + " heading</h1><p>Secret " + marker + " text.</p></body></html>"
	name := "secret-" + marker + ".html"
	r := ts.parseFile(keyAcme, upload{name: "file", filename: name, data: []byte(html)},
		options(map[string]any{"zeroDataRetention": true}))
	if r.Status != 200 || !strings.Contains(data(r)["markdown"].(string), marker+" heading") {
		t.Fatalf("zdr parse: %d %s", r.Status, r.Raw)
	}
	g := ts.do("GET", "/v2/scrape/"+meta(r)["scrapeId"].(string), keyAcme, nil)
	assert.Equal(t, 404, g.Status, "a zero-data-retention parse is retrievable")
	// A failed parse keeps nothing either.
	ts.parseFile(keyAcme, upload{name: "file", filename: "broken-" + marker + ".pdf", data: []byte("%PDF-1.7\n" + marker)},
		options(map[string]any{"zeroDataRetention": true}))
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(p)
		assert.False(t, bytes.Contains(b, []byte(marker)), "%s holds the document", p)
		return nil
	})
	assert.NotContains(t, ts.logs.String(), marker, "the log holds the document")
}
