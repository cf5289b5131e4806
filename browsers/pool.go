// Package browsers owns Trawler's browsers: the one pool that interactive
// sessions, scrapes and crawls all lease from (warm browsers, leases with
// deadlines, per-team limits and a bounded queue), the Runtime and Browser
// interfaces that the pool is written against, and the local-process
// runtime, which confines each browser (confine.go; the docker package
// holds the other runtime). It knows nothing of sessions, HTTP or the
// store.
package browsers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Errors callers branch on.
var (
	// ErrPoolClosed is returned by Acquire after Close, and is the cause of
	// every lease that Close ended.
	ErrPoolClosed = errors.New("browser pool is shut down")
	// ErrLeaseExpired is the cause of a lease that reached its deadline.
	ErrLeaseExpired = errors.New("lease deadline reached")
	// ErrReleased is the cause of a lease its holder released.
	ErrReleased = errors.New("lease released")
)

// BusyError is returned when no browser could be had within the queue wait.
type BusyError struct {
	// Reason says which limit was reached.
	Reason string
	// RetryAfter is a fair guess at when to try again.
	RetryAfter time.Duration
}

func (e *BusyError) Error() string { return e.Reason }

// StartError is returned when the runtime failed to start a browser.
type StartError struct{ Err error }

func (e *StartError) Error() string { return "starting a browser: " + e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// PoolOptions configures a Pool.
type PoolOptions struct {
	// Size is the most browsers alive at once, warm, leased or starting.
	Size int
	// Warm is how many idle browsers to keep started.
	Warm int
	// QueueWait bounds how long Acquire waits for room.
	QueueWait time.Duration
	// MaxUses is how many reusable leases a browser serves before it is
	// recycled; 0 means 50.
	MaxUses int
	// MaxShare is how many shareable leases may hold one browser at once;
	// 0 means 4.
	MaxShare int
	// ShareWait is how long a shareable lease waits for a place in a
	// browser that MaxShare shareable leases hold before it takes a warm
	// browser or starts one (half QueueWait at most); 0 means 1 s. Either costs about a second of
	// CPU (taking the warm browser makes the pool start another for
	// sessions), more than a one-off render usually takes to end.
	ShareWait time.Duration
	// Places, when set, counts each team's browsers across the nodes that
	// share a store, for its limit: a lease holds one of its team's places
	// there, from before its browser is handed over until it ends.
	Places Places
	Log    *slog.Logger
}

// Places counts a team's browsers on every node sharing a store.
type Places interface {
	// Take takes one of team's places unless the nodes hold limit of them
	// already (false, taking nothing).
	Take(ctx context.Context, team string, limit int) (bool, error)
	// Give gives back a place Take took.
	Give(team string)
}

// placeRetry is how often a request that the nodes together hold back
// asks the store again: another node giving a place back wakes nobody here.
const placeRetry = 100 * time.Millisecond

// Pool owns every browser. A Lease borrows one; the pool closes it.
type Pool struct {
	rt   Runtime
	opts PoolOptions
	log  *slog.Logger

	mu       sync.Mutex
	total    int // browsers alive or starting
	reserved int // places held by reservations, with no browser
	// reserving counts Reserve calls waiting for a place: the warm fill
	// leaves the room it would take to them.
	reserving int
	starting  int
	idle      []*pooled
	leases    map[*Lease]struct{}
	perTeam   map[string]int
	// perTeamSlots counts the places each team holds without a browser
	// (AcquireSlot).
	perTeamSlots map[string]int
	joined       int64 // shareable leases that joined a browser in use
	waiters      int
	changed      chan struct{} // closed and replaced on every change
	closed       bool
	retryGap     bool // a warm start failed recently; back off

	wg sync.WaitGroup // every goroutine the pool starts
}

type pooled struct {
	b    Browser
	uses int
	// used: the browser served a reusable lease and came back. Only
	// reusable leases get it again; an interactive session always gets a
	// browser nobody used.
	used bool
	// active counts the leases on the browser; shared says they are
	// shareable ones, which others may join; retiring that it takes no
	// more and is destroyed when the last ends.
	active   int
	shared   bool
	retiring bool
}

// NewPool returns a pool over rt and starts its warm browsers.
func NewPool(rt Runtime, opts PoolOptions) *Pool {
	if opts.MaxUses <= 0 {
		opts.MaxUses = 50
	}
	if opts.MaxShare <= 0 {
		opts.MaxShare = 4
	}
	if opts.ShareWait <= 0 {
		opts.ShareWait = time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	p := &Pool{rt: rt, opts: opts, log: opts.Log, leases: map[*Lease]struct{}{},
		perTeam: map[string]int{}, perTeamSlots: map[string]int{}, changed: make(chan struct{})}
	p.mu.Lock()
	p.fillLocked()
	p.mu.Unlock()
	return p
}

// LeaseRequest asks for a browser.
type LeaseRequest struct {
	// Team is charged for the lease.
	Team string
	// TeamLimit is how many leases Team may hold at once.
	TeamLimit int
	// Lifetime bounds the lease: when it passes, the lease ends with
	// ErrLeaseExpired and its browser is destroyed. Zero means no bound.
	Lifetime time.Duration
	// Reusable marks a short job that will give the browser back with
	// Release(Reuse); it may get a browser other jobs used.
	Reusable bool
	// Shareable marks a reusable job that works in a browser context of
	// its own (a one-off scrape): when no browser is idle and the pool is
	// full, it may share a browser that other shareable leases hold, up to
	// MaxShare at once. A shared browser that one of them releases with
	// Destroy (or whose lease expires) takes no new leases and is
	// destroyed when the last one ends.
	Shareable bool
}

// Stats is a snapshot of the pool, for metrics.
type Stats struct {
	Total, Idle, Leased, Starting, Waiters, Reserved int
	// Joined counts the shareable leases since the start that joined a
	// browser other leases held.
	Joined int64
}

// Stats returns the pool's current figures.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Stats{Total: p.total, Idle: len(p.idle), Leased: len(p.leases), Starting: p.starting, Waiters: p.waiters, Reserved: p.reserved, Joined: p.joined}
}

// broadcastLocked wakes every waiter.
func (p *Pool) broadcastLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// Acquire leases a browser: a warm one when there is one, else a new one when
// the pool has room. When the pool or the team is full it waits up to
// QueueWait, then returns a *BusyError.
func (p *Pool) Acquire(ctx context.Context, req LeaseRequest) (*Lease, error) {
	deadline := time.NewTimer(p.opts.QueueWait)
	defer deadline.Stop()
	var limited time.Time // when the team's limit first held the request back
	var shareBy time.Time // until when a shareable request waits for a place in a full browser
	// place: the request takes one of its team's places in the store first,
	// and holds it while it waits for room in the pool; its lease keeps it,
	// or it is given back if the request gets none.
	place := p.opts.Places != nil && req.TeamLimit > 0
	placed := false
	defer func() {
		if placed {
			p.opts.Places.Give(req.Team)
		}
	}()
	// lease hands pb to the request, with the store's place if it holds one.
	lease := func(pb *pooled) *Lease {
		l := p.leaseLocked(pb, req)
		l.teamWait, l.placed, placed = since(limited), placed, false
		return l
	}
	for {
		var retry <-chan time.Time
		if place && !placed {
			ok, err := p.opts.Places.Take(ctx, req.Team, req.TeamLimit)
			switch {
			case err != nil && ctx.Err() != nil:
				return nil, ctx.Err()
			case err != nil:
				// The store cannot say: this node's own count holds the limit.
				p.log.Warn("taking a team's place; keeping to this node's own count", "team", req.Team, "err", err)
				place = false
			case ok:
				placed = true
			default:
				retry = time.After(placeRetry)
			}
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, ErrPoolClosed
		}
		var reason string
		teamFull := retry != nil || req.TeamLimit > 0 && p.perTeam[req.Team] >= req.TeamLimit
		var taken *pooled
		if !teamFull {
			taken = p.takeLocked(req, shareBy)
		}
		switch {
		case teamFull:
			reason = fmt.Sprintf("team concurrency limit of %d browsers reached", req.TeamLimit)
			if limited.IsZero() {
				limited = time.Now()
			}
		case taken != nil:
			l := lease(taken)
			p.fillLocked()
			p.mu.Unlock()
			return l, nil
		case req.Shareable && p.shareWaitLocked(shareBy):
			if shareBy.IsZero() {
				// Half the queue wait at most: the request is to have a
				// browser before its wait runs out.
				shareBy = time.Now().Add(min(p.opts.ShareWait, p.opts.QueueWait/2))
			}
			reason = fmt.Sprintf("all %d browsers of the pool are in use", p.opts.Size)
			if retry == nil {
				retry = time.After(time.Until(shareBy))
			}
		case p.total+p.reserved < p.opts.Size:
			pb, err := p.startLocked(ctx, req.Team)
			if err != nil {
				p.mu.Unlock()
				return nil, err
			}
			if p.closed {
				p.mu.Unlock()
				pb.b.Close()
				return nil, ErrPoolClosed
			}
			l := lease(pb)
			p.mu.Unlock()
			return l, nil
		default:
			if !req.Reusable {
				// The pool is full: room is made for a pristine browser
				// by destroying an idle used one, if there is one.
				p.evictUsedLocked()
			}
			reason = fmt.Sprintf("all %d browsers of the pool are in use", p.opts.Size)
		}
		if err := p.waitLocked(ctx, deadline.C, retry, reason, nil); err != nil {
			return nil, err
		}
	}
}

// waitLocked waits for the pool to change, retry to fire (when not nil),
// ctx to end or deadline to pass (a *BusyError with reason), with p.mu
// held on entry and not on return. The wait counts among the pool's
// waiters, and in *also when given.
func (p *Pool) waitLocked(ctx context.Context, deadline, retry <-chan time.Time, reason string, also *int) error {
	p.waiters++
	if also != nil {
		*also++
	}
	ch := p.changed
	p.mu.Unlock()
	var err error
	select {
	case <-ch:
	case <-retry:
	case <-deadline:
		err = &BusyError{Reason: reason, RetryAfter: p.retryAfter()}
	case <-ctx.Done():
		err = ctx.Err()
	}
	p.mu.Lock()
	p.waiters--
	if also != nil {
		*also--
	}
	p.mu.Unlock()
	return err
}

// Reservation is a place in the pool held without a browser: it counts
// against the pool's size like a lease, so that work which may need a
// browser (a job's lane, whose pages mostly do not) holds its place
// without starting one. Lease turns it into a lease of a browser.
type Reservation struct {
	p    *Pool
	once sync.Once
}

// Reserve holds a place in the pool, waiting up to QueueWait for one as
// Acquire does; when the pool is full, an idle browser (a used one first)
// is closed to make room.
func (p *Pool) Reserve(ctx context.Context) (*Reservation, error) {
	deadline := time.NewTimer(p.opts.QueueWait)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, ErrPoolClosed
		}
		if p.total+p.reserved < p.opts.Size {
			p.reserved++
			p.mu.Unlock()
			return &Reservation{p: p}, nil
		}
		if !p.evictUsedLocked() && len(p.idle) > 0 {
			// Room is made by closing an idle browser nobody holds.
			pb := p.idle[0]
			p.idle = p.idle[1:]
			p.destroy(pb)
		}
		if err := p.waitLocked(ctx, deadline.C, nil, fmt.Sprintf("all %d browsers of the pool are in use", p.opts.Size), &p.reserving); err != nil {
			return nil, err
		}
	}
}

