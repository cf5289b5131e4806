package tabs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cdproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/cdproto/target"

	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/egress"
	"golang.org/x/net/publicsuffix"
)

// A one-off scrape that renders pays mostly for its tab, not its page: a
// browser context and tab of their own cost the browser several times the
// CPU of the next page of a tab, another site's included (bench phase
// rendercost measures both). So a tab whose scrape ended
// well is cleared of everything the scrape left and kept for the next
// one-off scrape of the same team on the same browser: never another
// team's, never a session's, and never one that loads a profile.
//
// What clearing does, in order (Tab.clear):
//   - every request the old page still makes is refused (a beacon sent on
//     unload cannot set a cookie after the cookies are cleared);
//   - the tab goes to about:blank, its history is dropped (and with it the
//     back/forward cache) and window.name is emptied;
//   - every storage type (localStorage, sessionStorage, IndexedDB, Cache
//     Storage, service workers, file systems, shared storage, buckets) of
//     every origin the context reached is cleared, its own and as a
//     frame's partitioned storage under each top-level site the tab
//     showed: the origins are those of every host:port its egress route
//     was asked for and every request the tab saw, so a frame or worker
//     of any site is covered;
//   - the context's cookies and HTTP cache are cleared;
//   - the CDP session is detached, which drops its emulation, headers,
//     interception and scripts; the next scrape attaches afresh;
//   - then it is checked: the context holds no target but the tab (no
//     popup, no worker left) and no cookie. Any failure closes the tab.
//
// TestRecycledTabsKeepNoState (package service) sets and reads each of these.

const (
	// recycleLive is how many tabs a team has out on one browser (in use
	// or being cleared) before its next scrape there waits, up to
	// recycleWait, for one of them rather than open another: on a busy
	// machine a new tab costs more than waiting for a cleared one.
	recycleLive    = 4
	recycleWait    = 1500 * time.Millisecond
	recycleIdle    = 4                // cleared tabs kept per browser
	recycleIdleFor = 60 * time.Second // a cleared tab unused this long is closed
	// recycleOrigins: a scrape that reached more hosts than this is not
	// cleared but closed (clearing costs a call per origin).
	recycleOrigins = 64
)

// Group is what a recycled tab is kept for: its team, and whether the
// certificates of the pages it took went unchecked. A browser context
// keeps what it let through (an open connection to the site, a certificate
// allowed), which clearing does not undo, so a tab that skipped the check
// serves only scrapes that skip it too.
func Group(team string, skipTLSVerification bool) string {
	if skipTLSVerification {
		return team + "\x00tls-unchecked"
	}
	return team
}

// recycled holds the cleared tabs of each browser.
type recycled struct {
	mu   sync.Mutex
	idle map[string][]*idleTab // browser id → cleared tabs, oldest first
	live map[liveKey]int       // tabs out per browser and team
	// wake is closed, and replaced, when a tab comes back or is given up.
	wake chan struct{}
	// served counts the scrapes a recycled tab served.
	served atomic.Int64
}

type idleTab struct {
	t    *Tab
	team string
	gone chan struct{} // closed when it leaves the list
}

type liveKey struct{ browser, team string }

// get returns a cleared tab of team's on browser id, waiting a while for
// one when the team has recycleLive tabs out there; nil means the caller
// opens a tab. Either way the tab is out until put or done.
func (r *recycled) get(ctx context.Context, id, team string) *Tab {
	k := liveKey{id, team}
	deadline := time.NewTimer(recycleWait)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		if r.live == nil {
			r.live, r.wake = map[liveKey]int{}, make(chan struct{})
		}
		t := r.takeLocked(id, team)
		if t != nil || r.live[k] < recycleLive {
			r.live[k]++
			r.mu.Unlock()
			return t
		}
		wake := r.wake
		r.mu.Unlock()
		select {
		case <-wake:
		case <-deadline.C:
			r.mu.Lock()
			r.live[k]++
			r.mu.Unlock()
			return nil
		case <-ctx.Done():
			r.mu.Lock()
			r.live[k]++
			r.mu.Unlock()
			return nil // the caller fails on ctx; done follows
		}
	}
}

