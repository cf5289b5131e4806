package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/trawler-dev/trawler/cmd/bench/transform"
	"github.com/trawler-dev/trawler/wire"
)

const (
	// crawlLimit is the crawl's limit: above the 530 pages of the site, so
	// that the crawl ends when it runs out of links.
	crawlLimit = 1000
	// collyParallelism is the Colly baseline's requests at once.
	collyParallelism = 8
	// crawlTimeout bounds one crawl of the site.
	crawlTimeout = 6 * time.Minute
)

// crawlThroughput crawls a static site of some 530 pages (Python's HTML
// documentation, from Debian's python3.11-doc, served by net/http's
// FileServer on 127.0.0.1) with POST /v2/crawl, from its root, limit 1000:
// once with the default scrape options on a fresh service with the default
// pool and lanes, timed from the POST to the status completed; once more,
// untimed, sampled for memory every 100 ms; then once with every page
// rendered (waitFor 1)
// on another fresh service. The baseline is a plain Colly program crawling
// the same site from the same root, 8 requests at once (the pool's size;
// the service crawls TRAWLER_JOB_WORKERS pages at once, 4 by default),
// which only reads the pages and follows their links; it runs before and
// after the first crawl, and the better of its two runs counts.
//
// Two more baselines do what the crawls do, the way a plain program would:
//   - Colly with the service's parallelism (TRAWLER_JOB_WORKERS pages at
//     once, as the first crawl reports it) that also converts every HTML
//     page to Markdown with html-to-markdown and keeps it in memory, against
//     the first crawl (crawl_over_colly_markdown). It runs after the first
//     crawl and after the second Colly run, and the better of its two runs
//     counts.
//   - chromedp with as many tabs in one headless Chromium, which renders
//     every page fully (load event, nothing blocked) and converts its HTML
//     to Markdown, against the rendered crawl
//     (crawl_rendered_over_chromedp_tabs). It runs right before and right
//     after the rendered crawl, and the better of its two runs counts.
//
// The memory peak is sampled during a second, untimed crawl on another
// fresh service: reading PSS walks the page tables of some 50 Chromium
// processes, and on a 2-core machine a sample takes 0.3-1.3 s, so sampling
// the timed crawl would keep a core busy and slow the crawl it times.
func (b *bench) crawlThroughput(ctx context.Context, _ *instance) error {
	if _, err := os.Stat(filepath.Join(transform.PythonDocs, "index.html")); err != nil {
		return fmt.Errorf("the crawl phase crawls %s: install python3.11-doc (make bench does): %w", transform.PythonDocs, err)
	}
	files, err := htmlCount(transform.PythonDocs)
	if err != nil {
		return err
	}
	site := &countingSite{h: http.FileServer(http.Dir(transform.PythonDocs))}
	srv := httptest.NewServer(site)
	defer srv.Close()
	root := srv.URL + "/"
	logf("crawl: site %s serves %s (%d HTML files)", root, transform.PythonDocs, files)
	base := baselines{root: root, site: site, tmp: b.tmp}
	var runs crawlRuns

	if runs.colly[0], err = base.colly(ctx, "colly before", collyParallelism, linksOnly); err != nil {
		return err
	}
	if runs.fetched, err = b.crawlOnce(ctx, "crawl", root, site, map[string]any{"formats": []string{"markdown"}}, withoutMemory); err != nil {
		return err
	}
	// The same parallelism as the service's crawls: its lanes.
	workers := runs.fetched.workers
	if runs.collyMD[0], err = base.colly(ctx, "colly-markdown first", workers, toMarkdown); err != nil {
		return err
	}
	if runs.sampled, err = b.crawlOnce(ctx, "crawl-memory", root, site, map[string]any{"formats": []string{"markdown"}}, withMemory); err != nil {
		return err
	}
	if runs.colly[1], err = base.colly(ctx, "colly after", collyParallelism, linksOnly); err != nil {
		return err
	}
	if runs.collyMD[1], err = base.colly(ctx, "colly-markdown second", workers, toMarkdown); err != nil {
		return err
	}
	if runs.chromedp[0], err = base.chromedp(ctx, "chromedp-tabs before", runs.fetched.chromium, workers); err != nil {
		return err
	}
	if runs.rendered, err = b.crawlOnce(ctx, "crawl-rendered", root, site, map[string]any{"formats": []string{"markdown"}, "waitFor": 1}, withoutMemory); err != nil {
		return err
	}
	rendered := runs.rendered
	if n := rendered.engines["browser-render"]; n == rendered.docs {
		logf("crawl-rendered: all %d documents were rendered (engine browser-render)", n)
	} else {
		logf("crawl-rendered: NOT every document was rendered: %d of %d have engine browser-render (%s)", n, rendered.docs, countSplit(rendered.engines))
	}
	if rendered.workers != workers {
		logf("note: the rendered crawl had %d lanes, the chromedp baseline %d tabs", rendered.workers, workers)
	}
	if runs.chromedp[1], err = base.chromedp(ctx, "chromedp-tabs after", runs.fetched.chromium, workers); err != nil {
		return err
	}
	runs.report()
	return nil
}

