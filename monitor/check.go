package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/trawler-dev/trawler/crawl"
	"github.com/trawler-dev/trawler/discover"
	"github.com/trawler-dev/trawler/scrape/changetracking"
	"github.com/trawler-dev/trawler/store"
)

// checkDetail is a check's state as the runner keeps it (the jobs it
// started, so that a node taking the check over waits for them rather
// than start them again) and the answer's other members.
type checkDetail struct {
	TargetResults []TargetResult `json:"targetResults"`
	Credits       int            `json:"actualCredits"`
	Error         string         `json:"error,omitempty"`
}

// TargetResult is what a check did for one target.
type TargetResult struct {
	TargetID     string   `json:"targetId"`
	Type         string   `json:"type"`
	CrawlID      string   `json:"crawlId,omitempty"`
	ExpectedJobs []string `json:"expectedJobs,omitempty"`
	Error        string   `json:"error,omitempty"`
}

// Page is one page of a check, as GET .../checks/{id} shows it.
type Page struct {
	ID               string          `json:"id"`
	TargetID         string          `json:"targetId"`
	URL              string          `json:"url"`
	Status           string          `json:"status"`
	PreviousScrapeID *string         `json:"previousScrapeId"`
	CurrentScrapeID  *string         `json:"currentScrapeId"`
	StatusCode       *int            `json:"statusCode"`
	Error            *string         `json:"error"`
	Diff             *Diff           `json:"diff"`
	Judgment         *Judgment       `json:"judgment"`
	Metadata         json.RawMessage `json:"metadata,omitempty"`
	CreatedAt        string          `json:"createdAt"`
}

// Diff is a changed page's diff: the unified Markdown diff and its
// parse-diff structure, as change tracking's git-diff mode gives them.
type Diff struct {
	Text string                  `json:"text"`
	JSON changetracking.DiffJSON `json:"json"`
}

// run is one check being run by this node.
type run struct {
	s      *Service
	mu     sync.Mutex
	check  store.MonitorCheck
	detail checkDetail
	lost   context.CancelFunc
}

// runCheck runs check c, which this node has claimed, to its end: it
// starts (or finds) each target's job, waits for them, compares their
// pages with the monitor's snapshots, judges the changed ones and writes
// the outcome. Should the lease be lost (another node took the check
// over after a stall), it stops without writing anything.
func (s *Service) runCheck(ctx context.Context, c store.MonitorCheck) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := &run{s: s, check: c, lost: cancel}
	if len(c.Detail) > 0 {
		json.Unmarshal(c.Detail, &r.detail) // the runner's own JSON
	}
	stop := r.renewing(ctx)
	defer stop()
	m, err := s.Store.MonitorByID(ctx, c.Team, c.Monitor)
	if errors.Is(err, store.ErrNotFound) {
		r.finish(ctx, Definition{}, nil, nil, nil, CheckFailed, "the monitor was deleted")
		return
	}
	if err != nil {
		s.Log.Error("reading a monitor to check it", "monitor", c.Monitor, "err", err)
		return // the lease runs out and the check is tried again
	}
	def, _, err := decode(m.Spec)
	if err != nil {
		r.finish(ctx, def, nil, nil, nil, CheckFailed, "the monitor's definition cannot be read: "+err.Error())
		return
	}
	if err := r.startJobs(ctx, def); err != nil {
		return
	}
	pages, keep, drop, err := r.compare(ctx, def)
	if err != nil {
		if ctx.Err() == nil {
			s.Log.Error("comparing a monitor's pages", "monitor", c.Monitor, "err", err)
		}
		return
	}
	s.judge(ctx, c, def, pages, &r.detail)
	status, msg := outcome(pages, r.detail)
	r.finish(ctx, def, pages, keep, drop, status, msg)
}

// renewing renews the check's lease until stop is called; a lease that
// is no longer this node's cancels the run.
func (r *run) renewing(ctx context.Context) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(r.s.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if !r.renew(ctx) {
					return
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// renew extends the lease and stores the detail; false when the check is
// no longer this node's (the run is then cancelled).
func (r *run) renew(ctx context.Context) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.check.Detail, _ = json.Marshal(r.detail)
	ok, err := r.s.Store.RenewMonitorCheck(ctx, &r.check, time.Now().Add(r.s.Lease))
	if err != nil {
		// The store may be back before the lease runs out.
		r.s.Log.Warn("renewing a monitor check's lease", "check", r.check.ID, "err", err)
		return true
	}
	if !ok {
		r.s.Log.Warn("a monitor check was taken over by another node", "check", r.check.ID)
		r.lost()
	}
	return ok
}

// jobID is the id of the job of target i of check: the same on every node,
// so that a node taking the check over finds the job the first started.
func jobID(check string, i int) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, fmt.Appendf(nil, "trawler:monitor-check:%s:%d", check, i)).String()
}

