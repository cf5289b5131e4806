package provider

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeEndpoint is a JSON search API on loopback answering every request
// with status and body, and keeping the requests' URLs.
type fakeEndpoint struct {
	*httptest.Server
	mu   sync.Mutex
	seen []*url.URL
}

func newFakeEndpoint(t *testing.T, status int, contentType, body string) *fakeEndpoint {
	t.Helper()
	f := &fakeEndpoint{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.seen = append(f.seen, r.URL)
		f.mu.Unlock()
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeEndpoint) got() []*url.URL {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*url.URL(nil), f.seen...)
}

// httpProvider parses "http:" + srv + rest as TRAWLER_SEARCH_PROVIDERS
// would and builds the provider.
func httpProvider(t *testing.T, f *fakeEndpoint, rest string) *HTTP {
	t.Helper()
	specs, err := ParseSpecs("http:" + f.URL + rest)
	require.NoError(t, err)
	require.Len(t, specs, 1)
	p, err := NewHTTP(specs[0], f.Client())
	require.NoError(t, err)
	return p
}

func TestHTTPSearch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		template string // after the server's URL
		body     string
		q        Query
		want     func(server string) []Result
		wantWarn []string
	}{
		{
			name:     "nested paths",
			template: "/api?q={query}&n={limit}#results=data.items&url=link&title=name&description=snippet&published=date&image=thumb.src",
			body: `{"meta": {"took": 12}, "data": {"items": [
				{"link": "https://a.example/1", "name": "One", "snippet": "first", "date": "2024-03-04T05:06:07Z", "thumb": {"src": "/t/1.jpg"}},
				{"link": "https://a.example/2", "name": "Two", "snippet": "second", "date": 1700000000, "thumb": null},
				{"link": "https://a.example/1", "name": "One again"},
				{"name": "no link"},
				{"link": "https://a.example/3", "name": "Three", "date": "last Tuesday"}
			]}}`,
			q: Query{Source: SourceWeb, Limit: 10},
			want: func(server string) []Result {
				return []Result{
					{URL: "https://a.example/1", Title: "One", Description: "first", Published: time.Date(2024, 3, 4, 5, 6, 7, 0, time.UTC), ImageURL: server + "/t/1.jpg", Engine: "http"},
					{URL: "https://a.example/2", Title: "Two", Description: "second", Published: time.Unix(1700000000, 0).UTC(), Engine: "http"},
					{URL: "https://a.example/3", Title: "Three", Engine: "http"},
				}
			},
			wantWarn: []string{"http: 1 hit was skipped for want of an http(s) URL at link"},
		},
		{
			name:     "defaults and the first present description",
			template: "/search?q={query}",
			body: `{"results": [
				{"url": "https://b.example/1", "title": "B1", "description": "", "content": "from content"},
				{"url": "https://b.example/2", "title": "B2", "snippet": "from snippet"},
				{"url": "https://b.example/3", "title": "B3", "description": "from description", "content": "unused"}
			]}`,
			q: Query{Source: SourceWeb, Limit: 10},
			want: func(string) []Result {
				return []Result{
					{URL: "https://b.example/1", Title: "B1", Description: "from content", Engine: "http"},
					{URL: "https://b.example/2", Title: "B2", Description: "from snippet", Engine: "http"},
					{URL: "https://b.example/3", Title: "B3", Description: "from description", Engine: "http"},
				}
			},
		},
		{
			name:     "numeric indexes",
			template: "/v1?query={query}#results=responses.0.hits&url=links.0.href&title=title.text",
			body: `{"responses": [{"hits": [
				{"links": [{"href": "https://c.example/x"}, {"href": "https://mirror.example/x"}], "title": {"text": "X"}},
				{"links": [], "title": {"text": "no links"}}
			]}]}`,
			q: Query{Source: SourceWeb, Limit: 10},
			want: func(string) []Result {
				return []Result{{URL: "https://c.example/x", Title: "X", Engine: "http"}}
			},
			wantWarn: []string{"http: 1 hit was skipped for want of an http(s) URL at links.0.href"},
		},
		{
			name:     "answer that is the array",
			template: "/q/{query}#results=.&url=u&title=t",
			body:     `[{"u": "https://d.example/", "t": "D"}]`,
			q:        Query{Source: SourceWeb, Limit: 10},
			want: func(string) []Result {
				return []Result{{URL: "https://d.example/", Title: "D", Engine: "http"}}
			},
		},
		{
			name:     "images with sizes",
			template: "/img?q={query}&type={source}#results=images&url=page&title=alt&image=src|thumb&width=size&height=size",
			body: `{"images": [
				{"page": "https://e.example/p", "alt": "E1", "src": "https://e.example/1.png", "size": "640x480"},
				{"page": "https://e.example/p", "alt": "E2", "thumb": "https://e.example/2.png", "size": 0},
				{"page": "https://e.example/p", "alt": "E1 again", "src": "https://e.example/1.png"},
				{"page": "https://e.example/q", "alt": "no image"}
			]}`,
			q: Query{Source: SourceImages, Limit: 10},
			want: func(string) []Result {
				return []Result{
					{URL: "https://e.example/p", Title: "E1", ImageURL: "https://e.example/1.png", ImageWidth: 640, ImageHeight: 480, Engine: "http"},
					{URL: "https://e.example/p", Title: "E2", ImageURL: "https://e.example/2.png", Engine: "http"},
				}
			},
			wantWarn: []string{"http: 1 hit was skipped for want of an http(s) URL at page and an image at src|thumb"},
		},
		{
			name:     "limit trims an endpoint that ignores it",
			template: "/search?q={query}",
			body:     `{"results": [{"url": "https://f.example/1"}, {"url": "https://f.example/2"}, {"url": "https://f.example/3"}]}`,
			q:        Query{Source: SourceWeb, Limit: 2},
			want: func(string) []Result {
				return []Result{{URL: "https://f.example/1", Engine: "http"}, {URL: "https://f.example/2", Engine: "http"}}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeEndpoint(t, http.StatusOK, "application/json", tc.body)
			p := httpProvider(t, f, tc.template)
			q := tc.q
			q.Text = "gopher"
			ans, err := p.Search(context.Background(), q)
			require.NoError(t, err)
			require.Equal(t, tc.want(f.URL), utc(ans.Results))
			require.Equal(t, tc.wantWarn, ans.Warnings)
			require.Len(t, f.got(), 1)
		})
	}
}

