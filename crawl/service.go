package crawl

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/trawler-dev/trawler/discover"
	"github.com/trawler-dev/trawler/netguard"
	"github.com/trawler-dev/trawler/scrape"
	"github.com/trawler-dev/trawler/store"
	"github.com/trawler-dev/trawler/webhook"
)

// ErrNotFound is an unknown job, another team's, or an expired one.
var ErrNotFound = errors.New("job not found")

// ErrIdempotencyConflict is an idempotency key used for an earlier job.
var ErrIdempotencyConflict = errors.New("this idempotency key was already used for another job")

// robotsAgent is the user agent robots.txt rules are read for unless the
// job names another (robotsUserAgent).
const robotsAgent = "TrawlerBot"

// maxRetries is how often a page is tried again when the infrastructure,
// not the page, failed it (no browser, a browser that died).
const maxRetries = 3

// Service runs jobs. Workers lanes, each with one scrape.Worker (one
// leased browser), take pages from every running job in a fair order: the
// team with the fewest pages in flight goes first, and within a team the
// job served least recently. Workers stays below the pool size, so jobs
// never take every browser from interactive sessions and single scrapes.
type Service struct {
	Scrape   *scrape.Service
	Store    *store.Store
	Guard    *netguard.Guard
	Webhooks *webhook.Dispatcher // nil: no webhooks are delivered
	Log      *slog.Logger
	// Workers is how many pages all jobs work on at once.
	Workers int
	// HostConcurrency is how many pages of one host are in flight at once.
	HostConcurrency int
	// Retention is how long results stay after a job ends.
	Retention time.Duration
	// TeamLimit is a team's concurrency limit.
	TeamLimit func(team string) int

	mu           sync.Mutex
	jobs         map[string]*job
	changed      chan struct{}
	hostInflight map[string]int
	teamInflight map[string]int
	closed       bool
	stop         context.CancelFunc
	base         context.Context
	wg           sync.WaitGroup
	client       *http.Client
}

// Start resumes the jobs a previous run left unfinished and starts the
// lanes.
func (s *Service) Start(ctx context.Context) error {
	s.jobs = map[string]*job{}
	s.changed = make(chan struct{})
	s.hostInflight, s.teamInflight = map[string]int{}, map[string]int{}
	s.base, s.stop = context.WithCancel(context.Background())
	s.client = s.Guard.Client(20*time.Second, true)
	if s.Workers < 1 {
		s.Workers = 1
	}
	if s.HostConcurrency < 1 {
		s.HostConcurrency = 8
	}
	if s.Retention <= 0 {
		s.Retention = 24 * time.Hour
	}
	running, err := s.Store.Jobs(ctx, "", "", StatusScraping)
	if err != nil {
		return err
	}
	for _, row := range running {
		if err := s.resume(ctx, row); err != nil {
			s.Log.Error("resuming a job", "job", row.ID, "err", err)
		}
	}
	for i := 0; i < s.Workers; i++ {
		s.wg.Add(1)
		go s.lane()
	}
	return nil
}

// Close stops every lane. Pages in flight are abandoned and stay queued in
// the store: the next start resumes them.
func (s *Service) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.broadcastLocked()
	s.mu.Unlock()
	s.stop()
	s.wg.Wait()
}

func (s *Service) broadcastLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Service) broadcast() {
	s.mu.Lock()
	s.broadcastLocked()
	s.mu.Unlock()
}

func (s *Service) teamLimit(team string) int {
	if s.TeamLimit == nil {
		return 4
	}
	return max(1, s.TeamLimit(team))
}

