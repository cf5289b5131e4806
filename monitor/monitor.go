// Package monitor owns monitors: pages, sites and searches checked on a
// schedule, each check compared with the monitor's own last snapshot of
// every page. A check's pages are taken by the jobs of package crawl (a
// batch scrape per scrape target, a crawl per crawl target), so they obey
// the team's concurrency, credits, robots.txt, politeness and the network
// guard as any job does.
//
// The schedule is kept in the store and claimed with a compare-and-set of
// each monitor's next run, so that a due time is run once however many
// nodes share the database and whatever was killed when; a check is
// leased to the node running it and taken over when its lease runs out;
// its outcome, its pages, the monitor's snapshots and its webhook events
// are written in one transaction, once.
package monitor

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/trawler-dev/trawler/crawl"
	"github.com/trawler-dev/trawler/model"
	"github.com/trawler-dev/trawler/store"
	"github.com/trawler-dev/trawler/webhook"
)

// Definition is a monitor as validated by package api, kept as JSON.
type Definition struct {
	Schedule      ScheduleSpec  `json:"schedule"` // normalized: cron and timezone
	Targets       []Target      `json:"targets"`
	Webhook       *webhook.Spec `json:"webhook,omitempty"`
	Goal          string        `json:"goal,omitempty"`
	JudgeEnabled  bool          `json:"judgeEnabled"`
	RetentionDays int           `json:"retentionDays"`
}

// Target is one thing a monitor watches: as the user gave it, and the
// job that takes its pages.
type Target struct {
	ID            string          `json:"id"`
	Type          string          `json:"type"` // scrape or crawl
	URLs          []string        `json:"urls,omitempty"`
	URL           string          `json:"url,omitempty"`
	CrawlOptions  json.RawMessage `json:"crawlOptions,omitempty"`
	ScrapeOptions json.RawMessage `json:"scrapeOptions,omitempty"`
	Job           *crawl.Spec     `json:"job"`
}

// Summary counts a check's pages by status.
type Summary struct {
	TotalPages int `json:"totalPages"`
	Same       int `json:"same"`
	Changed    int `json:"changed"`
	New        int `json:"new"`
	Removed    int `json:"removed"`
	Error      int `json:"error"`
}

// The statuses of a check's page.
const (
	PageSame    = "same"
	PageNew     = "new"
	PageChanged = "changed"
	PageRemoved = "removed"
	PageError   = "error"
)

// The statuses of a check.
const (
	CheckQueued    = "queued"
	CheckRunning   = "running"
	CheckCompleted = "completed"
	CheckPartial   = "partial"
	CheckFailed    = "failed"
	CheckOverlap   = "skipped_overlap"
	CheckNoCredits = "skipped_no_credits"
)

// Service runs every node's part of the monitors: it claims the due runs
// and runs the checks no live node holds.
type Service struct {
	Store   *store.Store
	Crawler *crawl.Service
	// Model judges changed pages against a monitor's goal (nil: none).
	Model    *model.Client
	Webhooks *webhook.Dispatcher
	Log      *slog.Logger
	// Admit says why team may not run a check now ("" when it may): its
	// credits are spent.
	Admit func(ctx context.Context, team string) string
	// Lease is how long a node holds a check without renewing it.
	Lease time.Duration
	// Checks bounds the checks this node runs at once.
	Checks int
	// Poll is how often the store is asked for runs due and checks left
	// by other nodes; a run this node knows of is claimed at its time.
	Poll time.Duration

	wake    chan struct{}
	mu      sync.Mutex
	running map[string]bool
	wg      sync.WaitGroup
}

// lateAfter is how long after its due time a run counts as late: the
// service was down, or every check slot busy.
func lateAfter(s Schedule) time.Duration {
	return min(max(s.Interval()/2, 2*time.Second), time.Minute)
}

