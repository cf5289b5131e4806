// Package media owns the audio and video formats: it takes the page's
// main media through the browser while the page's lease is held (Take,
// take.go), then, the browser released, converts it with ffmpeg
// (convert.go) and keeps the result as a file of the team's (Library),
// linked from the document as a URL of Trawler's own (GET /v2/media/{id})
// that expires with the scrape's result.
package media

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trawler-dev/trawler/store"
)

// DefaultMaxBytes is the default cap on one media file taken from a page:
// 200 MiB. A larger file is not taken, with a warning that names the cap.
const DefaultMaxBytes = 200 << 20

// spoolMaxAge is how long bytes taken from a page may stay in the spool: far
// longer than a scrape's longest timeout, so what is older was left by a
// scrape that failed or a process that stopped.
const spoolMaxAge = time.Hour

// Options say where the audio and video formats keep their files and
// how documents link to them.
type Options struct {
	// Dir holds the converted files (DATA_DIR/media) and, under spool/,
	// the bytes taken from pages until they are converted. Empty: the
	// formats answer with a warning.
	Dir string
	// Base is the public base URL the links start with, without a
	// trailing slash (TRAWLER_PUBLIC_URL, else http:// and TRAWLER_ADDR):
	// a document is answered to a request, but also kept by a crawl and
	// posted to webhooks, long after that request.
	Base string
	// MaxBytes caps the file taken from a page; 0 is DefaultMaxBytes.
	MaxBytes int64
}

// spool is where, and how much of, a page's media Take writes.
type spool struct {
	dir string // "" when media is not configured
	max int64
}

// spool is o's spool: under the media directory, up to the cap.
func (o Options) spool() spool {
	sp := spool{max: o.MaxBytes}
	if sp.max <= 0 {
		sp.max = DefaultMaxBytes
	}
	if o.Dir != "" {
		sp.dir = filepath.Join(o.Dir, "spool")
	}
	return sp
}

// Taken is the page's main audio and video as Take took them, before
// conversion: files in the spool until Remove.
type Taken struct {
	// audio and video are the files taken for the formats asked (one file
	// when a single source serves both); nil when none was.
	audio, video *file
	// warnings say, per format, why nothing or only part was taken.
	warnings []string
	// TooLarge is set when the main media of a format asked for is over
	// the cap: the scrape fails with it.
	TooLarge *TooLargeError
}

// file is one media file taken from the page, spooled to disk.
type file struct {
	path        string // the spooled bytes
	url         string // where they came from, after redirects
	contentType string
}

// Remove deletes the spooled files.
func (m *Taken) Remove() {
	for _, f := range []*file{m.audio, m.video} {
		if f != nil {
			os.Remove(f.path)
		}
	}
}

// Library is the teams' media files: converted files under Options.Dir,
// each with a record in Store that expires after Retention.
type Library struct {
	Options
	Store *store.Store
	// Retention is how long a file is kept; 0 is a day.
	Retention time.Duration
	Log       *slog.Logger
}

// Links are the URLs of the files Finish kept, by format.
type Links struct {
	Audio, Video string
}

// Finish converts what Take took (t; nil when the target was not a page,
// its content type contentType) for the formats kinds, keeps it for team
// and returns its links. Whatever fails is a warning: the other formats
// of the page stand. Nothing is kept with zero data retention (zdr).
func (l Library) Finish(ctx context.Context, team string, kinds []string, zdr bool, t *Taken, contentType string) (Links, []string) {
	var links Links
	if len(kinds) == 0 {
		return links, nil
	}
	asked := "the " + strings.Join(kinds, " and ") + " format"
	if len(kinds) > 1 {
		asked += "s are"
	} else {
		asked += " is"
	}
	switch {
	case zdr:
		return links, []string{asked + " not available with zero data retention: the converted file would be stored, to be served by URL"}
	case t == nil:
		return links, []string{fmt.Sprintf("%s not available: the target is a document (%s), not a page with media", asked, contentType)}
	}
	warnings := slices.Clone(t.warnings)
	for _, k := range kinds {
		m := t.video
		if k == "audio" {
			m = t.audio
		}
		if m == nil {
			continue
		}
		link, warning := l.keep(ctx, team, k, m)
		if warning != "" {
			warnings = append(warnings, warning)
		}
		if k == "audio" {
			links.Audio = link
		} else {
			links.Video = link
		}
	}
	return links, warnings
}

// keep converts m into kind's format, records the file for team and
// returns its URL, or a warning saying why there is none (or what was done
// to it).
func (l Library) keep(ctx context.Context, team, kind string, m *file) (link, warning string) {
	conv, err := convert(ctx, kind, m, l.spool().dir)
	if err != nil {
		return "", kind + ": " + err.Error()
	}
	defer os.Remove(conv.path) // gone once renamed into place
	id := uuid.NewString()
	retention := l.Retention
	if retention == 0 {
		retention = 24 * time.Hour
	}
	now := time.Now()
	rec := store.Media{ID: id, Team: team, Kind: kind, ContentType: conv.contentType, Size: conv.size,
		FileName: fileName(m.url, kind, conv.ext), File: id + conv.ext, CreatedAt: now, ExpiresAt: now.Add(retention)}
	// The record first: a file is only ever in place with a record that
	// will prune it.
	if err := l.Store.PutMedia(context.WithoutCancel(ctx), rec); err != nil {
		l.Log.Error("recording media", "err", err)
		return "", kind + ": the converted file could not be kept (see the server log)"
	}
	if err := os.Rename(conv.path, filepath.Join(l.Dir, rec.File)); err != nil {
		l.Log.Error("keeping media", "err", err)
		return "", kind + ": the converted file could not be kept (see the server log)"
	}
	return l.Base + "/v2/media/" + id, conv.warning
}

// fileName is the name a file is offered under: the source's name
// with the new extension, in safe characters, else the kind.
func fileName(source, kind, ext string) string {
	name := source
	if i := strings.IndexAny(name, "?#"); i >= 0 {
		name = name[:i]
	}
	name = name[strings.LastIndex(name, "/")+1:]
	name = strings.TrimSuffix(name, filepath.Ext(name))
	name = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, name)
	name = strings.Trim(name, "._")
	if len(name) > 80 {
		name = name[:80]
	}
	if name == "" || strings.HasPrefix(source, "data:") {
		name = kind
	}
	return name + ext
}

// Open opens team's media file id for reading, with its record;
// store.ErrNotFound when there is none, it expired, or it is another
// team's.
func (l Library) Open(ctx context.Context, team, id string) (*os.File, store.Media, error) {
	m, err := l.Store.Media(ctx, team, id)
	if err != nil {
		return nil, store.Media{}, err
	}
	if l.Dir == "" || filepath.Base(m.File) != m.File {
		return nil, store.Media{}, store.ErrNotFound
	}
	f, err := os.Open(filepath.Join(l.Dir, m.File))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, store.Media{}, store.ErrNotFound // pruned since the record was read
	}
	if err != nil {
		return nil, store.Media{}, fmt.Errorf("opening media %s: %w", id, err)
	}
	return f, m, nil
}

// Prune deletes the media files that expired, and bytes left in the
// spool by a scrape that failed between taking and converting them, or by
// a process that stopped.
func (l Library) Prune(ctx context.Context) error {
	files, err := l.Store.PruneMedia(ctx, time.Now())
	if err != nil {
		return err
	}
	if l.Dir == "" {
		return nil
	}
	var errs []error
	for _, f := range files {
		if err := os.Remove(filepath.Join(l.Dir, filepath.Base(f))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	dir := l.spool().dir
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < spoolMaxAge {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
