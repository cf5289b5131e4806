package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/trawler-dev/trawler/monitor"
)

const monitorUsage = `usage: trawler monitor SUBCOMMAND [flags]

Manages the monitors of the Trawler at --url (or TRAWLER_URL), with TRAWLER_API_KEY:
monitors are scheduled by the server, so this command needs one.

  add --name NAME (--cron EXPR | --every TEXT) [--timezone ZONE] [--crawl URL [--limit N]]
      [--goal TEXT] [--webhook URL] [URL...]
                         create a monitor of the URLs (one scrape target) and/or a site (--crawl)
  list                   list the monitors
  run [--wait] ID        run a check now; --wait follows it and prints its pages
  checks ID [CHECK_ID]   list a monitor's checks, or show one with its pages
  delete ID              delete a monitor and its checks

Every subcommand takes --url URL; add, list, run and checks take --json for the API's answer.
`

// monitorCmd runs trawler monitor's subcommands against a Trawler's
// /v2/monitor. Unlike scrape and crawl it has no local mode: a monitor
// runs on its schedule only while a server does.
func monitorCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, monitorUsage)
		return errors.New("a subcommand is required: add, list, run, checks or delete")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sub, args := args[0], args[1:]
	switch sub {
	case "add":
		return monitorAdd(ctx, args, stdout, stderr)
	case "list":
		return monitorList(ctx, args, stdout, stderr)
	case "run":
		return monitorRun(ctx, args, stdout, stderr)
	case "checks":
		return monitorChecks(ctx, args, stdout, stderr)
	case "delete":
		return monitorDelete(ctx, args, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, monitorUsage)
		return nil
	}
	return fmt.Errorf("unknown subcommand %q: add, list, run, checks or delete", sub)
}

// monitorInfo is what the CLI reads of a monitor as the API shows it.
type monitorInfo struct {
	ID               string               `json:"id"`
	Name             string               `json:"name"`
	Status           string               `json:"status"`
	Schedule         monitor.ScheduleSpec `json:"schedule"`
	NextRunAt        *string              `json:"nextRunAt"`
	LastCheckSummary *monitor.Summary     `json:"lastCheckSummary"`
	Warning          string               `json:"warning"`
}

// checkInfo is what the CLI reads of a check as the API shows it.
type checkInfo struct {
	ID           string          `json:"id"`
	Status       string          `json:"status"`
	Trigger      string          `json:"trigger"`
	ScheduledFor *string         `json:"scheduledFor"`
	Late         bool            `json:"late"`
	Summary      monitor.Summary `json:"summary"`
	Error        *string         `json:"error"`
	Pages        []monitor.Page  `json:"pages"`
}

// monitorFlags is a subcommand's flag set with --url; connect, called
// once the flags are parsed, is the client of the Trawler it names.
func monitorFlags(name, synopsis string, stderr io.Writer) (fs *flag.FlagSet, connect func() (*monitorClient, error)) {
	fs = flag.NewFlagSet("monitor "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("url", os.Getenv("TRAWLER_URL"), "the Trawler server to talk to, as http://HOST:PORT (TRAWLER_URL)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: trawler monitor %s %s\n\nflags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs, func() (*monitorClient, error) {
		if strings.TrimSpace(*base) == "" {
			return nil, errors.New("no Trawler server to talk to: give --url URL or set TRAWLER_URL (monitors are scheduled by a running server)")
		}
		// No client timeout: each call ends with its context (Ctrl-C).
		return &monitorClient{base: strings.TrimRight(*base, "/"), key: os.Getenv("TRAWLER_API_KEY"), http: &http.Client{}}, nil
	}
}

// interspersed parses args with fs, letting flags come before, between
// or after the positional arguments, which it returns.
func interspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if args = fs.Args(); len(args) == 0 {
			return pos, nil
		}
		pos, args = append(pos, args[0]), args[1:]
	}
}

