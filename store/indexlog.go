package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// IndexEntry is one row of the log the search index follows: a cache
// entry written (Deleted false) or deleted.
type IndexEntry struct {
	Seq      int64
	Team     string
	Key      string
	FinalURL string
	Deleted  bool
}

// IndexLog returns up to limit log rows after seq, oldest first.
func (s *Store) IndexLog(ctx context.Context, after int64, limit int) ([]IndexEntry, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT seq, team_id, key, final_url, deleted FROM index_log
		WHERE seq > ? ORDER BY seq LIMIT ?`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("reading the index log: %w", err)
	}
	return scanAll(rows, func(row interface{ Scan(...any) error }) (IndexEntry, error) {
		var e IndexEntry
		err := row.Scan(&e.Seq, &e.Team, &e.Key, &e.FinalURL, &e.Deleted)
		return e, err
	})
}

// LastIndexSeq returns the sequence number of the newest log row, 0 when
// the log is empty. It is the sequence's (AUTOINCREMENT's in SQLite), not
// the log's largest, so that it does not go back when the log is pruned.
func (s *Store) LastIndexSeq(ctx context.Context) (int64, error) {
	var seq int64
	err := s.db.QueryRowContext(ctx, s.dialect.lastIndexSeq).Scan(&seq)
	if err != nil {
		return 0, fmt.Errorf("reading the index log: %w", err)
	}
	return seq, nil
}

// PruneIndexLog deletes the log rows up to seq, which this node's index
// has applied, and which every other node sharing the database and seen in
// the last hour has applied too: each node keeps an index of its own from
// the one log. A node away for longer finds the rows it needs gone, and
// rebuilds its index from the cache.
func (s *Store) PruneIndexLog(ctx context.Context, upTo int64) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE nodes SET index_seq = ? WHERE id = ?`, upTo, s.node); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM index_log WHERE seq <= ?
			AND seq <= COALESCE((SELECT MIN(index_seq) FROM nodes WHERE seen_at >= ?), ?)`,
			upTo, millis(time.Now().Add(-time.Hour)), upTo)
		return err
	})
}

// PageByKey returns the team's cache entry under key, or ErrNotFound.
func (s *Store) PageByKey(ctx context.Context, team, key string) (CachedPage, error) {
	return s.onePage(ctx, `team_id = ? AND key = ?`, team, key)
}

// NewestPage returns the team's newest cache entry whose final URL is u, or
// ErrNotFound.
func (s *Store) NewestPage(ctx context.Context, team, u string) (CachedPage, error) {
	return s.onePage(ctx, `team_id = ? AND final_url = ? ORDER BY created_at DESC LIMIT 1`, team, u)
}

// PageCursor walks the whole cache in a stable order, for rebuilding the
// index: the zero value starts at the beginning.
type PageCursor struct{ rowid int64 }

// Pages returns up to limit cache entries after cur and the cursor that
// follows them; no entries means the end.
func (s *Store) Pages(ctx context.Context, cur PageCursor, limit int) ([]CachedPage, PageCursor, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT rowid, `+pageColumns+` FROM page_cache WHERE rowid > ?
		ORDER BY rowid LIMIT ?`, cur.rowid, limit)
	if err != nil {
		return nil, cur, fmt.Errorf("reading the cache: %w", err)
	}
	pages, err := scanAll(rows, func(row interface{ Scan(...any) error }) (CachedPage, error) {
		var rowid int64
		p, err := scanPage(rowScanner{row, &rowid})
		if rowid > cur.rowid {
			cur.rowid = rowid
		}
		return p, err
	})
	return pages, cur, err
}

// CountPages returns how many entries the cache holds.
func (s *Store) CountPages(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM page_cache`).Scan(&n)
	return n, err
}

// rowScanner scans a leading extra column into first before the columns
// scanPage reads.
type rowScanner struct {
	row   interface{ Scan(...any) error }
	first *int64
}

func (r rowScanner) Scan(dest ...any) error {
	return r.row.Scan(append([]any{r.first}, dest...)...)
}
