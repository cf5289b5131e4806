package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver

	"github.com/trawler-dev/trawler/cmd/bench/transform"
	"github.com/trawler-dev/trawler/wire"
)

const (
	// testDatabaseEnv names the admin URL of the PostgreSQL server that
	// scripts/pgtest.sh starts (test/pgdb reads it too).
	testDatabaseEnv = "TRAWLER_TEST_DATABASE_URL"
	// failoverLease is the nodes' TRAWLER_NODE_LEASE in the failover
	// measurement.
	failoverLease = 5 * time.Second
	// failoverPages is the slow site's pages, failoverDelay how late each
	// answers, and failoverKillAt the pages completed when node A is killed.
	failoverPages  = 200
	failoverDelay  = 100 * time.Millisecond
	failoverKillAt = 20
	// benchAPIKeys are the two teams of the two-node measurement (and the
	// failover's nodes' keys), clusterKeyA and clusterKeyB their keys.
	clusterKeyA  = "alpha-bench-key-0001"
	clusterKeyB  = "bravo-bench-key-0002"
	benchAPIKeys = "alpha:" + clusterKeyA + ",bravo:" + clusterKeyB
)

// clusterPerformance measures Trawler on PostgreSQL and as two nodes
// sharing one PostgreSQL database, on the server scripts/pgtest.sh starts
// (TRAWLER_TEST_DATABASE_URL; `make bench` runs the bench under it; without
// it the phase says so and measures nothing). Every service gets a database
// of its own, created for it (CREATE DATABASE) and dropped at the end of
// the phase; the sites are served on 127.0.0.1.
//
//   - store: the crawl phase's crawl (POST /v2/crawl of Python's HTML
//     documentation from python3.11-doc, served by net/http's FileServer,
//     from its root, limit 1000, formats markdown, on a fresh in-process
//     service with the default pool and lanes: TRAWLER_POOL_SIZE 8,
//     TRAWLER_JOB_WORKERS 4) with the SQLite store in its data directory,
//     and with TRAWLER_DATABASE_URL set to a fresh PostgreSQL database;
//     pages completed per second of wall time from the POST to the status
//     completed. They run alternately, SQLite, PostgreSQL, SQLite,
//     PostgreSQL, and the better run of each store counts
//     (store_postgres_over_sqlite).
//   - cluster: two crawls of the same site at once, each for a team of its
//     own (TRAWLER_API_KEYS with two teams, so that neither team's limits
//     nor cache couple them) with scrapeOptions maxAge 0 (no page answered
//     from a cache), on one in-process service on a fresh PostgreSQL
//     database with the whole pool (TRAWLER_POOL_SIZE 8, TRAWLER_JOB_WORKERS
//     4: both crawls submitted to it), and on two in-process services (two
//     nodes: data directories of their own, so instances of their own)
//     sharing one fresh PostgreSQL database, each with half of it
//     (TRAWLER_POOL_SIZE 4, TRAWLER_JOB_WORKERS 2), one crawl submitted to
//     each. Pages completed by both crawls over the wall time from the
//     first POST until both are completed. Single node, two nodes, single,
//     two, and the better run of each counts (cluster2_over_single). Both
//     nodes run in this process, on the same cores: each node's search
//     index also takes the other node's pages (from the database's log of
//     cached pages, converted again from the stored page), work that two
//     machines would each do on their own, and that one node does not do.
//   - failover: two `trawler serve` processes (built from this tree), node
//     A and node B, on one fresh PostgreSQL database with TRAWLER_NODE_LEASE
//     5s; a crawl on node A (sitemap skip, crawlEntireDomain) of a loopback
//     site of 200 pages, each answering 100 ms late and linking to the next
//     two; once node A has completed 20 pages it is killed with SIGKILL, and
//     node B's GET /v2/crawl/{id} is polled every 50 ms until its completed
//     count grows past what it was right after the kill: failover_resume_s
//     is the time from the kill to that answer, against the lease plus 2 s
//     (failover_resume_over_lease_plus_2s; node B claims the job once its
//     lease has run out, at its next lease check, every third of a lease).
//     Node B then finishes the crawl (each page once, checked), is stopped
//     with SIGTERM, and neither node's Chromium processes may be left.
//
// Beside each crawl the CPU time of this process and of the PostgreSQL
// server's processes (the postmaster, its backends and the backends it
// reaped) is logged, per 1000 pages, and for each PostgreSQL database the
// transactions and rows per page (pg_stat_database).
func (b *bench) clusterPerformance(ctx context.Context, _ *instance) error {
	admin := os.Getenv(testDatabaseEnv)
	if admin == "" {
		logf("cluster: skipped: the phase needs a PostgreSQL server in %s (make bench runs the bench under scripts/pgtest.sh, which starts one: scripts/pgtest.sh go run ./cmd/bench -only cluster)", testDatabaseEnv)
		return nil
	}
	if _, err := os.Stat(filepath.Join(transform.PythonDocs, "index.html")); err != nil {
		return fmt.Errorf("the cluster phase crawls %s: install python3.11-doc (make bench does): %w", transform.PythonDocs, err)
	}
	pg, err := openPGAdmin(ctx, admin)
	if err != nil {
		return err
	}
	defer pg.close()
	logf("cluster: PostgreSQL %s at %s, a database of its own for each service", pg.version, pg.base.Redacted())

	site := &countingSite{h: http.FileServer(http.Dir(transform.PythonDocs))}
	srv := httptest.NewServer(site)
	defer srv.Close()
	root := srv.URL + "/"

	if err := b.storeComparison(ctx, pg, root, site); err != nil {
		return err
	}
	if err := b.clusterThroughput(ctx, pg, root, site); err != nil {
		return err
	}
	return b.failover(ctx, pg)
}