func monitorAdd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, connect := monitorFlags("add", "--name NAME (--cron EXPR | --every TEXT) [flags] [URL...]", stderr)
	name := fs.String("name", "", "the monitor's name (required)")
	cron := fs.String("cron", "", `when to check, as a cron expression: "0 * * * *"`)
	every := fs.String("every", "", `when to check, in words: "30 minutes", "every 2 hours", "hourly", "daily at 9:00", "weekly"`)
	timezone := fs.String("timezone", "", "the IANA time zone the schedule is read in (default UTC)")
	crawlURL := fs.String("crawl", "", "watch the site crawled from this URL")
	limit := fs.Int("limit", 0, "with --crawl: at most this many pages (default: the server's, 100)")
	goal := fs.String("goal", "", "what changes matter: the server's language model judges changed pages against it")
	hook := fs.String("webhook", "", "send the monitor's events (monitor.page, monitor.check.completed) to this URL")
	asJSON := fs.Bool("json", false, "print the API's answer")
	urls, err := interspersed(fs, args)
	if err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(*name) == "":
		return errors.New("--name is required")
	case *cron == "" && *every == "":
		return errors.New(`a schedule is required: --cron "0 * * * *" or --every "30 minutes"`)
	case *cron != "" && *every != "":
		return errors.New("give --cron or --every, not both")
	case len(urls) == 0 && *crawlURL == "":
		return errors.New("nothing to watch: give page URLs, or --crawl URL for a site")
	case *limit != 0 && *crawlURL == "":
		return errors.New("--limit bounds a crawl: it needs --crawl URL")
	}
	text := strings.TrimSpace(*every)
	if text != "" && unicode.IsDigit(rune(text[0])) {
		text = "every " + text // --every "30 minutes"
	}
	var targets []any
	if len(urls) > 0 {
		targets = append(targets, map[string]any{"type": "scrape", "urls": urls})
	}
	if *crawlURL != "" {
		t := map[string]any{"type": "crawl", "url": *crawlURL}
		if *limit != 0 {
			t["crawlOptions"] = map[string]any{"limit": *limit}
		}
		targets = append(targets, t)
	}
	body := map[string]any{"name": *name, "targets": targets,
		"schedule": monitor.ScheduleSpec{Cron: *cron, Text: text, Timezone: *timezone}}
	if *goal != "" {
		body["goal"] = *goal
	}
	if *hook != "" {
		body["webhook"] = map[string]any{"url": *hook}
	}
	c, err := connect()
	if err != nil {
		return err
	}
	var m monitorInfo
	raw, err := c.call(ctx, http.MethodPost, "/v2/monitor", body, &m)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeRaw(stdout, raw)
	}
	fmt.Fprintf(stdout, "monitor %s created: %s (%s), next check %s\n", m.ID, m.Schedule.Cron, m.Schedule.Timezone, orDash(m.NextRunAt))
	return nil
}

func monitorList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, connect := monitorFlags("list", "[flags]", stderr)
	asJSON := fs.Bool("json", false, "print the monitors as the API shows them")
	if err := noArguments(fs, args); err != nil {
		return err
	}
	c, err := connect()
	if err != nil {
		return err
	}
	const page = 100 // the API's largest
	var all []json.RawMessage
	for {
		var part []json.RawMessage
		if _, err := c.call(ctx, http.MethodGet, fmt.Sprintf("/v2/monitor?limit=%d&offset=%d", page, len(all)), nil, &part); err != nil {
			return err
		}
		all = append(all, part...)
		if len(part) < page {
			break
		}
	}
	if *asJSON {
		return writeJSON(stdout, map[string]any{"success": true, "data": all})
	}
	if len(all) == 0 {
		fmt.Fprintln(stderr, "no monitors")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSCHEDULE\tNEXT CHECK\tLAST CHECK")
	for _, raw := range all {
		var m monitorInfo
		if err := json.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("reading a monitor: %w", err)
		}
		next := orDash(m.NextRunAt)
		if m.Status != "active" {
			next = m.Status
		}
		last := "none yet"
		if m.LastCheckSummary != nil {
			last = summaryText(*m.LastCheckSummary)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s %s\t%s\t%s\n", m.ID, m.Name, m.Schedule.Cron, m.Schedule.Timezone, next, last)
	}
	return tw.Flush()
}

func monitorRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, connect := monitorFlags("run", "[--wait] [--json] ID", stderr)
	wait := fs.Bool("wait", false, "wait for the check to finish and print its pages")
	asJSON := fs.Bool("json", false, "print the API's answer (with --wait: the finished check with its pages)")
	id, err := oneArgument(fs, args, "monitor ID")
	if err != nil {
		return err
	}
	c, err := connect()
	if err != nil {
		return err
	}
	var ch checkInfo
	raw, err := c.call(ctx, http.MethodPost, "/v2/monitor/"+url.PathEscape(id)+"/run", nil, &ch)
	if err != nil {
		return err
	}
	if !*wait {
		if *asJSON {
			return writeRaw(stdout, raw)
		}
		fmt.Fprintf(stdout, "check %s %s (trawler monitor checks %s %s shows it)\n", ch.ID, ch.Status, id, ch.ID)
		return nil
	}
	for ch.Status == monitor.CheckQueued || ch.Status == monitor.CheckRunning {
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped waiting for check %s, which goes on: %w", ch.ID, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
		if ch, raw, err = c.check(ctx, id, ch.ID); err != nil {
			return err
		}
	}
	if *asJSON {
		return writeRaw(stdout, raw)
	}
	printCheck(stdout, ch)
	if ch.Status == monitor.CheckFailed {
		return fmt.Errorf("check %s failed", ch.ID)
	}
	return nil
}

func monitorChecks(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, connect := monitorFlags("checks", "[flags] ID [CHECK_ID]", stderr)
	limit := fs.Int("limit", 25, "list this many of the latest checks, 1 to 100")
	asJSON := fs.Bool("json", false, "print the API's answer")
	pos, err := interspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 || len(pos) > 2 {
		fs.Usage()
		return errors.New("a monitor ID, and optionally a check ID, are required")
	}
	c, err := connect()
	if err != nil {
		return err
	}
	if len(pos) == 2 {
		ch, raw, err := c.check(ctx, pos[0], pos[1])
		if err != nil {
			return err
		}
		if *asJSON {
			return writeRaw(stdout, raw)
		}
		printCheck(stdout, ch)
		return nil
	}
	var checks []checkInfo
	raw, err := c.call(ctx, http.MethodGet, fmt.Sprintf("/v2/monitor/%s/checks?limit=%d", url.PathEscape(pos[0]), *limit), nil, &checks)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeRaw(stdout, raw)
	}
	if len(checks) == 0 {
		fmt.Fprintln(stderr, "no checks yet")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tTRIGGER\tSCHEDULED FOR\tSUMMARY")
	for _, ch := range checks {
		when := orDash(ch.ScheduledFor)
		if ch.Late {
			when += " (late)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", ch.ID, ch.Status, ch.Trigger, when, summaryText(ch.Summary))
	}
	return tw.Flush()
}

func monitorDelete(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, connect := monitorFlags("delete", "ID", stderr)
	id, err := oneArgument(fs, args, "monitor ID")
	if err != nil {
		return err
	}
	c, err := connect()
	if err != nil {
		return err
	}
	if _, err := c.call(ctx, http.MethodDelete, "/v2/monitor/"+url.PathEscape(id), nil, nil); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "monitor %s deleted\n", id)
	return nil
}

func noArguments(fs *flag.FlagSet, args []string) error {
	pos, err := interspersed(fs, args)
	if err == nil && len(pos) > 0 {
		err = fmt.Errorf("unexpected argument %q", pos[0])
	}
	return err
}

// printCheck prints a check's outcome and a line per page, a changed
// page's diff under it.
func printCheck(w io.Writer, ch checkInfo) {
	fmt.Fprintf(w, "check %s %s: %s\n", ch.ID, ch.Status, summaryText(ch.Summary))
	if ch.Error != nil {
		fmt.Fprintf(w, "  %s\n", *ch.Error)
	}
	for _, p := range ch.Pages {
		line := fmt.Sprintf("  %-8s %s", p.Status, p.URL)
		if p.Error != nil {
			line += ": " + *p.Error
		}
		fmt.Fprintln(w, line)
		if j := p.Judgment; j != nil {
			verdict := "not meaningful"
			if j.Meaningful {
				verdict = "meaningful"
			}
			fmt.Fprintf(w, "      judged %s (%s confidence): %s\n", verdict, j.Confidence, j.Reason)
		}
		if p.Diff != nil {
			for _, l := range strings.Split(strings.TrimRight(p.Diff.Text, "\n"), "\n") {
				fmt.Fprintln(w, "      "+l)
			}
		}
	}
}

