package service_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
)

// The ways a scrape takes a page, as the tests below reach them: each is
// the first segment of a test URL, which the test sites ignore.
const (
	viaDirect    = "direct"    // Go's client, default options
	viaIntercept = "intercept" // the site refuses Go's client: the browser's navigation, taken from the network
	viaRender    = "render"    // the browser renders the page
	viaInPage    = "inpage"    // a job's fetch() from a tab that shows the site
)

// fromGoClient reports whether r comes from Go's HTTP client rather than a
// browser, by the encodings it accepts (Go asks for gzip alone), as a bot
// manager may tell them apart: the test sites refuse it under /intercept/.
func fromGoClient(r *http.Request) bool {
	return !strings.Contains(r.Header.Get("Accept-Encoding"), "deflate")
}

// engines are the engines the ways of taking a page report.
var engines = map[string]string{viaDirect: "fetch", viaIntercept: "browser-fetch", viaRender: "browser-render", viaInPage: "browser-fetch"}

// pathsService starts a service for the tests that take pages every way
// (one lane for the crawls, so that the in-page fetch is reached), once a
// browser of it has started (a screenshot of u needs one): until then the
// service does not know the user agent that Go's client sends, and takes
// no page without a browser.
func pathsService(t *testing.T, u string) *testService {
	t.Helper()
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true", "TRAWLER_JOB_WORKERS": "1"})
	r := ts.scrape(map[string]any{"url": u, "formats": []string{"screenshot"}, "maxAge": 0})
	require.Equal(t, 200, r.Status, "a scrape that starts a browser: %s", r.Raw)
	return ts
}

// copyFor is ts for a parallel subtest, failing t rather than ts's test.
func (ts *testService) copyFor(t *testing.T) *testService {
	c := *ts
	c.t = t
	return &c
}

// legacyCharsets are pages written in the legacy encodings the web still
// serves, each with text only that encoding (and Unicode) has.
var legacyCharsets = []struct {
	label string
	enc   encoding.Encoding
	text  string
}{
	{"Shift_JIS", japanese.ShiftJIS, "日本語の文章です"},
	{"EUC-KR", korean.EUCKR, "한국어 문장입니다"},
	{"GBK", simplifiedchinese.GBK, "这是中文的句子"},
	{"windows-1251", charmap.Windows1251, "Это русский текст"},
	{"ISO-8859-1", charmap.ISO8859_1, "Voilà un café crème brûlée"},
}

// charsetSite serves /{via}/{i}/{labelled}: legacyCharsets[i] encoded,
// its charset named by the header ("header") or only by a <meta> tag
// ("meta": <meta charset> for even i, <meta http-equiv> for odd); a page
// the browser must render under /render/, a server-rendered one elsewhere;
// and under /inpage/ the start of a crawl that reaches every page through
// a tab.
func charsetSite(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/inpage/" {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<!doctype html><html><body><div id="root"></div><script>document.getElementById('root').textContent = 'Index';</script>`)
			for i := range legacyCharsets {
				for _, labelled := range []string{"header", "meta"} {
					fmt.Fprintf(w, `<a href="/inpage/%d/%s">%d %s</a>`, i, labelled, i, labelled)
				}
			}
			return
		}
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		if len(parts) != 3 {
			http.NotFound(w, r)
			return
		}
		via, labelled := parts[0], parts[2]
		i, err := strconv.Atoi(parts[1])
		if err != nil || i < 0 || i >= len(legacyCharsets) {
			http.NotFound(w, r)
			return
		}
		if via == viaIntercept && fromGoClient(r) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, "<html><body><p>Access denied.</p></body></html>")
			return
		}
		cs := legacyCharsets[i]
		head := ""
		switch {
		case labelled == "header":
			w.Header().Set("Content-Type", "text/html; charset="+cs.label)
		case i%2 == 0:
			w.Header().Set("Content-Type", "text/html")
			head = `<meta charset="` + cs.label + `">`
		default:
			w.Header().Set("Content-Type", "text/html")
			head = `<meta http-equiv="Content-Type" content="text/html; charset=` + cs.label + `">`
		}
		body := `<main><h1>` + cs.text + `</h1><p>` + strings.Repeat(cs.text+". ", 30) + `</p></main>`
		if via == viaRender {
			body = `<div id="root"></div><script>document.getElementById('root').innerHTML = '` + body + `';</script>`
		}
		page, err := cs.enc.NewEncoder().String(`<!doctype html><html><head>` + head + `<title>` + cs.text + `</title></head><body>` + body + `</body></html>`)
		if err != nil {
			t.Errorf("encoding %s: %v", cs.label, err)
		}
		fmt.Fprint(w, page)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestScrapeLegacyCharsets: a page in a legacy encoding, labelled by its