// Create starts a job for team. idempotencyKey may be empty. A crawl whose
// start URL the network guard blocks is refused with a
// *netguard.BlockedError; a batch's URLs are the caller's to check
// (Blocked), since it decides whether a blocked one is skipped or refuses
// the batch.
func (s *Service) Create(ctx context.Context, team string, spec *Spec, idempotencyKey string) (string, error) {
	if spec.Kind == KindCrawl {
		if err := s.checkStart(ctx, spec.URL); err != nil {
			return "", err
		}
	}
	id := uuid.NewString()
	now := time.Now()
	j := &job{id: id, team: team, kind: spec.Kind, spec: spec, created: now, status: StatusScraping}
	var first []store.JobURL
	var target string
	switch spec.Kind {
	case KindCrawl:
		rules, err := rulesFor(spec)
		if err != nil {
			return "", err
		}
		j.rules = rules
		target = spec.URL
		start, _ := url.Parse(spec.URL)
		j.keys = map[string]bool{}
		if ok, _ := rules.Allowed(start); ok {
			first = append(first, store.JobURL{Key: rules.Key(start), URL: spec.URL, Seq: 0, State: store.URLQueued})
		}
	case KindBatch:
		for i, u := range spec.URLs {
			first = append(first, store.JobURL{Key: batchKey(i), URL: u, Seq: int64(i), State: store.URLQueued})
		}
	default:
		return "", fmt.Errorf("unknown job kind %q", spec.Kind)
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	row := store.Job{ID: id, Team: team, Kind: spec.Kind, Status: StatusScraping, URL: target, Request: raw,
		IdempotencyKey: idempotencyKey, CreatedAt: now, ExpiresAt: now.Add(s.Retention)}
	if spec.ZeroDataRetention {
		row.URL = ""
	}
	events := s.events(j, "started", nil, "")
	if err := s.Store.CreateJob(ctx, row, first, events); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return "", ErrIdempotencyConflict
		}
		return "", err
	}
	s.notifyWebhooks()
	s.run(j, first, 0, nil)
	return id, nil
}

func batchKey(i int) string { return fmt.Sprintf("%08d", i) }

func rulesFor(spec *Spec) (*discover.Rules, error) {
	c := spec.Crawl
	return discover.NewRules(discover.RulesOptions{Start: spec.URL, IncludePaths: c.IncludePaths, ExcludePaths: c.ExcludePaths,
		RegexOnFullURL: c.RegexOnFullURL, CrawlEntireDomain: c.CrawlEntireDomain, AllowSubdomains: c.AllowSubdomains,
		AllowExternalLinks: c.AllowExternalLinks, IgnoreQueryParameters: c.IgnoreQueryParameters,
		DeduplicateSimilarURLs: c.DeduplicateSimilarURLs})
}

// resume rebuilds a job a previous run left scraping.
func (s *Service) resume(ctx context.Context, row store.Job) error {
	var spec Spec
	if err := json.Unmarshal(row.Request, &spec); err != nil {
		return err
	}
	if spec.ZeroDataRetention {
		// Its results were never written down: nothing to resume from.
		return s.Store.FinishJob(ctx, row.ID, StatusFailed, "the service restarted; a zero-data-retention job keeps nothing it could resume from",
			time.Now(), time.Now().Add(s.Retention), nil)
	}
	j := &job{id: row.ID, team: row.Team, kind: row.Kind, spec: &spec, created: row.CreatedAt, status: StatusScraping,
		credits: row.Credits}
	if spec.Kind == KindCrawl {
		rules, err := rulesFor(&spec)
		if err != nil {
			return err
		}
		j.rules = rules
	}
	urls, err := s.Store.JobURLs(ctx, row.ID)
	if err != nil {
		return err
	}
	var queued []store.JobURL
	j.keys = map[string]bool{}
	var next int64
	for _, u := range urls {
		j.keys[u.Key] = true
		next = max(next, u.Seq+1)
		switch u.State {
		case store.URLQueued:
			queued = append(queued, u)
		case store.URLDone:
			j.done++
		case store.URLFailed:
			j.failed++
		case store.URLRobots:
			j.robots++
		}
	}
	j.admitted = j.done + j.failed + len(queued)
	s.Log.Info("resuming job", "job", j.id, "kind", j.kind, "done", j.done, "queued", len(queued))
	s.run(j, queued, next, j.keys)
	return nil
}

