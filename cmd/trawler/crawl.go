package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/trawler-dev/trawler/config"
	"github.com/trawler-dev/trawler/crawl"
	"github.com/trawler-dev/trawler/scrape"
)

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// crawlFlags are the options of trawler crawl.
type crawlFlags struct {
	limit            int
	out              string
	depth            int
	sitemap          string
	entire, full     bool
	include, exclude stringList
}

// crawlCmd crawls a site without a server: it runs the service in this
// process, writes one Markdown file per page and an index.jsonl under the
// output directory, and shows progress on stderr.
func crawlCmd(args []string, stdout, stderr io.Writer) error {
	target, f, err := parseCrawlFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	svc, stop, err := localService(ctx, "crawl", stderr, map[string]string{"TRAWLER_API_KEYS": ""}) // one local team
	if err != nil {
		return err
	}
	defer stop()
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return err
	}
	id, err := svc.Crawler.Create(ctx, config.LocalTeam, f.spec(target), "")
	if err != nil {
		return err
	}
	events, unwatch, _ := svc.Crawler.Watch(ctx, config.LocalTeam, crawl.KindCrawl, id)
	defer unwatch()
	out, err := createCrawlOutput(f.out)
	if err != nil {
		return err
	}
	defer out.close()
	run := &crawlRun{crawler: svc.Crawler, id: id, out: out, stderr: stderr, started: time.Now()}
	st, err := run.follow(ctx, events)
	if err != nil {
		return err
	}
	run.finishProgress()
	fmt.Fprintf(stdout, "crawl %s: %d pages written to %s (index.jsonl lists them)\n", st.Status, out.written, f.out)
	if st.Warning != "" {
		fmt.Fprintln(stderr, "warning:", st.Warning)
	}
	return nil
}

// parseCrawlFlags reads the command line of trawler crawl: the start URL
// and its flags.
func parseCrawlFlags(args []string, stderr io.Writer) (string, *crawlFlags, error) {
	f := &crawlFlags{}
	fs := flag.NewFlagSet("crawl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&f.limit, "limit", 100, "crawl at most this many pages")
	fs.StringVar(&f.out, "out", "crawl-out", "directory to write the pages and index.jsonl into")
	fs.IntVar(&f.depth, "max-depth", -1, "follow links at most this many hops from the start (-1: no bound)")
	fs.StringVar(&f.sitemap, "sitemap", "include", "skip, include or only")
	fs.BoolVar(&f.entire, "entire-domain", false, "also follow links outside the start URL's path")
	fs.BoolVar(&f.full, "full-page", false, "keep the whole page (onlyMainContent false)")
	fs.Var(&f.include, "include", "only crawl URL paths matching this regular expression (repeatable)")
	fs.Var(&f.exclude, "exclude", "skip URL paths matching this regular expression (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: trawler crawl [flags] URL\n\nCrawls URL with local Chromium browsers and writes one Markdown file per page plus\nindex.jsonl. TRAWLER_* settings apply (TRAWLER_ALLOW_PRIVATE_NETWORKS=true to reach local addresses).\n\nflags:")
		fs.PrintDefaults()
	}
	target, err := oneArgument(fs, args, "URL")
	if err != nil {
		return "", nil, err
	}
	if !strings.Contains(target, "://") {
		target = "http://" + target
	}
	if f.limit < 1 {
		return "", nil, errors.New("--limit must be at least 1")
	}
	switch f.sitemap {
	case "skip", "include", "only":
	default:
		return "", nil, fmt.Errorf("--sitemap must be skip, include or only, got %q", f.sitemap)
	}
	return target, f, nil
}

// spec is the crawl of target the flags ask for.
func (f *crawlFlags) spec(target string) *crawl.Spec {
	spec := &crawl.Spec{Kind: crawl.KindCrawl, URL: target, Crawl: crawl.DefaultCrawlOptions(), Scrape: scrape.DefaultOptions()}
	spec.Crawl.Limit, spec.Crawl.Sitemap, spec.Crawl.CrawlEntireDomain = f.limit, f.sitemap, f.entire
	spec.Crawl.IncludePaths, spec.Crawl.ExcludePaths = f.include, f.exclude
	if f.depth >= 0 {
		spec.Crawl.MaxDiscoveryDepth = &f.depth
	}
	spec.Scrape.OnlyMainContent = !f.full
	return spec
}

// crawlOutput writes a crawl's pages: one Markdown file each, and a line
// per page in index.jsonl.
type crawlOutput struct {
	dir     string
	index   *os.File
	w       *bufio.Writer
	names   map[string]bool // the file names taken
	written int
}

func createCrawlOutput(dir string) (*crawlOutput, error) {
	index, err := os.Create(filepath.Join(dir, "index.jsonl"))
	if err != nil {
		return nil, err
	}
	return &crawlOutput{dir: dir, index: index, w: bufio.NewWriter(index), names: map[string]bool{}}, nil
}

