package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Credit ledger kinds: the endpoint whose request a charge bills.
const (
	CreditScrape  = "scrape"
	CreditCrawl   = "crawl"
	CreditBatch   = "batch_scrape"
	CreditSearch  = "search"
	CreditExtract = "extract"
	CreditParse   = "parse"
	CreditBrowser = "browser"
	CreditMonitor = "monitor" // a monitor's judgments (its pages are its jobs')
)

// Charge is one billable event of the credit ledger.
type Charge struct {
	Team string
	// Request is the id of what is billed: a scrape's scrapeId, a job, a
	// search, an extract, a browser session.
	Request string
	// Item tells a request's charges apart: a job page's URL key; "" for a
	// request billed once.
	Item    string
	Kind    string
	Credits int
	At      time.Time
}

// insertCharge writes c in tx unless the ledger already has (c.Request,
// c.Item); it reports whether it wrote it. A charge of no credits is not
// written.
func insertCharge(ctx context.Context, tx *sql.Tx, c Charge) (bool, error) {
	if c.Credits == 0 {
		return false, nil
	}
	if c.At.IsZero() {
		c.At = time.Now()
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO credit_ledger (team_id, request_id, item, kind, credits,
		created_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, c.Team, c.Request, c.Item, c.Kind, c.Credits,
		millis(c.At))
	if err != nil {
		return false, fmt.Errorf("recording a charge of %d credits: %w", c.Credits, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// AddCharge writes c alone, for a result that is not stored (zero data
// retention, lockdown, a search) or that is stored elsewhere; written twice,
// it bills once.
func (s *Store) AddCharge(ctx context.Context, c Charge) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := insertCharge(ctx, tx, c)
		return err
	})
}

// PutScrape stores a scrape's document (JSON) for GET /v2/scrape/{id} and,
// in the same transaction, its charge when c is not nil.
func (s *Store) PutScrape(ctx context.Context, id, team string, created, expires time.Time, doc []byte, c *Charge) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO scrapes (id, team_id, created_at, expires_at, document)
			VALUES (?, ?, ?, ?, ?)`, id, team, millis(created), millis(expires), doc)
		if err != nil {
			return fmt.Errorf("storing scrape %s: %w", id, err)
		}
		if c != nil {
			_, err = insertCharge(ctx, tx, *c)
		}
		return err
	})
}

// CreditsUsed sums team's charges made in [from, to).
func (s *Store) CreditsUsed(ctx context.Context, team string, from, to time.Time) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(SUM(credits), 0) FROM credit_ledger
		WHERE team_id = ? AND created_at >= ? AND created_at < ?`, team, millis(from), millis(to)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("summing credit usage: %w", err)
	}
	return n, nil
}

// CreditMonth is what a team used in one calendar month (UTC).
type CreditMonth struct {
	Start   time.Time // the first instant of the month
	Credits int64
}

// CreditHistory returns team's credits by calendar month (UTC), oldest
// first; months without charges are left out.
func (s *Store) CreditHistory(ctx context.Context, team string) ([]CreditMonth, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+s.dialect.creditMonth+` AS month,
		SUM(credits) FROM credit_ledger WHERE team_id = ? GROUP BY month ORDER BY month`, team)
	if err != nil {
		return nil, fmt.Errorf("reading credit history: %w", err)
	}
	return scanAll(rows, func(r interface{ Scan(...any) error }) (CreditMonth, error) {
		var m CreditMonth
		var month string
		if err := r.Scan(&month, &m.Credits); err != nil {
			return m, err
		}
		start, err := time.Parse("2006-01", month)
		if err != nil {
			return m, fmt.Errorf("reading credit history: month %q: %w", month, err)
		}
		m.Start = start.UTC()
		return m, nil
	})
}

// LastCharge returns when team was last charged for content (a scrape, a
// job's page, a search, a parse, an extract: anything but browser time);
// zero when never.
func (s *Store) LastCharge(ctx context.Context, team string) (time.Time, error) {
	var at sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT MAX(created_at) FROM credit_ledger WHERE team_id = ? AND kind != ?`,
		team, CreditBrowser).Scan(&at)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, fmt.Errorf("reading the last charge: %w", err)
	}
	if !at.Valid {
		return time.Time{}, nil
	}
	return fromMillis(at.Int64), nil
}

// Charges returns the ledger's entries of request (every team's), in the
// order they were written: for tests and audits.
func (s *Store) Charges(ctx context.Context, request string) ([]Charge, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT team_id, request_id, item, kind, credits, created_at FROM credit_ledger
		WHERE request_id = ? ORDER BY seq`, request)
	if err != nil {
		return nil, fmt.Errorf("reading charges: %w", err)
	}
	return scanAll(rows, func(r interface{ Scan(...any) error }) (Charge, error) {
		var c Charge
		var at int64
		err := r.Scan(&c.Team, &c.Request, &c.Item, &c.Kind, &c.Credits, &at)
		c.At = fromMillis(at)
		return c, err
	})
}
