package service_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/test/polltest"
)

// pyDocs is Debian's python3.11-doc (a real site nobody here wrote; `make
// test` installs it), served on loopback. It counts requests per path.
const pyDocsDir = "/usr/share/doc/python3.11/html"

func servePyDocs(t *testing.T) (string, func(string) int) {
	if _, err := os.Stat(filepath.Join(pyDocsDir, "index.html")); err != nil {
		t.Skip("python3.11-doc is not installed (make test installs it)")
	}
	var mu sync.Mutex
	hits := map[string]int{}
	fs := http.FileServer(http.Dir(pyDocsDir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		fs.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func(p string) int {
		mu.Lock()
		defer mu.Unlock()
		return hits[p]
	}
}

// pyDocsGolden holds the SHA-256 of every crawled page's Markdown (the
// site's address replaced by pyDocsHost), one "path hash" per line, as the
// crawl gave them when the golden was last written on purpose:
// TRAWLER_UPDATE_GOLDEN=1 rewrites it. TRAWLER_PYDOCS_DUMP=dir writes each
// page's Markdown under dir, to compare two versions by hand.
const (
	pyDocsGolden = "testdata/pydocs-markdown.sha256"
	pyDocsHost   = "http://pydocs.test"
)

// TestCrawlPythonDocsWhole crawls the whole documentation: every HTML page
// reachable from the index once, none failed, each with its Markdown, and
// that Markdown equal, page for page, to the golden's.
func TestCrawlPythonDocsWhole(t *testing.T) {
	base, hits := servePyDocs(t)
	ts := crawlService(t, nil)
	polltest.Until(t, 30*time.Second, "the warm browser", func() bool { return ts.Pool.Stats().Idle == 1 })
	id, st, docs := ts.runJob("/v2/crawl", keyAcme, map[string]any{"url": base + "/", "limit": 2000})
	require.Equal(t, "completed", st["status"], "status %v", st)
	var pages int
	filepath.Walk(pyDocsDir, func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(p, ".html") && !strings.Contains(p, "/_") {
			pages++
		}
		return nil
	})
	// Every page but the few that nothing links to (search, genindex parts).
	if len(docs) < pages*95/100 {
		t.Errorf("crawled %d documents of %d pages", len(docs), pages)
	}
	errs := ts.do("GET", "/v2/crawl/"+id+"/errors", keyAcme, nil)
	if list, _ := errs.Body["errors"].([]any); len(list) != 0 {
		t.Errorf("%d pages failed: %v", len(list), list[0])
	}
	seen := map[string]bool{}
	sums := map[string]string{}
	dump := os.Getenv("TRAWLER_PYDOCS_DUMP")
	for _, d := range docs {
		md := d["metadata"].(map[string]any)
		u := md["url"].(string)
		assert.False(t, seen[u], "%s twice", u)
		seen[u] = true
		path := strings.TrimPrefix(u, base)
		assert.Equal(t, 1, hits(path), "times %s was fetched", path)
		_, missing := os.Stat(filepath.Join(pyDocsDir, filepath.FromSlash(path)))
		switch {
		case strings.HasSuffix(path, "/"):
		case missing != nil && md["statusCode"].(float64) == 404:
			continue // a dead link of the documentation (whatsnew/changelog.html), reported as such
		case missing != nil:
			t.Errorf("%s: not on disk but answered %v", u, md["statusCode"])
		}
		if md["statusCode"].(float64) != 200 || strings.TrimSpace(d["markdown"].(string)) == "" {
			t.Errorf("%s: status %v, %d bytes of markdown", u, md["statusCode"], len(d["markdown"].(string)))
		}
		markdown := strings.ReplaceAll(d["markdown"].(string), base, pyDocsHost)
		sum := sha256.Sum256([]byte(markdown))
		sums[path] = hex.EncodeToString(sum[:])
		if dump != "" {
			name := filepath.Join(dump, filepath.FromSlash(strings.TrimSuffix(path, "/")+"/index.md"))
			if !strings.HasSuffix(path, "/") {
				name = filepath.Join(dump, filepath.FromSlash(path)+".md")
			}
			require.NoError(t, os.MkdirAll(filepath.Dir(name), 0o755))
			require.NoError(t, os.WriteFile(name, []byte(markdown), 0o644))
		}
	}
	t.Logf("%d documents of %d pages", len(docs), pages)
	// The lanes held places in the pool, and started no browser for pages
	// that needed none: the warm one is all there is.
	assert.Equal(t, 1, ts.Pool.Stats().Total, "browsers after a crawl of server-rendered pages: %+v", ts.Pool.Stats())
	if os.Getenv("TRAWLER_UPDATE_GOLDEN") != "" {
		var b strings.Builder
		for _, p := range slices.Sorted(maps.Keys(sums)) {
			fmt.Fprintf(&b, "%s %s\n", p, sums[p])
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(pyDocsGolden), 0o755))
		require.NoError(t, os.WriteFile(pyDocsGolden, []byte(b.String()), 0o644))
		t.Logf("wrote %s", pyDocsGolden)
		return
	}
	want := readGolden(t)
	var differ, missing []string
	for p, sum := range want {
		switch got, ok := sums[p]; {
		case !ok:
			missing = append(missing, p)
		case got != sum:
			differ = append(differ, p)
		}
	}
	for p := range sums {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: crawled, not in the golden", p)
		}
	}
	slices.Sort(differ)
	slices.Sort(missing)
	assert.Empty(t, missing, "pages of the golden not crawled")
	assert.Empty(t, differ, "pages whose Markdown differs from the golden (TRAWLER_PYDOCS_DUMP=dir writes them)")
}

