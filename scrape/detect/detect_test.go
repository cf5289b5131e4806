package detect

import (
	"strings"
	"testing"

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