// storeComparison is the store measurement: the crawl on SQLite and on
// PostgreSQL, alternately, twice each.
func (b *bench) storeComparison(ctx context.Context, pg *pgAdmin, root string, site *countingSite) error {
	var sqlite, postgres []storeRun
	for i := 1; i <= 2; i++ {
		r, err := b.storeCrawl(ctx, fmt.Sprintf("cluster-sqlite-%d", i), root, site, pg, "")
		if err != nil {
			return err
		}
		sqlite = append(sqlite, r)
		db, err := pg.create(ctx)
		if err != nil {
			return err
		}
		r, err = b.storeCrawl(ctx, fmt.Sprintf("cluster-postgres-%d", i), root, site, pg, db)
		if err != nil {
			return err
		}
		postgres = append(postgres, r)
	}
	s, p := sqlite[0], postgres[0]
	if better("crawl on SQLite", "first", "second", s.rate(), sqlite[1].rate()) {
		s = sqlite[1]
	}
	if better("crawl on PostgreSQL", "first", "second", p.rate(), postgres[1].rate()) {
		p = postgres[1]
	}
	if s.completed != p.completed {
		logf("note: the crawl completed %d pages on SQLite, %d on PostgreSQL", s.completed, p.completed)
	}
	figure("crawl_sqlite_pages_per_s", s.rate(), "pages/s")
	figure("crawl_postgres_pages_per_s", p.rate(), "pages/s")
	figure("store_postgres_over_sqlite", p.rate()/s.rate(), "x")
	return nil
}

// storeRun is one timed crawl, or two at once.
type storeRun struct {
	completed int
	wall      time.Duration
}

func (r storeRun) rate() float64 { return rate(r.completed, r.wall) }

// storeCrawl crawls root on a fresh service named name, on the PostgreSQL
// database db or, when db is "", on SQLite, and closes it.
func (b *bench) storeCrawl(ctx context.Context, name, root string, site *countingSite, pg *pgAdmin, db string) (storeRun, error) {
	env := scrapeEnv(poolSize, 120*time.Second)
	store := "SQLite"
	if db != "" {
		env["TRAWLER_DATABASE_URL"] = db
		store = "PostgreSQL"
	}
	in, err := b.startWith(ctx, name, 1, poolSize, env)
	if err != nil {
		return storeRun{}, err
	}
	defer in.Close()
	cfg := in.svc.Config
	logf("%s: %s store, pool size %d, %d lanes, %d warm browser", name, store, cfg.PoolSize, cfg.JobWorkers, cfg.WarmBrowsers)
	r, err := b.timedCrawls(ctx, name, []*instance{in}, root, site, pg, map[string]any{"formats": []string{"markdown"}})
	if err != nil {
		return r, err
	}
	if err := closeInstances(in); err != nil {
		return r, err
	}
	if db != "" {
		pg.logActivity(ctx, name, db, r.completed)
	}
	return r, nil
}

// clusterThroughput is the two-node measurement: two crawls at once on
// one node with the whole pool, and on two nodes with half of it each.
func (b *bench) clusterThroughput(ctx context.Context, pg *pgAdmin, root string, site *countingSite) error {
	var single, cluster []storeRun
	for i := 1; i <= 2; i++ {
		r, err := b.clusterRound(ctx, fmt.Sprintf("cluster-single-%d", i), 1, root, site, pg)
		if err != nil {
			return err
		}
		single = append(single, r)
		r, err = b.clusterRound(ctx, fmt.Sprintf("cluster-two-%d", i), 2, root, site, pg)
		if err != nil {
			return err
		}
		cluster = append(cluster, r)
	}
	s, c := single[0], cluster[0]
	if better("two crawls on one node", "first", "second", s.rate(), single[1].rate()) {
		s = single[1]
	}
	if better("two crawls on two nodes", "first", "second", c.rate(), cluster[1].rate()) {
		c = cluster[1]
	}
	figure("cluster_single_pages_per_s", s.rate(), "pages/s")
	figure("cluster2_pages_per_s", c.rate(), "pages/s")
	figure("cluster2_over_single", c.rate()/s.rate(), "x")
	return nil
}

