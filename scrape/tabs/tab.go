package tabs

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/browser"
	cdproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/inspector"
	"github.com/chromedp/cdproto/network"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/security"
	"github.com/chromedp/cdproto/target"

	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/egress"
	"github.com/trawler-dev/trawler/netguard"
	"github.com/trawler-dev/trawler/scrape/detect"
)

// Tab is one scrape's page: a fresh browser context (its own cookies and
// storage) holding one tab on a leased browser, driven over a flattened CDP
// session. Every request the tab makes passes the network guard and the ad
// blocker through the Fetch domain; the main document's response is seen
// there too, which is how documents (PDF) are taken as bytes, how a
// server-rendered page or a text body is taken without rendering it, and
// how a text body the tab shows is known as it came.
type Tab struct {
	conn *cdp.Conn
	set  Setup
	// sess is the tab's own CDP session, attached to its target.
	sess      cdp.Session
	contextID string
	// route is the context's way through the egress proxy: whose its
	// traffic is, and which upstream it leaves through. Nil: the context
	// uses its browser's.
	route *egress.Route
	// shared, when not nil, is the context (and route) the tab shares
	// with other lanes' tabs of its job; the tab owns neither.
	shared Shared
	// reach, while private networks are allowed, tells which requests go
	// to non-public addresses (see private).
	reach *netguard.Cache
	// world is the settle probe's execution context in the main frame's
	// document, 0 until it is looked up (probeState).
	world runtime.ExecutionContextID
	// in0 and out0 are the route's byte counts when the tab was readied
	// for its scrape, and routeWarning what binding the route said.
	in0, out0    int64
	routeWarning string

	mu       sync.Mutex
	inflight map[string]time.Time // request → when it was sent
	lastNet  time.Time
	main     *MainResponse
	blocked  error         // why the main document was refused
	private  bool          // a request since the last reset went to a non-public address
	loaded   chan struct{} // closed on the load event; replaced by reset
	isLoaded bool
	site     string // the site of the page the tab shows
	fetching bool   // a FetchInPage is under way
	// prefetched is a page taken before the tab that it must render: the
	// tab's next navigation to its URL is answered with it.
	prefetched *Response
	network    bool // the Network domain is on
	// origins is the origin of every http(s) request the tab saw,
	// answered from the network or not (a rendered prefetch), and tops the
	// site of every main-frame document: with the route's list of hosts,
	// what a recycled tab clears. clearing: the tab is being cleared, and
	// refuses every request. opened: the page opened a window.
	origins, tops map[string]struct{}
	clearing      bool
	opened        bool
	taken         chan Taken // the main document, taken from the network
	crashed       chan struct{}
	once          struct{ crashed sync.Once }
}

// MainResponse is the main frame's final document response.
type MainResponse struct {
	URL         string
	Status      int
	StatusText  string
	ContentType string
	// Text is a text response's body (JSON, XML, plain text), decoded,
	// taken as it came when the browser goes on to show it: the page it
	// shows is a viewer of the body, not the body. TextTaken says it was.
	Text      []byte
	TextTaken bool
}

// Taken is a main document captured at the network layer.
type Taken struct {
	Body   []byte
	Binary bool // a document for parse, not HTML
}

