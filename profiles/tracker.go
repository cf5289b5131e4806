package profiles

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"sync"

	"github.com/chromedp/cdproto/target"

	"github.com/trawler-dev/trawler/cdp"
)

// Tracker records the http(s) origins of the page and iframe targets of a browser, or of one of
// its browser contexts, so that a capture knows which origins to read. A frame has a target of its
// own only when the browser runs it out of process (a cross-site frame, with site isolation on), so
// same-site frames of another origin go unrecorded. It holds a DevTools connection of its own until
// Close.
type Tracker struct {
	conn      *cdp.Conn
	contextID string

	mu      sync.Mutex
	origins map[string]bool
}

// Track starts recording origins in browser context browserContextID ("" for every context) of the
// browser; the targets already open count too. ctx bounds the setup only.
func Track(ctx context.Context, browser *cdp.Mux, browserContextID string) (*Tracker, error) {
	conn, err := browser.Dial(ctx)
	if err != nil {
		return nil, err
	}
	t := &Tracker{conn: conn, contextID: browserContextID, origins: map[string]bool{}}
	conn.OnEvent(t.event)
	if err := cdp.Run(ctx, cdp.Browser(conn), target.SetDiscoverTargets, target.SetDiscoverTargetsParams{Discover: true}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("watching targets: %w", err)
	}
	return t, nil
}

func (t *Tracker) event(e cdp.Event) {
	ti := cdp.ChangedTarget(e)
	if ti == nil || (ti.Type != "page" && ti.Type != "iframe") {
		return
	}
	if t.contextID != "" && string(ti.BrowserContextID) != t.contextID {
		return
	}
	u, err := url.Parse(ti.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return
	}
	t.mu.Lock()
	t.origins[u.Scheme+"://"+u.Host] = true
	t.mu.Unlock()
}

// Origins returns the origins seen so far, sorted.
func (t *Tracker) Origins() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.origins))
	for o := range t.origins {
		out = append(out, o)
	}
	slices.Sort(out)
	return out
}

// Close stops tracking.
func (t *Tracker) Close() error { return t.conn.Close() }
