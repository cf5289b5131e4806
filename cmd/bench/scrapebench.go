package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/browser"
	cdproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/security"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/cmd/bench/transform"
	"github.com/trawler-dev/trawler/content"
	"github.com/trawler-dev/trawler/wire"
)

const (
	scrapeStaticSamples   = 15
	scrapeRenderedSamples = 8
	coldChromedpSamples   = 8
	concurrentScrapes     = 50
	concurrentRendered    = 10 // of concurrentScrapes; the rest are static
	// concurrentPool is the pool size (and team concurrency) of the
	// concurrent phase: TRAWLER_POOL_SIZE=4. Of 2, 4 and 6 on a 2-core
	// machine, 4 was the best-behaved: see concurrentScrape.
	concurrentPool = 4
)

// transformThroughput times the content pipeline on a corpus of real pages
// (Python's HTML documentation when python3.11-doc is installed), against
// the bare html-to-markdown conversion of the same pages.
func (b *bench) transformThroughput(ctx context.Context, _ *instance) error {
	pages, err := transform.Corpus()
	if err != nil {
		return err
	}
	size := 0
	for _, p := range pages {
		size += len(p)
	}
	from := transform.PythonDocs
	if _, err := os.Stat(from); err != nil {
		from = "content/testdata (install python3.11-doc for the real corpus)"
	}
	logf("transform corpus: %d pages, %.1f MB, from %s; %d rounds", len(pages), float64(size)/(1<<20), from, transform.Rounds)
	mbps, ratio, err := transform.Measure(pages)
	if err != nil {
		return err
	}
	figure("transform_mb_per_s", mbps, "MB/s")
	figure("transform_over_bare_markdown", ratio, "x")
	return nil
}

// siteURL starts the local test site on first use.
func (b *bench) siteURL() string {
	if b.site == nil {
		b.site = startSite()
		logf("test site at %s", b.site.URL)
	}
	return b.site.URL
}

// scrapeEnv is the environment of a service that scrapes the local site:
// private networks allowed (the site is on 127.0.0.1), the local team
// allowed the whole pool.
func scrapeEnv(size int, queueWait time.Duration) map[string]string {
	return map[string]string{
		"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true",
		"TRAWLER_TEAM_CONCURRENCY":       strconv.Itoa(size),
		"TRAWLER_QUEUE_WAIT":             queueWait.String(),
	}
}

type scrapeAnswer struct {
	Success bool `json:"success"`
	Data    struct {
		Markdown string `json:"markdown"`
		Metadata struct {
			Engine     string `json:"engine"`
			CacheState string `json:"cacheState"`
			StatusCode int    `json:"statusCode"`
			TimeTaken  int64  `json:"timeTaken"` // ms, measured by the service
		} `json:"metadata"`
	} `json:"data"`
}

