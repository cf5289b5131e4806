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
	Key         string
	URL         string
	CreatedAt   time.Time
	StatusCode  int
	FinalURL    string
	ContentType string
	Body        []byte
	Screenshot  string
	Engine      string
}

// PutPage stores (or replaces) a cache entry.
func (s *Store) PutPage(ctx context.Context, p CachedPage) error {
	_, err := s.db.ExecContext(ctx, `INSERT OR REPLACE INTO page_cache (key, url, created_at, status_code, final_url,
		content_type, body, screenshot, engine) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		p.Key, p.URL, millis(p.CreatedAt), p.StatusCode, p.FinalURL, p.ContentType, p.Body, p.Screenshot, p.Engine)
	if err != nil {
		return fmt.Errorf("caching %s: %w", p.URL, err)
	}
	return nil
}

// Page returns the cache entry for key, or ErrNotFound.
func (s *Store) Page(ctx context.Context, key string) (CachedPage, error) {
	var p CachedPage
	var created int64
	err := s.db.QueryRowContext(ctx, `SELECT key, url, created_at, status_code, final_url, content_type, body,
		screenshot, engine FROM page_cache WHERE key = ?`, key).
		Scan(&p.Key, &p.URL, &created, &p.StatusCode, &p.FinalURL, &p.ContentType, &p.Body, &p.Screenshot, &p.Engine)
	if errors.Is(err, sql.ErrNoRows) {
		return p, ErrNotFound
	}
	if err != nil {
		return p, fmt.Errorf("reading the cache: %w", err)
	}
	p.CreatedAt = fromMillis(created)
	return p, nil
}

// PruneCache deletes cache entries older than before.
func (s *Store) PruneCache(ctx context.Context, before time.Time) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM page_cache WHERE created_at < ?`, millis(before))
	return err
}

// PutScrape stores a scrape's document (JSON) for GET /v2/scrape/{id}.
func (s *Store) PutScrape(ctx context.Context, id, team string, created, expires time.Time, doc []byte) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO scrapes (id, team_id, created_at, expires_at, document)
		VALUES (?, ?, ?, ?, ?)`, id, team, millis(created), millis(expires), doc)
	if err != nil {
		return fmt.Errorf("storing scrape %s: %w", id, err)
	}
	return nil
}

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
