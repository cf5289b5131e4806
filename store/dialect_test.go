package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A job's pages finished at once by several workers each get a place of
// their own in the job's results; a reused idempotency key is a conflict.
func TestJobResultsNumberedOnceEach(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTemp(t)
	now := time.Now()
	const pages = 24
	var urls []JobURL
	for i := range pages {
		urls = append(urls, JobURL{Key: fmt.Sprint(i), URL: fmt.Sprintf("http://a.test/%d", i), Seq: int64(i), State: URLQueued})
	}
	job := Job{ID: "j1", Team: "acme", Kind: "crawl", Status: "scraping", Request: []byte(`{}`), IdempotencyKey: "k",
		CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	require.NoError(t, s.CreateJob(ctx, job, urls, nil))
	again := job
	again.ID = "j2"
	require.ErrorIs(t, s.CreateJob(ctx, again, nil, nil), ErrConflict, "a reused idempotency key")

	seqs := make([]int64, pages)
	errs := make([]error, pages)
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Go(func() {
			u.State, u.Document = URLDone, []byte(fmt.Sprintf(`{"n":%d}`, i))
			seqs[i], errs[i] = s.FinishJobURL(ctx, "j1", u, true, nil, 1, nil)
		})
	}
	wg.Wait()
	seen := map[int64]bool{}
	for i := range pages {
		require.NoError(t, errs[i], "page %d", i)
		require.False(t, seen[seqs[i]], "place %d given twice", seqs[i])
		require.True(t, seqs[i] >= 1 && seqs[i] <= pages, "place %d", seqs[i])
		seen[seqs[i]] = true
	}
	docs, more, err := s.JobDocuments(ctx, "j1", 20, 10, 1<<20)
	require.NoError(t, err)
	require.Len(t, docs, pages-20, "documents after the first 20")
	require.False(t, more)
	got, err := s.Job(ctx, "acme", "crawl", "j1")
	require.NoError(t, err)
	require.Equal(t, pages, got.Credits, "one credit a page")
	counts, err := s.JobCounts(ctx, "j1")
	require.NoError(t, err)
	require.Equal(t, map[string]int{URLDone: pages}, counts)
	jobs, err := s.Jobs(ctx, "", "crawl", "scraping")
	require.NoError(t, err)
	require.Len(t, jobs, 1, "every team's scraping crawls")
}

// The index log numbers each cache write and deletion, and its last number
// does not go back when the log is pruned; Pages walks the whole cache.
func TestIndexLogFollowsTheCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTemp(t)
	last, err := s.LastIndexSeq(ctx)
	require.NoError(t, err)
	require.Zero(t, last, "an empty log")
	old := time.Now().Add(-48 * time.Hour)
	var seqs []int64
	for i, key := range []string{"a", "b", "a"} {
		at := time.Now()
		if key == "b" {
			at = old
		}
		seq, err := s.PutPage(ctx, CachedPage{Team: "acme", Key: key, URL: "http://a.test/" + key,
			FinalURL: "http://a.test/" + key, CreatedAt: at, Body: []byte(fmt.Sprint(i))})
		require.NoError(t, err)
		seqs = append(seqs, seq)
	}
	require.Equal(t, []int64{seqs[0], seqs[0] + 1, seqs[0] + 2}, seqs, "one log row a write")
	p, err := s.PageByKey(ctx, "acme", "a")
	require.NoError(t, err)
	require.Equal(t, "2", string(p.Body), "the entry written again")

	var walked []string
	var cur PageCursor
	for {
		pages, next, err := s.Pages(ctx, cur, 1)
		require.NoError(t, err)
		if len(pages) == 0 {
			break
		}
		walked = append(walked, pages[0].Key)
		cur = next
	}
	require.ElementsMatch(t, []string{"a", "b"}, walked, "the walk of the cache")

	require.NoError(t, s.PruneCache(ctx, time.Now().Add(-24*time.Hour)))
	rows, err := s.IndexLog(ctx, seqs[2], 10)
	require.NoError(t, err)
	require.Len(t, rows, 1, "the pruned entry's row")
	require.Equal(t, IndexEntry{Seq: seqs[2] + 1, Team: "acme", Key: "b", FinalURL: "http://a.test/b", Deleted: true}, rows[0])
	n, err := s.CountPages(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n, "entries left")

	require.NoError(t, s.PruneIndexLog(ctx, seqs[2]+1))
	last, err = s.LastIndexSeq(ctx)
	require.NoError(t, err)
	require.Equal(t, seqs[2]+1, last, "the last number after the log is emptied")
}

// Keys, token usage and egress are summed per team and request.
func TestKeysUsageAndEgress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTemp(t)
	keys := []KeyRecord{{Hash: []byte{1, 2}, Team: "acme"}, {Hash: []byte{3}, Team: "globex"}}
	require.NoError(t, s.ReplaceKeys(ctx, keys))
	require.NoError(t, s.ReplaceKeys(ctx, keys[:1]))
	got, err := s.Keys(ctx)
	require.NoError(t, err)
	require.Equal(t, keys[:1], got, "the keys after the second start")

	now := time.Now()
	for _, u := range []ModelUsage{
		{Team: "acme", Request: "r1", Purpose: "json", Model: "m", InputTokens: 10, OutputTokens: 2, Attempts: 1, At: now},
		{Team: "acme", Request: "r1", Purpose: "json", Model: "m", InputTokens: 5, Attempts: 2, At: now, Error: "timeout"},
		{Team: "globex", Request: "r2", Purpose: "summary", Model: "m", InputTokens: 99, At: now},
	} {
		require.NoError(t, s.AddModelUsage(ctx, u))
	}
	totals, err := s.TokenUsage(ctx, "acme", now.Add(-time.Minute), now.Add(time.Minute))
	require.NoError(t, err)
	require.Equal(t, TokenTotals{InputTokens: 15, OutputTokens: 2, Calls: 2, Failed: 1}, totals)
	calls, err := s.RequestModelUsage(ctx, "acme", []string{"r1", "r2"})
	require.NoError(t, err)
	require.Len(t, calls["r1"], 2)
	require.Empty(t, calls["r2"], "another team's request")

	for _, u := range []EgressUsage{{Team: "acme", Request: "r1", In: 100, Out: 10, At: now},
		{Team: "acme", Request: "r1", In: 50, Out: 5, At: now}} {
		require.NoError(t, s.AddEgressUsage(ctx, u))
	}
	egress, err := s.RequestEgress(ctx, "acme", []string{"r1", "r9"})
	require.NoError(t, err)
	require.Equal(t, int64(150), egress["r1"].In)
	require.Equal(t, int64(15), egress["r1"].Out)
	require.NotContains(t, egress, "r9")
}
