// Package changetracking owns the changeTracking format: how a page
// compares with the previous version of its URL that the same team
// scraped under the same tag. It reads and keeps the versions in the
// store, diffs their Markdown (the git-diff mode) and compares their
// extractions (the json mode, whose model calls the caller makes).
package changetracking

import (
	"context"
	"errors"
	"time"

	"github.com/trawler-dev/trawler/store"
)

// Retention is how long change tracking remembers a version of a page:
// an older one is never compared with, and is dropped when the page is
// scraped again (Store.PrunePageVersions sweeps the rest).
const Retention = 90 * 24 * time.Hour

// keptVersions is how many versions of a page (per team and tag) change
// tracking keeps.
const keptVersions = 10

// The values of Result.ChangeStatus.
const (
	StatusNew     = "new"
	StatusSame    = "same"
	StatusChanged = "changed"
	StatusRemoved = "removed"
)

// Result is the changeTracking member of a document (spec 2.2, in the
// shape Firecrawl returns): how the page compares with the previous scrape
// of its URL by the same team under the same tag.
type Result struct {
	// PreviousScrapeAt is when the version compared with was scraped (RFC
	// 3339); null when there is none.
	PreviousScrapeAt *string `json:"previousScrapeAt"`
	// ChangeStatus is new, same, changed or removed.
	ChangeStatus string `json:"changeStatus"`
	// Visibility is visible or hidden; see NewResult.
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

// NewResult is the result for a page that answered status, before it is
// compared with anything: new, or removed when the page is gone.
//
// Visibility follows Firecrawl's meaning: "visible" is a URL reached by an
// organic route (asked for, or found by a crawl in links or sitemaps),
// "hidden" one found only in the memory of previous crawls. Trawler's
// crawls have no such memory (their URLs come from the start URL, links
// and sitemaps), so every page is visible.
func NewResult(status int) *Result {
	r := &Result{ChangeStatus: StatusNew, Visibility: "visible"}
	if gone(status) {
		r.ChangeStatus = StatusRemoved
	}
	return r
}

// gone reports whether status says the page is no more.
func gone(status int) bool { return status == 404 || status == 410 }

// Version is the version of a page that team scraped now under tag, as
// it answered: a page that is gone has no content of its own (what the
// server wrote on its error page is not a version of it).
func Version(team, urlKey, tag string, status int, markdown string) store.PageVersion {
	v := store.PageVersion{Team: team, URLKey: urlKey, Tag: tag, ScrapedAt: time.Now(), StatusCode: status}
	if !gone(status) {
		v.Markdown = markdown
	}
	return v
}

// Compare reads the version current is compared with, the previous one
// of its URL in its team's history for its tag, and sets r by it: when it
// was scraped and, unless the page is gone, whether the page changed, with
// the diff when diff asks for it. It returns that version, nil when there
// is none; an error is the store's, and leaves r as it was.
func Compare(ctx context.Context, st *store.Store, r *Result, current *store.PageVersion, diff bool) (*store.PageVersion, error) {
	previous, err := st.PreviousPageVersion(ctx, current.Team, current.URLKey, current.Tag, current.ScrapedAt,
		current.ScrapedAt.Add(-Retention))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	}
	at := previous.ScrapedAt.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	r.PreviousScrapeAt = &at
	if !gone(current.StatusCode) {
		r.ChangeStatus = StatusChanged
		if SameContent(previous.Markdown, current.Markdown) {
			r.ChangeStatus = StatusSame
		}
	}
	if r.ChangeStatus == StatusChanged && diff {
		r.Diff = DiffMarkdown(previous.Markdown, current.Markdown)
	}
	return &previous, nil
}

// Keep records v in its page's history, dropping the versions past the
// count kept or older than Retention. It is kept even when the caller's
// time is up: it was taken, and the next scrape is compared with it.
func Keep(ctx context.Context, st *store.Store, v store.PageVersion) error {
	return st.PutPageVersion(context.WithoutCancel(ctx), v, keptVersions, v.ScrapedAt.Add(-Retention))
}
