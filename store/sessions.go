package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Session is the stored record of one interactive browser session.
type Session struct {
	ID            string
	Team          string
	Status        string // active or destroyed
	StreamWebView bool
	TTL           time.Duration
	ActivityTTL   time.Duration
	CDPToken      string
	ViewToken     string
	InteractToken string
	CreatedAt     time.Time
	ExpiresAt     time.Time
	LastActivity  time.Time
	DestroyedAt   time.Time // zero while active
	EndReason     string
	Node          string // the node running its browser (store/nodes.go)
	// Recording says the session is recorded (recordings.go).
	Recording bool
}

const sessionColumns = `id, team_id, status, stream_web_view, ttl_s, activity_ttl_s, cdp_token, view_token,
	interact_token, created_at, expires_at, last_activity, COALESCE(destroyed_at, 0), end_reason, node, recording`

func scanSession(row interface{ Scan(...any) error }) (Session, error) {
	var r Session
	var ttl, attl, created, expires, last, destroyed int64
	err := row.Scan(&r.ID, &r.Team, &r.Status, &r.StreamWebView, &ttl, &attl, &r.CDPToken, &r.ViewToken,
		&r.InteractToken, &created, &expires, &last, &destroyed, &r.EndReason, &r.Node, &r.Recording)
	if errors.Is(err, sql.ErrNoRows) {
		return r, ErrNotFound
	}
	if err != nil {
		return r, err
	}
	r.TTL = time.Duration(ttl) * time.Second
	r.ActivityTTL = time.Duration(attl) * time.Second
	r.CreatedAt, r.ExpiresAt, r.LastActivity = fromMillis(created), fromMillis(expires), fromMillis(last)
	if destroyed != 0 {
		r.DestroyedAt = fromMillis(destroyed)
	}
	return r, nil
}

// InsertSession records a new session.
func (s *Store) InsertSession(ctx context.Context, r Session) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO browser_sessions (id, team_id, status, stream_web_view, ttl_s,
		activity_ttl_s, cdp_token, view_token, interact_token, created_at, expires_at, last_activity, node, recording)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Team, r.Status, r.StreamWebView, int64(r.TTL/time.Second), int64(r.ActivityTTL/time.Second),
		r.CDPToken, r.ViewToken, r.InteractToken, millis(r.CreatedAt), millis(r.ExpiresAt), millis(r.LastActivity), s.node, r.Recording)
	if err != nil {
		return fmt.Errorf("inserting session %s: %w", r.ID, err)
	}
	return nil
}

// EndSession marks session id destroyed and, in the same transaction,
// charges its team credits for it (once, however often it is called).
func (s *Store) EndSession(ctx context.Context, id string, at, lastActivity time.Time, reason string, credits int) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		var team string
		err := tx.QueryRowContext(ctx, `UPDATE browser_sessions SET status = 'destroyed', destroyed_at = ?,
			last_activity = ?, end_reason = ? WHERE id = ? AND status = 'active' RETURNING team_id`,
			millis(at), millis(lastActivity), reason, id).Scan(&team)
		if errors.Is(err, sql.ErrNoRows) {
			return nil // ended already
		}
		if err != nil {
			return fmt.Errorf("ending session %s: %w", id, err)
		}
		_, err = insertCharge(ctx, tx, Charge{Team: team, Request: id, Kind: CreditBrowser, Credits: credits, At: at})
		return err
	})
}

// EndActiveSessions marks every session of s's node still active as
// destroyed with reason; at start, these are the sessions of a service that
// did not shut down cleanly. Each is charged bill(how long it is known to
// have lasted: until its last recorded activity) when bill is not nil. It
// returns how many it ended.
func (s *Store) EndActiveSessions(ctx context.Context, reason string, bill func(time.Duration) int) (int, error) {
	return s.endSessions(ctx, `status = 'active' AND (node = ? OR node = '')`, []any{s.node}, reason, bill)
}

// Session returns session id whatever its team; callers that act for a team
// use TeamSession.
func (s *Store) Session(ctx context.Context, id string) (Session, error) {
	return scanSession(s.db.QueryRowContext(ctx, `SELECT `+sessionColumns+` FROM browser_sessions WHERE id = ?`, id))
}

// TeamSession returns session id if it belongs to team, else ErrNotFound.
func (s *Store) TeamSession(ctx context.Context, team, id string) (Session, error) {
	return scanSession(s.db.QueryRowContext(ctx, `SELECT `+sessionColumns+` FROM browser_sessions
		WHERE id = ? AND team_id = ?`, id, team))
}

// TeamSessions lists team's sessions, newest first, optionally only those
// with status; at most limit of them.
func (s *Store) TeamSessions(ctx context.Context, team, status string, limit int) ([]Session, error) {
	q := `SELECT ` + sessionColumns + ` FROM browser_sessions WHERE team_id = ?`
	args := []any{team}
	if status != "" {
		q += ` AND status = ?`
		args = append(args, status)
	}
	q += ` ORDER BY created_at DESC, id LIMIT ?`
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	return scanAll(rows, scanSession)
}

// CountSessions counts sessions by status, for metrics.
func (s *Store) CountSessions(ctx context.Context) (map[string]int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT status, COUNT(*) FROM browser_sessions GROUP BY status`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, err
		}
		out[st] = n
	}
	return out, rows.Err()
}