// done gives up a tab of team's on browser id that get counted out.
func (r *recycled) done(id, team string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.returnLocked(liveKey{id, team})
}

func (r *recycled) returnLocked(k liveKey) {
	if r.live[k]--; r.live[k] <= 0 {
		delete(r.live, k)
	}
	close(r.wake)
	r.wake = make(chan struct{})
}

// takeLocked returns a cleared tab of team's on browser id, if one is
// ready.
func (r *recycled) takeLocked(id, team string) *Tab {
	tabs := r.idle[id]
	for i := len(tabs) - 1; i >= 0; i-- {
		it := tabs[i]
		if it.team != team {
			continue
		}
		tabs = append(tabs[:i:i], tabs[i+1:]...)
		r.idle[id] = tabs
		close(it.gone)
		select {
		case <-it.t.conn.Done():
			continue
		case <-it.t.crashed:
			go it.t.Dispose()
			continue
		default:
		}
		r.served.Add(1)
		return it.t
	}
	return nil
}

// put keeps t, cleared, for team's next scrape on browser id; the oldest
// tab of the browser goes when it has enough.
func (r *recycled) put(id, team string, t *Tab) {
	r.mu.Lock()
	if r.idle == nil {
		r.idle = map[string][]*idleTab{}
	}
	r.returnLocked(liveKey{id, team})
	it := &idleTab{t: t, team: team, gone: make(chan struct{})}
	r.idle[id] = append(r.idle[id], it)
	var out []*Tab
	for len(r.idle[id]) > recycleIdle {
		close(r.idle[id][0].gone)
		out = append(out, r.idle[id][0].t)
		r.idle[id] = r.idle[id][1:]
	}
	r.mu.Unlock()
	for _, o := range out {
		o.Dispose()
	}
	go func() {
		timer := time.NewTimer(recycleIdleFor)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-t.conn.Done():
		case <-it.gone:
			return // taken, or closed as the oldest
		}
		if r.remove(id, it) {
			t.Dispose()
		}
	}()
}

// remove takes it out of browser id's list, if it is still there.
func (r *recycled) remove(id string, it *idleTab) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, x := range r.idle[id] {
		if x == it {
			r.idle[id] = append(r.idle[id][:i:i], r.idle[id][i+1:]...)
			close(it.gone)
			return true
		}
	}
	return false
}

// recycle clears t, which served a scrape of team on browser id, and
// keeps it for the team's next scrape; or closes it.
func (p *Pool) recycle(t *Tab, id, team string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	next, err := t.clear(ctx)
	if err != nil {
		p.Log.Debug("a scrape's tab is closed, not reused", "reason", err)
		t.Dispose()
		p.recycled.done(id, team)
		return
	}
	p.recycled.put(id, team, next)
}

// dispose closes t's context and its connection.
func (t *Tab) Dispose() {
	t.Close()
	t.conn.Close()
}

// noteRequest records the origin of a request the tab saw, and the site
// of a main-frame document (a top-level site, which keys the partitioned
// storage of the frames it embeds); it says whether the request may go on
// (not while the tab is being cleared).
func (t *Tab) noteRequest(raw string, main bool) bool {
	u, err := url.Parse(raw)
	t.mu.Lock()
	defer t.mu.Unlock()
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Hostname() != "" {
		if t.origins == nil {
			t.origins, t.tops = map[string]struct{}{}, map[string]struct{}{}
		}
		t.origins[u.Scheme+"://"+u.Host] = struct{}{}
		if main {
			t.tops[schemefulSite(u)] = struct{}{}
		}
	}
	return !t.clearing
}

