// Command bench measures Trawler against baselines: sessions (creation,
// memory, leaks, the CDP proxy's overhead, the live view, recordings,
// execute), scrapes and crawls (latency, throughput, memory, what a render costs),
// the content pipeline and the quality of its main content on a public
// corpus, document parsing, the search index, the model-backed formats,
// change tracking, branding, audio, the documentation search, the egress
// proxy, the docker runtime, PostgreSQL and two nodes, and job queues.
//
// It prints one line per figure to stdout, "bench: NAME VALUE UNIT"; all
// other output (details, percentiles, diagnostics) goes to stderr. Every
// ratio is taken against a baseline measured in the same run. With -page
// FILE the run also writes its figures and the machine to FILE (make
// bench: docs/performance.md), and, when it failed, why. The services run in this
// process, served by net/http on 127.0.0.1 listeners, in local mode (no
// API keys), each with its own directory under a temporary one; the
// scrape phases' test site is an httptest.Server on 127.0.0.1 too. MB are
// MiB (2^20 bytes).
//
// Phases, in the order they run (-only create,memory,... runs a subset):
//
//   - create: p50 of POST /v2/browser over HTTP, 15 samples (after one
//     warm-up) with one warm browser ready (TRAWLER_WARM_BROWSERS=1) and
//     15 from a second service with none (TRAWLER_WARM_BROWSERS=0); and
//     of the same until the session's browser answers Browser.getVersion
//     through its cdpUrl (ready).
//     Samples alternate; before each, both pools must have settled.
//     Each session is deleted after its sample.
//   - memory: five idle sessions; per session, the PSS summed over its
//     browser's process group (smaps_rollup), plus this process's RSS
//     growth (VmRSS, after a forced GC) divided by five. It waits for the
//     pool to have replaced the warm browsers the sessions took.
//   - cdp: one session; the same page target reached through the proxy
//     (/cdp/<id>/devtools/page/<target>?token=) and directly (the browser's
//     /devtools/page/<target>), with the same lean synchronous client:
//     1000 Runtime.evaluate("1+1") each in alternating blocks, then 10
//     1280x15000 PNG screenshots each, alternating.
//   - leaks: 200 create/delete cycles back to back against the service
//     with one warm browser, then the Chromium processes (by process group)
//     and user-data directories beyond the warm browser's are counted.
//   - transform: cmd/bench/transform.Measure over cmd/bench/transform.Corpus()
//     (200 pages of Python's HTML documentation, from Debian's
//     python3.11-doc, which `make bench` installs): the MB/s of HTML that
//     content.Transform (main content, Markdown) converts, and the ratio of
//     its time to the bare html-to-markdown conversion's, medians of rounds.
//   - quality: onlyMainContent's Markdown (as plain text), go-trafilatura
//     and go-readability scored on trafilatura's evaluation corpus, which
//     the go-trafilatura module ships (package content/quality: the
//     snippets each page's main text must and must not hold), precision,
//     recall and F1 as its comparison script counts them; and the share of
//     those pages, all server-rendered, that the render decision would
//     send to a browser.
//   - scrape: POST /v2/scrape (formats markdown, maxAge 0) of a
//     server-rendered article of the test site (taken without rendering,
//     engine fetch), 15 samples, and of a client-rendered one
//     (engine browser-render), 8 samples, on a service with one warm
//     browser; against 8 samples of a plain chromedp program doing the same
//     job the naive way (launch Chromium, navigate, wait for the load event,
//     take document.documentElement.outerHTML, close), timed from launch to
//     exit. Samples interleave, after a warm-up of each kind; before each,
//     the pool must be warm and idle. p50s and their ratios, and the share
//     of a rendered scrape its renders spent waiting for the page to
//     settle. When a static scrape takes over 50 ms, its steps are replayed
//     over CDP and timed (stderr).
//   - stealth: test/stealth's bot detectors (BotD, fpscanner) through a
//     rendered scrape (desktop and phone) and sessions driven by Playwright
//     and Puppeteer, and through two baselines on the same Chromium: a
//     plain Playwright-launched headless one and Puppeteer with
//     puppeteer-extra-plugin-stealth (test/node/stealth-bench.mjs); per path
//     and detector, flagged or not, and fpscanner's signals (a session's
//     hasCDP, its client's Runtime.enable, apart). Then 5 rendered scrapes
//     of each settle-pattern page and of the same content with nothing
//     kept open, interleaved: p50 each, of all, their max and the ratio.
//   - concurrent: 50 scrapes at once (40 static, 10 client-rendered, each
//     of its own URL, maxAge 0) against a fresh service with a pool of 4
//     browsers (-concurrent-pool), one warm at the start; pages/s over the
//     wall time of the burst and of a second one 2 s later on the same,
//     now warm, service. The same two bursts with a browser context of its
//     own for every scrape (TRAWLER_REUSE_TABS=false) and the first without
//     spare tabs (TRAWLER_SPARE_TABS=0) are the baselines. Then failures,
//     and the peak, sampled every 100 ms during another burst, of this
//     process's RSS plus the PSS of every Chromium process of the service.
//   - rendercost: the browser's CPU per render of the client-rendered page
//     in a browser context and tab of its own each time, against the next
//     page of one tab (a crawl lane's way), in a session's browser; then
//     the machine's CPU per rendered scrape through the API with the
//     team's tabs reused and cleared, against a fresh context each
//     (TRAWLER_REUSE_TABS=false). The better of two rounds each.
//   - crawl: POST /v2/crawl (limit 1000, formats markdown) of the 530 pages
//     of Python's HTML documentation (python3.11-doc), served by net/http's
//     FileServer on 127.0.0.1, from its root, on a fresh service with the
//     default pool and lanes (TRAWLER_POOL_SIZE 8, TRAWLER_JOB_WORKERS 4):
//     pages completed per second of wall time from the POST to the status
//     completed; then the peak, sampled every 100 ms during a second,
//     untimed crawl, of this process's RSS plus the PSS of the service's
//     Chromium processes. Then the same crawl with every page rendered
//     (scrapeOptions waitFor 1) on another fresh service. The baselines,
//     each run twice (the better run counts): a plain Colly program
//     crawling the same site from the same root (same host, every <a href>
//     once, async with parallelism 8, links extracted, no Markdown); Colly
//     with the service's lanes that also converts each page to Markdown;
//     and chromedp with as many tabs in one Chromium, rendering every page
//     and converting it, against the rendered crawl.
//   - docker: the create samples again, alternating four services: process
//     runtime warm and cold, docker runtime (TRAWLER_RUNTIME=docker, image
//     trawler/browser:latest) warm and cold; ratios docker over process.
//     Then the memory of three idle browsers of each runtime: PSS of the
//     process group, against PSS of the container's whole process tree
//     including its containerd shim and docker-init.
//   - profiles: a session's browser gets 1,000 cookies, 2 MB of
//     localStorage and 3 MB of IndexedDB records on a 127.0.0.1 origin; the
//     save (capture over CDP, encode, write to a filesystem store) and the
//     restore into a fresh session's browser (load, decode, restore over
//     CDP) are timed, five times each, p50.
//   - liveview: one session of the warm service shows a full-window block;
//     its colour is changed over CDP 40 times (after a warm-up) and the
//     live-view page, open in a headless Chromium, is timed until it has
//     drawn a frame of the new colour (p50); the frames that page draws per
//     second while the session's page animates; then the CPU of this process
//     plus the session browser's process group while the page animates,
//     with no viewer and with 1 and 5 viewers (WebSocket clients in a child
//     process), per viewer.
//   - recording: a session of the warm service visits 24 pages of the test
//     site (articles and app pages in turn; each is scrolled three times
//     and gains a paragraph), unrecorded and recorded ({"recording": true}),
//     two runs of each in ABBA order after a warm-up: the CPU of the
//     session browser's process group plus this process per visit,
//     recorded over unrecorded (recording_overhead), and the bytes the
//     recorded runs stored per minute (recording_bytes_per_minute).
//   - monitor: a trawler serve process (no warm browser) idle for 20 s
//     with no monitor, then for 20 s more with 1,000 idle monitors (yearly
//     schedules, a loopback page each) created through POST /v2/monitor:
//     the process's CPU in percent of a core beyond the first window's,
//     the second window's over the first's, its VmRSS growth, and the
//     median create. See monitorbench.go.
//   - parse: the PDF manuals of parse.Manuals (Debian's bash-doc,
//     debian-faq, xorg-docs) through parse.PDF and through pdftotext
//     -layout, median of 5 rounds each: pages per second, their ratio and
//     word F1 against pdftotext's text; a generated 4,000-section DOCX
//     (MB/s, and against a bare XML token scan of it) and a 500,000-cell
//     XLSX (cells/s, and against excelize's own GetRows); then a 50 MB PDF,
//     a 50 MB DOCX, an XLSX of 600,000 cells and one of three million (which
//     the memory budget refuses), each uploaded to a fresh trawler serve
//     process, with the rise of its peak RSS (VmHWM) over its size.
//   - search: the embedded search index on python3.11-doc: docs/s of
//     converting (scrape.IndexDoc) and indexing its pages in batches of 200,
//     and of indexing alone; MRR@10 and recall@10 of index.Measure over
//     index/testdata/python-queries.tsv; query p50/p99 over that table on
//     the 530-page index and on a 20,000-document one made of shuffled
//     copies of its pages, whose size on disk per 1,000 documents and this
//     process's RSS with it open are taken too; then crawl pages/s with the
//     index on over off (TRAWLER_SEARCH_INDEX=false), and the crawled pages
//     searched through POST /v2/search.
//   - model: the model-backed formats against an OpenAI-compatible test
//     server (model/modeltest) that answers after a fixed delay: what a
//     scrape with json adds beyond the model's own time, the input tokens
//     Trawler sends per python3.11-doc page against the page's raw HTML,
//     and the most calls in flight during a 100-page batch against
//     TRAWLER_LLM_CONCURRENCY.
//   - changes: the git-diff mode of change tracking (scrape.DiffMarkdown)
//     on two versions of a 100 KB page that differ in a few percent of its
//     lines, median of 31 runs.
//   - branding: what the branding format adds to a rendered scrape: the
//     local designs of scrape/testdata/branding scraped with [screenshot]
//     and with [screenshot, branding], alternately; the median of the
//     pairs' differences.
//   - audio: POST /v2/scrape with formats ["audio"] of a page whose <video>
//     plays a 60-second clip made by ffmpeg: the browser renders it, the
//     clip is taken through it and ffmpeg makes an MP3; median of 5.
//   - docs: the documentation search (docsearch): the time to build its
//     index as the service does at start, median of 9 builds, and the top-1
//     and top-3 accuracy over docsearch/testdata/questions.tsv.
//   - egress: what the egress proxy costs: pages/s of 4 tabs loading the
//     same 200 pages of a local site through it and directly (and pages
//     per CPU-second), alternating runs; and the added p50 latency of
//     sequential GETs through it, http and https, kept-alive and new
//     tunnels.
//   - execute: POST /v2/browser/{id}/execute of a trivial node script on
//     a warm session, in a sandbox container per run (the docker runtime,
//     image trawler/sandbox:latest) and as a local node process
//     (TRAWLER_EXECUTE=node), 15 samples each, alternating; p50s.
//   - cluster: on the PostgreSQL server of TRAWLER_TEST_DATABASE_URL
//     (scripts/pgtest.sh, which make bench runs the bench under; without
//     it the phase is skipped), a fresh database per service: the crawl
//     phase's crawl of python3.11-doc on SQLite and on PostgreSQL,
//     alternately, twice each (pages/s, PostgreSQL over SQLite); two
//     crawls of it at once (two teams, maxAge 0) on one node with the
//     whole pool against two nodes sharing one database with half of it
//     each, one crawl to each (pages/s of both, two nodes over one); and
//     two trawler serve processes on one database with a 5 s lease: the
//     time from a SIGKILL of the node running a crawl of a slow loopback
//     site to the other node recording its pages again, against the lease
//     plus 2 s. See clusterbench.go.
//   - queue: on the same PostgreSQL server (skipped without it), the job
//     queue's coordination alone, 2,000 pages each recording a document:
//     Trawler's job lease and lanes fed from memory, against FOR UPDATE
//     SKIP LOCKED with a lease per page and River (tuned and with its
//     defaults), each twice, the better run counting; then how soon River
//     has a dead node's jobs worked again. See queuebench.go.
//
// Before exiting, the services are closed and the bench fails if any
// process they or the chromedp baseline started (found by an environment
// marker, and browsers by their command lines and process groups: Trawler
// gives them an environment of their own) is still running.
//
// Run it with `go run ./cmd/bench` (or `make bench`).
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chromedp/cdproto/browser"

	"github.com/trawler-dev/trawler/wire"
)

