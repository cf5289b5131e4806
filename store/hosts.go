package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Politeness per host across nodes: while several nodes are alive, a node
// takes a place of a host in the store (host_places: its node's pages of
// the host in flight, until when that count holds) before it fetches a
// page there, and gives it back after, so that the nodes together keep
// to the host's limit. A dead node's places lapse with its lease.

// TakeHost takes one of host's places for s's node, valid until until
// (renewed by RenewHosts), unless the nodes hold limit of them at now
// already: then it returns false and takes nothing.
func (s *Store) TakeHost(ctx context.Context, host string, limit int, now, until time.Time) (bool, error) {
	took := false
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if s.dialect.lockHost != "" {
			if _, err := tx.ExecContext(ctx, s.dialect.lockHost, host); err != nil {
				return err
			}
		}
		var held int
		err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(held), 0) FROM host_places WHERE host = ? AND until > ?`,
			host, millis(now)).Scan(&held)
		if err != nil || held >= limit {
			return err
		}
		took = true
		_, err = tx.ExecContext(ctx, `INSERT INTO host_places (host, node, held, until) VALUES (?, ?, 1, ?)
			ON CONFLICT (host, node) DO UPDATE SET held = CASE WHEN host_places.until > ? THEN host_places.held + 1 ELSE 1 END,
			until = excluded.until`, host, s.node, millis(until), millis(now))
		return err
	})
	if err != nil {
		return false, fmt.Errorf("taking a place of host %s: %w", host, err)
	}
	return took, nil
}

// GiveHost gives back one of host's places s's node took.
func (s *Store) GiveHost(ctx context.Context, host string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE host_places SET held = held - 1 WHERE host = ? AND node = ? AND held > 0`,
		host, s.node)
	if err != nil {
		return fmt.Errorf("giving back a place of host %s: %w", host, err)
	}
	return nil
}

// RenewHosts makes the places s's node holds valid until until, and drops
// its rows that hold none.
func (s *Store) RenewHosts(ctx context.Context, until time.Time) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM host_places WHERE node = ? AND held <= 0`, s.node); err != nil {
		return fmt.Errorf("renewing host places: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE host_places SET until = ? WHERE node = ?`, millis(until), s.node); err != nil {
		return fmt.Errorf("renewing host places: %w", err)
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
