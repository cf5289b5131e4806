// Package service assembles Trawler from its parts (store, teams, pool,
// sessions, API, CDP proxy, metrics) behind one net/http handler, and takes
// them down again in order. The CLI and the end-to-end tests both start the
// service through it.
//
// One listener serves everything: net/http routes /cdp/ to the CDP proxy
// (gorilla/websocket needs net/http), /live/ to the live view, /metrics to
// Prometheus, and every other path to the API's handler (api.Handler).
// Keeping one host and port means cdpUrl and liveViewUrl share the API's
// public base URL.
package service

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	trawler "github.com/trawler-dev/trawler"
	"github.com/trawler-dev/trawler/api"
	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/cdpproxy"
	"github.com/trawler-dev/trawler/config"
	"github.com/trawler-dev/trawler/crawl"
	"github.com/trawler-dev/trawler/docsearch"
	"github.com/trawler-dev/trawler/egress"
	"github.com/trawler-dev/trawler/extract"
	"github.com/trawler-dev/trawler/liveview"
	"github.com/trawler-dev/trawler/mcpserver"
	"github.com/trawler-dev/trawler/model"
	"github.com/trawler-dev/trawler/monitor"
	"github.com/trawler-dev/trawler/netguard"
	"github.com/trawler-dev/trawler/parse"
	"github.com/trawler-dev/trawler/profiles"
	"github.com/trawler-dev/trawler/recording"
	"github.com/trawler-dev/trawler/scrape"
	"github.com/trawler-dev/trawler/scrape/changetracking"
	"github.com/trawler-dev/trawler/scrape/media"
	"github.com/trawler-dev/trawler/sessions"
	"github.com/trawler-dev/trawler/store"
	"github.com/trawler-dev/trawler/teams"
	"github.com/trawler-dev/trawler/webhook"
	"github.com/trawler-dev/trawler/wire"
)

// Service is a running Trawler.
type Service struct {
	Config   *config.Config
	Store    *store.Store
	Pool     *browsers.Pool
	Sessions *sessions.Manager
	Proxy    *cdpproxy.Proxy
	Crawler  *crawl.Service
	Extract  *extract.Service
	Monitors *monitor.Service
	Webhooks *webhook.Dispatcher
	Profiles profiles.Store
	// Recordings keeps the recordings of recorded sessions.
	Recordings *recording.Archive
	// Egress is the proxy every browser's requests go through.
	Egress *egress.Proxy
	// Model is the language model, nil when none is configured.
	Model  *model.Client
	search *searchParts
	docs   *docsearch.Index
	log    *slog.Logger
	// closeRuntime releases the browser runtime after the pool has stopped
	// every browser.
	closeRuntime func()
	// closeExecute waits for the execute endpoint's runs (which end with
	// their sessions) and releases its sandboxes' engine connection.
	closeExecute func()
	// reapers remove a dead node's containers from this node's container
	// engine (the docker runtime's browsers, the execute sandboxes);
	// reaped is when each node reaped was last seen, so that it is reaped
	// once.
	reapers []instanceReaper
	reaped  map[string]time.Time
	cancel  context.CancelFunc
	handler http.Handler
	stop    chan struct{}
	wg      sync.WaitGroup
	// denied are the node hosts (host:port) the browsers may not reach.
	deniedMu sync.Mutex
	denied   map[string]bool
}

