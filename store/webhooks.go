package store

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"
)

// Webhook event states.
const (
	WebhookPending   = "pending"
	WebhookDelivered = "delivered"
	WebhookFailed    = "failed"
)

// WebhookEvent is one webhook delivery, stored so that it survives a restart.
type WebhookEvent struct {
	ID    int64
	JobID string
	Team  string
	// Target is where the event goes, as JSON {"url": ..., "headers": {...}}.
	Target []byte
	// Payload is the exact body POSTed; a retry sends the same bytes.
	Payload   []byte
	State     string
	Attempts  int
	NextAt    time.Time
	CreatedAt time.Time
	LastError string
}

// Execer is satisfied by *sql.DB and *sql.Tx, so that another store file can
// add webhook events inside the transaction that changes the job.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// insertWebhookEvent stores e as a pending event. A zero NextAt or CreatedAt
// means now.
func insertWebhookEvent(ctx context.Context, ex Execer, e WebhookEvent) error {
	now := time.Now()
	if e.NextAt.IsZero() {
		e.NextAt = now
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = now
	}
	_, err := ex.ExecContext(ctx, `INSERT INTO webhook_events (job_id, team_id, target, payload, state, attempts,
		next_at, last_error, created_at) VALUES (?, ?, ?, ?, ?, 0, ?, '', ?)`,
		e.JobID, e.Team, e.Target, e.Payload, WebhookPending, millis(e.NextAt), millis(e.CreatedAt))
	if err != nil {
		return fmt.Errorf("storing a webhook event of job %s: %w", e.JobID, err)
	}
	return nil
}

// AddWebhookEvent stores e as a pending event (see insertWebhookEvent).
func (s *Store) AddWebhookEvent(ctx context.Context, e WebhookEvent) error {
	return insertWebhookEvent(ctx, s.db, e)
}

const webhookColumns = `id, job_id, team_id, target, payload, state, attempts, next_at, created_at, last_error`

// ClaimWebhookEvents claims, for each job with pending events, its oldest
// pending event when that event is due at now: at most limit of them (limit
// <= 0: no limit), the soonest due first when there are more, returned
// oldest first. A job whose oldest pending event is waiting for a retry
// yields nothing, so that its events go out in order.
//
// Claiming moves the events' next_at to now+lease, so that no other claim,
// from this node or another sharing the database, sees them as due until
// the lease has passed. The claimer records the outcome of its try with
// MarkWebhookDelivered, MarkWebhookRetry or MarkWebhookFailed before then;
// should it die first, the event is due again once the lease has passed and
// is sent again (at least once). lease must therefore be longer than a try.
func (s *Store) ClaimWebhookEvents(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]WebhookEvent, error) {
	if limit <= 0 {
		limit = noLimit
	}
	// webhook_events_pending (state, job_id, id) answers the MIN per job.
	// The outer state and next_at conditions are what makes the claim
	// exclusive on PostgreSQL: under READ COMMITTED an UPDATE that finds a
	// row changed by a concurrent claim re-checks its conditions on the
	// row's new version, which is no longer due, and leaves it. SQLite runs
	// one write at a time, so its claims never overlap.
	rows, err := s.db.QueryContext(ctx, `UPDATE webhook_events SET next_at = ?
		WHERE id IN (SELECT id FROM webhook_events
			WHERE id IN (SELECT MIN(id) FROM webhook_events WHERE state = ? GROUP BY job_id) AND next_at <= ?
			ORDER BY next_at, id LIMIT ?)
		AND state = ? AND next_at <= ?
		RETURNING `+webhookColumns,
		millis(now.Add(lease)), WebhookPending, millis(now), limit, WebhookPending, millis(now))
	if err != nil {
		return nil, fmt.Errorf("claiming due webhook events: %w", err)
	}
	events, err := scanWebhookEvents(rows)
	if err != nil {
		return nil, err
	}
	// RETURNING gives no order.
	slices.SortFunc(events, func(a, b WebhookEvent) int { return cmp.Compare(a.ID, b.ID) })
	return events, nil
}

// WebhookEvents returns every stored event of jobID, oldest first.
func (s *Store) WebhookEvents(ctx context.Context, jobID string) ([]WebhookEvent, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+webhookColumns+` FROM webhook_events WHERE job_id = ? ORDER BY id`, jobID)
	if err != nil {
		return nil, fmt.Errorf("reading the webhook events of job %s: %w", jobID, err)
	}
	return scanWebhookEvents(rows)
}

func scanWebhookEvents(rows *sql.Rows) ([]WebhookEvent, error) {
	defer rows.Close()
	var out []WebhookEvent
	for rows.Next() {
		var e WebhookEvent
		var next, created int64
		if err := rows.Scan(&e.ID, &e.JobID, &e.Team, &e.Target, &e.Payload, &e.State, &e.Attempts,
			&next, &created, &e.LastError); err != nil {
			return nil, fmt.Errorf("reading a webhook event: %w", err)
		}
		e.NextAt, e.CreatedAt = fromMillis(next), fromMillis(created)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading webhook events: %w", err)
	}
	return out, nil
}

// MarkWebhookDelivered records that event id was answered with a 2xx on its
// attempts-th try.
func (s *Store) MarkWebhookDelivered(ctx context.Context, id int64, attempts int) error {
	return s.updateWebhookEvent(ctx, `UPDATE webhook_events SET state = ?, attempts = ? WHERE id = ?`,
		id, WebhookDelivered, attempts, id)
}

// MarkWebhookRetry records a failed try of event id; it stays pending and is
// due again at next.
func (s *Store) MarkWebhookRetry(ctx context.Context, id int64, attempts int, next time.Time, lastErr string) error {
	return s.updateWebhookEvent(ctx, `UPDATE webhook_events SET attempts = ?, next_at = ?, last_error = ? WHERE id = ?`,
		id, attempts, millis(next), lastErr, id)
}

// MarkWebhookFailed records that event id will not be tried again.
func (s *Store) MarkWebhookFailed(ctx context.Context, id int64, attempts int, lastErr string) error {
	return s.updateWebhookEvent(ctx, `UPDATE webhook_events SET state = ?, attempts = ?, last_error = ? WHERE id = ?`,
		id, WebhookFailed, attempts, lastErr, id)
}

// updateWebhookEvent runs one UPDATE of event id; ErrNotFound when the event
// is gone (pruned).
func (s *Store) updateWebhookEvent(ctx context.Context, query string, id int64, args ...any) error {
	res, err := s.db.ExecContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("updating webhook event %d: %w", id, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return ErrNotFound
	}
	return nil
}

// PruneWebhookEvents deletes delivered and failed events created before
// before. Pending events stay whatever their age.
func (s *Store) PruneWebhookEvents(ctx context.Context, before time.Time) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM webhook_events WHERE state IN (?, ?) AND created_at < ?`,
		WebhookDelivered, WebhookFailed, millis(before))
	if err != nil {
		return fmt.Errorf("pruning webhook events: %w", err)
	}
	return nil
}