// scrape is POST /v2/scrape of u for Markdown, bypassing the cache, checked
// against what the page must give: the engine that took it and article n's
// text.
func (in *instance) scrape(ctx context.Context, client *http.Client, u string, n int, engine string) (scrapeAnswer, error) {
	var a scrapeAnswer
	body, _ := json.Marshal(map[string]any{"url": u, "formats": []string{"markdown"}, "maxAge": 0})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.base+"/v2/scrape", bytes.NewReader(body))
	if err != nil {
		return a, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return a, fmt.Errorf("scrape %s: %w", u, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return a, fmt.Errorf("scrape %s: reading the answer: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return a, fmt.Errorf("scrape %s: status %d: %s", u, resp.StatusCode, wire.Truncate(string(bytes.TrimSpace(raw)), 300))
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, fmt.Errorf("scrape %s: decoding the answer: %w", u, err)
	}
	md := a.Data.Metadata
	switch {
	case !a.Success:
		return a, fmt.Errorf("scrape %s: success false: %s", u, wire.Truncate(string(raw), 300))
	case md.Engine != engine:
		return a, fmt.Errorf("scrape %s: engine %q, want %q", u, md.Engine, engine)
	case md.CacheState != "miss":
		return a, fmt.Errorf("scrape %s: cacheState %q despite maxAge 0", u, md.CacheState)
	case md.StatusCode != http.StatusOK:
		return a, fmt.Errorf("scrape %s: statusCode %d", u, md.StatusCode)
	case !strings.Contains(a.Data.Markdown, articleMarker(n)):
		return a, fmt.Errorf("scrape %s: the Markdown lacks %q: %s", u, articleMarker(n), wire.Truncate(a.Data.Markdown, 300))
	}
	return a, nil
}

// waitWarm waits until the pool has at least one idle browser and nothing
// else: none starting, none leased. (A scrape gives its browser back to the
// pool, so a scraping pool may hold more idle browsers than its warm count.)
func (in *instance) waitWarm(ctx context.Context) error {
	return in.waitPool(ctx, 60*time.Second, "warm and idle", func(s browsers.Stats) bool {
		return s.Idle >= 1 && s.Idle == s.Total && s.Starting == 0 && s.Leased == 0
	})
}

// scrapeLatency times POST /v2/scrape of a server-rendered page (taken at
// the network layer, no rendering) and of a client-rendered one against a
// warm pool, and the same job done the naive way with chromedp: launch a
// browser, navigate, wait for the load event, take the HTML, close it.
// The three kinds of sample are interleaved, and before each the pool must
// be warm and idle and the previous sample's browser gone.
func (b *bench) scrapeLatency(ctx context.Context, _ *instance) error {
	site := b.siteURL()
	in, err := b.startWith(ctx, "scrape", 1, poolSize, scrapeEnv(poolSize, 30*time.Second))
	if err != nil {
		return err
	}
	defer in.Close()
	sm := &scrapeSampler{in: in, site: site, chromium: in.svc.Config.ChromiumPath, tmp: b.tmp}
	if err := sm.warmUp(ctx); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	renders := &in.svc.Crawler.Scrape.Renders
	n0, _, settle0 := renders.Read()
	ss, err := sm.samples(ctx)
	if err != nil {
		return err
	}
	sp, rp, cp := median(ss.static), median(ss.rendered), median(ss.cold)
	// The settle wait's share of a rendered scrape: the service's own count
	// of the time its renders waited for their pages to settle.
	n1, _, settle1 := renders.Read()
	if n := n1 - n0; n > 0 {
		var sum time.Duration
		for _, d := range ss.rendered {
			sum += d
		}
		wait := (settle1 - settle0) / time.Duration(n)
		logf("scrape rendered: %d renders waited %.0f ms each on average for the page to settle after its load event", n, ms(wait))
		figure("scrape_rendered_settle_ms", ms(wait), "ms")
		figure("scrape_rendered_settle_share", float64(settle1-settle0)/float64(sum), "x")
	}
	ss.log()
	if sp > 50*time.Millisecond {
		if err := b.staticBreakdown(ctx, in, site+"/articles/1"); err != nil {
			logf("static scrape breakdown failed: %v", err)
		}
	}
	figure("scrape_static_p50_ms", ms(sp), "ms")
	figure("scrape_rendered_p50_ms", ms(rp), "ms")
	figure("scrape_cold_chromedp_p50_ms", ms(cp), "ms")
	figure("scrape_static_speedup_over_cold_chromedp", float64(cp)/float64(sp), "x")
	figure("scrape_static_over_rendered", float64(sp)/float64(rp), "x")
	return nil
}

// The engines a static and a client-rendered page of the test site are
// taken with.
const (
	staticEngine   = "fetch"
	renderedEngine = "browser-render"
)

// scrapeSampler takes the scrape phase's samples on its service.
type scrapeSampler struct {
	in                  *instance
	site, chromium, tmp string
	coldN               int // chromedp runs so far, each in a directory of its own
}

// scrapeSamples are the scrape phase's samples: the scrapes' latencies,
// the static ones' timeTaken as the service measured it, and the naive
// chromedp runs' with their steps.
type scrapeSamples struct {
	static, staticTaken, rendered, cold []time.Duration
	coldSteps                           []coldTimes
}

// settle waits until the pool is warm and idle, and the browser quiet.
func (s *scrapeSampler) settle(ctx context.Context) error {
	if err := s.in.waitWarm(ctx); err != nil {
		return err
	}
	time.Sleep(300 * time.Millisecond) // let the browser go quiet after the last tab
	return nil
}

// scrape times one scrape of article n under path, once settled.
func (s *scrapeSampler) scrape(ctx context.Context, path string, n int, engine string) (time.Duration, scrapeAnswer, error) {
	if err := s.settle(ctx); err != nil {
		return 0, scrapeAnswer{}, err
	}
	t := time.Now()
	a, err := s.in.scrape(ctx, s.in.client, fmt.Sprintf("%s/%s/%d", s.site, path, n), n, engine)
	return time.Since(t), a, err
}

// cold times one naive chromedp scrape of article n, once settled.
func (s *scrapeSampler) cold(ctx context.Context, n int) (time.Duration, coldTimes, error) {
	if err := s.settle(ctx); err != nil {
		return 0, coldTimes{}, err
	}
	s.coldN++
	dir := filepath.Join(s.tmp, "chromedp", strconv.Itoa(s.coldN))
	defer os.RemoveAll(dir)
	t := time.Now()
	html, ct, err := coldChromedp(ctx, s.chromium, dir, fmt.Sprintf("%s/articles/%d", s.site, n))
	el := time.Since(t)
	if err == nil && !strings.Contains(html, articleMarker(n)) {
		err = fmt.Errorf("chromedp: the HTML lacks %q", articleMarker(n))
	}
	return el, ct, err
}

// warmUp takes the first scrapes on a fresh browser, and the first launch.
func (s *scrapeSampler) warmUp(ctx context.Context) error {
	for _, w := range []struct {
		path, engine string
	}{{"articles", staticEngine}, {"articles", staticEngine}, {"app", renderedEngine}} {
		if _, _, err := s.scrape(ctx, w.path, 1, w.engine); err != nil {
			return err
		}
	}
	_, _, err := s.cold(ctx, 1)
	return err
}

// samples takes the three kinds of sample, interleaved.
func (s *scrapeSampler) samples(ctx context.Context) (scrapeSamples, error) {
	var ss scrapeSamples
	for i := 0; i < scrapeStaticSamples; i++ {
		d, a, err := s.scrape(ctx, "articles", 1, staticEngine)
		if err != nil {
			return ss, err
		}
		ss.static = append(ss.static, d)
		ss.staticTaken = append(ss.staticTaken, time.Duration(a.Data.Metadata.TimeTaken)*time.Millisecond)
		if i < scrapeRenderedSamples {
			d, _, err := s.scrape(ctx, "app", 1, renderedEngine)
			if err != nil {
				return ss, err
			}
			ss.rendered = append(ss.rendered, d)
		}
		if i < coldChromedpSamples {
			d, ct, err := s.cold(ctx, 1)
			if err != nil {
				return ss, err
			}
			ss.cold = append(ss.cold, d)
			ss.coldSteps = append(ss.coldSteps, ct)
		}
	}
	return ss, nil
}

// log logs the samples, and the chromedp runs' p50 by step.
func (ss scrapeSamples) log() {
	logf("scrape static ms: %s (the service's own timeTaken p50 %.0f ms)", msList(ss.static), ms(median(ss.staticTaken)))
	logf("scrape rendered ms: %s", msList(ss.rendered))
	logf("cold chromedp ms: %s", msList(ss.cold))
	var launch, nav, eval, closing []time.Duration
	for _, ct := range ss.coldSteps {
		launch, nav, eval, closing = append(launch, ct.launch), append(nav, ct.navigate), append(eval, ct.html), append(closing, ct.close)
	}
	logf("cold chromedp p50 by step: launch and first tab %.0f ms, navigate to load %.0f ms, outerHTML %.0f ms, close %.0f ms",
		ms(median(launch)), ms(median(nav)), ms(median(eval)), ms(median(closing)))
}

// coldTimes are the steps of one naive chromedp scrape.
type coldTimes struct {
	launch, navigate, html, close time.Duration
}

// chromiumOptions start a local headless Chromium with dir as its
// user-data directory and the flags this machine needs (no network chatter).
func chromiumOptions(chromium, dir string, extra ...chromedp.ExecAllocatorOption) []chromedp.ExecAllocatorOption {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", "new"),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(dir),
	)
	return append(opts, extra...)
}

