package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

func TestReopenKeepsDataAndSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	rec := Session{ID: "s1", Team: "acme", Status: "active", TTL: time.Minute, ActivityTTL: 30 * time.Second,
		CDPToken: "c", ViewToken: "v", InteractToken: "i", CreatedAt: now, ExpiresAt: now.Add(time.Minute), LastActivity: now}
	if err := s.InsertSession(ctx, rec); err != nil {
		t.Fatal(err)
	}
	var mode string
	s.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode)
	if mode != "wal" {
		t.Fatalf("journal_mode = %q, want wal", mode)
	}
	s.Close()

	s, err = Open(ctx, path) // migrations already applied: nothing re-run
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.TeamSession(ctx, "acme", "s1")
	if err != nil || got.TTL != time.Minute || !got.CreatedAt.Equal(now) || got.CDPToken != "c" {
		t.Fatalf("after reopen: %+v, %v", got, err)
	}
	if _, err := s.TeamSession(ctx, "globex", "s1"); err != ErrNotFound {
		t.Fatalf("another team's session: %v, want ErrNotFound", err)
	}
	n, err := s.EndActiveSessions(ctx, "service restarted")
	if err != nil || n != 1 {
		t.Fatalf("EndActiveSessions = %d, %v", n, err)
	}
	got, _ = s.Session(ctx, "s1")
	if got.Status != "destroyed" || got.EndReason != "service restarted" || got.DestroyedAt.IsZero() {
		t.Fatalf("orphaned session: %+v", got)
	}
}

func TestActivityWindowAndTeams(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	for _, a := range []Activity{
		{ID: "old", Team: "acme", Endpoint: "browser", APIVersion: "v2", CreatedAt: now.Add(-25 * time.Hour)},
		{ID: "new", Team: "acme", Endpoint: "browser", APIVersion: "v2", CreatedAt: now.Add(-time.Hour)},
		{ID: "scr", Team: "acme", Endpoint: "scrape", APIVersion: "v2", CreatedAt: now},
		{ID: "theirs", Team: "globex", Endpoint: "browser", APIVersion: "v2", CreatedAt: now},
	} {
		if err := s.AddActivity(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	got, next, err := s.ListActivity(ctx, ActivityQuery{Team: "acme", Since: now.Add(-24 * time.Hour), Limit: 10})
	if err != nil || next != "" || len(got) != 2 || got[0].ID != "scr" || got[1].ID != "new" {
		t.Fatalf("acme's last 24 h: %+v %q %v", got, next, err)
	}
	got, _, _ = s.ListActivity(ctx, ActivityQuery{Team: "acme", Endpoint: "scrape", Since: now.Add(-24 * time.Hour), Limit: 10})
	if len(got) != 1 || got[0].ID != "scr" {
		t.Fatalf("filtered by endpoint: %+v", got)
	}
	if _, _, err := s.ListActivity(ctx, ActivityQuery{Team: "acme", Cursor: "%%%", Limit: 1}); err != ErrBadCursor {
		t.Fatalf("bad cursor: %v", err)
	}
}