// clusterRound starts nodes services on one fresh database, the pool and
// the lanes split among them, crawls root twice at once, for two teams
// (one crawl to each node when there are two) and closes them.
func (b *bench) clusterRound(ctx context.Context, name string, nodes int, root string, site *countingSite, pg *pgAdmin) (storeRun, error) {
	db, err := pg.create(ctx)
	if err != nil {
		return storeRun{}, err
	}
	size := poolSize / nodes
	env := scrapeEnv(size, 120*time.Second)
	env["TRAWLER_DATABASE_URL"] = db
	env["TRAWLER_API_KEYS"] = benchAPIKeys
	env["TRAWLER_POOL_SIZE"] = strconv.Itoa(size)
	env["TRAWLER_JOB_WORKERS"] = strconv.Itoa(max(1, size/2))
	var ins []*instance
	for i := 0; i < nodes; i++ {
		n := name
		if nodes > 1 {
			n = fmt.Sprintf("%s-%c", name, 'a'+i)
		}
		in, err := b.startWith(ctx, n, 1, size, env)
		if err != nil {
			return storeRun{}, err
		}
		defer in.Close()
		cfg := in.svc.Config
		logf("%s: PostgreSQL store, node %s, pool size %d, %d lanes, team concurrency %d, %d warm browser",
			n, cfg.Instance, cfg.PoolSize, cfg.JobWorkers, cfg.TeamConcurrency, cfg.WarmBrowsers)
		ins = append(ins, in)
	}
	// Team alpha's crawl goes to the first node, team bravo's to the last.
	views := []*instance{ins[0].as(clusterKeyA), ins[len(ins)-1].as(clusterKeyB)}
	r, err := b.timedCrawls(ctx, name, views, root, site, pg, map[string]any{"formats": []string{"markdown"}, "maxAge": 0})
	if err != nil {
		return r, err
	}
	if err := closeInstances(ins...); err != nil {
		return r, err
	}
	pg.logActivity(ctx, name, db, r.completed)
	return r, nil
}

// timedCrawls crawls root once through each of views at once, timed from
// the first POST until every crawl is completed, with the CPU spent by
// this process and by the PostgreSQL server meanwhile, and reads each
// crawl's documents back.
func (b *bench) timedCrawls(ctx context.Context, name string, views []*instance, root string, site *countingSite, pg *pgAdmin, scrapeOptions map[string]any) (storeRun, error) {
	var r storeRun
	ctx, cancel, body, err := readyToCrawl(ctx, views, root, scrapeOptions)
	if err != nil {
		return r, err
	}
	defer cancel()
	before, cpu0 := site.snapshot(), pg.cpu()
	t := time.Now()
	ids := make([]string, len(views))
	for i, v := range views {
		if ids[i], err = v.startCrawl(ctx, body); err != nil {
			return r, fmt.Errorf("%s: %w", name, err)
		}
	}
	completed, totals := make([]int, len(views)), make([]int, len(views))
	errs := make([]error, len(views))
	var wg sync.WaitGroup
	for i, v := range views {
		wg.Add(1)
		go func() {
			defer wg.Done()
			label := name
			if len(views) > 1 {
				label = fmt.Sprintf("%s crawl %d", name, i+1)
			}
			completed[i], totals[i], errs[i] = v.waitCrawl(ctx, label, ids[i], t)
		}()
	}
	wg.Wait()
	crawled := time.Since(t)
	if err := errors.Join(errs...); err != nil {
		return r, fmt.Errorf("%s: %w", name, err)
	}
	// The pages count once search finds them too: the embedded index
	// gathers a crawl's pages for seconds before it indexes them, the
	// index in PostgreSQL takes each page as it is cached.
	for _, v := range views {
		if err := v.waitSearchable(ctx); err != nil {
			return r, fmt.Errorf("%s: %w", name, err)
		}
	}
	r.wall = time.Since(t)
	cpu := pg.cpu().since(cpu0)
	logf("%s: crawled in %s, searchable %s later", name, crawled.Round(time.Millisecond), (r.wall - crawled).Round(time.Millisecond))
	var parts []string
	for i, v := range views {
		r.completed += completed[i]
		docs, err := v.crawlDocuments(ctx, ids[i])
		if err != nil {
			return r, fmt.Errorf("%s: %w", name, err)
		}
		parts = append(parts, fmt.Sprintf("%d of %d (%d documents read back from %s)", completed[i], totals[i], docs.n, v.name))
		if completed[i] != totals[i] {
			v.logCrawlErrors(ctx, name, ids[i])
		}
	}
	logf("%s: %s pages completed in %s (%.2f pages/s); the site served %s", name, strings.Join(parts, " and "),
		r.wall.Round(time.Millisecond), r.rate(), site.since(before))
	per := 1000 / float64(max(1, r.completed))
	logf("%s: CPU per 1000 pages: this process %.1f s, the PostgreSQL server %.1f s (%d of its processes seen); the machine's 1-minute load average %s",
		name, cpu.self.Seconds()*per, cpu.postgres.Seconds()*per, cpu.procs, loadAvg())
	return r, nil
}