// coldChromedp is a plain chromedp program doing a scrape the naive way: it
// launches Chromium (chromedp's default options, which talk to the browser
// over --remote-debugging-pipe, plus the flags Trawler's own browsers run
// with that matter here), navigates, waits for the load event, takes
// document.documentElement.outerHTML and closes the browser.
func coldChromedp(ctx context.Context, chromium, dir, u string) (string, coldTimes, error) {
	var ct coldTimes
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, chromiumOptions(chromium, dir)...)
	defer cancelAlloc()
	cctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	t := time.Now()
	if err := chromedp.Do(cctx); err != nil { // starts the browser, opens the tab
		return "", ct, fmt.Errorf("chromedp launch: %w", err)
	}
	ct.launch = time.Since(t)
	t = time.Now()
	if err := chromedp.Do(cctx, chromedp.Navigate(u)); err != nil {
		return "", ct, fmt.Errorf("chromedp navigate: %w", err)
	}
	ct.navigate = time.Since(t)
	t = time.Now()
	html, err := chromedp.Run(cctx, chromedp.Evaluate[string]("document.documentElement.outerHTML"))
	if err != nil {
		return "", ct, fmt.Errorf("chromedp outerHTML: %w", err)
	}
	ct.html = time.Since(t)
	t = time.Now()
	if err := chromedp.Cancel(cctx); err != nil {
		return "", ct, fmt.Errorf("chromedp close: %w", err)
	}
	cancelAlloc() // waits for the browser process to exit
	ct.close = time.Since(t)
	return html, ct, nil
}