// Release gives the place back.
func (r *Reservation) Release() {
	r.once.Do(func() {
		r.p.mu.Lock()
		defer r.p.mu.Unlock()
		r.p.reserved--
		r.p.broadcastLocked()
	})
}

// Lease gives the place back and leases a browser in its stead (which a
// waiter may take first: then Lease waits as Acquire does).
func (r *Reservation) Lease(ctx context.Context, req LeaseRequest) (*Lease, error) {
	r.Release()
	return r.p.Acquire(ctx, req)
}

// AcquireSlot holds one of team's places (limit at once; 0 for none)
// without a browser, for work that needs no browser (a scrape taken with
// Go's HTTP client). These places are counted apart from the team's
// browsers, with a limit of their own: a team's renders, which hold their
// browsers for hundreds of milliseconds, do not hold back its pages that
// need no browser, nor they the renders. It waits up to QueueWait like
// Acquire, and returns how long the team's limit held it back and the
// function that gives the place back.
func (p *Pool) AcquireSlot(ctx context.Context, team string, limit int) (release func(), waited time.Duration, err error) {
	deadline := time.NewTimer(p.opts.QueueWait)
	defer deadline.Stop()
	var limited time.Time
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, 0, ErrPoolClosed
		}
		if limit <= 0 || p.perTeamSlots[team] < limit {
			p.perTeamSlots[team]++
			p.mu.Unlock()
			var once sync.Once
			return func() {
				once.Do(func() {
					p.mu.Lock()
					defer p.mu.Unlock()
					if p.perTeamSlots[team]--; p.perTeamSlots[team] <= 0 {
						delete(p.perTeamSlots, team)
					}
					p.broadcastLocked()
				})
			}, since(limited), nil
		}
		if limited.IsZero() {
			limited = time.Now()
		}
		if err := p.waitLocked(ctx, deadline.C, nil, fmt.Sprintf("team concurrency limit of %d scrapes without a browser reached", limit), nil); err != nil {
			return nil, 0, err
		}
	}
}

