package discover

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// robotsServer serves body with status at /robots.txt and records the
// User-Agent it was asked with.
func robotsServer(t *testing.T, status int, body string) (*httptest.Server, *atomic.Value) {
	t.Helper()
	var ua atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		ua.Store(r.Header.Get("User-Agent"))
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &ua
}

const botUA = "Mozilla/5.0 (compatible; TrawlerBot/1.0; +https://trawler.dev/bot)"

func TestFetchRobots(t *testing.T) {
	t.Parallel()
	const file = `# comments are ignored
Sitemap: /sitemap-pages.xml
User-agent: *
Disallow: /private/
Allow: /private/public/
Disallow: /*.json$
Disallow: /search?
Crawl-delay: 2

User-agent: TrawlerBot
Disallow: /no-trawler/
Crawl-delay: 0.5

User-agent: OtherBot
Disallow: /

Sitemap: https://cdn.example.org/sitemap.xml.gz
`
	type check struct {
		path    string
		allowed bool
	}
	tests := []struct {
		name         string
		status       int
		body         string
		ua           string
		checks       []check
		wantDelay    time.Duration
		wantSitemaps []string // relative ones are against the server
		wantErr      string   // Robots.Err, "" for none
	}{
		{
			name: "star group: disallow, longer allow wins, wildcards, query",
			body: file, status: 200, ua: "SomeCrawler/2.0",
			checks: []check{
				{"/", true},
				{"/private/", false},
				{"/private/x", false},
				{"/private/public/x", true},
				{"/data.json", false},
				{"/data.json?x=1", true},
				{"/search?q=1", false},
				{"/search", true},
				{"/no-trawler/", true},
			},
			wantDelay:    2 * time.Second,
			wantSitemaps: []string{"/sitemap-pages.xml", "https://cdn.example.org/sitemap.xml.gz"},
		},
		{
			name: "own group is chosen from a browser-like user agent",
			body: file, status: 200, ua: botUA,
			checks: []check{
				{"/no-trawler/page", false},
				{"/private/x", true}, // only the most specific group applies
			},
			wantDelay: 500 * time.Millisecond,
		},
		{
			name: "group name matches case-insensitively",
			body: file, status: 200, ua: "otherbot",
			checks: []check{{"/", false}, {"/anything", false}},
		},
		{
			name: "no star group and no own group allows all",
			body: "User-agent: OtherBot\nDisallow: /\n", status: 200, ua: botUA,
			checks: []check{{"/", true}},
		},
		{
			name: "disallow all",
			body: "User-agent: *\nDisallow: /\n", status: 200, ua: botUA,
			checks: []check{{"/", false}, {"/a", false}},
		},
		{
			name: "empty disallow allows all",
			body: "User-agent: *\nDisallow:\n", status: 200, ua: botUA,
			checks: []check{{"/", true}, {"/a", true}},
		},
		{
			name: "a stray rule and a bad delay cost only their lines",
			body: "Disallow: /early\nUser-agent: *\nCrawl-delay: soon\nDisallow: /late\n", status: 200, ua: botUA,
			checks: []check{{"/early", true}, {"/late", false}},
		},
		{
			name: "non-ASCII rule matches the encoded URL",
			body: "User-agent: *\nDisallow: /café/\n", status: 200, ua: botUA,
			checks: []check{{"/caf%C3%A9/menu", false}, {"/cafe/menu", true}},
		},
		{
			name: "CRLF line ends",
			body: "User-agent: *\r\nDisallow: /a\r\n", status: 200, ua: botUA,
			checks: []check{{"/a", false}, {"/b", true}},
		},
		{
			name: "404 allows all", status: 404, body: "User-agent: *\nDisallow: /\n", ua: botUA,
			checks: []check{{"/", true}, {"/private/", true}},
		},
		{
			name: "403 allows all", status: 403, body: "forbidden", ua: botUA,
			checks: []check{{"/x", true}},
		},
		{
			name: "500 allows all and is recorded", status: 500, body: "User-agent: *\nDisallow: /\n", ua: botUA,
			checks:  []check{{"/", true}},
			wantErr: "HTTP 500",
		},
		{
			name: "503 names the status", status: 503, body: "", ua: botUA,
			wantErr: "HTTP 503",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, gotUA := robotsServer(t, tc.status, tc.body)
			site := mustParse(t, srv.URL+"/some/page")
			r := FetchRobots(context.Background(), srv.Client(), site, tc.ua)
			if r == nil {
				t.Fatal("FetchRobots returned nil")
			}
			if ua, _ := gotUA.Load().(string); ua != tc.ua {
				t.Errorf("server saw User-Agent %q, want %q", ua, tc.ua)
			}
			if tc.wantErr == "" && r.Err != "" {
				t.Errorf("Err = %q, want none", r.Err)
			}
			if tc.wantErr != "" && r.Err != tc.wantErr {
				t.Errorf("Err = %q, want %q", r.Err, tc.wantErr)
			}
			for _, c := range tc.checks {
				if got := r.Allowed(mustParse(t, srv.URL+c.path)); got != c.allowed {
					t.Errorf("Allowed(%s) = %v, want %v", c.path, got, c.allowed)
				}
			}
			if got := r.CrawlDelay(); got != tc.wantDelay {
				t.Errorf("CrawlDelay() = %v, want %v", got, tc.wantDelay)
			}
			if tc.wantSitemaps != nil {
				var want []string
				for _, s := range tc.wantSitemaps {
					if strings.HasPrefix(s, "/") {
						s = srv.URL + s
					}
					want = append(want, s)
				}
				if got := r.Sitemaps(); !slices.Equal(got, want) {
					t.Errorf("Sitemaps() = %q, want %q", got, want)
				}
			}
		})
	}
}

func TestFetchRobotsNetworkError(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	site := mustParse(t, srv.URL)
	srv.Close() // nothing listens there any more

	r := FetchRobots(context.Background(), srv.Client(), site, botUA)
	if r == nil || r.Err == "" {
		t.Fatalf("FetchRobots = %+v, want a Robots with Err set", r)
	}
	if !r.Allowed(mustParse(t, srv.URL+"/x")) {
		t.Error("an unreachable robots.txt must allow all")
	}
}

func TestFetchRobotsTruncatesLargeBodies(t *testing.T) {
	t.Parallel()
	// A rule past the 500 KiB mark must not count.
	body := "User-agent: *\nDisallow: /early\n" + strings.Repeat("# padding\n", 60<<10) + "Disallow: /late\n"
	srv, _ := robotsServer(t, 200, body)
	r := FetchRobots(context.Background(), srv.Client(), mustParse(t, srv.URL), botUA)
	if r.Allowed(mustParse(t, srv.URL+"/early")) {
		t.Error("/early allowed, want disallowed")
	}
	if !r.Allowed(mustParse(t, srv.URL+"/late")) {
		t.Error("/late disallowed by a rule beyond 500 KiB")
	}
}

func TestNilRobotsAllowsAll(t *testing.T) {
	t.Parallel()
	var r *Robots
	if !r.Allowed(mustParse(t, "https://example.com/x")) || r.CrawlDelay() != 0 || r.Sitemaps() != nil {
		t.Error("a nil *Robots must allow everything and name nothing")
	}
}
