package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
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
	"github.com/trawler-dev/trawler/service"
)

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// crawlCmd crawls a site without a server: it runs the service in this
// process, writes one Markdown file per page and an index.jsonl under the
// output directory, and shows progress on stderr.
func crawlCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("crawl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	limit := fs.Int("limit", 100, "crawl at most this many pages")
	out := fs.String("out", "crawl-out", "directory to write the pages and index.jsonl into")
	depth := fs.Int("max-depth", -1, "follow links at most this many hops from the start (-1: no bound)")
	sitemap := fs.String("sitemap", "include", "skip, include or only")
	entire := fs.Bool("entire-domain", false, "also follow links outside the start URL's path")
	full := fs.Bool("full-page", false, "keep the whole page (onlyMainContent false)")
	var include, exclude stringList
	fs.Var(&include, "include", "only crawl URL paths matching this regular expression (repeatable)")
	fs.Var(&exclude, "exclude", "skip URL paths matching this regular expression (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: trawler crawl [flags] URL\n\nCrawls URL with local Chromium browsers and writes one Markdown file per page plus\nindex.jsonl. TRAWLER_* settings apply (TRAWLER_ALLOW_PRIVATE_NETWORKS=true to reach local addresses).\n\nflags:")
		fs.PrintDefaults()
	}
	target, err := oneArgument(fs, args, "URL")
	if err != nil {
		return err
	}
	if !strings.Contains(target, "://") {
		target = "http://" + target
	}
	if *limit < 1 {
		return errors.New("--limit must be at least 1")
	}
	switch *sitemap {
	case "skip", "include", "only":
	default:
		return fmt.Errorf("--sitemap must be skip, include or only, got %q", *sitemap)
	}
	dataDir := os.Getenv("TRAWLER_DATA_DIR")
	if dataDir == "" {
		d, err := os.MkdirTemp("", "trawler-crawl")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dataDir = d
	}
	cfg, err := config.FromEnv(func(k string) string {
		switch k {
		case "TRAWLER_DATA_DIR":
			return dataDir
		case "TRAWLER_API_KEYS":
			return "" // one local team
		}
		return os.Getenv(k)
	})
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	svc, err := service.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer svc.Close()

	spec := &crawl.Spec{Kind: crawl.KindCrawl, URL: target, Crawl: crawl.DefaultCrawlOptions(), Scrape: scrape.DefaultOptions()}
	spec.Crawl.Limit, spec.Crawl.Sitemap, spec.Crawl.CrawlEntireDomain = *limit, *sitemap, *entire
	spec.Crawl.IncludePaths, spec.Crawl.ExcludePaths = include, exclude
	if *depth >= 0 {
		spec.Crawl.MaxDiscoveryDepth = depth
	}
	spec.Scrape.OnlyMainContent = !*full
	id, err := svc.Crawler.Create(ctx, config.LocalTeam, spec, "")
	if err != nil {
		return err
	}
	events, unwatch, _ := svc.Crawler.Watch(config.LocalTeam, crawl.KindCrawl, id)
	defer unwatch()

	index, err := os.Create(filepath.Join(*out, "index.jsonl"))
	if err != nil {
		return err
	}
	defer index.Close()
	iw := bufio.NewWriter(index)
	defer iw.Flush()
	names := map[string]bool{}
	write := func(raw json.RawMessage) error {
		var doc scrape.Document
		if err := json.Unmarshal(raw, &doc); err != nil {
			return err
		}
		u, _ := doc.Metadata["url"].(string)
		name := fileFor(u, names)
		if err := os.WriteFile(filepath.Join(*out, name), []byte(doc.Markdown), 0o644); err != nil {
			return err
		}
		line, _ := json.Marshal(map[string]any{"url": u, "file": name, "title": doc.Metadata["title"],
			"statusCode": doc.Metadata["statusCode"], "engine": doc.Metadata["engine"]})
		iw.Write(append(line, '\n'))
		return nil
	}
	started := time.Now()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	written := 0
	progress := func(final bool) {
		p, _ := svc.Crawler.Progress(id)
		rate := float64(written) / max(time.Since(started).Seconds(), 0.001)
		total := written + p.Queued + p.InFlight
		bar := progressBar(written, total, 30)
		end := "\r"
		if final {
			end = "\n"
		}
		fmt.Fprintf(stderr, "%s %d done, %d queued, %d failed, %.1f pages/s   %s", bar, written, p.Queued+p.InFlight, p.Failed, rate, end)
	}
	// Documents scraped before the watch began come from the status.
	st, err := svc.Crawler.Status(ctx, config.LocalTeam, crawl.KindCrawl, id, 0, 1000)
	if err != nil {
		return err
	}
	for _, d := range st.Data {
		if err := write(d); err != nil {
			return err
		}
		written++
	}
	seen := int64(written)
loop:
	for events != nil {
		select {
		case <-ctx.Done():
			svc.Crawler.Cancel(context.Background(), config.LocalTeam, crawl.KindCrawl, id)
			progress(true)
			return errors.New("interrupted; the pages so far are written")
		case <-tick.C:
			progress(false)
		case ev, ok := <-events:
			if !ok || ev.Type != "document" {
				break loop
			}
			if ev.Seq <= seen {
				continue
			}
			if err := write(ev.Doc); err != nil {
				return err
			}
			written++
		}
	}
	// Whatever the live feed missed (it drops a slow reader) is in the store.
	for {
		st, err = svc.Crawler.Status(context.Background(), config.LocalTeam, crawl.KindCrawl, id, written, 1000)
		if err != nil {
			return err
		}
		for _, d := range st.Data {
			if err := write(d); err != nil {
				return err
			}
			written++
		}
		if st.Status != crawl.StatusScraping && !st.More {
			break
		}
		if len(st.Data) == 0 {
			time.Sleep(200 * time.Millisecond)
		}
	}
	progress(true)
	fmt.Fprintf(stdout, "crawl %s: %d pages written to %s (index.jsonl lists them)\n", st.Status, written, *out)
	if st.Warning != "" {
		fmt.Fprintln(stderr, "warning:", st.Warning)
	}
	return nil
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
