// Package search answers POST /v2/search: it asks each configured source
// (the embedded index, SearXNG, any JSON search endpoint) in order, merges
// their results by URL, and scrapes each result when the request asks for
// formats, on browsers leased from the one pool.
package search

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/trawler-dev/trawler/index"
	"github.com/trawler-dev/trawler/scrape"
	"github.com/trawler-dev/trawler/search/provider"
)

// ErrTimeout: the search ran past its timeout before any source answered.
var ErrTimeout = errors.New("search timed out")

// Service runs searches.
type Service struct {
	// Sources are asked in this order; results merge by URL, the first
	// source's entry winning.
	Sources []Source
	Scraper *scrape.Service
	Log     *slog.Logger
}

// Source is one place results come from.
type Source interface {
	Name() string
	Search(ctx context.Context, r *Request, source string) (Answer, error)
}

// Answer is one source's results and what it has to say about them.
type Answer struct {
	Results  []Result
	Warnings []string
}

// Request is one search, validated.
type Request struct {
	// ID is the search's id; its results' model calls are counted under it.
	ID        string
	Team      string
	TeamLimit int
	// Text is the query as typed; Query is its parse.
	Text       string
	Query      index.Query
	Limit      int
	Sources    []string // index.SourceWeb, SourceImages, SourceNews, in the order asked
	Categories []string
	// IncludeDomains and ExcludeDomains filter by host (subdomains count).
	IncludeDomains, ExcludeDomains []string
	TBS                            index.TBS
	Location, Country              string
	Timeout                        time.Duration
	// Valid, when set, keeps only the results whose URL it accepts
	// (ignoreInvalidURLs).
	Valid func(string) bool
	// ZDR: nothing of the search is stored, its scrapes included
	// (enterprise zdr or anon).
	ZDR bool
	// EndToEnd: enterprise zdr was asked, billed 10 credits per 10 results;
	// anon alone is billed as an ordinary search.
	EndToEnd bool
	// Scrape, when set, is the scrape of each web and news result.
	Scrape *scrape.Options
	// Safe asks the providers to filter explicit content out.
	Safe bool
	// Highlights describes each web and news result by the passages of its
	// page most relevant to the query (the index's snippet; a scraped
	// page's highlights), else by the page's own description or the
	// provider's snippet.
	Highlights bool
}

// Result is one entry of one source array.
type Result struct {
	URL, Title, Description string
	Position                int
	Category                string
	Published               time.Time
	ImageURL                string
	ImageWidth, ImageHeight int
	// Document is the result's scrape, when the request asked for formats;
	// Error says why it failed.
	Document *scrape.Document
	Error    string
}

// Response is what a search found, by source.
type Response struct {
	Results  map[string][]Result
	Warnings []string
	Credits  int
}

// Search runs r.
func (s *Service) Search(ctx context.Context, r *Request) (*Response, error) {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	resp := &Response{Results: map[string][]Result{}}
	answered := false
	for _, src := range r.Sources {
		results, warnings, ok := s.gather(ctx, r, src)
		answered = answered || ok
		resp.Results[src] = results
		resp.Warnings = append(resp.Warnings, warnings...)
	}
	if !answered && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, ErrTimeout
	}
	total := 0
	for _, rs := range resp.Results {
		total += len(rs)
	}
	resp.Credits = credits(total, r)
	if r.Scrape != nil {
		resp.Credits += s.scrapeResults(ctx, r, resp)
	}
	return resp, nil
}

