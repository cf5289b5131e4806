package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// reply is one answer of the fake SearXNG: a testdata/searxng file served
// with a status, or a body written by hand.
type reply struct {
	status      int
	contentType string
	file        string
	body        string
	header      http.Header
}

func jsonFile(file string) reply {
	return reply{status: http.StatusOK, contentType: "application/json", file: file}
}

// fakeSearXNG speaks SearXNG's /search JSON API on loopback from recorded
// answers and keeps the query parameters of every request it got.
type fakeSearXNG struct {
	*httptest.Server
	mu       sync.Mutex
	requests []url.Values
}

func newFakeSearXNG(t *testing.T, answer func(r *http.Request) reply) *fakeSearXNG {
	t.Helper()
	f := &fakeSearXNG{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/search" {
			http.NotFound(w, r)
			return
		}
		f.mu.Lock()
		f.requests = append(f.requests, r.URL.Query())
		f.mu.Unlock()
		rep := answer(r)
		body := []byte(rep.body)
		if rep.file != "" {
			var err error
			body, err = os.ReadFile(filepath.Join("testdata", "searxng", rep.file))
			if err != nil {
				t.Errorf("reading fixture: %v", err)
			}
		}
		for k, v := range rep.header {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Type", rep.contentType)
		w.WriteHeader(rep.status)
		w.Write(body)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeSearXNG) got() []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]url.Values(nil), f.requests...)
}

func (f *fakeSearXNG) provider(t *testing.T) *SearXNG {
	t.Helper()
	p, err := NewSearXNG(f.URL, f.Client())
	require.NoError(t, err)
	return p
}

// firstPage answers pageno 1 with file and later pages with no results, as
// SearXNG does when its engines have nothing more.
func firstPage(file string) func(r *http.Request) reply {
	return func(r *http.Request) reply {
		if r.URL.Query().Get("pageno") == "1" {
			return jsonFile(file)
		}
		return jsonFile("empty.json")
	}
}

func TestSearXNGSearch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		file     string
		source   string
		category string
		// want is built from the server's URL: relative image links
		// resolve against it.
		want func(server string) []Result
	}{
		{
			name:     "general with and without publishedDate",
			file:     "general.json",
			source:   SourceWeb,
			category: "general",
			want: func(string) []Result {
				return []Result{
					{
						URL:         "https://go.dev/doc/tutorial/generics",
						Title:       "Tutorial: Getting started with generics",
						Description: "This tutorial introduces the basics of generics in Go.",
						Engine:      "duckduckgo",
					},
					{
						URL:         "https://go.dev/blog/intro-generics",
						Title:       "An Introduction To Generics",
						Description: "The Go 1.18 release adds support for generics.",
						Published:   time.Date(2022, 3, 22, 0, 0, 0, 0, time.UTC),
						Engine:      "google",
					},
					{
						URL:         "https://pkg.go.dev/golang.org/x/exp/constraints",
						Title:       "constraints package",
						Description: "Package constraints defines a set of useful constraints.",
						Published:   time.Date(2024, 1, 2, 1, 4, 5, 250_000_000, time.UTC),
						ImageURL:    "https://pkg.go.dev/static/shared/icon/favicon.ico",
						Engine:      "brave",
					},
					// The magnet link is no web page and is left out.
				}
			},
		},
		{
			name:     "images with resolution",
			file:     "images.json",
			source:   SourceImages,
			category: "images",
			want: func(server string) []Result {
				return []Result{
					{
						URL:         "https://commons.wikimedia.org/wiki/File:Go_gopher.png",
						Title:       "Go gopher",
						ImageURL:    "https://upload.wikimedia.org/wikipedia/commons/6/6f/Go_gopher.png",
						ImageWidth:  1920,
						ImageHeight: 1080,
						Engine:      "bing images",
					},
					{
						URL:         "https://go.dev/blog/gopher",
						Title:       "The Go Gopher",
						Description: "The Go gopher was designed by Renee French.",
						ImageURL:    server + "/image_proxy?url=https%3A%2F%2Fgo.dev%2Fblog%2Fgopher%2Fheader.jpg&h=abc",
						ImageWidth:  800,
						ImageHeight: 600,
						Engine:      "duckduckgo images",
					},
					{
						// Same page, another image: kept.
						URL:      "https://go.dev/blog/gopher",
						Title:    "Gopher plush",
						ImageURL: "https://go.dev/blog/gopher/plush.jpg",
						Engine:   "google images",
					},
					// The hit without any image is left out.
				}
			},
		},
		{
			name:     "news",
			file:     "news.json",
			source:   SourceNews,
			category: "news",
			want: func(string) []Result {
				return []Result{
					{
						URL:         "https://news.example.com/2025/02/go-1-24",
						Title:       "Go 1.24 is released",
						Description: "The Go team announced Go 1.24 with generic type aliases.",
						Published:   time.Date(2025, 2, 11, 17, 0, 0, 0, time.UTC),
						ImageURL:    "https://news.example.com/img/go124.jpg",
						Engine:      "bing news",
					},
					{
						URL:         "https://blog.example.org/go-1-24-swiss-tables",
						Title:       "Swiss tables in Go 1.24",
						Description: "Maps got faster.",
						Published:   time.Date(2025, 2, 12, 8, 30, 0, 0, time.UTC),
						ImageURL:    "https://blog.example.org/swiss.png",
						Engine:      "yahoo news",
					},
				}
			},
		},
		{
			name:     "empty",
			file:     "empty.json",
			source:   SourceWeb,
			category: "general",
			want:     func(string) []Result { return nil },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeSearXNG(t, firstPage(tc.file))
			ans, err := f.provider(t).Search(context.Background(), Query{Text: "golang site:go.dev", Source: tc.source, Limit: 10})
			require.NoError(t, err)
			require.Equal(t, tc.want(f.URL), utc(ans.Results))
			require.Empty(t, ans.Warnings)

			reqs := f.got()
			require.NotEmpty(t, reqs)
			require.Equal(t, url.Values{
				"q":          {"golang site:go.dev"},
				"format":     {"json"},
				"categories": {tc.category},
				"pageno":     {"1"},
			}, reqs[0])
		})
	}
}

