package scrape

import (
	"context"
	"os"

	cdproto "github.com/chromedp/cdproto/cdp"

	"github.com/trawler-dev/trawler/scrape/media"
	"github.com/trawler-dev/trawler/scrape/tabs"
	"github.com/trawler-dev/trawler/store"
)

// The audio and video formats are package media's: the page's tab takes
// the media (takeMedia) while the page's lease is held, and the service
// converts and keeps it (finishMedia) once the browser is released.

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

// takeMedia takes the page's main media for the audio and video formats o
// asks for (media.Take), into the service's spool. Nothing is taken with
// zero data retention (finishMedia says why).
func (s *Service) takeMedia(ctx context.Context, t *tabs.Tab, o *Options) *media.Taken {
	kinds := mediaKinds(o)
	if len(kinds) == 0 || o.ZeroDataRetention {
		return nil
	}
	return media.Take(ctx, mediaTab{t}, kinds, s.Media, s.Log)
}

// finishMedia converts what takeMedia took, keeps it for the team and links
// it from doc (Audio, Video). Whatever fails is a warning: the other
// formats of the page stand.
func (s *Service) finishMedia(ctx context.Context, req Request, doc *Document, pg *page) {
	if pg.media != nil {
		defer pg.media.Remove()
	}
	links, warnings := s.mediaLibrary().Finish(ctx, req.Team, mediaKinds(&req.Options), req.Options.ZeroDataRetention,
		pg.media, pg.contentType)
	for _, w := range warnings {
		doc.Warning = joinWarning(doc.Warning, w)
	}
	doc.Audio, doc.Video = links.Audio, links.Video
}

// mediaLibrary is the service's media files.
func (s *Service) mediaLibrary() media.Library {
	return media.Library{Options: s.Media, Store: s.Store, Retention: s.Retention, Log: s.Log}
}

// OpenMedia opens team's media file id for reading, with its record;
// store.ErrNotFound when there is none, it expired, or it is another
// team's.
func (s *Service) OpenMedia(ctx context.Context, team, id string) (*os.File, store.Media, error) {
	return s.mediaLibrary().Open(ctx, team, id)
}

// PruneMedia deletes the media files that expired, and bytes left in the
// spool by a scrape that failed between taking and converting them, or by
// a process that stopped.
func (s *Service) PruneMedia(ctx context.Context) error {
	return s.mediaLibrary().Prune(ctx)
}

// mediaTab is a tab as media takes the page's media through it.
type mediaTab struct{ *tabs.Tab }

var _ media.Tab = mediaTab{}

func (m mediaTab) BrowserContext() cdproto.BrowserContextID {
	return cdproto.BrowserContextID(m.ContextID())
}

func (m mediaTab) Requests(ua string) media.Requests {
	return media.Requests{UserAgent: m.UserAgentOverride(ua), Headers: m.ExtraHeaders(),
		IgnoreCertificateErrors: m.Setup().SkipTLSVerification}
}