// blankTab creates a fresh browser context holding one blank tab, attached
// over conn, with its renderer started (Page.enable answered): the slow
// part of opening a tab, done ahead of time for spare tabs.
//
// route, when given, is the context's own way through the egress proxy
// (closed with the tab), with no bypass: loopback goes through it too.
func blankTab(ctx context.Context, conn *cdp.Conn, route *egress.Route) (*Tab, error) {
	id, err := NewContext(ctx, conn, route)
	if err != nil {
		if route != nil {
			route.Close()
		}
		return nil, err
	}
	p := newTab(conn, route)
	p.contextID = id
	if err := p.open(ctx, id); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// NewContext creates a browser context over conn, disposed when conn
// closes; route, when given, is its way through the egress proxy.
func NewContext(ctx context.Context, conn *cdp.Conn, route *egress.Route) (string, error) {
	dispose := true
	p := target.CreateBrowserContextParams{DisposeOnDetach: &dispose}
	if route != nil {
		p.ProxyServer, p.ProxyBypassList = route.URL(), "<-loopback>"
	}
	id, err := cdp.NewContext(ctx, conn, p)
	return string(id), err
}

// open opens t's blank tab in browser context id and attaches to it.
func (t *Tab) open(ctx context.Context, id string) error {
	created, err := cdp.Do(ctx, cdp.Browser(t.conn), target.CreateTarget,
		target.CreateTargetParams{URL: "about:blank", BrowserContextID: cdproto.BrowserContextID(id)})
	if err != nil {
		return err
	}
	t.sess.TargetID = created.TargetID
	return t.attach(ctx)
}

func newTab(conn *cdp.Conn, route *egress.Route) *Tab {
	return &Tab{conn: conn, inflight: map[string]time.Time{}, lastNet: time.Now(), route: route,
		loaded: make(chan struct{}), taken: make(chan Taken, 1), crashed: make(chan struct{})}
}

// attach opens a CDP session of its own on t's target, with the Page
// domain on.
func (t *Tab) attach(ctx context.Context) error {
	sess, err := cdp.Attach(ctx, t.conn, t.sess.TargetID)
	if err != nil {
		return err
	}
	// The handler reads the session on the connection's reader: it is
	// installed once the session is known (a blank tab with no domain
	// enabled has nothing to say before).
	t.sess = sess
	t.conn.OnEvent(t.onEvent)
	return cdp.Run(ctx, t.sess, cdppage.Enable, cdppage.EnableParams{})
}

// reset readies a tab that served one page for the next one, in the same
// browser context.
func (t *Tab) reset() {
	t.mu.Lock()
	t.main, t.blocked, t.private = nil, nil, false
	t.inflight = map[string]time.Time{}
	t.lastNet = time.Now()
	t.world = 0
	if t.isLoaded {
		t.loaded, t.isLoaded = make(chan struct{}), false
	}
	t.mu.Unlock()
	select {
	case <-t.taken:
	default:
	}
}

// Setup is what a scrape asks of its tab: the network guard its requests
// pass, and the emulation, headers and refusals of its options.
type Setup struct {
	Guard *netguard.Cache
	Log   *slog.Logger
	// Static: take an HTML document from the network without rendering it
	// when it looks complete.
	Static              bool
	Mobile              bool
	Headers             map[string]string
	Location            *Location
	SkipTLSVerification bool
	BlockAds            bool
	// SkipAssets refuses images, media and fonts: nothing the scrape asks
	// for shows them.
	SkipAssets bool
}

// Ready readies a blank tab for one scrape set up so; ua is the browsers'
// user agent. A tab that could not be readied is closed.
func (t *Tab) Ready(ctx context.Context, set Setup, ua string) error {
	t.set = set
	if guard := set.Guard; guard.Guard.AllowPrivate {
		t.reach = &netguard.Cache{Guard: &netguard.Guard{Resolver: guard.Guard.Resolver}, TTL: guard.TTL}
	}
	if err := t.prepare(ctx, ua); err != nil {
		t.Close()
		return err
	}
	return nil
}

// Setup is what the tab was readied for.
func (t *Tab) Setup() Setup { return t.set }

// call sends a command cdproto has no type for, or whose reply is read in
// part, on the tab's session.
func (t *Tab) call(ctx context.Context, method string, params, result any) error {
	return t.sess.Call(ctx, method, params, result)
}

// prepare sets up interception, emulation and headers before navigation.
func (t *Tab) prepare(ctx context.Context, browserUA string) error {
	// The Network domain (which the smart wait's idle tracking needs) costs
	// the browser an event per request and per chunk of data, and a copy of
	// every body: a static tab turns it on only when a page turns out to
	// need rendering (see networkOn), before that page's resources load.
	var steps []func() error
	if !t.set.Static || len(t.ExtraHeaders()) > 0 {
		steps = append(steps, func() error { return cdp.EnableNetwork(ctx, t.sess) })
		t.mu.Lock()
		t.network = true
		t.mu.Unlock()
	}
	// The screen is the device's: the browsers' own for a desktop, a
	// phone's around a phone's viewport.
	metrics := emulation.SetDeviceMetricsOverrideParams{Width: 1920, Height: 1080, DeviceScaleFactor: 1}
	if t.set.Mobile {
		metrics = emulation.SetDeviceMetricsOverrideParams{Width: 390, Height: 844, DeviceScaleFactor: 3, Mobile: true,
			ScreenWidth: 390, ScreenHeight: 844}
	}
	steps = append(steps,
		func() error {
			return cdp.Intercept(ctx, t.sess, cdp.RequestsAndDocuments...)
		},
		func() error {
			return cdp.Run(ctx, t.sess, security.SetIgnoreCertificateErrors,
				security.SetIgnoreCertificateErrorsParams{Ignore: t.set.SkipTLSVerification})
		},
		func() error { return cdp.Run(ctx, t.sess, emulation.SetDeviceMetricsOverride, metrics) })
	if t.set.Mobile {
		steps = append(steps, func() error {
			return cdp.Run(ctx, t.sess, emulation.SetTouchEmulationEnabled,
				emulation.SetTouchEmulationEnabledParams{Enabled: true, MaxTouchPoints: 5})
		})
	}
	if loc := t.set.Location; loc != nil {
		steps = append(steps, func() error {
			return cdp.Run(ctx, t.sess, emulation.SetLocaleOverride, emulation.SetLocaleOverrideParams{Locale: t.languages()[0]})
		})
		if tz := countryTimezone(loc.Country); tz != "" {
			steps = append(steps, func() error {
				return cdp.Run(ctx, t.sess, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: tz})
			})
		}
	}
	ua := t.UserAgentOverride(t.userAgent(browserUA))
	ua.UserAgentMetadata = t.hintsFor(ua.UserAgent, t.browserHints(ctx))
	steps = append(steps, func() error { return t.sess.OverrideUserAgent(ctx, ua) })
	if extra := t.ExtraHeaders(); len(extra) > 0 {
		headers := network.Headers{}
		for k, v := range extra {
			headers[k] = v
		}
		steps = append(steps, func() error {
			return cdp.Run(ctx, t.sess, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: headers})
		})
	}
	// Trawler's own scripts run in a world of their own, out of the page's
	// sight.
	scripts := []string{settleProbeScript}
	if t.set.BlockAds {
		scripts = append(scripts, hideBannersScript)
	}
	for _, src := range scripts {
		steps = append(steps, func() error {
			return cdp.Run(ctx, t.sess, cdppage.AddScriptToEvaluateOnNewDocument,
				cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: src, WorldName: settleWorld})
		})
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// languages are the languages of the tab's location: those asked, else
// the country's.
func (t *Tab) languages() []string {
	loc := t.set.Location
	if len(loc.Languages) > 0 {
		return loc.Languages
	}
	return DefaultLanguages(loc.Country)
}