// takeLocked takes the browser req may have without starting one, nil if
// there is none. A shareable lease takes an idle used browser, else joins
// a shared one, and takes a pristine browser (which the pool then
// replaces, for sessions) only when neither is there and it has waited
// ShareWait (until shareBy) for a place in a full one: a browser already
// running opens another context sooner than a new one starts.
func (p *Pool) takeLocked(req LeaseRequest, shareBy time.Time) *pooled {
	if pb := p.takeIdleLocked(req.Reusable, req.Shareable); pb != nil {
		return pb
	}
	if !req.Shareable {
		return nil
	}
	if pb := p.sharedLocked(); pb != nil {
		return pb
	}
	if p.shareWaitLocked(shareBy) {
		return nil
	}
	return p.takeIdleLocked(true, false)
}

// startLocked starts a browser in the pool's room, holding one of team's
// places while it starts. p.mu is held on entry and on return, but not
// while the browser starts.
func (p *Pool) startLocked(ctx context.Context, team string) (*pooled, error) {
	p.total++
	p.starting++
	p.perTeam[team]++ // hold the team's slot while starting
	p.mu.Unlock()
	b, err := p.start(ctx)
	p.mu.Lock()
	p.starting--
	p.perTeam[team]--
	if err != nil {
		p.total--
		p.broadcastLocked()
		return nil, err
	}
	pb := &pooled{b: b}
	p.watch(pb)
	return pb, nil
}