// janitor deletes what has outlived its retention: activity older than the
// 24 h window, cached pages (and so their index entries), expired scrape
// results, jobs and webhook events.
func (s *Service) janitor() {
	defer s.wg.Done()
	t := time.NewTicker(10 * time.Minute)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := s.Store.PruneActivity(ctx, time.Now().Add(-api.ActivityWindow)); err != nil {
			s.log.Error("pruning activity", "err", err)
		}
		if err := s.Store.PruneCache(ctx, time.Now().Add(-s.Config.CacheRetention)); err != nil {
			s.log.Error("pruning the cache", "err", err)
		} else {
			s.search.notify()
		}
		if err := s.Store.PruneScrapes(ctx); err != nil {
			s.log.Error("pruning scrapes", "err", err)
		}
		if err := s.Crawler.Scrape.PruneMedia(ctx); err != nil {
			s.log.Error("pruning media", "err", err)
		}
		if err := s.Store.PruneJobs(ctx, time.Now()); err != nil {
			s.log.Error("pruning jobs", "err", err)
		}
		if err := s.Store.PruneMonitorChecks(ctx, time.Now()); err != nil {
			s.log.Error("pruning monitor checks", "err", err)
		}
		if err := s.Store.PruneExtracts(ctx, time.Now()); err != nil {
			s.log.Error("pruning extracts", "err", err)
		}
		if err := s.Store.PruneWebhookEvents(ctx, time.Now().Add(-s.Config.ResultRetention)); err != nil {
			s.log.Error("pruning webhook events", "err", err)
		}
		if err := s.Store.PruneModelUsage(ctx, time.Now().Add(-modelUsageRetention)); err != nil {
			s.log.Error("pruning model usage", "err", err)
		}
		if err := s.Store.PruneEgressUsage(ctx, time.Now().Add(-modelUsageRetention)); err != nil {
			s.log.Error("pruning egress usage", "err", err)
		}
		if err := s.Recordings.Prune(ctx); err != nil {
			s.log.Error("pruning session recordings", "err", err)
		}
		if err := s.Store.PrunePageVersions(ctx, time.Now().Add(-changetracking.Retention)); err != nil {
			s.log.Error("pruning change tracking's page versions", "err", err)
		}
		cancel()
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
	}
}

// openStore opens the PostgreSQL database of TRAWLER_DATABASE_URL when it
// is set, else the SQLite database in the data directory.
func openStore(ctx context.Context, cfg *config.Config, log *slog.Logger) (*store.Store, error) {
	if cfg.DatabaseURL == "" {
		return store.Open(ctx, filepath.Join(cfg.DataDir, "trawler.db"))
	}
	where := "(unreadable)"
	if u, err := url.Parse(cfg.DatabaseURL); err == nil {
		where = u.Redacted()
	}
	log.Info("database on PostgreSQL", "url", where)
	st, err := store.OpenURL(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("TRAWLER_DATABASE_URL: %w", err)
	}
	return st, nil
}