// userAgentOverride is Network.setUserAgentOverride's parameters for the
// tab's options: the user agent, and the languages of its location.
func (t *Tab) UserAgentOverride(ua string) emulation.SetUserAgentOverrideParams {
	p := emulation.SetUserAgentOverrideParams{UserAgent: ua}
	if t.set.Location != nil {
		p.AcceptLanguage = AcceptLanguage(t.languages())
	}
	return p
}

// networkOn turns the Network domain on for a page that is going to be
// rendered, before it commits (so before any of its resources load).
func (t *Tab) networkOn(ctx context.Context) {
	t.mu.Lock()
	on := t.network
	t.network = true
	t.mu.Unlock()
	if !on {
		// Not awaited: the browser answers it only once the paused response
		// goes on, which the caller does next.
		go cdp.EnableNetwork(ctx, t.sess)
	}
}

// userAgent is the header-given User-Agent, else the browser's own (as
// given, without the "Headless" marker that many sites refuse), or a phone's
// when mobile.
func (t *Tab) userAgent(browserUA string) string {
	for k, v := range t.set.Headers {
		if strings.EqualFold(k, "User-Agent") {
			return v
		}
	}
	if t.set.Mobile {
		version := "120.0.0.0"
		if i := strings.Index(browserUA, "Chrome/"); i >= 0 {
			version = strings.Fields(browserUA[i+len("Chrome/"):])[0]
		}
		return "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/" + version + " Mobile Safari/537.36"
	}
	return browserUA
}

