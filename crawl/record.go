package crawl

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"time"

	"github.com/trawler-dev/trawler/scrape"
	"github.com/trawler-dev/trawler/store"
	"github.com/trawler-dev/trawler/webhook"
)

// errorCode names a page failure for GET /v2/crawl/{id}/errors: the code a
// scrape request failing so is answered with (scrape.Classify), a timeout
// for a page cut off by its deadline, SCRAPE_FAILED for anything else.
func errorCode(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		err = scrape.ErrTimeout
	}
	if f, ok := scrape.Classify(err); ok {
		return f.Code
	}
	return "SCRAPE_FAILED"
}

// record stores a page's outcome with the URLs it led to and its webhook
// event, then updates the job in memory and tells its watchers.
func (s *Service) record(j *job, u *store.JobURL, doc *scrape.Document, scrapeErr error) {
	p := s.outcome(j, u, doc, scrapeErr)
	var events []store.WebhookEvent
	if p.url.State == store.URLDone {
		events = s.events(j, "page", []json.RawMessage{p.raw}, "")
	}
	seq, stopped, err := s.storePage(j, p, events)
	if stopped || s.lostLease(j, err) {
		return
	}
	if err != nil {
		s.Log.Error("recording a page", "job", j.id, "err", err)
		s.fail(j, "could not record a page: "+err.Error())
		return
	}
	if len(events) > 0 {
		s.notifyWebhooks()
	}
	j.mu.Lock()
	j.countLocked(u.Key, p, seq)
	j.drainedLocked()
	j.mu.Unlock()
	// The lanes waiting for a page are told: the page's links may be there
	// to take, and its place among the job's pages in flight is free. (A
	// lane gives its host and team slots back before the page is recorded,
	// and that wake-up came too early: at a crawl's start, with its first
	// page the only one, the lanes slept until something else woke them,
	// seconds later.)
	s.broadcast()
	s.maybeEnd(j)
}

// pageOutcome is what record stores of a page.
type pageOutcome struct {
	url store.JobURL
	// raw is the document, also when the job keeps it only in memory.
	raw        json.RawMessage
	discovered []store.JobURL
	credits    int
}

// outcome is what becomes of page u of j, scraped into doc or failed with
// scrapeErr: a result, a failure, a page robots.txt refused, or a page
// fetched for its links only; with the links it admits and its credits.
func (s *Service) outcome(j *job, u *store.JobURL, doc *scrape.Document, scrapeErr error) pageOutcome {
	p := pageOutcome{url: store.JobURL{Key: u.Key, URL: u.URL, Depth: u.Depth, Seq: u.Seq, State: store.URLDone}}
	out := &p.url
	switch {
	case u.State == store.URLRobots:
		out.State = store.URLRobots
	case scrapeErr != nil:
		out.State, out.ErrorCode, out.Error = store.URLFailed, errorCode(scrapeErr), scrapeErr.Error()
		if errors.Is(scrapeErr, scrape.ErrLockdownMiss) {
			p.credits = scrape.LockdownMissCredits // a lockdown miss is billed too
		}
	case u.Key == j.linksOnly:
		// Fetched for its links only: neither a result, nor billed, nor
		// counted against the limit its links are admitted under.
		out.State = store.URLLinks
		j.mu.Lock()
		j.admitted--
		j.mu.Unlock()
		p.discovered = s.admitLinks(j, u, doc)
	default:
		var err error
		if p.raw, err = json.Marshal(doc); err != nil {
			out.State, out.ErrorCode, out.Error = store.URLFailed, "SCRAPE_FAILED", err.Error()
			break
		}
		if n, ok := doc.Metadata["creditsUsed"].(int); ok {
			p.credits = n
		}
		if !j.spec.ZeroDataRetention {
			out.Document = p.raw
		}
		p.discovered = s.admitLinks(j, u, doc)
	}
	return p
}

// storePage records p with the links it admitted and its webhook events,
// in one transaction, and returns the page's place among the job's
// results. stopped says the job's context ended while it waited for its
// store.
func (s *Service) storePage(j *job, p pageOutcome, events []store.WebhookEvent) (seq int64, stopped bool, err error) {
	done := p.url.State == store.URLDone
	seq, err = s.Store.FinishJobURL(context.Background(), j.id, p.url, done, p.discovered, p.credits, events)
	// A store that is full or unreachable took none of it (one
	// transaction): the page waits here, holding its lane, so the job
	// takes no new pages until the store takes this one, once.
	var fault *store.FaultError
	for wait := time.Second; errors.As(err, &fault); wait = min(2*wait, 30*time.Second) {
		if wait == time.Second {
			s.Log.Warn("a job waits for its store: a page could not be recorded", "job", j.id, "err", err)
		}
		select {
		case <-j.ctx.Done():
			return 0, true, err // cancelled, or the service stops: the page stays in flight in the store
		case <-time.After(wait):
		}
		seq, err = s.Store.FinishJobURL(context.Background(), j.id, p.url, done, p.discovered, p.credits, events)
	}
	return seq, false, err
}

// countLocked counts the recorded page p (key, at seq among the results)
// in the job and queues the links it admitted; a result goes to the
// job's watchers.
func (j *job) countLocked(key string, p pageOutcome, seq int64) {
	delete(j.inflight, key)
	j.credits += p.credits
	switch p.url.State {
	case store.URLDone:
		j.done++
		if j.spec.ZeroDataRetention {
			for int64(len(j.memDocs)) < seq {
				j.memDocs = append(j.memDocs, nil)
			}
			j.memDocs[seq-1] = p.raw
		}
	case store.URLFailed:
		j.failed++
		if j.firstErr == "" {
			j.firstErr = p.url.Error
		}
	case store.URLRobots:
		j.robots++
		j.admitted--
	}
	for i := range p.discovered {
		if p.discovered[i].State == store.URLQueued {
			j.queue = append(j.queue, &p.discovered[i])
		}
	}
	if p.url.State == store.URLDone {
		j.publishLocked(Event{Type: "document", Doc: p.raw, Seq: seq})
	}
}

// admitLinks admits the links of u's document that j takes, in the
// order the page gave them.
func (s *Service) admitLinks(j *job, u *store.JobURL, doc *scrape.Document) []store.JobURL {
	var discovered []store.JobURL
	j.mu.Lock()
	defer j.mu.Unlock()
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
	return discovered
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
	var fault *store.FaultError
	for wait := time.Second; errors.As(err, &fault); wait = min(2*wait, 30*time.Second) {
		// As for a page (record): the ending is written once the store
		// takes it; a restart in the meantime resumes the job.
		select {
		case <-s.base.Done():
			return
		case <-time.After(wait):
		}
		err = s.Store.FinishJob(context.Background(), j.id, status, msg, now, now.Add(s.Retention), events)
	}
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