// New starts a service: opens the store, reaps browsers an earlier run left
// behind, and starts the pool's warm browsers.
func New(ctx context.Context, cfg *config.Config, log *slog.Logger) (*Service, error) {
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating TRAWLER_DATA_DIR %s: %w", cfg.DataDir, err)
	}
	// Documents are read within one memory budget per process, uploads
	// and scraped documents alike.
	parse.SetMemoryBudget(int64(cfg.ParseMemoryMB)<<20, int64(cfg.ParseMemoryTotalMB)<<20)
	var undo undoStack
	fail := func(err error) (*Service, error) {
		undo.run()
		return nil, err
	}
	st, err := openStore(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	undo.push(func() { st.Close() })
	// The node is named by its instance, which stays the same across its
	// restarts: a restarted node takes back its own jobs at once.
	st.SetNode(cfg.Instance, cfg.NodeURL, cfg.NodeLease)
	if err := st.Heartbeat(ctx, time.Now()); err != nil {
		return fail(err)
	}
	teamRegistry, err := teams.Open(ctx, st, cfg)
	if err != nil {
		return fail(err)
	}
	profileStore, err := newProfileStore(ctx, cfg)
	if err != nil {
		return fail(err)
	}
	opener := &profiles.Opener{Store: profileStore, Instance: cfg.Instance, LockTTL: cfg.ProfileLockTTL}
	recordings, err := newRecordings(ctx, cfg, st, log)
	if err != nil {
		return fail(err)
	}
	guard := &netguard.Guard{AllowPrivate: cfg.AllowPrivateNetworks}
	b, err := startBrowsers(ctx, cfg, st, guard, &undo, log)
	if err != nil {
		return fail(err)
	}
	conf, out, pool, mgr := b.conf, b.out, b.pool, b.sessions
	mgr.Recorder = recordings
	urls := wire.PublicURL{Base: cfg.PublicURL, Trusted: cfg.TrustedProxies}
	proxy := cdpproxy.New(mgr, urls, log)
	executor, closeExecute, boxes, err := newExecute(ctx, cfg, proxy, out.proxy.Hide, log)
	if err != nil {
		return fail(err)
	}
	undo.push(closeExecute)
	llm := newModel(cfg.LLM, st)
	scraper := &scrape.Service{Pool: pool, Store: st, Log: log, Retention: cfg.ResultRetention, Guard: guard, Profiles: opener,
		SharedCache: cfg.SharedCache, ReuseTabs: cfg.ReuseTabs, SpareTabs: cfg.SpareTabs, Model: llm, Egress: out.proxy, UA: b.ua,
		Media: media.Options{Dir: filepath.Join(cfg.DataDir, "media"), Base: urls.For(wire.Request{Host: cfg.Addr})}}
	hooks := &webhook.Dispatcher{Store: st, Client: guard.Client(10*time.Second, netguard.VerifyTLS), Log: log,
		Secret: func(team string) string { return cfg.WebhookSecrets[team] }}
	crawler := &crawl.Service{Scrape: scraper, Store: st, Guard: guard, Webhooks: hooks, Log: log,
		Workers: cfg.JobWorkers, HostConcurrency: cfg.HostConcurrency, Retention: cfg.ResultRetention,
		TeamLimit: teamRegistry.Concurrency, Lease: cfg.NodeLease}
	found, err := newSearch(cfg, st, scraper, log)
	if err != nil {
		return fail(err)
	}
	undo.push(found.close)
	if err := crawler.Start(ctx); err != nil {
		return fail(err)
	}
	undo.push(crawler.Close)
	extracts := &extract.Service{Crawler: crawler, Store: st, Model: llm, Log: log, Retention: cfg.ResultRetention,
		Lease: cfg.NodeLease}
	if err := extracts.Start(ctx); err != nil {
		return fail(err)
	}
	monitors := &monitor.Service{Store: st, Crawler: crawler, Model: llm, Webhooks: hooks, Log: log,
		Lease: max(2*cfg.NodeLease, 10*time.Second)}
	docs, err := docsearch.New(trawler.Docs)
	if err != nil {
		return fail(err)
	}
	undo.push(func() { docs.Close() })
	log.Debug("documentation indexed", "sections", len(docs.Sections()), "took", docs.BuildTime)
	a := api.New(api.Deps{Teams: teamRegistry, Sessions: mgr, Scraper: scraper, Crawler: crawler, Store: st, URLs: urls, Log: log,
		Profiles: opener, Search: found.service, Model: llm, Extract: extracts, Docs: docs,
		Execute: executor, Recordings: recordings, Monitors: monitors, MonitorMinInterval: cfg.MonitorMinInterval, Browsers: api.BrowserHealth{Runtime: cfg.Runtime, Confined: conf.Confined, Sandbox: conf.Sandbox,
			Sessions: conf.Confined || cfg.AllowUnconfinedSessions, Detail: conf.String()}})

	monitors.Admit = a.CreditsLeft
	s := &Service{Config: cfg, Store: st, Pool: pool, Sessions: mgr, Proxy: proxy, Crawler: crawler, Extract: extracts, Monitors: monitors, Webhooks: hooks,
		Profiles: profileStore, Recordings: recordings, Egress: out.proxy, Model: llm, search: found, docs: docs, log: log, stop: make(chan struct{}), closeRuntime: b.closeRuntime}
	s.closeExecute = closeExecute
	for _, r := range []any{b.runtime.Runtime, boxes} {
		if r, ok := r.(instanceReaper); ok {
			s.reapers = append(s.reapers, r)
		}
	}
	s.startBackground()
	s.handler = s.newHandler(a, urls)
	s.denyNodes()
	return s, nil
}

// undoStack holds what New made, to release it, last first, when New
// fails.
type undoStack []func()

func (u *undoStack) push(f func()) { *u = append(*u, f) }

func (u undoStack) run() {
	for i := len(u) - 1; i >= 0; i-- {
		u[i]()
	}
}

// browserParts are what startBrowsers makes.
type browserParts struct {
	conf         browsers.Confinement
	out          egressProxy
	runtime      *routedRuntime
	closeRuntime func()
	// ua is the browsers' user agent: from their Chromium's version, else
	// from the first one started.
	ua       *scrape.UserAgent
	pool     *browsers.Pool
	sessions *sessions.Manager
}

