package scrape

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	cdproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/storage"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/egress"
	"github.com/trawler-dev/trawler/netguard"
	"github.com/trawler-dev/trawler/scrape/tabs"
)

// RetryableError is a page that was never given a fair try: no browser
// could be leased, or the browser died under it. A job tries it again
// rather than reporting it.
type RetryableError struct{ Err error }

func (e *RetryableError) Error() string { return "no browser for the page: " + e.Err.Error() }
func (e *RetryableError) Unwrap() error { return e.Err }

// Worker scrapes the pages of jobs (crawls, batch scrapes) one after
// another on the browser its crew shares (crew.go). Each job gets a tab in
// the job's browser context there, kept open between that job's pages: a
// page then costs a navigation in a renderer that is already running, not
// a new renderer, which is most of what a one-off scrape spends. Contexts
// never mix jobs, so cookies never pass from one job (or team) to another.
// A Worker is used by one goroutine at a time.
type Worker struct {
	s *Service
	// place is the worker's place in the pool while it holds no browser:
	// pages taken with Go's client count against the pool like any, but
	// start no browser until a page needs one (browser).
	place *browsers.Reservation
	tabs  map[string]*jobTab // job id → its tab
	lru   []string           // job ids, least recently used first
	// guards are the jobs' network guards: a job's page is checked before
	// the cache is read, by the guard its tab then applies.
	guards map[string]*netguard.Cache
	// directs are the jobs' Go clients: a job's pages that need nothing of
	// the browser are taken with one, on the worker's lease, until a page
	// of the job needs the job's tab; from then on the tab (which got the
	// client's cookies) takes them all, so that the job's state is in one
	// place. inTab says which jobs moved.
	directs map[string]*direct
	inTab   map[string]bool
	// crew is the workers this one shares a browser with (crew.go); cl is
	// the crew's browser it uses, nil for none.
	crew *Crew
	cl   *crewLease
}

type jobTab struct {
	t     *tabs.Tab
	guard *netguard.Cache
	// binding is what the tab's egress route is bound to: a page that
	// asks for another tier (proxy auto's retry) gets a tab of its own.
	binding egress.Binding
}

const (
	// workerTabs is how many jobs' tabs a worker keeps open at once.
	workerTabs = 4
)

// Scrape scrapes one page of job.
func (w *Worker) Scrape(ctx context.Context, job string, req Request) (*Document, error) {
	f, err := w.Begin(ctx, job, req)
	if err != nil {
		return nil, err
	}
	return f.Finish()
}

// Begin takes one page of job, and leaves the rest of its scrape to the
// caller (Finish, or Cancel): the worker is free for its next page as
// soon as Begin returns.
func (w *Worker) Begin(ctx context.Context, job string, req Request) (*Fetched, error) {
	if req.RequestID == "" {
		req.RequestID = job // the job's model calls are the job's
	}
	return w.s.begin(ctx, req, w.guard(job), func(ctx context.Context, req Request) (*page, error) {
		return w.fetch(ctx, job, req)
	})
}

// guard returns job's network guard.
func (w *Worker) guard(job string) *netguard.Cache {
	g := w.guards[job]
	if g == nil {
		g = w.s.hostGuard()
		w.guards[job] = g
	}
	return g
}

// Forget closes job's tab and client (the job ended).
func (w *Worker) Forget(job string) {
	delete(w.guards, job)
	if d := w.directs[job]; d != nil {
		d.close()
		delete(w.directs, job)
	}
	delete(w.inTab, job)
	w.dropTab(job)
}

// dropTab closes job's tab: its state is unknown after a failure, or
// another job needs the room.
func (w *Worker) dropTab(job string) {
	if jt := w.tabs[job]; jt != nil {
		jt.t.Dispose()
		delete(w.tabs, job)
	}
	for i, id := range w.lru {
		if id == job {
			w.lru = append(w.lru[:i], w.lru[i+1:]...)
			break
		}
	}
}

// Close closes every tab and gives the browser back to the pool.
func (w *Worker) Close() { w.release(browsers.Reuse) }

