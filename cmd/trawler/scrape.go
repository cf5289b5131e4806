package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/config"
	"github.com/trawler-dev/trawler/netguard"
	"github.com/trawler-dev/trawler/scrape"
	"github.com/trawler-dev/trawler/store"
)

type formatList []string

func (f *formatList) String() string { return strings.Join(*f, ",") }
func (f *formatList) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		switch s {
		case "markdown", "html", "rawHtml", "links", "images", "screenshot", "json":
			*f = append(*f, s)
		default:
			return fmt.Errorf("unknown format %q (markdown, html, rawHtml, links, images, screenshot, json)", s)
		}
	}
	return nil
}

// scrapeCmd scrapes one URL without a server: it starts one browser of its
// own pool, prints the result and stops.
func scrapeCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("scrape", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var formats formatList
	fs.Var(&formats, "format", "output: markdown (default), html, rawHtml, links, images, screenshot or json (the whole document); repeat for several, printed as JSON")
	full := fs.Bool("full-page", false, "keep the whole page (onlyMainContent false)")
	timeout := fs.Duration("timeout", 60*time.Second, "give up after this long")
	waitFor := fs.Duration("wait-for", 0, "wait this long after the page settles")
	mobile := fs.Bool("mobile", false, "emulate a phone")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: trawler scrape [flags] URL\n\nScrapes URL with a local Chromium and prints the result. TRAWLER_* settings apply\n(TRAWLER_ALLOW_PRIVATE_NETWORKS=true to reach local addresses).\n\nflags:")
		fs.PrintDefaults()
	}
	target, err := oneArgument(fs, args, "URL")
	if err != nil {
		return err
	}
	if !strings.Contains(target, "://") {
		target = "http://" + target
	}
	if len(formats) == 0 {
		formats = formatList{"markdown"}
	}

	env := func(k string) string {
		if k == "TRAWLER_WARM_BROWSERS" {
			return "0"
		}
		return os.Getenv(k)
	}
	dataDir := os.Getenv("TRAWLER_DATA_DIR")
	if dataDir == "" {
		d, err := os.MkdirTemp("", "trawler-scrape")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dataDir = d
	}
	cfg, err := config.FromEnv(func(k string) string {
		if k == "TRAWLER_DATA_DIR" {
			return dataDir
		}
		return env(k)
	})
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(cfg.DataDir, "trawler.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	rt := &browsers.ProcessRuntime{Chromium: cfg.ChromiumPath, Dir: filepath.Join(cfg.DataDir, "browsers"), ExtraFlags: cfg.ChromiumFlags,
		StartTimeout: cfg.BrowserStartTimeout, Log: log}
	pool := browsers.NewPool(rt, browsers.PoolOptions{Size: 1, Warm: 0, QueueWait: *timeout, Log: log})
	defer pool.Close()
	svc := &scrape.Service{Pool: pool, Store: st, Log: log, Guard: &netguard.Guard{AllowPrivate: cfg.AllowPrivateNetworks}}

	o := scrape.DefaultOptions()
	o.Formats = nil
	asJSON := len(formats) > 1
	for _, f := range formats {
		if f == "json" {
			asJSON = true
			f = "markdown"
		}
		if !o.Has(f) {
			o.Formats = append(o.Formats, scrape.Format{Type: f, FullPage: f == "screenshot"})
		}
	}
	o.OnlyMainContent = !*full
	o.Timeout, o.WaitFor, o.Mobile = *timeout, *waitFor, *mobile
	o.StoreInCache, o.MaxAge = false, 0
	doc, err := svc.Scrape(ctx, scrape.Request{Team: config.LocalTeam, URL: target, Options: o})
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	switch formats[0] {
	case "markdown":
		fmt.Fprintln(stdout, doc.Markdown)
	case "html":
		fmt.Fprintln(stdout, doc.HTML)
	case "rawHtml":
		fmt.Fprintln(stdout, doc.RawHTML)
	case "links":
		fmt.Fprintln(stdout, strings.Join(doc.Links, "\n"))
	case "images":
		fmt.Fprintln(stdout, strings.Join(doc.Images, "\n"))
	case "screenshot":
		fmt.Fprintln(stdout, doc.Screenshot)
	}
	if doc.Warning != "" {
		fmt.Fprintln(stderr, "warning:", doc.Warning)
	}
	return nil
}
