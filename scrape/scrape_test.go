package scrape

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLooksServerRendered(t *testing.T) {
	t.Parallel()
	long := "<p>" + strings.Repeat("Real words in a paragraph. ", 20) + "</p>"
	for _, tc := range []struct {
		name, body, ct string
		want           bool
	}{
		{"article", "<html><body>" + long + "</body></html>", "text/html; charset=utf-8", true},
		{"react shell", `<html><body><div id="root"></div><script src="/app.js"></script></body></html>`, "text/html", false},
		{"shell with text in scripts", `<html><body><div id="app"></div><script>` + strings.Repeat("var x = 1;", 100) + `</script></body></html>`, "text/html", false},
		{"too little text", "<html><body><p>Loading…</p></body></html>", "text/html", false},
		{"noscript warning", "<html><body>" + long + "<noscript>You need to enable JavaScript to run this app.</noscript></body></html>", "text/html", false},
		{"meta refresh", `<html><head><meta http-equiv="refresh" content="0;url=/x"></head><body>` + long + `</body></html>`, "text/html", false},
		{"latin-1 (decoded first)", "<html><body>" + long + "</body></html>", "text/html; charset=iso-8859-1", true},
		{"json", `{"a":1}`, "application/json", false},
		{"angular app", `<html ng-app="shop"><body>` + long + `</body></html>`, "text/html", false},
		{"words that contain ng-app", `<html><body><a href="#a-function-for-testing-approximate-equality">x</a>` + long + `</body></html>`, "text/html", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, looksServerRendered([]byte(tc.body), tc.ct), "looksServerRendered")
		})
	}
}

func TestDocumentKind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ ct, url, want string }{
		{"application/pdf", "http://a/x", "pdf"},
		{"application/octet-stream", "http://a/report.PDF?x=1", "pdf"},
		{"text/html", "http://a/report.pdf", ""},
		{"", "http://a/page", ""},
		{"application/vnd.openxmlformats-officedocument.wordprocessingml.document", "http://a/dl?id=3", "docx"},
		{"application/msword; charset=binary", "http://a/x", "doc"},
		{"text/rtf", "http://a/x", "rtf"},
		{"application/octet-stream", "http://a/figures.XLSX", "xlsx"},
		{"application/zip", "http://a/notes.odt", "odt"},
		{"binary/octet-stream", "http://a/old.xls", "xls"},
		{"text/plain", "http://a/notes.docx", ""},
		{"application/vnd.ms-excel.sheet.macroEnabled.12", "http://a/x.xlsm", ""},
	} {
		assert.Equal(t, tc.want, documentKind(tc.ct, tc.url), "documentKind(%q, %q)", tc.ct, tc.url)
	}
}

func TestAdHosts(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"doubleclick.net": true, "stats.g.doubleclick.net": true, "www.google-analytics.com": true,
		"example.com": false, "notdoubleclick.net": false, "net": false,
	} {
		assert.Equal(t, want, isAdHost(host), "isAdHost(%q)", host)
	}
}

func TestLocale(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "de-DE,de;q=0.9,en;q=0.8", acceptLanguage([]string{"de-DE", "de", "en"}), "acceptLanguage")
	assert.Equal(t, "Asia/Tokyo", countryTimezone("jp"), "countryTimezone")
	assert.Empty(t, countryTimezone("ZZ"), "countryTimezone")
	l := defaultLanguages("ZZ")
	assert.Equal(t, "en-US", l[0], "default languages %v", l)
}

func TestCacheKey(t *testing.T) {
	t.Parallel()
	o := DefaultOptions()
	base := cacheKey("http://Example.com/a?b=2&a=1#frag", &o)
	assert.Equal(t, base, cacheKey("http://example.com/a?a=1&b=2", &o), "host case, query order and fragments must not change the key")
	m := o
	m.Mobile = true
	assert.NotEqual(t, base, cacheKey("http://example.com/a?a=1&b=2", &m), "mobile must change the key")
	w := o
	w.WaitFor = time.Second
	assert.NotEqual(t, base, cacheKey("http://example.com/a?a=1&b=2", &w), "waitFor must change the key")
	f := o
	f.Formats = []Format{{Type: "links"}}
	assert.Equal(t, base, cacheKey("http://example.com/a?a=1&b=2", &f), "formats other than screenshot must not change the key: one entry serves them all")
}
