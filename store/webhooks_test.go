package store

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func openWebhookStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// dueIDs lists the payloads of the events due at now, as job:payload.
func dueWebhooks(t *testing.T, s *Store, now time.Time, limit int) []string {
	t.Helper()
	due, err := s.DueWebhookEvents(context.Background(), now, limit)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range due {
		out = append(out, e.JobID+":"+string(e.Payload))
	}
	return out
}

func TestWebhookEventsDueInOrderPerJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openWebhookStore(t)
	t0 := time.Now().Add(-time.Minute)
	add := func(job, payload string) {
		t.Helper()
		e := WebhookEvent{JobID: job, Team: "acme", Target: []byte(`{"url":"http://hook.example"}`), Payload: []byte(payload), NextAt: t0}
		if err := s.AddWebhookEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	add("a", "a1")
	add("b", "b1")
	add("a", "a2")
	add("c", "c1")

	if got, want := dueWebhooks(t, s, time.Now(), 0), []string{"a:a1", "b:b1", "c:c1"}; !slices.Equal(got, want) {
		t.Fatalf("due = %v, want %v (the oldest pending event of each job)", got, want)
	}
	if got := dueWebhooks(t, s, time.Now(), 2); len(got) != 2 {
		t.Fatalf("limit 2 gave %v", got)
	}

	events, err := s.WebhookEvents(ctx, "a")
	if err != nil || len(events) != 2 {
		t.Fatalf("WebhookEvents(a) = %v, %v", events, err)
	}
	a1, a2 := events[0], events[1]
	if a1.State != WebhookPending || a1.Attempts != 0 || a1.Team != "acme" || string(a1.Target) != `{"url":"http://hook.example"}` ||
		a1.CreatedAt.IsZero() || !a1.NextAt.Equal(t0.Truncate(time.Millisecond)) {
		t.Fatalf("stored event: %+v", a1)
	}

	// a1 waits for a retry: a2, although due, must not overtake it.
	next := time.Now().Add(time.Hour)
	if err := s.MarkWebhookRetry(ctx, a1.ID, 1, next, "answered 500"); err != nil {
		t.Fatal(err)
	}
	if got, want := dueWebhooks(t, s, time.Now(), 0), []string{"b:b1", "c:c1"}; !slices.Equal(got, want) {
		t.Fatalf("due while a1 waits = %v, want %v", got, want)
	}
	if got, want := dueWebhooks(t, s, next, 0), []string{"b:b1", "c:c1", "a:a1"}; !slices.Equal(got, want) {
		t.Fatalf("due once a1's retry is due = %v, want %v", got, want)
	}

	// Once a1 is done (either way) a2 is next.
	if err := s.MarkWebhookFailed(ctx, a1.ID, 5, "answered 500"); err != nil {
		t.Fatal(err)
	}
	if got, want := dueWebhooks(t, s, time.Now(), 0), []string{"b:b1", "a:a2", "c:c1"}; !slices.Equal(got, want) {
		t.Fatalf("due after a1 failed = %v, want %v", got, want)
	}
	if err := s.MarkWebhookDelivered(ctx, a2.ID, 2); err != nil {
		t.Fatal(err)
	}
	events, _ = s.WebhookEvents(ctx, "a")
	if events[0].State != WebhookFailed || events[0].Attempts != 5 || events[0].LastError != "answered 500" ||
		events[1].State != WebhookDelivered || events[1].Attempts != 2 {
		t.Fatalf("after marking: %+v", events)
	}
	if got, want := dueWebhooks(t, s, time.Now(), 0), []string{"b:b1", "c:c1"}; !slices.Equal(got, want) {
		t.Fatalf("due after a is done = %v, want %v", got, want)
	}

	if err := s.MarkWebhookDelivered(ctx, 9999, 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("marking a missing event: %v, want ErrNotFound", err)
	}
}

func TestWebhookEventInsideTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openWebhookStore(t)
	for _, commit := range []bool{false, true} {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		// A caller-supplied state is ignored: a new event is always pending.
		e := WebhookEvent{JobID: "j", Team: "acme", Target: []byte(`{}`), Payload: []byte(`{}`), State: WebhookDelivered}
		if err := insertWebhookEvent(ctx, tx, e); err != nil {
			t.Fatal(err)
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	events, err := s.WebhookEvents(ctx, "j")
	if err != nil || len(events) != 1 || events[0].State != WebhookPending {
		t.Fatalf("after one rollback and one commit: %+v, %v", events, err)
	}
	if got := dueWebhooks(t, s, time.Now(), 0); len(got) != 1 {
		t.Fatalf("an event with no NextAt is not due at once: %v", got)
	}
}

func TestPruneWebhookEventsKeepsPending(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openWebhookStore(t)
	old := time.Now().Add(-48 * time.Hour)
	for _, p := range []string{"delivered", "failed", "pending", "recent"} {
		e := WebhookEvent{JobID: "j", Team: "acme", Target: []byte(`{}`), Payload: []byte(p), CreatedAt: old}
		if p == "recent" {
			e.CreatedAt = time.Time{}
		}
		if err := s.AddWebhookEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	events, _ := s.WebhookEvents(ctx, "j")
	s.MarkWebhookDelivered(ctx, events[0].ID, 1)
	s.MarkWebhookFailed(ctx, events[1].ID, 3, "gone")
	s.MarkWebhookDelivered(ctx, events[3].ID, 1)

	if err := s.PruneWebhookEvents(ctx, time.Now().Add(-24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	events, _ = s.WebhookEvents(ctx, "j")
	var left []string
	for _, e := range events {
		left = append(left, string(e.Payload))
	}
	if want := []string{"pending", "recent"}; !slices.Equal(left, want) {
		t.Fatalf("after pruning: %v, want %v", left, want)
	}
}
