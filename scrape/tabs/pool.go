// Package tabs owns the browser tabs that scrapes drive: where a one-off
// scrape's tab comes from (a tab the team's last scrape left, cleared; a
// spare made ahead of time; a fresh one), how a tab is readied (egress
// route, user agent, profile, interception, emulation), what it does for
// its page (navigation, the smart wait, actions, screenshots, fetch()
// from the page, the network guard, ad and asset refusal at the Fetch
// domain), and what becomes of it, its profile and its browser once the
// page is taken.
//
// A one-off scrape asks a Pool for its tab with Get, and calls the
// function Get returns once, with the scrape's Outcome: that one function
// disposes of everything. Jobs' tabs are opened by package scrape's
// Worker, one per job in a context the job's tabs share (OpenShared).
//
// Tabs never decide what a page is worth or how it is transformed: that
// is package scrape's, which reads the page through a Tab's methods.
package tabs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/egress"
	"github.com/trawler-dev/trawler/profiles"
)

// ErrPageCrashed: the page crashed its tab.
var ErrPageCrashed = errors.New("the page crashed the browser tab")

// Pool keeps the tabs of one-off scrapes between them: the spare tabs
// (spare.go) and the teams' cleared tabs (recycle.go). Its zero value
// keeps none until its fields are set, which they must be before its
// first use.
type Pool struct {
	// Reuse lets a team's one-off scrapes reuse a tab, cleared, that an
	// earlier one of the team's used.
	Reuse bool
	// Spares is how many blank tabs, each in a fresh browser context, are
	// kept ready in all, on browsers only jobs use; 0 keeps none.
	Spares int
	// NewRoute returns a route of the egress proxy for a new browser
	// context of browser id; nil (or a nil route) leaves a context on its
	// browser's own.
	NewRoute func(id string) (*egress.Route, error)
	Log      *slog.Logger

	spares   spares
	recycled recycled
}

// Request is what a one-off scrape asks of its tab.
type Request struct {
	Setup Setup
	// Group is what a recycled tab is kept for: a tab serves only scrapes
	// of its group (see Group).
	Group string
	// Binding is what the tab's egress route is bound to.
	Binding egress.Binding
	// Profile, when not nil, is applied to the tab's context, and saved or
	// discarded with it; a tab with a profile is never recycled.
	Profile *profiles.Use
	// Render, when not nil, is the page fetched already that the tab
	// renders.
	Render *Response
}

// Outcome is how the scrape on a tab ended, which decides what becomes of
// the tab and its browser.
type Outcome struct {
	Err error
	// Drove: the page was driven, so its context holds what a profile
	// that writes keeps.
	Drove bool
}

// browserFine says whether the browser may serve again after a scrape
// that ended so: a crash or a failed action is the page's doing.
func (o Outcome) browserFine() bool {
	return o.Err == nil || errors.Is(o.Err, ErrPageCrashed) || errors.As(o.Err, new(*ActionError))
}

// Get returns a tab ready for r on lease's browser, ctx bounded by the
// lease (it ends when the browser dies), and the function that disposes
// of the tab, the profile and the lease, which the caller calls once with
// the scrape's outcome. When Get fails it has disposed of them itself.
func (p *Pool) Get(ctx context.Context, lease *browsers.Lease, r Request) (*Tab, context.Context, func(Outcome), error) {
	ctx, cancel := LeaseContext(ctx, lease, func(cause error) error { return fmt.Errorf("%w", cause) })
	b := lease.Browser()
	p.spares.begin(b.ID())
	reuse := r.Profile == nil && p.Reuse
	t, err := p.pick(ctx, lease, reuse, r.Group)
	if err == nil {
		err = p.ready(ctx, lease, t, r)
	}
	done := func(out Outcome) {
		p.saveProfile(lease, r.Profile, out.Drove)
		// A tab that served its scrape well is cleared for the group's
		// next one; not one that held a profile's state.
		recycling := t != nil && reuse && out.Err == nil && t.route != nil && lease.Cause() == nil
		disposal := browsers.Destroy // unless the page shows the browser is fine
		if out.browserFine() {
			disposal = browsers.Reuse
			p.spares.refill(b.ID(), b.CDP(), p.NewRoute, p.Spares)
		}
		switch {
		case recycling:
			go p.recycle(t, b.ID(), r.Group)
		case t != nil:
			t.Dispose()
		}
		if reuse && !recycling {
			p.recycled.done(b.ID(), r.Group)
		}
		p.spares.end(b.ID())
		cancel(nil)
		lease.Release(disposal)
	}
	if err != nil {
		done(Outcome{Err: err})
		return nil, nil, nil, err
	}
	return t, ctx, done, nil
}

