package store

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// dueIDs lists the payloads of the events due at now, as job:payload.
func dueWebhooks(t *testing.T, s *Store, now time.Time, limit int) []string {
	t.Helper()
	due, err := s.DueWebhookEvents(context.Background(), now, limit)
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

	require.Equal(t, []string{"a:a1", "b:b1", "c:c1"}, dueWebhooks(t, s, time.Now(), 0), "due: the oldest pending event of each job")
	require.Len(t, dueWebhooks(t, s, time.Now(), 2), 2, "due with limit 2")

	events, err := s.WebhookEvents(ctx, "a")
	require.NoError(t, err, "WebhookEvents(a)")
	require.Len(t, events, 2, "WebhookEvents(a)")
	a1, a2 := events[0], events[1]
	if a1.State != WebhookPending || a1.Attempts != 0 || a1.Team != "acme" || string(a1.Target) != `{"url":"http://hook.example"}` ||
		a1.CreatedAt.IsZero() || !a1.NextAt.Equal(t0.Truncate(time.Millisecond)) {
		t.Fatalf("stored event: %+v", a1)
	}

	// a1 waits for a retry: a2, although due, must not overtake it.
	next := time.Now().Add(time.Hour)
	require.NoError(t, s.MarkWebhookRetry(ctx, a1.ID, 1, next, "answered 500"))
	require.Equal(t, []string{"b:b1", "c:c1"}, dueWebhooks(t, s, time.Now(), 0), "due while a1 waits")
	require.Equal(t, []string{"b:b1", "c:c1", "a:a1"}, dueWebhooks(t, s, next, 0), "due once a1's retry is due")

	// Once a1 is done (either way) a2 is next.
	require.NoError(t, s.MarkWebhookFailed(ctx, a1.ID, 5, "answered 500"))
	require.Equal(t, []string{"b:b1", "a:a2", "c:c1"}, dueWebhooks(t, s, time.Now(), 0), "due after a1 failed")
	require.NoError(t, s.MarkWebhookDelivered(ctx, a2.ID, 2))
	events, _ = s.WebhookEvents(ctx, "a")
	if events[0].State != WebhookFailed || events[0].Attempts != 5 || events[0].LastError != "answered 500" ||
		events[1].State != WebhookDelivered || events[1].Attempts != 2 {
		t.Fatalf("after marking: %+v", events)
	}
	require.Equal(t, []string{"b:b1", "c:c1"}, dueWebhooks(t, s, time.Now(), 0), "due after a is done")

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
