package discover

import (
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mustParse(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatalf("parsing %q: %v", s, err)
	}
	return u
}

func TestAllowed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		opts       RulesOptions
		url        string
		wantOK     bool
		wantReason string
	}{
		// path scope, start "/docs/"
		{"dir start: itself", RulesOptions{Start: "https://example.com/docs/"}, "https://example.com/docs/", true, ""},
		{"dir start: child", RulesOptions{Start: "https://example.com/docs/"}, "https://example.com/docs/guide/a", true, ""},
		{"dir start: without slash", RulesOptions{Start: "https://example.com/docs/"}, "https://example.com/docs", true, ""},
		{"dir start: sibling", RulesOptions{Start: "https://example.com/docs/"}, "https://example.com/blog/", false, "outside the start path"},
		{"dir start: parent", RulesOptions{Start: "https://example.com/docs/"}, "https://example.com/", false, "outside the start path"},
		{"dir start: prefix of a word is not a child", RulesOptions{Start: "https://example.com/docs/"}, "https://example.com/docsearch", false, "outside the start path"},
		{"dir start: entire domain admits sibling", RulesOptions{Start: "https://example.com/docs/", CrawlEntireDomain: true}, "https://example.com/blog/", true, ""},
		{"dir start: entire domain admits parent", RulesOptions{Start: "https://example.com/docs/", CrawlEntireDomain: true}, "https://example.com/", true, ""},

		// path scope, start "/docs"
		{"bare start: child", RulesOptions{Start: "https://example.com/docs"}, "https://example.com/docs/intro", true, ""},
		{"bare start: itself", RulesOptions{Start: "https://example.com/docs"}, "https://example.com/docs", true, ""},
		{"bare start: longer word", RulesOptions{Start: "https://example.com/docs"}, "https://example.com/docs-old/x", false, "outside the start path"},
		{"bare start: sibling", RulesOptions{Start: "https://example.com/docs"}, "https://example.com/api", false, "outside the start path"},
		{"bare start: entire domain", RulesOptions{Start: "https://example.com/docs", CrawlEntireDomain: true}, "https://example.com/api", true, ""},

		// path scope, start "/docs/intro.html"
		{"file start: sibling file", RulesOptions{Start: "https://example.com/docs/intro.html"}, "https://example.com/docs/setup.html", true, ""},
		{"file start: nested", RulesOptions{Start: "https://example.com/docs/intro.html"}, "https://example.com/docs/api/x.html", true, ""},
		{"file start: outside directory", RulesOptions{Start: "https://example.com/docs/intro.html"}, "https://example.com/about.html", false, "outside the start path"},
		{"file start: entire domain", RulesOptions{Start: "https://example.com/docs/intro.html", CrawlEntireDomain: true}, "https://example.com/about.html", true, ""},

		// scheme
		{"ftp", RulesOptions{Start: "https://example.com/"}, "ftp://example.com/file", false, "unsupported scheme (ftp)"},
		{"http start admits https", RulesOptions{Start: "http://example.com/"}, "https://example.com/a", true, ""},
		{"credentials", RulesOptions{Start: "https://example.com/"}, "https://user:pass@example.com/a", false, "carries credentials (user:pass@)"},

		// hosts
		{"www equals bare", RulesOptions{Start: "https://example.com/"}, "https://www.example.com/a", true, ""},
		{"bare equals www", RulesOptions{Start: "https://www.example.com/"}, "https://example.com/a", true, ""},
		{"host case", RulesOptions{Start: "https://example.com/"}, "https://EXAMPLE.com/a", true, ""},
		{"other port is another site", RulesOptions{Start: "http://example.com/"}, "http://example.com:8080/a", false, "external host"},
		{"subdomain without option", RulesOptions{Start: "https://example.com/"}, "https://blog.example.com/", false, "external host"},
		{"subdomain with option", RulesOptions{Start: "https://example.com/", AllowSubdomains: true}, "https://blog.example.com/", true, ""},
		{"parent domain with option", RulesOptions{Start: "https://docs.example.com/", AllowSubdomains: true}, "https://example.com/", true, ""},
		{"other domain with subdomain option", RulesOptions{Start: "https://example.com/", AllowSubdomains: true}, "https://example.org/", false, "external host"},
		{"lookalike domain with subdomain option", RulesOptions{Start: "https://example.com/", AllowSubdomains: true}, "https://badexample.com/", false, "external host"},
		{"public suffix: sibling subdomains", RulesOptions{Start: "https://a.example.co.uk/", AllowSubdomains: true}, "https://b.example.co.uk/", true, ""},
		{"public suffix: other registrant", RulesOptions{Start: "https://a.example.co.uk/", AllowSubdomains: true}, "https://other.co.uk/", false, "external host"},
		{"private suffix: github.io users are unrelated", RulesOptions{Start: "https://alice.github.io/", AllowSubdomains: true}, "https://bob.github.io/", false, "external host"},
		{"subdomain stays in start path", RulesOptions{Start: "https://example.com/docs/", AllowSubdomains: true}, "https://blog.example.com/post", false, "outside the start path"},
		{"IP addresses have no shared domain", RulesOptions{Start: "http://127.0.0.1:8080/", AllowSubdomains: true}, "http://10.0.0.1:8080/", false, "external host"},
		{"loopback start, same port", RulesOptions{Start: "http://127.0.0.1:8080/"}, "http://127.0.0.1:8080/x", true, ""},
		{"external without option", RulesOptions{Start: "https://example.com/"}, "https://other.org/", false, "external host"},
		{"external with option", RulesOptions{Start: "https://example.com/docs/", AllowExternalLinks: true}, "https://other.org/anything", true, ""},
		{"external option keeps own host in path", RulesOptions{Start: "https://example.com/docs/", AllowExternalLinks: true}, "https://example.com/blog", false, "outside the start path"},
		{"external still skips assets", RulesOptions{Start: "https://example.com/", AllowExternalLinks: true}, "https://cdn.other.org/logo.png", false, "not a page (.png)"},

		// assets
		{"png skipped", RulesOptions{Start: "https://example.com/"}, "https://example.com/img/logo.png", false, "not a page (.png)"},
		{"PNG skipped", RulesOptions{Start: "https://example.com/"}, "https://example.com/img/LOGO.PNG", false, "not a page (.png)"},
		{"css skipped", RulesOptions{Start: "https://example.com/"}, "https://example.com/site.css?v=3", false, "not a page (.css)"},
		{"zip skipped", RulesOptions{Start: "https://example.com/"}, "https://example.com/dl/src.zip", false, "not a page (.zip)"},
		{"pdf is a page", RulesOptions{Start: "https://example.com/"}, "https://example.com/paper.pdf", true, ""},
		{"docx is a page", RulesOptions{Start: "https://example.com/"}, "https://example.com/a.docx", true, ""},
		{"xlsx is a page", RulesOptions{Start: "https://example.com/"}, "https://example.com/a.xlsx", true, ""},
		{"html is a page", RulesOptions{Start: "https://example.com/"}, "https://example.com/a.html", true, ""},
		{"dot in a directory name", RulesOptions{Start: "https://example.com/"}, "https://example.com/v1.png/readme", true, ""},

		// include and exclude
		{"exclude wins over include", RulesOptions{Start: "https://example.com/", IncludePaths: []string{"^/blog/"}, ExcludePaths: []string{"/drafts/"}}, "https://example.com/blog/drafts/x", false, "excluded by excludePaths[0]"},
		{"first exclude named", RulesOptions{Start: "https://example.com/", ExcludePaths: []string{"^/a/", "^/b/", "/b/c"}}, "https://example.com/b/c", false, "excluded by excludePaths[1]"},
		{"include matches", RulesOptions{Start: "https://example.com/", IncludePaths: []string{"^/blog/", "^/news/"}}, "https://example.com/news/1", true, ""},
		{"include misses", RulesOptions{Start: "https://example.com/", IncludePaths: []string{"^/blog/"}}, "https://example.com/about", false, "not matched by includePaths"},
		{"include applies to the start URL", RulesOptions{Start: "https://example.com/", IncludePaths: []string{"^/blog/"}}, "https://example.com/", false, "not matched by includePaths"},
		{"pattern sees the path, not the query", RulesOptions{Start: "https://example.com/", ExcludePaths: []string{"page=2"}}, "https://example.com/list?page=2", true, ""},
		{"regexOnFullURL sees the query", RulesOptions{Start: "https://example.com/", ExcludePaths: []string{`[?&]page=2`}, RegexOnFullURL: true}, "https://example.com/list?page=2", false, "excluded by excludePaths[0]"},
		{"regexOnFullURL sees the host", RulesOptions{Start: "https://example.com/", IncludePaths: []string{`^https://example\.com/blog`}, RegexOnFullURL: true}, "https://example.com/blog/1", true, ""},
		{"regexOnFullURL include misses", RulesOptions{Start: "https://example.com/", IncludePaths: []string{`^https://example\.com/blog`}, RegexOnFullURL: true}, "https://example.com/shop", false, "not matched by includePaths"},
		{"pattern on decoded path", RulesOptions{Start: "https://example.com/", IncludePaths: []string{"^/café/"}}, "https://example.com/caf%C3%A9/menu", true, ""},
		{"pattern on encoded path", RulesOptions{Start: "https://example.com/", IncludePaths: []string{"^/caf%C3%A9/"}}, "https://example.com/café/menu", true, ""},
		{"scope before patterns", RulesOptions{Start: "https://example.com/docs/", IncludePaths: []string{".*"}}, "https://example.com/blog", false, "outside the start path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := NewRules(tc.opts)
			if err != nil {
				t.Fatalf("NewRules: %v", err)
			}
			ok, reason := r.Allowed(mustParse(t, tc.url))
			if ok != tc.wantOK || reason != tc.wantReason {
				t.Errorf("Allowed(%s) = %v, %q; want %v, %q", tc.url, ok, reason, tc.wantOK, tc.wantReason)
			}
		})
	}
}

func TestNewRulesErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		opts      RulesOptions
		wantField string
		wantText  string
		wantStart bool
	}{
		{
			name:      "bad include names its index",
			opts:      RulesOptions{Start: "https://example.com/", IncludePaths: []string{"^/ok/", "(unclosed"}},
			wantField: "includePaths[1]",
			wantText:  "includePaths[1] is not a valid regular expression: error parsing regexp: missing closing ): `(unclosed`",
		},
		{
			name:      "lookahead is not RE2",
			opts:      RulesOptions{Start: "https://example.com/", ExcludePaths: []string{"^/(?!blog)"}},
			wantField: "excludePaths[0]",
			wantText:  "excludePaths[0] is not a valid regular expression: error parsing regexp: invalid or unsupported Perl syntax: `(?!`",
		},
		{name: "relative start", opts: RulesOptions{Start: "/docs"}, wantStart: true},
		{name: "ftp start", opts: RulesOptions{Start: "ftp://example.com/"}, wantStart: true},
		{name: "empty start", opts: RulesOptions{}, wantStart: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewRules(tc.opts)
			if err == nil {
				t.Fatal("NewRules succeeded")
			}
			if tc.wantStart {
				if !errors.Is(err, ErrInvalidStart) {
					t.Errorf("error %v does not wrap ErrInvalidStart", err)
				}
				return
			}
			var pe *PatternError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T %v is not a *PatternError", err, err)
			}
			if pe.Field != tc.wantField {
				t.Errorf("Field = %q, want %q", pe.Field, tc.wantField)
			}
			if err.Error() != tc.wantText {
				t.Errorf("Error() = %q\nwant      %q", err.Error(), tc.wantText)
			}
		})
	}
}

