package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Monitor is one monitor (package monitor): its definition as JSON, and
// the schedule's state. NextRunAt is zero while paused.
type Monitor struct {
	ID, Team, Name string
	Status         string // active or paused
	Spec           []byte // the definition, JSON
	NextRunAt      time.Time
	LastRunAt      time.Time
	CurrentCheck   string // the check running or queued, "" when none
	Summary        []byte // the last check's summary, JSON (nil before one)
	Failures       int    // checks failed in a row
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// MonitorCheck is one run of a monitor. Owner and LeaseUntil say which
// node runs it; a check whose lease ran out is taken over.
type MonitorCheck struct {
	ID, Monitor, Team string
	Status            string // queued, running, completed, partial, failed, skipped_overlap
	Trigger           string // scheduled or manual
	ScheduledFor      time.Time
	Late              bool
	StartedAt         time.Time
	FinishedAt        time.Time
	Summary           []byte
	Detail            []byte // the runner's state and the answer's other members, JSON
	Owner             string
	LeaseUntil        time.Time
	CreatedAt         time.Time
	UpdatedAt         time.Time
	ExpiresAt         time.Time
}

// MonitorPage is one page of a finished check, as the answer shows it.
type MonitorPage struct {
	Check  string
	Seq    int
	Status string
	Body   []byte // JSON
}

// MonitorSnapshot is the last version of a page a monitor saw.
type MonitorSnapshot struct {
	Monitor, Target, Key string
	URL                  string
	Markdown             string
	StatusCode           int
	Check                string
	ScrapedAt            time.Time
}

const monitorColumns = `id, team_id, name, status, spec, next_run_at, last_run_at, current_check, summary, failures,
	created_at, updated_at`

func scanMonitor(row interface{ Scan(...any) error }) (Monitor, error) {
	var m Monitor
	var next, last, created, updated int64
	err := row.Scan(&m.ID, &m.Team, &m.Name, &m.Status, &m.Spec, &next, &last, &m.CurrentCheck, &m.Summary,
		&m.Failures, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return m, ErrNotFound
	}
	m.NextRunAt, m.LastRunAt = optMillis(next), optMillis(last)
	m.CreatedAt, m.UpdatedAt = fromMillis(created), fromMillis(updated)
	return m, err
}

// optMillis is fromMillis with 0 as the zero time.
func optMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return fromMillis(ms)
}

// optToMillis is millis with the zero time as 0.
func optToMillis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return millis(t)
}

// PutMonitor stores a new monitor.
func (s *Store) PutMonitor(ctx context.Context, m Monitor) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO monitors (`+monitorColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		m.ID, m.Team, m.Name, m.Status, m.Spec, optToMillis(m.NextRunAt), optToMillis(m.LastRunAt), m.CurrentCheck,
		m.Summary, m.Failures, millis(m.CreatedAt), millis(m.UpdatedAt))
	if err != nil {
		return fmt.Errorf("storing monitor %s: %w", m.ID, err)
	}
	return nil
}

// UpdateMonitorSpec replaces team's monitor's definition, name, status and
// next run, keeping its history.
func (s *Store) UpdateMonitorSpec(ctx context.Context, m Monitor) error {
	res, err := s.db.ExecContext(ctx, `UPDATE monitors SET name = ?, status = ?, spec = ?, next_run_at = ?, failures = ?,
		updated_at = ? WHERE id = ? AND team_id = ?`, m.Name, m.Status, m.Spec, optToMillis(m.NextRunAt), m.Failures,
		millis(m.UpdatedAt), m.ID, m.Team)
	if err != nil {
		return fmt.Errorf("updating monitor %s: %w", m.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// MonitorByID returns team's monitor id.
func (s *Store) MonitorByID(ctx context.Context, team, id string) (Monitor, error) {
	return scanMonitor(s.db.QueryRowContext(ctx, `SELECT `+monitorColumns+` FROM monitors WHERE id = ? AND team_id = ?`,
		id, team))
}

// Monitors lists team's monitors, newest first.
func (s *Store) Monitors(ctx context.Context, team string, offset, limit int) ([]Monitor, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+monitorColumns+` FROM monitors WHERE team_id = ?
		ORDER BY created_at DESC, id LIMIT ? OFFSET ?`, team, limit, offset)
	if err != nil {
		return nil, fmt.Errorf("listing monitors: %w", err)
	}
	return scanAll(rows, scanMonitor)
}

// DeleteMonitor removes team's monitor with its checks, pages and
// snapshots. A check running meanwhile finds nothing to finish.
func (s *Store) DeleteMonitor(ctx context.Context, team, id string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `DELETE FROM monitors WHERE id = ? AND team_id = ?`, id, team)
	if err != nil {
		return fmt.Errorf("deleting monitor %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	for _, q := range []string{
		`DELETE FROM monitor_pages WHERE check_id IN (SELECT id FROM monitor_checks WHERE monitor_id = ?)`,
		`DELETE FROM monitor_checks WHERE monitor_id = ?`,
		`DELETE FROM monitor_snapshots WHERE monitor_id = ?`,
	} {
		if _, err := tx.ExecContext(ctx, q, id); err != nil {
			return fmt.Errorf("deleting monitor %s: %w", id, err)
		}
	}
	return tx.Commit()
}

// DueMonitors returns up to limit active monitors due at now, the most
// overdue first.
func (s *Store) DueMonitors(ctx context.Context, now time.Time, limit int) ([]Monitor, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+monitorColumns+` FROM monitors WHERE status = 'active'
		AND next_run_at > 0 AND next_run_at <= ? ORDER BY next_run_at LIMIT ?`, millis(now), limit)
	if err != nil {
		return nil, fmt.Errorf("reading the monitors due: %w", err)
	}
	return scanAll(rows, scanMonitor)
}

// NextMonitorRun returns the earliest next run of an active monitor, zero
// when there is none.
func (s *Store) NextMonitorRun(ctx context.Context) (time.Time, error) {
	var ms sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT MIN(next_run_at) FROM monitors WHERE status = 'active' AND next_run_at > 0`).
		Scan(&ms)
	if err != nil || !ms.Valid {
		return time.Time{}, err
	}
	return fromMillis(ms.Int64), nil
}