// baselines runs the crawl phase's plain programs on its site.
type baselines struct {
	root string
	site *countingSite
	tmp  string
}

// colly runs the Colly baseline, parallelism requests at once, and logs
// what it did; which names the run.
func (s baselines) colly(ctx context.Context, which string, parallelism int, work collyWork) (collyResult, error) {
	runtime.GC()
	before := s.site.snapshot()
	r, err := collyCrawl(ctx, s.root, parallelism, work)
	if err != nil {
		return r, fmt.Errorf("%s: %w", which, err)
	}
	var md string
	if work == toMarkdown {
		md = fmt.Sprintf(", %d pages converted to Markdown (%.1f MB kept in memory)", r.markdown, float64(r.mdBytes)/(1<<20))
	}
	logf("%s: %d requests at once, %d pages (%d HTML) in %s (%.1f pages/s), %.1f MB read%s, %d links seen, %d redirects to visited URLs, %d not found, %d other failures%s; the site served %s",
		which, parallelism, r.pages, r.html, r.wall.Round(time.Millisecond), rate(r.pages, r.wall), float64(r.bytes)/(1<<20),
		md, r.links, r.revisits, r.notFound, r.failed.n, firstErr(r.failed.first), s.site.since(before))
	return r, nil
}

// chromedp runs the chromedp baseline with tabs tabs, and logs what it
// did; which names the run.
func (s baselines) chromedp(ctx context.Context, which, chromium string, tabs int) (chromedpResult, error) {
	runtime.GC()
	before := s.site.snapshot()
	r, err := chromedpCrawl(ctx, chromium, filepath.Join(s.tmp, strings.ReplaceAll(which, " ", "-")), s.root, tabs)
	if err != nil {
		return r, fmt.Errorf("%s: %w", which, err)
	}
	logf("%s: %d tabs (started in %s), %d pages rendered and converted to Markdown in %s (%.1f pages/s), %.1f MB of Markdown kept in memory, %d links seen, %d redirects to visited URLs, %d not found, %d other failures%s; the site served %s",
		which, tabs, r.launch.Round(time.Millisecond), r.pages, r.wall.Round(time.Millisecond), rate(r.pages, r.wall),
		float64(r.mdBytes)/(1<<20), r.links, r.revisits, r.notFound, r.failed.n, firstErr(r.failed.first), s.site.since(before))
	return r, nil
}

// crawlRuns are the crawl phase's runs: the service's three crawls and
// two runs of each baseline, of which the better counts.
type crawlRuns struct {
	fetched, sampled, rendered crawlResult
	colly, collyMD             [2]collyResult
	chromedp                   [2]chromedpResult
}

// report prints the crawl phase's figures.
func (c crawlRuns) report() {
	fetched, rendered := c.fetched, c.rendered
	c1, c2 := c.colly[0], c.colly[1]
	best := c1
	if better("colly", "before", "after the crawl", rate(c1.pages, c1.wall), rate(c2.pages, c2.wall)) {
		best = c2
	}
	if best.pages != fetched.completed {
		logf("note: colly read %d pages, the crawl completed %d", best.pages, fetched.completed)
	}
	// The Markdown baseline is counted in pages read, as the crawl is in
	// pages completed, whatever their kind.
	m1, m2 := c.collyMD[0], c.collyMD[1]
	bestMD := m1
	if better("colly-markdown", "first", "second", rate(m1.pages, m1.wall), rate(m2.pages, m2.wall)) {
		bestMD = m2
	}
	d1, d2 := c.chromedp[0], c.chromedp[1]
	bestCD := d1
	if better("chromedp-tabs", "before", "after the rendered crawl", rate(d1.pages, d1.wall), rate(d2.pages, d2.wall)) {
		bestCD = d2
	}
	if bestCD.pages != rendered.completed {
		logf("note: chromedp rendered %d pages, the rendered crawl completed %d", bestCD.pages, rendered.completed)
	}
	figure("crawl_pages_per_s", rate(fetched.completed, fetched.wall), "pages/s")
	figure("crawl_rendered_pages_per_s", rate(rendered.completed, rendered.wall), "pages/s")
	figure("crawl_peak_rss_mb", kbMB(c.sampled.peak.total), "MB")
	figure("colly_pages_per_s", rate(best.pages, best.wall), "pages/s")
	figure("crawl_over_colly", rate(fetched.completed, fetched.wall)/rate(best.pages, best.wall), "x")
	figure("colly_markdown_pages_per_s", rate(bestMD.pages, bestMD.wall), "pages/s")
	figure("crawl_over_colly_markdown", rate(fetched.completed, fetched.wall)/rate(bestMD.pages, bestMD.wall), "x")
	figure("chromedp_tabs_pages_per_s", rate(bestCD.pages, bestCD.wall), "pages/s")
	figure("crawl_rendered_over_chromedp_tabs", rate(rendered.completed, rendered.wall)/rate(bestCD.pages, bestCD.wall), "x")
}