// BrowserUserAgent asks the browser for its user agent and drops the
// "Headless" marker.
func BrowserUserAgent(ctx context.Context, conn *cdp.Conn) (string, error) {
	v, err := cdp.Do(ctx, cdp.Browser(conn), browser.GetVersion, cdproto.Empty{})
	if err != nil {
		return "", err
	}
	return strings.Replace(v.UserAgent, "HeadlessChrome", "Chrome", 1), nil
}

func (t *Tab) ExtraHeaders() map[string]string {
	out := map[string]string{}
	for k, v := range t.set.Headers {
		if strings.EqualFold(k, "User-Agent") {
			continue
		}
		out[k] = v
	}
	return out
}

// onEvent runs on the connection's reader: it never blocks. The network
// events, one or more per request, are read in part with encoding/json;
// cdproto's types would decode every header and initiator of each.
func (t *Tab) onEvent(ev cdp.Event) {
	if ev.SessionID != t.sess.ID {
		if c, ok, err := cdp.Decode(ev, target.TargetCrashed); ok && err == nil && c.TargetID == t.sess.TargetID {
			t.once.crashed.Do(func() { close(t.crashed) })
		}
		return
	}
	switch ev.Method {
	case fetch.RequestPaused.Method:
		if e, _, err := cdp.Decode(ev, fetch.RequestPaused); err == nil {
			go t.onPaused(&e)
		}
	case network.RequestWillBeSent.Method:
		var e struct {
			RequestID string `json:"requestId"`
			Type      string `json:"type"`
			FrameID   string `json:"frameId"`
		}
		// A frame's own document is not waited for: a frame of another
		// site loads in a process of its own, whose end of the request
		// this session never hears (it would hold the page to the settle
		// cap); the load event waits for frames anyway.
		if json.Unmarshal(ev.Params, &e) == nil && e.Type != "WebSocket" && e.Type != "EventSource" &&
			!(e.Type == "Document" && e.FrameID != string(t.sess.TargetID)) {
			t.mu.Lock()
			t.lastNet = time.Now()
			t.inflight[e.RequestID] = t.lastNet
			t.mu.Unlock()
		}
	case network.LoadingFinished.Method, network.LoadingFailed.Method:
		var e struct {
			RequestID string `json:"requestId"`
		}
		if json.Unmarshal(ev.Params, &e) == nil {
			t.mu.Lock()
			delete(t.inflight, e.RequestID)
			t.lastNet = time.Now()
			t.mu.Unlock()
		}
	case cdppage.LoadEventFired.Method:
		t.mu.Lock()
		if !t.isLoaded {
			t.isLoaded = true
			close(t.loaded)
		}
		t.mu.Unlock()
	case cdppage.JavascriptDialogOpening.Method:
		if e, _, err := cdp.Decode(ev, cdppage.JavascriptDialogOpening); err == nil {
			go t.answerDialog(&e)
		}
	case cdppage.WindowOpen.Method:
		t.mu.Lock()
		t.opened = true
		t.mu.Unlock()
	case inspector.TargetCrashed.Method:
		t.once.crashed.Do(func() { close(t.crashed) })
	}
}

// paused is a paused request the tab answers: its answers are sent on the
// handler's own context, and what the browser says back is not waited on
// by anyone (a tab that went away has nothing to answer).
type paused struct {
	ctx context.Context
	cdp.Paused
}

func (p paused) proceed()                        { p.Continue(p.ctx) }
func (p paused) fail(reason network.ErrorReason) { p.Fail(p.ctx, reason) }
func (p paused) fulfil(status int, contentType string, body []byte) {
	p.Fulfil(p.ctx, status, contentType, body)
}

// onPaused decides the fate of one intercepted request or response.
func (t *Tab) onPaused(e *fetch.EventRequestPaused) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := paused{ctx: ctx, Paused: cdp.PausedOf(t.sess, e)}
	isMain := e.ResourceType == network.ResourceTypeDocument && e.FrameID == cdproto.FrameID(t.sess.TargetID)
	switch {
	case e.ResponseStatusCode == 0 && e.ResponseErrorReason == "":
		t.onRequest(ctx, p, e, isMain)
	case !isMain || e.ResponseErrorReason != "" || (e.ResponseStatusCode >= 300 && e.ResponseStatusCode < 400):
		p.proceed()
	default:
		t.onMainResponse(ctx, p, e)
	}
}