func TestKey(t *testing.T) {
	t.Parallel()
	dedupe := RulesOptions{Start: "https://example.com/", DeduplicateSimilarURLs: true}
	plain := RulesOptions{Start: "https://example.com/"}
	ignoreQuery := RulesOptions{Start: "https://example.com/", DeduplicateSimilarURLs: true, IgnoreQueryParameters: true}
	tests := []struct {
		name string
		opts RulesOptions
		a, b string
		same bool
	}{
		{"http and https", dedupe, "http://example.com/a", "https://example.com/a", true},
		{"www", dedupe, "https://www.example.com/a", "https://example.com/a", true},
		{"trailing slash", dedupe, "https://example.com/a/", "https://example.com/a", true},
		{"root with and without slash", dedupe, "https://example.com", "https://example.com/", true},
		{"index.html", dedupe, "https://example.com/docs/index.html", "https://example.com/docs/", true},
		{"index.php at root", dedupe, "https://example.com/index.php", "https://example.com/", true},
		{"Default.aspx", dedupe, "https://example.com/app/Default.aspx", "https://example.com/app", true},
		{"fragment", dedupe, "https://example.com/a#top", "https://example.com/a", true},
		{"query order", dedupe, "https://example.com/a?b=2&a=1", "https://example.com/a?a=1&b=2", true},
		{"host case and default port", dedupe, "https://EXAMPLE.com:443/a", "https://example.com/a", true},
		{"different paths", dedupe, "https://example.com/a", "https://example.com/b", false},
		{"path case matters", dedupe, "https://example.com/A", "https://example.com/a", false},
		{"different query", dedupe, "https://example.com/a?page=1", "https://example.com/a?page=2", false},
		{"query against none", dedupe, "https://example.com/a?page=1", "https://example.com/a", false},
		{"repeated parameter order kept", dedupe, "https://example.com/a?x=1&x=2", "https://example.com/a?x=2&x=1", false},
		{"other file than index", dedupe, "https://example.com/docs/intro.html", "https://example.com/docs/", false},
		{"ignoreQueryParameters", ignoreQuery, "https://example.com/a?page=1", "https://example.com/a?page=2", true},
		{"ignoreQueryParameters without dedupe", RulesOptions{Start: "https://example.com/", IgnoreQueryParameters: true}, "https://example.com/a?x=1", "https://example.com/a", true},
		{"plain: fragment", plain, "https://example.com/a#x", "https://example.com/a", true},
		{"plain: host case", plain, "https://Example.COM/a", "https://example.com/a", true},
		{"plain: query order", plain, "https://example.com/a?b=2&a=1", "https://example.com/a?a=1&b=2", true},
		{"plain: scheme matters", plain, "http://example.com/a", "https://example.com/a", false},
		{"plain: www matters", plain, "https://www.example.com/a", "https://example.com/a", false},
		{"plain: trailing slash matters", plain, "https://example.com/a/", "https://example.com/a", false},
		{"plain: index.html matters", plain, "https://example.com/index.html", "https://example.com/", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := NewRules(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			ka, kb := r.Key(mustParse(t, tc.a)), r.Key(mustParse(t, tc.b))
			if (ka == kb) != tc.same {
				t.Errorf("Key(%s) = %q, Key(%s) = %q; same = %v, want %v", tc.a, ka, tc.b, kb, ka == kb, tc.same)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	base := mustParse(t, "https://example.com/docs/guide/page.html?x=1")
	tests := []struct {
		href string
		want string // "" for ok=false
	}{
		{"other.html", "https://example.com/docs/guide/other.html"},
		{"../api/", "https://example.com/docs/api/"},
		{"/abs", "https://example.com/abs"},
		{"//cdn.example.org/x", "https://cdn.example.org/x"},
		{"?y=2", "https://example.com/docs/guide/page.html?y=2"},
		{"#section", "https://example.com/docs/guide/page.html?x=1"},
		{"other.html#frag", "https://example.com/docs/guide/other.html"},
		{"HTTP://Example.COM:80/a", "http://example.com/a"},
		{"https://example.com:443", "https://example.com/"},
		{"https://example.com:8443/a", "https://example.com:8443/a"},
		{"http://[::1]:80/a", "http://[::1]/a"},
		{"  /spaced \n", "https://example.com/spaced"},
		{"/wrap\nped", "https://example.com/wrapped"},
		{"https://bücher.example/", "https://xn--bcher-kva.example/"},
		{"mailto:a@example.com", ""},
		{"javascript:void(0)", ""},
		{"JavaScript:alert(1)", ""},
		{"data:text/html,hi", ""},
		{"tel:+123", ""},
		{"ftp://example.com/f", ""},
		{"", ""},
		{"   ", ""},
		{"http://%zz/", ""},
		{"https://user:secret@example.com/private", "https://example.com/private"},
		{"//user@cdn.example.org/x", "https://cdn.example.org/x"},
		{"http://0x7f.1/", "http://127.0.0.1/"},
		{"http://2130706433:8080/a", "http://127.0.0.1:8080/a"},
		{"http:opaque", ""},
	}
	for _, tc := range tests {
		t.Run(tc.href, func(t *testing.T) {
			t.Parallel()
			u, ok := Resolve(base, tc.href)
			switch {
			case tc.want == "" && ok:
				t.Errorf("Resolve(%q) = %s, want not ok", tc.href, u)
			case tc.want != "" && !ok:
				t.Errorf("Resolve(%q) not ok, want %s", tc.href, tc.want)
			case ok && u.String() != tc.want:
				t.Errorf("Resolve(%q) = %s, want %s", tc.href, u, tc.want)
			}
		})
	}
	if base.String() != "https://example.com/docs/guide/page.html?x=1" {
		t.Errorf("Resolve changed its base to %s", base)
	}
}

// Patterns past the budget are refused before they cost the job memory: a
// short pattern that compiles to a large program counts at its compiled
// size, and a request with thousands of them is refused on its count
// before any is compiled. (Not parallel: it reads the process's
// allocation counter.)
func TestPatternBudget(t *testing.T) {
	big := `(?i)(abc|def){999}` // 18 bytes, some nine thousand instructions
	many := make([]string, 3000)
	for i := range many {
		many[i] = big
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := NewRules(RulesOptions{Start: "https://example.com/", IncludePaths: many})
	runtime.ReadMemStats(&after)
	var le *LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "includePaths", le.Field)
	assert.Contains(t, le.Error(), "at most 1000")
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "refusing the count allocated")

	// Few, but each large: the one that takes the job past the budget is
	// named, and no more than it is compiled.
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = NewRules(RulesOptions{Start: "https://example.com/", IncludePaths: []string{"^/docs/"}, ExcludePaths: many[:100]})
	runtime.ReadMemStats(&after)
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "excludePaths[5]", le.Field)
	assert.Contains(t, le.Error(), "compile to more than 50000 instructions")
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16<<20), "refusing the compiled size allocated")

	long := strings.Repeat("a", MaxPatternBytes+1)
	_, err = NewRules(RulesOptions{Start: "https://example.com/", ExcludePaths: []string{"^/a", long}})
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "excludePaths[1]", le.Field)

	// What real crawls give is well within the budget.
	var usual []string
	for i := range 1000 {
		usual = append(usual, fmt.Sprintf("^/section-%d/[a-z0-9-]+/?$", i))
	}
	_, err = NewRules(RulesOptions{Start: "https://example.com/", IncludePaths: usual[:500], ExcludePaths: usual[500:]})
	require.NoError(t, err)
}
