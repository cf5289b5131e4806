package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPageCacheScope is who may read a cache entry: the team that fetched
// it; with the cache shared, other teams too, but only for pages fetched
// from public addresses; and, with the network guard on, nobody for pages
// fetched from non-public ones.
func TestPageCacheScope(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTemp(t)
	now := time.Now()
	put := func(team, key string, private bool, age time.Duration, shot string) {
		t.Helper()
		_, err := s.PutPage(ctx, CachedPage{Team: team, Key: key, URL: "http://" + key + "/", CreatedAt: now.Add(-age),
			StatusCode: 200, FinalURL: "http://" + key + "/", ContentType: "text/html", Body: []byte(team + " " + key),
			Screenshot: shot, Private: private})
		require.NoError(t, err)
	}
	put("acme", "public", false, time.Hour, "")
	put("acme", "intranet", true, time.Hour, "")
	put("acme", "both", false, 2*time.Hour, "")
	put("globex", "both", false, time.Hour, "shot")

	for _, tc := range []struct {
		name string
		q    PageLookup
		want string // the body of the answer, "" for ErrNotFound
	}{
		{"own public page", PageLookup{Team: "acme", Key: "public"}, "acme public"},
		{"own private page", PageLookup{Team: "acme", Key: "intranet"}, "acme intranet"},
		{"own private page, guard on", PageLookup{Team: "acme", Key: "intranet", PublicOnly: true}, ""},
		{"own public page, guard on", PageLookup{Team: "acme", Key: "public", PublicOnly: true}, "acme public"},
		{"another team's public page", PageLookup{Team: "globex", Key: "public"}, ""},
		{"another team's public page, shared", PageLookup{Team: "globex", Key: "public", Shared: true}, "acme public"},
		{"another team's private page, shared", PageLookup{Team: "globex", Key: "intranet", Shared: true}, ""},
		{"own entry only", PageLookup{Team: "acme", Key: "both"}, "acme both"},
		{"shared: the newest entry", PageLookup{Team: "acme", Key: "both", Shared: true}, "globex both"},
		{"shared: the newest one old enough", PageLookup{Team: "acme", Key: "both", Shared: true, Before: now.Add(-90 * time.Minute)}, "acme both"},
		{"young enough", PageLookup{Team: "acme", Key: "public", After: now.Add(-2 * time.Hour)}, "acme public"},
		{"too old", PageLookup{Team: "acme", Key: "public", After: now.Add(-30 * time.Minute)}, ""},
		{"not old enough", PageLookup{Team: "acme", Key: "public", Before: now.Add(-2 * time.Hour)}, ""},
		{"with a screenshot", PageLookup{Team: "acme", Key: "both", Shared: true, Screenshot: true}, "globex both"},
		{"own entry lacks the screenshot", PageLookup{Team: "acme", Key: "both", Screenshot: true}, ""},
		{"unknown team", PageLookup{Key: "public"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := s.Page(ctx, tc.q)
			if tc.want == "" {
				require.ErrorIs(t, err, ErrNotFound, "got %q", p.Body)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, string(p.Body))
		})
	}

	// A team's new fetch replaces its own entry and no other team's.
	put("acme", "public", true, 0, "")
	p, err := s.Page(ctx, PageLookup{Team: "acme", Key: "public"})
	require.NoError(t, err, "replaced entry")
	require.True(t, p.Private && p.Team == "acme", "replaced entry: %+v", p)
	_, err = s.Page(ctx, PageLookup{Team: "globex", Key: "public", Shared: true})
	require.ErrorIs(t, err, ErrNotFound, "a page now fetched privately is still shared")
}

// TestPageCacheMigrationDropsUnscopedEntries: entries written before the
// cache had owners cannot say whose they are or where they came from, so
// the upgrade drops them.
func TestPageCacheMigrationDropsUnscopedEntries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.db")
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	exec := func(query string, args ...any) {
		t.Helper()
		_, err := db.Exec(query, args...)
		require.NoError(t, err)
	}
	exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY)`)
	for v := 1; v <= 3; v++ {
		exec(migrations[v-1])
		exec(`INSERT INTO schema_migrations(version) VALUES (?)`, v)
	}
	exec(`INSERT INTO page_cache (key, url, created_at, status_code, final_url, content_type, body)
		VALUES ('k', 'http://127.0.0.1/', ?, 200, 'http://127.0.0.1/', 'text/html', 'old')`, time.Now().UnixMilli())
	db.Close()

	s, err := Open(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	for _, q := range []PageLookup{{Key: "k"}, {Team: "acme", Key: "k", Shared: true}} {
		_, err := s.Page(ctx, q)
		require.ErrorIs(t, err, ErrNotFound, "an entry of the old cache survived the upgrade")
	}
	_, err = s.PutPage(ctx, CachedPage{Team: "acme", Key: "k", CreatedAt: time.Now(), Body: []byte("new")})
	require.NoError(t, err)
	p, err := s.Page(ctx, PageLookup{Team: "acme", Key: "k"})
	require.NoError(t, err, "after the upgrade")
	require.Equal(t, "new", string(p.Body), "after the upgrade")
}
