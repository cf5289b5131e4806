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

	"github.com/trawler-dev/trawler/config"
	"github.com/trawler-dev/trawler/parse"
	"github.com/trawler-dev/trawler/scrape"
)

// parseCmd converts one local document and prints it: the same Document
// POST /v2/parse returns, with no server, browser or database.
func parseCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("parse", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("format", "markdown", "output: markdown, html or json (the whole document with its metadata)")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: trawler parse [flags] FILE\n\nConverts FILE (%s) and prints it.\n\nflags:\n", strings.Join(parse.Extensions(), ", "))
		fs.PrintDefaults()
	}
	file, err := oneArgument(fs, args, "file")
	if err != nil {
		return err
	}
	if *format != "markdown" && *format != "html" && *format != "json" {
		return fmt.Errorf("--format must be markdown, html or json, got %q", *format)
	}
	info, err := os.Stat(file)
	if err != nil {
		return err
	}
	if info.Size() > parse.MaxUpload {
		return fmt.Errorf("%s is %d MB; parse reads files of up to %d MB", file, info.Size()>>20, parse.MaxUpload>>20)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	kind, err := parse.Identify(filepath.Base(file), data)
	if err != nil {
		return err
	}
	o := scrape.DefaultOptions()
	o.Formats = []scrape.Format{{Type: "markdown"}, {Type: "html"}}
	o.Timeout = *timeout
	// Nothing is stored: the service has no store here.
	o.ZeroDataRetention = true
	svc := &scrape.Service{Log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	doc, err := svc.Parse(context.Background(), config.LocalTeam, scrape.Upload{Name: filepath.Base(file), Format: kind, Data: data}, o)
	if err != nil {
		return err
	}
	switch *format {
	case "markdown":
		fmt.Fprint(stdout, doc.Markdown)
	case "html":
		fmt.Fprint(stdout, doc.HTML)
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	if doc.Warning != "" {
		fmt.Fprintln(stderr, "warning:", doc.Warning)
	}
	return nil
}