const (
	createRounds   = 15   // per pool state
	roundtripCalls = 1000 // per side
	screenshotsN   = 10   // per side
	rssSessions    = 5
	leakCycles     = 200
	poolSize       = 8
)

// figure prints one result line on stdout.
func figure(name string, value float64, unit string) {
	prec := 2
	switch {
	case unit == "x", unit == "score", unit == "share":
		prec = 3
	case unit == "browsers" || unit == "dirs" || unit == "processes":
		prec = 0
	case unit == "us":
		prec = 1
	}
	v := strconv.FormatFloat(value, 'f', prec, 64)
	fmt.Printf("bench: %s %s %s\n", name, v, unit)
	record(name, v, unit)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

func main() {
	start := time.Now()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// A safety net well above a whole run's length, on a 2-core machine
	// that other work shares too (the crawl, search and cluster phases
	// take the most).
	ctx, cancel := context.WithTimeout(ctx, time.Hour)
	b := &bench{log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	flag.StringVar(&b.only, "only", "", "run only these phases, comma-separated: create, memory, cdp, leaks, transform, quality, scrape, stealth, concurrent, rendercost, crawl, docker, profiles, liveview, recording, monitor, parse, search, model, changes, branding, audio, docs, egress, execute, cluster, queue")
	flag.IntVar(&b.concurrentPool, "concurrent-pool", concurrentPool, "pool size of the concurrent phase")
	flag.StringVar(&b.crawlProfile, "crawl-cpuprofile", "", "write a CPU profile of the timed crawl (the crawl phase's first) to this file")
	page := flag.String("page", "", "after the run, write its figures and the machine to this Markdown file (make bench: docs/performance.md)")
	flag.Parse()
	load := loadAvg()
	err := b.run(ctx)
	cerr := b.cleanup()
	cancel()
	stop()
	if err == nil {
		err = cerr
	} else if cerr != nil {
		logf("cleanup: %v", cerr)
	}
	if *page != "" {
		// A run that failed writes what it measured too, with why it
		// stopped: the page is always the last run's.
		phases := "all"
		if b.only != "" {
			phases = b.only
		}
		if perr := writePage(*page, describeMachine(b.chromium), start, time.Since(start), load, phases, err); perr != nil {
			logf("writing %s: %v", *page, perr)
			err = cmp.Or(err, perr)
		} else {
			logf("wrote %s", *page)
		}
	}
	if err != nil {
		logf("FAILED after %s: %v", time.Since(start).Round(time.Second), err)
		os.Exit(1)
	}
	logf("done in %s", time.Since(start).Round(time.Second))
}

type bench struct {
	log       *slog.Logger
	only      string
	tmp       string
	instances []*instance
	before    procCounts
	site      *httptest.Server // the local test site of the scrape phases
	// concurrentPool is the pool size of the concurrent phase.
	concurrentPool int
	// crawlProfile, when set, is where the timed crawl's CPU profile goes.
	crawlProfile string
	// chromium is the browser the services run, for the page's machine.
	chromium string
}

// procCounts are machine-wide counts, for the before/after check.
type procCounts struct {
	chromium, crashpad int
}

func countProcs() procCounts {
	var c procCounts
	for _, p := range listProcs() {
		if !p.isChromium() {
			continue
		}
		if p.state == "Z" {
			continue
		}
		c.chromium++ // what `pgrep -f chromium` counts, crashpad handlers included
		if strings.Contains(p.comm, "crashpad") {
			c.crashpad++
		}
	}
	return c
}

func (b *bench) start(ctx context.Context, name string, warm int) (*instance, error) {
	return b.startWith(ctx, name, warm, poolSize, nil)
}

// startWith starts a service with its own pool size and extra environment.
func (b *bench) startWith(ctx context.Context, name string, warm, size int, extra map[string]string) (*instance, error) {
	in, err := startInstance(ctx, name, filepath.Join(b.tmp, name), warm, size, extra, b.log)
	if err != nil {
		return nil, err
	}
	b.instances = append(b.instances, in)
	if err := in.waitSettled(ctx, warm); err != nil {
		return nil, err
	}
	return in, nil
}

func (b *bench) run(ctx context.Context) error {
	b.before = countProcs()
	logf("before: %d chromium processes on the machine (as pgrep -f chromium counts, zombies aside; %d crashpad handlers)",
		b.before.chromium, b.before.crashpad)
	var err error
	if b.tmp, err = os.MkdirTemp("", "trawler-bench-"); err != nil {
		return err
	}
	if err := os.Setenv(markerEnv, b.tmp); err != nil {
		return err
	}
	warm, err := b.start(ctx, "warm", 1)
	if err != nil {
		return err
	}
	b.chromium = warm.svc.Config.ChromiumPath
	phases := []struct {
		name string
		run  func(context.Context, *instance) error
	}{
		{"create", b.createLatency},
		{"memory", b.idleMemory},
		{"cdp", b.cdpOverhead},
		{"leaks", b.leaks},
		{"transform", b.transformThroughput},
		{"quality", b.mainContentQuality},
		{"scrape", b.scrapeLatency},
		{"stealth", b.stealthPhase},
		{"concurrent", b.concurrentScrape},
		{"rendercost", b.renderCost},
		{"crawl", b.crawlThroughput},
		{"docker", b.dockerRuntime},
		{"profiles", b.profileSaveRestore},
		{"liveview", b.liveView},
		{"recording", b.recordingCost},
		{"monitor", b.monitorOverhead},
		{"parse", b.parseThroughput},
		{"search", b.searchPerformance},
		{"model", b.modelPerformance},
		{"changes", b.changeTrackingDiff},
		{"branding", b.brandingTime},
		{"audio", b.audioExtract},
		{"docs", b.docsSearch},
		{"egress", b.egressOverhead},
		{"execute", b.executeNode},
		{"cluster", b.clusterPerformance},
		{"queue", b.queueComparison},
	}
	for _, ph := range phases {
		if !b.selected(ph.name) {
			continue
		}
		t, load := time.Now(), loadAvg()
		setPhase(ph.name)
		if err := ph.run(ctx, warm); err != nil {
			return fmt.Errorf("%s: %w", ph.name, err)
		}
		logf("phase %s took %s (1-minute load average %s before, %s after)", ph.name, time.Since(t).Round(time.Second), load, loadAvg())
	}
	return nil
}

// loadAvg is the machine's 1-minute load average, to tell a busy machine
// from a slow service in the log.
func loadAvg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// selected reports whether phase is to run (-only, for quick iterations).
func (b *bench) selected(phase string) bool {
	return b.only == "" || slices.Contains(strings.Split(b.only, ","), phase)
}

// cleanup closes every service, checks that none of their Chromium
// processes survived and removes the data directories.
func (b *bench) cleanup() error {
	for _, in := range b.instances {
		in.Close()
	}
	if b.site != nil {
		b.site.Close()
	}
	if b.tmp == "" {
		return nil
	}
	var left []proc
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		left = markedProcs(b.tmp)
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	after := countProcs()
	logf("after: %d chromium processes on the machine (before: %d), %d crashpad handlers (before: %d)",
		after.chromium, b.before.chromium, after.crashpad, b.before.crashpad)
	if after.chromium != b.before.chromium {
		logf("note: the machine-wide counts also move with Chromiums that other programs start or stop; the check below counts only this run's")
	}
	var errs []error
	if len(left) > 0 {
		for _, p := range left {
			logf("left behind: pid %d %s", p.pid, wire.Truncate(p.joined(), 160))
		}
		errs = append(errs, fmt.Errorf("%d processes started by the bench's services are still running after Close", len(left)))
	} else {
		logf("after Close: no process started by this run is left (checked by the %s marker in /proc/*/environ and the browsers' command lines)", markerEnv)
	}
	if err := os.RemoveAll(b.tmp); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func countLive(groups map[int][]proc) int {
	n := 0
	for _, ps := range groups {
		n += len(ps)
	}
	return n
}

// createLatency times POST /v2/browser over HTTP against a pool with one
// warm browser ready and against a pool with none (a cold Chromium start
// inside the request). Warm and cold samples alternate; before each, both
// pools are left to settle (the warm pool refilled, the last session's
// browser gone) so a sample never competes with a browser starting or dying.
// Each session is deleted right after.
func (b *bench) createLatency(ctx context.Context, warm *instance) error {
	cold, err := b.start(ctx, "cold", 0)
	if err != nil {
		return err
	}
	defer cold.Close()
	samples, ready, err := createSamples(ctx, []pool{{warm, 1}, {cold, 0}})
	if err != nil {
		return err
	}
	wp, cp := median(samples[0]), median(samples[1])
	logf("create warm ms: %s", msList(samples[0]))
	logf("create cold ms: %s", msList(samples[1]))
	figure("session_create_warm_p50_ms", ms(wp), "ms")
	figure("session_create_cold_p50_ms", ms(cp), "ms")
	figure("session_create_cold_over_warm", float64(cp)/float64(wp), "x")
	// Until the session's browser answers a client: what a user waits for
	// before the first command of a script runs.
	figure("session_create_warm_ready_p50_ms", ms(median(ready[0])), "ms")
	figure("session_create_cold_ready_p50_ms", ms(median(ready[1])), "ms")
	return nil
}

// pool is a service and the number of warm browsers it keeps.
type pool struct {
	in   *instance
	warm int
}

// createSamples times POST /v2/browser on each pool in turn, createRounds
// rounds after one warm-up round, and until the new session's browser
// answers Browser.getVersion through its cdpUrl (ready). Before each sample
// every pool must have settled (refilled, the last session's browser gone),
// so that a sample never competes with a browser starting or dying. Each
// session is deleted right after its sample.
func createSamples(ctx context.Context, pools []pool) (created, ready [][]time.Duration, err error) {
	created, ready = make([][]time.Duration, len(pools)), make([][]time.Duration, len(pools))
	sample := func(in *instance) (time.Duration, time.Duration, error) {
		for _, p := range pools {
			if err := p.in.waitSettled(ctx, p.warm); err != nil {
				return 0, 0, err
			}
		}
		time.Sleep(300 * time.Millisecond) // let a fresh warm browser go quiet
		t := time.Now()
		c, err := in.create(ctx)
		el := time.Since(t)
		if err != nil {
			return 0, 0, err
		}
		conn, err := dialWS(ctx, c.CDPURL)
		if err == nil {
			_, err = conn.call(browser.GetVersion.Method, nil)
			conn.Close()
		}
		answered := time.Since(t)
		if err != nil {
			return 0, 0, err
		}
		return el, answered, in.remove(ctx, c.ID)
	}
	for i := 0; i <= createRounds; i++ { // round 0 is a warm-up
		for j, p := range pools {
			d, r, err := sample(p.in)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", p.in.name, err)
			}
			if i > 0 {
				created[j] = append(created[j], d)
				ready[j] = append(ready[j], r)
			}
		}
	}
	return created, ready, nil
}

// idleMemory measures what one idle session costs: the PSS of its browser's
// process group, plus the growth of this (the service's) process's RSS per
// session. PSS rather than RSS because Chromium's processes share most of
// their code pages; RSS would count those once per process.
func (b *bench) idleMemory(ctx context.Context, in *instance) error {
	if err := in.waitSettled(ctx, 1); err != nil {
		return err
	}
	settled := in.svc.Pool.Stats()
	runtime.GC()
	debug.FreeOSMemory()
	base, err := rssKB(os.Getpid())
	if err != nil {
		return err
	}
	var ids []string
	defer func() {
		for _, id := range ids {
			in.remove(context.Background(), id)
		}
	}()
	for i := 0; i < rssSessions; i++ {
		c, err := in.create(ctx)
		if err != nil {
			return err
		}
		ids = append(ids, c.ID)
	}
	if err := in.waitRefilled(ctx, settled, rssSessions); err != nil {
		return err
	}
	time.Sleep(3 * time.Second) // let the new browsers finish their start-up work
	var pss, rss int64
	for _, id := range ids {
		s, err := in.session(ctx, id)
		if err != nil {
			return err
		}
		pid, _, err := browserPID(in.browsersDir(), s.BrowserID())
		if err != nil {
			return err
		}
		p, r, parts, err := groupMemory(pid)
		if err != nil {
			return err
		}
		logf("idle session %s: browser pid %d, %d processes, PSS %.1f MB, RSS %.1f MB", id[:8], pid, len(parts), kbMB(p), kbMB(r))
		if id == ids[0] {
			logf("  PSS by process (MB): %s", strings.Join(parts, " "))
		}
		pss += p
		rss += r
	}
	runtime.GC()
	debug.FreeOSMemory()
	after, err := rssKB(os.Getpid())
	if err != nil {
		return err
	}
	perPSS := kbMB(pss) / rssSessions
	growth := kbMB(after-base) / rssSessions
	logf("service process RSS %.1f MB before, %.1f MB with %d idle sessions", kbMB(base), kbMB(after), rssSessions)
	figure("session_idle_browser_pss_mb", perPSS, "MB")
	figure("session_idle_browser_rss_mb", kbMB(rss)/rssSessions, "MB")
	figure("session_idle_service_rss_growth_mb", growth, "MB")
	figure("session_idle_rss_mb", perPSS+growth, "MB")
	return nil
}

// cdpOverhead compares the proxy with a direct connection to the same page
// target of the same browser, with the same client.
func (b *bench) cdpOverhead(ctx context.Context, in *instance) error {
	c, err := in.create(ctx)
	if err != nil {
		return err
	}
	defer in.remove(context.Background(), c.ID)
	proxiedURL, err := proxiedPage(ctx, in, c)
	if err != nil {
		return err
	}
	directURL, stop, err := plainChromium(ctx, in.svc.Config.ChromiumPath, filepath.Join(b.tmp, "plain-chromium"))
	if err != nil {
		return err
	}
	defer stop()
	logf("direct  %s", directURL)
	logf("proxied %s", wire.Truncate(proxiedURL, strings.Index(proxiedURL, "?")+8))
	direct, err := dialWS(ctx, directURL)
	if err != nil {
		return err
	}
	defer direct.Close()
	proxied, err := dialWS(ctx, proxiedURL)
	if err != nil {
		return err
	}
	defer proxied.Close()

	d, p, err := roundtrips(ctx, direct, proxied, roundtripCalls)
	if err != nil {
		return err
	}
	dp, pp := median(d), median(p)
	logf("round trip direct  p50 %.1f p90 %.1f p99 %.1f us", us(dp), us(pct(d, 0.9)), us(pct(d, 0.99)))
	logf("round trip proxied p50 %.1f p90 %.1f p99 %.1f us", us(pp), us(pct(p, 0.9)), us(pct(p, 0.99)))
	figure("cdp_roundtrip_direct_p50_us", us(dp), "us")
	figure("cdp_roundtrip_proxy_p50_us", us(pp), "us")
	figure("cdp_roundtrip_direct_mean_us", us(mean(d)), "us")
	figure("cdp_roundtrip_proxy_mean_us", us(mean(p)), "us")
	// The ratio is of medians: the means carry the odd GC pause or
	// scheduler hiccup of a 2-core machine, which says little about the proxy.
	figure("cdp_roundtrip_proxy_over_direct", float64(pp)/float64(dp), "x")
	// The same, block by block: the median of the ratios of the medians of
	// each pair of blocks, which ran one after the other. The load of a
	// 2-core machine drifts over the run (the direct p50 moves by a fifth
	// from one run to the next), and pairing keeps that drift out.
	var paired []float64
	for i := 0; i+roundtripBlock <= len(d) && i+roundtripBlock <= len(p); i += roundtripBlock {
		paired = append(paired, float64(median(p[i:i+roundtripBlock]))/float64(median(d[i:i+roundtripBlock])))
	}
	figure("cdp_roundtrip_proxy_over_direct_paired", median(paired), "x")

	height, err := preparePage(direct, proxied)
	if err != nil {
		return err
	}
	logf("screenshot page is %d CSS px tall; capturing 1280x15000", height)
	dt, pt, dMed, pMed, size, err := screenshots(ctx, direct, proxied, screenshotsN)
	if err != nil {
		return err
	}
	// Throughput is taken from the median time per screenshot rather than
	// the total: the browser's rendering time, which both sides share, swings
	// by a third from one screenshot to the next on a busy 2-core machine,
	// and a single slow capture would otherwise decide the ratio.
	dRate := 1 / dMed.Seconds()
	pRate := 1 / pMed.Seconds()
	logf("screenshots per second from totals: direct %.3f, proxied %.3f, ratio %.3f",
		screenshotsN/dt.Seconds(), screenshotsN/pt.Seconds(), dt.Seconds()/pt.Seconds())
	figure("cdp_screenshot_direct_per_s", dRate, "screenshots/s")
	figure("cdp_screenshot_proxy_per_s", pRate, "screenshots/s")
	figure("cdp_screenshot_mb", float64(size)/(1<<20), "MB")
	figure("cdp_screenshot_throughput_proxy_over_direct", pRate/dRate, "x")

	// Diagnostic: the relay cost of a message as big as a screenshot's.
	b64 := (size + 2) / 3 * 4
	ld, lp, err := largeReplies(ctx, direct, proxied, b64, 8)
	if err != nil {
		return err
	}
	logf("%.1f MB reply: direct p50 %.1f ms, proxied p50 %.1f ms (proxy adds %.1f ms)",
		float64(b64)/(1<<20), ms(median(ld)), ms(median(lp)), ms(median(lp)-median(ld)))
	return nil
}

// leaks creates and deletes sessions back to back, then counts the browsers
// and user-data directories left beyond the warm pool's.
func (b *bench) leaks(ctx context.Context, in *instance) error {
	t := time.Now()
	for i := 0; i < leakCycles; i++ {
		c, err := in.create(ctx)
		if err != nil {
			return fmt.Errorf("cycle %d: %w", i, err)
		}
		if err := in.remove(ctx, c.ID); err != nil {
			return fmt.Errorf("cycle %d: %w", i, err)
		}
	}
	logf("%d create/delete cycles in %s (%.0f ms each)", leakCycles, time.Since(t).Round(time.Millisecond),
		ms(time.Since(t))/leakCycles)
	if err := in.waitSettled(ctx, 1); err != nil {
		return err
	}
	time.Sleep(2 * time.Second)
	warm := in.svc.Pool.Stats().Idle
	groups := browserProcs(in.dataDir)
	procs := countLive(groups)
	entries, err := os.ReadDir(in.browsersDir())
	if err != nil {
		return err
	}
	logf("after %d cycles: %d Chromium processes in %d browsers (%d warm), %d user-data directories",
		leakCycles, procs, len(groups), warm, len(entries))
	for pgid, ps := range groups {
		if d := groupDir(ps, in.browsersDir()); d != "" {
			if _, err := os.Stat(d); err != nil {
				logf("browser (process group %d) runs on a removed directory %s", pgid, d)
			}
		}
		if len(groups) > warm {
			for _, p := range ps {
				logf("browser process group %d: pid %d ppid %d state %s: %s", pgid, p.pid, p.ppid, p.state, wire.Truncate(p.joined(), 160))
			}
		}
	}
	// Processes this run started that are in no browser's user-data
	// directory: Chromium's crashpad handlers leave the process group.
	inDirs := map[int]bool{}
	for _, ps := range groups {
		for _, p := range ps {
			inDirs[p.pid] = true
		}
	}
	var others []string
	for _, p := range markedProcs(b.tmp) {
		if !inDirs[p.pid] {
			others = append(others, fmt.Sprintf("%d:%s", p.pid, p.comm))
		}
	}
	logf("other processes of this run (outside any user-data directory): %d %v", len(others), others)
	// The warm browsers are the groups whose user-data directory still
	// exists (the runtime removes a browser's directory once it has exited);
	// every other process of the data directory is a leaked one.
	leakedProcs, kept := procs, 0
	for _, ps := range groups {
		if kept < warm && len(ps) > 0 {
			if _, err := os.Stat(groupDir(ps, in.browsersDir())); err == nil {
				leakedProcs -= len(ps)
				kept++
			}
		}
	}
	figure("leaked_browsers_after_200_cycles", float64(len(groups)-warm), "browsers")
	figure("leaked_chromium_processes_after_200_cycles", float64(leakedProcs), "processes")
	figure("leaked_user_data_dirs_after_200_cycles", float64(len(entries)-warm), "dirs")
	return nil
}

// median is the middle value, or the mean of the two middle values.
func median[T time.Duration | float64](ds []T) T {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// pct is the nearest-rank percentile q of ds.
func pct(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

func mean(ds []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t / time.Duration(max(1, len(ds)))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
func kbMB(kb int64) float64      { return float64(kb) / 1024 }
func msList(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprintf("%.0f", ms(d))
	}
	return strings.Join(parts, " ")
}