// schemefulSite is u's site as Chromium keys storage by it: the scheme
// and the registrable domain (the host itself for an IP address or a
// name with no public suffix).
func schemefulSite(u *url.URL) string {
	host := u.Hostname()
	if d, err := publicsuffix.EffectiveTLDPlusOne(host); err == nil && net.ParseIP(host) == nil {
		host = d
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return u.Scheme + "://" + host
}

// clearOrigins is the origins to clear for host:port hp, which the
// egress route saw: the scheme is not known there, so both.
func clearOrigins(hp string) []string {
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		return nil
	}
	h := host
	if strings.Contains(host, ":") {
		h = "[" + host + "]"
	}
	withPort := func(scheme, def string) string {
		if port == def {
			return scheme + "://" + h
		}
		return scheme + "://" + h + ":" + port
	}
	return []string{withPort("http", "80"), withPort("https", "443")}
}

// storageKeys is the storage keys, as Chromium serializes them, that
// origin o can have data under: its own (cleared by origin), as a frame
// under each top-level site in tops ("/^0" and the site), and as a frame
// of its own site under a cross-site ancestor ("/^31").
func storageKeys(o string, tops map[string]struct{}) []string {
	u, err := url.Parse(o)
	if err != nil {
		return nil
	}
	keys := []string{o + "/^31"}
	own := schemefulSite(u)
	for s := range tops {
		if s != own {
			keys = append(keys, o+"/^0"+s)
		}
	}
	return keys
}

// clear removes every trace of t's scrape from its browser context (see
// the top of this file) and returns the tab attached afresh, ready for
// another scrape. t must have its own egress route: the route's list of
// hosts is what makes the list of origins complete.
func (t *Tab) clear(ctx context.Context) (*Tab, error) {
	if t.route == nil {
		return nil, errors.New("the context has no route of its own")
	}
	select {
	case <-t.crashed:
		return nil, errors.New("the tab crashed")
	default:
	}
	t.mu.Lock()
	t.clearing = true
	t.mu.Unlock()
	// The scrape's bytes are reported now, as a closed route's would be,
	// not when the next scrape binds the route (the request's activity
	// entry has them); the cleared tab's own traffic counts against nobody.
	t.route.Bind(egress.Binding{})
	if err := t.leave(ctx); err != nil {
		return nil, err
	}
	if err := cdp.Run(ctx, t.sess, cdppage.ResetNavigationHistory, cdproto.Empty{}); err != nil {
		return nil, fmt.Errorf("Page.resetNavigationHistory: %w", err)
	}
	if err := cdp.Run(ctx, t.sess, runtime.Evaluate, runtime.EvaluateParams{Expression: "window.name = ''"}); err != nil {
		return nil, fmt.Errorf("Runtime.evaluate: %w", err)
	}
	t.mu.Lock()
	opened := t.opened
	origins := slices.Collect(maps.Keys(t.origins))
	tops := maps.Clone(t.tops)
	t.mu.Unlock()
	if opened {
		return nil, errors.New("the page opened a window")
	}
	for _, h := range t.route.TakeHosts() {
		origins = append(origins, clearOrigins(h)...)
	}
	slices.Sort(origins)
	origins = slices.Compact(origins)
	if len(origins) > 2*recycleOrigins {
		return nil, fmt.Errorf("the scrape reached %d origins", len(origins))
	}
	// The clearing calls are independent of one another: they are sent
	// together, which holds the tab out half as long as one after another.
	var wg sync.WaitGroup
	errs := make(chan error, 2+len(origins)*(2+len(tops)))
	send := func(f func() error) {
		wg.Go(func() {
			if err := f(); err != nil {
				errs <- err
			}
		})
	}
	for _, o := range origins {
		send(func() error {
			return cdp.Run(ctx, t.sess, storage.ClearDataForOrigin, storage.ClearDataForOriginParams{Origin: o, StorageTypes: "all"})
		})
		for _, k := range storageKeys(o, tops) {
			send(func() error {
				return cdp.Run(ctx, t.sess, storage.ClearDataForStorageKey,
					storage.ClearDataForStorageKeyParams{StorageKey: k, StorageTypes: "all"})
			})
		}
	}
	send(func() error { return cdp.Run(ctx, t.sess, network.ClearBrowserCache, cdproto.Empty{}) })
	send(func() error {
		return cdp.Run(ctx, cdp.Browser(t.conn), storage.ClearCookies,
			storage.ClearCookiesParams{BrowserContextID: cdproto.BrowserContextID(t.contextID)})
	})
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	if err := cdp.Run(ctx, cdp.Browser(t.conn), target.DetachFromTarget,
		target.DetachFromTargetParams{SessionID: target.SessionID(t.sess.ID)}); err != nil {
		return nil, err
	}
	if err := t.checkEmpty(ctx); err != nil {
		return nil, err
	}
	next := newTab(t.conn, t.route)
	next.contextID, next.sess.TargetID = t.contextID, t.sess.TargetID
	if err := next.attach(ctx); err != nil {
		return nil, err
	}
	return next, nil
}

