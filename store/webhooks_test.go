package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// dueWebhooks claims the events due at now, listed as job:payload. Its zero
// lease moves their next_at to now, so that they stay due at now and later
// and the test can ask again.
func dueWebhooks(t *testing.T, s *Store, now time.Time, limit int) []string {
	t.Helper()
	due, err := s.ClaimWebhookEvents(context.Background(), now, 0, limit)
	require.NoError(t, err)
	var out []string
	for _, e := range due {
		out = append(out, e.JobID+":"+string(e.Payload))
	}
	return out
}

func TestWebhookEventsDueInOrderPerJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTemp(t)
	t0 := time.Now().Add(-time.Minute)
	add := func(job, payload string) {
		t.Helper()
		e := WebhookEvent{JobID: job, Team: "acme", Target: []byte(`{"url":"http://hook.example"}`), Payload: []byte(payload), NextAt: t0}
		require.NoError(t, s.AddWebhookEvent(ctx, e))
	}
	add("a", "a1")
	add("b", "b1")
	add("a", "a2")
	add("c", "c1")

	events, err := s.WebhookEvents(ctx, "a")
	require.NoError(t, err, "WebhookEvents(a)")
	require.Len(t, events, 2, "WebhookEvents(a)")
	a1, a2 := events[0], events[1]
	if a1.State != WebhookPending || a1.Attempts != 0 || a1.Team != "acme" || string(a1.Target) != `{"url":"http://hook.example"}` ||
		a1.CreatedAt.IsZero() || !a1.NextAt.Equal(t0.Truncate(time.Millisecond)) {
		t.Fatalf("stored event: %+v", a1)
	}

	require.Equal(t, []string{"a:a1", "b:b1", "c:c1"}, dueWebhooks(t, s, time.Now(), 0), "due: the oldest pending event of each job")
	require.Len(t, dueWebhooks(t, s, time.Now(), 2), 2, "due with limit 2")

	// a1 waits for a retry: a2, although due, must not overtake it.
	next := time.Now().Add(time.Hour)
	require.NoError(t, s.MarkWebhookRetry(ctx, a1.ID, 1, next, "answered 500"))
	require.Equal(t, []string{"b:b1", "c:c1"}, dueWebhooks(t, s, time.Now(), 0), "due while a1 waits")
	require.Equal(t, []string{"a:a1", "b:b1", "c:c1"}, dueWebhooks(t, s, next, 0), "due once a1's retry is due")

	// Once a1 is done (either way) a2 is next. From here on the events are
	// asked for at next, which the last claim moved b1 and c1 to.
	require.NoError(t, s.MarkWebhookFailed(ctx, a1.ID, 5, "answered 500"))
	require.Equal(t, []string{"b:b1", "a:a2", "c:c1"}, dueWebhooks(t, s, next, 0), "due after a1 failed")
	require.NoError(t, s.MarkWebhookDelivered(ctx, a2.ID, 2))
	events, _ = s.WebhookEvents(ctx, "a")
	if events[0].State != WebhookFailed || events[0].Attempts != 5 || events[0].LastError != "answered 500" ||
		events[1].State != WebhookDelivered || events[1].Attempts != 2 {
		t.Fatalf("after marking: %+v", events)
	}
	require.Equal(t, []string{"b:b1", "c:c1"}, dueWebhooks(t, s, next, 0), "due after a is done")

	require.ErrorIs(t, s.MarkWebhookDelivered(ctx, 9999, 1), ErrNotFound, "marking a missing event")
}

func TestWebhookEventInsideTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTemp(t)
	for _, commit := range []bool{false, true} {
		tx, err := s.db.BeginTx(ctx, nil)
		require.NoError(t, err)
		// A caller-supplied state is ignored: a new event is always pending.
		e := WebhookEvent{JobID: "j", Team: "acme", Target: []byte(`{}`), Payload: []byte(`{}`), State: WebhookDelivered}
		require.NoError(t, insertWebhookEvent(ctx, tx, e))
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		require.NoError(t, err)
	}
	events, err := s.WebhookEvents(ctx, "j")
	require.NoError(t, err, "after one rollback and one commit")
	require.Len(t, events, 1, "after one rollback and one commit")
	require.Equal(t, WebhookPending, events[0].State, "after one rollback and one commit")
	require.Len(t, dueWebhooks(t, s, time.Now(), 0), 1, "an event with no NextAt is not due at once")
}

