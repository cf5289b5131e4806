package crawl

import (
	"context"
	"errors"
	"net/url"
	"time"

	"github.com/trawler-dev/trawler/scrape"
	"github.com/trawler-dev/trawler/store"
)

// maxRetries is how often a page is tried again when the infrastructure,
// not the page, failed it (no browser, a browser that died).
const maxRetries = 3

// lane takes pages from the running jobs until the service closes, with a
// worker of crew.
func (s *Service) lane(crew *scrape.Crew) {
	defer s.wg.Done()
	w := crew.NewWorker()
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
			if ok {
				host := hostOf(j.queue[0].URL)
				full, held := s.hostFull[host]
				switch {
				case held && full.After(now):
					ok = false
					if d := full.Sub(now); wait == 0 || d < wait {
						wait = d
					}
				case s.hostInflight[host] >= s.HostConcurrency:
					ok = false
				}
				if held && !full.After(now) {
					delete(s.hostFull, host)
				}
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

// page scrapes one URL of j and records the outcome. The lane's part ends
// when the page is in hand: the page's host and team slots are given back
// then, and the rest (transform, recording) runs beside the lanes, at most
// one page per core, so that a lane fetches its next page while the last
// one is converted, as the site's politeness allows.
func (s *Service) page(ctx context.Context, w *scrape.Worker, j *job, u *store.JobURL) {
	host := hostOf(u.URL)
	released, placed := false, false
	release := func() {
		if released {
			return
		}
		released = true
		s.mu.Lock()
		s.hostInflight[host]--
		s.teamInflight[j.team]--
		s.broadcastLocked()
		s.mu.Unlock()
		if placed {
			if err := s.Store.GivePlace(context.Background(), store.HostPlace(host)); err != nil {
				s.Log.Warn("giving back a host's place", "host", host, "err", err)
			}
		}
	}
	defer release()
	if s.hostsShared.Load() {
		var full bool
		if placed, full = s.takeHost(ctx, host); full {
			s.requeue(j, u) // the nodes hold the host's places: later
			return
		}
	}
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
	if u.Key == j.linksOnly {
		// Only its links are kept: no format that costs a model call or a
		// capture.
		req.Options.Formats, req.Options.OnlyCleanContent = []scrape.Format{{Type: "links"}}, false
	}
	f, err := w.Begin(ctx, j.id, req)
	if j.ctx.Err() != nil {
		if f != nil {
			f.Cancel()
		}
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
	if err != nil {
		s.record(j, u, nil, err)
		return
	}
	release()
	s.finishing <- struct{}{}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() { <-s.finishing }()
		doc, err := f.Finish()
		if j.ctx.Err() != nil {
			s.drop(j, u)
			return
		}
		s.record(j, u, doc, err)
	}()
}

// drop forgets an in-flight page without recording it.
func (s *Service) drop(j *job, u *store.JobURL) {
	j.mu.Lock()
	delete(j.inflight, u.Key)
	j.drainedLocked()
	j.mu.Unlock()
	s.broadcast() // its place among the job's pages in flight is free
}

// requeue puts an in-flight page back at the head of its job's queue (a
// cancel waiting for the job's pages in flight is told when it was the
// last).
func (s *Service) requeue(j *job, u *store.JobURL) {
	j.mu.Lock()
	delete(j.inflight, u.Key)
	j.queue = append([]*store.JobURL{u}, j.queue...)
	j.drainedLocked()
	j.mu.Unlock()
	s.broadcast()
}

// hostRetry is how long a host whose places other nodes hold is left
// alone before its page is tried again.
const hostRetry = 100 * time.Millisecond

// takeHost takes a place of host in the store, shared by the nodes, and
// reports whether it did, or whether the nodes hold them all: the host is
// then held back for hostRetry. A store that cannot say leaves the node's
// own limit alone to hold (neither).
func (s *Service) takeHost(ctx context.Context, host string) (took, full bool) {
	now := time.Now()
	ok, err := s.Store.TakePlace(ctx, store.HostPlace(host), s.HostConcurrency, now, now.Add(max(s.Lease, time.Second)))
	if err != nil {
		if ctx.Err() == nil {
			s.Log.Warn("taking a host's place; keeping to this node's own limit", "host", host, "err", err)
		}
		return false, false
	}
	if !ok {
		s.mu.Lock()
		s.hostFull[host] = now.Add(hostRetry)
		s.mu.Unlock()
	}
	return ok, !ok
}