// sharedLocked returns the least busy browser that shareable leases hold
// and another may join (and counts the join).
func (p *Pool) sharedLocked() *pooled {
	var best *pooled
	for l := range p.leases {
		pb := l.pb
		if !pb.shared || pb.retiring || pb.active >= p.opts.MaxShare || pb.uses >= p.opts.MaxUses {
			continue
		}
		select {
		case <-pb.b.Done():
			continue
		default:
		}
		if best == nil || pb.active < best.active {
			best = pb
		}
	}
	if best != nil {
		p.joined++
	}
	return best
}

// shareWaitLocked reports whether a shareable request waits for a place in
// a browser that shareable leases fill, rather than take a warm browser or
// start one: while one is full and ShareWait has not passed since the
// request first found it so (by, zero before).
func (p *Pool) shareWaitLocked(by time.Time) bool {
	if !by.IsZero() && !time.Now().Before(by) {
		return false
	}
	for l := range p.leases {
		pb := l.pb
		if pb.shared && !pb.retiring && pb.active >= p.opts.MaxShare && pb.uses < p.opts.MaxUses {
			select {
			case <-pb.b.Done():
			default:
				return true
			}
		}
	}
	return false
}

// since is the time passed since t; 0 for the zero t.
func since(t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return time.Since(t)
}

// TeamLeases is how many browsers team holds now (or is starting).
func (p *Pool) TeamLeases(team string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.perTeam[team]
}

func (p *Pool) retryAfter() time.Duration {
	if p.opts.QueueWait < time.Second {
		return time.Second
	}
	return p.opts.QueueWait
}

