package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Several services (nodes) may share one PostgreSQL database. Each holds
// the jobs it works on under a lease that it renews while it lives: a node
// that dies stops renewing, and once its leases have run out another node
// claims its jobs and resumes them from what the store holds (every page
// recorded is kept; a page in flight on the dead node is queued still, and
// is done again, once). A node that lost a lease, to a pause longer than
// the lease say, can record nothing more of that job: the job's node and
// status are checked in the transaction that records a page
// (FinishJobURL) or ends the job (FinishJob), and on PostgreSQL the job's
// row lock orders that check against a claim.
//
// Sessions belong to the node running their browser; a node that starts
// ends its own sessions left active (its browsers are gone), and ends the
// sessions of a node that stopped saying it is alive (Heartbeat).

// ErrLeaseLost is a write for a job this node no longer holds: another
// node claimed it, or it ended (a cancel on another node).
var ErrLeaseLost = errors.New("the job's lease is held by another node, or the job ended")

// SetNode makes s act for node id, whose job leases last lease and which
// other nodes reach at url (TRAWLER_NODE_URL; "" when they cannot). It
// must be called before s is used; without it s acts for the only node
// there is.
func (s *Store) SetNode(id, url string, lease time.Duration) {
	s.node, s.nodeURL, s.lease = id, url, lease
}

// Node returns the node s acts for.
func (s *Store) Node() string { return s.node }

// RenewJobs extends the lease of every job s's node holds that is still
// scraping, to until, and returns those jobs' ids: a job the node works on
// that is not among them was claimed by another node or ended elsewhere.
func (s *Store) RenewJobs(ctx context.Context, until time.Time) (map[string]bool, error) {
	return s.renewLeases(ctx, "jobs", "scraping", until)
}

// ClaimJobs gives s's node the scraping jobs whose lease ran out (those of
// a node that died, and any from before leases) and, when own is set, those
// already its own (a node restarting resumes its jobs at once), leased
// until until. Of several nodes claiming at once, each job goes to one: on
// PostgreSQL the UPDATE checks the lease again on a row another claim has
// just changed, and SQLite has one writer at a time.
func (s *Store) ClaimJobs(ctx context.Context, own bool, now, until time.Time) ([]Job, error) {
	rows, err := s.claimLeases(ctx, "jobs", "scraping", jobColumns, own, now, until)
	if err != nil {
		return nil, err
	}
	return scanAll(rows, scanJob)
}

// RenewExtracts is RenewJobs for the extracts still processing.
func (s *Store) RenewExtracts(ctx context.Context, until time.Time) (map[string]bool, error) {
	return s.renewLeases(ctx, "extracts", "processing", until)
}

// ClaimExtracts is ClaimJobs for the extracts still processing.
func (s *Store) ClaimExtracts(ctx context.Context, own bool, now, until time.Time) ([]Extract, error) {
	rows, err := s.claimLeases(ctx, "extracts", "processing", extractColumns, own, now, until)
	if err != nil {
		return nil, err
	}
	return scanAll(rows, scanExtract)
}

// renewLeases extends to until the lease of the rows of table (jobs or
// extracts) that s's node holds in status, and returns their ids.
func (s *Store) renewLeases(ctx context.Context, table, status string, until time.Time) (map[string]bool, error) {
	rows, err := s.db.QueryContext(ctx, `UPDATE `+table+` SET lease_until = ? WHERE node = ? AND status = ? RETURNING id`,
		millis(until), s.node, status)
	if err != nil {
		return nil, fmt.Errorf("renewing %s leases: %w", table, err)
	}
	ids, err := scanAll(rows, func(r interface{ Scan(...any) error }) (string, error) {
		var id string
		return id, r.Scan(&id)
	})
	if err != nil {
		return nil, fmt.Errorf("renewing %s leases: %w", table, err)
	}
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}