// run registers a job with the lanes and, for a crawl, starts reading its
// robots.txt and sitemaps.
func (s *Service) run(j *job, queued []store.JobURL, nextSeq int64, keys map[string]bool) {
	j.ctx, j.cancel = context.WithCancel(s.base)
	j.inflight, j.retries = map[string]context.CancelFunc{}, map[string]int{}
	j.robotsTxt, j.subs = map[string]*discover.Robots{}, map[*watcher]struct{}{}
	if j.keys == nil {
		j.keys = map[string]bool{}
	}
	for i := range queued {
		u := queued[i]
		j.queue = append(j.queue, &u)
		j.keys[u.Key] = true
		nextSeq = max(nextSeq, u.Seq+1)
	}
	if keys == nil {
		j.admitted = len(queued)
	}
	j.nextSeq = nextSeq
	j.concurrency = s.teamLimit(j.team)
	if m := j.spec.MaxConcurrency; m > 0 && m < j.concurrency {
		j.concurrency = m
	}
	if d := j.spec.Crawl.Delay; d > 0 {
		j.delay, j.concurrency = d, 1
	}
	if j.kind == KindCrawl {
		j.discovering = true
	}
	s.mu.Lock()
	s.jobs[j.id] = j
	s.broadcastLocked()
	s.mu.Unlock()
	if j.kind == KindCrawl {
		s.wg.Add(1)
		go s.discover(j)
	} else {
		s.maybeEnd(j)
	}
}

// discover reads the start host's robots.txt and, unless the crawl skips
// them, its sitemaps, adding their URLs at depth 0.
func (s *Service) discover(j *job) {
	defer s.wg.Done()
	defer func() {
		j.mu.Lock()
		j.discovering = false
		j.mu.Unlock()
		s.maybeEnd(j)
		s.broadcast()
	}()
	start, err := url.Parse(j.spec.URL)
	if err != nil {
		return
	}
	robots := s.robotsFor(j.ctx, j, start)
	c := j.spec.Crawl
	if !c.IgnoreRobotsTxt {
		// A crawl-delay beyond a minute is a site asking not to be crawled
		// at all; it is capped rather than taken as days between pages.
		if d := min(robots.CrawlDelay(), time.Minute); d > 0 {
			j.mu.Lock()
			j.delay, j.concurrency = max(j.delay, d), 1
			j.mu.Unlock()
		}
	}
	if c.Sitemap == "skip" {
		return
	}
	var r *discover.Robots
	if !c.IgnoreRobotsTxt {
		r = robots
	}
	found, warnings := discover.Sitemaps(j.ctx, s.client, start, robots.Sitemaps(), r, s.robotsAgent(j), min(100000, c.Limit*4+100))
	j.mu.Lock()
	j.warnings = append(j.warnings, warnings...)
	var add []store.JobURL
	for _, f := range found {
		u, err := url.Parse(f.URL)
		if err != nil {
			continue
		}
		if nu, ok := s.admitLocked(j, u, 0); ok {
			add = append(add, nu)
		}
	}
	j.mu.Unlock()
	if len(add) == 0 {
		return
	}
	if err := s.Store.AddJobURLs(context.Background(), j.id, add); err != nil {
		s.Log.Error("storing sitemap URLs", "job", j.id, "err", err)
		return
	}
	j.mu.Lock()
	for i := range add {
		if add[i].State == store.URLQueued {
			j.queue = append(j.queue, &add[i])
		}
	}
	j.mu.Unlock()
	s.broadcast()
}

func (s *Service) robotsAgent(j *job) string {
	if a := j.spec.Crawl.RobotsUserAgent; a != "" {
		return a
	}
	return robotsAgent
}

// robotsFor returns the robots.txt of u's host for job j, fetching it the
// first time.
func (s *Service) robotsFor(ctx context.Context, j *job, u *url.URL) *discover.Robots {
	key := u.Scheme + "://" + u.Host
	j.mu.Lock()
	r := j.robotsTxt[key]
	j.mu.Unlock()
	if r != nil {
		return r
	}
	r = discover.FetchRobots(ctx, s.client, u, s.robotsAgent(j))
	j.mu.Lock()
	if have := j.robotsTxt[key]; have != nil {
		r = have
	} else {
		j.robotsTxt[key] = r
		if r.Err != "" {
			j.warnings = append(j.warnings, "robots.txt of "+u.Host+": "+r.Err)
		}
	}
	j.mu.Unlock()
	return r
}

