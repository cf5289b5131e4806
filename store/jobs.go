package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ErrConflict is a write that would break a uniqueness rule (an
// idempotency key used twice).
var ErrConflict = errors.New("conflict")

// Job is a crawl or batch scrape.
type Job struct {
	ID, Team, Kind string // kind: crawl or batch
	Status         string // scraping, completed, failed, cancelled
	URL            string // the crawl's start URL ("" for a batch)
	Request        []byte // the job's options, JSON
	IdempotencyKey string
	CreatedAt      time.Time
	CompletedAt    time.Time // zero while scraping
	ExpiresAt      time.Time
	Credits        int
	Error          string
}

// JobURL is one URL of a job's frontier, and once scraped its outcome.
type JobURL struct {
	Key   string // identity within the job (similar URLs share one)
	URL   string
	Depth int
	Seq   int64  // discovery order
	State string // queued, done, failed, robots (blocked by robots.txt), links (fetched for its links only)
	// Set when done or failed.
	Document  []byte
	ErrorCode string
	Error     string
	UpdatedAt time.Time
}

// Job URL states.
const (
	URLQueued = "queued"
	URLDone   = "done"
	URLFailed = "failed"
	URLRobots = "robots"
	// URLLinks is a crawl's start page that its patterns leave out of the
	// results: it was fetched for its links, and holds no document.
	URLLinks = "links"
)

// CreateJob stores a new job with its first URLs and events, in one
// transaction. A reused idempotency key is ErrConflict.
func (s *Store) CreateJob(ctx context.Context, j Job, urls []JobURL, events []WebhookEvent) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx, `INSERT INTO jobs (id, team_id, kind, status, url, request, idempotency_key,
		created_at, expires_at, node, lease_until) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		j.ID, j.Team, j.Kind, j.Status, j.URL, j.Request, j.IdempotencyKey, millis(j.CreatedAt), millis(j.ExpiresAt),
		s.node, millis(time.Now().Add(s.lease)))
	if err != nil {
		if s.dialect.uniqueViolation(err) {
			return ErrConflict
		}
		return fmt.Errorf("storing job: %w", err)
	}
	if err := insertJobURLs(ctx, tx, j.ID, urls); err != nil {
		return err
	}
	for _, e := range events {
		if err := insertWebhookEvent(ctx, tx, e); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func insertJobURLs(ctx context.Context, tx *sql.Tx, job string, urls []JobURL) error {
	if len(urls) == 0 {
		return nil
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO job_urls (job_id, url_key, url, depth, seq, state,
		updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	now := millis(time.Now())
	for _, u := range urls {
		if _, err := stmt.ExecContext(ctx, job, u.Key, u.URL, u.Depth, u.Seq, u.State, now); err != nil {
			return fmt.Errorf("storing job URL: %w", err)
		}
	}
	return nil
}

// AddJobURLs adds discovered URLs to a job's frontier (ones it already has
// are left alone).
func (s *Store) AddJobURLs(ctx context.Context, job string, urls []JobURL) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// A write first, which checks the job is still this node's: it holds
	// the job (its row, on PostgreSQL) for the rest of the transaction.
	res, err := tx.ExecContext(ctx, `UPDATE jobs SET lease_until = lease_until WHERE id = ? AND status = 'scraping'
		AND (? = '' OR node = ?)`, job, s.node, s.node)
	if err != nil {
		return fmt.Errorf("adding job URLs: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrLeaseLost
	}
	if err := insertJobURLs(ctx, tx, job, urls); err != nil {
		return err
	}
	return tx.Commit()
}

// FinishJobURL records a scraped (or failed) URL, the URLs its page led to,
// its credits (on the job and in the credit ledger) and its webhook events,
// all at once: after a crash the page is either wholly recorded, and billed
// once, or still queued and not billed. A URL with a document gets the
// next place in the job's results, returned as seq (1, 2, ...); a
// zero-data-retention job passes hasDoc without a document, so that its
// results keep their order in memory only. When several nodes share the
// database, only the node holding the job's lease records its pages, and
// only while it is scraping: ErrLeaseLost otherwise, with nothing written.
func (s *Store) FinishJobURL(ctx context.Context, job string, u JobURL, hasDoc bool, discovered []JobURL, credits int, events []WebhookEvent) (seq int64, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	if s.dialect.lockJob != "" {
		if _, err := tx.ExecContext(ctx, s.dialect.lockJob, job); err != nil {
			return 0, fmt.Errorf("locking job %s: %w", job, err)
		}
	}
	var doc any
	if u.Document != nil {
		doc = u.Document
	}
	var done sql.NullInt64
	err = tx.QueryRowContext(ctx, `UPDATE job_urls SET state = ?, document = ?, error_code = ?, error = ?, updated_at = ?,
		done_seq = CASE WHEN ? THEN
			(SELECT COALESCE(MAX(done_seq), 0) + 1 FROM job_urls WHERE job_id = ? AND done_seq IS NOT NULL) END
		WHERE job_id = ? AND url_key = ?
		AND EXISTS (SELECT 1 FROM jobs WHERE id = ? AND status = 'scraping' AND (? = '' OR node = ?))
		RETURNING done_seq`,
		u.State, doc, u.ErrorCode, u.Error, millis(time.Now()), hasDoc, job, job, u.Key, job, s.node, s.node).Scan(&done)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, ErrLeaseLost
	}
	if err != nil {
		return 0, fmt.Errorf("recording job URL: %w", err)
	}
	if err := insertJobURLs(ctx, tx, job, discovered); err != nil {
		return 0, err
	}
	if credits != 0 {
		// The page's charge goes to the ledger with the page; the job's sum
		// counts it only if the ledger did not have it already.
		var c Charge
		err := tx.QueryRowContext(ctx, `SELECT team_id, CASE kind WHEN 'batch' THEN ? ELSE ? END FROM jobs WHERE id = ?`,
			CreditBatch, CreditCrawl, job).Scan(&c.Team, &c.Kind)
		if err != nil {
			return 0, fmt.Errorf("reading the job of a page: %w", err)
		}
		c.Request, c.Item, c.Credits = job, u.Key, credits
		charged, err := insertCharge(ctx, tx, c)
		if err != nil {
			return 0, err
		}
		if charged {
			if _, err := tx.ExecContext(ctx, `UPDATE jobs SET credits = credits + ? WHERE id = ?`, credits, job); err != nil {
				return 0, err
			}
		}
	}
	for _, e := range events {
		if err := insertWebhookEvent(ctx, tx, e); err != nil {
			return 0, err
		}
	}
	return done.Int64, tx.Commit()
}

// JobCounts returns how many of a job's URLs are in each state.
func (s *Store) JobCounts(ctx context.Context, job string) (map[string]int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT state, COUNT(*) FROM job_urls WHERE job_id = ? GROUP BY state`, job)
	if err != nil {
		return nil, fmt.Errorf("counting job URLs: %w", err)
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

// FinishJob ends a job with status (and its events), once: a job that
// already ended, or whose lease another node holds, is left as it is and
// ErrNotFound returned.
func (s *Store) FinishJob(ctx context.Context, job, status, errMsg string, completed, expires time.Time, events []WebhookEvent) error {
	return s.finishJob(ctx, job, s.node, status, errMsg, completed, expires, events)
}

// CancelJob is FinishJob for a job whichever node holds it: a cancel
// that reaches another node than the job's. The job's node finds out when
// it renews its leases (RenewJobs), and can record none of its pages from
// then on.
func (s *Store) CancelJob(ctx context.Context, job, status, errMsg string, completed, expires time.Time, events []WebhookEvent) error {
	return s.finishJob(ctx, job, "", status, errMsg, completed, expires, events)
}

func (s *Store) finishJob(ctx context.Context, job, node, status, errMsg string, completed, expires time.Time, events []WebhookEvent) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `UPDATE jobs SET status = ?, error = ?, completed_at = ?, expires_at = ?
		WHERE id = ? AND status = 'scraping' AND (? = '' OR node = ?)`, status, errMsg, millis(completed), millis(expires), job,
		node, node)
	if err != nil {
		return fmt.Errorf("ending job: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	for _, e := range events {
		if err := insertWebhookEvent(ctx, tx, e); err != nil {
			return err
		}
	}
	return tx.Commit()
}