// ClaimMonitorRun takes monitor m's run due at m.NextRunAt: moves its next
// run to next and stores check c, in one transaction, unless the monitor's
// next run is no longer m.NextRunAt (another node took it, or the user
// changed it): then ok is false and nothing changed. A check that runs
// (not skipped) becomes the monitor's current one.
func (s *Store) ClaimMonitorRun(ctx context.Context, m Monitor, next time.Time, c MonitorCheck) (ok bool, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	current := m.CurrentCheck
	if c.Status == "queued" {
		current = c.ID
	}
	res, err := tx.ExecContext(ctx, `UPDATE monitors SET next_run_at = ?, current_check = ?, updated_at = ?
		WHERE id = ? AND next_run_at = ? AND status = 'active' AND current_check = ?`,
		optToMillis(next), current, millis(time.Now()), m.ID, optToMillis(m.NextRunAt), m.CurrentCheck)
	if err != nil {
		return false, fmt.Errorf("claiming a run of monitor %s: %w", m.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, nil
	}
	if err := insertMonitorCheck(ctx, tx, c); err != nil {
		return false, err
	}
	return true, tx.Commit()
}

// StartMonitorRun makes c team's monitor's current check, for a run asked
// for now; ok is false when a check is already current.
func (s *Store) StartMonitorRun(ctx context.Context, c MonitorCheck) (ok bool, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `UPDATE monitors SET current_check = ?, updated_at = ? WHERE id = ? AND team_id = ?
		AND current_check = ''`, c.ID, millis(time.Now()), c.Monitor, c.Team)
	if err != nil {
		return false, fmt.Errorf("starting a run of monitor %s: %w", c.Monitor, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, nil
	}
	if err := insertMonitorCheck(ctx, tx, c); err != nil {
		return false, err
	}
	return true, tx.Commit()
}

func insertMonitorCheck(ctx context.Context, tx *sql.Tx, c MonitorCheck) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO monitor_checks (`+checkColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, c.ID, c.Monitor, c.Team, c.Status, c.Trigger,
		optToMillis(c.ScheduledFor), c.Late, optToMillis(c.StartedAt), optToMillis(c.FinishedAt), c.Summary, c.Detail,
		c.Owner, optToMillis(c.LeaseUntil), millis(c.CreatedAt), millis(c.CreatedAt), millis(c.ExpiresAt))
	if err != nil {
		return fmt.Errorf("storing a check of monitor %s: %w", c.Monitor, err)
	}
	return nil
}

const checkColumns = `id, monitor_id, team_id, status, trigger_kind, scheduled_for, late, started_at, finished_at,
	summary, detail, owner, lease_until, created_at, updated_at, expires_at`

func scanCheck(row interface{ Scan(...any) error }) (MonitorCheck, error) {
	var c MonitorCheck
	var sched, started, finished, lease, created, updated, expires int64
	err := row.Scan(&c.ID, &c.Monitor, &c.Team, &c.Status, &c.Trigger, &sched, &c.Late, &started, &finished, &c.Summary,
		&c.Detail, &c.Owner, &lease, &created, &updated, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return c, ErrNotFound
	}
	c.ScheduledFor, c.StartedAt, c.FinishedAt = optMillis(sched), optMillis(started), optMillis(finished)
	c.LeaseUntil, c.CreatedAt, c.UpdatedAt, c.ExpiresAt = optMillis(lease), fromMillis(created), fromMillis(updated),
		fromMillis(expires)
	return c, err
}

// MonitorCheckByID returns team's check id of monitor.
func (s *Store) MonitorCheckByID(ctx context.Context, team, monitor, id string) (MonitorCheck, error) {
	return scanCheck(s.db.QueryRowContext(ctx, `SELECT `+checkColumns+` FROM monitor_checks WHERE id = ? AND
		monitor_id = ? AND team_id = ?`, id, monitor, team))
}

// MonitorChecks lists team's monitor's checks, newest first; status ""
// is any.
func (s *Store) MonitorChecks(ctx context.Context, team, monitor, status string, offset, limit int) ([]MonitorCheck, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+checkColumns+` FROM monitor_checks WHERE monitor_id = ? AND team_id = ?
		AND (? = '' OR status = ?) AND expires_at > ? ORDER BY created_at DESC, id LIMIT ? OFFSET ?`,
		monitor, team, status, status, millis(time.Now()), limit, offset)
	if err != nil {
		return nil, fmt.Errorf("listing the checks of monitor %s: %w", monitor, err)
	}
	return scanAll(rows, scanCheck)
}

// ClaimMonitorCheck takes for this node, until now+lease, up to limit
// checks queued or running whose lease ran out (a node that died, or none
// yet), oldest first.
func (s *Store) ClaimMonitorCheck(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]MonitorCheck, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+checkColumns+` FROM monitor_checks WHERE status IN ('queued', 'running')
		AND lease_until < ? ORDER BY created_at LIMIT ?`, millis(now), limit)
	if err != nil {
		return nil, fmt.Errorf("reading the monitor checks to run: %w", err)
	}
	candidates, err := scanAll(rows, scanCheck)
	if err != nil {
		return nil, err
	}
	var out []MonitorCheck
	for _, c := range candidates {
		started := c.StartedAt
		if started.IsZero() {
			started = now
		}
		res, err := s.db.ExecContext(ctx, `UPDATE monitor_checks SET status = 'running', owner = ?, lease_until = ?,
			started_at = ?, updated_at = ? WHERE id = ? AND lease_until = ? AND status IN ('queued', 'running')`,
			s.node, millis(now.Add(lease)), millis(started), millis(now), c.ID, optToMillis(c.LeaseUntil))
		if err != nil {
			return out, fmt.Errorf("claiming monitor check %s: %w", c.ID, err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			c.Status, c.Owner, c.LeaseUntil, c.StartedAt = "running", s.node, now.Add(lease), started
			out = append(out, c)
		}
	}
	return out, nil
}

// RenewMonitorCheck extends this node's lease of check c and stores its
// detail; ok is false when the check is no longer this node's (taken
// over, finished or deleted).
func (s *Store) RenewMonitorCheck(ctx context.Context, c *MonitorCheck, until time.Time) (ok bool, err error) {
	res, err := s.db.ExecContext(ctx, `UPDATE monitor_checks SET lease_until = ?, detail = ?, updated_at = ?
		WHERE id = ? AND owner = ? AND lease_until = ? AND status = 'running'`, millis(until), c.Detail,
		millis(time.Now()), c.ID, c.Owner, millis(c.LeaseUntil))
	if err != nil {
		return false, fmt.Errorf("renewing monitor check %s: %w", c.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, nil
	}
	c.LeaseUntil = until
	return true, nil
}

// CheckOutcome is what finishing a check writes.
type CheckOutcome struct {
	Check     MonitorCheck // its final status, summary, detail and finish time
	Pages     []MonitorPage
	Snapshots []MonitorSnapshot // to keep (replacing the target's page)
	Dropped   []MonitorSnapshot // removed pages' snapshots, to forget
	// The monitor's state after the check.
	Failures  int
	NextRunAt time.Time // zero: left as it is
	Events    []WebhookEvent
}

// FinishMonitorCheck writes a check's outcome in one transaction, if the
// check is still this node's lease (o.Check.Owner, o.Check.LeaseUntil):
// else ok is false and nothing is written, so that a check taken over is
// finished, and its webhooks sent, once.
func (s *Store) FinishMonitorCheck(ctx context.Context, o CheckOutcome) (ok bool, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	c := o.Check
	now := time.Now()
	res, err := tx.ExecContext(ctx, `UPDATE monitor_checks SET status = ?, summary = ?, detail = ?, finished_at = ?,
		updated_at = ?, lease_until = 0 WHERE id = ? AND owner = ? AND lease_until = ? AND status = 'running'`,
		c.Status, c.Summary, c.Detail, millis(c.FinishedAt), millis(now), c.ID, c.Owner, millis(c.LeaseUntil))
	if err != nil {
		return false, fmt.Errorf("finishing monitor check %s: %w", c.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, nil
	}
	for _, p := range o.Pages {
		if _, err := tx.ExecContext(ctx, `INSERT INTO monitor_pages (check_id, seq, status, body) VALUES (?, ?, ?, ?)
			ON CONFLICT DO NOTHING`, c.ID, p.Seq, p.Status, p.Body); err != nil {
			return false, fmt.Errorf("storing a page of monitor check %s: %w", c.ID, err)
		}
	}
	for _, sn := range o.Dropped {
		if _, err := tx.ExecContext(ctx, `DELETE FROM monitor_snapshots WHERE monitor_id = ? AND target_id = ? AND url_key = ?`,
			sn.Monitor, sn.Target, sn.Key); err != nil {
			return false, fmt.Errorf("forgetting a page of monitor %s: %w", c.Monitor, err)
		}
	}
	for _, sn := range o.Snapshots {
		if _, err := tx.ExecContext(ctx, `INSERT INTO monitor_snapshots (monitor_id, target_id, url_key, url, markdown,
			status_code, check_id, scraped_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (monitor_id, target_id, url_key)
			DO UPDATE SET url = excluded.url, markdown = excluded.markdown, status_code = excluded.status_code,
			check_id = excluded.check_id, scraped_at = excluded.scraped_at`, sn.Monitor, sn.Target, sn.Key, sn.URL,
			sn.Markdown, sn.StatusCode, sn.Check, millis(sn.ScrapedAt)); err != nil {
			return false, fmt.Errorf("keeping a page of monitor %s: %w", c.Monitor, err)
		}
	}
	next := `next_run_at`
	args := []any{millis(c.FinishedAt), c.Summary, o.Failures, millis(now)}
	if !o.NextRunAt.IsZero() {
		next = `CASE WHEN next_run_at > 0 AND next_run_at < ? THEN ? ELSE next_run_at END`
		args = append(args, millis(o.NextRunAt), millis(o.NextRunAt))
	}
	args = append(args, c.ID, c.Monitor)
	if _, err := tx.ExecContext(ctx, `UPDATE monitors SET last_run_at = ?, summary = ?, failures = ?, updated_at = ?,
		next_run_at = `+next+`, current_check = CASE WHEN current_check = ? THEN '' ELSE current_check END WHERE id = ?`,
		args...); err != nil {
		return false, fmt.Errorf("updating monitor %s: %w", c.Monitor, err)
	}
	for _, e := range o.Events {
		if err := insertWebhookEvent(ctx, tx, e); err != nil {
			return false, err
		}
	}
	return true, tx.Commit()
}

// MonitorSnapshots returns monitor's snapshots of target's pages.
func (s *Store) MonitorSnapshots(ctx context.Context, monitor, target string) ([]MonitorSnapshot, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT monitor_id, target_id, url_key, url, markdown, status_code, check_id,
		scraped_at FROM monitor_snapshots WHERE monitor_id = ? AND target_id = ?`, monitor, target)
	if err != nil {
		return nil, fmt.Errorf("reading the pages of monitor %s: %w", monitor, err)
	}
	return scanAll(rows, func(row interface{ Scan(...any) error }) (MonitorSnapshot, error) {
		var sn MonitorSnapshot
		var at int64
		err := row.Scan(&sn.Monitor, &sn.Target, &sn.Key, &sn.URL, &sn.Markdown, &sn.StatusCode, &sn.Check, &at)
		sn.ScrapedAt = fromMillis(at)
		return sn, err
	})
}

// MonitorPages returns up to limit pages of check c from skip, in order;
// status "" is any.
func (s *Store) MonitorPages(ctx context.Context, check, status string, skip, limit int) ([]MonitorPage, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT check_id, seq, status, body FROM monitor_pages WHERE check_id = ?
		AND (? = '' OR status = ?) ORDER BY seq LIMIT ? OFFSET ?`, check, status, status, limit, skip)
	if err != nil {
		return nil, fmt.Errorf("reading the pages of monitor check %s: %w", check, err)
	}
	return scanAll(rows, func(row interface{ Scan(...any) error }) (MonitorPage, error) {
		var p MonitorPage
		err := row.Scan(&p.Check, &p.Seq, &p.Status, &p.Body)
		return p, err
	})
}

// PruneMonitorChecks drops the checks (and their pages) that expired
// before t; a monitor's current check stays.
func (s *Store) PruneMonitorChecks(ctx context.Context, t time.Time) error {
	for _, q := range []string{
		`DELETE FROM monitor_pages WHERE check_id IN (SELECT id FROM monitor_checks WHERE expires_at <= ?
			AND status NOT IN ('queued', 'running'))`,
		`DELETE FROM monitor_checks WHERE expires_at <= ? AND status NOT IN ('queued', 'running')`,
	} {
		if _, err := s.db.ExecContext(ctx, q, millis(t)); err != nil {
			return fmt.Errorf("pruning monitor checks: %w", err)
		}
	}
	return nil
}