// claimLeases gives s's node the rows of table in status whose lease ran
// out (and its own, when own is set), and returns them with columns.
func (s *Store) claimLeases(ctx context.Context, table, status, columns string, own bool, now, until time.Time) (*sql.Rows, error) {
	mine := "" // the rows from before leases, expired anyway
	if own {
		mine = s.node
	}
	rows, err := s.db.QueryContext(ctx, `UPDATE `+table+` SET node = ?, lease_until = ?
		WHERE status = ? AND (lease_until < ? OR node = ?) RETURNING `+columns,
		s.node, millis(until), status, millis(now), mine)
	if err != nil {
		return nil, fmt.Errorf("claiming %s: %w", table, err)
	}
	return rows, nil
}

// Heartbeat records that s's node is alive at now, and its URL.
func (s *Store) Heartbeat(ctx context.Context, now time.Time) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO nodes (id, started_at, seen_at, url) VALUES (?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at, url = excluded.url`, s.node, millis(now), millis(now),
		s.nodeURL)
	if err != nil {
		return fmt.Errorf("recording the node's heartbeat: %w", err)
	}
	return nil
}

// NodeURLs returns the URLs of the nodes seen alive since since, by node
// (those without one left out), s's own among them.
func (s *Store) NodeURLs(ctx context.Context, since time.Time) (map[string]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, url FROM nodes WHERE seen_at >= ? AND url != ''`, millis(since))
	if err != nil {
		return nil, fmt.Errorf("reading the nodes: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, u string
		if err := rows.Scan(&id, &u); err != nil {
			return nil, err
		}
		out[id] = u
	}
	return out, rows.Err()
}

// LostNode is a node that stopped saying it is alive: when it was last
// seen.
type LostNode struct {
	ID     string
	SeenAt time.Time
}

// LostNodes returns the nodes other than s's last seen before before and
// not before since: the dead nodes whose leftovers (their browser
// containers) another node may clear.
func (s *Store) LostNodes(ctx context.Context, before, since time.Time) ([]LostNode, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, seen_at FROM nodes WHERE id <> ? AND seen_at < ? AND seen_at >= ?
		ORDER BY id`, s.node, millis(before), millis(since))
	if err != nil {
		return nil, fmt.Errorf("reading the lost nodes: %w", err)
	}
	return scanAll(rows, func(r interface{ Scan(...any) error }) (LostNode, error) {
		var n LostNode
		var seen int64
		err := r.Scan(&n.ID, &seen)
		n.SeenAt = time.UnixMilli(seen)
		return n, err
	})
}

// EndLostSessions marks destroyed, with reason, the active sessions of
// every other node last seen before before (its browsers went with it),
// billed like EndActiveSessions; it returns how many it ended.
func (s *Store) EndLostSessions(ctx context.Context, before time.Time, reason string, bill func(time.Duration) int) (int, error) {
	return s.endSessions(ctx, `status = 'active' AND node <> ? AND node IN (SELECT id FROM nodes WHERE seen_at < ?)`,
		[]any{s.node, millis(before)}, reason, bill)
}

// endSessions marks destroyed the sessions that where (with args) selects,
// and charges each once.
func (s *Store) endSessions(ctx context.Context, where string, args []any, reason string, bill func(time.Duration) int) (int, error) {
	now := time.Now()
	n := 0
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		// The rows are taken by the UPDATE itself: on SQLite a read first
		// would make the transaction a reader that other writers can
		// invalidate, and on PostgreSQL two nodes ending one lost node's
		// sessions end each once.
		rows, err := tx.QueryContext(ctx, `UPDATE browser_sessions SET status = 'destroyed', destroyed_at = ?,
			end_reason = ? WHERE `+where+` RETURNING id, team_id, created_at, last_activity`,
			append([]any{millis(now), reason}, args...)...)
		if err != nil {
			return err
		}
		ended, err := scanAll(rows, func(r interface{ Scan(...any) error }) (Charge, error) {
			var c Charge
			var created, last int64
			err := r.Scan(&c.Request, &c.Team, &created, &last)
			c.Kind, c.At = CreditBrowser, now
			if bill != nil {
				c.Credits = bill(time.Duration(max(0, last-created)) * time.Millisecond)
			}
			return c, err
		})
		if err != nil {
			return err
		}
		for _, c := range ended {
			if _, err := insertCharge(ctx, tx, c); err != nil {
				return err
			}
		}
		n = len(ended)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("ending sessions: %w", err)
	}
	return n, nil
}