// waitSearchable waits until in's search index holds every page its store
// holds: until a search answers without the index's warning that it is
// behind (each search asks the index to catch up at once).
func (in *instance) waitSearchable(ctx context.Context) error {
	body := []byte(`{"query":"python","limit":1}`)
	return pollEvery(ctx, 60*time.Second, in.name+"'s search index to hold every page", func() (bool, error) {
		var res struct {
			Warning string `json:"warning"`
		}
		if err := in.do(ctx, http.MethodPost, "/v2/search", body, &res); err != nil {
			return false, err
		}
		return !strings.Contains(res.Warning, "search index"), nil
	})
}

// as is a view of in that calls it with an API key.
func (in *instance) as(key string) *instance {
	v := *in
	v.client = &http.Client{Timeout: in.client.Timeout, Transport: bearer{key: key, next: in.client.Transport}}
	return &v
}

// bearer adds an API key to every request.
type bearer struct {
	key  string
	next http.RoundTripper
}

func (t bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.key)
	return t.next.RoundTrip(r)
}

// startCrawl is POST /v2/crawl; it returns the crawl's id.
func (in *instance) startCrawl(ctx context.Context, body []byte) (string, error) {
	var started struct {
		ID string `json:"id"`
	}
	if err := in.do(ctx, http.MethodPost, "/v2/crawl", body, &started); err != nil {
		return "", err
	}
	if started.ID == "" {
		return "", errors.New("POST /v2/crawl answered without an id")
	}
	return started.ID, nil
}

// closeInstances closes services and checks that none of their Chromium
// processes is left.
func closeInstances(ins ...*instance) error {
	for _, in := range ins {
		in.Close()
	}
	for _, in := range ins {
		if err := waitNoBrowsers(in.dataDir, 10*time.Second); err != nil {
			return fmt.Errorf("%s: %w", in.name, err)
		}
	}
	return nil
}

// failover kills a node running a crawl and times its takeover by the
// other node.
func (b *bench) failover(ctx context.Context, pg *pgAdmin) error {
	bin := filepath.Join(b.tmp, "trawler")
	t := time.Now()
	if err := buildTrawler(ctx, bin); err != nil {
		return err
	}
	logf("failover: built %s in %s", bin, time.Since(t).Round(time.Millisecond))
	db, err := pg.create(ctx)
	if err != nil {
		return err
	}
	site, hits := slowChainSite(failoverPages, failoverDelay)
	defer site.Close()

	a, err := b.startNode(ctx, bin, "failover-a", db)
	if err != nil {
		return err
	}
	defer a.stop()
	nb, err := b.startNode(ctx, bin, "failover-b", db)
	if err != nil {
		return err
	}
	defer nb.stop()

	body, _ := json.Marshal(map[string]any{"url": site.URL + "/p/0", "limit": crawlLimit, "sitemap": "skip", "crawlEntireDomain": true})
	start := time.Now()
	id, err := a.api.startCrawl(ctx, body)
	if err != nil {
		return fmt.Errorf("failover: node A: %w", err)
	}
	lags, err := watchUntilKill(ctx, a, nb, id, start)
	if err != nil {
		return fmt.Errorf("failover: %w", err)
	}
	resumed, err := killAndTakeOver(ctx, a, nb, id)
	if err != nil {
		return fmt.Errorf("failover: %w", err)
	}
	if err := finishAfterFailover(ctx, nb, id, start, hits); err != nil {
		return fmt.Errorf("failover: %w", err)
	}
	if err := nb.terminate(30 * time.Second); err != nil {
		return fmt.Errorf("failover: %w", err)
	}
	a.tail(5)
	nb.tail(5)
	figure("cluster_watch_lag_ms", ms(median(lags)), "ms")
	figure("failover_resume_s", resumed.Seconds(), "s")
	figure("failover_lease_s", failoverLease.Seconds(), "s")
	figure("failover_resume_over_lease_plus_2s", resumed.Seconds()/(failoverLease+2*time.Second).Seconds(), "x")
	return nil
}

