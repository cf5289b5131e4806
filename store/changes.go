package store

import (
	"bytes"
	"compress/flate"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"time"
)

// PageVersion is one scrape of a page as change tracking remembers it: the
// history it is compared with belongs to a team, a normalised URL and a
// tag.
type PageVersion struct {
	Team string
	// URLKey is the page's URL, normalised as the cache normalises it.
	URLKey string
	// Tag names the history ("" is the default one).
	Tag        string
	ScrapedAt  time.Time
	StatusCode int
	Markdown   string
	// ExtractionKey identifies the schema and prompt Extraction answers
	// (the json mode); "" with no extraction.
	ExtractionKey string
	// Extraction is what the model extracted from Markdown, JSON; nil
	// when it was not asked for.
	Extraction []byte
}

// PutPageVersion appends v to its page's history, then trims that history
// to its newest keep versions (every one when keep is 0) scraped at or
// after since.
func (s *Store) PutPageVersion(ctx context.Context, v PageVersion, keep int, since time.Time) error {
	if keep <= 0 {
		keep = noLimit
	}
	md, err := deflate(v.Markdown)
	if err != nil {
		return fmt.Errorf("compressing the version of %s: %w", v.URLKey, err)
	}
	var extraction any
	if v.Extraction != nil {
		extraction = v.Extraction
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO page_versions (team_id, url_key, tag, scraped_at, status_code, markdown,
			extraction_key, extraction) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, v.Team, v.URLKey, v.Tag, millis(v.ScrapedAt),
			v.StatusCode, md, v.ExtractionKey, extraction)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM page_versions WHERE team_id = ? AND url_key = ? AND tag = ?
			AND (scraped_at < ? OR seq NOT IN (SELECT seq FROM page_versions WHERE team_id = ? AND url_key = ? AND tag = ?
			ORDER BY scraped_at DESC, seq DESC LIMIT ?))`, v.Team, v.URLKey, v.Tag, millis(since), v.Team, v.URLKey, v.Tag, keep)
		return err
	})
	if err != nil {
		return fmt.Errorf("recording a version of %s: %w", v.URLKey, err)
	}
	return nil
}

// PreviousPageVersion returns the newest version of team's page (urlKey in
// tag's history) scraped at or before before and not before since, or
// ErrNotFound.
func (s *Store) PreviousPageVersion(ctx context.Context, team, urlKey, tag string, before, since time.Time) (PageVersion, error) {
	v := PageVersion{Team: team, URLKey: urlKey, Tag: tag}
	var scraped int64
	var md []byte
	err := s.db.QueryRowContext(ctx, `SELECT scraped_at, status_code, markdown, extraction_key, extraction FROM page_versions
		WHERE team_id = ? AND url_key = ? AND tag = ? AND scraped_at <= ? AND scraped_at >= ?
		ORDER BY scraped_at DESC, seq DESC LIMIT 1`, team, urlKey, tag, millis(before), millis(since)).
		Scan(&scraped, &v.StatusCode, &md, &v.ExtractionKey, &v.Extraction)
	if errors.Is(err, sql.ErrNoRows) {
		return v, ErrNotFound
	}
	if err != nil {
		return v, fmt.Errorf("reading the previous version of %s: %w", urlKey, err)
	}
	v.ScrapedAt = fromMillis(scraped)
	if v.Markdown, err = inflate(md); err != nil {
		return v, fmt.Errorf("reading the previous version of %s: %w", urlKey, err)
	}
	return v, nil
}

// PrunePageVersions deletes the versions scraped before t, whatever their
// page.
func (s *Store) PrunePageVersions(ctx context.Context, t time.Time) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM page_versions WHERE scraped_at < ?`, millis(t))
	return err
}

// deflate compresses a version's Markdown: a page's history keeps up to
// ten copies of text that compresses about fourfold.
func deflate(text string) ([]byte, error) {
	var buf bytes.Buffer
	w, err := flate.NewWriter(&buf, flate.BestSpeed)
	if err != nil {
		return nil, err
	}
	if _, err := io.WriteString(w, text); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func inflate(b []byte) (string, error) {
	out, err := io.ReadAll(flate.NewReader(bytes.NewReader(b)))
	return string(out), err
}
