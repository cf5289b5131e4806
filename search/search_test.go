package search

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/index"
)

// fakeSource answers with fixed results, an error, or after a delay.
type fakeSource struct {
	name    string
	results []Result
	err     error
	delay   time.Duration
}

func (f *fakeSource) Name() string { return f.name }

func (f *fakeSource) Search(ctx context.Context, r *Request, source string) (Answer, error) {
	select {
	case <-time.After(f.delay):
	case <-ctx.Done():
		return Answer{}, ctx.Err()
	}
	return Answer{Results: f.results}, f.err
}

func newService(sources ...Source) *Service {
	return &Service{Sources: sources, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func request() *Request {
	return &Request{Team: "t", Limit: 10, Sources: []string{index.SourceWeb}, Timeout: 5 * time.Second}
}

func urls(rs []Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.URL)
	}
	return out
}

func TestSourcesMergeInOrderByURL(t *testing.T) {
	first := &fakeSource{name: "index", results: []Result{{URL: "https://a.test/x", Title: "from index"}, {URL: "https://b.test/"}}}
	second := &fakeSource{name: "searxng", results: []Result{{URL: "https://a.test/x#frag", Title: "from searxng"},
		{URL: "https://c.test/page"}, {URL: "https://B.test"}}}
	resp, err := newService(first, second).Search(context.Background(), request())
	require.NoError(t, err)
	web := resp.Results[index.SourceWeb]
	require.Equal(t, []string{"https://a.test/x", "https://b.test/", "https://c.test/page"}, urls(web))
	require.Equal(t, "from index", web[0].Title, "the first source's entry wins")
	require.Equal(t, []int{1, 2, 3}, []int{web[0].Position, web[1].Position, web[2].Position})
	require.Equal(t, 2, resp.Credits, "2 credits per started 10 results")
}

func TestFailingSourceIsAWarning(t *testing.T) {
	good := &fakeSource{name: "index", results: []Result{{URL: "https://a.test/"}}}
	bad := &fakeSource{name: "searxng", err: errors.New("searxng answered 429 Too Many Requests")}
	resp, err := newService(bad, good).Search(context.Background(), request())
	require.NoError(t, err)
	require.Equal(t, []string{"https://a.test/"}, urls(resp.Results[index.SourceWeb]))
	require.Len(t, resp.Warnings, 1)
	require.Contains(t, resp.Warnings[0], "429")
}

func TestTimeout(t *testing.T) {
	slow := &fakeSource{name: "slow", delay: time.Minute}
	r := request()
	r.Timeout = 100 * time.Millisecond
	start := time.Now()
	_, err := newService(slow).Search(context.Background(), r)
	require.ErrorIs(t, err, ErrTimeout)
	require.Less(t, time.Since(start), 5*time.Second)

	// A source that answered in time keeps the search alive; the slow one
	// is a warning.
	fast := &fakeSource{name: "index", results: []Result{{URL: "https://a.test/"}}}
	resp, err := newService(fast, slow).Search(context.Background(), r)
	require.NoError(t, err)
	require.Len(t, resp.Results[index.SourceWeb], 1)
	require.Contains(t, resp.Warnings[0], "timed out")
}

func TestFiltersApplyToEverySource(t *testing.T) {
	live := &fakeSource{name: "searxng", results: []Result{{URL: "https://docs.python.org/3/"}, {URL: "https://evil.test/"},
		{URL: "ftp://files.python.org/x"}, {URL: "https://github.com/a/b", Category: index.CategoryGitHub}}}
	r := request()
	r.IncludeDomains = []string{"python.org", "github.com"}
	r.Valid = func(u string) bool { return strings.HasPrefix(u, "https://") } // ignoreInvalidURLs
	resp, err := newService(live).Search(context.Background(), r)
	require.NoError(t, err)
	require.Equal(t, []string{"https://docs.python.org/3/", "https://github.com/a/b"}, urls(resp.Results[index.SourceWeb]))

	r = request()
	r.ExcludeDomains = []string{"evil.test"}
	r.Categories = []string{index.CategoryGitHub}
	resp, err = newService(live).Search(context.Background(), r)
	require.NoError(t, err)
	require.Equal(t, []string{"https://github.com/a/b"}, urls(resp.Results[index.SourceWeb]))

	r = request()
	r.Limit = 2
	r.EndToEnd = true
	resp, err = newService(live).Search(context.Background(), r)
	require.NoError(t, err)
	require.Len(t, resp.Results[index.SourceWeb], 2)
	require.Equal(t, 10, resp.Credits, "zdr: 10 credits per started 10 results")
}
