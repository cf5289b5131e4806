package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/chromedp"
)

// chromedpPageTimeout bounds one page of the chromedp baseline: its
// navigation to the load event and the reading of its HTML and links.
const chromedpPageTimeout = 60 * time.Second

// chromedpResult is one run of the chromedp baseline.
type chromedpResult struct {
	launch   time.Duration // the browser's start and its tabs' opening, before wall
	wall     time.Duration // from the first navigation until the queue ran dry
	pages    int           // pages rendered (status 2xx) and converted to Markdown
	mdBytes  int64         // the Markdown kept
	links    int           // a[href] elements seen
	revisits int           // navigations that ended on a URL already taken (redirects)
	notFound int           // links to missing pages (404)
	failed   failureCount  // navigations, reads or conversions that failed otherwise
}

// renderedPage is what the chromedp baseline reads of a loaded page.
type renderedPage struct {
	URL   string   `json:"url"`   // document.URL: where the navigation ended
	HTML  string   `json:"html"`  // document.documentElement.outerHTML
	Links []string `json:"links"` // every a[href], absolute (the href property)
}

// readPage is the script that reads a renderedPage.
const readPage = `({
	url: document.URL,
	html: document.documentElement.outerHTML,
	links: Array.from(document.querySelectorAll('a[href]'), a => a.href).filter(h => typeof h === 'string'),
})`

// chromedpCrawl is the baseline of the rendered crawl: a plain chromedp
// program that crawls root's host in one headless Chromium (chromiumOptions:
// chromedp's default flags and the ones this machine needs, dir as its
// user-data directory) with tabs tabs. The tabs share a queue of URLs that
// starts with root; each takes the next URL, navigates to it and waits for
// the load event (chromedp.NavigateResponse, which is chromedp.Navigate that
// also gives the document's status), reads document.documentElement.outerHTML
// and the href of every a[href], converts the HTML to Markdown (a
// markdownStore, as the Colly baseline does) and queues the links it has not
// seen, fragments dropped, on root's host only. Nothing is blocked: every
// page loads its style sheets, scripts, images and fonts, as a browser does.
// The crawl ends when the queue is empty and no tab is busy.
//
// The browser's start and the opening of its tabs are timed apart
// (launch), not in wall: the service's crawls start with a warm browser.
// The browser is closed and its processes waited for before
// chromedpCrawl returns; dir is removed.
func chromedpCrawl(ctx context.Context, chromium, dir, root string, tabs int) (chromedpResult, error) {
	var r chromedpResult
	rootURL, err := url.Parse(root)
	if err != nil {
		return r, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(ctx, crawlTimeout)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, chromiumOptions(chromium, dir)...)
	defer cancelAlloc()
	browser, closeBrowser := chromedp.NewContext(actx)
	defer closeBrowser()

	t := time.Now()
	tabCtxs, closeTabs, err := openChromedpTabs(browser, tabs)
	defer closeTabs()
	if err != nil {
		return r, err
	}
	r.launch = time.Since(t)

	c := &chromedpCrawler{host: rootURL.Host, q: newCrawlQueue(root), store: newMarkdownStore(), r: &r}
	t = time.Now()
	var wg sync.WaitGroup
	for _, tab := range tabCtxs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				u, ok := c.q.next(ctx)
				if !ok {
					return
				}
				c.q.done(c.visit(tab, u))
			}
		}()
	}
	wg.Wait()
	r.wall = time.Since(t)
	r.pages, r.mdBytes = c.store.size()
	crawlErr := ctx.Err()

	// Close the browser (chromedp.Cancel closes it gracefully), then
	// cancelAlloc waits for its process to exit; none of its processes may
	// be left.
	if err := chromedp.Cancel(browser); err != nil {
		logf("chromedp: closing the browser: %v", err)
	}
	cancelAlloc()
	if err := waitNoBrowsers(dir, 10*time.Second); err != nil {
		return r, fmt.Errorf("chromedp: %w", err)
	}
	if crawlErr != nil {
		return r, fmt.Errorf("chromedp crawl of %s: %d pages: %w", root, r.pages, crawlErr)
	}
	if r.pages == 0 {
		return r, fmt.Errorf("chromedp rendered no page of %s (%d failures, first: %s)", root, r.failed.n, r.failed.first)
	}
	return r, nil
}