// concurrentScrape issues concurrentScrapes scrapes at once, each of its own
// URL, a fifth of them client-rendered, against a fresh service with a pool
// of concurrentPool browsers (TRAWLER_POOL_SIZE=4, one warm at the start,
// the default, and the one with spare tabs the service prepares at start,
// waited for) and a queue wait long enough for all of them to wait their
// turn, and times the burst. Then it runs the same burst again, on another
// fresh service, sampling every ~100 ms this process's RSS plus the PSS
// summed over every Chromium process of the service's data directory, for
// the peak. Two bursts because reading PSS is not cheap: smaps_rollup walks
// a process's page tables, some 2 ms of CPU for a renderer and up to 20 ms
// for a browser's main process, 70-100 ms for the 35-45 processes of four
// busy browsers, which sampled every 100 ms would take a third of a 2-core
// machine from the scrapes it measures. The peak hardly depends on how fast
// the scrapes go: the pool bounds how many browsers and tabs there are.
//
// A full PSS sample is taken every 100 ms at most; on a machine the
// scrapes saturate, every 200-700 ms (the log says).
//
// Pool sizes tried on a 2-core machine, quiet but for the bench: 2 gave
// 3.4-3.7 pages/s with a peak of 0.62 GB, 4 gave 3.3-3.9 pages/s and
// 0.91-0.98 GB, 6 gave 2.4-2.9 pages/s and 1.17-1.26 GB (more browsers
// than cores: start-ups and renderers compete). The CPU is the bottleneck
// (a static scrape spends most of its time starting a renderer for its
// fresh browser context). 4 is kept (see -concurrent-pool): as fast as 2
// on this mix and with room for client-rendered pages, which hold their
// browser while they wait for the network to go idle.
func (b *bench) concurrentScrape(ctx context.Context, _ *instance) error {
	size := b.concurrentPool
	logf("concurrent: pool size %d (TRAWLER_POOL_SIZE; of 2, 4 and 6, 4 was the best-behaved, see concurrentScrape), %d scrapes at once (%d client-rendered)",
		size, concurrentScrapes, concurrentRendered)
	walls, failures, _, err := b.burst(ctx, "concurrent", size, withoutMemory, true, nil)
	if err != nil {
		return err
	}
	// The baseline: the same two bursts with every single scrape in a
	// browser context of its own (TRAWLER_REUSE_TABS=false).
	fresh, _, _, err := b.burst(ctx, "concurrent-fresh-tabs", size, withoutMemory, true, map[string]string{"TRAWLER_REUSE_TABS": "false"})
	if err != nil {
		return err
	}
	// And the first burst without the spare tabs the service prepares at
	// start (TRAWLER_SPARE_TABS=0): its first renders open contexts.
	bare, _, _, err := b.burst(ctx, "concurrent-no-spares", size, withoutMemory, false, map[string]string{"TRAWLER_SPARE_TABS": "0"})
	if err != nil {
		return err
	}
	_, failures2, peak, err := b.burst(ctx, "concurrent-mem", size, withMemory, false, nil)
	if err != nil {
		return err
	}
	logf("concurrent: peak memory %.1f MB at sample %d of %d (%.0f ms each): this process's RSS %.1f MB + PSS of %d Chromium processes in %d browsers %.1f MB",
		kbMB(peak.total), peak.at, peak.samples, ms(peak.cost), kbMB(peak.self), peak.procs, peak.browsers, kbMB(peak.chromium))
	if failures2 > 0 {
		logf("concurrent: %d scrapes of the sampled burst failed too", failures2)
	}
	figure("scrape_concurrent_pages_per_s", concurrentScrapes/walls[0].Seconds(), "pages/s")
	figure("scrape_concurrent_warm_pages_per_s", concurrentScrapes/walls[1].Seconds(), "pages/s")
	figure("scrape_concurrent_fresh_tabs_pages_per_s", concurrentScrapes/fresh[0].Seconds(), "pages/s")
	figure("scrape_concurrent_fresh_tabs_warm_pages_per_s", concurrentScrapes/fresh[1].Seconds(), "pages/s")
	figure("scrape_concurrent_no_spares_pages_per_s", concurrentScrapes/bare[0].Seconds(), "pages/s")
	figure("scrape_concurrent_spares_over_none", bare[0].Seconds()/walls[0].Seconds(), "x")
	figure("scrape_concurrent_warm_reuse_over_fresh_tabs", fresh[1].Seconds()/walls[1].Seconds(), "x")
	figure("scrape_concurrent_failures", float64(failures), "failures")
	figure("scrape_peak_rss_mb", kbMB(peak.total), "MB")
	return nil
}

