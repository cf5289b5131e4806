package store

import (
	"context"
	"fmt"
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
func (s *Store) ReplaceKeys(ctx context.Context, keys []KeyRecord) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	now := millis(time.Now())
	if _, err := tx.ExecContext(ctx, `DELETE FROM api_keys`); err != nil {
		return fmt.Errorf("clearing keys: %w", err)
	}
	for _, k := range keys {
		if _, err := tx.ExecContext(ctx, `INSERT INTO teams(id, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING`, k.Team, now); err != nil {
			return fmt.Errorf("creating team %s: %w", k.Team, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO api_keys(key_hash, team_id, created_at) VALUES (?, ?, ?)`, k.Hash, k.Team, now); err != nil {
			return fmt.Errorf("storing a key of team %s: %w", k.Team, err)
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
