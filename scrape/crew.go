package scrape

import (
	"context"
	"sync"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/egress"
	"github.com/trawler-dev/trawler/netguard"
	"github.com/trawler-dev/trawler/profiles"
	"github.com/trawler-dev/trawler/scrape/tabs"
)

// A Crew is up to CrewSize workers that share one leased browser, and in
// it one browser context per job: the workers' tabs of a job are tabs of
// one context, as a plain crawler's tabs are tabs of one browser. Chromium
// keeps the pages of one site in one context in one renderer process,
// which then parses the site's shared scripts and stylesheets once for all
// of them: rendering a documentation site four pages at once, tabs of one
// context cost the browser markedly less CPU per page than a browser or a
// context per tab, measured with a Puppeteer loop. Jobs never share a
// context, so nothing passes from one job
// (or team) to another; the pages of one job share its cookies and
// storage, as the tabs of one browser do.
//
// The browser counts once against the pool, whichever workers use it: a
// worker gives its place in the pool to the browser it leases for the
// crew, and back when it joins one another worker leased.
type Crew struct {
	s     *Service
	mu    sync.Mutex
	cur   *crewLease    // the browser workers join; nil: none yet
	ready chan struct{} // closed when the worker leasing the next one is done
}

// CrewSize is how many workers share a browser: as many tabs as the
// chromedp baseline of the rendered crawl has (bench phase crawl).
const CrewSize = 4

// crewPagesPerBrowser bounds the pages a crew's browser serves before the
// crew swaps it for a fresh one, so that no browser grows for ever: 500
// for each of its workers, as when each leased a browser of its own.
const crewPagesPerBrowser = CrewSize * 500

// crewLease is one browser of a crew.
type crewLease struct {
	c     *Crew
	lease *browsers.Lease
	conn  *cdp.Conn // holds the shared contexts; closing it disposes of them
	// made serializes making contexts, so that two workers that start
	// on the same job make one.
	made sync.Mutex
	// Under c.mu:
	users   int  // workers using it
	pages   int  // pages it served
	worn    bool // it takes no new user: it served its pages, or died
	destroy bool // a worker saw it fail: it is not reused
	jobs    map[string]*sharedContext
}

// sharedContext is a job's browser context on a crew's browser.
type sharedContext struct {
	cl      *crewLease
	job     string
	id      string
	route   *egress.Route // the context's, closed with it
	binding egress.Binding
	warning string
	tabs    int // under cl.c.mu
}

// NewCrew returns a crew with no browser yet.
func (s *Service) NewCrew() *Crew { return &Crew{s: s} }

// NewWorker returns a worker of the crew, with no browser yet: it joins
// the crew's, or leases one for the crew, on its first page that needs
// one.
func (c *Crew) NewWorker() *Worker {
	return &Worker{s: c.s, crew: c, tabs: map[string]*jobTab{}, guards: map[string]*netguard.Cache{},
		directs: map[string]*direct{}, inTab: map[string]bool{}}
}

// usableLocked reports whether a worker may use cl for its next page.
func (cl *crewLease) usableLocked() bool {
	if cl.worn || cl.pages >= crewPagesPerBrowser {
		return false
	}
	select {
	case <-cl.lease.Done():
		return false
	default:
		return true
	}
}

// spoil takes cl out of service: its workers leave it at their next page,
// and the last one out destroys its browser.
func (cl *crewLease) spoil() {
	cl.c.mu.Lock()
	cl.worn, cl.destroy = true, true
	cl.c.mu.Unlock()
}