// burst runs the concurrent scrapes on a fresh service named name, with
// the environment of scrapeEnv and then extra, sampling memory if memory
// says so, and closes the service. With again,
// the same mix (of other URLs) is sent a second time, 2 s after the
// first burst ended: the service is warm then, as a long-running one is,
// with the browsers and tabs the first burst left. It returns each
// burst's wall time and the failures of all.
func (b *bench) burst(ctx context.Context, name string, size int, memory memorySampling, again bool, extra map[string]string) ([]time.Duration, int, memPeak, error) {
	var peak memPeak
	env := scrapeEnv(size, 120*time.Second)
	maps.Copy(env, extra)
	in, err := b.startWith(ctx, name, 1, size, env)
	if err != nil {
		return nil, 0, peak, err
	}
	defer in.Close()
	if err := in.waitWarm(ctx); err != nil {
		return nil, 0, peak, err
	}
	if err := in.waitSpares(ctx); err != nil {
		return nil, 0, peak, err
	}
	time.Sleep(time.Second) // let the warm browser finish its start-up work
	runtime.GC()
	debug.FreeOSMemory()
	idle0 := machineBusy()
	time.Sleep(500 * time.Millisecond)
	logf("%s: before the burst the machine was %.0f%% busy", name, 100*(machineBusy()-idle0).Seconds()/0.5/float64(runtime.NumCPU()))

	client := &http.Client{Timeout: 150 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: concurrentScrapes}}
	defer client.CloseIdleConnections()
	var mem *memSampler
	if memory == withMemory {
		mem = startMemSampler(in.dataDir, 100*time.Millisecond)
	}
	wall, failures := b.burstRound(ctx, in, client, name, 2000)
	walls := []time.Duration{wall}
	if mem != nil {
		peak = mem.stop()
	}
	if again {
		time.Sleep(2 * time.Second)
		wall, f := b.burstRound(ctx, in, client, name+"-warm", 3000)
		walls, failures = append(walls, wall), failures+f
	}
	return walls, failures, peak, nil
}