// startBrowsers starts what runs browsers: the egress proxy, the runtime
// (after reaping the browsers an earlier run left), the pool and the
// session manager. It pushes each one's release on undo as it goes.
func startBrowsers(ctx context.Context, cfg *config.Config, st *store.Store, guard *netguard.Guard, undo *undoStack, log *slog.Logger) (*browserParts, error) {
	b := &browserParts{conf: confinement(ctx, cfg)}
	logConfinement(cfg, b.conf, log)
	out, err := newEgress(cfg, b.conf, guard, egressRecorder(st, log), log)
	if err != nil {
		return nil, err
	}
	b.out = out
	undo.push(func() { out.proxy.Close() })
	rt, closeRuntime, err := newRuntime(cfg, b.conf, out, log)
	if err != nil {
		return nil, err
	}
	b.runtime, b.closeRuntime = rt, closeRuntime
	undo.push(closeRuntime)
	b.ua = &scrape.UserAgent{}
	assumeUserAgent(ctx, cfg, rt.Runtime, b.ua, log)
	learn := b.ua.Learn
	rt.started.Store(&learn)
	reapEarlierBrowsers(ctx, rt, log)
	b.pool = newPool(cfg, rt, st, log)
	undo.push(b.pool.Close)
	if b.sessions, err = newSessions(ctx, cfg, b.conf, b.pool, st, out, log); err != nil {
		return nil, err
	}
	undo.push(b.sessions.Close)
	return b, nil
}

// logConfinement says how the browsers are walled in, and when they cannot
// be, what that means for browser sessions.
func logConfinement(cfg *config.Config, conf browsers.Confinement, log *slog.Logger) {
	if conf.Confined {
		log.Info("browsers are "+conf.String(), "runtime", cfg.Runtime)
		return
	}
	refusal := "browser sessions are refused until browsers can be confined, or TRAWLER_ALLOW_UNCONFINED_SESSIONS=true runs them anyway"
	if cfg.AllowUnconfinedSessions {
		refusal = "browser sessions run anyway (TRAWLER_ALLOW_UNCONFINED_SESSIONS=true): their clients stand only behind the CDP proxy's policy"
	}
	log.Warn("browsers cannot be confined on this host: they run " + conf.String() + "; " + refusal)
}

// egressRecorder returns the egress proxy's report of a binding's bytes,
// which records them in the store off the proxy's path (a report carries
// no context, so the write has one of its own).
func egressRecorder(st *store.Store, log *slog.Logger) func(egress.Binding, int64, int64) {
	return func(b egress.Binding, in, out int64) {
		go func() {
			u := store.EgressUsage{Team: b.Team, Request: b.Request, In: in, Out: out, At: time.Now()}
			if err := st.AddEgressUsage(context.Background(), u); err != nil {
				log.Debug("recording egress usage", "err", err)
			}
		}()
	}
}

// reapEarlierBrowsers removes the browsers an earlier run of this instance
// left behind; failing to is worth a warning, not a refusal to start.
func reapEarlierBrowsers(ctx context.Context, rt *routedRuntime, log *slog.Logger) {
	if n, err := rt.Reap(ctx); err != nil {
		log.Warn("reaping browsers of an earlier run", "err", err)
	} else if n > 0 {
		log.Warn("reaped browsers left by an earlier run", "browsers", n)
	}
}

// newPool returns the browser pool over rt. On a shared PostgreSQL store
// the per-team places are counted across the nodes.
func newPool(cfg *config.Config, rt *routedRuntime, st *store.Store, log *slog.Logger) *browsers.Pool {
	opts := browsers.PoolOptions{Size: cfg.PoolSize, Warm: cfg.WarmBrowsers,
		QueueWait: cfg.QueueWait, Log: log, MaxShare: cfg.ScrapesPerBrowser}
	if st.Postgres() != nil {
		opts.Places = &teamPlaces{store: st, lease: cfg.NodeLease, log: log}
	}
	return browsers.NewPool(rt, opts)
}