// summaryText is a check's page counts: "2 pages (1 new, 1 changed)".
func summaryText(s monitor.Summary) string {
	var parts []string
	for _, c := range []struct {
		n    int
		what string
	}{{s.New, "new"}, {s.Changed, "changed"}, {s.Same, "same"}, {s.Removed, "removed"}, {s.Error, "failed"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	text := fmt.Sprintf("%d pages", s.TotalPages)
	if s.TotalPages == 1 {
		text = "1 page"
	}
	if len(parts) > 0 {
		text += " (" + strings.Join(parts, ", ") + ")"
	}
	return text
}

func orDash(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	return *s
}

func writeRaw(w io.Writer, raw []byte) error {
	_, err := fmt.Fprintf(w, "%s\n", bytes.TrimSpace(raw))
	return err
}

func writeJSON(w io.Writer, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeRaw(w, raw)
}

// monitorClient calls a Trawler's /v2/monitor.
type monitorClient struct {
	base, key string
	http      *http.Client
}

// call sends body (nil: none) as JSON and decodes the answer's data into
// out (nil: not read); it returns the answer as sent, for --json. An error
// answer is returned as its message.
func (c *monitorClient) call(ctx context.Context, method, path string, body, out any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("reaching the Trawler at %s (is it running?): %w", c.base, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the answer of %s %s: %w", method, path, err)
	}
	var ans struct {
		Success bool            `json:"success"`
		Error   string          `json:"error"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return nil, fmt.Errorf("%s %s answered %s, not the API's JSON: %.200s", method, path, resp.Status, raw)
	}
	if resp.StatusCode >= 300 || !ans.Success {
		msg := ans.Error
		if msg == "" {
			msg = fmt.Sprintf("%s %s answered %s", method, path, resp.Status)
		}
		if resp.StatusCode == http.StatusUnauthorized && c.key == "" {
			msg += " (set TRAWLER_API_KEY)"
		}
		return nil, errors.New(msg)
	}
	if out != nil {
		if err := json.Unmarshal(ans.Data, out); err != nil {
			return nil, fmt.Errorf("reading the answer of %s %s: %w", method, path, err)
		}
	}
	return raw, nil
}

// check reads a check with all its pages, a hundred (the API's most) at a
// time; the answer it returns holds them all, in the API's shape.
func (c *monitorClient) check(ctx context.Context, id, checkID string) (checkInfo, []byte, error) {
	var view map[string]json.RawMessage
	var pages []json.RawMessage
	for {
		path := fmt.Sprintf("/v2/monitor/%s/checks/%s?limit=100&skip=%d", url.PathEscape(id), url.PathEscape(checkID), len(pages))
		if _, err := c.call(ctx, http.MethodGet, path, nil, &view); err != nil {
			return checkInfo{}, nil, err
		}
		var part []json.RawMessage
		if err := json.Unmarshal(view["pages"], &part); err != nil {
			return checkInfo{}, nil, fmt.Errorf("reading check %s's pages: %w", checkID, err)
		}
		pages = append(pages, part...)
		if next := bytes.TrimSpace(view["next"]); len(part) == 0 || len(next) == 0 || string(next) == "null" {
			break
		}
	}
	view["pages"], _ = json.Marshal(pages)
	view["next"] = json.RawMessage("null")
	data, _ := json.Marshal(view)
	var ch checkInfo
	if err := json.Unmarshal(data, &ch); err != nil {
		return ch, nil, fmt.Errorf("reading check %s: %w", checkID, err)
	}
	raw, _ := json.Marshal(map[string]any{"success": true, "data": json.RawMessage(data), "next": nil})
	return ch, raw, nil
}