func (p *Pool) start(ctx context.Context) (Browser, error) {
	b, err := p.rt.Start(ctx, uuid.NewString())
	if err != nil {
		return nil, &StartError{Err: err}
	}
	return b, nil
}

// watch starts the goroutine that owns pb for its whole life: when the
// browser exits it is removed from the pool, its lease (if any) ends and the
// pool refills. Called with p.mu held.
func (p *Pool) watch(pb *pooled) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		<-pb.b.Done()
		pb.b.Close() // reap what is left of its process group and files
		p.mu.Lock()
		defer p.mu.Unlock()
		p.total--
		for i, x := range p.idle {
			if x == pb {
				p.idle = append(p.idle[:i], p.idle[i+1:]...)
				p.log.Warn("warm browser exited", "browser", pb.b.ID(), "err", pb.b.Err())
				break
			}
		}
		for l := range p.leases {
			if l.pb == pb {
				p.endLocked(l, fmt.Errorf("%w (%v)", ErrBrowserExited, pb.b.Err()))
			}
		}
		p.fillLocked()
		p.broadcastLocked()
	}()
}

// takeIdleLocked removes and returns an idle browser the request may
// have: a used one first for a reusable job (its spare state is ready),
// else a pristine one (never when usedOnly).
func (p *Pool) takeIdleLocked(reusable, usedOnly bool) *pooled {
	pick := -1
	for i, pb := range p.idle {
		if pb.used && !reusable || !pb.used && usedOnly {
			continue
		}
		pick = i
		if pb.used == reusable {
			break // the kind this request prefers
		}
	}
	if pick < 0 {
		return nil
	}
	pb := p.idle[pick]
	p.idle = append(p.idle[:pick], p.idle[pick+1:]...)
	return pb
}

// evictUsedLocked destroys one idle used browser to make room for a
// pristine one; it reports whether there was one.
func (p *Pool) evictUsedLocked() bool {
	for i, pb := range p.idle {
		if pb.used {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			p.destroy(pb)
			return true
		}
	}
	return false
}

func (p *Pool) pristineIdleLocked() int {
	n := 0
	for _, pb := range p.idle {
		if !pb.used {
			n++
		}
	}
	return n
}

// fillLocked starts browsers until Warm pristine ones are idle or starting.
func (p *Pool) fillLocked() {
	if p.closed || p.retryGap {
		return
	}
	for p.pristineIdleLocked()+p.starting < p.opts.Warm && p.total+p.reserved+p.reserving < p.opts.Size {
		p.total++
		p.starting++
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			b, err := p.start(ctx)
			p.mu.Lock()
			defer p.mu.Unlock()
			p.starting--
			if err != nil {
				p.total--
				p.log.Error("starting a warm browser", "err", err)
				p.backoffLocked()
				p.broadcastLocked()
				return
			}
			pb := &pooled{b: b}
			p.watch(pb)
			if p.closed {
				go b.Close()
				return
			}
			p.idle = append(p.idle, pb)
			p.broadcastLocked()
		}()
	}
}

// backoffLocked pauses warm starts for a moment after a failure, so a
// missing or broken Chromium does not spin.
func (p *Pool) backoffLocked() {
	if p.retryGap {
		return
	}
	p.retryGap = true
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		time.Sleep(2 * time.Second)
		p.mu.Lock()
		p.retryGap = false
		p.fillLocked()
		p.mu.Unlock()
	}()
}

func (p *Pool) leaseLocked(pb *pooled, req LeaseRequest) *Lease {
	pb.uses++
	pb.active++
	pb.shared = req.Shareable
	l := &Lease{pool: p, pb: pb, Team: req.Team, done: make(chan struct{})}
	if req.Lifetime > 0 {
		l.deadline = time.Now().Add(req.Lifetime)
		l.timer = time.AfterFunc(req.Lifetime, func() {
			p.mu.Lock()
			ended := p.endLocked(l, ErrLeaseExpired)
			last := ended && p.lastLocked(pb)
			p.mu.Unlock()
			if last {
				p.destroy(pb)
			}
		})
	}
	p.leases[l] = struct{}{}
	p.perTeam[req.Team]++
	return l
}