// buildTrawler builds cmd/trawler from this tree into bin, so that a stale
// bin/trawler is never measured.
func buildTrawler(ctx context.Context, bin string) error {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		goCmd = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	if out, err := exec.CommandContext(ctx, goCmd, "build", "-o", bin, "./cmd/trawler").CombinedOutput(); err != nil {
		return fmt.Errorf("building trawler: %v\n%s", err, out)
	}
	return nil
}

// watchUntilKill watches crawl id's WebSocket on node a (which runs it)
// and on node nb (which follows it through the database) until a has
// completed failoverKillAt pages, and returns how late nb's watcher got
// each document they both got.
func watchUntilKill(ctx context.Context, a, nb *node, id string, start time.Time) ([]time.Duration, error) {
	onA, err := watchArrivals(ctx, a.api, "/v2/crawl/"+id)
	if err != nil {
		return nil, fmt.Errorf("watching on node A: %w", err)
	}
	onB, err := watchArrivals(ctx, nb.api, "/v2/crawl/"+id)
	if err != nil {
		return nil, fmt.Errorf("watching on node B: %w", err)
	}
	var done int
	if err := pollEvery(ctx, 60*time.Second, fmt.Sprintf("node A to complete %d pages", failoverKillAt), func() (bool, error) {
		st, err := a.api.crawlStatus(ctx, id)
		done = st.Completed
		return done >= failoverKillAt, err
	}); err != nil {
		return nil, err
	}
	lags := lagsBehind(onB.stop(), onA.stop())
	if len(lags) == 0 {
		return nil, errors.New("the watchers on node A and node B got no document in common")
	}
	logf("failover: node B's watcher got %d documents %s after node A's (median; p90 %s, max %s)", len(lags),
		median(lags).Round(time.Millisecond), pct(lags, 0.9).Round(time.Millisecond), slices.Max(lags).Round(time.Millisecond))
	logf("failover: node A completed %d pages in %s; killing it with SIGKILL", done, time.Since(start).Round(time.Millisecond))
	return lags, nil
}

// killAndTakeOver kills node a with SIGKILL and returns how long node nb
// took to record pages of crawl id again.
func killAndTakeOver(ctx context.Context, a, nb *node, id string) (time.Duration, error) {
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return 0, err
	}
	a.cmd.Wait()
	a.waited = true
	killed := time.Now()
	st, err := nb.api.crawlStatus(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("node B: %w", err)
	}
	recorded := st.Completed
	logf("failover: node B reads %d pages completed right after the kill (status %s)", recorded, st.Status)
	var resumed time.Duration
	var now int
	if err := pollEvery(ctx, 60*time.Second, "node B to record pages of the crawl again", func() (bool, error) {
		st, err := nb.api.crawlStatus(ctx, id)
		resumed, now = time.Since(killed), st.Completed
		return now > recorded, err
	}); err != nil {
		return 0, err
	}
	logf("failover: node B recorded pages again %s after the kill (%d completed; lease %s, checked every %s)",
		resumed.Round(time.Millisecond), now, failoverLease, failoverLease/3)
	// A's browsers leave when their DevTools pipe closes.
	if err := a.reap(15 * time.Second); err != nil {
		return 0, err
	}
	return resumed, nil
}

// finishAfterFailover waits for node nb to finish crawl id and checks that
// each page is in it once; hits says how often the site served a path.
func finishAfterFailover(ctx context.Context, nb *node, id string, start time.Time, hits func(string) int) error {
	completed, total, err := nb.api.waitCrawl(ctx, "failover node B", id, start)
	if err != nil {
		return err
	}
	docs, err := nb.api.crawlDocuments(ctx, id)
	if err != nil {
		return err
	}
	dup := 0
	for _, urls := range docs.urls {
		seen := map[string]bool{}
		for _, u := range urls {
			if seen[u] {
				dup++
			}
			seen[u] = true
		}
	}
	refetched := 0
	for i := 0; i < failoverPages; i++ {
		if n := hits(fmt.Sprintf("/p/%d", i)); n > 1 {
			refetched += n - 1
		}
	}
	logf("failover: node B finished the crawl in %s: %d of %d pages completed, %d documents (by status code: %s), %d duplicate documents; %d pages fetched again (those node A had in flight)",
		time.Since(start).Round(time.Millisecond), completed, total, docs.n, countSplit(docs.statuses), dup, refetched)
	if dup > 0 {
		return fmt.Errorf("%d documents appear twice in the crawl node B finished", dup)
	}
	return nil
}

