package tabs

import (
	"context"

	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/egress"
)

// This file is what a Tab tells its scrape of the page, and the ways in
// that others (jobs' shared contexts, media) have.

// Session is the tab's own CDP session.
func (t *Tab) Session() cdp.Session { return t.sess }

// ContextID is the tab's browser context.
func (t *Tab) ContextID() string { return t.contextID }

// Taken yields the main document when the tab took it from the network
// instead of rendering it (a document for parse, a text body, a
// server-rendered page of a static tab).
func (t *Tab) Taken() <-chan Taken { return t.taken }

// Crashed is closed when the page crashed the tab.
func (t *Tab) Crashed() <-chan struct{} { return t.crashed }

// Done is closed when the tab's connection to its browser ended.
func (t *Tab) Done() <-chan struct{} { return t.conn.Done() }

// Main is the main frame's last document response, if one was seen.
func (t *Tab) Main() (MainResponse, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.main == nil {
		return MainResponse{}, false
	}
	return *t.main, true
}

// Render has the tab's next navigation to pre's URL answered with pre.
func (t *Tab) Render(pre *Response) {
	t.mu.Lock()
	t.prefetched = pre
	t.mu.Unlock()
}

// NextPage readies a tab that served one page of a job for the next.
func (t *Tab) NextPage() {
	t.reset()
	t.markTraffic()
}

// markTraffic notes the route's byte counts as the start of a page's.
func (t *Tab) markTraffic() {
	if t.route != nil {
		t.in0, t.out0 = t.route.Bytes()
	}
}

// Traffic is what a tab knows of the page it took since it was readied
// (or since NextPage).
type Traffic struct {
	// Private: a request went to a non-public address (known only while
	// private networks are allowed; otherwise none can).
	Private bool
	// ProxyUsed is the upstream tier the page's requests left through.
	ProxyUsed string
	// In and Out are the bytes through the tab's egress route.
	In, Out int64
	// Warning is the route's, when the tier or country asked for has no
	// upstream (the page went direct).
	Warning string
}

// Traffic is what the tab knows of the page it took.
func (t *Tab) Traffic() Traffic {
	tr := Traffic{Private: t.reachedPrivate(), ProxyUsed: egress.TierBasic, Warning: t.routeWarning}
	if t.route == nil {
		return tr
	}
	if u := t.route.Upstream(); u != nil {
		tr.ProxyUsed = u.Tier
	}
	in, out := t.route.Bytes()
	tr.In, tr.Out = in-t.in0, out-t.out0
	return tr
}

// proxyWarning is a page's warning when a binding's choice has one
// (enhanced, or a country, asked for with no such upstream).
func proxyWarning(c egress.Choice) string {
	if c.Warning == "" {
		return ""
	}
	return "proxy: " + c.Warning
}

// Shared is a browser context that tabs of one job share (package
// scrape's crew): a tab opened in it leaves it when it closes, and the
// last one out disposes of it.
type Shared interface {
	Leave(ctx context.Context)
}

// OpenShared opens a tab over conn in the shared browser context id,
// whose egress route is route, bound already with warning (its pages
// carry it).
func OpenShared(ctx context.Context, conn *cdp.Conn, id string, shared Shared, route *egress.Route, warning string) (*Tab, error) {
	t := newTab(conn, route)
	t.contextID, t.shared, t.routeWarning = id, shared, warning
	if err := t.open(ctx, id); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// Bind binds route for binding, and returns the warning its pages carry
// when the tier or country asked for has no upstream.
func Bind(route *egress.Route, binding egress.Binding) string {
	return proxyWarning(route.Bind(binding))
}

// Share hands the events of CDP session id (one the caller attached over
// the tab's connection) to h, and the tab's own to the tab, until stop.
func (t *Tab) Share(id string, h func(cdp.Event)) (stop func()) {
	t.conn.OnEvent(func(ev cdp.Event) {
		if ev.SessionID == id {
			h(ev)
			return
		}
		t.onEvent(ev)
	})
	return func() { t.conn.OnEvent(t.onEvent) }
}