// startJobs starts each target's job unless it exists, and waits until
// every one has ended. An error means the run stops (lost or cancelled).
func (r *run) startJobs(ctx context.Context, def Definition) error {
	results := make([]TargetResult, len(def.Targets))
	for i, t := range def.Targets {
		id := jobID(r.check.ID, i)
		res := TargetResult{TargetID: t.ID, Type: t.Type}
		if t.Type == "crawl" {
			res.CrawlID = id
		} else {
			res.ExpectedJobs = []string{id}
		}
		_, err := r.s.Store.Job(ctx, r.check.Team, t.Job.Kind, id)
		if errors.Is(err, store.ErrNotFound) {
			spec := *t.Job
			spec.ID, spec.Webhook = id, nil
			_, err = r.s.Crawler.Create(ctx, r.check.Team, &spec, "")
			if err != nil && ctx.Err() == nil {
				res.Error = err.Error()
				err = nil
			}
		}
		if err != nil {
			return err
		}
		results[i] = res
	}
	r.mu.Lock()
	r.detail.TargetResults = results
	r.mu.Unlock()
	if !r.renew(ctx) {
		return context.Canceled
	}
	for i, t := range def.Targets {
		if results[i].Error != "" {
			continue
		}
		if err := r.await(ctx, t.Job.Kind, jobID(r.check.ID, i)); err != nil {
			return err
		}
	}
	return nil
}

