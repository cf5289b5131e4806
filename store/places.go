package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Limits that hold across nodes: a node takes a place in the store
// (host_places: a key, its node's places of that key, until when that
// count holds) before it starts what the limit counts, and gives it back
// after, so that the nodes together keep to the limit. A dead node's places
// lapse with its lease. Two limits use places: politeness per host (a
// crawl's pages of a host in flight, while several nodes are alive) and a
// team's concurrency (its browsers).

// HostPlace is the key of a host's places.
func HostPlace(host string) string { return host }

// TeamPlace is the key of a team's places: a space, which no host holds,
// keeps it apart from every host's.
func TeamPlace(team string) string { return "team " + team }

// TakePlace takes one of key's places for s's node, valid until until
// (renewed by RenewPlaces), unless the nodes hold limit of them at now
// already: then it returns false and takes nothing.
func (s *Store) TakePlace(ctx context.Context, key string, limit int, now, until time.Time) (bool, error) {
	took := false
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if s.dialect.lockPlace != "" {
			if _, err := tx.ExecContext(ctx, s.dialect.lockPlace, key); err != nil {
				return err
			}
		}
		var held int
		err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(held), 0) FROM host_places WHERE host = ? AND until > ?`,
			key, millis(now)).Scan(&held)
		if err != nil || held >= limit {
			return err
		}
		took = true
		_, err = tx.ExecContext(ctx, `INSERT INTO host_places (host, node, held, until) VALUES (?, ?, 1, ?)
			ON CONFLICT (host, node) DO UPDATE SET held = CASE WHEN host_places.until > ? THEN host_places.held + 1 ELSE 1 END,
			until = excluded.until`, key, s.node, millis(until), millis(now))
		return err
	})
	if err != nil {
		return false, fmt.Errorf("taking a place of %q: %w", key, err)
	}
	return took, nil
}

// GivePlace gives back one of key's places s's node took.
func (s *Store) GivePlace(ctx context.Context, key string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE host_places SET held = held - 1 WHERE host = ? AND node = ? AND held > 0`,
		key, s.node)
	if err != nil {
		return fmt.Errorf("giving back a place of %q: %w", key, err)
	}
	return nil
}

// RenewPlaces makes the places s's node holds valid until until, and drops
// its rows that hold none.
func (s *Store) RenewPlaces(ctx context.Context, until time.Time) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM host_places WHERE node = ? AND held <= 0`, s.node); err != nil {
		return fmt.Errorf("renewing places: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE host_places SET until = ? WHERE node = ?`, millis(until), s.node); err != nil {
		return fmt.Errorf("renewing places: %w", err)
	}
	return nil
}

// OthersAlive reports whether a node other than s's was seen since since.
func (s *Store) OthersAlive(ctx context.Context, since time.Time) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM nodes WHERE id <> ? AND seen_at >= ?`, s.node, millis(since)).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("reading the nodes: %w", err)
	}
	return n > 0, nil
}