const jobColumns = `id, team_id, kind, status, url, request, idempotency_key, created_at, COALESCE(completed_at, 0),
	expires_at, credits, error`

func scanJob(row interface{ Scan(...any) error }) (Job, error) {
	var j Job
	var created, completed, expires int64
	err := row.Scan(&j.ID, &j.Team, &j.Kind, &j.Status, &j.URL, &j.Request, &j.IdempotencyKey, &created, &completed,
		&expires, &j.Credits, &j.Error)
	if err != nil {
		return j, err
	}
	j.CreatedAt, j.ExpiresAt = fromMillis(created), fromMillis(expires)
	if completed != 0 {
		j.CompletedAt = fromMillis(completed)
	}
	return j, nil
}

// Job returns team's job id of kind, or ErrNotFound (also for another
// team's job, and for an expired one).
func (s *Store) Job(ctx context.Context, team, kind, id string) (Job, error) {
	j, err := scanJob(s.db.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = ? AND team_id = ? AND kind = ?
		AND (status = 'scraping' OR expires_at > ?)`, id, team, kind, millis(time.Now())))
	if errors.Is(err, sql.ErrNoRows) {
		return j, ErrNotFound
	}
	if err != nil {
		return j, fmt.Errorf("reading job: %w", err)
	}
	return j, nil
}

// JobByIdempotencyKey returns team's job created with key.
func (s *Store) JobByIdempotencyKey(ctx context.Context, team, key string) (Job, error) {
	j, err := scanJob(s.db.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE team_id = ? AND idempotency_key = ?`, team, key))
	if errors.Is(err, sql.ErrNoRows) {
		return j, ErrNotFound
	}
	return j, err
}

