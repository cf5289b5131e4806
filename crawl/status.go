package crawl

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/trawler-dev/trawler/store"
)

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
// the job is not running (its status says everything there is). A job
// another node runs is followed through the store (watchElsewhere).
func (s *Service) Watch(ctx context.Context, team, kind, id string) (events <-chan Event, stop func(), running bool) {
	j := s.running(team, kind, id)
	if j == nil {
		return s.watchElsewhere(ctx, team, kind, id)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.status != StatusScraping {
		return nil, func() {}, false
	}
	w := j.subscribeLocked()
	return w.ch, func() { j.unsubscribe(w) }, true
}

// AwaitDocument returns once team's job has more than have documents, or
// is not running, or ctx ends: a client paging past what a running job
// has so far waits here for the next document. A job another node runs
// is read from the store at its change notices, else every followEvery.
func (s *Service) AwaitDocument(ctx context.Context, team, kind, id string, have int) {
	if j := s.running(team, kind, id); j != nil {
		j.mu.Lock()
		if j.done > have || j.status != StatusScraping {
			j.mu.Unlock()
			return
		}
		w := j.subscribeLocked()
		j.mu.Unlock()
		defer j.unsubscribe(w)
		select {
		case <-w.ch: // a document, the end, or the watcher dropped
		case <-ctx.Done():
		}
		return
	}
	changed, unsubscribe := s.Store.JobChanges(id)
	defer unsubscribe()
	t := time.NewTicker(followEvery)
	defer t.Stop()
	for {
		row, err := s.Store.Job(ctx, team, kind, id)
		if err != nil || row.Status != StatusScraping {
			return
		}
		counts, err := s.Store.JobCounts(ctx, id)
		if err != nil || counts[store.URLDone] > have {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-t.C:
		}
	}
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
