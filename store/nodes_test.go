package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openNodes opens n stores on one fresh database, as n nodes would, named
// n0, n1, ... with leases of lease.
func openNodes(t *testing.T, n int, lease time.Duration) []*Store {
	t.Helper()
	open := testDB(t)
	var out []*Store
	for i := range n {
		s, err := open(context.Background())
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		s.SetNode(fmt.Sprintf("n%d", i), "", lease)
		out = append(out, s)
	}
	return out
}

// A job is held by the node that created it while it renews its lease;
// once the lease runs out another node claims it, and from then on the
// first node can record none of its pages, add no URL to it and not end it.
func TestJobLeasesMoveJobsBetweenNodes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nodes := openNodes(t, 2, time.Minute)
	a, b := nodes[0], nodes[1]
	now := time.Now()
	urls := []JobURL{{Key: "0", URL: "http://a.test/0", State: URLQueued}, {Key: "1", URL: "http://a.test/1", Seq: 1, State: URLQueued}}
	require.NoError(t, a.CreateJob(ctx, Job{ID: "j1", Team: "acme", Kind: "crawl", Status: "scraping", Request: []byte(`{}`),
		CreatedAt: now, ExpiresAt: now.Add(time.Hour)}, urls, nil))

	claimed, err := b.ClaimJobs(ctx, false, now, now.Add(time.Minute))
	require.NoError(t, err)
	assert.Empty(t, claimed, "node b claimed a job whose lease runs")
	held, err := a.RenewJobs(ctx, now.Add(time.Minute))
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"j1": true}, held, "node a's jobs")
	mine, err := a.ClaimJobs(ctx, true, now, now.Add(time.Minute))
	require.NoError(t, err)
	require.Len(t, mine, 1, "a restarted node takes its own jobs back at once")

	u0 := urls[0]
	u0.State, u0.Document = URLDone, []byte(`{"n":0}`)
	_, err = a.FinishJobURL(ctx, "j1", u0, true, nil, 1, nil)
	require.NoError(t, err, "the holder records a page")

	// Node a stops renewing; a minute later its lease has run out.
	later := now.Add(2 * time.Minute)
	claimed, err = b.ClaimJobs(ctx, false, later, later.Add(time.Minute))
	require.NoError(t, err)
	require.Len(t, claimed, 1, "node b claims the job whose lease ran out")
	assert.Equal(t, "j1", claimed[0].ID)
	assert.Equal(t, 1, claimed[0].Credits, "the claimed job's credits so far")

	held, err = a.RenewJobs(ctx, later.Add(time.Minute))
	require.NoError(t, err)
	assert.Empty(t, held, "node a still holds a job node b claimed")
	u1 := urls[1]
	u1.State, u1.Document = URLDone, []byte(`{"n":1}`)
	_, err = a.FinishJobURL(ctx, "j1", u1, true, nil, 1, nil)
	assert.ErrorIs(t, err, ErrLeaseLost, "node a recording a page of a job it lost")
	assert.ErrorIs(t, a.AddJobURLs(ctx, "j1", []JobURL{{Key: "2", URL: "http://a.test/2", Seq: 2, State: URLQueued}}), ErrLeaseLost,
		"node a adding to a job it lost")
	assert.ErrorIs(t, a.FinishJob(ctx, "j1", "completed", "", later, later.Add(time.Hour), nil), ErrNotFound,
		"node a ending a job it lost")

	seq, err := b.FinishJobURL(ctx, "j1", u1, true, nil, 1, nil)
	require.NoError(t, err, "the new holder records the page")
	assert.EqualValues(t, 2, seq, "the page's place in the results")
	counts, err := b.JobCounts(ctx, "j1")
	require.NoError(t, err)
	assert.Equal(t, map[string]int{URLDone: 2}, counts, "nothing of node a's after the claim was kept")

	// A cancel through node a ends the job node b holds; b learns it at
	// its next renewal and can record nothing more.
	require.NoError(t, a.CancelJob(ctx, "j1", "cancelled", "", later, later.Add(time.Hour), nil))
	held, err = b.RenewJobs(ctx, later.Add(time.Minute))
	require.NoError(t, err)
	assert.Empty(t, held, "a cancelled job is still renewed")
	u0.Key = "0"
	_, err = b.FinishJobURL(ctx, "j1", u0, true, nil, 1, nil)
	assert.ErrorIs(t, err, ErrLeaseLost, "recording a page of a cancelled job")
}

