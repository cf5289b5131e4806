package crawl

import (
	"context"
	"encoding/json"
	"net/url"
	"sync"
	"time"

	"github.com/trawler-dev/trawler/discover"
	"github.com/trawler-dev/trawler/store"
)

// job is a running job in memory: its frontier mirrors the queued URLs in
// the store, its counters the stored states.
type job struct {
	id, team, kind string
	spec           *Spec
	created        time.Time
	rules          *discover.Rules // crawls only
	// linksOnly is the key of a start page fetched for its links only
	// (linksOnlyKey), else empty.
	linksOnly string
	ctx       context.Context // ends when the job ends
	cancel    context.CancelFunc
	leased    time.Time // when this node created or claimed it

	mu          sync.Mutex
	queue       []*store.JobURL // queued URLs, discovery order
	keys        map[string]bool // every URL key the job has seen
	admitted    int             // URLs counted against the limit
	nextSeq     int64
	inflight    map[string]context.CancelFunc // URL key → its scrape's cancel
	retries     map[string]int                // URL key → tries lost to the infrastructure
	done        int
	failed      int
	robots      int
	credits     int
	status      string
	discovering bool // sitemaps are still being read
	lastStart   time.Time
	lastServed  time.Time
	delay       time.Duration
	concurrency int
	robotsTxt   map[string]*discover.Robots // host → its robots.txt
	warnings    []string
	subs        map[*watcher]struct{}
	drained     chan struct{} // closed when nothing is in flight after a cancel
	memDocs     []json.RawMessage
	firstErr    string
}

// host of a queued URL, for per-host politeness.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Host
}

// runnableLocked reports whether the job may start its next page now, and
// when not because of its delay, when it may.
func (j *job) runnableLocked(now time.Time) (ok bool, wait time.Duration) {
	if j.status != StatusScraping || len(j.queue) == 0 || len(j.inflight) >= j.concurrency {
		return false, 0
	}
	if j.delay > 0 && !j.lastStart.IsZero() {
		if next := j.lastStart.Add(j.delay); next.After(now) {
			return false, next.Sub(now)
		}
	}
	return true, 0
}

// drainedLocked tells a cancel waiting for the job's pages in flight
// (drained) that none is left, if so.
func (j *job) drainedLocked() {
	if len(j.inflight) == 0 && j.drained != nil {
		close(j.drained)
		j.drained = nil
	}
}

// endedLocked reports whether a scraping job has nothing left to do. A
// job this node stopped working on (the service is closing, or another
// node holds its lease) never has: the pages it dropped are still queued
// in the store, for whoever resumes it. (Its last page recorded as the
// others were dropped used to end it as completed, without them.)
func (j *job) endedLocked() bool {
	return j.status == StatusScraping && j.ctx.Err() == nil && len(j.queue) == 0 && len(j.inflight) == 0 &&
		!j.discovering
}

// watcher is one live subscriber (the WebSocket of /v2/crawl/{id}).
type watcher struct {
	ch     chan Event
	closed bool
}

// Event is one live update of a job.
type Event struct {
	// Type is document (Doc is set, Seq is its place in the results) or the
	// job's final status: completed, failed or cancelled.
	Type string
	Doc  json.RawMessage
	Seq  int64
}

// subscribeLocked adds a watcher of the job's live events.
func (j *job) subscribeLocked() *watcher {
	w := &watcher{ch: make(chan Event, 1024)}
	j.subs[w] = struct{}{}
	return w
}

// unsubscribe removes w, unless publishing dropped it already.
func (j *job) unsubscribe(w *watcher) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !w.closed {
		delete(j.subs, w)
		close(w.ch)
		w.closed = true
	}
}

// publishLocked hands an event to every watcher; a watcher too slow to keep
// up is dropped (its channel closed), and falls back to polling.
func (j *job) publishLocked(ev Event) {
	for w := range j.subs {
		select {
		case w.ch <- ev:
		default:
			close(w.ch)
			w.closed = true
			delete(j.subs, w)
		}
	}
	if ev.Type != "document" {
		for w := range j.subs {
			close(w.ch)
			w.closed = true
			delete(j.subs, w)
		}
	}
}
