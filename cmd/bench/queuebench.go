package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/trawler-dev/trawler/store"
)

// The queue phase answers the question issue 21 asks of the job queue:
// should several nodes share a crawl's pages through River, through
// PostgreSQL's FOR UPDATE SKIP LOCKED with a lease on each page, or as
// Trawler does, a lease on the whole job that one node holds while its
// lanes take the pages from memory? It measures the coordination alone: no
// page is fetched, each is "done" by recording a 10 kB document in the
// job's results, once, numbered in order, as a crawl records it.
//
//   - trawler: the store's own path (store.FinishJobURL) from one node
//     holding the job's lease, its lanes fed from memory;
//   - skiplocked: each lane of two nodes claims the next queued page with
//     FOR UPDATE SKIP LOCKED and a lease on the page, then records it;
//   - river: one River job per page, worked by two River clients (nodes),
//     each recording its page and completing its River job in one
//     transaction (river.JobCompleteTx), so a page is recorded once. Its
//     clients fetch jobs at most every FetchCooldown (100 ms by default),
//     which caps a client at MaxWorkers jobs per 100 ms: "river" sets the
//     least cooldown River allows (1 ms), "river_defaults" keeps River's.
//
// It also measures how soon each way has a dead node's pages worked again.

const (
	queuePages   = 2000
	queueLanes   = 8 // in all, across the nodes
	queueDocSize = 10 << 10
	queueLease   = 5 * time.Second
)

// recordPageSQL records a page of job $1 (key $2) as done with document $3,
// at $4, with the next number in the job's results: what
// store.FinishJobURL writes, for the ways that do not go through the store.
// Only a page still queued is recorded, so a page done twice (a River job
// rescued after its page was recorded) is recorded once.
const recordPageSQL = `UPDATE job_urls SET state = 'done', document = $3, updated_at = $4,
	done_seq = (SELECT COALESCE(MAX(done_seq), 0) + 1 FROM job_urls WHERE job_id = $1 AND done_seq IS NOT NULL)
	WHERE job_id = $1 AND url_key = $2 AND state = 'queued'`

// lockJobSQL takes the job's row first, as the store does, so that the
// numbers of concurrent writers follow one another.
const lockJobSQL = `SELECT 1 FROM jobs WHERE id = $1 FOR NO KEY UPDATE`

type queueRun struct {
	way  string
	wall time.Duration
	cpu  cpuSpent
}

func (r queueRun) pagesPerS() float64 { return rate(queuePages, r.wall) }

func (r queueRun) pgMSPerPage() float64 { return ms(r.cpu.postgres) / queuePages }

func (r queueRun) selfMSPerPage() float64 { return ms(r.cpu.self) / queuePages }

func (b *bench) queueComparison(ctx context.Context, _ *instance) error {
	admin := os.Getenv(testDatabaseEnv)
	if admin == "" {
		logf("queue: skipped: the phase needs a PostgreSQL server in %s (scripts/pgtest.sh go run ./cmd/bench -only queue)", testDatabaseEnv)
		return nil
	}
	pg, err := openPGAdmin(ctx, admin)
	if err != nil {
		return err
	}
	defer pg.close()
	logf("queue: PostgreSQL %s; %d pages of %d kB, %d lanes in all; the ways alternate, twice each", pg.version, queuePages, queueDocSize>>10, queueLanes)

	ways := []struct {
		name string
		run  func(context.Context, string) error
	}{
		{"trawler", queueTrawler},
		{"skiplocked", queueSkipLocked},
		{"river", func(ctx context.Context, db string) error { return queueRiver(ctx, db, true) }},
		{"river_defaults", func(ctx context.Context, db string) error { return queueRiver(ctx, db, false) }},
	}
	best := map[string]queueRun{}
	for round := 1; round <= 2; round++ {
		for _, w := range ways {
			db, err := pg.create(ctx)
			if err != nil {
				return err
			}
			if err := prepareQueueDB(ctx, db); err != nil {
				return fmt.Errorf("queue: %s: %w", w.name, err)
			}
			before := pg.cpu()
			t := time.Now()
			if err := w.run(ctx, db); err != nil {
				return fmt.Errorf("queue: %s: %w", w.name, err)
			}
			r := queueRun{way: w.name, wall: time.Since(t), cpu: pg.cpu().since(before)}
			if err := checkRecordedOnce(ctx, db); err != nil {
				return fmt.Errorf("queue: %s: %w", w.name, err)
			}
			logf("queue: %s round %d: %d pages in %s (%.0f pages/s); PostgreSQL CPU %.2f ms per page, this process %.2f ms per page",
				w.name, round, queuePages, r.wall.Round(time.Millisecond), r.pagesPerS(), r.pgMSPerPage(), r.selfMSPerPage())
			if old, ok := best[w.name]; !ok || r.wall < old.wall {
				best[w.name] = r
			}
		}
	}
	for _, w := range ways {
		r := best[w.name]
		figure("queue_"+w.name+"_pages_per_s", r.pagesPerS(), "pages/s")
		figure("queue_"+w.name+"_pg_cpu_ms_per_page", r.pgMSPerPage(), "ms")
	}
	figure("queue_river_over_trawler", best["river"].pagesPerS()/best["trawler"].pagesPerS(), "ratio")
	figure("queue_skiplocked_over_trawler", best["skiplocked"].pagesPerS()/best["trawler"].pagesPerS(), "ratio")

	db, err := pg.create(ctx)
	if err != nil {
		return err
	}
	if err := prepareQueueDB(ctx, db); err != nil {
		return err
	}
	resume, err := riverFailover(ctx, db)
	if err != nil {
		return fmt.Errorf("queue: River's failover: %w", err)
	}
	figure("queue_river_failover_resume_s", resume.Seconds(), "s")
	return nil
}