// admitLocked decides whether a crawl takes u at depth, marking it seen.
// A URL robots.txt blocks is returned with state robots (it is reported,
// not counted against the limit).
func (s *Service) admitLocked(j *job, u *url.URL, depth int) (store.JobURL, bool) {
	c := j.spec.Crawl
	if c.MaxDiscoveryDepth != nil && depth > *c.MaxDiscoveryDepth {
		return store.JobURL{}, false
	}
	if ok, _ := j.rules.Allowed(u); !ok {
		return store.JobURL{}, false
	}
	key := j.rules.Key(u)
	if j.keys[key] {
		return store.JobURL{}, false
	}
	if !c.IgnoreRobotsTxt {
		if r := j.robotsTxt[u.Scheme+"://"+u.Host]; r != nil && !r.Allowed(u) {
			j.keys[key] = true
			j.robots++
			return store.JobURL{Key: key, URL: u.String(), Depth: depth, Seq: -1, State: store.URLRobots}, true
		}
	}
	if j.admitted >= c.Limit {
		return store.JobURL{}, false
	}
	j.keys[key] = true
	j.admitted++
	seq := j.nextSeq
	j.nextSeq++
	return store.JobURL{Key: key, URL: u.String(), Depth: depth, Seq: seq, State: store.URLQueued}, true
}

// lane takes pages from the running jobs until the service closes.
func (s *Service) lane() {
	defer s.wg.Done()
	w := s.Scrape.NewWorker()
	defer w.Close()
	served := map[string]bool{}
	for {
		j, u, ctx := s.next(w)
		if j == nil {
			return
		}
		s.mu.Lock()
		for id := range served {
			if s.jobs[id] == nil || s.jobs[id].ctx.Err() != nil {
				w.Forget(id)
				delete(served, id)
			}
		}
		s.mu.Unlock()
		served[j.id] = true
		s.page(ctx, w, j, u)
	}
}