func TestHTTPTemplateExpansion(t *testing.T) {
	t.Parallel()
	f := newFakeEndpoint(t, http.StatusOK, "application/json", `{"results": []}`)
	p := httpProvider(t, f, "/s/{query}?q={query}&n={limit}&src={source}&hl={lang}&gl={country}&key=SECRET")
	text := `café "a/b" site:go.dev -x&y=1`
	_, err := p.Search(context.Background(), Query{Text: text, Source: SourceNews, Limit: 7, Language: "fr", Country: "CA"})
	require.NoError(t, err)
	got := f.got()
	require.Len(t, got, 1)
	require.Equal(t, "/s/"+url.PathEscape(text), got[0].EscapedPath(), "path placeholders are path-escaped")
	require.Equal(t, url.Values{
		"q": {text}, "n": {"7"}, "src": {"news"}, "hl": {"fr"}, "gl": {"CA"}, "key": {"SECRET"},
	}, got[0].Query())
	require.NotContains(t, p.Name(), "SECRET")
	require.Equal(t, "http("+f.URL+"/s/{query})", p.Name())
}

func TestHTTPErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		template    string
		status      int
		contentType string
		body        string
		wantStatus  int
		wantBad     bool
		wantText    []string
	}{
		{
			name:     "results path missing",
			template: "?q={query}&key=SECRET#results=data.hits",
			status:   http.StatusOK, contentType: "application/json",
			body:     `{"data": {"items": []}, "meta": {}}`,
			wantBad:  true,
			wantText: []string{`results path "data.hits" is not in the answer`, "top-level keys: data, meta"},
		},
		{
			name:     "results path not an array",
			template: "?q={query}&key=SECRET#results=data",
			status:   http.StatusOK, contentType: "application/json",
			body:     `{"data": {"items": []}}`,
			wantBad:  true,
			wantText: []string{`results path "data" holds an object, not an array`},
		},
		{
			name:     "bad gateway with a text body",
			template: "?q={query}&key=SECRET",
			status:   http.StatusBadGateway, contentType: "text/plain",
			body:       "upstream timed out\n  after 30s",
			wantStatus: http.StatusBadGateway,
			wantText:   []string{"502 Bad Gateway", `"upstream timed out after 30s"`},
		},
		{
			name:     "unauthorized with a JSON body",
			template: "?q={query}&key=SECRET",
			status:   http.StatusUnauthorized, contentType: "application/json",
			body:       `{"message": "invalid api key", "code": 401}`,
			wantStatus: http.StatusUnauthorized,
			wantText:   []string{"401 Unauthorized", `"invalid api key"`},
		},
		{
			name:     "not JSON",
			template: "?q={query}&key=SECRET",
			status:   http.StatusOK, contentType: "text/html",
			body:     "<html><head><title>Login required</title></head></html>",
			wantBad:  true,
			wantText: []string{"not JSON", `"Login required"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeEndpoint(t, tc.status, tc.contentType, tc.body)
			p := httpProvider(t, f, tc.template)
			_, err := p.Search(context.Background(), Query{Text: "q", Source: SourceWeb, Limit: 10})
			require.Error(t, err)
			for _, s := range tc.wantText {
				require.Contains(t, err.Error(), s)
			}
			require.NotContains(t, err.Error(), "SECRET")
			if tc.wantStatus != 0 {
				var he *HTTPError
				require.ErrorAs(t, err, &he)
				require.Equal(t, tc.wantStatus, he.StatusCode)
			}
			if tc.wantBad {
				require.ErrorIs(t, err, ErrBadAnswer)
			}
		})
	}
}

func TestHTTPUnsupportedSource(t *testing.T) {
	t.Parallel()
	f := newFakeEndpoint(t, http.StatusOK, "application/json", `{"results": []}`)
	p := httpProvider(t, f, "?q={query}")
	_, err := p.Search(context.Background(), Query{Text: "q", Source: SourceImages, Limit: 10})
	require.ErrorIs(t, err, ErrUnsupportedSource)
	require.Empty(t, f.got())
}

func TestHTTPWarnings(t *testing.T) {
	t.Parallel()
	q := Query{Text: "q", Source: SourceWeb, Limit: 10, TimeRange: "week", Language: "en", Country: "US", Location: "Austin, Texas"}
	tests := []struct {
		name     string
		template string
		want     []string
	}{
		{
			name:     "template without lang and country",
			template: "?q={query}",
			want: []string{
				"http: time range is not supported by this provider, ignored",
				"http: language is not supported by this provider, ignored",
				"http: country is not supported by this provider, ignored",
				"http: location is not supported by this provider, ignored",
			},
		},
		{
			name:     "template with lang and country",
			template: "?q={query}&hl={lang}&gl={country}",
			want: []string{
				"http: time range is not supported by this provider, ignored",
				"http: location is not supported by this provider, ignored",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeEndpoint(t, http.StatusOK, "application/json", `{"results": []}`)
			ans, err := httpProvider(t, f, tc.template).Search(context.Background(), q)
			require.NoError(t, err)
			require.Equal(t, tc.want, ans.Warnings)
		})
	}
}

func TestHTTPCancellation(t *testing.T) {
	t.Parallel()
	srv, _ := blockingServer(t)
	specs, err := ParseSpecs("http:" + srv.URL + "/?q={query}")
	require.NoError(t, err)
	p, err := NewHTTP(specs[0], srv.Client())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = p.Search(ctx, Query{Text: "q", Source: SourceWeb, Limit: 10})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), promptly)
}