// openChromedpTabs opens tabs tabs in browser's Chromium: the first
// context starts the browser and takes its first tab; each further one
// opens a tab in the same browser. closeTabs closes the further ones.
func openChromedpTabs(browser context.Context, tabs int) (tabCtxs []context.Context, closeTabs func(), err error) {
	var closers []context.CancelFunc
	closeTabs = func() {
		for _, c := range closers {
			c()
		}
	}
	for i := range tabs {
		tab := browser
		if i > 0 {
			var closeTab context.CancelFunc
			tab, closeTab = chromedp.NewContext(browser)
			closers = append(closers, closeTab)
		}
		if err := chromedp.Do(tab); err != nil {
			return nil, closeTabs, fmt.Errorf("chromedp: opening tab %d: %w", i+1, err)
		}
		tabCtxs = append(tabCtxs, tab)
	}
	return tabCtxs, closeTabs, nil
}

// chromedpCrawler is what the chromedp baseline's tabs share: the queue,
// the Markdown kept and the run's counts.
type chromedpCrawler struct {
	host  string // root's: the only host crawled
	q     *crawlQueue
	store *markdownStore
	mu    sync.Mutex // guards r's counts while the tabs run
	r     *chromedpResult
}

func (c *chromedpCrawler) failed(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.r.failed.add(err)
}

// count adds by to n, one of r's counts, under the lock.
func (c *chromedpCrawler) count(n *int, by int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	*n += by
}

// visit renders u in tab and returns the links to queue.
func (c *chromedpCrawler) visit(tab context.Context, u string) []string {
	pctx, cancel := context.WithTimeout(tab, chromedpPageTimeout)
	defer cancel()
	resp, err := chromedp.Run(pctx, chromedp.NavigateResponse(u))
	switch {
	case err != nil:
		c.failed(fmt.Errorf("%s: %w", u, err))
		return nil
	case resp == nil:
		c.failed(fmt.Errorf("%s: no response", u))
		return nil
	case resp.Status == http.StatusNotFound:
		c.count(&c.r.notFound, 1) // links to pages Debian's package leaves out
		return nil
	case resp.Status < 200 || resp.Status > 299:
		c.failed(fmt.Errorf("%s: status %d", u, resp.Status))
		return nil
	}
	page, err := chromedp.Run(pctx, chromedp.Evaluate[renderedPage](readPage))
	if err != nil {
		c.failed(fmt.Errorf("%s: reading the page: %w", u, err))
		return nil
	}
	// FileServer redirects .../index.html to .../: a browser follows
	// the redirect, and the page it ends on may be another tab's.
	final, _, _ := strings.Cut(page.URL, "#")
	if final != u && !c.q.claim(final) {
		c.count(&c.r.revisits, 1)
		return nil
	}
	if err := c.store.add(final, page.HTML); err != nil {
		c.failed(err)
		return nil
	}
	c.count(&c.r.links, len(page.Links))
	return sameHost(page.Links, c.host)
}

// sameHost is the http and https links of hrefs on host, fragments dropped.
func sameHost(hrefs []string, host string) []string {
	var links []string
	for _, href := range hrefs {
		link, _, _ := strings.Cut(href, "#")
		l, err := url.Parse(link)
		if err != nil || (l.Scheme != "http" && l.Scheme != "https") || l.Host != host {
			continue
		}
		links = append(links, link)
	}
	return links
}

// crawlQueue is the chromedp baseline's frontier: the URLs to visit, in the
// order found, every URL ever queued or taken (the dedupe) and how many tabs
// are busy with a page.
type crawlQueue struct {
	mu      sync.Mutex
	cond    *sync.Cond // signalled when a tab is done with a page
	pending []string
	seen    map[string]bool
	busy    int
}

func newCrawlQueue(root string) *crawlQueue {
	q := &crawlQueue{pending: []string{root}, seen: map[string]bool{root: true}}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// next takes the next URL to visit, waiting while the queue is empty and a
// busy tab may still add to it. It is false when the crawl is over: nothing
// left to visit and no tab busy, or ctx done.
func (q *crawlQueue) next(ctx context.Context) (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.pending) == 0 && q.busy > 0 && ctx.Err() == nil {
		q.cond.Wait()
	}
	if len(q.pending) == 0 || ctx.Err() != nil {
		return "", false
	}
	u := q.pending[0]
	q.pending = q.pending[1:]
	q.busy++
	return u, true
}

// done ends a page that next gave, queueing those of its links not seen.
func (q *crawlQueue) done(links []string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, l := range links {
		if !q.seen[l] {
			q.seen[l] = true
			q.pending = append(q.pending, l)
		}
	}
	q.busy--
	q.cond.Broadcast()
}

// claim marks u seen, and is false if it was already.
func (q *crawlQueue) claim(u string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.seen[u] {
		return false
	}
	q.seen[u] = true
	return true
}
