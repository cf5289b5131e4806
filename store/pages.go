package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// CachedPage is a page as fetched, before any transform, so that one cache
// entry serves every combination of output formats.
type CachedPage struct {
	// Team is the team that fetched the page: the entry is its own.
	Team        string
	Key         string
	URL         string
	CreatedAt   time.Time
	StatusCode  int
	FinalURL    string
	ContentType string
	Body        []byte
	Screenshot  string
	Engine      string
	// Private: the page (or a request it made) reached a non-public
	// address. Such a page is never another team's, and never answers
	// while the network guard is on.
	Private bool
}

// PageLookup says which cache entries may answer a request. The newest
// entry that qualifies is the answer.
type PageLookup struct {
	Team string
	Key  string
	// Shared lets another team's entry answer too, when it was fetched from
	// public addresses only (TRAWLER_SHARED_CACHE).
	Shared bool
	// PublicOnly refuses entries fetched from non-public addresses, the
	// team's own too: the network guard is on.
	PublicOnly bool
	// After and Before bound the entry's creation time (exclusive and
	// inclusive); zero means no bound.
	After, Before time.Time
	// Screenshot asks for an entry that holds a screenshot.
	Screenshot bool
}

// PutPage stores (or replaces) the team's cache entry, and logs it for the
// search index in the same transaction; it returns the log row's number.
func (s *Store) PutPage(ctx context.Context, p CachedPage) (seq int64, err error) {
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO page_cache (team_id, key, url, created_at, status_code,
			final_url, content_type, body, screenshot, engine, private) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (team_id, key) DO UPDATE SET url = excluded.url, created_at = excluded.created_at,
			status_code = excluded.status_code, final_url = excluded.final_url, content_type = excluded.content_type,
			body = excluded.body, screenshot = excluded.screenshot, engine = excluded.engine, private = excluded.private`,
			p.Team, p.Key, p.URL, millis(p.CreatedAt), p.StatusCode, p.FinalURL, p.ContentType, p.Body, p.Screenshot,
			p.Engine, p.Private)
		if err != nil {
			return err
		}
		if err := s.lockIndexLog(ctx, tx); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `INSERT INTO index_log (team_id, key, final_url, deleted)
			VALUES (?, ?, ?, FALSE) RETURNING seq`, p.Team, p.Key, p.FinalURL).Scan(&seq)
	})
	if err != nil {
		return 0, fmt.Errorf("caching %s: %w", p.URL, err)
	}
	return seq, nil
}

// Page returns the newest cache entry that q allows, or ErrNotFound.
func (s *Store) Page(ctx context.Context, q PageLookup) (CachedPage, error) {
	where := `key = ? AND (team_id = ?`
	args := []any{q.Key, q.Team}
	if q.Shared {
		where += ` OR private = FALSE`
	}
	where += `)`
	if q.PublicOnly {
		where += ` AND private = FALSE`
	}
	if !q.After.IsZero() {
		where += ` AND created_at > ?`
		args = append(args, millis(q.After))
	}
	if !q.Before.IsZero() {
		where += ` AND created_at <= ?`
		args = append(args, millis(q.Before))
	}
	if q.Screenshot {
		where += ` AND screenshot != ''`
	}
	return s.onePage(ctx, where+` ORDER BY created_at DESC LIMIT 1`, args...)
}

// pageColumns are the columns scanPage reads, in its order.
const pageColumns = `team_id, key, url, created_at, status_code, final_url, content_type, body, screenshot, engine,
	private`

func scanPage(row interface{ Scan(...any) error }) (CachedPage, error) {
	var p CachedPage
	var created int64
	err := row.Scan(&p.Team, &p.Key, &p.URL, &created, &p.StatusCode, &p.FinalURL, &p.ContentType, &p.Body,
		&p.Screenshot, &p.Engine, &p.Private)
	p.CreatedAt = fromMillis(created)
	return p, err
}

// onePage reads the first cache entry that where selects, or ErrNotFound.
func (s *Store) onePage(ctx context.Context, where string, args ...any) (CachedPage, error) {
	p, err := scanPage(s.db.QueryRowContext(ctx, `SELECT `+pageColumns+` FROM page_cache WHERE `+where, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return p, ErrNotFound
	}
	if err != nil {
		return p, fmt.Errorf("reading the cache: %w", err)
	}
	return p, nil
}

// PruneCache deletes cache entries older than before, and logs each for
// the search index.
func (s *Store) PruneCache(ctx context.Context, before time.Time) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if err := s.lockIndexLog(ctx, tx); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO index_log (team_id, key, final_url, deleted)
			SELECT team_id, key, final_url, TRUE FROM page_cache WHERE created_at < ?`, millis(before))
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM page_cache WHERE created_at < ?`, millis(before))
		return err
	})
}

// PutScrape, which bills the scrape too, is in credits.go.

// Scrape returns team's scrape id, or ErrNotFound (also once expired).
func (s *Store) Scrape(ctx context.Context, team, id string) ([]byte, error) {
	var doc []byte
	err := s.db.QueryRowContext(ctx, `SELECT document FROM scrapes WHERE id = ? AND team_id = ? AND expires_at > ?`,
		id, team, millis(time.Now())).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	return doc, err
}

// PruneScrapes deletes expired scrape records.
func (s *Store) PruneScrapes(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM scrapes WHERE expires_at <= ?`, millis(time.Now()))
	return err
}

// lockIndexLog takes the dialect's index log lock in tx, if it has one.
func (s *Store) lockIndexLog(ctx context.Context, tx *sql.Tx) error {
	if s.dialect.indexLogLock == "" {
		return nil
	}
	if _, err := tx.ExecContext(ctx, s.dialect.indexLogLock); err != nil {
		return fmt.Errorf("locking the index log: %w", err)
	}
	return nil
}