// header or only by a <meta> tag, comes out as its text on every way a
// page is taken; and a labelled server-rendered page needs no browser.
func TestScrapeLegacyCharsets(t *testing.T) {
	t.Parallel()
	web := charsetSite(t)
	ts := pathsService(t, web.URL+"/"+viaRender+"/0/header")
	check := func(t *testing.T, cs int, md map[string]any, markdown, want string) {
		t.Helper()
		assert.Equal(t, want, md["engine"], "engine")
		assert.Contains(t, markdown, "# "+legacyCharsets[cs].text, "markdown")
		assert.NotContains(t, markdown, "\uFFFD", "markdown")
	}
	for _, via := range []string{viaDirect, viaIntercept, viaRender} {
		for i, cs := range legacyCharsets {
			for _, labelled := range []string{"header", "meta"} {
				t.Run(via+"/"+cs.label+"/"+labelled, func(t *testing.T) {
					t.Parallel()
					r := ts.copyFor(t).scrape(map[string]any{"url": fmt.Sprintf("%s/%s/%d/%s", web.URL, via, i, labelled)})
					require.Equal(t, 200, r.Status, "scrape: %s", r.Raw)
					md, _ := data(r)["markdown"].(string)
					check(t, i, meta(r), md, engines[via])
				})
			}
		}
	}
	t.Run(viaInPage, func(t *testing.T) {
		t.Parallel()
		_, st, docs := ts.copyFor(t).runJob("/v2/crawl", keyAcme, map[string]any{"url": web.URL + "/inpage/", "sitemap": "skip",
			"scrapeOptions": map[string]any{"maxAge": 0}})
		require.Equal(t, "completed", st["status"], "crawl: %v", st)
		require.Len(t, docs, 1+2*len(legacyCharsets), "documents: %v", docURLs(docs, web.URL))
		for _, d := range docs {
			md := d["metadata"].(map[string]any)
			var cs int
			var labelled string
			if _, err := fmt.Sscanf(strings.TrimPrefix(md["sourceURL"].(string), web.URL), "/inpage/%d/%s", &cs, &labelled); err != nil {
				continue // the start page
			}
			t.Run(legacyCharsets[cs].label+"/"+labelled, func(t *testing.T) {
				markdown, _ := d["markdown"].(string)
				check(t, cs, md, markdown, engines[viaInPage])
			})
		}
	})
}

// textBodies are responses the browser shows as text: each kind with the
// Markdown code fence it gets (or, for Markdown, none: the text itself).
// Every way of taking a page is tried on those marked everywhere, the
// cheap ones (Go's client, a job's in-page fetch) on all.
var textBodies = []struct {
	name, contentType, fence string
	body                     []byte
	text                     string // body as UTF-8, when it is not
	everywhere               bool
}{
	{name: "json", contentType: "application/json", fence: "```json\n", everywhere: true,
		body: []byte(`{"name": "Trawler", "tags": ["nets", "boats"], "note": "<b>x & y</b> – ünïcödé"}` + "\n")},
	// A wrong label does not garble JSON, which is UTF-8.
	{name: "json-mislabelled", contentType: "application/json; charset=utf-16", fence: "```json\n",
		body: []byte(`{"name": "Café"}`)},
	{name: "problem+json", contentType: "application/problem+json", fence: "```json\n",
		body: []byte(`{"type": "about:blank", "title": "Not Found", "status": 404}`)},
	{name: "xml", contentType: "application/xml", fence: "```xml\n", everywhere: true,
		body: []byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<feed><title>Nets &amp; boats</title><entry id="1">Ünïcödé</entry></feed>` + "\n")},
	{name: "text-xml", contentType: "text/xml; charset=utf-8", fence: "```xml\n",
		body: []byte(`<catalog><item sku="A1">Net</item></catalog>`)},
	{name: "atom+xml", contentType: "application/atom+xml", fence: "```xml\n",
		body: []byte(`<feed xmlns="http://www.w3.org/2005/Atom"><title>News</title></feed>`)},
	{name: "xml-declared-charset", contentType: "application/xml", fence: "```xml\n",
		body: mustEncode(japanese.ShiftJIS, `<?xml version="1.0" encoding="Shift_JIS"?>`+"\n"+`<items><item>日本語の文章です</item></items>`),
		text: `<?xml version="1.0" encoding="Shift_JIS"?>` + "\n" + `<items><item>日本語の文章です</item></items>`},
	{name: "plain", contentType: "text/plain; charset=utf-8", fence: "```\n", everywhere: true,
		body: []byte("Plain notes <not a tag> & more\n\n    indented line\n")},
	{name: "plain-windows-1251", contentType: "text/plain; charset=windows-1251", fence: "```\n",
		body: mustEncode(charmap.Windows1251, "Это русский текст\n"), text: "Это русский текст\n"},
	{name: "markdown", contentType: "text/markdown; charset=utf-8",
		body: []byte("# Notes\n\nSome *emphasis* and a [link](https://example.org/).\n")},
}

