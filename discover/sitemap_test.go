package discover

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// sitemapFile is one response of a test site.
type sitemapFile struct {
	status int // 200 when zero
	body   string
	gzip   bool // serve the body gzipped, as a .gz file is (no Content-Encoding)
	raw    []byte
}

// sitemapSite serves files by path; "{{base}}" in a body becomes the
// server's own URL. It counts the requests each path receives.
type sitemapSite struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

func newSitemapSite(t *testing.T, files map[string]sitemapFile) *sitemapSite {
	t.Helper()
	s := &sitemapSite{hits: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.RequestURI()]++
		s.mu.Unlock()
		f, ok := files[r.URL.RequestURI()]
		if !ok {
			http.NotFound(w, r)
			return
		}
		body := f.raw
		if body == nil {
			body = []byte(strings.ReplaceAll(f.body, "{{base}}", "http://"+r.Host))
		}
		if f.gzip {
			body = gzipBytes(t, body)
			w.Header().Set("Content-Type", "application/octet-stream")
		}
		if f.status != 0 {
			w.WriteHeader(f.status)
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *sitemapSite) hitCount(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func urlset(paths ...string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for _, p := range paths {
		fmt.Fprintf(&b, "\n  <url><loc>{{base}}%s</loc></url>", p)
	}
	b.WriteString("\n</urlset>\n")
	return b.String()
}

func sitemapIndex(paths ...string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for _, p := range paths {
		fmt.Fprintf(&b, "\n  <sitemap><loc>{{base}}%s</loc></sitemap>", p)
	}
	b.WriteString("\n</sitemapindex>\n")
	return b.String()
}

func TestSitemaps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		files        map[string]sitemapFile
		extra        []string // paths on the site, or absolute URLs
		robots       string   // robots.txt body applied to the fetches, "" for none
		limit        int
		want         []string // paths on the site
		wantWarnings []string // substrings, one per warning, in order; "{{base}}" is the site
		wantHits     map[string]int
	}{
		{
			name: "urlset with namespace",
			files: map[string]sitemapFile{
				"/sitemap.xml": {body: urlset("/", "/a", "/b?x=1&amp;y=2")},
			},
			want: []string{"/", "/a", "/b?x=1&y=2"},
		},
		{
			name: "urlset without namespace, with a prefix, with CDATA and whitespace",
			files: map[string]sitemapFile{
				"/sitemap.xml": {body: `<urlset><url><loc>
					{{base}}/plain
				</loc></url></urlset>`},
				"/prefixed.xml": {body: `<?xml version="1.0"?><sm:urlset xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9"><sm:url><sm:loc><![CDATA[{{base}}/prefixed]]></sm:loc></sm:url></sm:urlset>`},
			},
			extra: []string{"/prefixed.xml"},
			want:  []string{"/plain", "/prefixed"},
		},
		{
			name: "bare ampersands in a hand-made sitemap",
			files: map[string]sitemapFile{
				"/sitemap.xml": {body: `<urlset><url><loc>{{base}}/s?a=1&b=2</loc></url></urlset>`},
			},
			want: []string{"/s?a=1&b=2"},
		},
		{
			name: "declared Latin-1 encoding",
			files: map[string]sitemapFile{
				"/sitemap.xml": {body: "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><urlset><url><loc>{{base}}/caf\xe9</loc></url></urlset>"},
			},
			want: []string{"/caf%C3%A9"},
		},
		{
			name: "index with two children",
			files: map[string]sitemapFile{
				"/sitemap.xml": {body: sitemapIndex("/pages.xml", "/posts.xml")},
				"/pages.xml":   {body: urlset("/about", "/contact")},
				"/posts.xml":   {body: urlset("/post/1", "/post/2")},
			},
			want: []string{"/about", "/contact", "/post/1", "/post/2"},
		},
		{
			name: "gzip children, recognised by content not name",
			files: map[string]sitemapFile{
				"/sitemap.xml":       {body: sitemapIndex("/pages.xml.gz", "/misnamed.xml")},
				"/pages.xml.gz":      {body: urlset("/gz/1", "/gz/2"), gzip: true},
				"/misnamed.xml":      {body: urlset("/gz/3"), gzip: true},
				"/never-fetched.xml": {body: urlset("/nope")},
			},
			want: []string{"/gz/1", "/gz/2", "/gz/3"},
		},
		{
			name: "gzipped text sitemap",
			files: map[string]sitemapFile{
				"/sitemap.xml": {body: "{{base}}/t/1\n{{base}}/t/2\n", gzip: true},
			},
			want: []string{"/t/1", "/t/2"},
		},
		{
			name: "plain-text sitemap",
			files: map[string]sitemapFile{
				"/sitemap.txt": {body: "\ufeff{{base}}/one\r\n\n  {{base}}/two  \nnot a url\nftp://example.com/x\n{{base}}/three"},
			},
			extra: []string{"/sitemap.txt"},
			want:  []string{"/one", "/two", "/three"},
		},
		{
			name: "limit honoured across sitemaps",
			files: map[string]sitemapFile{
				"/sitemap.xml": {body: sitemapIndex("/a.xml", "/b.xml")},
				"/a.xml":       {body: urlset("/1", "/2")},
				"/b.xml":       {body: urlset("/3", "/4", "/5")},
			},
			limit:    3,
			want:     []string{"/1", "/2", "/3"},
			wantHits: map[string]int{"/b.xml": 1},
		},
		{
			name: "limit reached stops fetching",
			files: map[string]sitemapFile{
				"/sitemap.xml": {body: sitemapIndex("/a.xml", "/b.xml")},
				"/a.xml":       {body: urlset("/1", "/2")},
				"/b.xml":       {body: urlset("/3")},
			},
			limit:    2,
			want:     []string{"/1", "/2"},
			wantHits: map[string]int{"/b.xml": 0},
		},
		{
			name: "exact duplicates returned once",
			files: map[string]sitemapFile{
				"/sitemap.xml": {body: sitemapIndex("/a.xml", "/b.xml")},
				"/a.xml":       {body: urlset("/x", "/y", "/x")},
				"/b.xml":       {body: urlset("/y", "/z")},
			},
			want: []string{"/x", "/y", "/z"},
		},
		{
			name: "index loop terminates, each sitemap fetched once",
			files: map[string]sitemapFile{
				"/sitemap.xml": {body: sitemapIndex("/a.xml")},
				"/a.xml":       {body: sitemapIndex("/b.xml", "/leaf-a.xml")},
				"/b.xml":       {body: sitemapIndex("/a.xml", "/sitemap.xml", "/leaf-b.xml")},
				"/leaf-a.xml":  {body: urlset("/from-a")},
				"/leaf-b.xml":  {body: urlset("/from-b")},
			},
			want:     []string{"/from-a", "/from-b"},
			wantHits: map[string]int{"/sitemap.xml": 1, "/a.xml": 1, "/b.xml": 1},
		},
		{
			name: "nesting deeper than four levels is not followed",
			files: map[string]sitemapFile{
				"/sitemap.xml": {body: sitemapIndex("/2.xml")},
				"/2.xml":       {body: sitemapIndex("/3.xml")},
				"/3.xml":       {body: sitemapIndex("/4.xml", "/leaf4.xml")},
				"/4.xml":       {body: sitemapIndex("/5.xml")},
				"/leaf4.xml":   {body: urlset("/deep")},
				"/5.xml":       {body: urlset("/too-deep")},
			},
			want:         []string{"/deep"},
			wantWarnings: []string{"sitemap {{base}}/5.xml: nested more than 4 levels deep"},
			wantHits:     map[string]int{"/5.xml": 0},
		},
		{
			name: "5xx child warns, the rest is returned",
			files: map[string]sitemapFile{
				"/sitemap.xml": {body: sitemapIndex("/bad.xml", "/good.xml")},
				"/bad.xml":     {status: 500, body: "oops"},
				"/good.xml":    {body: urlset("/ok")},
			},
			want:         []string{"/ok"},
			wantWarnings: []string{"sitemap {{base}}/bad.xml: HTTP 500"},
		},
		{
			name: "malformed child keeps what came before the error",
			files: map[string]sitemapFile{
				"/sitemap.xml": {body: sitemapIndex("/broken.xml", "/good.xml")},
				"/broken.xml":  {body: "<urlset><url><loc>{{base}}/before</loc></url><url><loc>{{base}}/x</loc>\x00</url></urlset>"},
				"/good.xml":    {body: urlset("/after")},
			},
			want:         []string{"/before", "/after"},
			wantWarnings: []string{"sitemap {{base}}/broken.xml: malformed XML"},
		},
		{
			name: "missing default sitemap is not worth a warning",
			files: map[string]sitemapFile{
				"/from-robots.xml": {body: urlset("/r")},
			},
			extra: []string{"/from-robots.xml"},
			want:  []string{"/r"},
		},
		{
			name: "missing named sitemap is",
			files: map[string]sitemapFile{
				"/sitemap.xml": {body: urlset("/s")},
			},
			extra:        []string{"/gone.xml", "/sitemap.xml"},
			want:         []string{"/s"},
			wantWarnings: []string{"sitemap {{base}}/gone.xml: HTTP 404"},
		},
		{
			name: "missing default sitemap named in robots.txt is",
			files: map[string]sitemapFile{
				"/other.xml": {body: urlset("/o")},
			},
			extra:        []string{"/other.xml", "/sitemap.xml"},
			want:         []string{"/o"},
			wantWarnings: []string{"sitemap {{base}}/sitemap.xml: HTTP 404"},
		},
		{
			name: "an HTML page named as a sitemap",
			files: map[string]sitemapFile{
				"/sitemap.xml": {body: "<!doctype html><html><body>Not found</body></html>"},
				"/page.html":   {body: "<html><body>hi</body></html>"},
			},
			extra:        []string{"/page.html"},
			wantWarnings: []string{"sitemap {{base}}/page.html: not a sitemap (root element <html>)"},
		},
		{
			name: "robots.txt is honoured for sitemap fetches",
			files: map[string]sitemapFile{
				"/sitemap.xml":        {body: sitemapIndex("/private/secret.xml", "/public.xml")},
				"/private/secret.xml": {body: urlset("/secret")},
				"/public.xml":         {body: urlset("/public")},
			},
			robots:       "User-agent: *\nDisallow: /private/\n",
			want:         []string{"/public"},
			wantWarnings: []string{"sitemap {{base}}/private/secret.xml: disallowed by robots.txt"},
			wantHits:     map[string]int{"/private/secret.xml": 0},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			site := newSitemapSite(t, tc.files)
			var extra []string
			for _, e := range tc.extra {
				if strings.HasPrefix(e, "/") {
					e = site.URL + e
				}
				extra = append(extra, e)
			}
			var robots *Robots
			if tc.robots != "" {
				robots = ParseRobots([]byte(tc.robots), site.URL+"/robots.txt", botUA)
			}

			got, warnings := Sitemaps(context.Background(), site.Client(), mustParse(t, site.URL+"/start"), extra, robots, botUA, tc.limit)

			var paths []string
			for _, u := range got {
				paths = append(paths, strings.TrimPrefix(u.URL, site.URL))
			}
			if !slices.Equal(paths, tc.want) {
				t.Errorf("URLs = %q, want %q", paths, tc.want)
			}
			if len(warnings) != len(tc.wantWarnings) {
				t.Errorf("warnings = %q, want %d", warnings, len(tc.wantWarnings))
			} else {
				for i, w := range tc.wantWarnings {
					w = strings.ReplaceAll(w, "{{base}}", site.URL)
					if !strings.Contains(warnings[i], w) {
						t.Errorf("warning %d = %q, want it to contain %q", i, warnings[i], w)
					}
				}
			}
			for path, n := range tc.wantHits {
				if got := site.hitCount(path); got != n {
					t.Errorf("%s fetched %d times, want %d", path, got, n)
				}
			}
		})
	}
}

