package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/config"
	"github.com/trawler-dev/trawler/service"
	"github.com/trawler-dev/trawler/sessions"
)

// instance is one in-process Trawler served over real HTTP on a 127.0.0.1
// listener, in local mode (no API keys), with its own data directory.
type instance struct {
	name    string
	dataDir string
	base    string // http://127.0.0.1:port
	svc     *service.Service
	srv     *http.Server
	client  *http.Client
	closed  bool
}

// startInstance starts a service with warm idle browsers kept ready. extra
// adds to (or overrides) its environment.
func startInstance(ctx context.Context, name, dataDir string, warm, poolSize int, extra map[string]string, log *slog.Logger) (*instance, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	env := map[string]string{
		"TRAWLER_ADDR":             ln.Addr().String(),
		"TRAWLER_DATA_DIR":         dataDir,
		"TRAWLER_WARM_BROWSERS":    strconv.Itoa(warm),
		"TRAWLER_POOL_SIZE":        strconv.Itoa(poolSize),
		"TRAWLER_TEAM_CONCURRENCY": strconv.Itoa(poolSize),
		"TRAWLER_QUEUE_WAIT":       "30s",
		"TRAWLER_LOG_LEVEL":        "warn",
		// Every site the bench measures is its own, on loopback; interactive
		// sessions are under the network guard too.
		"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true",
		// Only the browser binary is taken from the caller's environment: a
		// TRAWLER_API_KEYS there must not take the bench out of local mode.
		"TRAWLER_CHROMIUM_PATH": os.Getenv("TRAWLER_CHROMIUM_PATH"),
	}
	for k, v := range extra {
		env[k] = v
	}
	cfg, err := config.FromEnv(func(k string) string { return env[k] })
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("config of %s: %w", name, err)
	}
	svc, err := service.New(ctx, cfg, log.With("service", name))
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	svc.Listening(ln.Addr().String())
	in := &instance{
		name: name, dataDir: cfg.DataDir, base: "http://" + ln.Addr().String(), svc: svc,
		srv:    service.Server(svc.Handler()),
		client: &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4}},
	}
	go func() {
		if err := in.srv.Serve(service.Listener(ln, cfg.MaxConnsPerAddress)); err != nil && err != http.ErrServerClosed {
			log.Error("http server stopped", "service", name, "err", err)
		}
	}()
	return in, nil
}

// Close stops every session and browser, then the HTTP server.
func (in *instance) Close() {
	if in.closed {
		return
	}
	in.closed = true
	in.svc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	in.srv.Shutdown(ctx)
	in.client.CloseIdleConnections()
}

// browsersDir is where the runtime keeps one user-data directory per browser.
func (in *instance) browsersDir() string { return filepath.Join(in.dataDir, "browsers") }

type created struct {
	ID     string `json:"id"`
	CDPURL string `json:"cdpUrl"`
}

func (in *instance) do(ctx context.Context, method, path string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, in.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := in.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: status %d: %s", method, path, resp.StatusCode, bytes.TrimSpace(raw))
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("%s %s: decoding the answer: %w", method, path, err)
		}
	}
	return nil
}

// create is POST /v2/browser.
func (in *instance) create(ctx context.Context) (created, error) {
	var c created
	if err := in.do(ctx, http.MethodPost, "/v2/browser", []byte(`{}`), &c); err != nil {
		return c, err
	}
	if c.ID == "" || c.CDPURL == "" {
		return c, fmt.Errorf("POST /v2/browser answered without id or cdpUrl")
	}
	return c, nil
}

// remove is DELETE /v2/browser/{id}.
func (in *instance) remove(ctx context.Context, id string) error {
	return in.do(ctx, http.MethodDelete, "/v2/browser/"+id, nil, nil)
}

// session returns the live session behind id (for its DevTools URL).
func (in *instance) session(ctx context.Context, id string) (*sessions.Session, error) {
	return in.svc.Sessions.Lookup(ctx, id)
}

// waitPool polls the pool until ok holds for its stats, or fails after d.
func (in *instance) waitPool(ctx context.Context, d time.Duration, what string, ok func(browsers.Stats) bool) error {
	deadline := time.Now().Add(d)
	for {
		st := in.svc.Pool.Stats()
		if ok(st) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: pool did not become %s within %s (%+v)", in.name, what, d, st)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// waitSettled waits until the pool holds exactly its warm browsers, idle,
// with nothing starting, leased or being torn down; and, when the service
// prepares a browser for single scrapes at start (TRAWLER_SPARE_TABS), that
// one too.
func (in *instance) waitSettled(ctx context.Context, warm int) error {
	n := warm
	if warm > 0 && in.svc.Config.PreparesScrapeBrowser() {
		n++
	}
	return in.waitPool(ctx, 60*time.Second, fmt.Sprintf("settled with %d warm", warm), func(s browsers.Stats) bool {
		return s.Idle == n && s.Total == n && s.Starting == 0 && s.Leased == 0
	})
}

// waitRefilled waits until the pool, which was settled as settled says,
// holds leased more leases and has refilled its idle browsers (each
// session takes a warm one, which the pool replaces): the same idle
// browsers as settled, nothing starting. Settled idle browsers are the
// warm ones and, when the service prepares one for single scrapes, that
// one, which no session takes.
func (in *instance) waitRefilled(ctx context.Context, settled browsers.Stats, leased int) error {
	return in.waitPool(ctx, 60*time.Second, "refilled", func(s browsers.Stats) bool {
		return s.Idle == settled.Idle && s.Starting == 0 && s.Leased == settled.Leased+leased && s.Total == settled.Total+leased
	})
}

// waitSpares waits until the spare tabs the service prepares at start
// (TRAWLER_SPARE_TABS) are ready.
func (in *instance) waitSpares(ctx context.Context) error {
	want := in.svc.Config.SpareTabs
	if !in.svc.Config.PreparesScrapeBrowser() {
		return nil
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ready, _, _ := in.svc.Crawler.Scrape.SpareTabsReady()
		if ready >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %d of %d spare tabs ready after 30 s", in.name, ready, want)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
