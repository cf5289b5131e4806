package scrape

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trawler-dev/trawler/store"
)

// The audio and video formats take the page's main media through the
// browser while the page's lease is held (takeMedia, media_take.go), then,
// the browser released, convert it with ffmpeg (media_convert.go) and keep
// the result as a file of the team's, linked from the document as a URL of
// Trawler's own (GET /v2/media/{id}) that expires with the scrape's result.

// MaxMediaBytes is the default cap on one media file taken from a page:
// 200 MiB. A larger file is not taken, with a warning that names the cap.
const MaxMediaBytes = 200 << 20

// spoolMaxAge is how long bytes taken from a page may stay in the spool: far
// longer than a scrape's longest timeout, so what is older was left by a
// scrape that failed or a process that stopped.
const spoolMaxAge = time.Hour

// MediaOptions say where the audio and video formats keep their files and
// how documents link to them.
type MediaOptions struct {
	// Dir holds the converted files (DATA_DIR/media) and, under spool/,
	// the bytes taken from pages until they are converted. Empty: the
	// formats answer with a warning.
	Dir string
	// Base is the public base URL the links start with, without a
	// trailing slash (TRAWLER_PUBLIC_URL, else http:// and TRAWLER_ADDR):
	// a document is answered to a request, but also kept by a crawl and
	// posted to webhooks, long after that request.
	Base string
	// MaxBytes caps the file taken from a page; 0 is MaxMediaBytes.
	MaxBytes int64
}

// spool is where, and how much of, a page's media takeMedia writes.
type spool struct {
	dir string // "" when media is not configured
	max int64
}

// mediaLimit is this service's spool: under the media directory, up to
// the cap.
func (s *Service) mediaLimit() spool {
	sp := spool{max: s.Media.MaxBytes}
	if sp.max <= 0 {
		sp.max = MaxMediaBytes
	}
	if s.Media.Dir != "" {
		sp.dir = filepath.Join(s.Media.Dir, "spool")
	}
	return sp
}

// pageMedia is the page's main audio and video as taken, before
// conversion.
type pageMedia struct {
	// audio and video are the files taken for the formats asked (one file
	// when a single source serves both); nil when none was.
	audio, video *takenMedia
	// warnings say, per format, why nothing or only part was taken.
	warnings []string
	// tooLarge is set when the main media of a format asked for is over
	// the cap: the scrape fails with it.
	tooLarge *MediaTooLargeError
}

// takenMedia is one media file taken from the page, spooled to disk.
type takenMedia struct {
	path        string // the spooled bytes
	url         string // where they came from, after redirects
	contentType string
}

// remove deletes the spooled files.
func (m *pageMedia) remove() {
	for _, f := range []*takenMedia{m.audio, m.video} {
		if f != nil {
			os.Remove(f.path)
		}
	}
}

// mediaKinds are the media formats o asks for, in the order they are
// reported.
func mediaKinds(o *Options) []string {
	var kinds []string
	for _, k := range []string{"audio", "video"} {
		if o.Has(k) {
			kinds = append(kinds, k)
		}
	}
	return kinds
}

// finishMedia converts what takeMedia took, keeps it for the team and links
// it from doc (Audio, Video). Whatever fails is a warning: the other
// formats of the page stand.
func (s *Service) finishMedia(ctx context.Context, req Request, doc *Document, pg *page) {
	o := &req.Options
	kinds := mediaKinds(o)
	if pg.media != nil {
		defer pg.media.remove()
	}
	if len(kinds) == 0 {
		return
	}
	asked := "the " + strings.Join(kinds, " and ") + " format"
	if len(kinds) > 1 {
		asked += "s are"
	} else {
		asked += " is"
	}
	switch {
	case o.ZeroDataRetention:
		doc.Warning = joinWarning(doc.Warning, asked+" not available with zero data retention: the converted file would be stored, to be served by URL")
		return
	case pg.media == nil:
		doc.Warning = joinWarning(doc.Warning, fmt.Sprintf("%s not available: the target is a document (%s), not a page with media", asked, pg.contentType))
		return
	}
	for _, w := range pg.media.warnings {
		doc.Warning = joinWarning(doc.Warning, w)
	}
	for _, k := range kinds {
		m := pg.media.video
		if k == "audio" {
			m = pg.media.audio
		}
		if m == nil {
			continue
		}
		link, warning := s.keepMedia(ctx, req.Team, k, m)
		doc.Warning = joinWarning(doc.Warning, warning)
		if k == "audio" {
			doc.Audio = link
		} else {
			doc.Video = link
		}
	}
}

// keepMedia converts m into kind's format, records the file for team and
// returns its URL, or a warning saying why there is none (or what was done
// to it).
func (s *Service) keepMedia(ctx context.Context, team, kind string, m *takenMedia) (link, warning string) {
	conv, err := convertMedia(ctx, kind, m, s.mediaLimit().dir)
	if err != nil {
		return "", kind + ": " + err.Error()
	}
	defer os.Remove(conv.path) // gone once renamed into place
	id := uuid.NewString()
	retention := s.Retention
	if retention == 0 {
		retention = 24 * time.Hour
	}
	now := time.Now()
	rec := store.Media{ID: id, Team: team, Kind: kind, ContentType: conv.contentType, Size: conv.size,
		FileName: mediaFileName(m.url, kind, conv.ext), File: id + conv.ext, CreatedAt: now, ExpiresAt: now.Add(retention)}
	// The record first: a file is only ever in place with a record that
	// will prune it.
	if err := s.Store.PutMedia(context.WithoutCancel(ctx), rec); err != nil {
		s.Log.Error("recording media", "err", err)
		return "", kind + ": the converted file could not be kept (see the server log)"
	}
	if err := os.Rename(conv.path, filepath.Join(s.Media.Dir, rec.File)); err != nil {
		s.Log.Error("keeping media", "err", err)
		return "", kind + ": the converted file could not be kept (see the server log)"
	}
	return s.Media.Base + "/v2/media/" + id, conv.warning
}

// mediaFileName is the name a file is offered under: the source's name
// with the new extension, in safe characters, else the kind.
func mediaFileName(source, kind, ext string) string {
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

// OpenMedia opens team's media file id for reading, with its record;
// store.ErrNotFound when there is none, it expired, or it is another
// team's.
func (s *Service) OpenMedia(ctx context.Context, team, id string) (*os.File, store.Media, error) {
	m, err := s.Store.Media(ctx, team, id)
	if err != nil {
		return nil, store.Media{}, err
	}
	if s.Media.Dir == "" || filepath.Base(m.File) != m.File {
		return nil, store.Media{}, store.ErrNotFound
	}
	f, err := os.Open(filepath.Join(s.Media.Dir, m.File))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, store.Media{}, store.ErrNotFound // pruned since the record was read
	}
	if err != nil {
		return nil, store.Media{}, fmt.Errorf("opening media %s: %w", id, err)
	}
	return f, m, nil
}

// PruneMedia deletes the media files that expired, and bytes left in the
// spool by a scrape that failed between taking and converting them, or by
// a process that stopped.
func (s *Service) PruneMedia(ctx context.Context) error {
	files, err := s.Store.PruneMedia(ctx, time.Now())
	if err != nil {
		return err
	}
	if s.Media.Dir == "" {
		return nil
	}
	var errs []error
	for _, f := range files {
		if err := os.Remove(filepath.Join(s.Media.Dir, filepath.Base(f))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	dir := s.mediaLimit().dir
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