// await waits until job id has ended.
func (r *run) await(ctx context.Context, kind, id string) error {
	for {
		j, err := r.s.Store.Job(ctx, r.check.Team, kind, id)
		if err == nil && j.Status != crawl.StatusScraping {
			return nil
		}
		if errors.Is(err, store.ErrNotFound) {
			return nil // pruned: its pages are gone, and count as errors
		}
		t := time.NewTimer(250 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// docFields are the members of a job's document a check reads.
type docFields struct {
	Markdown string `json:"markdown"`
	Metadata struct {
		SourceURL  string `json:"sourceURL"`
		URL        string `json:"url"`
		StatusCode int    `json:"statusCode"`
		ScrapeID   string `json:"scrapeId"`
		Error      string `json:"error"`
	} `json:"metadata"`
}

// compare reads each target's pages and compares them with the monitor's
// snapshots: the pages of the check, the snapshots to keep and those of
// removed pages.
func (r *run) compare(ctx context.Context, def Definition) (pages []Page, keep, drop []store.MonitorSnapshot, err error) {
	now := time.Now()
	at := now.UTC().Format("2006-01-02T15:04:05.000Z") // as the API writes times
	for i, t := range def.Targets {
		res := r.detail.TargetResults[i]
		snaps, err := r.s.Store.MonitorSnapshots(ctx, r.check.Monitor, t.ID)
		if err != nil {
			return nil, nil, nil, err
		}
		prev := map[string]store.MonitorSnapshot{}
		for _, sn := range snaps {
			prev[sn.Key] = sn
		}
		seen := map[string]bool{}
		page := func(p Page, key string) {
			p.ID, p.TargetID, p.CreatedAt = newID(), t.ID, at
			seen[key] = true
			pages = append(pages, p)
		}
		if res.Error != "" {
			for _, u := range targetURLs(t) {
				msg := res.Error
				page(Page{URL: u, Status: PageError, Error: &msg}, discover.PageKey(u))
			}
			continue
		}
		id := jobID(r.check.ID, i)
		job, err := r.s.Store.Job(ctx, r.check.Team, t.Job.Kind, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, nil, nil, err
		}
		r.detail.Credits += job.Credits
		for skip := 0; ; {
			docs, more, err := r.s.Store.JobDocuments(ctx, id, skip, 200, 32<<20)
			if err != nil {
				return nil, nil, nil, err
			}
			for _, raw := range docs {
				var d docFields
				if json.Unmarshal(raw, &d) != nil {
					continue
				}
				u := d.Metadata.SourceURL
				if u == "" {
					u = d.Metadata.URL
				}
				key := discover.PageKey(u)
				p, sn, gone := comparePage(d, u, prev[key])
				page(p, key)
				switch {
				case gone:
					drop = append(drop, prev[key])
				case sn != nil:
					sn.Monitor, sn.Target, sn.Key, sn.Check, sn.ScrapedAt = r.check.Monitor, t.ID, key, r.check.ID, now
					keep = append(keep, *sn)
				}
			}
			skip += len(docs)
			if !more || len(docs) == 0 {
				break
			}
		}
		errs, err := r.s.Crawler.Errors(ctx, r.check.Team, t.Job.Kind, id)
		if err != nil && !errors.Is(err, crawl.ErrNotFound) {
			return nil, nil, nil, err
		}
		if errs != nil {
			for _, e := range errs.Errors {
				key := discover.PageKey(e.URL)
				if seen[key] {
					continue
				}
				msg := e.Error
				page(Page{URL: e.URL, Status: PageError, Error: &msg}, key)
			}
			for _, u := range errs.RobotsBlocked {
				key := discover.PageKey(u)
				if seen[key] {
					continue
				}
				msg := "robots.txt does not allow this page"
				page(Page{URL: u, Status: PageError, Error: &msg}, key)
			}
		}
		// A page a completed crawl no longer reached is gone; a batch's
		// pages are its URLs, each answered above.
		if t.Type == "crawl" && job.Status == crawl.StatusCompleted {
			for key, sn := range prev {
				if !seen[key] {
					page(Page{URL: sn.URL, Status: PageRemoved, PreviousScrapeID: nil}, key)
					drop = append(drop, sn)
				}
			}
		}
		if t.Type == "scrape" {
			for _, u := range t.URLs {
				if key := discover.PageKey(u); !seen[key] {
					msg := "the page was not scraped: its job " + job.Status
					if job.Error != "" {
						msg += ": " + job.Error
					}
					page(Page{URL: u, Status: PageError, Error: &msg}, key)
				}
			}
		}
	}
	return pages, keep, drop, nil
}

// comparePage compares one scraped page with its snapshot (zero when the
// monitor has none): the page, the snapshot to keep (nil: keep the old
// one), and whether the page is gone (its snapshot dropped).
func comparePage(d docFields, u string, prev store.MonitorSnapshot) (Page, *store.MonitorSnapshot, bool) {
	code := d.Metadata.StatusCode
	p := Page{URL: u, StatusCode: &code}
	if d.Metadata.ScrapeID != "" {
		id := d.Metadata.ScrapeID
		p.CurrentScrapeID = &id
	}
	had := prev.Key != ""
	switch {
	case code == 404 || code == 410:
		if had {
			p.Status = PageRemoved
			return p, nil, true
		}
		msg := fmt.Sprintf("the page answered HTTP %d", code)
		p.Status, p.Error = PageError, &msg
		return p, nil, false
	case code >= 400 || d.Metadata.Error != "":
		msg := d.Metadata.Error
		if msg == "" {
			msg = fmt.Sprintf("the page answered HTTP %d", code)
		}
		p.Status, p.Error = PageError, &msg
		return p, nil, false
	}
	sn := &store.MonitorSnapshot{URL: u, Markdown: d.Markdown, StatusCode: code}
	switch {
	case !had:
		p.Status = PageNew
	case changetracking.SameContent(prev.Markdown, d.Markdown):
		p.Status = PageSame
	default:
		p.Status = PageChanged
		if diff := changetracking.DiffMarkdown(prev.Markdown, d.Markdown); diff != nil {
			p.Diff = &Diff{Text: diff.Text, JSON: diff.JSON}
		}
	}
	return p, sn, false
}

func targetURLs(t Target) []string {
	if t.Type == "crawl" {
		return []string{t.URL}
	}
	return t.URLs
}

// Summarize counts pages by status.
func Summarize(pages []Page) Summary {
	var s Summary
	for _, p := range pages {
		s.TotalPages++
		switch p.Status {
		case PageSame:
			s.Same++
		case PageNew:
			s.New++
		case PageChanged:
			s.Changed++
		case PageRemoved:
			s.Removed++
		default:
			s.Error++
		}
	}
	return s
}

// outcome is a check's status: failed when nothing could be checked,
// partial when some pages failed.
func outcome(pages []Page, d checkDetail) (string, string) {
	sum := Summarize(pages)
	switch {
	case sum.TotalPages == 0:
		return CheckFailed, "no page was checked"
	case sum.Error == sum.TotalPages:
		msg := "every page failed"
		for _, p := range pages {
			if p.Error != nil {
				msg += ": " + *p.Error
				break
			}
		}
		return CheckFailed, msg
	case sum.Error > 0:
		return CheckPartial, ""
	}
	return CheckCompleted, ""
}

// maxBackoff bounds how far a failing monitor's next run is put off.
const maxBackoff = 24 * time.Hour

// backoff is how long after a check a monitor whose checks failed
// failures times in a row waits before its next run: nothing for the
// first failure (the schedule's own next time), then twice the schedule's
// interval, doubling with each failure.
func backoff(failures int, interval time.Duration) time.Duration {
	if failures < 2 {
		return 0
	}
	d := 2 * interval
	for i := 2; i < failures && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}