// node is a `trawler serve` process.
type node struct {
	name    string
	cmd     *exec.Cmd
	dataDir string
	logPath string
	api     *instance // its API, with the first team's key; no service in this process
	waited  bool      // the process has exited and been waited for
	reaped  bool      // its browsers are gone
}

// startNode starts a trawler serve process on database db with its own
// data directory, on a free 127.0.0.1 port, and waits until it answers.
func (b *bench) startNode(ctx context.Context, bin, name, db string) (*node, error) {
	return startServe(ctx, b.tmp, bin, name, bearer{key: clusterKeyA, next: &http.Transport{MaxIdleConnsPerHost: 4}},
		"TRAWLER_API_KEYS="+benchAPIKeys, "TRAWLER_DATABASE_URL="+db, "TRAWLER_NODE_LEASE="+failoverLease.String())
}

// startServe starts bin serve with a data directory of its own under tmp,
// private networks allowed (the bench's pages are on loopback) and the
// settings extra, on a free 127.0.0.1 port, and waits until it answers.
// Of this process's environment it inherits only what is not Trawler's,
// the browser's path and the bench's process marker. Its API client
// sends through transport.
func startServe(ctx context.Context, tmp, bin, name string, transport http.RoundTripper, extra ...string) (*node, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	n := &node{name: name, dataDir: filepath.Join(tmp, name), logPath: filepath.Join(tmp, name+".log")}
	if err := os.MkdirAll(n.dataDir, 0o755); err != nil {
		return nil, err
	}
	logFile, err := os.Create(n.logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TRAWLER_") || strings.HasPrefix(kv, markerEnv+"=") || strings.HasPrefix(kv, "TRAWLER_CHROMIUM_PATH=") {
			env = append(env, kv)
		}
	}
	env = append(env, "TRAWLER_DATA_DIR="+n.dataDir, "TRAWLER_ADDR="+addr, "TRAWLER_ALLOW_PRIVATE_NETWORKS=true",
		"TRAWLER_LOG_LEVEL=warn")
	env = append(env, extra...)
	n.cmd = exec.Command(bin, "serve")
	n.cmd.Env = env
	n.cmd.Stdout, n.cmd.Stderr = logFile, logFile
	if err := n.cmd.Start(); err != nil {
		return nil, err
	}
	n.api = &instance{name: name, dataDir: n.dataDir, base: "http://" + addr,
		client: &http.Client{Timeout: 30 * time.Second, Transport: transport}}
	err = pollEvery(ctx, 30*time.Second, name+" to answer /healthz", func() (bool, error) {
		resp, err := http.Get(n.api.base + "/healthz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		n.stop()
		n.tail(20)
		return nil, err
	}
	logf("%s: trawler serve, pid %d, at %s, data directory %s", name, n.cmd.Process.Pid, n.api.base, n.dataDir)
	return n, nil
}

// terminate stops the node with SIGTERM, as an operator would, waits up
// to d for it to exit and for its browsers to be gone.
func (n *node) terminate(d time.Duration) error {
	if n.waited {
		return nil
	}
	t := time.Now()
	n.cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan error, 1)
	go func() { exited <- n.cmd.Wait() }()
	select {
	case err := <-exited:
		n.waited = true
		if err != nil {
			logf("%s: exited after SIGTERM: %v", n.name, err)
		}
	case <-time.After(d):
		n.cmd.Process.Kill()
		<-exited
		n.waited = true
		return fmt.Errorf("%s did not exit within %s of SIGTERM", n.name, d)
	}
	logf("%s: exited %s after SIGTERM", n.name, time.Since(t).Round(time.Millisecond))
	return n.reap(10 * time.Second)
}

