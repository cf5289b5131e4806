package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/trawler-dev/trawler/config"
	"github.com/trawler-dev/trawler/model"
	"github.com/trawler-dev/trawler/scrape"
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

// scrapeFlags are the options of trawler scrape.
type scrapeFlags struct {
	formats formatList
	full    bool
	timeout time.Duration
	waitFor time.Duration
	mobile  bool
	// The model-backed formats: json extraction (schema and/or prompt),
	// summary and question.
	schema   string
	prompt   string
	summary  bool
	question string
}

// modelOutputs lists the model-backed outputs the flags ask for.
func (f *scrapeFlags) modelOutputs() []string {
	var out []string
	if f.schema != "" || f.prompt != "" {
		out = append(out, "extraction")
	}
	if f.summary {
		out = append(out, "summary")
	}
	if f.question != "" {
		out = append(out, "answer")
	}
	return out
}

// scrapeCmd scrapes one URL without a server: it runs the service in this
// process with no warm browser, prints the result and stops.
func scrapeCmd(args []string, stdout, stderr io.Writer) error {
	target, f, err := parseScrapeFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx := context.Background()
	// A scrape keeps nothing: its data directory is its own, so that it can
	// never reap the browsers of a server whose TRAWLER_DATA_DIR it shares.
	svc, stop, err := localService(ctx, "scrape", stderr, map[string]string{"TRAWLER_WARM_BROWSERS": "0", "TRAWLER_DATA_DIR": ""})
	if err != nil {
		return err
	}
	defer stop()
	if len(f.modelOutputs()) > 0 && svc.Model == nil {
		return fmt.Errorf("--schema, --prompt, --summary and --question need a language model: set TRAWLER_LLM_BASE_URL and TRAWLER_LLM_MODEL (or OPENAI_API_KEY) to an OpenAI-compatible server such as Ollama")
	}
	// The crawler's scrape service is the service's one scrape service.
	doc, err := svc.Crawler.Scrape.Scrape(ctx, scrape.Request{Team: config.LocalTeam, URL: target, Options: f.options()})
	if err != nil {
		return err
	}
	return f.print(stdout, stderr, doc)
}

// parseScrapeFlags reads the command line of trawler scrape: the URL and
// its flags.
func parseScrapeFlags(args []string, stderr io.Writer) (string, *scrapeFlags, error) {
	f := &scrapeFlags{}
	fs := flag.NewFlagSet("scrape", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var(&f.formats, "format", "output: markdown (default), html, rawHtml, links, images, screenshot or json (the whole document); repeat for several, printed as JSON")
	fs.BoolVar(&f.full, "full-page", false, "keep the whole page (onlyMainContent false)")
	fs.DurationVar(&f.timeout, "timeout", 60*time.Second, "give up after this long")
	fs.DurationVar(&f.waitFor, "wait-for", 0, "wait this long after the page settles")
	fs.BoolVar(&f.mobile, "mobile", false, "emulate a phone")
	fs.StringVar(&f.schema, "schema", "", "extract JSON with a language model: a JSON schema, or @FILE holding one (shorthand such as {\"price\": \"number\"} works)")
	fs.StringVar(&f.prompt, "prompt", "", "extract JSON with a language model, as this asks (with or without --schema)")
	fs.BoolVar(&f.summary, "summary", false, "summarise the page with a language model")
	fs.StringVar(&f.question, "question", "", "answer this question from the page with a language model")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: trawler scrape [flags] URL\n\nScrapes URL with a local Chromium and prints the result. TRAWLER_* settings apply\n(TRAWLER_ALLOW_PRIVATE_NETWORKS=true to reach local addresses).\n\nflags:")
		fs.PrintDefaults()
	}
	target, err := oneArgument(fs, args, "URL")
	if err != nil {
		return "", nil, err
	}
	if !strings.Contains(target, "://") {
		target = "http://" + target
	}
	if strings.HasPrefix(f.schema, "@") {
		raw, err := os.ReadFile(f.schema[1:])
		if err != nil {
			return "", nil, fmt.Errorf("--schema: %w", err)
		}
		f.schema = string(raw)
	}
	if f.schema != "" {
		if _, err := model.NormalizeSchema(json.RawMessage(f.schema)); err != nil {
			return "", nil, fmt.Errorf("--schema %v", err)
		}
	}
	if len(f.formats) == 0 && len(f.modelOutputs()) == 0 {
		f.formats = formatList{"markdown"}
	}
	return target, f, nil
}

// options are the scrape options the flags ask for, never cached.
func (f *scrapeFlags) options() scrape.Options {
	o := scrape.DefaultOptions()
	o.Formats = nil
	for _, name := range f.formats {
		if name == "json" {
			name = "markdown"
		}
		if !o.Has(name) {
			o.Formats = append(o.Formats, scrape.Format{Type: name, FullPage: name == "screenshot"})
		}
	}
	if f.schema != "" || f.prompt != "" {
		o.Formats = append(o.Formats, scrape.Format{Type: "json", Schema: json.RawMessage(f.schema), Prompt: f.prompt})
	}
	if f.summary {
		o.Formats = append(o.Formats, scrape.Format{Type: "summary"})
	}
	if f.question != "" {
		o.Formats = append(o.Formats, scrape.Format{Type: "question", Question: f.question})
	}
	o.OnlyMainContent = !f.full
	o.Timeout, o.WaitFor, o.Mobile = f.timeout, f.waitFor, f.mobile
	o.StoreInCache, o.MaxAge = false, 0
	return o
}

// print writes doc as the flags ask: the whole document as JSON when
// several formats (or json) are asked for, else the one format as text.
func (f *scrapeFlags) print(stdout, stderr io.Writer, doc *scrape.Document) error {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	models := f.modelOutputs()
	if len(f.formats)+len(models) > 1 || slices.Contains(f.formats, "json") {
		return enc.Encode(doc)
	}
	if doc.Warning != "" {
		defer fmt.Fprintln(stderr, "warning:", doc.Warning)
	}
	if len(models) == 1 {
		switch models[0] {
		case "extraction":
			if doc.JSON == nil {
				return fmt.Errorf("the model gave no extraction: %s", doc.Warning)
			}
			return enc.Encode(doc.JSON)
		case "summary":
			fmt.Fprintln(stdout, doc.Summary)
		case "answer":
			fmt.Fprintln(stdout, doc.Answer)
		}
		return nil
	}
	switch f.formats[0] {
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
	return nil
}