// crawlResult is one crawl of the site.
type crawlResult struct {
	wall             time.Duration
	completed, total int
	docs             int            // documents read back
	engines          map[string]int // metadata.engine → documents
	peak             memPeak
	workers          int    // the service's lanes (TRAWLER_JOB_WORKERS): pages crawled at once
	chromium         string // the service's browser binary
}

// crawlOnce crawls root on a fresh service named name with scrapeOptions,
// sampling memory if memory says so, reads the documents back for their
// engines and closes the service, checking that none of its Chromium
// processes is left.
func (b *bench) crawlOnce(ctx context.Context, name, root string, site *countingSite, scrapeOptions map[string]any, memory memorySampling) (crawlResult, error) {
	var r crawlResult
	in, err := b.startWith(ctx, name, 1, poolSize, scrapeEnv(poolSize, 120*time.Second))
	if err != nil {
		return r, err
	}
	defer in.Close()
	cfg := in.svc.Config
	r.workers, r.chromium = cfg.JobWorkers, cfg.ChromiumPath
	logf("%s: pool size %d (TRAWLER_POOL_SIZE), %d lanes (TRAWLER_JOB_WORKERS: pages crawled at once), team concurrency %d, host concurrency %d, %d warm browser",
		name, cfg.PoolSize, cfg.JobWorkers, cfg.TeamConcurrency, cfg.HostConcurrency, cfg.WarmBrowsers)
	ctx, cancel, body, err := readyToCrawl(ctx, []*instance{in}, root, scrapeOptions)
	if err != nil {
		return r, err
	}
	defer cancel()
	var mem *memSampler
	if memory == withMemory {
		mem = startMemSampler(in.dataDir, 100*time.Millisecond)
	}
	stopProfile := func() {}
	if b.crawlProfile != "" && name == "crawl" {
		f, err := os.Create(b.crawlProfile)
		if err != nil {
			return r, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return r, err
		}
		stopProfile = pprof.StopCPUProfile
		defer stopProfile()
	}
	before := site.snapshot()
	t := time.Now()
	var started struct {
		ID string `json:"id"`
	}
	err = in.do(ctx, http.MethodPost, "/v2/crawl", body, &started)
	if err == nil && started.ID == "" {
		err = errors.New("POST /v2/crawl answered without an id")
	}
	if err == nil {
		r.completed, r.total, err = in.waitCrawl(ctx, name, started.ID, t)
	}
	r.wall = time.Since(t)
	stopProfile()
	if mem != nil {
		r.peak = mem.stop()
	}
	if err != nil {
		return r, fmt.Errorf("%s: %w", name, err)
	}
	served := site.since(before)
	docs, err := in.crawlDocuments(ctx, started.ID)
	if err != nil {
		return r, fmt.Errorf("%s: %w", name, err)
	}
	r.engines, r.docs = docs.engines, docs.n
	if n, total, settle := in.svc.Crawler.Scrape.Renders.Read(); n > 0 {
		logf("%s: %d pages rendered, %.0f ms each from commit to HTML on average, of which %.0f ms waiting for the page to settle after its load event",
			name, n, ms(total/time.Duration(n)), ms(settle/time.Duration(n)))
	}
	logf("%s: %d pages completed of %d in %s (%.2f pages/s); %d documents read back, by engine: %s; by status code: %s; the site served %s",
		name, r.completed, r.total, r.wall.Round(time.Millisecond), rate(r.completed, r.wall), r.docs, countSplit(r.engines),
		countSplit(docs.statuses), served)
	for engine, urls := range docs.urls {
		if len(urls)*10 < docs.n { // the odd ones out
			logf("%s: the %d documents of engine %q: %s", name, len(urls), engine, strings.Join(urls[:min(len(urls), 8)], " "))
		}
	}
	if r.completed != r.total {
		in.logCrawlErrors(ctx, name, started.ID)
	}
	if mem != nil {
		logf("%s: peak memory %.1f MB at sample %d of %d (%.0f ms each): this process's RSS %.1f MB + PSS of %d Chromium processes in %d browsers %.1f MB",
			name, kbMB(r.peak.total), r.peak.at, r.peak.samples, ms(r.peak.cost), kbMB(r.peak.self), r.peak.procs, r.peak.browsers, kbMB(r.peak.chromium))
		// Reading PSS walks every process's page tables: on a busy 2-core
		// machine the sampler may hold a core for much of the crawl it times.
		logf("%s: the memory sampler was busy %.0f%% of the crawl's wall time (on a thread of its own, at nice -10 when it may)",
			name, 100*float64(r.peak.samples)*r.peak.cost.Seconds()/r.wall.Seconds())
	}
	in.Close()
	if err := waitNoBrowsers(in.dataDir, 10*time.Second); err != nil {
		return r, fmt.Errorf("%s: %w", name, err)
	}
	return r, nil
}

