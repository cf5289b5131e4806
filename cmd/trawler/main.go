// Command trawler is the Trawler service and its command-line tools.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/trawler-dev/trawler/config"
	"github.com/trawler-dev/trawler/service"
)

const usage = `Trawler: web content acquisition and remote Chromium sessions.

Usage:
  trawler serve     run the service (configured by TRAWLER_* environment variables; see docs/configuration.md)
  trawler scrape [--format markdown|html|json ...] [--schema JSON|@FILE] [--prompt TEXT]
                 [--summary] [--question TEXT] URL
                    scrape one page with a local Chromium and print it, no server needed;
                    --schema, --prompt, --summary and --question ask the language model
                    (TRAWLER_LLM_BASE_URL, TRAWLER_LLM_MODEL)
  trawler crawl [--limit N] [--out DIR] URL
                    crawl a site with local Chromium browsers into one Markdown file per page
                    plus index.jsonl, with a progress bar, no server needed
  trawler search [--limit N] [--source web|images|news] [--scrape] [--json] QUERY
                    search the pages fetched into TRAWLER_DATA_DIR with the operators of
                    POST /v2/search, no server needed (stop the server of that directory first)
  trawler parse [--format markdown|html|json] FILE
                    convert a local document (.pdf, .docx, .doc, .odt, .rtf, .xlsx, .xls, .html)
                    and print it, no server or browser needed
  trawler mcp [--url URL]
                    serve Trawler's MCP tools (those of /v2/mcp) over stdio, for hosts that start
                    a local process: to the Trawler at URL (or TRAWLER_URL) with TRAWLER_API_KEY,
                    else to one started in this process on a loopback port
  trawler monitor add|list|run|checks|delete [--url URL] ...
                    manage the monitors of the Trawler at URL (or TRAWLER_URL) with
                    TRAWLER_API_KEY: add one of pages or a site on a schedule, list them,
                    run a check now (--wait prints what changed) and read past checks;
                    trawler monitor help tells more
  trawler healthcheck
                    exit 0 if the service at TRAWLER_ADDR answers /healthz (for container
                    health checks: the Trawler image has no shell or curl)
  trawler version   print the version
`

var version = "dev"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	switch os.Args[1] {
	case "serve":
		if err := serve(); err != nil {
			fmt.Fprintln(os.Stderr, "trawler:", err)
			os.Exit(1)
		}
	case "scrape":
		if err := scrapeCmd(os.Args[2:], os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "trawler scrape:", err)
			os.Exit(1)
		}
	case "crawl":
		if err := crawlCmd(os.Args[2:], os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "trawler crawl:", err)
			os.Exit(1)
		}
	case "search":
		if err := searchCmd(os.Args[2:], os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "trawler search:", err)
			os.Exit(1)
		}
	case "parse":
		if err := parseCmd(os.Args[2:], os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "trawler parse:", err)
			os.Exit(1)
		}
	case "mcp":
		if err := mcpCmd(os.Args[2:], os.Stdin, os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "trawler mcp:", err)
			os.Exit(1)
		}
	case "monitor":
		if err := monitorCmd(os.Args[2:], os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "trawler monitor:", err)
			os.Exit(1)
		}
	case "healthcheck":
		if err := healthcheck(os.Getenv("TRAWLER_ADDR")); err != nil {
			fmt.Fprintln(os.Stderr, "trawler healthcheck:", err)
			os.Exit(1)
		}
	case "version":
		fmt.Println("trawler", version)
	case "help", "-h", "--help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "trawler: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
}

// healthcheck asks the service listening on addr (default 127.0.0.1:3002)
// whether it is up. A wildcard listen address is reached on loopback.
func healthcheck(addr string) error {
	if addr == "" {
		addr = "127.0.0.1:3002"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("TRAWLER_ADDR %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + net.JoinHostPort(host, port) + "/healthz")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/healthz answered %s", resp.Status)
	}
	return nil
}

func serve() error {
	cfg, err := config.FromEnv(os.Getenv)
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	var level slog.Level
	level.UnmarshalText([]byte(cfg.LogLevel))
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listening on TRAWLER_ADDR %s: %w", cfg.Addr, err)
	}
	svc, err := service.New(ctx, cfg, log)
	if err != nil {
		ln.Close()
		return err
	}
	svc.Listening(ln.Addr().String())
	srv := service.Server(svc.Handler())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(service.Listener(ln, cfg.MaxConnsPerAddress)) }()
	mode := "keys"
	if cfg.LocalMode() {
		mode = "local (no API keys configured)"
	}
	log.Info("trawler listening", "addr", ln.Addr().String(), "auth", mode, "pool", cfg.PoolSize, "warm", cfg.WarmBrowsers)

	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			svc.Close()
			return err
		}
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	// Stop taking requests, then end the sessions: their WebSockets (which
	// Shutdown does not track) get a close frame naming the shutdown.
	go srv.Shutdown(shutdownCtx)
	svc.Close()
	srv.Shutdown(shutdownCtx)
	log.Info("stopped")
	return nil
}
