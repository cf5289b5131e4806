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

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/gocolly/colly/v2"
)

// collyWork is what the Colly baseline does with a page besides following
// its links.
type collyWork int

const (
	// linksOnly reads the pages and follows their links, nothing else.
	linksOnly collyWork = iota
	// toMarkdown also converts every HTML page to Markdown and keeps it in
	// memory (a markdownStore), the least a crawler for Markdown does.
	toMarkdown
)

// collyResult is one run of the Colly baseline.
type collyResult struct {
	wall     time.Duration
	pages    int          // responses read (status 2xx), HTML or not
	html     int          // of pages, those whose links were extracted
	bytes    int64        // bodies read
	links    int          // <a href> elements seen
	revisits int          // redirects to a URL already visited (not fetched again)
	notFound int          // links to missing pages (404)
	failed   failureCount // requests that failed otherwise, and failed conversions
	markdown int          // HTML pages converted to Markdown and kept (toMarkdown)
	mdBytes  int64        // the Markdown kept
}

// collyCrawl is the baseline of the crawl phase: a plain Colly program, the
// way its documentation writes one, that crawls root's host. It follows
// every <a href> of every HTML page once (Colly's own dedupe of visited
// URLs), stays on root's host, runs asynchronously with at most parallelism
// requests at once (colly.Async and a LimitRule) and reads every body
// whole. With linksOnly it extracts links and nothing else: no Markdown, no
// main content. With toMarkdown it also converts every HTML response, the
// whole body, to Markdown in its OnResponse callback and keeps it in memory,
// keyed by URL.
//
// The LimitRule bounds the requests, not the callbacks: Colly runs a
// response's callbacks (the link extraction, the conversion) after it has
// given the request's slot back, so a few more pages than parallelism may
// be in their callbacks at once. That is how Colly runs; on a 2-core
// machine the CPU bounds the conversions anyway.
func collyCrawl(ctx context.Context, root string, parallelism int, work collyWork) (collyResult, error) {
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
	failed := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		r.failed.add(err)
	}
	store := newMarkdownStore()
	c.OnResponse(func(resp *colly.Response) {
		isHTML := strings.Contains(strings.ToLower(resp.Headers.Get("Content-Type")), "html")
		mu.Lock()
		r.pages++
		r.bytes += int64(len(resp.Body))
		if isHTML {
			r.html++
		}
		mu.Unlock()
		if work == toMarkdown && isHTML {
			if err := store.add(resp.Request.URL.String(), string(resp.Body)); err != nil {
				failed(err)
			}
		}
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
		var av *colly.AlreadyVisitedError
		if errors.As(err, &av) {
			// FileServer redirects .../index.html to .../, which was
			// (or will be) visited under that name.
			mu.Lock()
			r.revisits++
			mu.Unlock()
			return
		}
		if resp.StatusCode == http.StatusNotFound {
			mu.Lock()
			r.notFound++ // links to pages Debian's package leaves out
			mu.Unlock()
			return
		}
		failed(fmt.Errorf("%s: %w", resp.Request.URL, err))
	})
	t := time.Now()
	if err := c.Visit(root); err != nil {
		return r, fmt.Errorf("colly: visiting %s: %w", root, err)
	}
	c.Wait()
	r.wall = time.Since(t)
	r.markdown, r.mdBytes = store.size()
	if err := ctx.Err(); err != nil {
		return r, err
	}
	if r.pages == 0 {
		return r, fmt.Errorf("colly read no page of %s (%d failures, first: %s)", root, r.failed.n, r.failed.first)
	}
	if work == toMarkdown && r.markdown == 0 {
		return r, fmt.Errorf("colly converted no page of %s to Markdown (%d failures, first: %s)", root, r.failed.n, r.failed.first)
	}
	return r, nil
}

// markdownStore is what the baselines do with a page's HTML: convert it
// whole to Markdown with html-to-markdown and keep the Markdown in memory,
// keyed by the page's URL. The converter has the plugins of the library's
// own htmltomarkdown.ConvertString (base and CommonMark) and resolves links
// and images against the page's URL (converter.WithDomain), so that they
// are absolute; one converter serves every goroutine, which the library
// allows (it builds a converter per call in ConvertString).
type markdownStore struct {
	conv  *converter.Converter
	mu    sync.Mutex
	pages map[string]string // URL → Markdown
	bytes int64             // the Markdown in pages
}

func newMarkdownStore() *markdownStore {
	return &markdownStore{
		conv:  converter.NewConverter(converter.WithPlugins(base.NewBasePlugin(), commonmark.NewCommonmarkPlugin())),
		pages: map[string]string{},
	}
}

// add converts html, the page at pageURL, and keeps its Markdown (in place
// of any earlier one of the same URL).
func (s *markdownStore) add(pageURL, html string) error {
	md, err := s.conv.ConvertString(html, converter.WithDomain(pageURL))
	if err != nil {
		return fmt.Errorf("markdown of %s: %w", pageURL, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bytes += int64(len(md) - len(s.pages[pageURL]))
	s.pages[pageURL] = md
	return nil
}

// size is how many pages the store keeps and their Markdown's bytes.
func (s *markdownStore) size() (int, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pages), s.bytes
}

// failureCount counts a baseline's failures and keeps the first.
type failureCount struct {
	n     int
	first string
}

func (f *failureCount) add(err error) {
	f.n++
	if f.first == "" {
		f.first = err.Error()
	}
}
