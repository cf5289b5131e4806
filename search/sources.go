package search

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/trawler-dev/trawler/index"
	"github.com/trawler-dev/trawler/search/provider"
)

// catchUpWait is how long a search waits for the index to take the pages
// written just before it.
const catchUpWait = time.Second

// IndexSource searches the embedded index: the team's own fetched pages.
type IndexSource struct {
	Index  index.Backend
	Syncer *index.Syncer
	// PublicOnly hides pages fetched from non-public addresses (the network
	// guard is on).
	PublicOnly bool
}

// Name implements Source.
func (s *IndexSource) Name() string { return "index" }

// Search implements Source.
func (s *IndexSource) Search(ctx context.Context, r *Request, source string) (Answer, error) {
	var a Answer
	if w := s.Syncer.CatchUp(ctx, catchUpWait); w != "" {
		a.Warnings = append(a.Warnings, w)
	}
	if r.Location != "" || r.Country != "" {
		a.Warnings = append(a.Warnings, "the index holds the pages Trawler fetched and cannot geotarget: location and country are ignored by it")
	}
	if r.Safe {
		a.Warnings = append(a.Warnings, "safe: the index holds the pages Trawler fetched and does not filter explicit content out of them")
	}
	hits, err := s.Index.Search(ctx, index.Request{Team: r.Team, Query: r.Query, Source: source, Limit: r.Limit,
		IncludeHosts: r.IncludeDomains, ExcludeHosts: r.ExcludeDomains, Categories: r.Categories,
		After: r.TBS.After, Before: r.TBS.Before, SortByDate: r.TBS.SortByDate, PublicOnly: s.PublicOnly,
		OwnDescriptions: !r.Highlights})
	if err != nil {
		return a, err
	}
	for _, h := range hits {
		a.Results = append(a.Results, Result{URL: h.URL, Title: h.Title, Description: h.Description,
			Category: h.Category, Published: h.Published, ImageURL: h.ImageURL, ImageWidth: h.ImageWidth,
			ImageHeight: h.ImageHeight})
	}
	return a, nil
}

// LiveSource is a live-web provider (SearXNG, a JSON endpoint).
type LiveSource struct {
	Provider provider.Provider
}

// Name implements Source.
func (s *LiveSource) Name() string { return s.Provider.Name() }

// Search implements Source.
func (s *LiveSource) Search(ctx context.Context, r *Request, source string) (Answer, error) {
	q := provider.Query{Text: r.Text, Source: source, Limit: r.Limit, Country: r.Country, Location: r.Location, Safe: r.Safe}
	var a Answer
	q.TimeRange, a.Warnings = timeRange(r.TBS, s.Name())
	ans, err := s.Provider.Search(ctx, q)
	if err != nil {
		return a, err
	}
	a.Warnings = append(a.Warnings, ans.Warnings...)
	for _, h := range ans.Results {
		if !r.TBS.After.IsZero() && !h.Published.IsZero() && !h.Published.After(r.TBS.After) {
			continue
		}
		a.Results = append(a.Results, Result{URL: h.URL, Title: h.Title, Description: h.Description,
			Category: index.CategoryOf(h.URL, "", r.Categories), Published: h.Published, ImageURL: h.ImageURL,
			ImageWidth: h.ImageWidth, ImageHeight: h.ImageHeight})
	}
	return a, nil
}

// timeRange maps a tbs filter to the nearest time range live providers
// take (day, week, month, year), saying what it could not keep.
func timeRange(t index.TBS, name string) (string, []string) {
	var warnings []string
	if t.SortByDate {
		warnings = append(warnings, name+" cannot sort by date (sbd:1): results are in its order")
	}
	if !t.Before.IsZero() {
		warnings = append(warnings, name+" cannot search a custom date range (cdr): results are not limited to it")
		return "", warnings
	}
	if t.After.IsZero() {
		return "", warnings
	}
	since := time.Since(t.After)
	for _, r := range []struct {
		name string
		d    time.Duration
	}{{"hour", time.Hour + time.Minute}, {"day", 25 * time.Hour}, {"week", 8 * 24 * time.Hour},
		{"month", 32 * 24 * time.Hour}, {"year", 367 * 24 * time.Hour}} {
		if since <= r.d {
			return r.name, warnings
		}
	}
	return "", append(warnings, fmt.Sprintf("%s cannot search the past %s: results are not limited to it", name,
		since.Round(time.Hour)))
}

// Sources builds the sources TRAWLER_SEARCH_PROVIDERS lists, in order; the
// index entry is idx.
func Sources(specs []provider.Spec, idx Source, client *http.Client) ([]Source, error) {
	var out []Source
	for _, sp := range specs {
		if sp.Kind == "index" {
			out = append(out, idx)
			continue
		}
		p, err := provider.New(sp, client)
		if err != nil {
			return nil, err
		}
		out = append(out, &LiveSource{Provider: p})
	}
	return out, nil
}
