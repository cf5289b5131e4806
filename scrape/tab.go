package scrape

import (
	"context"
	"html"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/netguard"
	"github.com/trawler-dev/trawler/profiles"
	"github.com/trawler-dev/trawler/scrape/detect"
	"github.com/trawler-dev/trawler/scrape/tabs"
)

// This file is where scrape meets its tabs (package tabs): what a request
// asks of a tab, and what a page taken on a tab is.

// tabPool is the service's pool of one-off scrapes' tabs, made on first
// use from the service's settings.
func (s *Service) tabPool() *tabs.Pool {
	s.tabsOnce.Do(func() {
		s.tabs = &tabs.Pool{Reuse: s.ReuseTabs, Spares: s.SpareTabs, NewRoute: s.newRoute, Log: s.Log}
	})
	return s.tabs
}

// tabRequest is what req asks of a one-off scrape's tab; use is the
// profile it applies, and pre the page fetched already that it renders.
func tabRequest(req *Request, guard *netguard.Cache, use *profiles.Use, pre *tabs.Response, log *slog.Logger) tabs.Request {
	requestID := req.RequestID
	if requestID == "" {
		requestID = req.id
	}
	return tabs.Request{Setup: tabSetup(&req.Options, guard, log), Group: tabs.Group(req.Team, req.Options.SkipTLSVerification),
		Binding: req.binding(requestID), Profile: use, Render: pre}
}

// tabSetup is what o asks of a tab, whose requests pass guard.
func tabSetup(o *Options, guard *netguard.Cache, log *slog.Logger) tabs.Setup {
	return tabs.Setup{Guard: guard, Log: log, Static: !o.needsRender(), Mobile: o.Mobile, Headers: o.Headers,
		Location: o.Location, SkipTLSVerification: o.SkipTLSVerification, BlockAds: o.BlockAds, SkipAssets: o.skipsAssets()}
}

// Prepare readies the service for a burst of one-off scrapes before the
// first comes: it takes a browser for jobs from the pool, opens SpareTabs
// spare tabs on it and gives it back, as a browser jobs used, which the
// pool gives no session. Nothing is done when SpareTabs is 0.
func (s *Service) Prepare(ctx context.Context) error {
	if s.SpareTabs <= 0 {
		return nil
	}
	lease, err := s.Pool.Acquire(ctx, browsers.LeaseRequest{Lifetime: time.Minute, Reusable: true, Shareable: true})
	if err != nil {
		return err
	}
	s.tabPool().Fill(ctx, lease.Browser())
	lease.Release(browsers.Reuse)
	return nil
}

// SpareTabsReady reports how many spare tabs are ready now, and the
// browsers they are on; taken is how many scrapes a spare tab served.
func (s *Service) SpareTabsReady() (ready int, browsers []string, taken int64) {
	return s.tabPool().SparesReady()
}

// Recycled is how many one-off scrapes a cleared tab served.
func (s *Service) Recycled() int64 { return s.tabPool().Recycled() }

// notePage records on pg what t knows of the page it took: whether it
// reached private addresses, its traffic through the route, and the
// route's warning.
func notePage(t *tabs.Tab, pg *page) {
	if pg == nil {
		return
	}
	tr := t.Traffic()
	pg.private, pg.proxyUsed, pg.egressIn, pg.egressOut = tr.Private, tr.ProxyUsed, tr.In, tr.Out
	pg.warning = joinWarning(pg.warning, tr.Warning)
}

// read takes the rendered page into pg: its HTML and URL, the main
// response's status and type, and, for the browser's viewer of a text
// body, the body.
func read(ctx context.Context, t *tabs.Tab, pg *page) error {
	html, finalURL, err := t.HTML(ctx)
	if err != nil {
		select {
		case <-t.Crashed():
			return ErrPageCrashed
		default:
		}
		return err
	}
	pg.body, pg.finalURL = []byte(html), finalURL
	m, _ := t.Main()
	pg.status, pg.contentType = m.Status, m.ContentType
	if pg.status == 0 {
		pg.status = 200 // a page the browser made itself (about:, data:)
	}
	if pg.contentType == "" {
		pg.contentType = "text/html"
	}
	if detect.TextType(pg.contentType) != "" {
		// The page is the browser's viewer of a text body: the body is
		// the page, as it came, or else as the browser decoded it.
		text := m.Text
		if !m.TextTaken {
			if text, err = t.ShownText(ctx); err != nil {
				return err
			}
		}
		pg.body = text
	}
	return nil
}

// takenPage is the page of a document t took from the network.
func takenPage(t *tabs.Tab, tb tabs.Taken) *page {
	pg := &page{engine: "browser-fetch", body: tb.Body}
	if m, ok := t.Main(); ok {
		pg.status, pg.finalURL, pg.contentType = m.Status, m.URL, m.ContentType
	}
	return pg
}

// fetchedPage is the page of a response fetch() took in a tab.
func fetchedPage(r *tabs.Response) *page {
	return &page{engine: "browser-fetch", status: r.Status, finalURL: r.URL, contentType: r.ContentType, body: r.Body}
}

// textDocument is a text body of detect.TextType kind as HTML: a code block,
// whose language (for JSON and XML) tags its Markdown fence.
func textDocument(text, kind string) []byte {
	code := "<code>"
	if kind == "json" || kind == "xml" {
		code = `<code class="language-` + kind + `">`
	}
	return []byte("<html><head></head><body><pre>" + code + html.EscapeString(text) + "</code></pre></body></html>")
}

// skipsAssets says whether the tab's pages may go without images, media
// and fonts: nothing asked for shows them (no screenshot, no branding,
// audio or video, no actions, which may screenshot or click by position).
// Their tags stay in the page as the site wrote them; only the requests
// are refused, which saves the browser their downloads and decoding.
func (o *Options) skipsAssets() bool {
	_, shot := o.Screenshot()
	return !shot && !o.needsLivePage() && len(o.Actions) == 0
}

// RenderStats counts rendered pages: how many, the time from their
// commit to their HTML (or whatever the options asked for after it), and
// the share of it spent waiting for the page to settle after its load
// event.
type RenderStats struct {
	n, total, settle atomic.Int64
}

func (r *RenderStats) add(total, settle time.Duration) {
	r.n.Add(1)
	r.total.Add(int64(total))
	r.settle.Add(int64(settle))
}

// Read returns the pages rendered since start, their time and their
// settle wait.
func (r *RenderStats) Read() (n int64, total, settle time.Duration) {
	return r.n.Load(), time.Duration(r.total.Load()), time.Duration(r.settle.Load())
}