// onRequest decides whether a request goes out: refused while the tab is
// being cleared, when it is an asset the scrape skips, or when the guard
// or the ad blocker refuse it; answered with the Response response the
// tab is to render; else sent.
func (t *Tab) onRequest(ctx context.Context, p paused, e *fetch.EventRequestPaused, isMain bool) {
	if !t.noteRequest(e.Request.URL, isMain) {
		// The tab is being cleared for another scrape: nothing the page
		// left behind (a beacon on unload) may reach the network.
		p.fail(network.ErrorReasonAborted)
		return
	}
	if !isMain && t.set.SkipAssets && isAsset(string(e.ResourceType)) {
		p.fail(network.ErrorReasonBlockedByClient)
		return
	}
	if err := t.CheckRequest(ctx, e.Request.URL); err != nil {
		if isMain || (e.ResourceType == network.ResourceTypeFetch && t.fetching) {
			t.mu.Lock()
			if t.blocked == nil {
				t.blocked = err
			}
			t.mu.Unlock()
		}
		p.fail(network.ErrorReasonBlockedByClient)
		return
	}
	t.mu.Lock()
	pre := t.prefetched
	if isMain && pre != nil && pre.URL == e.Request.URL {
		t.prefetched = nil
		t.main = &MainResponse{URL: pre.URL, Status: pre.Status, ContentType: pre.ContentType}
	} else {
		pre = nil
	}
	t.mu.Unlock()
	if pre == nil {
		p.proceed()
		return
	}
	// A page fetched in the tab that needs rendering after all: the tab
	// renders the very response it fetched, without asking the site a
	// second time.
	t.commitSite(pre.URL)
	t.networkOn(ctx)
	p.fulfil(pre.Status, "text/html; charset=utf-8", pre.Body)
}

// onMainResponse decides what becomes of the main document's response:
// rendered (handed on), or taken from the network as it came (a document
// for parse, a text body, a server-rendered page of a static tab).
func (t *Tab) onMainResponse(ctx context.Context, p paused, e *fetch.EventRequestPaused) {
	ct := cdp.ResponseHeader(e, "Content-Type")
	main := &MainResponse{URL: e.Request.URL, Status: int(e.ResponseStatusCode), StatusText: e.ResponseStatusText, ContentType: ct}
	t.mu.Lock()
	t.main = main
	t.mu.Unlock()
	render := func() {
		t.commitSite(e.Request.URL)
		t.networkOn(ctx)
		p.proceed()
	}
	kind := detect.DocumentKind(ct, e.Request.URL)
	text := kind == "" && detect.TextType(ct) != ""
	if kind == "" && !text && !(t.set.Static && detect.IsHTML(ct)) {
		render()
		return
	}
	raw, err := p.Body(ctx)
	if err != nil {
		p.proceed()
		return
	}
	if kind == "" {
		decoded, ok := detect.Decode(raw, ct)
		// A text body the tab goes on to show (for actions, a screenshot)
		// is taken as it came all the same: what the browser shows of it
		// is a viewer, not the body.
		keep := ok && text && !t.set.Static
		if keep {
			t.mu.Lock()
			main.Text, main.TextTaken = decoded, true
			t.mu.Unlock()
		}
		if keep || !ok || !text && !detect.ServerRendered(decoded, ct) {
			render() // after all: the response goes on unchanged
			return
		}
		raw = decoded
	}
	select {
	case t.taken <- Taken{Body: raw, Binary: kind != ""}:
	default:
	}
	// The tab has nothing more to do with this document. Once the tab shows
	// a page of this site, its navigation is aborted: nothing is committed
	// and no renderer is involved. A tab on another site (a fresh tab is on
	// about:blank) is shown an empty page of this site instead, so that
	// the site's renderer starts once; aborting every navigation from
	// about:blank would start (and drop) a renderer for each.
	site := siteOf(e.Request.URL)
	t.mu.Lock()
	same := t.site == site
	t.site = site
	t.mu.Unlock()
	if same {
		p.fail(network.ErrorReasonAborted)
		return
	}
	p.fulfil(200, "text/html", []byte("<!doctype html><title></title>"))
}

// commitSite notes that the tab is about to show a page of u's site.
func (t *Tab) commitSite(u string) {
	t.mu.Lock()
	t.site = siteOf(u)
	t.mu.Unlock()
}