func mustEncode(e encoding.Encoding, s string) []byte {
	b, err := e.NewEncoder().Bytes([]byte(s))
	if err != nil {
		panic(err)
	}
	return b
}

// textSite serves textBodies[i] at /{via}/{name}, and under /inpage/ the
// start of a crawl that reaches each through a tab.
func textSite(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/inpage/" {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<!doctype html><html><body><div id="root"></div><script>document.getElementById('root').textContent = 'Index';</script>`)
			for _, tb := range textBodies {
				fmt.Fprintf(w, `<a href="/inpage/%s">%s</a>`, tb.name, tb.name)
			}
			return
		}
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		if len(parts) != 2 {
			http.NotFound(w, r)
			return
		}
		if parts[0] == viaIntercept && fromGoClient(r) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, "<html><body><p>Access denied.</p></body></html>")
			return
		}
		for _, tb := range textBodies {
			if tb.name == parts[1] {
				w.Header().Set("Content-Type", tb.contentType)
				w.Write(tb.body)
				return
			}
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestScrapeTextBodies: a JSON, XML or text response's rawHtml is its body
// as it came (JSON.parse takes it), its Markdown a code block tagged by its
// type, and its contentType the server's, however the page was taken.
func TestScrapeTextBodies(t *testing.T) {
	t.Parallel()
	web := textSite(t)
	ts := pathsService(t, web.URL+"/"+viaRender+"/plain")
	check := func(t *testing.T, i int, d map[string]any, engine string) {
		t.Helper()
		tb := textBodies[i]
		md, _ := d["metadata"].(map[string]any)
		raw, _ := d["rawHtml"].(string)
		markdown, _ := d["markdown"].(string)
		text := tb.text
		if text == "" {
			text = string(tb.body)
		}
		assert.Equal(t, engine, md["engine"], "engine")
		assert.Equal(t, tb.contentType, md["contentType"], "contentType")
		assert.Equal(t, text, raw, "rawHtml")
		if strings.Contains(tb.contentType, "json") {
			var got, want any
			assert.NoError(t, json.Unmarshal([]byte(raw), &got), "JSON.parse(rawHtml)")
			require.NoError(t, json.Unmarshal(tb.body, &want))
			assert.Equal(t, want, got, "JSON.parse(rawHtml)")
		}
		if tb.fence == "" {
			assert.Equal(t, strings.TrimSpace(text), strings.TrimSpace(markdown), "markdown")
		} else {
			assert.True(t, strings.HasPrefix(markdown, tb.fence), "markdown opens with %q: %q", tb.fence, markdown)
			assert.Contains(t, markdown, strings.SplitN(strings.TrimSpace(text), "\n", 2)[0], "markdown")
		}
		if html, ok := d["html"].(string); ok {
			assert.Contains(t, html, "<pre", "html")
		}
	}
	formats := []string{"markdown", "rawHtml", "html"}
	for _, via := range []string{viaDirect, viaIntercept, viaRender} {
		for i, tb := range textBodies {
			if via != viaDirect && !tb.everywhere {
				continue
			}
			t.Run(via+"/"+tb.name, func(t *testing.T) {
				t.Parallel()
				req := map[string]any{"url": web.URL + "/" + via + "/" + tb.name, "formats": formats}
				if via == viaRender {
					// The browser navigates to the body and shows it.
					req["formats"] = append([]string{"screenshot"}, formats...)
				}
				r := ts.copyFor(t).scrape(req)
				require.Equal(t, 200, r.Status, "scrape: %s", r.Raw)
				check(t, i, data(r), engines[via])
			})
		}
	}
	t.Run(viaInPage, func(t *testing.T) {
		t.Parallel()
		_, st, docs := ts.copyFor(t).runJob("/v2/crawl", keyAcme, map[string]any{"url": web.URL + "/inpage/", "sitemap": "skip",
			"scrapeOptions": map[string]any{"formats": formats, "maxAge": 0}})
		require.Equal(t, "completed", st["status"], "crawl: %v", st)
		require.Len(t, docs, 1+len(textBodies), "documents: %v", docURLs(docs, web.URL))
		for _, d := range docs {
			name := strings.TrimPrefix(d["metadata"].(map[string]any)["sourceURL"].(string), web.URL+"/inpage/")
			for i, tb := range textBodies {
				if tb.name == name {
					t.Run(name, func(t *testing.T) { check(t, i, d, engines[viaInPage]) })
				}
			}
		}
	})
}