// browser makes sure w uses its crew's current browser, leasing one for
// the crew when there is none.
func (w *Worker) browser(ctx context.Context) error {
	c := w.crew
	for {
		c.mu.Lock()
		if cl := w.cl; cl != nil {
			ok := cl == c.cur && cl.usableLocked()
			c.mu.Unlock()
			if ok {
				return nil
			}
			// Its browser is worn or gone: the worker's tabs and clients
			// go with it, and its jobs start afresh on the next one.
			w.forgetAll()
			w.leaveCrew(browsers.Reuse)
			continue
		}
		if cur := c.cur; cur != nil {
			if cur.usableLocked() {
				cur.users++
				w.cl = cur
				c.mu.Unlock()
				if w.place != nil {
					// The crew's browser counts for the worker.
					w.place.Release()
					w.place = nil
				}
				return nil
			}
			cur.worn = true // its last user gives it back
			c.cur = nil
		}
		if ch := c.ready; ch != nil {
			c.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		ch := make(chan struct{})
		c.ready = ch
		c.mu.Unlock()
		cl, err := w.leaseForCrew(ctx)
		c.mu.Lock()
		c.ready = nil
		close(ch)
		if err == nil {
			c.cur, w.cl = cl, cl
		}
		c.mu.Unlock()
		return err
	}
}

// leaseForCrew leases a browser for w's crew, in w's place in the pool
// when it holds one.
func (w *Worker) leaseForCrew(ctx context.Context) (*crewLease, error) {
	var lease *browsers.Lease
	var err error
	if w.place != nil {
		lease, err = w.place.Lease(ctx, browsers.LeaseRequest{Reusable: true})
		w.place = nil
	} else {
		lease, err = w.s.Pool.Acquire(ctx, browsers.LeaseRequest{Reusable: true})
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &RetryableError{Err: err}
	}
	conn, err := lease.Browser().CDP().Dial(ctx)
	if err != nil {
		lease.Release(browsers.Destroy)
		return nil, &RetryableError{Err: err}
	}
	return &crewLease{c: w.crew, lease: lease, conn: conn, users: 1, jobs: map[string]*sharedContext{}}, nil
}

// leaveCrew ends w's use of its crew's browser (its tabs are closed); the
// last worker out gives the browser back to the pool.
func (w *Worker) leaveCrew(d browsers.Disposal) {
	cl := w.cl
	if cl == nil {
		return
	}
	w.cl = nil
	c := w.crew
	c.mu.Lock()
	cl.users--
	if d == browsers.Destroy {
		cl.destroy, cl.worn = true, true
	}
	last := cl.users == 0
	if last && c.cur == cl {
		c.cur = nil
	}
	if last && cl.pages >= crewPagesPerBrowser {
		cl.destroy = true // no browser grows for ever
	}
	select {
	case <-cl.lease.Done():
		cl.destroy = true
	default:
	}
	c.mu.Unlock()
	if !last {
		return
	}
	cl.conn.Close()
	d = browsers.Reuse
	if cl.destroy {
		d = browsers.Destroy
	}
	cl.lease.Release(d)
}

// context returns job's context on cl for req, making it when there is
// none with req's binding (a page that asks for another proxy tier gets
// a context of its own); the caller's tab counts as one of its tabs.
func (cl *crewLease) context(ctx context.Context, w *Worker, job string, req *Request) (*sharedContext, error) {
	cl.made.Lock()
	defer cl.made.Unlock()
	binding := req.binding(job)
	c := cl.c
	c.mu.Lock()
	if sc := cl.jobs[job]; sc != nil && sc.binding == binding {
		sc.tabs++
		c.mu.Unlock()
		return sc, nil
	}
	c.mu.Unlock()
	route, err := w.s.newRoute(cl.lease.Browser().ID())
	if err != nil {
		return nil, &RetryableError{Err: err}
	}
	id, err := tabs.NewContext(ctx, cl.conn, route)
	if err != nil {
		if route != nil {
			route.Close()
		}
		return nil, &RetryableError{Err: err}
	}
	sc := &sharedContext{cl: cl, job: job, id: id, route: route, binding: binding, tabs: 1}
	if route != nil {
		sc.warning = tabs.Bind(route, binding)
	}
	// A job's profile is read-only (many pages at once cannot take turns
	// writing it): it is restored into the job's context once.
	if p := req.Options.Profile; p != nil {
		use, err := w.s.openProfile(ctx, req.Team, &Profile{Name: p.Name})
		if err == nil {
			err = use.Apply(ctx, cl.lease.Browser().CDP(), id)
			use.Close(ctx, profiles.Discard)
		}
		if err != nil {
			sc.dispose(ctx)
			return nil, err
		}
	}
	c.mu.Lock()
	if cl.jobs[job] == nil {
		cl.jobs[job] = sc
	}
	c.mu.Unlock()
	return sc, nil
}

// Leave is a tab of sc closing: the last one disposes of the context.
func (sc *sharedContext) Leave(ctx context.Context) {
	c := sc.cl.c
	c.mu.Lock()
	sc.tabs--
	last := sc.tabs == 0
	if last && sc.cl.jobs[sc.job] == sc {
		delete(sc.cl.jobs, sc.job)
	}
	c.mu.Unlock()
	if last {
		sc.dispose(ctx)
	}
}

func (sc *sharedContext) dispose(ctx context.Context) {
	tabs.DisposeContext(ctx, sc.cl.conn, sc.id)
	if sc.route != nil {
		sc.route.Close()
	}
}
