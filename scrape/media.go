package scrape

import "context"

// pageMedia is the page's main audio or video as taken (being built).
type pageMedia struct{}

// takeMedia takes the page's main media through the browser (being built).
func (t *tab) takeMedia(ctx context.Context, o *Options, limit int64) *pageMedia { return nil }

// finishMedia converts the taken media and links it from doc (being built).
func (s *Service) finishMedia(ctx context.Context, req Request, doc *Document, pg *page) {
	doc.Warning = joinWarning(doc.Warning, "audio and video are being built")
}

// mediaLimit is the largest media file taken, in bytes.
func (s *Service) mediaLimit() int64 { return 0 }