func (w *Worker) release(d browsers.Disposal) {
	w.forgetAll()
	w.leaveCrew(d)
	if w.place != nil {
		w.place.Release()
		w.place = nil
	}
}

// forgetAll closes every job's tab and client.
func (w *Worker) forgetAll() {
	for id := range w.tabs {
		w.Forget(id)
	}
	for id := range w.directs {
		w.Forget(id)
	}
}

// leased is the browser the worker uses, its crew's; nil for none.
func (w *Worker) leased() *browsers.Lease {
	if w.cl != nil {
		return w.cl.lease
	}
	return nil
}

// hold makes sure the worker holds a place in the pool: its browser, or a
// reservation.
func (w *Worker) hold(ctx context.Context) error {
	if l := w.leased(); l != nil {
		select {
		case <-l.Done():
			w.release(browsers.Destroy)
		default:
			return nil
		}
	}
	if w.place != nil {
		return nil
	}
	place, err := w.s.Pool.Reserve(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &RetryableError{Err: err}
	}
	w.place = place
	return nil
}

// tab returns job's tab, opening it (set up for the job's options) if needed.
func (w *Worker) tab(ctx context.Context, job string, req *Request) (*jobTab, error) {
	o := &req.Options
	if jt := w.tabs[job]; jt != nil && jt.binding != req.binding(job) {
		w.dropTab(job)
	}
	if jt := w.tabs[job]; jt != nil {
		select {
		case <-jt.t.Crashed():
			w.dropTab(job)
		case <-jt.t.Done():
			w.dropTab(job)
		default:
			w.touch(job)
			return jt, nil
		}
	}
	if len(w.tabs) >= workerTabs {
		w.dropTab(w.lru[0])
	}
	// Each tab has its own connection: a connection has one event handler.
	conn, err := w.leased().Browser().CDP().Dial(ctx)
	if err != nil {
		return nil, &RetryableError{Err: err}
	}
	t, err := w.crewTab(ctx, conn, job, req)
	if err != nil {
		conn.Close()
		return nil, err
	}
	ua, err := w.s.tabPool().UserAgent(ctx, conn)
	if err != nil {
		t.Dispose()
		return nil, &RetryableError{Err: err}
	}
	guard := w.guard(job)
	if err := t.Ready(ctx, tabSetup(o, guard, w.s.Log), ua); err != nil {
		conn.Close()
		return nil, &RetryableError{Err: err}
	}
	if d := w.directs[job]; d != nil {
		// The job's pages move to the tab, with the cookies the job's
		// client was given.
		if cookies := d.jar.cdpCookies(); len(cookies) > 0 {
			err := cdp.Run(ctx, cdp.Browser(conn), storage.SetCookies,
				storage.SetCookiesParams{Cookies: cookies, BrowserContextID: cdproto.BrowserContextID(t.ContextID())})
			if err != nil {
				t.Dispose()
				return nil, &RetryableError{Err: err}
			}
		}
	}
	w.inTab[job] = true
	jt := &jobTab{t: t, guard: guard, binding: req.binding(job)}
	w.tabs[job] = jt
	w.touch(job)
	return jt, nil
}

// crewTab opens a tab over conn in job's context on the crew's browser.
// Its pages carry the warning of the context's route.
func (w *Worker) crewTab(ctx context.Context, conn *cdp.Conn, job string, req *Request) (*tabs.Tab, error) {
	sc, err := w.cl.context(ctx, w, job, req)
	if err != nil {
		return nil, err
	}
	t, err := tabs.OpenShared(ctx, conn, sc.id, sc, sc.route, sc.warning)
	if err != nil {
		return nil, &RetryableError{Err: err}
	}
	return t, nil
}

func (w *Worker) touch(job string) {
	for i, id := range w.lru {
		if id == job {
			w.lru = append(w.lru[:i], w.lru[i+1:]...)
			break
		}
	}
	w.lru = append(w.lru, job)
}