// Of many nodes claiming an abandoned job at once, one gets it.
func TestJobClaimedByOneNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nodes := openNodes(t, 6, time.Second)
	now := time.Now()
	for i := range 5 {
		require.NoError(t, nodes[0].CreateJob(ctx, Job{ID: fmt.Sprint("j", i), Team: "acme", Kind: "batch", Status: "scraping",
			Request: []byte(`{}`), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}, nil, nil))
	}
	later := now.Add(time.Minute)
	got := make([][]Job, len(nodes))
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i := 1; i < len(nodes); i++ {
		wg.Go(func() { got[i], errs[i] = nodes[i].ClaimJobs(ctx, false, later, later.Add(time.Minute)) })
	}
	wg.Wait()
	owner := map[string]int{}
	for i := 1; i < len(nodes); i++ {
		require.NoError(t, errs[i], "node %d", i)
		for _, j := range got[i] {
			owner[j.ID]++
		}
	}
	for i := range 5 {
		assert.Equal(t, 1, owner[fmt.Sprint("j", i)], "claims of job j%d", i)
	}
}

// A node ends its own sessions left active when it starts, never another
// node's; the sessions of a node that stopped its heartbeat are ended, and
// billed, by another.
func TestSessionsEndWithTheirNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nodes := openNodes(t, 2, time.Second)
	a, b := nodes[0], nodes[1]
	now := time.Now()
	require.NoError(t, a.Heartbeat(ctx, now.Add(-time.Minute)))
	require.NoError(t, b.Heartbeat(ctx, now))
	require.NoError(t, a.InsertSession(ctx, Session{ID: "sa", Team: "acme", Status: "active", CreatedAt: now.Add(-3 * time.Minute),
		ExpiresAt: now.Add(time.Hour), LastActivity: now.Add(-time.Minute)}))
	require.NoError(t, b.InsertSession(ctx, Session{ID: "sb", Team: "acme", Status: "active", CreatedAt: now,
		ExpiresAt: now.Add(time.Hour), LastActivity: now}))

	n, err := b.EndActiveSessions(ctx, "service restarted", nil)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "sessions node b ended at its start")
	sa, err := a.Session(ctx, "sa")
	require.NoError(t, err)
	assert.Equal(t, "active", sa.Status, "node a's session after node b's start")

	n, err = b.EndLostSessions(ctx, now.Add(-30*time.Second), "node lost", func(d time.Duration) int { return int(d / time.Minute) })
	require.NoError(t, err)
	assert.Equal(t, 1, n, "sessions of lost nodes ended")
	sa, err = b.Session(ctx, "sa")
	require.NoError(t, err)
	assert.Equal(t, "destroyed", sa.Status)
	assert.Equal(t, "node lost", sa.EndReason)
	used, err := b.CreditsUsed(ctx, "acme", now.Add(-time.Hour), now.Add(time.Hour))
	require.NoError(t, err)
	assert.EqualValues(t, 2, used, "the lost session billed for the two minutes it is known to have lasted")
	n, err = a.EndLostSessions(ctx, now, "node lost", nil)
	require.NoError(t, err)
	assert.Zero(t, n, "a node's own sessions are not lost to it")

	lost, err := b.LostNodes(ctx, now.Add(-30*time.Second), now.Add(-time.Hour))
	require.NoError(t, err)
	require.Len(t, lost, 1, "nodes lost to node b")
	assert.Equal(t, "n0", lost[0].ID)
	assert.WithinDuration(t, now.Add(-time.Minute), lost[0].SeenAt, time.Millisecond)
	lost, err = a.LostNodes(ctx, now.Add(-30*time.Second), now.Add(-time.Hour))
	require.NoError(t, err)
	assert.Empty(t, lost, "node b is alive, and node a is not lost to itself")
	lost, err = b.LostNodes(ctx, now.Add(-30*time.Second), now.Add(-59*time.Second))
	require.NoError(t, err)
	assert.Empty(t, lost, "node a, lost before since")
}

