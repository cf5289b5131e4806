package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Extract is an extract job: pages scraped as one batch, then read by the
// language model in one call.
type Extract struct {
	ID, Team string
	Status   string // processing, completed, failed, cancelled
	Request  []byte // the job's options, JSON
	// BatchID is the batch job that scrapes the pages, "" until chosen.
	BatchID string
	// Result is the model's answer (JSON), nil until completed.
	Result []byte
	// Sources are, as JSON, the URLs of the pages each field of the result
	// was read from, by its path (package extract's Sources); an extract
	// stored by an older version holds the list of pages read instead.
	Sources   json.RawMessage
	Warning   string
	Error     string
	CreatedAt time.Time
	ExpiresAt time.Time
	Credits   int
	// Charged is what the extraction itself adds to Credits, which
	// FinishExtract writes to the credit ledger: the pages are billed as
	// their batch's.
	Charged int
}

// CreateExtract stores a new extract job.
func (s *Store) CreateExtract(ctx context.Context, e Extract) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO extracts (id, team_id, status, request, batch_id, warning, created_at,
		expires_at, node, lease_until) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, e.ID, e.Team, e.Status, e.Request, e.BatchID,
		e.Warning, millis(e.CreatedAt), millis(e.ExpiresAt), s.node, millis(time.Now().Add(s.lease)))
	if err != nil {
		return fmt.Errorf("storing extract: %w", err)
	}
	return nil
}

// SetExtractBatch records the batch that scrapes a processing extract's
// pages, and the warnings of finding them; ErrNotFound when the extract
// ended or another node holds it.
func (s *Store) SetExtractBatch(ctx context.Context, id, batchID, warning string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE extracts SET batch_id = ?, warning = ? WHERE id = ? AND status = 'processing'
		AND (? = '' OR node = ?)`, batchID, warning, id, s.node, s.node)
	if err != nil {
		return fmt.Errorf("recording the extract's batch: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// FinishExtract ends a processing extract with e's status, result, sources,
// warning, error, credits and expiry, and writes its charge (e.Charged) to
// the credit ledger, once: one that already ended, or that another node
// holds, is left as it is and ErrNotFound returned.
func (s *Store) FinishExtract(ctx context.Context, e Extract) error {
	sources := e.Sources
	if sources == nil {
		sources = json.RawMessage("{}")
	}
	var result any
	if e.Result != nil {
		result = e.Result
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		var team string
		err := tx.QueryRowContext(ctx, `UPDATE extracts SET status = ?, result = ?, sources = ?, warning = ?, error = ?,
			credits = ?, expires_at = ? WHERE id = ? AND status = 'processing' AND (? = '' OR node = ?) RETURNING team_id`,
			e.Status, result, string(sources), e.Warning, e.Error, e.Credits, millis(e.ExpiresAt), e.ID, s.node, s.node).Scan(&team)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("ending extract: %w", err)
		}
		_, err = insertCharge(ctx, tx, Charge{Team: team, Request: e.ID, Kind: CreditExtract, Credits: e.Charged})
		return err
	})
}

const extractColumns = `id, team_id, status, request, batch_id, result, sources, warning, error, created_at, expires_at,
	credits`

func scanExtract(row interface{ Scan(...any) error }) (Extract, error) {
	var e Extract
	var sources string
	var created, expires int64
	err := row.Scan(&e.ID, &e.Team, &e.Status, &e.Request, &e.BatchID, &e.Result, &sources, &e.Warning, &e.Error,
		&created, &expires, &e.Credits)
	if err != nil {
		return e, err
	}
	if !json.Valid([]byte(sources)) {
		return e, fmt.Errorf("reading extract %s's sources: not JSON", e.ID)
	}
	e.Sources = json.RawMessage(sources)
	e.CreatedAt, e.ExpiresAt = fromMillis(created), fromMillis(expires)
	return e, nil
}

// Extract returns team's extract id, or ErrNotFound (also for another
// team's, and for an expired one).
func (s *Store) Extract(ctx context.Context, team, id string) (Extract, error) {
	e, err := scanExtract(s.db.QueryRowContext(ctx, `SELECT `+extractColumns+` FROM extracts WHERE id = ? AND team_id = ?
		AND (status = 'processing' OR expires_at > ?)`, id, team, millis(time.Now())))
	if errors.Is(err, sql.ErrNoRows) {
		return e, ErrNotFound
	}
	if err != nil {
		return e, fmt.Errorf("reading extract: %w", err)
	}
	return e, nil
}

// PruneExtracts deletes ended extracts whose results expired before t.
func (s *Store) PruneExtracts(ctx context.Context, t time.Time) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM extracts WHERE status != 'processing' AND expires_at < ?`, millis(t))
	return err
}