const queueJob = "bench-queue-job"

// queueStore opens the store of db as the node that holds the job.
func queueStore(ctx context.Context, db string) (*store.Store, error) {
	st, err := store.OpenURL(ctx, db)
	if err != nil {
		return nil, err
	}
	st.SetNode("bench-a", "", time.Hour)
	return st, nil
}

// prepareQueueDB migrates the store's schema and River's into db and
// creates the job with its pages queued, as a crawl's frontier or a
// batch's URLs are.
func prepareQueueDB(ctx context.Context, db string) error {
	st, err := queueStore(ctx, db)
	if err != nil {
		return err
	}
	defer st.Close()
	urls := make([]store.JobURL, queuePages)
	for i := range urls {
		u := fmt.Sprintf("https://site.test/page/%d", i)
		urls[i] = store.JobURL{Key: u, URL: u, Seq: int64(i + 1), State: store.URLQueued}
	}
	j := store.Job{ID: queueJob, Team: "bench", Kind: "batch", Status: "scraping", Request: []byte("{}"),
		CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}
	if err := st.CreateJob(ctx, j, urls, nil); err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, db)
	if err != nil {
		return err
	}
	defer pool.Close()
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrating River's schema: %w", err)
	}
	_, err = pool.Exec(ctx, `ALTER TABLE job_urls ADD COLUMN claim_node TEXT, ADD COLUMN claim_until TIMESTAMPTZ`)
	return err
}

// queueDoc is page i's document: 10 kB of text that compresses like a
// page's Markdown.
func queueDoc(i int) []byte {
	var sb strings.Builder
	fmt.Fprintf(&sb, `{"markdown":"# Page %d\n`, i)
	for w := 0; sb.Len() < queueDocSize-2; w++ {
		fmt.Fprintf(&sb, "word%d of page %d ", (w*7919+i)%5003, i)
	}
	sb.WriteString(`"}`)
	return []byte(sb.String())
}

// checkRecordedOnce fails unless every page of the job was recorded, each
// with its own number in the results, 1 to queuePages.
func checkRecordedOnce(ctx context.Context, db string) error {
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var done, numbers, top int
	err = conn.QueryRow(ctx, `SELECT COUNT(*), COUNT(DISTINCT done_seq), COALESCE(MAX(done_seq), 0) FROM job_urls
		WHERE job_id = $1 AND state = 'done'`, queueJob).Scan(&done, &numbers, &top)
	if err != nil {
		return err
	}
	if done != queuePages || numbers != queuePages || top != queuePages {
		return fmt.Errorf("%d pages recorded with %d numbers up to %d, want %d of each", done, numbers, top, queuePages)
	}
	return nil
}

