package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// EgressUsage is what one request's browser contexts moved through the
// egress proxy while bound to it.
type EgressUsage struct {
	Team, Request string
	In, Out       int64
	At            time.Time
}

// AddEgressUsage records u.
func (s *Store) AddEgressUsage(ctx context.Context, u EgressUsage) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO egress_usage(team_id, request_id, bytes_in, bytes_out, created_at)
		VALUES (?, ?, ?, ?, ?)`, u.Team, u.Request, u.In, u.Out, millis(u.At))
	if err != nil {
		return fmt.Errorf("recording egress usage: %w", err)
	}
	return nil
}

// RequestEgress sums the egress of team's requests ids, by request.
func (s *Store) RequestEgress(ctx context.Context, team string, ids []string) (map[string]EgressUsage, error) {
	out := map[string]EgressUsage{}
	if len(ids) == 0 {
		return out, nil
	}
	args := []any{team}
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT request_id, SUM(bytes_in), SUM(bytes_out), MAX(created_at) FROM egress_usage
		WHERE team_id = ? AND request_id IN (?`+strings.Repeat(", ?", len(ids)-1)+`) GROUP BY request_id`, args...)
	if err != nil {
		return nil, fmt.Errorf("reading egress usage: %w", err)
	}
	all, err := scanAll(rows, func(r interface{ Scan(...any) error }) (EgressUsage, error) {
		u := EgressUsage{Team: team}
		var at int64
		err := r.Scan(&u.Request, &u.In, &u.Out, &at)
		u.At = fromMillis(at)
		return u, err
	})
	if err != nil {
		return nil, err
	}
	for _, u := range all {
		out[u.Request] = u
	}
	return out, nil
}

// PruneEgressUsage deletes usage recorded before before.
func (s *Store) PruneEgressUsage(ctx context.Context, before time.Time) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM egress_usage WHERE created_at < ?`, millis(before))
	return err
}