// reap waits up to d for the node's (exited) browsers to be gone, then
// kills any left and says so.
func (n *node) reap(d time.Duration) error {
	t := time.Now()
	var left map[int][]proc
	for deadline := t.Add(d); ; time.Sleep(50 * time.Millisecond) {
		left = browserProcs(n.dataDir)
		if len(left) == 0 {
			n.reaped = true
			logf("%s: no Chromium process of the node left %s after it exited", n.name, time.Since(t).Round(time.Millisecond))
			return nil
		}
		if time.Now().After(deadline) {
			break
		}
	}
	for _, ps := range left {
		for _, p := range ps {
			logf("%s: left behind: pid %d %s", n.name, p.pid, wire.Truncate(p.joined(), 160))
			syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
	n.reaped = true
	return fmt.Errorf("%d Chromium processes of %s were still running %s after it exited", countLive(left), n.name, d)
}

// stop kills the node if it still runs, and its browsers with it (for the
// error paths).
func (n *node) stop() {
	if !n.waited {
		n.cmd.Process.Kill()
		n.cmd.Wait()
		n.waited = true
	}
	if n.reaped {
		return
	}
	if err := n.reap(15 * time.Second); err != nil {
		logf("%v", err)
	}
}

// tail logs the last lines of the node's log.
func (n *node) tail(lines int) {
	raw, err := os.ReadFile(n.logPath)
	if err != nil || len(bytes.TrimSpace(raw)) == 0 {
		return
	}
	all := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	logf("%s: the last %d of its %d log lines:", n.name, min(lines, len(all)), len(all))
	for _, l := range all[max(0, len(all)-lines):] {
		logf("  %s", wire.Truncate(l, 300))
	}
}

// crawlState is what GET /v2/crawl/{id} says of a crawl's progress.
type crawlState struct {
	Status    string `json:"status"`
	Completed int    `json:"completed"`
	Total     int    `json:"total"`
}

func (in *instance) crawlStatus(ctx context.Context, id string) (crawlState, error) {
	var st crawlState
	err := in.do(ctx, http.MethodGet, "/v2/crawl/"+id+"?limit=1", nil, &st)
	return st, err
}

// pollEvery calls ok every 50 ms until it holds, fails after d, or fails
// on the third error in a row.
func pollEvery(ctx context.Context, d time.Duration, what string, ok func() (bool, error)) error {
	deadline := time.Now().Add(d)
	failed := 0
	for {
		done, err := ok()
		if done && err == nil {
			return nil
		}
		if err != nil {
			if failed++; failed == 3 {
				return fmt.Errorf("waiting for %s: %w", what, err)
			}
		} else {
			failed = 0
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not happen within %s", what, d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// slowChainSite serves pages /p/0 to /p/{n-1} on 127.0.0.1, each answering
// delay late and linking to the next two, and counts the requests for
// each path.
func slowChainSite(n int, delay time.Duration) (*httptest.Server, func(string) int) {
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		var i int
		if _, err := fmt.Sscanf(r.URL.Path, "/p/%d", &i); err != nil || i < 0 || i >= n {
			http.NotFound(w, r)
			return
		}
		time.Sleep(delay)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<html><head><title>Page %d</title></head><body><main><h1>Page %d</h1><p>%s</p>
<a href="/p/%d">next</a> <a href="/p/%d">after</a></main></body></html>`, i, i, strings.Repeat("Words on a chained page. ", 12), i+1, i+2)
	}))
	return srv, func(p string) int {
		mu.Lock()
		defer mu.Unlock()
		return hits[p]
	}
}

// pgAdmin creates the phase's databases on the test server and drops them.
type pgAdmin struct {
	db      *sql.DB
	base    *url.URL
	version string
	prefix  string
	made    []string
}

func openPGAdmin(ctx context.Context, raw string) (*pgAdmin, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", testDatabaseEnv, err)
	}
	db, err := sql.Open("pgx", raw)
	if err != nil {
		return nil, err
	}
	p := &pgAdmin{db: db, base: u}
	if err := db.QueryRowContext(ctx, `SHOW server_version`).Scan(&p.version); err != nil {
		db.Close()
		return nil, fmt.Errorf("connecting to %s (%s): %w", testDatabaseEnv, u.Redacted(), err)
	}
	var rnd [4]byte
	rand.Read(rnd[:])
	p.prefix = "trawler_bench_" + hex.EncodeToString(rnd[:])
	return p, nil
}

// create makes a fresh database and returns its URL.
func (p *pgAdmin) create(ctx context.Context) (string, error) {
	name := fmt.Sprintf("%s_%d", p.prefix, len(p.made)+1)
	if _, err := p.db.ExecContext(ctx, `CREATE DATABASE `+name); err != nil {
		return "", fmt.Errorf("creating database %s: %w", name, err)
	}
	p.made = append(p.made, name)
	u := *p.base
	u.Path = "/" + name
	return u.String(), nil
}

// close drops every database the phase made.
func (p *pgAdmin) close() {
	for _, name := range p.made {
		if _, err := p.db.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`); err != nil {
			logf("dropping database %s: %v", name, err)
		}
	}
	p.db.Close()
}

// logActivity logs what the services did to database dbURL (closed by
// now, so that their backends have reported it), per page: transactions
// committed and rows written and read, from pg_stat_database.
func (p *pgAdmin) logActivity(ctx context.Context, name, dbURL string, pages int) {
	u, err := url.Parse(dbURL)
	if err != nil || pages == 0 {
		return
	}
	time.Sleep(500 * time.Millisecond) // the exited backends' statistics
	var commits, rollbacks, inserted, updated, deleted, returned, fetched int64
	err = p.db.QueryRowContext(ctx, `SELECT xact_commit, xact_rollback, tup_inserted, tup_updated, tup_deleted, tup_returned, tup_fetched
		FROM pg_stat_database WHERE datname = $1`, strings.TrimPrefix(u.Path, "/")).
		Scan(&commits, &rollbacks, &inserted, &updated, &deleted, &returned, &fetched)
	if err != nil {
		logf("%s: reading pg_stat_database: %v", name, err)
		return
	}
	per := func(n int64) float64 { return float64(n) / float64(pages) }
	logf("%s: the database per page completed, from the services' start to their close: %.1f transactions committed (%.2f rolled back), rows inserted %.1f, updated %.1f, deleted %.1f, returned by scans %.0f, fetched by index %.1f",
		name, per(commits), per(rollbacks), per(inserted), per(updated), per(deleted), per(returned), per(fetched))
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		return
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT relname, n_tup_ins, n_tup_upd + n_tup_hot_upd FROM pg_stat_user_tables
		WHERE n_tup_ins + n_tup_upd > 0 ORDER BY n_tup_ins + n_tup_upd DESC LIMIT 6`)
	if err != nil {
		logf("%s: reading pg_stat_user_tables: %v", name, err)
		return
	}
	defer rows.Close()
	var tables []string
	for rows.Next() {
		var rel string
		var ins, upd int64
		if rows.Scan(&rel, &ins, &upd) == nil {
			tables = append(tables, fmt.Sprintf("%s %.1f/%.1f", rel, per(ins), per(upd)))
		}
	}
	logf("%s: rows inserted/updated per page, by table: %s", name, strings.Join(tables, ", "))
}

// cpuSpent is CPU time used by this process and by the PostgreSQL server.
type cpuSpent struct {
	self, postgres time.Duration
	procs          int // the server's processes seen
}

func (c cpuSpent) since(before cpuSpent) cpuSpent {
	return cpuSpent{self: c.self - before.self, postgres: c.postgres - before.postgres, procs: c.procs}
}

// cpu reads the CPU time of this process and of the test server: its
// postmaster (the postgres process listening on the URL's port), the
// postmaster's children, and the children it has reaped (its cutime and
// cstime), so that backends that came and went are counted.
func (p *pgAdmin) cpu() cpuSpent {
	c := cpuSpent{self: selfCPU()}
	port := p.base.Port()
	if port == "" {
		return c
	}
	procs := listProcs()
	master := 0
	for _, pr := range procs {
		if len(pr.cmdline) > 0 && strings.HasSuffix(pr.cmdline[0], "/postgres") && strings.Contains(" "+pr.joined()+" ", " -p "+port+" ") {
			master = pr.pid
			break
		}
	}
	if master == 0 {
		return c
	}
	var ticks int64
	for _, pr := range procs {
		if pr.pid == master || pr.ppid == master {
			ticks += cpuTicks(pr.pid)
			c.procs++
		}
	}
	// The backends that came and went, reaped by the postmaster.
	ticks += statTicks(master, true) - statTicks(master, false)
	c.postgres = time.Duration(ticks) * time.Second / clockTicks
	return c
}

// arrivals is when a job's WebSocket watcher got each document, by source
// URL.
type arrivals struct {
	ws   *websocket.Conn
	done chan struct{}
	at   map[string]time.Time
}

// watchArrivals follows the job WebSocket at path of in until stop.
func watchArrivals(ctx context.Context, in *instance, path string) (*arrivals, error) {
	h := http.Header{}
	if b, ok := in.client.Transport.(bearer); ok {
		h.Set("Authorization", "Bearer "+b.key)
	}
	ws, _, err := websocket.DefaultDialer.DialContext(ctx, "ws"+strings.TrimPrefix(in.base, "http")+path, h)
	if err != nil {
		return nil, err
	}
	a := &arrivals{ws: ws, done: make(chan struct{}), at: map[string]time.Time{}}
	go func() {
		defer close(a.done)
		for {
			var m struct {
				Type string `json:"type"`
				Data struct {
					Metadata struct {
						SourceURL string `json:"sourceURL"`
					} `json:"metadata"`
				} `json:"data"`
			}
			if err := ws.ReadJSON(&m); err != nil {
				return
			}
			if m.Type == "document" {
				a.at[m.Data.Metadata.SourceURL] = time.Now()
			}
		}
	}()
	return a, nil
}

// stop closes the watcher and returns what it got.
func (a *arrivals) stop() map[string]time.Time {
	a.ws.Close()
	<-a.done
	return a.at
}

// lagsBehind returns, for each document both watchers got, how much later
// follower got it than leader.
func lagsBehind(follower, leader map[string]time.Time) []time.Duration {
	var out []time.Duration
	for u, t := range leader {
		if f, ok := follower[u]; ok {
			out = append(out, f.Sub(t))
		}
	}
	return out
}
