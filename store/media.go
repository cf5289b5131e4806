package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Media is a file the audio or video format made of a page's media, served
// to its team at GET /v2/media/{id} until it expires.
type Media struct {
	ID   string
	Team string
	// Kind is audio or video.
	Kind        string
	ContentType string
	Size        int64
	// FileName is the name the file is offered under (Content-Disposition).
	FileName string
	// File is where the bytes are, relative to the media directory.
	File      string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// PutMedia records a media file.
func (s *Store) PutMedia(ctx context.Context, m Media) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO media (id, team_id, kind, content_type, size, filename, file, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, m.ID, m.Team, m.Kind, m.ContentType, m.Size, m.FileName, m.File,
		millis(m.CreatedAt), millis(m.ExpiresAt))
	if err != nil {
		return fmt.Errorf("recording media %s: %w", m.ID, err)
	}
	return nil
}

// Media returns team's media file id, or ErrNotFound (also once expired,
// and for another team's).
func (s *Store) Media(ctx context.Context, team, id string) (Media, error) {
	m := Media{ID: id, Team: team}
	var created, expires int64
	err := s.db.QueryRowContext(ctx, `SELECT kind, content_type, size, filename, file, created_at, expires_at
		FROM media WHERE id = ? AND team_id = ? AND expires_at > ?`, id, team, millis(time.Now())).
		Scan(&m.Kind, &m.ContentType, &m.Size, &m.FileName, &m.File, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return Media{}, ErrNotFound
	}
	if err != nil {
		return Media{}, fmt.Errorf("reading media %s: %w", id, err)
	}
	m.CreatedAt, m.ExpiresAt = fromMillis(created), fromMillis(expires)
	return m, nil
}

// PruneMedia deletes the records of media expired at now and returns
// their files, for the caller to delete.
func (s *Store) PruneMedia(ctx context.Context, now time.Time) ([]string, error) {
	// One statement: a transaction that read before it wrote was refused
	// (SQLITE_BUSY_SNAPSHOT) when another connection had written between.
	rows, err := s.db.QueryContext(ctx, `DELETE FROM media WHERE expires_at <= ? RETURNING file`, millis(now))
	var files []string
	if err == nil {
		files, err = scanAll(rows, func(row interface{ Scan(...any) error }) (string, error) {
			var f string
			return f, row.Scan(&f)
		})
	}
	if err != nil {
		return nil, fmt.Errorf("pruning media: %w", err)
	}
	return files, nil
}