// endLocked ends l with cause, once; it reports whether this call ended it.
func (p *Pool) endLocked(l *Lease, cause error) bool {
	if _, ok := p.leases[l]; !ok {
		return false
	}
	delete(p.leases, l)
	l.pb.active--
	p.perTeam[l.Team]--
	if p.perTeam[l.Team] <= 0 {
		delete(p.perTeam, l.Team)
	}
	if l.placed {
		go p.opts.Places.Give(l.Team) // off the lock: it is a write to the store
	}
	if l.timer != nil {
		l.timer.Stop()
	}
	l.cause = cause
	close(l.done)
	p.broadcastLocked()
	return true
}

// lastLocked says whether pb, whose lease ended and which is to be
// destroyed, has no other lease: else it retires, to be destroyed when its
// last lease ends.
func (p *Pool) lastLocked(pb *pooled) bool {
	if pb.active > 0 {
		pb.retiring = true
		return false
	}
	return true
}

// destroy closes a browser in the background; its watcher refills the pool.
func (p *Pool) destroy(pb *pooled) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		pb.b.Close()
	}()
}

// Close ends every lease, stops every browser and waits for them to exit.
func (p *Pool) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return
	}
	p.closed = true
	var all []*pooled
	for l := range p.leases {
		all = append(all, l.pb)
		p.endLocked(l, ErrPoolClosed)
	}
	all = append(all, p.idle...)
	p.idle = nil
	p.broadcastLocked()
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, pb := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pb.b.Close()
		}()
	}
	wg.Wait()
	p.wg.Wait()
}

// Lease is one holder's use of one browser, until Release, the lease's
// deadline, the browser's exit or the pool's shutdown, whichever comes first.
type Lease struct {
	pool     *Pool
	pb       *pooled
	Team     string
	deadline time.Time
	timer    *time.Timer
	done     chan struct{}
	cause    error // set before done is closed
	teamWait time.Duration
	placed   bool // holds one of its team's places in the store (PoolOptions.Places)
}

// TeamWait is how long Acquire held the lease back because its team was
// at its concurrency limit; 0 when it never was.
func (l *Lease) TeamWait() time.Duration { return l.teamWait }

// Browser is the leased browser.
func (l *Lease) Browser() Browser { return l.pb.b }

// Deadline is when the lease expires; zero if it does not.
func (l *Lease) Deadline() time.Time { return l.deadline }

// Done is closed when the lease has ended.
func (l *Lease) Done() <-chan struct{} { return l.done }

// Cause says why the lease ended: ErrReleased, ErrLeaseExpired,
// ErrBrowserExited (wrapped) or ErrPoolClosed. Nil while it lasts.
func (l *Lease) Cause() error {
	select {
	case <-l.done:
		return l.cause
	default:
		return nil
	}
}

// Disposal says what Release does with the leased browser.
type Disposal int

const (
	// Destroy stops the browser, as after an interactive session whose user
	// could have changed anything in it, or after a browser that failed.
	Destroy Disposal = iota
	// Reuse puts a healthy browser that has not served MaxUses leases back
	// in the warm set, for short page jobs whose state lived in a browser
	// context they disposed of; any other browser is destroyed.
	Reuse
)

// Release gives the browser back, to be reused or destroyed as d says.
// Releasing an ended lease does nothing.
func (l *Lease) Release(d Disposal) {
	p := l.pool
	p.mu.Lock()
	if !p.endLocked(l, ErrReleased) {
		p.mu.Unlock()
		return
	}
	if d == Destroy && !p.lastLocked(l.pb) {
		p.mu.Unlock()
		return
	}
	if l.pb.active > 0 {
		// Shared, and others still work in it.
		p.mu.Unlock()
		return
	}
	if l.pb.retiring {
		p.mu.Unlock()
		p.destroy(l.pb)
		return
	}
	l.pb.shared = false
	alive := true
	select {
	case <-l.pb.b.Done():
		alive = false
	default:
	}
	if d == Reuse && alive && !p.closed && l.pb.uses < p.opts.MaxUses && len(p.idle) < p.opts.Size {
		l.pb.used = true
		p.idle = append(p.idle, l.pb)
		p.broadcastLocked()
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.destroy(l.pb)
}
