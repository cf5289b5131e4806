package store

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestReopenKeepsDataAndSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	open := testDB(t)
	s, err := open(ctx)
	require.NoError(t, err)
	now := time.Now().UTC().Truncate(time.Millisecond)
	rec := Session{ID: "s1", Team: "acme", Status: "active", TTL: time.Minute, ActivityTTL: 30 * time.Second,
		CDPToken: "c", ViewToken: "v", InteractToken: "i", CreatedAt: now, ExpiresAt: now.Add(time.Minute), LastActivity: now}
	require.NoError(t, s.InsertSession(ctx, rec))
	if s.dialect == sqliteDialect {
		var mode string
		s.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode)
		require.Equal(t, "wal", mode, "journal_mode")
	}
	s.Close()

	s, err = open(ctx) // migrations already applied: nothing re-run
	require.NoError(t, err)
	defer s.Close()
	got, err := s.TeamSession(ctx, "acme", "s1")
	require.NoError(t, err, "after reopen")
	if got.TTL != time.Minute || !got.CreatedAt.Equal(now) || got.CDPToken != "c" {
		t.Fatalf("after reopen: %+v", got)
	}
	_, err = s.TeamSession(ctx, "globex", "s1")
	require.ErrorIs(t, err, ErrNotFound, "another team's session")
	n, err := s.EndActiveSessions(ctx, "service restarted", func(time.Duration) int { return 2 })
	require.NoError(t, err, "EndActiveSessions")
	require.Equal(t, 1, n, "sessions EndActiveSessions ended")
	charges, err := s.Charges(ctx, "s1")
	require.NoError(t, err)
	if len(charges) != 1 || charges[0].Team != "acme" || charges[0].Kind != CreditBrowser || charges[0].Credits != 2 {
		t.Fatalf("the orphaned session's charge: %+v", charges)
	}
	got, _ = s.Session(ctx, "s1")
	if got.Status != "destroyed" || got.EndReason != "service restarted" || got.DestroyedAt.IsZero() {
		t.Fatalf("orphaned session: %+v", got)
	}
}

func TestActivityWindowAndTeams(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTemp(t)
	now := time.Now()
	for _, a := range []Activity{
		{ID: "old", Team: "acme", Endpoint: "browser", APIVersion: "v2", CreatedAt: now.Add(-25 * time.Hour)},
		{ID: "new", Team: "acme", Endpoint: "browser", APIVersion: "v2", CreatedAt: now.Add(-time.Hour)},
		{ID: "scr", Team: "acme", Endpoint: "scrape", APIVersion: "v2", CreatedAt: now},
		{ID: "theirs", Team: "globex", Endpoint: "browser", APIVersion: "v2", CreatedAt: now},
	} {
		require.NoError(t, s.AddActivity(ctx, a))
	}
	ids := func(as []Activity) []string {
		var out []string
		for _, a := range as {
			out = append(out, a.ID)
		}
		return out
	}
	got, next, err := s.ListActivity(ctx, ActivityQuery{Team: "acme", Since: now.Add(-24 * time.Hour), Limit: 10})
	require.NoError(t, err, "acme's last 24 h")
	require.Equal(t, []string{"scr", "new"}, ids(got), "acme's last 24 h")
	require.Empty(t, next, "acme's last 24 h: next cursor")
	got, _, _ = s.ListActivity(ctx, ActivityQuery{Team: "acme", Endpoint: "scrape", Since: now.Add(-24 * time.Hour), Limit: 10})
	require.Equal(t, []string{"scr"}, ids(got), "filtered by endpoint")
	_, _, err = s.ListActivity(ctx, ActivityQuery{Team: "acme", Cursor: "%%%", Limit: 1})
	require.ErrorIs(t, err, ErrBadCursor, "bad cursor")
}