func TestPruneWebhookEventsKeepsPending(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTemp(t)
	old := time.Now().Add(-48 * time.Hour)
	for _, p := range []string{"delivered", "failed", "pending", "recent"} {
		e := WebhookEvent{JobID: "j", Team: "acme", Target: []byte(`{}`), Payload: []byte(p), CreatedAt: old}
		if p == "recent" {
			e.CreatedAt = time.Time{}
		}
		require.NoError(t, s.AddWebhookEvent(ctx, e))
	}
	events, _ := s.WebhookEvents(ctx, "j")
	s.MarkWebhookDelivered(ctx, events[0].ID, 1)
	s.MarkWebhookFailed(ctx, events[1].ID, 3, "gone")
	s.MarkWebhookDelivered(ctx, events[3].ID, 1)

	require.NoError(t, s.PruneWebhookEvents(ctx, time.Now().Add(-24*time.Hour)))
	events, _ = s.WebhookEvents(ctx, "j")
	var left []string
	for _, e := range events {
		left = append(left, string(e.Payload))
	}
	require.Equal(t, []string{"pending", "recent"}, left, "after pruning")
}

// Dispatchers of several nodes claim from one database at once: every due
// event goes to exactly one of them.
func TestClaimWebhookEventsOnceAcrossStores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	open := testDB(t)
	var stores []*Store
	for range 4 {
		s, err := open(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		stores = append(stores, s)
	}
	t0 := time.Now().Add(-time.Minute)
	var jobs []string
	for j := range 40 {
		job := fmt.Sprint("job-", j)
		jobs = append(jobs, job)
		for n := range 2 {
			e := WebhookEvent{JobID: job, Team: "acme", Target: []byte(`{}`), Payload: []byte(fmt.Sprint(n)), NextAt: t0}
			require.NoError(t, stores[0].AddWebhookEvent(ctx, e))
		}
	}
	// Only each job's first event is due: the second waits for it.
	var want []int64
	for _, job := range jobs {
		events, err := stores[0].WebhookEvents(ctx, job)
		require.NoError(t, err)
		want = append(want, events[0].ID)
	}

	now := time.Now()
	const lease = time.Hour
	var (
		mu      sync.Mutex
		claimed []int64
		wg      sync.WaitGroup
	)
	begin := make(chan struct{})
	for i := range 16 {
		s := stores[i%len(stores)]
		wg.Go(func() {
			<-begin
			for {
				events, err := s.ClaimWebhookEvents(ctx, now, lease, 3)
				if err != nil {
					t.Errorf("claiming: %v", err)
					return
				}
				if len(events) == 0 {
					return
				}
				mu.Lock()
				for _, e := range events {
					claimed = append(claimed, e.ID)
					if !e.NextAt.Equal(now.Add(lease).Truncate(time.Millisecond)) || e.State != WebhookPending {
						t.Errorf("claimed event: %+v", e)
					}
				}
				mu.Unlock()
			}
		})
	}
	close(begin)
	wg.Wait()
	// A claim that lost every row it picked to a concurrent one returns
	// nothing while others may still be due: one more claim, alone, takes
	// whatever is left.
	rest, err := stores[0].ClaimWebhookEvents(ctx, now, lease, 0)
	require.NoError(t, err)
	for _, e := range rest {
		claimed = append(claimed, e.ID)
	}
	require.ElementsMatch(t, want, claimed, "the claimed events: each due one exactly once")
}

// A claimed event whose outcome is not recorded (its node died) is due again
// once its lease has passed; a job's next event waits for it meanwhile.
func TestClaimedWebhookEventDueAgainAfterLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTemp(t)
	t0 := time.Now().Add(-time.Minute)
	for _, ev := range [][2]string{{"a", "a1"}, {"a", "a2"}, {"b", "b1"}} {
		e := WebhookEvent{JobID: ev[0], Team: "acme", Target: []byte(`{}`), Payload: []byte(ev[1]), NextAt: t0}
		require.NoError(t, s.AddWebhookEvent(ctx, e))
	}
	claim := func(now time.Time) []string {
		t.Helper()
		events, err := s.ClaimWebhookEvents(ctx, now, time.Minute, 0)
		require.NoError(t, err)
		var out []string
		for _, e := range events {
			out = append(out, string(e.Payload))
		}
		return out
	}
	now := time.Now()
	require.Equal(t, []string{"a1", "b1"}, claim(now), "the first claim")
	require.Empty(t, claim(now), "claimed again at once")
	require.Empty(t, claim(now.Add(time.Minute-time.Millisecond)), "claimed again within the lease")
	later := now.Add(time.Minute)
	require.Equal(t, []string{"a1", "b1"}, claim(later), "claimed again once the lease has passed")

	events, err := s.WebhookEvents(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, WebhookPending, events[0].State, "a1 after its claims")
	require.Equal(t, 0, events[0].Attempts, "a1 after its claims")
	require.NoError(t, s.MarkWebhookDelivered(ctx, events[0].ID, 1))
	require.Equal(t, []string{"a2"}, claim(later), "claimed once a1 is delivered")
}