// The index log is read in seq order by each node's index: a reader that
// follows it while pages are cached at once from many connections sees
// every row, none committed behind its back with a lower seq.
func TestIndexLogReadInOrderWhileWritten(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nodes := openNodes(t, 4, time.Minute)
	var wg sync.WaitGroup
	var mu sync.Mutex
	written := map[int64]bool{}
	for w, s := range nodes {
		wg.Go(func() {
			for i := range 40 {
				key := fmt.Sprintf("w%d-%d", w, i)
				seq, err := s.PutPage(ctx, CachedPage{Team: "acme", Key: key, URL: "http://a.test/" + key, CreatedAt: time.Now(),
					StatusCode: 200, Body: []byte("body")})
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				written[seq] = true
				mu.Unlock()
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	seen := map[int64]bool{}
	var applied int64
	read := func() {
		rows, err := nodes[0].IndexLog(ctx, applied, 1000)
		require.NoError(t, err)
		for _, r := range rows {
			seen[r.Seq] = true
			applied = r.Seq
		}
	}
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		read()
	}
	read()
	for seq := range written {
		assert.True(t, seen[seq], "log row %d was committed behind the reader", seq)
	}
}

// A node prunes the index log only up to what every node seen in the last
// hour has applied.
func TestIndexLogPrunedUpToTheSlowestNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nodes := openNodes(t, 2, time.Minute)
	a, b := nodes[0], nodes[1]
	now := time.Now()
	require.NoError(t, a.Heartbeat(ctx, now))
	require.NoError(t, b.Heartbeat(ctx, now))
	var seqs []int64
	for i := range 10 {
		seq, err := a.PutPage(ctx, CachedPage{Team: "acme", Key: fmt.Sprint(i), URL: "http://a.test/", CreatedAt: now, Body: []byte("b")})
		require.NoError(t, err)
		seqs = append(seqs, seq)
	}
	require.NoError(t, b.PruneIndexLog(ctx, seqs[3]))
	require.NoError(t, a.PruneIndexLog(ctx, seqs[9]))
	rows, err := a.IndexLog(ctx, 0, 100)
	require.NoError(t, err)
	require.NotEmpty(t, rows)
	assert.Equal(t, seqs[4], rows[0].Seq, "the first row left: the one after node b's")
	require.NoError(t, b.PruneIndexLog(ctx, seqs[9]))
	rows, err = a.IndexLog(ctx, 0, 100)
	require.NoError(t, err)
	assert.Empty(t, rows, "rows every node applied")
}

// On PostgreSQL, a node hears of a page recorded with a document and of
// the end of a job another node runs, as soon as it is committed, and of
// no other job; on SQLite (one node alone) there are no notices.
func TestJobChangesCrossNodes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nodes := openNodes(t, 2, time.Minute)
	a, b := nodes[0], nodes[1]
	now := time.Now()
	for _, id := range []string{"watched", "other"} {
		require.NoError(t, a.CreateJob(ctx, Job{ID: id, Team: "acme", Kind: "crawl", Status: "scraping", Request: []byte(`{}`),
			CreatedAt: now, ExpiresAt: now.Add(time.Hour)}, []JobURL{
			{Key: "0", URL: "http://a.test/0", State: URLQueued}, {Key: "1", URL: "http://a.test/1", Seq: 1, State: URLQueued}}, nil))
	}
	changed, stop := b.JobChanges("watched")
	defer stop()
	if a.dialect.name == "sqlite" {
		assert.Nil(t, changed, "notices on SQLite")
		return
	}
	// The listener's first connection wakes every subscriber once.
	heard := func() bool {
		select {
		case <-changed:
			return true
		case <-time.After(5 * time.Second):
			return false
		}
	}
	require.True(t, heard(), "no wake-up when the listener connected")
	quiet := func(what string) {
		select {
		case <-changed:
			t.Errorf("a notice for %s", what)
		case <-time.After(300 * time.Millisecond):
		}
	}

	_, err := a.FinishJobURL(ctx, "other", JobURL{Key: "0", State: URLDone, Document: []byte(`{}`)}, true, nil, 1, nil)
	require.NoError(t, err)
	quiet("another job's page")
	_, err = a.FinishJobURL(ctx, "watched", JobURL{Key: "0", State: URLFailed, Error: "boom"}, false, nil, 0, nil)
	require.NoError(t, err)
	quiet("a page without a document")
	_, err = a.FinishJobURL(ctx, "watched", JobURL{Key: "1", State: URLDone, Document: []byte(`{}`)}, true, nil, 1, nil)
	require.NoError(t, err)
	assert.True(t, heard(), "no notice of the watched job's page")
	require.NoError(t, a.FinishJob(ctx, "watched", "completed", "", now, now.Add(time.Hour), nil))
	assert.True(t, heard(), "no notice of the watched job's end")
	stop()
	require.NoError(t, a.FinishJob(ctx, "other", "completed", "", now, now.Add(time.Hour), nil))
	quiet("after the subscription stopped")
}

// The nodes together hold at most a host's limit of its places; a place
// given back is free for any node, and a dead node's places lapse.
func TestHostPlacesAcrossNodes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nodes := openNodes(t, 2, time.Minute)
	a, b := nodes[0], nodes[1]
	now := time.Now()
	until := now.Add(time.Minute)
	take := func(s *Store, host string) bool {
		ok, err := s.TakePlace(ctx, HostPlace(host), 2, now, until)
		require.NoError(t, err)
		return ok
	}
	assert.True(t, take(a, "h.test"), "node a's first place")
	assert.True(t, take(b, "h.test"), "node b's first place")
	assert.False(t, take(a, "h.test"), "a third place of a host with a limit of 2")
	assert.True(t, take(a, "other.test"), "another host's place")
	ok, err := a.TakePlace(ctx, TeamPlace("h.test"), 1, now, until)
	require.NoError(t, err)
	assert.True(t, ok, "a team's place is not a host's of the same name")
	require.NoError(t, b.GivePlace(ctx, HostPlace("h.test")))
	assert.True(t, take(a, "h.test"), "the place node b gave back")
	assert.False(t, take(b, "h.test"), "node a holds both")

	// Node a stops renewing: a minute later its places lapse.
	later := now.Add(2 * time.Minute)
	ok, err = b.TakePlace(ctx, HostPlace("h.test"), 2, later, later.Add(time.Minute))
	require.NoError(t, err)
	assert.True(t, ok, "a place of a node whose places lapsed")
	require.NoError(t, b.RenewPlaces(ctx, later.Add(time.Hour)))
	ok, err = b.TakePlace(ctx, HostPlace("h.test"), 1, later.Add(30*time.Minute), later.Add(time.Hour))
	require.NoError(t, err)
	assert.False(t, ok, "node b's renewed place still counts")

	require.NoError(t, a.Heartbeat(ctx, now))
	alive, err := b.OthersAlive(ctx, now.Add(-time.Second))
	require.NoError(t, err)
	assert.True(t, alive, "node a, seen just now, for node b")
	alive, err = a.OthersAlive(ctx, now.Add(-time.Second))
	require.NoError(t, err)
	assert.False(t, alive, "node b never said it is alive")
}
