package crawl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"runtime"
	"sync"
	"sync/atomic"
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

// Service runs jobs. Workers lanes, each with one scrape.Worker (which
// shares a leased browser with up to scrape.CrewSize-1 others), take
// pages from every running job in a fair order: the team with the fewest
// pages in flight goes first, and within a team the job served least
// recently. Workers stays below the pool size, so jobs
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
	// Lease is how long this node holds a job without renewing it (the
	// store's, store.SetNode); zero: leases are neither renewed nor taken
	// over, as with one node.
	Lease time.Duration

	mu           sync.Mutex
	jobs         map[string]*job
	changed      chan struct{}
	hostInflight map[string]int
	teamInflight map[string]int
	// hostsShared is set while other nodes share the store: a page then
	// also takes a place of its host there (store.TakePlace), so that the
	// nodes together keep to HostConcurrency. hostFull holds back, until
	// its time, a host whose places other nodes hold.
	hostsShared atomic.Bool
	hostFull    map[string]time.Time
	closed      bool
	stop        context.CancelFunc
	base        context.Context
	wg          sync.WaitGroup
	client      *http.Client
	// finishing bounds the fetched pages being finished (transformed and
	// recorded) at once, one per core: the lanes fetch on meanwhile.
	finishing chan struct{}
}

// Start resumes the jobs a previous run of this node left unfinished,
// and those of nodes whose lease ran out, and starts the lanes.
func (s *Service) Start(ctx context.Context) error {
	s.jobs = map[string]*job{}
	s.changed = make(chan struct{})
	s.hostInflight, s.teamInflight, s.hostFull = map[string]int{}, map[string]int{}, map[string]time.Time{}
	s.base, s.stop = context.WithCancel(context.Background())
	s.client = s.Guard.Client(20*time.Second, netguard.SkipTLSVerify)
	s.finishing = make(chan struct{}, runtime.NumCPU())
	if s.Workers < 1 {
		s.Workers = 1
	}
	if s.HostConcurrency < 1 {
		s.HostConcurrency = 8
	}
	if s.Retention <= 0 {
		s.Retention = 24 * time.Hour
	}
	now := time.Now()
	running, err := s.Store.ClaimJobs(ctx, true, now, now.Add(s.Lease))
	if err != nil {
		return err
	}
	if others, err := s.Store.OthersAlive(ctx, now.Add(-s.Lease)); err == nil && s.Lease > 0 {
		s.hostsShared.Store(others)
	}
	for _, row := range running {
		if err := s.resume(ctx, row); err != nil {
			s.Log.Error("resuming a job", "job", row.ID, "err", err)
		}
	}
	// The lanes share browsers, CrewSize to one (scrape.Crew): a job's
	// pages rendered at once are tabs of one context there.
	var crew *scrape.Crew
	for i := 0; i < s.Workers; i++ {
		if i%scrape.CrewSize == 0 {
			crew = s.Scrape.NewCrew()
		}
		s.wg.Add(1)
		go s.lane(crew)
	}
	if s.Lease > 0 {
		s.wg.Add(1)
		go s.keepLeases()
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
	id := spec.ID
	if id == "" {
		id = uuid.NewString()
	}
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
		j.linksOnly = linksOnlyKey(rules, spec)
		if ok, _ := rules.Allowed(start); ok || j.linksOnly != "" {
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

// linksOnlyKey is the key of a crawl's start page when the crawl fetches
// it for its links only: it is in the crawl's scope but excludePaths or
// includePaths leave it out of the results ("crawl from the home page,
// keep /blog/*"). Empty otherwise, and when only sitemaps are followed.
func linksOnlyKey(rules *discover.Rules, spec *Spec) string {
	start := rules.Start()
	if spec.Crawl.Sitemap == "only" {
		return ""
	}
	if ok, _ := rules.Allowed(start); ok {
		return ""
	}
	if ok, _ := rules.InScope(start); !ok {
		return ""
	}
	return rules.Key(start)
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
		j.linksOnly = linksOnlyKey(rules, &spec)
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
	j.leased = time.Now()
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
		if row.Status != StatusScraping {
			return row.Status, nil
		}
		return s.cancelElsewhere(ctx, row)
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

// cancelElsewhere cancels a job another node works on: the store ends it,
// with its webhook event, and that node stops at its next lease renewal,
// unable to record a page of it from now on.
func (s *Service) cancelElsewhere(ctx context.Context, row store.Job) (string, error) {
	var spec Spec
	if err := json.Unmarshal(row.Request, &spec); err != nil {
		return "", err
	}
	j := &job{id: row.ID, team: row.Team, kind: row.Kind, spec: &spec}
	now := time.Now()
	err := s.Store.CancelJob(ctx, row.ID, StatusCancelled, "", now, now.Add(s.Retention), s.events(j, "cancelled", nil, ""))
	if errors.Is(err, store.ErrNotFound) {
		// It ended meanwhile.
		if row, err = s.Store.Job(ctx, row.Team, row.Kind, row.ID); err != nil {
			return "", err
		}
		return row.Status, nil
	}
	if err != nil {
		return "", err
	}
	s.notifyWebhooks()
	return StatusCancelled, nil
}
