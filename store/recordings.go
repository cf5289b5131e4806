package store

import (
	"context"
	"fmt"
	"time"
)

// RecordingChunk is one write of a recorded tab's events (package
// recording): its bytes are in Data, or in an object store under Object.
type RecordingChunk struct {
	Session, Page, Team string
	Seq                 int
	URL, Title          string
	FirstAt, LastAt     time.Time
	Events              int
	Bytes               int
	Data                []byte
	Object              string
	ExpiresAt           time.Time
}

// PutRecordingChunk stores a chunk; written twice, it is kept once.
func (s *Store) PutRecordingChunk(ctx context.Context, c RecordingChunk) error {
	var data any
	if c.Object == "" {
		data = c.Data
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO recording_chunks (session_id, page_id, seq, team_id, url, title,
		first_at, last_at, events, bytes, data, object, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING`, c.Session, c.Page, c.Seq, c.Team, c.URL, c.Title, millis(c.FirstAt), millis(c.LastAt),
		c.Events, c.Bytes, data, c.Object, millis(c.ExpiresAt))
	if err != nil {
		return fmt.Errorf("storing a recording of session %s: %w", c.Session, err)
	}
	return nil
}

// RecordedPage sums up the chunks of one recorded tab.
type RecordedPage struct {
	ID              string
	URL, Title      string // as of its last chunk
	FirstAt, LastAt time.Time
	Events, Bytes   int
	Chunks          int
}

// RecordedPages lists the tabs of team's recorded session, in the order
// they were first recorded; none once the recording expired.
func (s *Store) RecordedPages(ctx context.Context, team, session string) ([]RecordedPage, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT c.page_id, MIN(c.first_at), MAX(c.last_at), SUM(c.events), SUM(c.bytes),
		COUNT(*), (SELECT l.url FROM recording_chunks l WHERE l.session_id = c.session_id AND l.page_id = c.page_id
		ORDER BY l.seq DESC LIMIT 1), (SELECT l.title FROM recording_chunks l WHERE l.session_id = c.session_id AND
		l.page_id = c.page_id ORDER BY l.seq DESC LIMIT 1)
		FROM recording_chunks c WHERE c.session_id = ? AND c.team_id = ? AND c.expires_at > ?
		GROUP BY c.session_id, c.page_id ORDER BY MIN(c.first_at), c.page_id`, session, team, millis(time.Now()))
	if err != nil {
		return nil, fmt.Errorf("listing the recording of session %s: %w", session, err)
	}
	return scanAll(rows, func(row interface{ Scan(...any) error }) (RecordedPage, error) {
		var p RecordedPage
		var first, last int64
		err := row.Scan(&p.ID, &first, &last, &p.Events, &p.Bytes, &p.Chunks, &p.URL, &p.Title)
		p.FirstAt, p.LastAt = fromMillis(first), fromMillis(last)
		return p, err
	})
}

// RecordingChunks returns up to limit chunks of one recorded tab from seq
// from on, in order.
func (s *Store) RecordingChunks(ctx context.Context, team, session, page string, from, limit int) ([]RecordingChunk, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT seq, url, title, first_at, last_at, events, bytes, data, object, expires_at
		FROM recording_chunks WHERE session_id = ? AND page_id = ? AND team_id = ? AND seq >= ? AND expires_at > ?
		ORDER BY seq LIMIT ?`, session, page, team, from, millis(time.Now()), limit)
	if err != nil {
		return nil, fmt.Errorf("reading the recording of session %s: %w", session, err)
	}
	return scanAll(rows, func(row interface{ Scan(...any) error }) (RecordingChunk, error) {
		c := RecordingChunk{Session: session, Page: page, Team: team}
		var first, last, expires int64
		err := row.Scan(&c.Seq, &c.URL, &c.Title, &first, &last, &c.Events, &c.Bytes, &c.Data, &c.Object, &expires)
		c.FirstAt, c.LastAt, c.ExpiresAt = fromMillis(first), fromMillis(last), fromMillis(expires)
		return c, err
	})
}

// PruneRecordings deletes the chunks expired at now and returns the
// objects they name, for the caller to delete.
func (s *Store) PruneRecordings(ctx context.Context, now time.Time) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `DELETE FROM recording_chunks WHERE expires_at <= ? RETURNING object`, millis(now))
	var objects []string
	if err == nil {
		var all []string
		all, err = scanAll(rows, func(row interface{ Scan(...any) error }) (string, error) {
			var o string
			return o, row.Scan(&o)
		})
		for _, o := range all {
			if o != "" {
				objects = append(objects, o)
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("pruning recordings: %w", err)
	}
	return objects, nil
}