// gather asks every source for one result source (web, images, news) and
// merges their answers; ok is false when no source answered.
func (s *Service) gather(ctx context.Context, r *Request, source string) ([]Result, []string, bool) {
	type answer struct {
		a   Answer
		err error
	}
	answers := make([]answer, len(s.Sources))
	var wg sync.WaitGroup
	for i, p := range s.Sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := p.Search(ctx, r, source)
			answers[i] = answer{a, err}
		}()
	}
	wg.Wait()
	var out []Result
	var warnings []string
	seen := map[string]bool{}
	ok := false
	for i, a := range answers {
		switch {
		case errors.Is(a.err, provider.ErrUnsupportedSource):
			continue
		case a.err != nil && (errors.Is(a.err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded)):
			warnings = append(warnings, fmt.Sprintf("%s timed out for %s results", s.Sources[i].Name(), source))
			continue
		case a.err != nil:
			warnings = append(warnings, fmt.Sprintf("%s failed for %s results: %v", s.Sources[i].Name(), source, a.err))
			s.Log.Warn("search provider failed", "provider", s.Sources[i].Name(), "err", a.err)
			continue
		}
		ok = true
		warnings = append(warnings, a.a.Warnings...)
		for _, h := range a.a.Results {
			key := dedupeKey(h.URL)
			if source == index.SourceImages {
				key = dedupeKey(h.ImageURL)
			}
			if key == "" || seen[key] || !keep(r, h) {
				continue
			}
			seen[key] = true
			out = append(out, h)
			if len(out) == r.Limit {
				break
			}
		}
		if len(out) == r.Limit {
			break
		}
	}
	for i := range out {
		out[i].Position = i + 1
	}
	return out, warnings, ok
}

// keep applies the request's filters to a result, whichever source found
// it: live providers cannot all apply them.
func keep(r *Request, h Result) bool {
	if r.Valid != nil && !r.Valid(h.URL) {
		return false
	}
	u, err := url.Parse(h.URL)
	if err != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	if len(r.IncludeDomains) > 0 && !hostUnder(host, r.IncludeDomains) {
		return false
	}
	if hostUnder(host, r.ExcludeDomains) {
		return false
	}
	return len(r.Categories) == 0 || h.Category != ""
}

func hostUnder(host string, domains []string) bool {
	for _, d := range domains {
		d = strings.ToLower(d)
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}

// dedupeKey is a URL as results are merged by: no fragment, no trailing
// slash, scheme and host lower-case.
func dedupeKey(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	u.Fragment, u.RawFragment = "", ""
	u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	u.Path = strings.TrimSuffix(u.Path, "/")
	return u.String()
}

// credits bills the results: per started 10, 2 credits (anon: 2, zdr: 10).
func credits(results int, r *Request) int {
	per := 2
	if r.EndToEnd {
		per = 10
	}
	return (results + 9) / 10 * per
}

// scrapeResults scrapes every web and news result, at most the team's
// concurrency at once; a failure is that result's error, never the
// search's. It returns the credits the scrapes used.
func (s *Service) scrapeResults(ctx context.Context, r *Request, resp *Response) int {
	var todo []*Result
	for _, src := range []string{index.SourceWeb, index.SourceNews} {
		for i := range resp.Results[src] {
			todo = append(todo, &resp.Results[src][i])
		}
	}
	slots := make(chan struct{}, max(1, r.TeamLimit))
	var wg sync.WaitGroup
	var mu sync.Mutex
	used := 0
	for _, res := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case slots <- struct{}{}:
				defer func() { <-slots }()
			case <-ctx.Done():
				res.Error = "the search timed out before this result was scraped"
				return
			}
			doc, err := s.Scraper.Scrape(ctx, scrape.Request{Team: r.Team, TeamLimit: r.TeamLimit, URL: res.URL,
				Options: *r.Scrape, RequestID: r.ID})
			if err != nil {
				res.Error = scrapeError(err)
				if errors.Is(err, scrape.ErrLockdownMiss) {
					mu.Lock()
					used += scrape.LockdownMissCredits // a lockdown miss is billed too
					mu.Unlock()
				}
				return
			}
			res.Document = doc
			if r.Highlights && doc.Markdown != "" {
				if h := scrape.Highlights(doc.Markdown, r.Text); h != "" {
					res.Description = h
				}
			}
			if c, ok := doc.Metadata["creditsUsed"].(int); ok {
				mu.Lock()
				used += c
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return used
}

// scrapeError says why a result could not be scraped, with the failure's
// code when the scrape classifies it.
func scrapeError(err error) string {
	if f, ok := scrape.Classify(err); ok {
		return f.Code + ": " + f.Message
	}
	return err.Error()
}