// next waits for the next page any job may start, takes it and returns it
// with the context of its scrape; nil when the service closes. A lane idle
// for a while gives its browser back to the pool.
func (s *Service) next(w *scrape.Worker) (*job, *store.JobURL, context.Context) {
	idle := time.NewTimer(5 * time.Second)
	defer idle.Stop()
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, nil, nil
		}
		now := time.Now()
		var best *job
		var bestTeam int
		var bestServed time.Time
		wait := time.Duration(0)
		for _, j := range s.jobs {
			j.mu.Lock()
			ok, d := j.runnableLocked(now)
			if d > 0 && (wait == 0 || d < wait) {
				wait = d
			}
			if ok && s.hostInflight[hostOf(j.queue[0].URL)] >= s.HostConcurrency {
				ok = false
			}
			served := j.lastServed
			j.mu.Unlock()
			if !ok || s.teamInflight[j.team] >= s.teamLimit(j.team) {
				continue
			}
			t := s.teamInflight[j.team]
			if best == nil || t < bestTeam || (t == bestTeam && served.Before(bestServed)) {
				best, bestTeam, bestServed = j, t, served
			}
		}
		if best != nil {
			j := best
			j.mu.Lock()
			u := j.queue[0]
			j.queue = j.queue[1:]
			ctx, cancel := context.WithCancel(j.ctx)
			j.inflight[u.Key] = cancel
			j.lastStart, j.lastServed = now, now
			j.mu.Unlock()
			s.hostInflight[hostOf(u.URL)]++
			s.teamInflight[j.team]++
			s.mu.Unlock()
			return j, u, ctx
		}
		ch := s.changed
		s.mu.Unlock()
		var timer *time.Timer
		var fire <-chan time.Time
		if wait > 0 {
			timer = time.NewTimer(wait)
			fire = timer.C
		}
		select {
		case <-ch:
		case <-fire:
		case <-idle.C:
			w.Close()
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// page scrapes one URL of j and records the outcome.
func (s *Service) page(ctx context.Context, w *scrape.Worker, j *job, u *store.JobURL) {
	host := hostOf(u.URL)
	defer func() {
		s.mu.Lock()
		s.hostInflight[host]--
		s.teamInflight[j.team]--
		s.broadcastLocked()
		s.mu.Unlock()
	}()
	pu, err := url.Parse(u.URL)
	if err != nil {
		s.record(j, u, nil, err)
		return
	}
	if j.kind == KindCrawl && !j.spec.Crawl.IgnoreRobotsTxt {
		if r := s.robotsFor(ctx, j, pu); !r.Allowed(pu) {
			s.record(j, &store.JobURL{Key: u.Key, URL: u.URL, Depth: u.Depth, Seq: u.Seq, State: store.URLRobots}, nil, nil)
			return
		}
	}
	req := scrape.Request{Team: j.team, URL: u.URL, Options: j.spec.Scrape, Job: true,
		Discover: j.kind == KindCrawl && j.spec.Crawl.Sitemap != "only"}
	doc, err := w.Scrape(ctx, j.id, req)
	if j.ctx.Err() != nil {
		s.drop(j, u) // cancelled (or the service is closing): the page stays queued in the store
		return
	}
	var re *scrape.RetryableError
	if errors.As(err, &re) {
		j.mu.Lock()
		j.retries[u.Key]++
		again := j.retries[u.Key] < maxRetries
		j.mu.Unlock()
		if again {
			s.Log.Warn("retrying a page", "job", j.id, "err", err)
			s.requeue(j, u)
			return
		}
	}
	s.record(j, u, doc, err)
}

// drop forgets an in-flight page without recording it.
func (s *Service) drop(j *job, u *store.JobURL) {
	j.mu.Lock()
	delete(j.inflight, u.Key)
	drained := len(j.inflight) == 0 && j.drained != nil
	if drained {
		close(j.drained)
		j.drained = nil
	}
	j.mu.Unlock()
}

func (s *Service) requeue(j *job, u *store.JobURL) {
	j.mu.Lock()
	delete(j.inflight, u.Key)
	j.queue = append([]*store.JobURL{u}, j.queue...)
	j.mu.Unlock()
	s.broadcast()
}

// errorCode names a page failure for GET /v2/crawl/{id}/errors.
func errorCode(err error) string {
	var blocked *netguard.BlockedError
	var load *scrape.LoadError
	var action *scrape.ActionError
	var parse *scrape.ParseError
	var retry *scrape.RetryableError
	switch {
	case errors.Is(err, scrape.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return "SCRAPE_TIMEOUT"
	case errors.As(err, &blocked):
		return "URL_BLOCKED"
	case errors.As(err, &load):
		return "SCRAPE_LOAD_ERROR"
	case errors.As(err, &action):
		return "SCRAPE_ACTION_ERROR"
	case errors.As(err, &parse):
		return "SCRAPE_PARSE_ERROR"
	case errors.As(err, &retry):
		return "UNAVAILABLE"
	case errors.Is(err, scrape.ErrPageCrashed):
		return "SCRAPE_PAGE_CRASHED"
	}
	return "SCRAPE_FAILED"
}

// record stores a page's outcome with the URLs it led to and its webhook
// event, then updates the job in memory and tells its watchers.
func (s *Service) record(j *job, u *store.JobURL, doc *scrape.Document, scrapeErr error) {
	out := store.JobURL{Key: u.Key, URL: u.URL, Depth: u.Depth, Seq: u.Seq, State: store.URLDone}
	var raw json.RawMessage
	var discovered []store.JobURL
	credits := 0
	switch {
	case u.State == store.URLRobots:
		out.State = store.URLRobots
	case scrapeErr != nil:
		out.State, out.ErrorCode, out.Error = store.URLFailed, errorCode(scrapeErr), scrapeErr.Error()
	default:
		var err error
		if raw, err = json.Marshal(doc); err != nil {
			out.State, out.ErrorCode, out.Error = store.URLFailed, "SCRAPE_FAILED", err.Error()
			break
		}
		if n, ok := doc.Metadata["creditsUsed"].(int); ok {
			credits = n
		}
		if !j.spec.ZeroDataRetention {
			out.Document = raw
		}
		j.mu.Lock()
		// The page a redirect ended on is the same page.
		if final, ok := doc.Metadata["url"].(string); ok && j.rules != nil {
			if fu, err := url.Parse(final); err == nil {
				j.keys[j.rules.Key(fu)] = true
			}
		}
		for _, l := range doc.Discovered {
			lu, err := url.Parse(l)
			if err != nil {
				continue
			}
			if nu, ok := s.admitLocked(j, lu, u.Depth+1); ok {
				discovered = append(discovered, nu)
			}
		}
		j.mu.Unlock()
	}
	var events []store.WebhookEvent
	if out.State == store.URLDone {
		events = s.events(j, "page", []json.RawMessage{raw}, "")
	}
	seq, err := s.Store.FinishJobURL(context.Background(), j.id, out, out.State == store.URLDone, discovered, credits, events)
	if err != nil {
		s.Log.Error("recording a page", "job", j.id, "err", err)
		s.fail(j, "could not record a page: "+err.Error())
		return
	}
	if len(events) > 0 {
		s.notifyWebhooks()
	}
	j.mu.Lock()
	delete(j.inflight, u.Key)
	switch out.State {
	case store.URLDone:
		j.done++
		j.credits += credits
		if j.spec.ZeroDataRetention {
			for int64(len(j.memDocs)) < seq {
				j.memDocs = append(j.memDocs, nil)
			}
			j.memDocs[seq-1] = raw
		}
	case store.URLFailed:
		j.failed++
		if j.firstErr == "" {
			j.firstErr = out.Error
		}
	case store.URLRobots:
		j.robots++
		j.admitted--
	}
	for i := range discovered {
		if discovered[i].State == store.URLQueued {
			j.queue = append(j.queue, &discovered[i])
		}
	}
	if out.State == store.URLDone {
		j.publishLocked(Event{Type: "document", Doc: raw, Seq: seq})
	}
	if len(j.inflight) == 0 && j.drained != nil {
		close(j.drained)
		j.drained = nil
	}
	j.mu.Unlock()
	s.maybeEnd(j)
}

// maybeEnd completes a job that has nothing left to do.
func (s *Service) maybeEnd(j *job) {
	j.mu.Lock()
	ended := j.endedLocked()
	status, msg := StatusCompleted, ""
	if ended && j.done == 0 && j.failed > 0 {
		status, msg = StatusFailed, "no page could be scraped: "+j.firstErr
	}
	j.mu.Unlock()
	if ended {
		s.end(j, status, msg)
	}
}

func (s *Service) fail(j *job, msg string) { s.end(j, StatusFailed, msg) }

// end ends a job with status, once.
func (s *Service) end(j *job, status, msg string) {
	j.mu.Lock()
	if j.status != StatusScraping && j.status != StatusCancelled {
		j.mu.Unlock()
		return
	}
	if j.status == StatusCancelled && status != StatusCancelled {
		j.mu.Unlock()
		return
	}
	j.status = status
	j.mu.Unlock()
	now := time.Now()
	event := map[string]string{StatusCompleted: "completed", StatusFailed: "failed", StatusCancelled: "cancelled"}[status]
	var docs []json.RawMessage
	events := s.events(j, event, docs, msg)
	err := s.Store.FinishJob(context.Background(), j.id, status, msg, now, now.Add(s.Retention), events)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		s.Log.Error("ending a job", "job", j.id, "err", err)
	}
	s.notifyWebhooks()
	j.mu.Lock()
	j.publishLocked(Event{Type: status})
	j.mu.Unlock()
	j.cancel()
	s.mu.Lock()
	if !j.spec.ZeroDataRetention {
		delete(s.jobs, j.id)
	} else {
		// Its documents live only here: they go when its results expire.
		time.AfterFunc(s.Retention, func() {
			s.mu.Lock()
			delete(s.jobs, j.id)
			s.mu.Unlock()
		})
	}
	s.broadcastLocked()
	s.mu.Unlock()
	s.Log.Info("job ended", "job", j.id, "kind", j.kind, "status", status)
}

// events builds job j's webhook events of kind event, if it wants them.
func (s *Service) events(j *job, event string, docs []json.RawMessage, msg string) []store.WebhookEvent {
	spec := j.spec.Webhook
	if spec == nil || !spec.Wants(event) {
		return nil
	}
	kind := "crawl"
	if j.kind == KindBatch {
		kind = "batch_scrape"
	}
	if docs == nil {
		docs = []json.RawMessage{}
	}
	return []store.WebhookEvent{webhook.Event(j.team, j.id, spec, webhook.Payload(kind, event, j.id, spec, docs, msg))}
}

func (s *Service) notifyWebhooks() {
	if s.Webhooks != nil {
		s.Webhooks.Notify()
	}
}

// running returns team's running job id of kind, if it is in memory.
func (s *Service) running(team, kind, id string) *job {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.jobs[id]
	if j == nil || j.team != team || j.kind != kind {
		return nil
	}
	return j
}

// Cancel cancels team's job. It returns once no page of the job is in
// flight any more, so no page is scraped after it returns.
func (s *Service) Cancel(ctx context.Context, team, kind, id string) (string, error) {
	row, err := s.Store.Job(ctx, team, kind, id)
	if errors.Is(err, store.ErrNotFound) {
		return "", ErrNotFound
	}
	if err != nil {
		return "", err
	}
	j := s.running(team, kind, id)
	if j == nil {
		return row.Status, nil
	}
	j.mu.Lock()
	if j.status != StatusScraping {
		st := j.status
		j.mu.Unlock()
		return st, nil
	}
	j.status = StatusCancelled
	var drained chan struct{}
	if len(j.inflight) > 0 {
		drained = make(chan struct{})
		j.drained = drained
	}
	for _, c := range j.inflight {
		c()
	}
	j.mu.Unlock()
	j.cancel()
	if drained != nil {
		select {
		case <-drained:
		case <-time.After(15 * time.Second):
			s.Log.Warn("a cancelled job's pages did not stop in time", "job", id)
		}
	}
	s.end(j, StatusCancelled, "")
	return StatusCancelled, nil
}

// Status returns team's job with one page of its documents.
func (s *Service) Status(ctx context.Context, team, kind, id string, skip, limit int) (*Status, error) {
	row, err := s.Store.Job(ctx, team, kind, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	st := &Status{Status: row.Status, CreditsUsed: row.Credits, CreatedAt: row.CreatedAt, ExpiresAt: row.ExpiresAt,
		CompletedAt: row.CompletedAt}
	var warnings []string
	var robots, failed int
	if j := s.running(team, kind, id); j != nil {
		j.mu.Lock()
		st.Total = j.done + j.failed + len(j.queue) + len(j.inflight)
		st.Completed = j.done
		st.CreditsUsed = j.credits
		robots, failed = j.robots, j.failed
		warnings = append(warnings, j.warnings...)
		if j.spec.ZeroDataRetention {
			docs := j.memDocs
			if skip < len(docs) {
				docs = docs[skip:]
			} else {
				docs = nil
			}
			if len(docs) > limit {
				st.More = true
				docs = docs[:limit]
			}
			st.Data = append([]json.RawMessage(nil), docs...)
		}
		if row.Status == StatusScraping && j.status != StatusScraping {
			// Ended a moment ago; the store is being told.
			now := time.Now()
			st.Status, st.CompletedAt, st.ExpiresAt = j.status, now, now.Add(s.Retention)
		}
		zdr := j.spec.ZeroDataRetention
		j.mu.Unlock()
		if zdr {
			st.Warning = joinWarnings(warnings, robots, failed)
			return st, nil
		}
	} else {
		counts, err := s.Store.JobCounts(ctx, id)
		if err != nil {
			return nil, err
		}
		st.Total = counts[store.URLDone] + counts[store.URLFailed] + counts[store.URLQueued]
		st.Completed = counts[store.URLDone]
		robots, failed = counts[store.URLRobots], counts[store.URLFailed]
	}
	st.Data, st.More, err = s.Store.JobDocuments(ctx, id, skip, limit, 9<<20)
	if err != nil {
		return nil, err
	}
	if st.Data == nil {
		st.Data = []json.RawMessage{}
	}
	st.Warning = joinWarnings(warnings, robots, failed)
	return st, nil
}

func joinWarnings(w []string, robots, failed int) string {
	if failed > 0 {
		w = append(w, fmt.Sprintf("%d pages failed; GET the job's /errors for why", failed))
	}
	if robots > 0 {
		w = append(w, fmt.Sprintf("%d URLs were not crawled because robots.txt disallows them; see robotsBlocked in the job's /errors", robots))
	}
	out := ""
	for i, s := range w {
		if i > 0 {
			out += "; "
		}
		out += s
	}
	return out
}

// Errors returns the pages of team's job that produced no document.
func (s *Service) Errors(ctx context.Context, team, kind, id string) (*Errors, error) {
	if _, err := s.Store.Job(ctx, team, kind, id); errors.Is(err, store.ErrNotFound) {
		return nil, ErrNotFound
	} else if err != nil {
		return nil, err
	}
	urls, err := s.Store.JobURLs(ctx, id)
	if err != nil {
		return nil, err
	}
	out := &Errors{Errors: []PageError{}, RobotsBlocked: []string{}}
	for _, u := range urls {
		switch u.State {
		case store.URLFailed:
			h := sha256.Sum256([]byte(id + "\x00" + u.Key))
			out.Errors = append(out.Errors, PageError{ID: hex.EncodeToString(h[:8]), Timestamp: u.UpdatedAt, URL: u.URL,
				Code: u.ErrorCode, Error: u.Error})
		case store.URLRobots:
			out.RobotsBlocked = append(out.RobotsBlocked, u.URL)
		}
	}
	return out, nil
}

// Active lists team's running crawls.
func (s *Service) Active(ctx context.Context, team string) ([]Active, error) {
	rows, err := s.Store.Jobs(ctx, team, KindCrawl, StatusScraping)
	if err != nil {
		return nil, err
	}
	out := []Active{}
	for _, r := range rows {
		var spec Spec
		if err := json.Unmarshal(r.Request, &spec); err != nil {
			continue
		}
		so := spec.ScrapeOptions
		if len(so) == 0 {
			so = json.RawMessage(`{}`)
		}
		out = append(out, Active{ID: r.ID, TeamID: r.Team, URL: spec.URL, Options: ActiveOptions{ScrapeOptions: so},
			CreatedAt: r.CreatedAt})
	}
	return out, nil
}

// Watch subscribes to a running job's live events. running is false when
// the job is not running (its status says everything there is).
func (s *Service) Watch(team, kind, id string) (events <-chan Event, stop func(), running bool) {
	j := s.running(team, kind, id)
	if j == nil {
		return nil, func() {}, false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.status != StatusScraping {
		return nil, func() {}, false
	}
	w := &watcher{ch: make(chan Event, 1024)}
	j.subs[w] = struct{}{}
	return w.ch, func() {
		j.mu.Lock()
		if !w.closed {
			delete(j.subs, w)
			close(w.ch)
			w.closed = true
		}
		j.mu.Unlock()
	}, true
}

// Progress is a running job's counters, for the CLI.
type Progress struct {
	Done, Failed, Queued, InFlight int
}

// Progress returns job id's counters, or false when it is not running.
func (s *Service) Progress(id string) (Progress, bool) {
	s.mu.Lock()
	j := s.jobs[id]
	s.mu.Unlock()
	if j == nil {
		return Progress{}, false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return Progress{Done: j.done, Failed: j.failed, Queued: len(j.queue), InFlight: len(j.inflight)}, j.status == StatusScraping
}