// newSessions returns the manager of interactive sessions, which refuses
// them when browsers cannot be confined and the operator has not allowed
// that, and binds each session's browser to its team in the egress proxy.
func newSessions(ctx context.Context, cfg *config.Config, conf browsers.Confinement, pool *browsers.Pool, st *store.Store, out egressProxy, log *slog.Logger) (*sessions.Manager, error) {
	mgr, err := sessions.NewManager(ctx, pool, st, log)
	if err != nil {
		return nil, err
	}
	if !conf.Confined && !cfg.AllowUnconfinedSessions {
		mgr.RefuseSessions("this host cannot confine browsers (" + conf.Reason + "); the operator may allow sessions anyway with TRAWLER_ALLOW_UNCONFINED_SESSIONS=true")
	}
	mgr.BindEgress = func(browser, team, session string) {
		if r, err := out.proxy.BrowserRoute(browser); err == nil {
			r.Bind(egress.Binding{Team: team, Request: session})
		}
	}
	return mgr, nil
}

// startBackground starts the service's own goroutines (the janitor, the
// heartbeat, the search indexer, the webhook dispatcher and, when cfg asks
// for one, the preparation of a browser for single scrapes). Close stops
// them: they run on a context of their own, not New's.
func (s *Service) startBackground() {
	bg, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Add(5)
	go func() {
		defer s.wg.Done()
		s.Monitors.Run(bg)
	}()
	go s.janitor()
	go s.heartbeat()
	go func() {
		defer s.wg.Done()
		s.search.run(bg)
	}()
	go func() {
		defer s.wg.Done()
		s.Webhooks.Run(bg)
	}()
	if s.Config.PreparesScrapeBrowser() {
		// A browser for single scrapes, with tabs ready, before the first.
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := s.Crawler.Scrape.Prepare(bg); err != nil && bg.Err() == nil {
				s.log.Warn("preparing a browser for single scrapes", "err", err)
			}
		}()
	}
}

// newHandler routes the CDP proxy, the live view, the metrics, the MCP
// server and the API on one mux; with a node secret set, requests for
// another node's sessions are forwarded to it. The MCP server's tools make
// their calls through the API's own handler.
func (s *Service) newHandler(a *api.API, urls wire.PublicURL) http.Handler {
	apiHandler := a.Handler()
	mcpServer := mcpserver.NewServer(mcpserver.InProcess(apiHandler), mcpserver.Options{Log: s.log})
	metricsRegistry := prometheus.NewRegistry()
	metricsRegistry.MustRegister(s.collectors()...)
	mux := http.NewServeMux()
	mux.Handle("/cdp/", s.Proxy)
	mux.Handle("/live/", liveview.New(s.Sessions, urls, s.log))
	mux.Handle("/replay/", &recording.Viewer{Archive: s.Recordings, Log: s.log})
	mux.Handle("GET /metrics", promhttp.HandlerFor(metricsRegistry, promhttp.HandlerOpts{}))
	mux.Handle("/v2/mcp", mcpserver.Handler(mcpServer, a.TeamOf, a.WriteError, s.log))
	mux.Handle("/", apiHandler)
	var h http.Handler = mux
	if s.Config.NodeSecret != "" {
		fwd := &forwarder{store: s.Store, sessions: s.Sessions, secret: s.Config.NodeSecret, log: s.log, lease: s.Config.NodeLease}
		h = fwd.wrap(mux)
	}
	return canonical(h)
}

// Handler serves the API, the CDP proxy and the metrics.
func (s *Service) Handler() http.Handler { return s.handler }

// Listening tells the service the address its handler is served on, so that
// no browser can reach it (TRAWLER_ADDR is denied from the start). Whoever
// serves the handler on another address must call it.
func (s *Service) Listening(addr string) { s.Egress.Deny(addr) }

// Close ends every session (clients get a close frame), stops every browser
// and closes the store.
func (s *Service) Close() {
	close(s.stop)
	s.cancel()
	s.wg.Wait()
	s.Extract.Close()
	s.Crawler.Close()
	s.Sessions.Close()
	s.closeExecute()
	s.Pool.Close()
	s.closeRuntime()
	s.Egress.Close()
	s.Proxy.Wait()
	s.search.close()
	s.docs.Close()
	s.Store.Close()
}