// burstRound sends the concurrent scrapes once, of pages numbered from
// base, and logs what they took.
func (b *bench) burstRound(ctx context.Context, in *instance, client *http.Client, name string, base int) (time.Duration, int) {
	site := b.siteURL()
	recycled0 := in.svc.Crawler.Scrape.Recycled()
	type result struct {
		d        time.Duration
		rendered bool
		err      error
	}
	results := make([]result, concurrentScrapes)
	every := concurrentScrapes / concurrentRendered
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range concurrentScrapes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := base + i
			path, engine := "articles", "fetch"
			if i%every == every-1 {
				path, engine = "app", "browser-render"
			}
			<-start
			t := time.Now()
			_, err := in.scrape(ctx, client, fmt.Sprintf("%s/%s/%d", site, path, n), n, engine)
			results[i] = result{time.Since(t), path == "app", err}
		}()
	}
	time.Sleep(50 * time.Millisecond) // every goroutine at the barrier
	t, busy0, self0 := time.Now(), machineBusy(), selfCPU()
	close(start)
	wg.Wait()
	wall := time.Since(t)
	busy, self := machineBusy()-busy0, selfCPU()-self0
	failures := 0
	var sd, rd []time.Duration
	for i, r := range results {
		switch {
		case r.err != nil:
			failures++
			if failures <= 5 {
				logf("%s: scrape %d failed: %v", name, i, r.err)
			}
		case r.rendered:
			rd = append(rd, r.d)
		default:
			sd = append(sd, r.d)
		}
	}
	logf("%s: %d scrapes in %s (%.2f pages/s), %d failed; latency static p50 %.0f max %.0f ms, rendered p50 %.0f max %.0f ms",
		name, concurrentScrapes, wall.Round(time.Millisecond), concurrentScrapes/wall.Seconds(), failures,
		ms(median(sd)), ms(pct(sd, 1)), ms(median(rd)), ms(pct(rd, 1)))
	logf("%s: the machine's CPU was busy %.1f s of the burst's %.1f (%d cores): this process (Trawler, the site and the client) %.1f s, the rest (browsers) %.1f s",
		name, busy.Seconds(), wall.Seconds()*float64(runtime.NumCPU()), runtime.NumCPU(), self.Seconds(), (busy - self).Seconds())
	logf("%s: %d of %d rendered scrapes ran in a tab an earlier scrape of the team used (recycled, cleared between)",
		name, in.svc.Crawler.Scrape.Recycled()-recycled0, concurrentRendered)
	return wall, failures
}

// staticBreakdown is a diagnostic, printed when a warm static scrape takes
// more than 50 ms: it replays the CDP steps of a static scrape (as package
// scrape takes them) on a browser leased from the same pool and times each,
// then the transform of the page, over a few runs, and logs the medians.
func (b *bench) staticBreakdown(ctx context.Context, in *instance, u string) error {
	const runs = 7
	var names []string
	var steps [][]time.Duration
	for r := 0; r < runs; r++ {
		if err := in.waitWarm(ctx); err != nil {
			return err
		}
		time.Sleep(300 * time.Millisecond)
		laps, err := replayStatic(ctx, in, u)
		if err != nil {
			return err
		}
		if steps == nil {
			steps = make([][]time.Duration, len(laps))
			for _, l := range laps {
				names = append(names, l.name)
			}
		}
		for i, l := range laps {
			steps[i] = append(steps[i], l.d)
		}
	}
	var parts []string
	var sum time.Duration
	for i, n := range names {
		if !strings.HasPrefix(n, "(") {
			sum += median(steps[i])
		}
		parts = append(parts, fmt.Sprintf("%s %.1f", n, ms(median(steps[i]))))
	}
	logf("static scrape replayed over CDP, p50 ms of %d runs: %s; sum of p50s %.1f ms", runs, strings.Join(parts, ", "), ms(sum))
	return nil
}

