package scrape

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/trawler-dev/trawler/discover"
	"github.com/trawler-dev/trawler/store"
)

// ChangeRetention is how long change tracking remembers a version of a
// page: an older one is never compared with, and is dropped when the page
// is scraped again (Store.PrunePageVersions sweeps the rest).
const ChangeRetention = 90 * 24 * time.Hour

// changeVersions is how many versions of a page (per team and tag) change
// tracking keeps.
const changeVersions = 10

// The values of ChangeTracking.ChangeStatus.
const (
	changeNew     = "new"
	changeSame    = "same"
	changeChanged = "changed"
	changeRemoved = "removed"
)

// ChangeTracking is the changeTracking member of a document (spec 2.2, in
// the shape Firecrawl returns): how the page compares with the previous
// scrape of its URL by the same team under the same tag.
type ChangeTracking struct {
	// PreviousScrapeAt is when the version compared with was scraped (RFC
	// 3339); null when there is none.
	PreviousScrapeAt *string `json:"previousScrapeAt"`
	// ChangeStatus is new, same, changed or removed.
	ChangeStatus string `json:"changeStatus"`
	// Visibility is visible or hidden; see trackChanges.
	Visibility string `json:"visibility"`
	// Diff is the git-diff mode's diff, when the page changed.
	Diff *Diff `json:"diff,omitempty"`
	// JSON is the json mode's comparison, when the page changed: for each
	// top-level member of the extraction whose value differs, its
	// previous and current values ({} when none does).
	JSON map[string]JSONChange `json:"json,omitzero"`
}

// JSONChange is one member of the json mode's comparison.
type JSONChange struct {
	Previous any `json:"previous"`
	Current  any `json:"current"`
}

// trackChanges compares the page's Markdown with the previous version of
// its URL in the team's history for f's tag, sets doc.ChangeTracking, and
// records this version. It returns the credits the json mode's model calls
// add (see compareExtractions).
//
// Visibility follows Firecrawl's meaning: "visible" is a URL reached by an
// organic route (asked for, or found by a crawl in links or sitemaps),
// "hidden" one found only in the memory of previous crawls. Trawler's
// crawls have no such memory (their URLs come from the start URL, links
// and sitemaps), so every page is visible.
func (s *Service) trackChanges(ctx context.Context, req Request, requestID string, doc *Document, pg *page, f Format) int {
	ct := &ChangeTracking{ChangeStatus: changeNew, Visibility: "visible"}
	doc.ChangeTracking = ct
	warn := func(format string, args ...any) {
		doc.Warning = joinWarning(doc.Warning, "changeTracking: "+fmt.Sprintf(format, args...))
	}
	removed := pg.status == 404 || pg.status == 410
	if removed {
		ct.ChangeStatus = changeRemoved
	}
	if req.Options.ZeroDataRetention {
		warn("with zero data retention no history of the page is read or kept, so it is compared with nothing")
		return 0
	}
	if doc.Metadata["cacheState"] == "hit" {
		warn("the page came from the cache, as fetched at %v; set maxAge to 0 to compare the live page", doc.Metadata["cachedAt"])
	}
	// A page that is gone has no content of its own; what the server
	// wrote on its error page is not a version of it.
	current := store.PageVersion{Team: req.Team, URLKey: discover.PageKey(req.URL), Tag: f.Tag, ScrapedAt: time.Now(),
		StatusCode: pg.status}
	if !removed {
		current.Markdown = doc.Markdown
	}
	previous, err := s.Store.PreviousPageVersion(ctx, req.Team, current.URLKey, f.Tag, current.ScrapedAt,
		current.ScrapedAt.Add(-ChangeRetention))
	var prev *store.PageVersion
	switch {
	case err == nil:
		prev = &previous
		at := previous.ScrapedAt.UTC().Format("2006-01-02T15:04:05.000Z07:00")
		ct.PreviousScrapeAt = &at
		if !removed {
			ct.ChangeStatus = changeChanged
			if sameContent(previous.Markdown, current.Markdown) {
				ct.ChangeStatus = changeSame
			}
		}
	case !errors.Is(err, store.ErrNotFound):
		s.Log.Error("reading a page's change history", "url", current.URLKey, "err", err)
		warn("the page's history could not be read, so it is compared with nothing")
	}
	if ct.ChangeStatus == changeChanged && slices.Contains(f.Modes, "git-diff") {
		ct.Diff = DiffMarkdown(prev.Markdown, current.Markdown)
	}
	credits := 0
	if slices.Contains(f.Modes, "json") {
		credits = s.compareExtractions(ctx, req, requestID, doc, f, prev, &current, warn)
	}
	// A server error is taken as passing (the cache does not keep one
	// either): the next scrape is compared with the last version the
	// server answered properly.
	if pg.status >= 500 {
		warn("the page answered HTTP %d, which is not kept in its history", pg.status)
		return credits
	}
	// The version is kept even when the scrape's own time is up: it was
	// taken, and the next scrape is compared with it.
	if err := s.Store.PutPageVersion(context.WithoutCancel(ctx), current, changeVersions,
		current.ScrapedAt.Add(-ChangeRetention)); err != nil {
		s.Log.Error("recording a page's version", "url", current.URLKey, "err", err)
		warn("this version of the page could not be recorded")
	}
	return credits
}