// readGolden reads pyDocsGolden: path → SHA-256 of its Markdown.
func readGolden(t *testing.T) map[string]string {
	f, err := os.Open(pyDocsGolden)
	require.NoError(t, err)
	defer f.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p, sum, ok := strings.Cut(sc.Text(), " ")
		require.True(t, ok, "golden line %q", sc.Text())
		want[p] = sum
	}
	require.NoError(t, sc.Err())
	return want
}

// TestNoRenderPathMatchesRendered: on the static pages of a real site, the
// Markdown of the page taken without rendering equals the rendered page's.
func TestNoRenderPathMatchesRendered(t *testing.T) {
	base, _ := servePyDocs(t)
	ts := crawlService(t, nil)
	var urls []string
	for _, p := range []string{"tutorial/controlflow.html", "library/functions.html", "library/os.path.html", "reference/datamodel.html",
		"howto/logging.html", "library/json.html", "glossary.html", "library/itertools.html", "faq/programming.html", "tutorial/classes.html"} {
		urls = append(urls, base+"/"+p)
	}
	markdown := func(extra map[string]any) map[string]map[string]any {
		body := map[string]any{"urls": urls, "maxAge": 0, "storeInCache": false}
		for k, v := range extra {
			body[k] = v
		}
		_, st, docs := ts.runJob("/v2/batch/scrape", keyAcme, body)
		if st["status"] != "completed" || len(docs) != len(urls) {
			t.Fatalf("batch: %v, %d documents", st["status"], len(docs))
		}
		out := map[string]map[string]any{}
		for _, d := range docs {
			out[d["metadata"].(map[string]any)["sourceURL"].(string)] = d
		}
		return out
	}
	fast := markdown(nil)
	rendered := markdown(map[string]any{"waitFor": 1})
	for _, u := range urls {
		f, r := fast[u], rendered[u]
		assert.Equal(t, "fetch", f["metadata"].(map[string]any)["engine"], "%s: default engine", u)
		assert.Equal(t, "browser-render", r["metadata"].(map[string]any)["engine"], "%s: waitFor engine", u)
		if f["markdown"] != r["markdown"] {
			fm, rm := f["markdown"].(string), r["markdown"].(string)
			i := 0
			for i < len(fm) && i < len(rm) && fm[i] == rm[i] {
				i++
			}
			t.Errorf("%s: markdown differs at byte %d:\nno render: %q\nrendered:  %q", u, i, around(fm, i), around(rm, i))
		}
	}
}

func around(s string, i int) string {
	lo, hi := max(0, i-80), min(len(s), i+80)
	return s[lo:hi]
}