func TestSitemapsLastModAndUserAgent(t *testing.T) {
	t.Parallel()
	var gotUA string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gotUA = r.Header.Get("User-Agent")
		mu.Unlock()
		fmt.Fprintf(w, `<urlset>
			<url><loc>http://%[1]s/day</loc><lastmod>2024-05-01</lastmod></url>
			<url><loc>http://%[1]s/zoned</loc><lastmod>2024-05-01T10:30:00+02:00</lastmod></url>
			<url><loc>http://%[1]s/junk</loc><lastmod>yesterday</lastmod></url>
		</urlset>`, r.Host)
	}))
	defer srv.Close()

	got, warnings := Sitemaps(context.Background(), srv.Client(), mustParse(t, srv.URL), nil, nil, botUA, 0)
	if len(warnings) != 0 {
		t.Errorf("warnings: %q", warnings)
	}
	want := []time.Time{
		time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2024, 5, 1, 8, 30, 0, 0, time.UTC),
		{},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d URLs, want %d", len(got), len(want))
	}
	for i := range want {
		if !got[i].LastMod.Equal(want[i]) {
			t.Errorf("%s: LastMod = %v, want %v", got[i].URL, got[i].LastMod, want[i])
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if gotUA != botUA {
		t.Errorf("User-Agent = %q, want %q", gotUA, botUA)
	}
}

// TestSitemapsGzipBomb serves 200 MiB of zeros compressed to a few hundred
// kilobytes. Reading must stop at the 50 MiB cap, hold next to nothing in
// memory, and still return the other sitemaps' URLs. It is not parallel so
// that the allocation count is its own.
func TestSitemapsGzipBomb(t *testing.T) {
	// Concatenated gzip members decompress to the concatenation of their
	// contents, so one compressed MiB repeated makes the bomb cheaply.
	member := gzipBytes(t, make([]byte, 1<<20))
	bomb := bytes.Repeat(member, 200)
	site := newSitemapSite(t, map[string]sitemapFile{
		"/sitemap.xml": {raw: bomb},
		"/good.xml":    {body: urlset("/survivor")},
	})

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got, warnings := Sitemaps(context.Background(), site.Client(), mustParse(t, site.URL), []string{site.URL + "/good.xml"}, nil, botUA, 0)
	runtime.ReadMemStats(&after)

	if len(got) != 1 || got[0].URL != site.URL+"/survivor" {
		t.Errorf("URLs = %+v, want only /survivor", got)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "larger than 50 MiB") {
		t.Errorf("warnings = %q, want one about the 50 MiB cap", warnings)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("reading the bomb allocated %d MiB", alloc>>20)
	}
}

func TestCappedReader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		size    int
		wantErr error
	}{
		{"under the cap", 9, nil},
		{"exactly at the cap", 10, nil},
		{"one byte over", 11, errTooLarge},
		{"far over", 1000, errTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &cappedReader{r: bytes.NewReader(make([]byte, tc.size)), left: 10}
			n, err := io.Copy(io.Discard, r)
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
			if want := min(int64(tc.size), 10); n != want {
				t.Errorf("read %d bytes, want %d", n, want)
			}
		})
	}
}

func TestSitemapsCancelled(t *testing.T) {
	t.Parallel()
	site := newSitemapSite(t, map[string]sitemapFile{"/sitemap.xml": {body: urlset("/a")}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got, warnings := Sitemaps(ctx, site.Client(), mustParse(t, site.URL), nil, nil, botUA, 0)
	if len(got) != 0 {
		t.Errorf("URLs = %+v, want none", got)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "context canceled") {
		t.Errorf("warnings = %q, want one saying the context was cancelled", warnings)
	}
}
