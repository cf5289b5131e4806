package crawl

import (
	"context"
	"errors"
	"time"

	"github.com/trawler-dev/trawler/store"
)

// statusLost is a job this node stopped working on because another node
// holds it now (or it ended on another node): in memory only, never
// stored.
const statusLost = "lost"

// keepLeases renews the leases of the jobs this node works on, every third
// of the lease, and claims the jobs whose lease ran out: those of a node
// that died. See store/nodes.go.
func (s *Service) keepLeases() {
	defer s.wg.Done()
	t := time.NewTicker(s.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-s.base.Done():
			return
		case <-t.C:
		}
		s.renewLeases()
	}
}

func (s *Service) renewLeases() {
	ctx, cancel := context.WithTimeout(s.base, s.Lease/3)
	defer cancel()
	asked := time.Now()
	held, err := s.Store.RenewJobs(ctx, asked.Add(s.Lease))
	if err != nil {
		s.Log.Error("renewing job leases", "err", err)
		return
	}
	// Politeness per host is shared while other nodes are alive.
	if others, err := s.Store.OthersAlive(ctx, asked.Add(-s.Lease)); err != nil {
		s.Log.Error("reading the nodes", "err", err)
	} else {
		s.hostsShared.Store(others)
	}
	if s.hostsShared.Load() {
		if err := s.Store.RenewPlaces(ctx, asked.Add(s.Lease)); err != nil {
			s.Log.Error("renewing host places", "err", err)
		}
	}
	s.mu.Lock()
	var lost []*job
	for id, j := range s.jobs {
		// A job created or claimed after the renewal was asked for was not
		// among the node's jobs yet.
		if !held[id] && j.leased.Before(asked) {
			lost = append(lost, j)
		}
	}
	s.mu.Unlock()
	for _, j := range lost {
		s.abandon(j, "its lease was not renewed: another node holds it, or it ended there")
	}
	now := time.Now()
	claimed, err := s.Store.ClaimJobs(ctx, false, now, now.Add(s.Lease))
	if err != nil {
		s.Log.Error("claiming jobs whose lease ran out", "err", err)
		return
	}
	for _, row := range claimed {
		if s.running(row.Team, row.Kind, row.ID) != nil {
			continue // its own, whose renewal was late
		}
		s.Log.Warn("taking over a job whose node stopped renewing its lease", "job", row.ID, "kind", row.Kind)
		if err := s.resume(ctx, row); err != nil {
			s.Log.Error("resuming a job", "job", row.ID, "err", err)
		}
	}
}

// abandon stops working on j without ending it: another node holds it, or
// ended it. Its pages in flight are cut off, and could not be recorded
// anyway (store.ErrLeaseLost); its watchers here are let go.
func (s *Service) abandon(j *job, why string) {
	j.mu.Lock()
	if j.status != StatusScraping {
		j.mu.Unlock()
		return
	}
	j.status = statusLost
	for _, c := range j.inflight {
		c()
	}
	for w := range j.subs {
		close(w.ch)
		w.closed = true
		delete(j.subs, w)
	}
	if j.drained != nil {
		close(j.drained)
		j.drained = nil
	}
	j.mu.Unlock()
	j.cancel()
	s.mu.Lock()
	if s.jobs[j.id] == j {
		delete(s.jobs, j.id)
	}
	s.broadcastLocked()
	s.mu.Unlock()
	s.Log.Warn("stopped working on a job", "job", j.id, "why", why)
}

// lostLease reports whether err says the job is no longer this node's, and
// if so lets it go.
func (s *Service) lostLease(j *job, err error) bool {
	if !errors.Is(err, store.ErrLeaseLost) {
		return false
	}
	s.abandon(j, "the store refused a write: another node holds the job, or it ended there")
	return true
}

// followEvery is how often a job another node runs is read from the store
// for a watcher here, when the store has no change notices;
// followNoticed is how often it is read besides its notices.
const (
	followEvery   = 500 * time.Millisecond
	followNoticed = 5 * time.Second
)

// watchElsewhere follows a job that is scraping on another node: its
// documents and its end come from the store, read at each of the job's
// change notices (PostgreSQL's NOTIFY, from any node) and every
// followNoticed besides, or every followEvery without notices, as events
// numbered like the running node's. running is false when the job is not
// scraping (or not there at all).
func (s *Service) watchElsewhere(ctx context.Context, team, kind, id string) (events <-chan Event, stop func(), running bool) {
	row, err := s.Store.Job(ctx, team, kind, id)
	if err != nil || row.Status != StatusScraping {
		return nil, func() {}, false
	}
	ch := make(chan Event, 1024)
	fctx, cancel := context.WithCancel(ctx)
	go func() {
		defer close(ch)
		changed, unsubscribe := s.Store.JobChanges(id)
		defer unsubscribe()
		every := followEvery
		if changed != nil {
			every = followNoticed
		}
		t := time.NewTicker(every)
		defer t.Stop()
		var seq int64
		for {
			// The status first: documents read after it are all there
			// are when it says the job ended.
			row, err := s.Store.Job(fctx, team, kind, id)
			if err != nil {
				return
			}
			for {
				docs, more, err := s.Store.JobDocuments(fctx, id, int(seq), 100, 8<<20)
				if err != nil {
					return
				}
				for _, d := range docs {
					seq++
					select {
					case ch <- Event{Type: "document", Doc: d, Seq: seq}:
					case <-fctx.Done():
						return
					}
				}
				if !more {
					break
				}
			}
			if row.Status != StatusScraping {
				select {
				case ch <- Event{Type: row.Status}:
				case <-fctx.Done():
				}
				return
			}
			select {
			case <-fctx.Done():
				return
			case <-changed:
			case <-t.C:
			}
		}
	}()
	return ch, cancel, true
}
