package store

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Job changes cross nodes as PostgreSQL notices (LISTEN/NOTIFY): a
// trigger notifies jobsChannel with a job's id when one of its pages is
// recorded with a document, and when it ends; the notice is delivered at
// the commit. Each store that has a subscriber holds one connection of its
// own that listens, and wakes the subscribers of the job named. A notice
// says only that something changed: the subscriber reads the store.

// jobsChannel is the channel of job change notices.
const jobsChannel = "trawler_jobs"

// noticeRetry is how long the listener waits before connecting again after
// its connection failed.
const noticeRetry = time.Second

// notices is a store's listener and its subscribers.
type notices struct {
	cfg *pgx.ConnConfig

	mu      sync.Mutex
	subs    map[string]map[chan struct{}]bool
	started bool
	cancel  context.CancelFunc
	done    chan struct{}
}

func newNotices(cfg *pgx.ConnConfig) *notices {
	return &notices{cfg: cfg, subs: map[string]map[chan struct{}]bool{}, done: make(chan struct{})}
}

// JobChanges subscribes to job's change notices: the channel receives
// (coalesced) when a page of the job is recorded with a document or the
// job ends, on any node sharing the database, and also when the listener
// connected again after losing its connection (notices may have been
// missed). It is nil where there are no notices (SQLite: one node alone),
// so that a select on it waits forever. stop ends the subscription.
func (s *Store) JobChanges(job string) (changed <-chan struct{}, stop func()) {
	n := s.notices
	if n == nil {
		return nil, func() {}
	}
	ch := make(chan struct{}, 1)
	n.mu.Lock()
	if n.subs[job] == nil {
		n.subs[job] = map[chan struct{}]bool{}
	}
	n.subs[job][ch] = true
	if !n.started {
		n.started = true
		ctx, cancel := context.WithCancel(context.Background())
		n.cancel = cancel
		go n.listen(ctx)
	}
	n.mu.Unlock()
	return ch, func() {
		n.mu.Lock()
		delete(n.subs[job], ch)
		if len(n.subs[job]) == 0 {
			delete(n.subs, job)
		}
		n.mu.Unlock()
	}
}

// listen holds the listening connection until ctx ends, connecting again
// after noticeRetry when it fails.
func (n *notices) listen(ctx context.Context) {
	defer close(n.done)
	for ctx.Err() == nil {
		n.session(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(noticeRetry):
		}
	}
}

// session connects, listens and hands notices to the subscribers until
// the connection fails or ctx ends.
func (n *notices) session(ctx context.Context) {
	conn, err := pgx.ConnectConfig(ctx, n.cfg)
	if err != nil {
		return
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+jobsChannel); err != nil {
		return
	}
	// What changed while no connection listened is unknown: every
	// subscriber looks.
	n.mu.Lock()
	for _, subs := range n.subs {
		wake(subs)
	}
	n.mu.Unlock()
	for {
		msg, err := conn.WaitForNotification(ctx)
		if err != nil {
			return
		}
		n.mu.Lock()
		wake(n.subs[msg.Payload])
		n.mu.Unlock()
	}
}

// wake tells subs, one job's subscribers.
func wake(subs map[chan struct{}]bool) {
	for ch := range subs {
		select {
		case ch <- struct{}{}:
		default: // one is pending: the subscriber reads everything then
		}
	}
}

// close stops the listener, if it started. It is safe on a nil notices.
func (n *notices) close() {
	if n == nil {
		return
	}
	n.mu.Lock()
	started := n.started
	n.started = true // no listener starts after this
	n.mu.Unlock()
	if started && n.cancel != nil {
		n.cancel()
		<-n.done
	}
}