// fetch takes one page of job. A page that needs nothing of the browser
// is taken with the job's Go client, on the worker's place in the pool
// (it counts against the pool like any page), as long as no page of the
// job needed the tab.
func (w *Worker) fetch(ctx context.Context, job string, req Request) (*page, error) {
	if err := w.hold(ctx); err != nil {
		return nil, err
	}
	if w.s.UA != nil && w.s.knownUA() == "" && w.s.Egress != nil {
		// The first pages after a start with no browser yet, whose
		// Chromium's version did not give the user agent: the lane's
		// browser says which one to send.
		if err := w.browser(ctx); err != nil {
			return nil, err
		}
		w.s.UA.Learn(w.leased().Browser())
	}
	if !w.inTab[job] && w.s.directEligible(&req) {
		if d := w.direct(job, &req); d != nil {
			pg, pre, err := d.get(ctx, req, w.guard(job))
			if err != nil || pg != nil {
				return pg, err
			}
			return w.inTabPage(ctx, job, req, pre)
		}
	}
	return w.inTabPage(ctx, job, req, nil)
}

// direct returns job's client, bound for req.
func (w *Worker) direct(job string, req *Request) *direct {
	d := w.directs[job]
	if d != nil && d.binding != req.binding(job) {
		d.close()
		d = nil
	}
	if d == nil {
		if d = w.s.newDirect(req, job, true); d == nil {
			delete(w.directs, job)
			return nil
		}
		w.directs[job] = d
	}
	return d
}

// inTabPage takes one page of job on the job's tab; pre, when not nil, is
// the page's response already fetched, which the tab renders.
func (w *Worker) inTabPage(ctx context.Context, job string, req Request, pre *tabs.Response) (pg *page, err error) {
	u, err := url.Parse(req.URL)
	if err != nil {
		return nil, err
	}
	if err := w.browser(ctx); err != nil {
		return nil, err
	}
	defer func() {
		var re *RetryableError
		if errors.As(err, &re) {
			// The browser failed the page: no worker of the crew may give
			// it another (the pool may not know yet that it died).
			w.cl.spoil()
		}
	}()
	jt, err := w.tab(ctx, job, &req)
	if errors.Is(err, cdp.ErrMuxClosed) {
		return nil, &RetryableError{Err: err} // as below: the browser died
	}
	if err != nil {
		return nil, err
	}
	if err := jt.guard.CheckHost(ctx, u.Hostname()); err != nil {
		return nil, err
	}
	w.cl.c.mu.Lock()
	w.cl.pages++
	w.cl.c.mu.Unlock()
	// Stop waiting at once if the browser dies under the page.
	ctx, cancel := tabs.LeaseContext(ctx, w.leased(), func(cause error) error {
		return &RetryableError{Err: fmt.Errorf("the browser ended: %w", cause)}
	})
	defer cancel(nil)
	jt.t.NextPage()
	if o := &req.Options; pre == nil && !o.needsRender() && jt.t.ShowsSite(req.URL) {
		var got *tabs.Response
		got, pre, err = jt.t.FetchInPage(ctx, req.URL)
		switch {
		case err != nil:
			w.dropTab(job)
			return nil, err
		case got != nil:
			pg = fetchedPage(got)
			notePage(jt.t, pg)
			return pg, nil
		}
	}
	if pre != nil {
		jt.t.Render(pre)
		req.URL = pre.URL // the tab renders what was fetched, redirects followed
	}
	pg, err = w.s.drive(ctx, jt.t, req)
	notePage(jt.t, pg)
	if err != nil {
		// The tab's state is unknown after a failure: the job's next page
		// gets a fresh one.
		w.dropTab(job)
		var re *RetryableError
		if cause := context.Cause(ctx); errors.As(cause, &re) {
			return nil, re
		}
		if errors.Is(err, cdp.ErrMuxClosed) {
			// The browser's pipe closed before its exit was seen (the
			// lease ends a moment later): it died under the page too.
			return nil, &RetryableError{Err: err}
		}
	}
	return pg, err
}
