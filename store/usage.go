package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// ModelUsage is one language-model call: whose request made it, what for,
// and the tokens it cost.
type ModelUsage struct {
	Team, Request, Purpose, Model string
	InputTokens, OutputTokens     int
	Attempts                      int
	Duration                      time.Duration
	At                            time.Time
	// Error is why the call failed, empty when it answered.
	Error string
}

// AddModelUsage records one call.
func (s *Store) AddModelUsage(ctx context.Context, u ModelUsage) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO model_usage(team_id, request_id, purpose, model, input_tokens,
		output_tokens, attempts, duration_ms, created_at, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		u.Team, u.Request, u.Purpose, u.Model, u.InputTokens, u.OutputTokens, u.Attempts, u.Duration.Milliseconds(),
		millis(u.At), u.Error)
	if err != nil {
		return fmt.Errorf("recording model usage: %w", err)
	}
	return nil
}

// TokenTotals sums a team's model calls.
type TokenTotals struct {
	InputTokens, OutputTokens int64
	Calls, Failed             int64
}

// TokenUsage sums team's calls made in [from, to).
func (s *Store) TokenUsage(ctx context.Context, team string, from, to time.Time) (TokenTotals, error) {
	var t TokenTotals
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0),
		COUNT(*), COALESCE(SUM(CASE WHEN error != '' THEN 1 ELSE 0 END), 0) FROM model_usage WHERE team_id = ? AND created_at >= ? AND created_at < ?`,
		team, millis(from), millis(to)).Scan(&t.InputTokens, &t.OutputTokens, &t.Calls, &t.Failed)
	if err != nil {
		return t, fmt.Errorf("summing token usage: %w", err)
	}
	return t, nil
}

// RequestModelUsage returns the calls of team's requests ids, by request,
// oldest first.
func (s *Store) RequestModelUsage(ctx context.Context, team string, ids []string) (map[string][]ModelUsage, error) {
	out := map[string][]ModelUsage{}
	if len(ids) == 0 {
		return out, nil
	}
	args := []any{team}
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT team_id, request_id, purpose, model, input_tokens, output_tokens,
		attempts, duration_ms, created_at, error FROM model_usage WHERE team_id = ? AND request_id IN (?`+
		strings.Repeat(", ?", len(ids)-1)+`) ORDER BY seq`, args...)
	if err != nil {
		return nil, fmt.Errorf("reading model usage: %w", err)
	}
	all, err := scanAll(rows, func(r interface{ Scan(...any) error }) (ModelUsage, error) {
		var u ModelUsage
		var ms, at int64
		err := r.Scan(&u.Team, &u.Request, &u.Purpose, &u.Model, &u.InputTokens, &u.OutputTokens, &u.Attempts, &ms, &at, &u.Error)
		u.Duration, u.At = time.Duration(ms)*time.Millisecond, fromMillis(at)
		return u, err
	})
	if err != nil {
		return nil, err
	}
	for _, u := range all {
		out[u.Request] = append(out[u.Request], u)
	}
	return out, nil
}

// PruneModelUsage deletes calls made before before.
func (s *Store) PruneModelUsage(ctx context.Context, before time.Time) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM model_usage WHERE created_at < ?`, millis(before))
	return err
}
