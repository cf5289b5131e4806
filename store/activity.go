package store

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Activity is one entry of a team's job log.
type Activity struct {
	ID         string
	Team       string
	Endpoint   string // scrape, crawl, batch_scrape, search, map, browser, ...
	APIVersion string
	CreatedAt  time.Time
	Target     string
}

// ErrBadCursor is returned for a cursor this store did not hand out.
var ErrBadCursor = errors.New("cursor is not one this server returned")

// AddActivity appends an entry to the team's log.
func (s *Store) AddActivity(ctx context.Context, a Activity) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO activity(id, team_id, endpoint, api_version, created_at, target)
		VALUES (?, ?, ?, ?, ?, ?)`, a.ID, a.Team, a.Endpoint, a.APIVersion, millis(a.CreatedAt), a.Target)
	if err != nil {
		return fmt.Errorf("recording activity %s: %w", a.ID, err)
	}
	return nil
}

// ActivityQuery selects a page of a team's log, newest first.
type ActivityQuery struct {
	Team     string
	Endpoint string    // empty: all
	Since    time.Time // entries older than this are not listed
	Cursor   string    // from the previous page; empty for the first
	Limit    int
}

// ListActivity returns one page and the cursor of the next ("" on the last).
func (s *Store) ListActivity(ctx context.Context, q ActivityQuery) ([]Activity, string, error) {
	sql := `SELECT id, team_id, endpoint, api_version, created_at, target FROM activity
		WHERE team_id = ? AND created_at >= ?`
	args := []any{q.Team, millis(q.Since)}
	if q.Endpoint != "" {
		sql += ` AND endpoint = ?`
		args = append(args, q.Endpoint)
	}
	if q.Cursor != "" {
		at, id, err := decodeCursor(q.Cursor)
		if err != nil {
			return nil, "", err
		}
		sql += ` AND (created_at < ? OR (created_at = ? AND id < ?))`
		args = append(args, at, at, id)
	}
	sql += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	args = append(args, q.Limit+1)
	rows, err := s.db.QueryContext(ctx, sql, args...)
	if err != nil {
		return nil, "", fmt.Errorf("listing activity: %w", err)
	}
	defer rows.Close()
	var out []Activity
	for rows.Next() {
		var a Activity
		var at int64
		if err := rows.Scan(&a.ID, &a.Team, &a.Endpoint, &a.APIVersion, &at, &a.Target); err != nil {
			return nil, "", err
		}
		a.CreatedAt = fromMillis(at)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	if len(out) <= q.Limit {
		return out, "", nil
	}
	out = out[:q.Limit]
	last := out[len(out)-1]
	return out, encodeCursor(millis(last.CreatedAt), last.ID), nil
}

// PruneActivity deletes entries older than before.
func (s *Store) PruneActivity(ctx context.Context, before time.Time) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM activity WHERE created_at < ?`, millis(before))
	return err
}

func encodeCursor(at int64, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(at, 10) + "|" + id))
}

func decodeCursor(c string) (int64, string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", ErrBadCursor
	}
	ts, id, ok := strings.Cut(string(raw), "|")
	at, err := strconv.ParseInt(ts, 10, 64)
	if !ok || err != nil || id == "" {
		return 0, "", ErrBadCursor
	}
	return at, id, nil
}