// utc normalizes Published so that require.Equal compares instants.
func utc(rs []Result) []Result {
	for i := range rs {
		if !rs[i].Published.IsZero() {
			rs[i].Published = rs[i].Published.UTC()
		}
	}
	return rs
}

func urls(rs []Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.URL)
	}
	return out
}

func pagenos(reqs []url.Values) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, r.Get("pageno"))
	}
	return out
}

func TestSearXNGPaging(t *testing.T) {
	t.Parallel()
	pages := func(r *http.Request) reply {
		switch r.URL.Query().Get("pageno") {
		case "1":
			return jsonFile("page1.json")
		case "2":
			return jsonFile("page2.json")
		}
		return jsonFile("empty.json")
	}
	all := []string{
		"https://sqlite.org/wal.html",
		"https://sqlite.org/pragma.html",
		"https://www.sqlite.org/walformat.html",
		// page 2 repeats pragma.html, which is dropped
		"https://stackoverflow.com/questions/wal-vs-journal",
		"https://fly.io/blog/sqlite-internals-wal/",
	}
	tests := []struct {
		name     string
		limit    int
		wantURLs []string
		wantReqs []string
		wantWarn []string
	}{
		{name: "limit met on page 1", limit: 2, wantURLs: all[:2], wantReqs: []string{"1"}},
		{
			name: "second page with a duplicate", limit: 5, wantURLs: all, wantReqs: []string{"1", "2"},
			wantWarn: []string{"searxng: some engines did not answer: google (timeout)"},
		},
		{
			name: "stops at an empty page", limit: 20, wantURLs: all, wantReqs: []string{"1", "2", "3"},
			wantWarn: []string{"searxng: some engines did not answer: google (timeout)"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeSearXNG(t, pages)
			ans, err := f.provider(t).Search(context.Background(), Query{Text: "sqlite wal", Source: SourceWeb, Limit: tc.limit})
			require.NoError(t, err)
			require.Equal(t, tc.wantURLs, urls(ans.Results))
			require.Equal(t, tc.wantReqs, pagenos(f.got()))
			require.Equal(t, tc.wantWarn, ans.Warnings)
		})
	}
}

func TestSearXNGPagingStopsAfterFivePages(t *testing.T) {
	t.Parallel()
	// An instance that always has ten more results.
	f := newFakeSearXNG(t, func(r *http.Request) reply {
		page, _ := strconv.Atoi(r.URL.Query().Get("pageno"))
		body := `{"query":"q","number_of_results":0,"results":[`
		for i := range 10 {
			if i > 0 {
				body += ","
			}
			body += fmt.Sprintf(`{"url":"https://example.com/%d/%d","title":"r","content":"","publishedDate":null,"engine":"google","engines":["google"],"positions":[%d],"score":1,"category":"general"}`, page, i, i+1)
		}
		body += `],"answers":[],"corrections":[],"infoboxes":[],"suggestions":[],"unresponsive_engines":[]}`
		return reply{status: http.StatusOK, contentType: "application/json", body: body}
	})
	ans, err := f.provider(t).Search(context.Background(), Query{Text: "q", Source: SourceWeb, Limit: 100})
	require.NoError(t, err)
	require.Len(t, ans.Results, 50)
	require.Equal(t, []string{"1", "2", "3", "4", "5"}, pagenos(f.got()))
}

func TestSearXNGErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		reply      reply
		wantStatus int // 0: not an HTTPError
		wantIs     error
		wantText   []string
	}{
		{
			name:       "json format not enabled",
			reply:      reply{status: http.StatusForbidden, contentType: "text/html; charset=utf-8", file: "403.html"},
			wantStatus: http.StatusForbidden,
			wantText:   []string{"403 Forbidden", `"403 Forbidden"`, "add json to search.formats in its settings.yml"},
		},
		{
			name: "limiter",
			reply: reply{
				status: http.StatusTooManyRequests, contentType: "text/html; charset=utf-8", file: "429.html",
				header: http.Header{"Retry-After": {"30"}},
			},
			wantStatus: http.StatusTooManyRequests,
			wantText:   []string{"429 Too Many Requests", "retry after 30", "server.limiter"},
		},
		{
			name:       "server error with a JSON body",
			reply:      reply{status: http.StatusInternalServerError, contentType: "application/json", body: `{"error": "search error"}`},
			wantStatus: http.StatusInternalServerError,
			wantText:   []string{"500 Internal Server Error", `"search error"`},
		},
		{
			name:     "HTML instead of JSON",
			reply:    reply{status: http.StatusOK, contentType: "text/html; charset=utf-8", file: "index.html"},
			wantIs:   ErrBadAnswer,
			wantText: []string{"not JSON", "text/html", `"SearXNG"`},
		},
		{
			name:     "JSON that is no SearXNG answer",
			reply:    reply{status: http.StatusOK, contentType: "application/json", body: `{"status": "ok"}`},
			wantIs:   ErrBadAnswer,
			wantText: []string{"no results member"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeSearXNG(t, func(*http.Request) reply { return tc.reply })
			p := f.provider(t)
			_, err := p.Search(context.Background(), Query{Text: "q", Source: SourceWeb, Limit: 10})
			require.Error(t, err)
			require.Contains(t, err.Error(), p.Name())
			for _, s := range tc.wantText {
				require.Contains(t, err.Error(), s)
			}
			var he *HTTPError
			if tc.wantStatus != 0 {
				require.ErrorAs(t, err, &he)
				require.Equal(t, tc.wantStatus, he.StatusCode)
			} else {
				require.False(t, errors.As(err, &he))
			}
			if tc.wantIs != nil {
				require.ErrorIs(t, err, tc.wantIs)
			}
		})
	}
}

func TestSearXNGWrongBaseURL(t *testing.T) {
	t.Parallel()
	f := newFakeSearXNG(t, firstPage("general.json"))
	p, err := NewSearXNG(f.URL+"/search", f.Client())
	require.NoError(t, err)
	_, err = p.Search(context.Background(), Query{Text: "q", Source: SourceWeb, Limit: 10})
	var he *HTTPError
	require.ErrorAs(t, err, &he)
	require.Equal(t, http.StatusNotFound, he.StatusCode)
	require.Contains(t, err.Error(), "give the instance's root as the base URL")
}

func TestSearXNGLaterPageFails(t *testing.T) {
	t.Parallel()
	f := newFakeSearXNG(t, func(r *http.Request) reply {
		if r.URL.Query().Get("pageno") == "1" {
			return jsonFile("page1.json")
		}
		return reply{status: http.StatusTooManyRequests, contentType: "text/html", file: "429.html"}
	})
	ans, err := f.provider(t).Search(context.Background(), Query{Text: "sqlite wal", Source: SourceWeb, Limit: 10})
	require.NoError(t, err)
	require.Len(t, ans.Results, 3)
	require.Equal(t, []string{"searxng: page 2 failed (429 Too Many Requests); results come from the pages before it"}, ans.Warnings)
}

func TestSearXNGUnresponsiveEngines(t *testing.T) {
	t.Parallel()
	f := newFakeSearXNG(t, firstPage("unresponsive.json"))
	ans, err := f.provider(t).Search(context.Background(), Query{Text: "trawler", Source: SourceWeb, Limit: 10})
	require.NoError(t, err)
	require.Equal(t, []string{"https://en.wikipedia.org/wiki/Trawler"}, urls(ans.Results))
	require.Equal(t, []string{
		"searxng: some engines did not answer: google (timeout), brave (Suspended: too many requests), duckduckgo (CAPTCHA)",
	}, ans.Warnings)
}

