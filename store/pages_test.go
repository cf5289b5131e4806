package store

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// TestPageCacheScope is who may read a cache entry: the team that fetched
// it; with the cache shared, other teams too, but only for pages fetched
// from public addresses; and, with the network guard on, nobody for pages
// fetched from non-public ones.
func TestPageCacheScope(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	put := func(team, key string, private bool, age time.Duration, shot string) {
		t.Helper()
		err := s.PutPage(ctx, CachedPage{Team: team, Key: key, URL: "http://" + key + "/", CreatedAt: now.Add(-age),
			StatusCode: 200, FinalURL: "http://" + key + "/", ContentType: "text/html", Body: []byte(team + " " + key),
			Screenshot: shot, Private: private})
		if err != nil {
			t.Fatal(err)
		}
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
			switch {
			case tc.want == "" && !errors.Is(err, ErrNotFound):
				t.Fatalf("got %q, %v; want ErrNotFound", p.Body, err)
			case tc.want != "" && (err != nil || string(p.Body) != tc.want):
				t.Fatalf("got %q, %v; want %q", p.Body, err, tc.want)
			}
		})
	}

	// A team's new fetch replaces its own entry and no other team's.
	put("acme", "public", true, 0, "")
	if p, err := s.Page(ctx, PageLookup{Team: "acme", Key: "public"}); err != nil || !p.Private || p.Team != "acme" {
		t.Fatalf("replaced entry: %+v, %v", p, err)
	}
	if _, err := s.Page(ctx, PageLookup{Team: "globex", Key: "public", Shared: true}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a page now fetched privately is still shared: %v", err)
	}
}

// TestPageCacheMigrationDropsUnscopedEntries: entries written before the
// cache had owners cannot say whose they are or where they came from, so
// the upgrade drops them.
func TestPageCacheMigrationDropsUnscopedEntries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	for v := 1; v <= 3; v++ {
		if _, err := db.Exec(migrations[v-1]); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`INSERT INTO schema_migrations(version) VALUES (?)`, v); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`INSERT INTO page_cache (key, url, created_at, status_code, final_url, content_type, body)
		VALUES ('k', 'http://127.0.0.1/', ?, 200, 'http://127.0.0.1/', 'text/html', 'old')`, time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, q := range []PageLookup{{Key: "k"}, {Team: "acme", Key: "k", Shared: true}} {
		if _, err := s.Page(ctx, q); !errors.Is(err, ErrNotFound) {
			t.Fatalf("an entry of the old cache survived the upgrade: %v", err)
		}
	}
	if err := s.PutPage(ctx, CachedPage{Team: "acme", Key: "k", CreatedAt: time.Now(), Body: []byte("new")}); err != nil {
		t.Fatal(err)
	}
	if p, err := s.Page(ctx, PageLookup{Team: "acme", Key: "k"}); err != nil || string(p.Body) != "new" {
		t.Fatalf("after the upgrade: %q, %v", p.Body, err)
	}
}
