package service_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/content/contenttest"
)

// TestDeepAndWidePages scrapes and uploads a page nested past the HTML
// parser's limit of 512 elements (5,000 divs) and a page with a table of
// 50,000 cells: both convert, the deep text reaches the Markdown, and the
// deep page's document carries a warning that it was flattened.
func TestDeepAndWidePages(t *testing.T) {
	t.Parallel()
	pages := map[string][]byte{"/deep.html": contenttest.NestedDivs(5000), "/wide.html": contenttest.WideTable(5000, 10)}
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	}))
	t.Cleanup(web.Close)
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true"})

	levels := make([]string, 0, 5001)
	for i := range 5000 {
		levels = append(levels, fmt.Sprintf("level %d text", i))
	}
	levels = append(levels, "after the divs")
	for _, tc := range []struct {
		name, path string
		// want are fragments the Markdown holds, in this order.
		want []string
		// inHTML is a fragment of the deepest text the HTML holds.
		inHTML string
		// warning is a fragment of the document's warning; "" for none.
		warning string
	}{
		{name: "5,000 nested divs", path: "/deep.html", want: levels, inHTML: "level 4999 text", warning: "deeper than the parser's limit of 512"},
		{name: "50,000 table cells", path: "/wide.html", want: []string{
			"| r0c0 | r0c1 |", "| r1c0 | r1c1 |", "| r4999c8 | r4999c9 |",
		}, inHTML: "<td>r4999c9</td>"},
	} {
		for _, via := range []string{"scrape", "parse"} {
			t.Run(via+" "+tc.name, func(t *testing.T) {
				var r response
				if via == "scrape" {
					r = ts.scrape(map[string]any{"url": web.URL + tc.path, "formats": []any{"markdown", "html"}})
				} else {
					r = ts.parseFile(keyAcme, upload{name: "file", filename: strings.TrimPrefix(tc.path, "/"), data: pages[tc.path]},
						options(map[string]any{"formats": []any{"markdown", "html"}}))
				}
				require.Equal(t, 200, r.Status, "%s: %.300s", via, r.Raw)
				md, _ := data(r)["markdown"].(string)
				at := 0
				for _, w := range tc.want {
					i := strings.Index(md[at:], w)
					if i < 0 {
						t.Fatalf("markdown lacks %q (in order); it ends:\n%s", w, md[max(0, len(md)-300):])
					}
					at += i + len(w)
				}
				h, _ := data(r)["html"].(string)
				assert.True(t, strings.Contains(h, tc.inHTML), "html lacks %q", tc.inHTML)
				warning, _ := data(r)["warning"].(string)
				switch {
				case tc.warning == "" && warning != "":
					t.Errorf("warning %q, want none", warning)
				case !strings.Contains(warning, tc.warning):
					t.Errorf("warning %q, want it to hold %q", warning, tc.warning)
				}
				if m := meta(r); m["title"] == nil || m["statusCode"] != float64(200) {
					t.Errorf("metadata: %v", m)
				}
			})
		}
	}
}
