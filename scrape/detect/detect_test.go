package detect

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLooksServerRendered(t *testing.T) {
	t.Parallel()
	long := "<p>" + strings.Repeat("Real words in a paragraph. ", 20) + "</p>"
	article := strings.Repeat(long, 4)
	notice := "<p>This page has moved to a new address. You are being taken there now; if nothing happens within a few seconds, please follow the link below to the new page. We are sorry for the inconvenience and thank you for your patience while we move our pages.</p>"
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
		{"refresh soon, no url", `<html><head><meta http-equiv=Refresh content=" 3"></head><body>` + long + `</body></html>`, "text/html", false},
		{"refresh soon in the body", `<html><body>` + notice + `<meta http-equiv='refresh' content='5; URL=https://example.com/new'></body></html>`, "text/html", false},
		{"news auto-reload", `<html><head><meta http-equiv="refresh" content="2700"></head><body>` + long + `</body></html>`, "text/html", true},
		{"refresh in a comment", `<html><head><!--<meta http-equiv="refresh" content="0">--></head><body>` + long + `</body></html>`, "text/html", true},
		{"refresh for old IE", `<html><head><!--[if lte IE 9]><meta http-equiv="refresh" content="1;url=/unsupported.html"><![endif]--></head><body>` + long + `</body></html>`, "text/html", true},
		{"refresh without javascript", `<html><head><noscript><meta http-equiv="refresh" content="0;url=/basic"></noscript></head><body>` + long + `</body></html>`, "text/html", true},
		{"refresh the browser ignores", `<html><head><meta http-equiv="refresh" content="url=/x"></head><body>` + long + `</body></html>`, "text/html", true},
		{"script redirect, no text", `<html><head><script>window.location.replace("/new")</script></head><body><p>Redirecting…</p></body></html>`, "text/html", false},
		{"script redirect with a notice", `<html><body>` + notice + `<script>location.href = "/new";</script></body></html>`, "text/html", false},
		{"script redirect on an article", `<html><head><script>if (location.search.includes("hid=")) window.location.replace(location.pathname)</script></head><body>` + article + `</body></html>`, "text/html", true},
		{"iframe navigation in a script", `<html><body>` + notice + `<script>function load(f, u) { try { f.contentWindow.location.replace(u) } catch (e) { f.src = u } }</script></body></html>`, "text/html", true},
		{"redirect on a click", `<html><body>` + notice + `<button onclick="window.location.replace('/search')">Search</button></body></html>`, "text/html", true},
		{"redirect held back for consent", `<html><body>` + notice + `<script type="text/plain">window.location = "/x"</script></body></html>`, "text/html", true},
		{"location compared, not set", `<html><body>` + notice + `<script>if (window.location.href == "/x") track()</script></body></html>`, "text/html", true},
		{"latin-1 (decoded first)", "<html><body>" + long + "</body></html>", "text/html; charset=iso-8859-1", true},
		{"json", `{"a":1}`, "application/json", false},
		{"angular app", `<html ng-app="shop"><body>` + long + `</body></html>`, "text/html", false},
		{"words that contain ng-app", `<html><body><a href="#a-function-for-testing-approximate-equality">x</a>` + long + `</body></html>`, "text/html", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, ServerRendered([]byte(tc.body), tc.ct), "ServerRendered")
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
		assert.Equal(t, tc.want, DocumentKind(tc.ct, tc.url), "DocumentKind(%q, %q)", tc.ct, tc.url)
	}
}

// TestServerRenderedCorpus checks ServerRendered on the evaluation corpus
// go-trafilatura ships: server-rendered article pages, none of which
// redirects, so that no page of it is rendered for a refresh or a script
// that sets its location; the pages still rendered show an app shell's
// mark or too little text.
func TestServerRenderedCorpus(t *testing.T) {
	t.Parallel()
	const module = "github.com/markusmobius/go-trafilatura@v1.12.2"
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module)
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		t.Skipf("%s is not in the module cache: %v", module, err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "test-files", "comparison", "*.html"))
	require.NoError(t, err)
	if len(files) == 0 {
		t.Skipf("%s holds no test-files/comparison", dir)
	}
	rendered := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		body, ok := Decode(raw, "text/html")
		if !ok {
			body = raw
		}
		if ServerRendered(body, "text/html") {
			continue
		}
		rendered++
		lower := lowerASCII(body)
		shell := slices.ContainsFunc(appShells, func(m []byte) bool { return bytes.Contains(lower, m) })
		assert.True(t, shell || visibleText(lower, enoughText) < enoughText,
			"%s: rendered, with no app shell's mark and enough text", filepath.Base(f))
	}
	t.Logf("render_needless_share %.3f (%d of %d pages)", float64(rendered)/float64(len(files)), rendered, len(files))
}