// Jobs returns the jobs with status, oldest first; team "" means every
// team's, kind "" every kind.
func (s *Store) Jobs(ctx context.Context, team, kind, status string) ([]Job, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE status = ?
		AND (? = '' OR team_id = ?) AND (? = '' OR kind = ?) ORDER BY created_at, id`, status, team, team, kind, kind)
	if err != nil {
		return nil, fmt.Errorf("listing jobs: %w", err)
	}
	return scanAll(rows, scanJob)
}

// JobURLs returns a job's URLs (without their documents), in discovery
// order.
func (s *Store) JobURLs(ctx context.Context, job string) ([]JobURL, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT url_key, url, depth, seq, state, error_code, error, updated_at
		FROM job_urls WHERE job_id = ? ORDER BY seq`, job)
	if err != nil {
		return nil, fmt.Errorf("listing job URLs: %w", err)
	}
	defer rows.Close()
	var out []JobURL
	for rows.Next() {
		var u JobURL
		var updated int64
		if err := rows.Scan(&u.Key, &u.URL, &u.Depth, &u.Seq, &u.State, &u.ErrorCode, &u.Error, &updated); err != nil {
			return nil, err
		}
		u.UpdatedAt = fromMillis(updated)
		out = append(out, u)
	}
	return out, rows.Err()
}

// JobDocuments returns a job's documents in the order they were scraped,
// from skip, at most limit of them and (beyond the first) at most maxBytes
// in all; more says whether documents remain after them.
func (s *Store) JobDocuments(ctx context.Context, job string, skip, limit, maxBytes int) (docs []json.RawMessage, more bool, err error) {
	rows, err := s.db.QueryContext(ctx, `SELECT document FROM job_urls WHERE job_id = ? AND done_seq IS NOT NULL
		ORDER BY done_seq LIMIT ? OFFSET ?`, job, limit+1, skip)
	if err != nil {
		return nil, false, fmt.Errorf("reading job documents: %w", err)
	}
	defer rows.Close()
	size := 0
	for rows.Next() {
		var d []byte
		if err := rows.Scan(&d); err != nil {
			return nil, false, err
		}
		if len(docs) == limit || (len(docs) > 0 && size+len(d) > maxBytes) {
			return docs, true, nil
		}
		size += len(d)
		docs = append(docs, d)
	}
	return docs, false, rows.Err()
}

// PruneJobs deletes ended jobs (with their URLs and documents) whose
// results expired before t.
func (s *Store) PruneJobs(ctx context.Context, t time.Time) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM jobs WHERE status != 'scraping' AND expires_at < ?`, millis(t))
	return err
}