// heartbeat tells the nodes sharing the store that this one is alive,
// every third of a lease, and ends the sessions of those that stopped
// saying so for a whole lease. (Their jobs are claimed by the crawl
// service's lease renewal.)
func (s *Service) heartbeat() {
	defer s.wg.Done()
	lease := s.Config.NodeLease
	t := time.NewTicker(lease / 3)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), lease/3)
		now := time.Now()
		s.denyNodes()
		s.renewPlaces(ctx, now)
		if err := s.Store.Heartbeat(ctx, now); err != nil {
			s.log.Error("recording the node's heartbeat", "err", err)
		} else if n, err := s.Sessions.EndLost(ctx, now.Add(-lease)); err != nil {
			s.log.Error("ending the sessions of lost nodes", "err", err)
		} else if n > 0 {
			s.log.Warn("ended the sessions of a node that stopped", "sessions", n)
		}
		s.reapLost(ctx, now.Add(-lease))
		cancel()
	}
}

// renewPlaces keeps the team places this node's leases hold in a shared
// store valid for another lease.
func (s *Service) renewPlaces(ctx context.Context, now time.Time) {
	if s.Store.Postgres() == nil {
		return
	}
	if err := s.Store.RenewPlaces(ctx, now.Add(s.Config.NodeLease)); err != nil {
		s.log.Error("renewing the node's places", "err", err)
	}
}

// teamPlaces counts each team's browsers in the store the nodes share
// (store.TakePlace), so that a team's limit holds across the nodes at each
// request.
type teamPlaces struct {
	store *store.Store
	lease time.Duration
	log   *slog.Logger
}

func (t *teamPlaces) Take(ctx context.Context, team string, limit int) (bool, error) {
	now := time.Now()
	return t.store.TakePlace(ctx, store.TeamPlace(team), limit, now, now.Add(t.lease))
}

func (t *teamPlaces) Give(team string) {
	ctx, cancel := context.WithTimeout(context.Background(), t.lease/3)
	defer cancel()
	if err := t.store.GivePlace(ctx, store.TeamPlace(team)); err != nil {
		t.log.Warn("giving back a team's place", "team", team, "err", err)
	}
}

// denyNodes makes the addresses of the nodes sharing the store, as far as
// they are known, unreachable from this node's browsers.
func (s *Service) denyNodes() {
	ctx, cancel := context.WithTimeout(context.Background(), s.Config.NodeLease/3)
	defer cancel()
	s.deniedMu.Lock()
	defer s.deniedMu.Unlock()
	if s.denied == nil {
		s.denied = map[string]bool{}
	}
	if err := denyNodes(ctx, s.Store, s.Egress, s.denied, s.Config.NodeLease); err != nil {
		s.log.Error("reading the nodes' addresses", "err", err)
	}
}