// write writes one document (a scrape.Document in JSON) and indexes it.
func (o *crawlOutput) write(raw json.RawMessage) error {
	var doc scrape.Document
	if err := json.Unmarshal(raw, &doc); err != nil {
		return err
	}
	u, _ := doc.Metadata["url"].(string)
	name := fileFor(u, o.names)
	if err := os.WriteFile(filepath.Join(o.dir, name), []byte(doc.Markdown), 0o644); err != nil {
		return err
	}
	line, _ := json.Marshal(map[string]any{"url": u, "file": name, "title": doc.Metadata["title"],
		"statusCode": doc.Metadata["statusCode"], "engine": doc.Metadata["engine"]})
	o.w.Write(append(line, '\n'))
	o.written++
	return nil
}

func (o *crawlOutput) writeAll(docs []json.RawMessage) error {
	for _, d := range docs {
		if err := o.write(d); err != nil {
			return err
		}
	}
	return nil
}

// close flushes the index and closes it.
func (o *crawlOutput) close() {
	o.w.Flush()
	o.index.Close()
}

// crawlRun follows one crawl of the local service to its end, writing its
// pages as they come and showing its progress.
type crawlRun struct {
	crawler *crawl.Service
	id      string
	out     *crawlOutput
	stderr  io.Writer
	started time.Time
}

// follow writes the crawl's pages until it ends and returns its final
// status. Interrupted (ctx), it cancels the crawl.
func (r *crawlRun) follow(ctx context.Context, events <-chan crawl.Event) (*crawl.Status, error) {
	// Documents scraped before the watch began come from the status.
	st, err := r.crawler.Status(ctx, config.LocalTeam, crawl.KindCrawl, r.id, 0, 1000)
	if err != nil {
		return nil, err
	}
	if err := r.out.writeAll(st.Data); err != nil {
		return nil, err
	}
	if err := r.watch(ctx, events, int64(r.out.written)); err != nil {
		return nil, err
	}
	return r.catchUp()
}

// watch writes the documents of the live feed past seen until the feed
// ends, showing progress meanwhile.
func (r *crawlRun) watch(ctx context.Context, events <-chan crawl.Event, seen int64) error {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for events != nil {
		select {
		case <-ctx.Done():
			r.crawler.Cancel(context.Background(), config.LocalTeam, crawl.KindCrawl, r.id)
			r.finishProgress()
			return errors.New("interrupted; the pages so far are written")
		case <-tick.C:
			r.showProgress()
		case ev, ok := <-events:
			if !ok || ev.Type != "document" {
				return nil
			}
			if ev.Seq <= seen {
				continue
			}
			if err := r.out.write(ev.Doc); err != nil {
				return err
			}
		}
	}
	return nil
}

// catchUp writes whatever the live feed missed (it drops a slow reader)
// from the store, until the crawl has ended with every page written.
func (r *crawlRun) catchUp() (*crawl.Status, error) {
	for {
		st, err := r.crawler.Status(context.Background(), config.LocalTeam, crawl.KindCrawl, r.id, r.out.written, 1000)
		if err != nil {
			return nil, err
		}
		if err := r.out.writeAll(st.Data); err != nil {
			return nil, err
		}
		if st.Status != crawl.StatusScraping && !st.More {
			return st, nil
		}
		if len(st.Data) == 0 {
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// showProgress redraws the progress line; finishProgress draws it a last
// time and ends it.
func (r *crawlRun) showProgress()   { r.progress("\r") }
func (r *crawlRun) finishProgress() { r.progress("\n") }

func (r *crawlRun) progress(end string) {
	p, _ := r.crawler.Progress(r.id)
	written := r.out.written
	rate := float64(written) / max(time.Since(r.started).Seconds(), 0.001)
	total := written + p.Queued + p.InFlight
	bar := progressBar(written, total, 30)
	fmt.Fprintf(r.stderr, "%s %d done, %d queued, %d failed, %.1f pages/s   %s", bar, written, p.Queued+p.InFlight, p.Failed, rate, end)
}

func progressBar(done, total, width int) string {
	if total <= 0 {
		total = 1
	}
	n := min(width, done*width/total)
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// fileFor names the Markdown file of a page: its host and path, made safe,
// unique within the crawl.
func fileFor(raw string, used map[string]bool) string {
	u, err := url.Parse(raw)
	name := "page"
	if err == nil {
		p := strings.Trim(u.Path, "/")
		if p == "" || strings.HasSuffix(u.Path, "/") {
			p = path.Join(p, "index")
		}
		p = strings.TrimSuffix(p, path.Ext(p))
		name = u.Host + "_" + strings.ReplaceAll(p, "/", "_")
		if u.RawQuery != "" {
			name += "_" + u.RawQuery
		}
	}
	name = strings.Trim(unsafeName.ReplaceAllString(name, "-"), "-")
	if len(name) > 150 {
		name = name[:150]
	}
	base, n := name, 1
	for used[name+".md"] {
		n++
		name = fmt.Sprintf("%s-%d", base, n)
	}
	used[name+".md"] = true
	return name + ".md"
}