type lap struct {
	name string
	d    time.Duration
}

// stopwatch times consecutive steps.
type stopwatch struct {
	start time.Time
	laps  []lap
}

func newStopwatch() *stopwatch { return &stopwatch{start: time.Now()} }

// lap records the step name as the time since the last lap, and starts the
// next step.
func (s *stopwatch) lap(name string) {
	s.laps = append(s.laps, lap{name, time.Since(s.start)})
	s.start = time.Now()
}

// replayStatic takes u's document at the network layer on a leased
// browser, as a static scrape does, and returns the time of each step.
func replayStatic(ctx context.Context, in *instance, u string) ([]lap, error) {
	sw := newStopwatch()
	lease, err := in.svc.Pool.Acquire(ctx, browsers.LeaseRequest{Team: "bench-breakdown", Lifetime: time.Minute})
	if err != nil {
		return nil, err
	}
	released := false
	defer func() {
		if !released {
			lease.Release(browsers.Destroy)
		}
	}()
	sw.lap("acquire")
	conn, err := lease.Browser().CDP().Dial(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	sw.lap("dial")
	tab, contextID, taker, err := openStaticTab(ctx, conn, sw)
	if err != nil {
		return nil, err
	}
	navStart := sw.start
	if err := cdp.Run(ctx, tab, page.Navigate, page.NavigateParams{URL: u}); err != nil {
		return nil, err
	}
	var tk takenDocument
	select {
	case tk = <-taker.taken:
	case <-time.After(10 * time.Second):
		return nil, errors.New("the document was not taken at the network layer")
	}
	sw.lap("Page.navigate (until it returns)")
	sw.laps = append(sw.laps, lap{"(of which until the body was taken)", tk.at.Sub(navStart)})
	conn.OnEvent(nil)
	sw.start = time.Now()
	if err := disposeContext(conn, contextID); err != nil {
		return nil, err
	}
	sw.lap("disposeBrowserContext")
	released = true
	lease.Release(browsers.Reuse)
	sw.lap("release")
	if _, err := content.Transform(tk.body, u, content.Options{OnlyMainContent: true, RemoveBase64Images: true,
		Want: content.Want{Markdown: true}}); err != nil {
		return nil, err
	}
	sw.lap("content.Transform")
	return sw.laps, nil
}

// openStaticTab opens a tab in a fresh browser context of conn's browser
// and sets it up as package scrape does for a static scrape, its document
// taken at the network layer by the returned taker; it times each step.
func openStaticTab(ctx context.Context, conn *cdp.Conn, sw *stopwatch) (cdp.Session, cdproto.BrowserContextID, *documentTaker, error) {
	contextID, err := cdp.NewContext(ctx, conn, ownContext())
	if err != nil {
		return cdp.Session{}, "", nil, err
	}
	sw.lap("createBrowserContext")
	created, err := cdp.Do(ctx, cdp.Browser(conn), target.CreateTarget, target.CreateTargetParams{URL: "about:blank", BrowserContextID: contextID})
	if err != nil {
		return cdp.Session{}, "", nil, err
	}
	sw.lap("createTarget")
	taker := &documentTaker{taken: make(chan takenDocument, 1)}
	conn.OnEvent(func(ev cdp.Event) { taker.onEvent(ctx, ev) })
	tab, err := cdp.Attach(ctx, conn, created.TargetID)
	if err != nil {
		return cdp.Session{}, "", nil, err
	}
	taker.attached(tab)
	sw.lap("attachToTarget")
	if err := setUpStaticTab(ctx, tab, sw); err != nil {
		return cdp.Session{}, "", nil, err
	}
	return tab, contextID, taker, nil
}

// networkUserAgentOverride is the method package scrape overrides a tab's
// User-Agent with.
const networkUserAgentOverride = "Network.setUserAgentOverride"

// setUpStaticTab sends the calls package scrape makes to set up a tab for
// a static scrape, timing each.
func setUpStaticTab(ctx context.Context, tab cdp.Session, sw *stopwatch) error {
	v, err := cdp.Do(ctx, cdp.Browser(tab.Conn), browser.GetVersion, cdproto.Empty{})
	if err != nil {
		return err
	}
	sw.lap(browser.GetVersion.Method)
	documents := []*fetch.RequestPattern{{URLPattern: "*", RequestStage: fetch.RequestStageRequest},
		{URLPattern: "*", ResourceType: network.ResourceTypeDocument, RequestStage: fetch.RequestStageResponse}}
	for _, c := range []struct {
		method string
		run    func() error
	}{
		{page.Enable.Method, func() error { return cdp.Run(ctx, tab, page.Enable, page.EnableParams{}) }},
		{network.Enable.Method, func() error { return cdp.Run(ctx, tab, network.Enable, network.EnableParams{}) }},
		{fetch.Enable.Method, func() error { return cdp.Run(ctx, tab, fetch.Enable, fetch.EnableParams{Patterns: documents}) }},
		{security.SetIgnoreCertificateErrors.Method, func() error {
			return cdp.Run(ctx, tab, security.SetIgnoreCertificateErrors, security.SetIgnoreCertificateErrorsParams{Ignore: true})
		}},
		{emulation.SetDeviceMetricsOverride.Method, func() error {
			return cdp.Run(ctx, tab, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: 1920, Height: 1080, DeviceScaleFactor: 1})
		}},
		// Network's override, as package scrape sends it: cdproto has only
		// Emulation's, whose parameters are the same.
		{networkUserAgentOverride, func() error {
			ua := strings.Replace(v.UserAgent, "HeadlessChrome", "Chrome", 1)
			return tab.Call(ctx, networkUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: ua}, nil)
		}},
		{page.AddScriptToEvaluateOnNewDocument.Method, func() error {
			return cdp.Run(ctx, tab, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: "(() => {})()"})
		}},
	} {
		if err := c.run(); err != nil {
			return fmt.Errorf("%s: %w", c.method, err)
		}
		sw.lap(c.method)
	}
	return nil
}