// leave takes t to about:blank. The page is left from inside, from an
// isolated world (out of the page's reach): a navigation the renderer
// starts keeps the tab's renderer process, which is most of what makes
// the next scrape cheap, where one the browser starts (Page.navigate)
// gets a process of its own and the old one exits. A page that holds that
// navigation back (the Navigation API can) is left with Page.navigate.
func (t *Tab) leave(ctx context.Context) error {
	wait := func(loaded chan struct{}, d time.Duration) bool {
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-loaded:
			return true
		case <-t.crashed:
		case <-timer.C:
		case <-ctx.Done():
		}
		return false
	}
	t.reset()
	t.mu.Lock()
	loaded := t.loaded
	t.mu.Unlock()
	w, err := cdp.Do(ctx, t.sess, cdppage.CreateIsolatedWorld,
		cdppage.CreateIsolatedWorldParams{FrameID: cdproto.FrameID(t.sess.TargetID), WorldName: "trawler-leave"})
	if err == nil {
		err = cdp.Run(ctx, t.sess, runtime.Evaluate,
			runtime.EvaluateParams{Expression: "location.replace('about:blank')", ContextID: w.ExecutionContextID})
	}
	if err == nil && wait(loaded, 2*time.Second) {
		return nil
	}
	t.reset()
	t.mu.Lock()
	loaded = t.loaded
	t.mu.Unlock()
	if err := cdp.Run(ctx, t.sess, cdppage.Navigate, cdppage.NavigateParams{URL: "about:blank"}); err != nil {
		return err
	}
	if !wait(loaded, 5*time.Second) {
		return errors.New("about:blank did not load")
	}
	return nil
}

// checkEmpty makes sure t's context holds nothing but its tab, blank, and
// no cookie.
func (t *Tab) checkEmpty(ctx context.Context) error {
	browser := cdp.Browser(t.conn)
	tg, err := cdp.Do(ctx, browser, target.GetTargets, target.GetTargetsParams{})
	if err != nil {
		return err
	}
	for _, ti := range tg.TargetInfos {
		if string(ti.BrowserContextID) != t.contextID || ti.Type == "browser_ui" {
			continue // browser_ui: the browser's own (an omnibox popup)
		}
		if ti.TargetID != t.sess.TargetID {
			return fmt.Errorf("the context still holds a %s (%s)", ti.Type, ti.URL)
		}
		if ti.URL != "about:blank" {
			return fmt.Errorf("the tab shows %s", ti.URL)
		}
	}
	ck, err := cdp.Do(ctx, browser, storage.GetCookies, storage.GetCookiesParams{BrowserContextID: cdproto.BrowserContextID(t.contextID)})
	if err != nil {
		return err
	}
	if len(ck.Cookies) > 0 {
		return fmt.Errorf("%d cookies are left", len(ck.Cookies))
	}
	return nil
}