// siteOf is the scheme and host of a URL: what decides which renderer
// shows it.
func siteOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// Response is a page's response taken before the tab renders it: by
// FetchInPage, or by the scrape's Go client. A tab given one to render
// (Render) answers its next navigation to its URL with it.
type Response struct {
	URL         string // after redirects
	Status      int
	ContentType string
	Body        []byte // UTF-8
}

// FetchInPage takes the HTML page at u with fetch() from the document the
// tab shows, which must be of u's site: the request goes through the
// browser's network stack with the tab's cookies, user agent and
// language, and through the Fetch-domain guard like any request of the
// tab, but costs no navigation (a navigation costs the browser about four
// times the CPU, most of a crawl's budget). It returns the page when it is
// server-rendered HTML; a response to render when it is HTML that needs
// rendering (the caller navigates to it, and the tab renders that response
// without a second request); and neither when fetch() cannot take it (not
// HTML, another origin, a network error): the caller then navigates.
func (t *Tab) FetchInPage(ctx context.Context, u string) (*Response, *Response, error) {
	t.mu.Lock()
	t.fetching, t.blocked = true, nil
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.fetching = false
		t.mu.Unlock()
	}()
	headers := t.ExtraHeaders()
	if headers == nil {
		headers = map[string]string{}
	}
	if _, ok := headers["Accept"]; !ok {
		headers["Accept"] = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	}
	hj, _ := json.Marshal(headers)
	uj, _ := json.Marshal(u)
	var out struct {
		Skip   string `json:"skip"`
		Status int    `json:"status"`
		URL    string `json:"url"`
		Type   string `json:"type"`
		Kind   string `json:"kind"`
		Body   string `json:"body"`
	}
	err := t.Evaluate(ctx, fmt.Sprintf(fetchScript, uj, hj, detect.DocumentTypesJS, detect.DocumentExtensionsJS, detect.UnlabelledTypesJS), &out)
	t.mu.Lock()
	blocked := t.blocked
	t.mu.Unlock()
	if blocked != nil {
		return nil, nil, blocked
	}
	if err != nil {
		var se *ScriptError
		if errors.As(err, &se) {
			return nil, nil, nil // a network error: navigating tells it properly
		}
		return nil, nil, err
	}
	if out.Skip != "" {
		return nil, nil, nil
	}
	body := []byte(out.Body)
	switch out.Kind {
	case "text":
		return t.fetched(out.URL, out.Status, out.Type, body), nil, nil
	case "binary":
		raw, err := base64.StdEncoding.DecodeString(out.Body)
		if err != nil {
			return nil, nil, err
		}
		return t.fetched(out.URL, out.Status, out.Type, raw), nil, nil
	}
	if !detect.ServerRendered(body, "text/html") {
		return nil, &Response{URL: out.URL, Status: out.Status, ContentType: out.Type, Body: body}, nil
	}
	return t.fetched(out.URL, out.Status, out.Type, body), nil, nil
}

func (t *Tab) fetched(u string, status int, contentType string, body []byte) *Response {
	t.mu.Lock()
	t.main = &MainResponse{URL: u, Status: status, ContentType: contentType}
	t.mu.Unlock()
	return &Response{URL: u, Status: status, ContentType: contentType, Body: body}
}