// takenDocument is the body of a document taken at the network layer, and
// when it was taken.
type takenDocument struct {
	at   time.Time
	body []byte
}

// documentTaker lets requests of its tab through and takes the body of
// its document's response, which it replaces with an empty page.
type documentTaker struct {
	taken chan takenDocument
	mu    sync.Mutex
	tab   cdp.Session // once attached
}

func (d *documentTaker) attached(tab cdp.Session) {
	d.mu.Lock()
	d.tab = tab
	d.mu.Unlock()
}

func (d *documentTaker) onEvent(ctx context.Context, ev cdp.Event) {
	d.mu.Lock()
	tab := d.tab
	d.mu.Unlock()
	if tab.ID == "" || ev.SessionID != tab.ID {
		return
	}
	e, ok, err := cdp.Decode(ev, fetch.RequestPaused)
	if !ok || err != nil {
		return
	}
	go d.paused(ctx, tab, e.RequestID, e.ResponseStatusCode)
}

// paused continues a paused request, or takes a paused response's body.
func (d *documentTaker) paused(ctx context.Context, tab cdp.Session, id fetch.RequestID, status int64) {
	if status == 0 {
		cdp.Run(ctx, tab, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: id})
		return
	}
	rb, _ := cdp.Do(ctx, tab, fetch.GetResponseBody, fetch.GetResponseBodyParams{RequestID: id})
	select {
	case d.taken <- takenDocument{time.Now(), rb.Body}:
	default:
	}
	cdp.Run(ctx, tab, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: id, ResponseCode: 200,
		ResponseHeaders: []*fetch.HeaderEntry{{Name: "Content-Type", Value: "text/html"}},
		Body:            []byte("<!doctype html><title></title>")})
}

// machineBusy is the CPU time the whole machine has spent working (every
// field of /proc/stat's cpu line but idle and iowait).
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	var ticks int64
	for i, f := range strings.Fields(line)[1:] {
		n, _ := strconv.ParseInt(f, 10, 64)
		if i != 3 && i != 4 && i < 8 { // idle, iowait; guest time is in user already
			ticks += n
		}
	}
	return time.Duration(ticks) * time.Second / clockTicks
}
