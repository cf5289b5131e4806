package store

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"
)

// KeyRecord is one API key, stored only as its hash.
type KeyRecord struct {
	Hash []byte
	Team string
}

// ReplaceKeys makes the stored key set exactly keys, creating their teams.
// The configuration is the source of truth, so a key removed from it stops
// working at the next start.
//
// Nodes sharing a database call it at once as they start, so it must not
// fail when another node stores the same keys at the same time: each key is
// upserted, and only the stored keys missing from keys are deleted. Every
// node must be given the same keys, since its configuration is the source
// of truth: otherwise the stored set is that of the last node to start.
func (s *Store) ReplaceKeys(ctx context.Context, keys []KeyRecord) error {
	// Teams, then keys, in one order on every node, so that two concurrent
	// calls on PostgreSQL wait for each other's rows in the same order and
	// cannot deadlock. The sort is stable, so that of a key given twice the
	// last one's team wins.
	keys = slices.Clone(keys)
	slices.SortStableFunc(keys, func(a, b KeyRecord) int { return bytes.Compare(a.Hash, b.Hash) })
	var teams []string
	for _, k := range keys {
		teams = append(teams, k.Team)
	}
	slices.Sort(teams)
	teams = slices.Compact(teams)

	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if len(keys) == 0 {
		if _, err := tx.ExecContext(ctx, `DELETE FROM api_keys`); err != nil {
			return fmt.Errorf("clearing keys: %w", err)
		}
		return tx.Commit()
	}
	// The writes come before the read below: on SQLite a transaction that
	// has read can fail, without waiting, to start writing once another
	// connection has written, while its first write waits its turn.
	now := millis(time.Now())
	for _, team := range teams {
		if _, err := tx.ExecContext(ctx, `INSERT INTO teams(id, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING`, team, now); err != nil {
			return fmt.Errorf("creating team %s: %w", team, err)
		}
	}
	want := make(map[string]bool, len(keys))
	for _, k := range keys {
		want[string(k.Hash)] = true
		if _, err := tx.ExecContext(ctx, `INSERT INTO api_keys(key_hash, team_id, created_at) VALUES (?, ?, ?)
			ON CONFLICT (key_hash) DO UPDATE SET team_id = excluded.team_id`, k.Hash, k.Team, now); err != nil {
			return fmt.Errorf("storing a key of team %s: %w", k.Team, err)
		}
	}
	// The stored keys not in keys are deleted one by one: a NOT IN over
	// every key could pass the databases' limits on parameters.
	rows, err := tx.QueryContext(ctx, `SELECT key_hash FROM api_keys`)
	if err != nil {
		return fmt.Errorf("reading keys: %w", err)
	}
	var stale [][]byte
	for rows.Next() {
		var h []byte
		if err := rows.Scan(&h); err != nil {
			rows.Close()
			return fmt.Errorf("reading keys: %w", err)
		}
		if !want[string(h)] {
			stale = append(stale, h)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading keys: %w", err)
	}
	for _, h := range stale {
		if _, err := tx.ExecContext(ctx, `DELETE FROM api_keys WHERE key_hash = ?`, h); err != nil {
			return fmt.Errorf("removing a key: %w", err)
		}
	}
	return tx.Commit()
}

// EnsureTeam creates team id if it does not exist.
func (s *Store) EnsureTeam(ctx context.Context, id string) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO teams(id, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING`, id, millis(time.Now()))
	return err
}

// Keys returns every stored key.
func (s *Store) Keys(ctx context.Context) ([]KeyRecord, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT key_hash, team_id FROM api_keys`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []KeyRecord
	for rows.Next() {
		var k KeyRecord
		if err := rows.Scan(&k.Hash, &k.Team); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}