// Run claims due runs and runs checks until ctx ends.
func (s *Service) Run(ctx context.Context) {
	s.init()
	defer s.wg.Wait()
	for {
		s.claimDue(ctx)
		s.runChecks(ctx)
		wait := s.Poll
		if next, err := s.Store.NextMonitorRun(ctx); err == nil && !next.IsZero() {
			wait = min(wait, max(time.Until(next), 10*time.Millisecond))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

func (s *Service) init() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wake == nil {
		s.wake = make(chan struct{}, 1)
		s.running = map[string]bool{}
	}
	if s.Poll <= 0 {
		s.Poll = 2 * time.Second
	}
	if s.Lease <= 0 {
		s.Lease = 30 * time.Second
	}
	if s.Checks <= 0 {
		s.Checks = 4
	}
}

// Wake tells the loop that a monitor or check changed (created, edited,
// run now).
func (s *Service) Wake() {
	s.init()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// claimDue claims each due run: the monitor's next run moves to the
// schedule's first time after now (missed times are not run one by one),
// and a check is queued, or recorded as skipped when the monitor's last
// check is still running.
func (s *Service) claimDue(ctx context.Context) {
	now := time.Now()
	due, err := s.Store.DueMonitors(ctx, now, 100)
	if err != nil {
		if ctx.Err() == nil {
			s.Log.Error("reading the monitors due", "err", err)
		}
		return
	}
	for _, m := range due {
		def, sched, err := decode(m.Spec)
		if err != nil {
			s.Log.Error("a stored monitor cannot be read", "monitor", m.ID, "err", err)
			continue
		}
		c := store.MonitorCheck{ID: newID(), Monitor: m.ID, Team: m.Team, Status: CheckQueued, Trigger: "scheduled",
			ScheduledFor: m.NextRunAt, Late: now.Sub(m.NextRunAt) > lateAfter(sched), CreatedAt: now,
			ExpiresAt: now.Add(retention(def))}
		if m.CurrentCheck != "" {
			c.Status, c.FinishedAt = CheckOverlap, now
		} else if why := s.admit(ctx, m.Team); why != "" {
			c.Status, c.FinishedAt = CheckNoCredits, now
			c.Detail, _ = json.Marshal(checkDetail{Error: why})
		}
		ok, err := s.Store.ClaimMonitorRun(ctx, m, sched.Next(now), c)
		if err != nil {
			if ctx.Err() == nil {
				s.Log.Error("claiming a monitor's run", "monitor", m.ID, "err", err)
			}
			continue
		}
		if ok && c.Status == CheckQueued {
			s.Log.Debug("monitor run claimed", "monitor", m.ID, "scheduledFor", m.NextRunAt, "late", c.Late)
		}
	}
}

func (s *Service) admit(ctx context.Context, team string) string {
	if s.Admit == nil {
		return ""
	}
	return s.Admit(ctx, team)
}

// runChecks starts the checks no live node holds, up to Checks at once.
func (s *Service) runChecks(ctx context.Context) {
	s.mu.Lock()
	free := s.Checks - len(s.running)
	s.mu.Unlock()
	if free <= 0 {
		return
	}
	claimed, err := s.Store.ClaimMonitorCheck(ctx, time.Now(), s.Lease, free)
	if err != nil && ctx.Err() == nil {
		s.Log.Error("claiming monitor checks", "err", err)
	}
	for _, c := range claimed {
		s.mu.Lock()
		s.running[c.ID] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.running, c.ID)
				s.mu.Unlock()
				s.Wake()
			}()
			s.runCheck(ctx, c)
		}()
	}
}

// RunNow queues a manual check of team's monitor m; ok is false when a
// check of it is already queued or running.
func (s *Service) RunNow(ctx context.Context, m store.Monitor) (c store.MonitorCheck, ok bool, err error) {
	def, _, err := decode(m.Spec)
	if err != nil {
		return c, false, err
	}
	now := time.Now()
	c = store.MonitorCheck{ID: newID(), Monitor: m.ID, Team: m.Team, Status: CheckQueued, Trigger: "manual",
		CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(retention(def))}
	ok, err = s.Store.StartMonitorRun(ctx, c)
	if ok {
		s.Wake()
	}
	return c, ok, err
}

func retention(def Definition) time.Duration {
	days := def.RetentionDays
	if days <= 0 {
		days = 30
	}
	return time.Duration(days) * 24 * time.Hour
}

func newID() string { return uuid.Must(uuid.NewV7()).String() }

// decode reads a stored definition and its schedule.
func decode(spec []byte) (Definition, Schedule, error) {
	var def Definition
	if err := json.Unmarshal(spec, &def); err != nil {
		return def, Schedule{}, err
	}
	sched, problem := ParseSchedule(def.Schedule, 0)
	if problem != "" {
		return def, sched, &scheduleError{problem}
	}
	return def, sched, nil
}

type scheduleError struct{ msg string }

func (e *scheduleError) Error() string { return e.msg }

// Decode reads a stored monitor's definition and schedule.
func Decode(m store.Monitor) (Definition, Schedule, error) { return decode(m.Spec) }