// fetchScript fetches %[1]s with headers %[2]s from the current document;
// %[3]s, %[4]s and %[5]s match the media types and paths of documents and
// the media types that leave the path to say (as detect.DocumentKind does).
const fetchScript = `(async () => {
  const u = %[1]s;
  if (new URL(u).origin !== location.origin) return {skip: "origin"};
  const r = await fetch(u, {credentials: "include", redirect: "follow", headers: %[2]s});
  const type = r.headers.get("content-type") || "";
  const head = {status: r.status, url: r.url, type};
  if (r.type !== "basic") {
    r.body && r.body.cancel();
    return {skip: "origin"};
  }
  // text() would decode every body as UTF-8: decode by the charset of the
  // header, else of an HTML page's <meta> tag, as a navigation would. A
  // label TextDecoder does not know, or an unlabelled body that is not
  // UTF-8, is left to the navigation (null): the tab decodes it as Go does
  // (detect.Decode), or leaves it to the browser.
  const decode = async (html) => {
    const buf = await r.arrayBuffer();
    if (/^\s*application\/([\w.-]+\+)?json\s*(;|$)/i.test(type)) {
      // JSON is UTF-8 whatever the header names, unless it is not UTF-8.
      try { return new TextDecoder("utf-8", {fatal: true}).decode(buf); } catch (e) {}
    }
    let cs = (/charset\s*=\s*"?([^\s;"]+)/i.exec(type) || [])[1];
    if (!cs && html) {
      // The first 1024 bytes, as a browser's prescan (and detect.Decode) reads.
      const start = new TextDecoder("windows-1252").decode(new Uint8Array(buf, 0, Math.min(buf.byteLength, 1024)));
      cs = (/<meta[^>]+charset\s*=\s*["']?([\w-]+)/i.exec(start) || [])[1];
    }
    try { return new TextDecoder(cs || "utf-8", {fatal: !cs}).decode(buf); } catch (e) { return null; }
  };
  if (%[3]s.test(type) || (%[4]s.test(new URL(r.url).pathname) && (!type.trim() || %[5]s.test(type)))) {
    const buf = new Uint8Array(await r.arrayBuffer());
    let s = "";
    for (let i = 0; i < buf.length; i += 0x8000) s += String.fromCharCode.apply(null, buf.subarray(i, i + 0x8000));
    return {...head, kind: "binary", body: btoa(s)};
  }
  // As detect.IsHTML and detect.TextType say.
  const kind = /^\s*(text\/html|application\/xhtml\+xml)\s*(;|$)/i.test(type) ? "html" :
    /^\s*(text\/[\w.+-]+|application\/(json|xml|javascript|[\w.-]+\+(json|xml)))\s*(;|$)/i.test(type) ? "text" : "";
  if (!kind) {
    r.body && r.body.cancel();
    return {skip: "type"};
  }
  const body = await decode(kind === "html");
  return body === null ? {skip: "charset"} : {...head, kind, body};
})()`

// checkRequest applies the network guard and the ad blocker to a URL.
func (t *Tab) CheckRequest(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	switch u.Scheme {
	case "http", "https", "ws", "wss":
	case "data", "blob", "about":
		return nil
	default:
		return fmt.Errorf("scheme %s is not fetched", u.Scheme)
	}
	if t.set.BlockAds && IsAdHost(u.Hostname()) {
		return ErrAdBlocked
	}
	if err := t.set.Guard.CheckHost(ctx, u.Hostname()); err != nil {
		return err
	}
	// What a page took from a non-public address is never shared with
	// another team, nor served from the cache once the guard is on.
	if t.reach != nil && t.reach.CheckHost(ctx, u.Hostname()) != nil {
		t.mu.Lock()
		t.private = true
		t.mu.Unlock()
	}
	return nil
}

// reachedPrivate reports whether a request since the last reset went to a
// non-public address.
func (t *Tab) reachedPrivate() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.private
}

var ErrAdBlocked = errors.New("blocked as an ad or tracker")

// navigate loads u and returns once the main document has been answered.
func (t *Tab) Navigate(ctx context.Context, u string) error {
	nav, err := cdp.Do(ctx, t.sess, cdppage.Navigate, cdppage.NavigateParams{URL: u})
	if err != nil {
		return err
	}
	t.mu.Lock()
	blocked := t.blocked
	t.mu.Unlock()
	if blocked != nil {
		return blocked
	}
	if nav.ErrorText != "" {
		return &LoadError{URL: u, Reason: nav.ErrorText}
	}
	return nil
}

// evaluate runs an expression in the page (awaiting a promise) and decodes
// its JSON value into v.
func (t *Tab) Evaluate(ctx context.Context, expr string, v any) error {
	var res cdp.EvalResult
	err := t.call(ctx, runtime.CommandEvaluate, runtime.EvaluateParams{Expression: expr, AwaitPromise: new(true),
		ReturnByValue: new(true), UserGesture: new(true)}, &res)
	if err != nil {
		return err
	}
	if msg := res.Exception(); msg != "" {
		return &ScriptError{Message: msg}
	}
	if v != nil && len(res.Result.Value) > 0 {
		return json.Unmarshal(res.Result.Value, v)
	}
	return nil
}