// queueTrawler records the pages through the store, from one node that
// holds the job, as a crawl's lanes do.
func queueTrawler(ctx context.Context, db string) error {
	st, err := queueStore(ctx, db)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.ClaimJobs(ctx, true, time.Now(), time.Now().Add(queueLease)); err != nil {
		return err
	}
	urls, err := st.JobURLs(ctx, queueJob)
	if err != nil {
		return err
	}
	next := make(chan int, len(urls))
	for i := range urls {
		next <- i
	}
	close(next)
	return lanes(queueLanes, func() error {
		for i := range next {
			u := urls[i]
			u.State, u.Document = store.URLDone, queueDoc(i)
			if _, err := st.FinishJobURL(ctx, queueJob, u, true, nil, 0, nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// queueSkipLocked has the lanes of two nodes claim the queued pages one
// at a time, with a lease on each, and record them.
func queueSkipLocked(ctx context.Context, db string) error {
	pools, err := nodePools(ctx, db, 2)
	if err != nil {
		return err
	}
	defer closePools(pools)
	return lanes(queueLanes, func() error {
		return skipLockedLane(ctx, pools[0], "node-a", -1)
	}, func() error {
		return skipLockedLane(ctx, pools[1], "node-b", -1)
	})
}

// skipLockedLane claims and records pages until none is left to claim, or
// until it has recorded limit pages (-1: no limit). A page's claim lasts
// queueLease; a claim of a dead node lapses and the page goes to another.
func skipLockedLane(ctx context.Context, pool *pgxpool.Pool, node string, limit int) error {
	for n := 0; limit < 0 || n < limit; n++ {
		var key string
		var seq int64
		err := pool.QueryRow(ctx, `UPDATE job_urls SET claim_node = $1, claim_until = now() + $3::interval
			WHERE (job_id, url_key) = (SELECT job_id, url_key FROM job_urls
				WHERE job_id = $2 AND state = 'queued' AND (claim_until IS NULL OR claim_until < now())
				ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED)
			RETURNING url_key, seq`, node, queueJob, queueLease.String()).Scan(&key, &seq)
		if errors.Is(err, pgx.ErrNoRows) {
			var left int
			if err := pool.QueryRow(ctx, `SELECT COUNT(*) FROM job_urls WHERE job_id = $1 AND state = 'queued'`, queueJob).Scan(&left); err != nil {
				return err
			}
			if left == 0 {
				return nil
			}
			time.Sleep(100 * time.Millisecond) // claimed by others, still in flight
			continue
		}
		if err != nil {
			return err
		}
		err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, lockJobSQL, queueJob); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, recordPageSQL+` AND claim_node = $5`, queueJob, key, queueDoc(int(seq-1)), time.Now().UnixMilli(), node)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// pageArgs is a River job: one page of a crawl or batch.
type pageArgs struct {
	Job string `json:"job"`
	Key string `json:"key"`
	N   int    `json:"n"`
}

func (pageArgs) Kind() string { return "trawler_page" }

// pageWorker records a page and completes its River job in one
// transaction.
type pageWorker struct {
	river.WorkerDefaults[pageArgs]
	pool   *pgxpool.Pool
	worked func(*river.Job[pageArgs])
}

func (w *pageWorker) Work(ctx context.Context, job *river.Job[pageArgs]) error {
	err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockJobSQL, job.Args.Job); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, recordPageSQL, job.Args.Job, job.Args.Key, queueDoc(job.Args.N), time.Now().UnixMilli()); err != nil {
			return err
		}
		_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
	if err == nil && w.worked != nil {
		w.worked(job)
	}
	return err
}

// riverClient starts a River client (a node) with workers lanes on pool;
// worked is told of each job it completes.
func riverClient(ctx context.Context, pool *pgxpool.Pool, workers int, rescueAfter time.Duration, eager bool, worked func(*river.Job[pageArgs])) (*river.Client[pgx.Tx], error) {
	ws := river.NewWorkers()
	if err := river.AddWorkerSafely(ws, &pageWorker{pool: pool, worked: worked}); err != nil {
		return nil, err
	}
	cfg := &river.Config{
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}},
		Workers: ws,
		Logger:  quietLogger(),
	}
	if eager {
		cfg.FetchCooldown = river.FetchCooldownMin
	}
	if rescueAfter > 0 {
		cfg.JobTimeout, cfg.RescueStuckJobsAfter = rescueAfter-time.Second, rescueAfter
	}
	c, err := river.NewClient(riverpgxv5.New(pool), cfg)
	if err != nil {
		return nil, err
	}
	return c, c.Start(ctx)
}

// insertPageJobs puts one River job per queued page of the job.
func insertPageJobs(ctx context.Context, pool *pgxpool.Pool) error {
	c, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Logger: quietLogger()})
	if err != nil {
		return err
	}
	rows, err := pool.Query(ctx, `SELECT url_key, seq FROM job_urls WHERE job_id = $1 AND state = 'queued' ORDER BY seq`, queueJob)
	if err != nil {
		return err
	}
	var params []river.InsertManyParams
	for rows.Next() {
		var key string
		var seq int
		if err := rows.Scan(&key, &seq); err != nil {
			return err
		}
		params = append(params, river.InsertManyParams{Args: pageArgs{Job: queueJob, Key: key, N: seq - 1}})
	}
	if err := rows.Err(); err != nil {
		return err
	}
	_, err = c.InsertManyFast(ctx, params)
	return err
}

