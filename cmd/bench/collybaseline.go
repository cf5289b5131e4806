package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gocolly/colly/v2"
)

// collyResult is one run of the Colly baseline.
type collyResult struct {
	wall     time.Duration
	pages    int   // responses read (status 2xx), HTML or not
	html     int   // of pages, those whose links were extracted
	bytes    int64 // bodies read
	links    int   // <a href> elements seen
	revisits int   // redirects to a URL already visited (not fetched again)
	notFound int   // links to missing pages (404)
	failures int   // requests that failed otherwise
	firstErr string
}

// collyCrawl is the baseline of the crawl phase: a plain Colly program, the
// way its documentation writes one, that crawls root's host. It follows
// every <a href> of every HTML page once (Colly's own dedupe of visited
// URLs), stays on root's host, runs asynchronously with at most parallelism
// requests at once (colly.Async and a LimitRule) and reads every body
// whole. It extracts links and nothing else: no Markdown, no main content.
func collyCrawl(ctx context.Context, root string, parallelism int) (collyResult, error) {
	var r collyResult
	u, err := url.Parse(root)
	if err != nil {
		return r, err
	}
	c := colly.NewCollector(
		colly.AllowedDomains(u.Hostname()),
		colly.Async(true),
		colly.StdlibContext(ctx),
	)
	if err := c.Limit(&colly.LimitRule{DomainGlob: "*", Parallelism: parallelism}); err != nil {
		return r, fmt.Errorf("colly limit: %w", err)
	}
	var mu sync.Mutex
	c.OnResponse(func(resp *colly.Response) {
		mu.Lock()
		r.pages++
		r.bytes += int64(len(resp.Body))
		if strings.Contains(strings.ToLower(resp.Headers.Get("Content-Type")), "html") {
			r.html++
		}
		mu.Unlock()
	})
	c.OnHTML("a[href]", func(e *colly.HTMLElement) {
		mu.Lock()
		r.links++
		mu.Unlock()
		// Colly 2.3.0 resolves a link with its fragment and dedupes on
		// that, so links to anchors of one page would each fetch it again
		// (18,841 fetches of this 530-page site, measured): the fragment
		// goes, as any crawler worth comparing with drops it.
		link, _, _ := strings.Cut(e.Request.AbsoluteURL(e.Attr("href")), "#")
		if link == "" {
			return
		}
		// Visit refuses what was visited or is off the host; that is the
		// dedupe and the scope, not a failure.
		e.Request.Visit(link)
	})
	c.OnError(func(resp *colly.Response, err error) {
		mu.Lock()
		defer mu.Unlock()
		var av *colly.AlreadyVisitedError
		if errors.As(err, &av) {
			// FileServer redirects .../index.html to .../, which was
			// (or will be) visited under that name.
			r.revisits++
			return
		}
		if resp.StatusCode == http.StatusNotFound {
			r.notFound++ // links to pages Debian's package leaves out
			return
		}
		r.failures++
		if r.firstErr == "" {
			r.firstErr = fmt.Sprintf("%s: %v", resp.Request.URL, err)
		}
	})
	t := time.Now()
	if err := c.Visit(root); err != nil {
		return r, fmt.Errorf("colly: visiting %s: %w", root, err)
	}
	c.Wait()
	r.wall = time.Since(t)
	if err := ctx.Err(); err != nil {
		return r, err
	}
	if r.pages == 0 {
		return r, fmt.Errorf("colly read no page of %s (%d failures, first: %s)", root, r.failures, r.firstErr)
	}
	return r, nil
}