// waitCrawl polls GET /v2/crawl/{id} until the crawl completes, logging its
// progress now and then. A failed or cancelled crawl is an error.
func (in *instance) waitCrawl(ctx context.Context, name, id string, start time.Time) (completed, total int, err error) {
	lastLog := time.Now()
	var polls, failed int
	var slowest time.Duration
	for {
		var st struct {
			Status    string `json:"status"`
			Completed int    `json:"completed"`
			Total     int    `json:"total"`
			Warning   string `json:"warning"`
		}
		t := time.Now()
		err := in.do(ctx, http.MethodGet, "/v2/crawl/"+id+"?limit=1", nil, &st)
		d := time.Since(t)
		polls++
		slowest = max(slowest, d)
		if err != nil {
			// A poll that fails is the status endpoint's trouble, not the
			// crawl's: logged, and tried again a few times.
			if failed++; failed == 3 || ctx.Err() != nil {
				return 0, 0, err
			}
			logf("%s: a status poll failed after %s: %v", name, d.Round(time.Millisecond), err)
			continue
		}
		failed = 0
		switch st.Status {
		case "completed":
			logf("%s: %d status polls, the slowest answered in %s", name, polls, slowest.Round(time.Millisecond))
			if st.Warning != "" {
				logf("%s: warning: %s", name, st.Warning)
			}
			return st.Completed, st.Total, nil
		case "failed", "cancelled":
			return st.Completed, st.Total, fmt.Errorf("crawl %s ended %s after %d of %d pages: %s", id, st.Status, st.Completed, st.Total, st.Warning)
		}
		if time.Since(lastLog) >= 15*time.Second {
			logf("%s: %d of %d pages after %s", name, st.Completed, st.Total, time.Since(start).Round(time.Second))
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return st.Completed, st.Total, fmt.Errorf("crawl %s: %d of %d pages: %w", id, st.Completed, st.Total, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// crawlDocs counts the documents of a crawl.
type crawlDocs struct {
	n        int
	engines  map[string]int      // metadata.engine → documents
	statuses map[string]int      // metadata.statusCode → documents
	urls     map[string][]string // metadata.engine → the documents' URLs
}

// crawlDocuments reads every document of crawl id, following next.
func (in *instance) crawlDocuments(ctx context.Context, id string) (crawlDocs, error) {
	c := crawlDocs{engines: map[string]int{}, statuses: map[string]int{}, urls: map[string][]string{}}
	path := fmt.Sprintf("/v2/crawl/%s?skip=0&limit=%d", id, crawlLimit)
	for path != "" {
		var page struct {
			Data []struct {
				Metadata struct {
					Engine     string `json:"engine"`
					StatusCode int    `json:"statusCode"`
					SourceURL  string `json:"sourceURL"`
				} `json:"metadata"`
			} `json:"data"`
			Next string `json:"next"`
		}
		if err := in.do(ctx, http.MethodGet, path, nil, &page); err != nil {
			return c, err
		}
		for _, d := range page.Data {
			md := d.Metadata
			c.engines[md.Engine]++
			c.statuses[strconv.Itoa(md.StatusCode)]++
			c.urls[md.Engine] = append(c.urls[md.Engine], md.SourceURL)
		}
		c.n += len(page.Data)
		path = ""
		if page.Next != "" {
			if len(page.Data) == 0 {
				return c, fmt.Errorf("crawl %s: an empty page of documents with a next URL %s", id, page.Next)
			}
			u, err := url.Parse(page.Next)
			if err != nil {
				return c, fmt.Errorf("crawl %s: next %q: %w", id, page.Next, err)
			}
			path = u.RequestURI()
		}
	}
	return c, nil
}

// logCrawlErrors logs the first failures of crawl id (GET /v2/crawl/{id}/errors).
func (in *instance) logCrawlErrors(ctx context.Context, name, id string) {
	var e struct {
		Errors []struct {
			URL   string `json:"url"`
			Code  string `json:"code"`
			Error string `json:"error"`
		} `json:"errors"`
		RobotsBlocked []string `json:"robotsBlocked"`
	}
	if err := in.do(ctx, http.MethodGet, "/v2/crawl/"+id+"/errors", nil, &e); err != nil {
		logf("%s: reading the crawl's errors: %v", name, err)
		return
	}
	logf("%s: %d pages failed, %d blocked by robots.txt", name, len(e.Errors), len(e.RobotsBlocked))
	for i, f := range e.Errors {
		if i == 5 {
			logf("%s: ... and %d more", name, len(e.Errors)-5)
			break
		}
		logf("%s: failed %s: %s %s", name, f.URL, f.Code, wire.Truncate(f.Error, 200))
	}
}

// waitNoBrowsers waits until no Chromium process of dataDir (a closed
// service's) is left, or fails after d naming them.
func waitNoBrowsers(dataDir string, d time.Duration) error {
	var left map[int][]proc
	for deadline := time.Now().Add(d); ; time.Sleep(100 * time.Millisecond) {
		left = browserProcs(dataDir)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			break
		}
	}
	for _, ps := range left {
		for _, p := range ps {
			logf("left behind: pid %d %s", p.pid, wire.Truncate(p.joined(), 160))
		}
	}
	return fmt.Errorf("%d Chromium processes of %s are still running %s after Close", countLive(left), dataDir, d)
}

// countingSite counts the requests a handler serves, HTML pages apart, to
// tell in the log what each crawler asked the site for.
type countingSite struct {
	h           http.Handler
	html, other atomic.Int64
}

func (s *countingSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p := r.URL.Path; strings.HasSuffix(p, "/") || strings.HasSuffix(p, ".html") {
		s.html.Add(1)
	} else {
		s.other.Add(1)
	}
	s.h.ServeHTTP(w, r)
}

type siteCounts struct{ html, other int64 }

func (s *countingSite) snapshot() siteCounts {
	return siteCounts{s.html.Load(), s.other.Load()}
}

// since describes the requests served after before.
func (s *countingSite) since(before siteCounts) string {
	now := s.snapshot()
	return fmt.Sprintf("%d requests for HTML pages and %d for other files", now.html-before.html, now.other-before.other)
}

// htmlCount is how many .html files there are under dir.
func htmlCount(dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(d.Name(), ".html") {
			n++
		}
		return err
	})
	return n, err
}

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// countSplit is "key n, key n", in key order.
func countSplit(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		name := k
		if name == "" {
			name = "(none)"
		}
		parts = append(parts, fmt.Sprintf("%s %d", name, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// better logs a baseline's two rates and says whether the second is the
// better one, the one that counts.
func better(name, first, second string, r1, r2 float64) bool {
	logf("%s: %.1f pages/s %s and %.1f %s; the better, %.1f, counts", name, r1, first, r2, second, max(r1, r2))
	return r2 > r1
}

func firstErr(s string) string {
	if s == "" {
		return ""
	}
	return " (first: " + wire.Truncate(s, 160) + ")"
}

// readyToCrawl waits for the services' warm browsers and a quiet moment,
// collects garbage, and returns the crawl's deadline and its POST body.
func readyToCrawl(ctx context.Context, services []*instance, root string, scrapeOptions map[string]any) (context.Context, context.CancelFunc, []byte, error) {
	for _, in := range services {
		if err := in.waitWarm(ctx); err != nil {
			return nil, nil, nil, err
		}
	}
	time.Sleep(time.Second) // let the warm browsers finish their start-up work
	runtime.GC()
	debug.FreeOSMemory()
	body, err := json.Marshal(map[string]any{"url": root, "limit": crawlLimit, "scrapeOptions": scrapeOptions})
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, crawlTimeout)
	return ctx, cancel, body, nil
}