// shownText is the text the tab shows of a text response (JSON, XML,
// plain text) as the browser decoded it, for a body the network layer did
// not hand over: an XML document as it serializes, else the viewer's text.
func (t *Tab) ShownText(ctx context.Context) ([]byte, error) {
	var text string
	err := t.Evaluate(ctx, `document.documentElement instanceof HTMLElement ?
  ((document.body && document.body.querySelector("pre")) || document.body || document.documentElement).textContent :
  new XMLSerializer().serializeToString(document)`, &text)
	return []byte(text), err
}

// ScriptError is an exception thrown by JavaScript run in the page.
type ScriptError struct{ Message string }

func (e *ScriptError) Error() string { return "script error: " + e.Message }

// html returns the page's current HTML (with its doctype) and URL.
func (t *Tab) HTML(ctx context.Context) (string, string, error) {
	var out struct {
		HTML string `json:"html"`
		URL  string `json:"url"`
	}
	err := t.Evaluate(ctx, `({html: (document.doctype ? new XMLSerializer().serializeToString(document.doctype) + "\n" : "") + document.documentElement.outerHTML, url: location.href})`, &out)
	return out.HTML, out.URL, err
}

// screenshot captures the page as a data URL.
func (t *Tab) Screenshot(ctx context.Context, fullPage bool, quality int, vp *Viewport) (string, error) {
	if vp != nil {
		err := cdp.Run(ctx, t.sess, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
			Width: int64(vp.Width), Height: int64(vp.Height), DeviceScaleFactor: 1, Mobile: t.set.Mobile})
		if err != nil {
			return "", err
		}
	}
	params := cdppage.CaptureScreenshotParams{Format: cdppage.CaptureScreenshotFormatPng}
	mime := "image/png"
	if quality > 0 {
		q := int64(quality)
		params.Format, params.Quality, mime = cdppage.CaptureScreenshotFormatJpeg, &q, "image/jpeg"
	}
	if fullPage {
		m, err := cdp.Do(ctx, t.sess, cdppage.GetLayoutMetrics, cdproto.Empty{})
		if err != nil {
			return "", err
		}
		if m.CSSContentSize == nil {
			return "", errors.New("the page has no layout")
		}
		// Beyond this height Chromium's capture fails; the top is what
		// matters.
		height := min(m.CSSContentSize.Height, 30000)
		params.CaptureBeyondViewport = new(true)
		params.Clip = &cdppage.Viewport{Width: m.CSSContentSize.Width, Height: height, Scale: 1}
	}
	// The image is read as the browser's base64, which the data URL is:
	// cdproto's result would decode it, to be encoded again.
	var shot struct {
		Data string `json:"data"`
	}
	if err := t.call(ctx, cdppage.CommandCaptureScreenshot, params, &shot); err != nil {
		return "", err
	}
	return "data:" + mime + ";base64," + shot.Data, nil
}

// close disposes of the browser context, which closes its tab; a tab in a
// context it shares with other tabs (OpenShared) closes itself, and the last
// one out disposes of the context.
func (t *Tab) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	t.conn.OnEvent(nil)
	if t.shared != nil {
		if t.sess.TargetID != "" {
			cdp.Run(ctx, cdp.Browser(t.conn), target.CloseTarget, target.CloseTargetParams{TargetID: t.sess.TargetID})
		}
		t.shared.Leave(ctx)
		return
	}
	if t.contextID != "" {
		DisposeContext(ctx, t.conn, t.contextID)
	}
	if t.route != nil {
		t.route.Close()
	}
}

// DisposeContext disposes of the browser context id, closing its tabs.
func DisposeContext(ctx context.Context, conn *cdp.Conn, id string) error {
	return cdp.Run(ctx, cdp.Browser(conn), target.DisposeBrowserContext,
		target.DisposeBrowserContextParams{BrowserContextID: cdproto.BrowserContextID(id)})
}

// LoadError is a page that could not be loaded at all.
type LoadError struct {
	URL    string
	Reason string
}

func (e *LoadError) Error() string { return fmt.Sprintf("could not load %s: %s", e.URL, e.Reason) }

// showsSite reports whether the tab shows a page of u's site.
func (t *Tab) ShowsSite(u string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.site != "" && t.site == siteOf(u)
}
