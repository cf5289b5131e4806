package scrape

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/netguard"
	"github.com/trawler-dev/trawler/profiles"
)

// This file is the one owner of a one-off scrape's tab: where it comes
// from (a tab the team's last scrape left, cleared; a spare; a fresh one),
// how it is readied (route, user agent, profile, interception), and what
// becomes of it, its profile and its browser once the page is taken.
// Jobs' tabs are the Worker's (worker.go), one per job on the lane's
// browser.

// tabRequest is what a one-off scrape asks of its tab.
type tabRequest struct {
	req   *Request
	guard *netguard.Cache
	// profile, when not nil, is applied to the tab's context, and saved or
	// discarded with it.
	profile *profiles.Use
	// pre, when not nil, is the page fetched directly that the tab renders.
	pre *prefetched
}

// outcome is how the scrape on a tab ended, which decides what becomes of
// the tab and its browser.
type outcome struct {
	err error
	// drove: the page was driven, so its context holds what a profile
	// that writes keeps.
	drove bool
}

// browserFine says whether the browser may serve again after a scrape
// that ended so: a crash or a failed action is the page's doing.
func (o outcome) browserFine() bool {
	return o.err == nil || errors.Is(o.err, ErrPageCrashed) || errors.As(o.err, new(*ActionError))
}

// openTab returns a tab ready for tr on lease's browser, ctx bounded by
// the lease (it ends when the browser dies), and the function that
// disposes of the tab, the profile and the lease, which the caller calls
// once with the scrape's outcome. When openTab fails it has disposed of
// them itself.
func (s *Service) openTab(ctx context.Context, lease *browsers.Lease, tr tabRequest) (*tab, context.Context, func(outcome), error) {
	ctx, cancel := leaseContext(ctx, lease, func(cause error) error { return fmt.Errorf("%w", cause) })
	b := lease.Browser()
	s.spares.begin(b.ID())
	group := recycleGroup(tr.req)
	reuse := tr.profile == nil && s.ReuseTabs
	t, err := s.pickTab(ctx, lease, reuse, group)
	if err == nil {
		err = s.readyTab(ctx, lease, t, tr)
	}
	done := func(out outcome) {
		s.saveProfile(lease, tr.profile, out.drove)
		// A tab that served its scrape well is cleared for the team's
		// next one; not one that held a profile's state.
		recycling := t != nil && reuse && out.err == nil && t.route != nil && lease.Cause() == nil
		disposal := browsers.Destroy // unless the page shows the browser is fine
		if out.browserFine() {
			disposal = browsers.Reuse
			s.spares.refill(b.ID(), b.CDP(), s.newRoute, s.SpareTabs)
		}
		switch {
		case recycling:
			go s.recycle(t, b.ID(), group)
		case t != nil:
			t.dispose()
		}
		if reuse && !recycling {
			s.recycled.done(b.ID(), group)
		}
		s.spares.end(b.ID())
		cancel(nil)
		lease.Release(disposal)
	}
	if err != nil {
		done(outcome{err: err})
		return nil, nil, nil, err
	}
	return t, ctx, done, nil
}

// pickTab returns the team's recycled tab on lease's browser when reuse
// allows, else a spare, else a fresh tab in a context of its own.
func (s *Service) pickTab(ctx context.Context, lease *browsers.Lease, reuse bool, group string) (*tab, error) {
	b := lease.Browser()
	if reuse {
		if t := s.recycled.get(ctx, b.ID(), group); t != nil {
			return t, nil
		}
	}
	if t := s.spares.take(b.ID()); t != nil {
		return t, nil
	}
	conn, err := b.CDP().Dial(ctx)
	if err != nil {
		return nil, err
	}
	route, err := s.newRoute(b.ID())
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

// readyTab binds t's route to the request, applies the profile and sets
// up the tab's interception and emulation for the scrape.
func (s *Service) readyTab(ctx context.Context, lease *browsers.Lease, t *tab, tr tabRequest) error {
	if t.route != nil {
		t.in0, t.out0 = t.route.Bytes()
	}
	requestID := tr.req.RequestID
	if requestID == "" {
		requestID = tr.req.id
	}
	t.routeWarning = t.bindRoute(tr.req, requestID)
	ua, err := s.spares.userAgent(ctx, t.conn)
	if err != nil {
		return err
	}
	if tr.profile != nil {
		if err := tr.profile.Apply(ctx, lease.Browser().CDP(), t.contextID); err != nil {
			return err
		}
	}
	o := &tr.req.Options
	if err := t.setup(ctx, o, tr.guard, !o.needsRender(), ua, s.Log); err != nil {
		return err
	}
	if tr.pre != nil {
		// Fetched directly, to be rendered: the tab renders that response.
		t.render(tr.pre)
		tr.req.URL = tr.pre.url
	}
	return nil
}

// saveProfile saves what the page left in its context to the profile, if
// the page was driven, the scrape writes the profile and its browser did
// not die, before the context goes; else it lets the profile go unchanged.
func (s *Service) saveProfile(lease *browsers.Lease, use *profiles.Use, drove bool) {
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
		s.Log.Error("saving the scrape's profile", "profile", use.Name(), "err", err)
	}
}

// leaseContext is ctx, ended with cause(the lease's cause) as soon as the
// lease ends (its browser died): a page on it is not waited for then.
func leaseContext(ctx context.Context, lease *browsers.Lease, cause func(error) error) (context.Context, context.CancelCauseFunc) {
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

// render has the tab's next navigation to pre's URL answered with pre.
func (t *tab) render(pre *prefetched) {
	t.mu.Lock()
	t.prefetched = pre
	t.mu.Unlock()
}

// notePage records on pg what the tab knows of the page it took: whether
// it reached private addresses, its traffic through the route, and the
// route's warning.
func (t *tab) notePage(pg *page) {
	if pg == nil {
		return
	}
	pg.private = t.reachedPrivate()
	t.noteRoute(pg, t.in0, t.out0)
	pg.warning = joinWarning(pg.warning, t.routeWarning)
}