// pick returns the group's recycled tab on lease's browser when reuse
// allows, else a spare, else a fresh tab in a context of its own.
func (p *Pool) pick(ctx context.Context, lease *browsers.Lease, reuse bool, group string) (*Tab, error) {
	b := lease.Browser()
	if reuse {
		if t := p.recycled.get(ctx, b.ID(), group); t != nil {
			return t, nil
		}
	}
	if t := p.spares.take(b.ID()); t != nil {
		return t, nil
	}
	conn, err := b.CDP().Dial(ctx)
	if err != nil {
		return nil, err
	}
	route, err := p.NewRoute(b.ID())
	if err != nil {
		conn.Close()
		return nil, err
	}
	t, err := blankTab(ctx, conn, route)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return t, nil
}

// ready binds t's route for r, applies the profile and sets up the tab's
// interception and emulation for the scrape.
func (p *Pool) ready(ctx context.Context, lease *browsers.Lease, t *Tab, r Request) error {
	t.markTraffic()
	if t.route != nil {
		t.routeWarning = Bind(t.route, r.Binding)
	}
	ua, err := p.UserAgent(ctx, t.conn)
	if err != nil {
		return err
	}
	if r.Profile != nil {
		if err := r.Profile.Apply(ctx, lease.Browser().CDP(), t.contextID); err != nil {
			return err
		}
	}
	if err := t.Ready(ctx, r.Setup, ua); err != nil {
		return err
	}
	if r.Render != nil {
		t.Render(r.Render)
	}
	return nil
}

// saveProfile saves what the page left in its context to the profile, if
// the page was driven, the scrape writes the profile and its browser did
// not die, before the context goes; else it lets the profile go unchanged.
func (p *Pool) saveProfile(lease *browsers.Lease, use *profiles.Use, drove bool) {
	if use == nil {
		return
	}
	if !drove || !use.Writes() || lease.Cause() != nil {
		use.Close(context.Background(), profiles.Discard)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := use.Close(ctx, profiles.Save); err != nil {
		p.Log.Error("saving the scrape's profile", "profile", use.Name(), "err", err)
	}
}

// UserAgent returns the browsers' user agent, asking conn the first time.
func (p *Pool) UserAgent(ctx context.Context, conn *cdp.Conn) (string, error) {
	return p.spares.userAgent(ctx, conn)
}

// KnownUserAgent is the browsers' user agent once a tab asked; "" before.
func (p *Pool) KnownUserAgent() string {
	p.spares.mu.Lock()
	defer p.spares.mu.Unlock()
	return p.spares.ua
}

// Fill opens spare tabs on b until the pool has Spares ready, without
// waiting for b to be quiet: for a browser taken to be readied before the
// first scrapes come.
func (p *Pool) Fill(ctx context.Context, b browsers.Browser) {
	if p.Spares > 0 && p.spares.start(b.ID()) {
		p.spares.fill(ctx, b.ID(), b.CDP(), p.NewRoute, p.Spares, false)
	}
}

// SparesReady reports how many spare tabs are ready now, and the browsers
// they are on; taken is how many scrapes a spare tab served.
func (p *Pool) SparesReady() (ready int, browsers []string, taken int64) {
	p.spares.mu.Lock()
	defer p.spares.mu.Unlock()
	for id := range p.spares.m {
		browsers = append(browsers, id)
	}
	return p.spares.readyLocked(), browsers, p.spares.taken.Load()
}

// Recycled is how many one-off scrapes a cleared tab served.
func (p *Pool) Recycled() int64 { return p.recycled.served.Load() }

// LeaseContext is ctx, ended with cause(the lease's cause) as soon as the
// lease ends (its browser died): a page on it is not waited for then.
func LeaseContext(ctx context.Context, lease *browsers.Lease, cause func(error) error) (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-lease.Done():
			cancel(cause(lease.Cause()))
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