func TestSearXNGParameters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		q            Query
		wantLanguage string // "" means not sent
		wantTime     string
		wantSafe     string // safesearch, "" means not sent
		wantWarnings []string
	}{
		{name: "defaults", q: Query{}},
		{name: "week", q: Query{TimeRange: "week"}, wantTime: "week"},
		{
			name: "hour becomes day", q: Query{TimeRange: "hour"}, wantTime: "day",
			wantWarnings: []string{"searxng: time range hour is not supported, searched the past day instead"},
		},
		{name: "language alone", q: Query{Language: "de"}, wantLanguage: "de"},
		{name: "language and country", q: Query{Language: "en", Country: "us"}, wantLanguage: "en-US"},
		{
			name: "country without language", q: Query{Country: "US"},
			wantWarnings: []string{"searxng: country cannot be applied without a language, ignored"},
		},
		{
			name: "language naming another region", q: Query{Language: "en-GB", Country: "US"}, wantLanguage: "en-GB",
			wantWarnings: []string{"searxng: country US ignored, language en-GB already names a region"},
		},
		{
			name: "country that is no code", q: Query{Language: "en", Country: "United States"}, wantLanguage: "en",
			wantWarnings: []string{`searxng: country "United States" is not a two-letter code, ignored`},
		},
		{
			name: "location", q: Query{Language: "de", Country: "DE", Location: "Berlin, Germany"}, wantLanguage: "de-DE",
			wantWarnings: []string{"searxng: location is not supported, ignored"},
		},
		{name: "safe", q: Query{Safe: true}, wantSafe: "2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeSearXNG(t, firstPage("general.json"))
			q := tc.q
			q.Text, q.Source, q.Limit = "trawler", SourceWeb, 1
			ans, err := f.provider(t).Search(context.Background(), q)
			require.NoError(t, err)
			reqs := f.got()
			require.Len(t, reqs, 1)
			require.Equal(t, tc.wantLanguage, reqs[0].Get("language"))
			require.Equal(t, tc.wantTime, reqs[0].Get("time_range"))
			require.Equal(t, tc.wantSafe, reqs[0].Get("safesearch"), "safesearch")
			require.Equal(t, tc.wantWarnings, ans.Warnings)
		})
	}
}

func TestSearXNGInvalidQuery(t *testing.T) {
	t.Parallel()
	tests := map[string]Query{
		"empty text":     {Source: SourceWeb, Limit: 10},
		"unknown source": {Text: "q", Source: "videos", Limit: 10},
		"limit 0":        {Text: "q", Source: SourceWeb},
		"limit 101":      {Text: "q", Source: SourceWeb, Limit: 101},
		"time range":     {Text: "q", Source: SourceWeb, Limit: 10, TimeRange: "decade"},
	}
	for name, q := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFakeSearXNG(t, firstPage("general.json"))
			_, err := f.provider(t).Search(context.Background(), q)
			require.ErrorIs(t, err, ErrInvalidQuery)
			require.Empty(t, f.got(), "an invalid query sends nothing")
		})
	}
}

// blockingServer never answers /search until the client gives up.
func blockingServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	release := make(chan struct{})
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs before srv.Close
	return srv, &n
}

// promptly bounds how long an abandoned search may take to return; the
// server would otherwise hold it for the whole test.
const promptly = 5 * time.Second

func TestSearXNGCancellation(t *testing.T) {
	t.Parallel()
	q := Query{Text: "q", Source: SourceWeb, Limit: 10}

	t.Run("deadline", func(t *testing.T) {
		t.Parallel()
		srv, _ := blockingServer(t)
		p, err := NewSearXNG(srv.URL, srv.Client())
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err = p.Search(ctx, q)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Less(t, time.Since(start), promptly)
	})

	t.Run("client timeout", func(t *testing.T) {
		t.Parallel()
		srv, _ := blockingServer(t)
		client := srv.Client()
		client.Timeout = 100 * time.Millisecond
		p, err := NewSearXNG(srv.URL, client)
		require.NoError(t, err)
		start := time.Now()
		_, err = p.Search(context.Background(), q)
		require.Error(t, err)
		require.Contains(t, err.Error(), "Client.Timeout")
		require.NotContains(t, err.Error(), "q=q", "the request URL stays out of errors")
		require.Less(t, time.Since(start), promptly)
	})

	t.Run("already cancelled", func(t *testing.T) {
		t.Parallel()
		srv, n := blockingServer(t)
		p, err := NewSearXNG(srv.URL, srv.Client())
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = p.Search(ctx, q)
		require.ErrorIs(t, err, context.Canceled)
		require.Zero(t, n.Load())
	})

	t.Run("cancelled during page 2", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		f := newFakeSearXNG(t, func(r *http.Request) reply {
			if r.URL.Query().Get("pageno") == "1" {
				return jsonFile("page1.json")
			}
			cancel()
			<-r.Context().Done()
			return jsonFile("empty.json")
		})
		_, err := f.provider(t).Search(ctx, Query{Text: "q", Source: SourceWeb, Limit: 10})
		require.ErrorIs(t, err, context.Canceled, "a cancelled search returns no partial answer")
	})
}