// canonical answers a path with ., .. or empty segments, raw or
// percent-encoded, with a 404 in the API's error shape. net/http's ServeMux
// would redirect the first kind with an HTML page, and Fiber would resolve
// the second silently; every path Trawler serves is canonical, so neither
// is a path to anything.
func canonical(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.EscapedPath(); cleanPath(p) != p || cleanPath(r.URL.Path) != r.URL.Path {
			wire.WriteError(w, http.StatusNotFound, "NOT_FOUND",
				"no such endpoint: a path must be canonical, without ., .. or empty segments")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// cleanPath is net/http's canonical form of a path: rooted, without . and
// .. elements or repeated slashes, keeping a trailing slash.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}

func (s *Service) collectors() []prometheus.Collector {
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "trawler", Name: name, Help: help}, f)
	}
	return []prometheus.Collector{
		gauge("browsers_warm", "Idle browsers ready to lease.", func() float64 { return float64(s.Pool.Stats().Idle) }),
		gauge("browsers_leased", "Browsers leased to sessions and jobs.", func() float64 { return float64(s.Pool.Stats().Leased) }),
		gauge("browsers_reserved", "Places in the pool held by job lanes that have no browser yet.", func() float64 { return float64(s.Pool.Stats().Reserved) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "trawler", Name: "browser_shared_leases_total", Help: "Single scrapes that rendered in a browser other scrapes were rendering in (a context each)."},
			func() float64 { return float64(s.Pool.Stats().Joined) }),
		gauge("browsers_starting", "Browsers starting.", func() float64 { return float64(s.Pool.Stats().Starting) }),
		gauge("browsers_total", "Browsers alive or starting.", func() float64 { return float64(s.Pool.Stats().Total) }),
		gauge("pool_waiters", "Requests waiting for a browser.", func() float64 { return float64(s.Pool.Stats().Waiters) }),
		gauge("cdp_connections", "Open CDP client connections.", func() float64 { return float64(s.Proxy.Connections()) }),
		&sessionCollector{s: s, desc: prometheus.NewDesc("trawler_sessions", "Browser sessions by status.", []string{"status"}, nil)},
		&egressCollector{p: s.Egress, desc: prometheus.NewDesc("trawler_egress_bytes", "Bytes browsers received (in) and sent (out) through the egress proxy since start, by team.", []string{"team", "direction"}, nil)},
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "trawler", Name: "scrape_recycled_tabs_total", Help: "Single scrapes that ran in a tab of their team's that an earlier scrape used, cleared between."},
			func() float64 { return float64(s.Crawler.Scrape.Recycled()) }),
		gauge("scrape_spare_tabs", "Blank tabs ready for single scrapes, each in a fresh browser context (TRAWLER_SPARE_TABS).",
			func() float64 { n, _, _ := s.Crawler.Scrape.SpareTabsReady(); return float64(n) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "trawler", Name: "scrape_spare_tabs_taken_total", Help: "Single scrapes that ran in a spare tab."},
			func() float64 { _, _, n := s.Crawler.Scrape.SpareTabsReady(); return float64(n) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "trawler", Name: "renders_total", Help: "Pages rendered by scrapes and jobs since start."},
			func() float64 { n, _, _ := s.Crawler.Scrape.Renders.Read(); return float64(n) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "trawler", Name: "render_seconds_total", Help: "Time rendered pages took after their navigation committed: settle wait, waitFor, actions and capture."},
			func() float64 { _, d, _ := s.Crawler.Scrape.Renders.Read(); return d.Seconds() }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "trawler", Name: "render_settle_seconds_total", Help: "Of render_seconds_total, the wait for pages to settle after their load event."},
			func() float64 { _, _, d := s.Crawler.Scrape.Renders.Read(); return d.Seconds() }),
		&storeCollector{s: s.Store, desc: prometheus.NewDesc("trawler_store_failures_total", "Store operations that failed for the store's own state since start: its disk full (full) or its database unreachable (unavailable).", []string{"kind"}, nil)},
		gauge("model_calls_in_flight", "Language-model requests being answered.", s.modelStat(func(m model.Stats) int64 { return m.InFlight })),
		gauge("model_calls_in_flight_max", "Most language-model requests answered at once since start.", s.modelStat(func(m model.Stats) int64 { return m.MaxInFlight })),
		gauge("model_calls", "Language-model calls made since start.", s.modelStat(func(m model.Stats) int64 { return m.Calls })),
		gauge("model_call_failures", "Language-model calls that failed since start.", s.modelStat(func(m model.Stats) int64 { return m.Failures })),
	}
}

// modelStat reads one of the model client's counters, 0 without a model.
func (s *Service) modelStat(f func(model.Stats) int64) func() float64 {
	return func() float64 {
		if s.Model == nil {
			return 0
		}
		return float64(f(s.Model.Stats()))
	}
}

// storeCollector counts the store's faults by kind (store.FaultError).
type storeCollector struct {
	s    *store.Store
	desc *prometheus.Desc
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	full, unavailable := c.s.Failures()
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(full), "full")
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(unavailable), "unavailable")
}

type sessionCollector struct {
	s    *Service
	desc *prometheus.Desc
}

func (c *sessionCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *sessionCollector) Collect(ch chan<- prometheus.Metric) {
	counts, err := c.s.Store.CountSessions(context.Background())
	if err != nil {
		c.s.log.Error("counting sessions for metrics", "err", err)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(c.s.Sessions.Stats()), "active")
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts["destroyed"]), "destroyed")
}