// queueRiver works the pages as River jobs on two clients, fetching eagerly
// or with River's default cooldown.
func queueRiver(ctx context.Context, db string, eager bool) error {
	pools, err := nodePools(ctx, db, 2)
	if err != nil {
		return err
	}
	defer closePools(pools)
	if err := insertPageJobs(ctx, pools[0]); err != nil {
		return err
	}
	var n atomic.Int64
	all := make(chan struct{})
	worked := func(*river.Job[pageArgs]) {
		if n.Add(1) == queuePages {
			close(all)
		}
	}
	var clients []*river.Client[pgx.Tx]
	for _, p := range pools {
		c, err := riverClient(ctx, p, queueLanes/len(pools), 0, eager, worked)
		if err != nil {
			return err
		}
		clients = append(clients, c)
	}
	defer func() {
		for _, c := range clients {
			c.Stop(context.WithoutCancel(ctx))
		}
	}()
	select {
	case <-all:
		return nil
	case <-time.After(5 * time.Minute):
		return fmt.Errorf("%d of %d pages worked after 5 minutes", n.Load(), queuePages)
	}
}

// riverFailover measures how long River takes to work again the jobs a
// node was running when it died. A dead node leaves its jobs as kill -9
// leaves them: running, attempted by it; River's rescuer, which looks at
// nothing else (it has no heartbeat per job), moves them back once they
// have run RescueStuckJobsAfter, which must exceed any page's time. With
// the shortest setting that still lets a page run 4 s (5 s), the figure is
// River's floor; Trawler's lease of the same 5 s gives failover_resume_s.
func riverFailover(ctx context.Context, db string) (time.Duration, error) {
	pools, err := nodePools(ctx, db, 1)
	if err != nil {
		return 0, err
	}
	defer closePools(pools)
	pool := pools[0]
	if err := insertPageJobs(ctx, pool); err != nil {
		return 0, err
	}
	const stuck = 4
	rows, err := pool.Query(ctx, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now(),
		attempted_by = ARRAY['dead-node'] WHERE id IN (SELECT id FROM river_job ORDER BY id LIMIT $1) RETURNING id`, stuck)
	if err != nil {
		return 0, err
	}
	ids := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return 0, err
		}
		ids[id] = true
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	died := time.Now()
	var mu sync.Mutex
	var last time.Time
	left := stuck
	again := make(chan struct{})
	c, err := riverClient(ctx, pool, queueLanes, queueLease, true, func(j *river.Job[pageArgs]) {
		mu.Lock()
		defer mu.Unlock()
		if ids[j.ID] {
			delete(ids, j.ID)
			last = time.Now()
			if left--; left == 0 {
				close(again)
			}
		}
	})
	if err != nil {
		return 0, err
	}
	defer c.Stop(context.WithoutCancel(ctx))
	select {
	case <-again:
	case <-time.After(3 * time.Minute):
		return 0, fmt.Errorf("%d of the dead node's %d jobs not worked again after 3 minutes", left, stuck)
	}
	mu.Lock()
	defer mu.Unlock()
	logf("queue: River worked a dead node's %d running jobs again %s after it died (RescueStuckJobsAfter %s; its rescuer runs every 30 s)",
		stuck, last.Sub(died).Round(10*time.Millisecond), queueLease)
	return last.Sub(died), nil
}

// quietLogger keeps River's info logs out of the bench's output; its
// warnings and errors still show.
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func nodePools(ctx context.Context, db string, n int) ([]*pgxpool.Pool, error) {
	var pools []*pgxpool.Pool
	for range n {
		p, err := pgxpool.New(ctx, db)
		if err != nil {
			closePools(pools)
			return nil, err
		}
		pools = append(pools, p)
	}
	return pools, nil
}

func closePools(pools []*pgxpool.Pool) {
	for _, p := range pools {
		p.Close()
	}
}

// lanes runs n goroutines spread over the functions given, one function
// per node, and returns the first error.
func lanes(n int, nodes ...func() error) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = nodes[i%len(nodes)]() })
	}
	wg.Wait()
	return errors.Join(errs...)
}
