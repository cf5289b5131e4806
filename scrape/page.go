package scrape

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
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

// tab is one scrape's page: a fresh browser context (its own cookies and
// storage) holding one tab on a leased browser, driven over a flattened CDP
// session. Every request the tab makes passes the network guard and the ad
// blocker through the Fetch domain; the main document's response is seen
// there too, which is how documents (PDF) are taken as bytes, how a
// server-rendered page or a text body is taken without rendering it, and
// how a text body the tab shows is known as it came.
type tab struct {
	conn  *cdp.Conn
	log   *slog.Logger
	opts  *Options
	guard *netguard.Cache
	// sess is the tab's own CDP session, attached to its target.
	sess      cdp.Session
	contextID string
	// route is the context's way through the egress proxy: whose its
	// traffic is, and which upstream it leaves through. Nil: the context
	// uses its browser's.
	route *egress.Route
	// shared, when not nil, is the context (and route) the tab shares
	// with other lanes' tabs of its job; the tab owns neither.
	shared *sharedContext
	// static: take an HTML document from the network without rendering it
	// when it looks complete.
	static bool
	// reach, while private networks are allowed, tells which requests go
	// to non-public addresses (see private).
	reach *netguard.Cache
	// probe is the name of the settle probe on the page's window.
	probe string
	// in0 and out0 are the route's byte counts when the tab was readied
	// for its scrape, and routeWarning what binding the route said.
	in0, out0    int64
	routeWarning string

	mu       sync.Mutex
	inflight map[string]struct{}
	lastNet  time.Time
	main     *mainResponse
	blocked  error         // why the main document was refused
	private  bool          // a request since the last reset went to a non-public address
	loaded   chan struct{} // closed on the load event; replaced by reset
	isLoaded bool
	site     string // the site of the page the tab shows
	fetching bool   // a fetchInPage is under way
	// prefetched is a page fetchInPage took that must be rendered: the
	// tab's next navigation to its URL is answered with it.
	prefetched *prefetched
	network    bool // the Network domain is on
	// origins is the origin of every http(s) request the tab saw,
	// answered from the network or not (a rendered prefetch), and tops the
	// site of every main-frame document: with the route's list of hosts,
	// what a recycled tab clears. clearing: the tab is being cleared, and
	// refuses every request. opened: the page opened a window.
	origins, tops map[string]struct{}
	clearing      bool
	opened        bool
	taken         chan takenBody // the main document, taken from the network
	crashed       chan struct{}
	once          struct{ crashed sync.Once }
}

// mainResponse is the main frame's final document response.
type mainResponse struct {
	URL         string
	Status      int
	StatusText  string
	ContentType string
	// text is a text response's body (JSON, XML, plain text), decoded,
	// taken as it came when the browser goes on to show it: the page it
	// shows is a viewer of the body, not the body. taken says it was.
	text  []byte
	taken bool
}

// takenBody is a main document captured at the network layer.
type takenBody struct {
	body   []byte
	binary bool // a document for parse, not HTML
}

// blankTab creates a fresh browser context holding one blank tab, attached
// over conn, with its renderer started (Page.enable answered): the slow
// part of opening a tab, done ahead of time for spare tabs.
//
// route, when given, is the context's own way through the egress proxy
// (closed with the tab), with no bypass: loopback goes through it too.
func blankTab(ctx context.Context, conn *cdp.Conn, route *egress.Route) (*tab, error) {
	id, err := newContext(ctx, conn, route)
	if err != nil {
		if route != nil {
			route.Close()
		}
		return nil, err
	}
	p := newTab(conn, route)
	p.contextID = id
	if err := p.open(ctx, id); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// newContext creates a browser context over conn, disposed when conn
// closes; route, when given, is its way through the egress proxy.
func newContext(ctx context.Context, conn *cdp.Conn, route *egress.Route) (string, error) {
	dispose := true
	p := target.CreateBrowserContextParams{DisposeOnDetach: &dispose}
	if route != nil {
		p.ProxyServer, p.ProxyBypassList = route.URL(), "<-loopback>"
	}
	id, err := cdp.NewContext(ctx, conn, p)
	return string(id), err
}

// open opens t's blank tab in browser context id and attaches to it.
func (t *tab) open(ctx context.Context, id string) error {
	created, err := cdp.Do(ctx, cdp.Browser(t.conn), target.CreateTarget,
		target.CreateTargetParams{URL: "about:blank", BrowserContextID: cdproto.BrowserContextID(id)})
	if err != nil {
		return err
	}
	t.sess.TargetID = created.TargetID
	return t.attach(ctx)
}

func newTab(conn *cdp.Conn, route *egress.Route) *tab {
	return &tab{conn: conn, inflight: map[string]struct{}{}, lastNet: time.Now(), route: route,
		loaded: make(chan struct{}), taken: make(chan takenBody, 1), crashed: make(chan struct{})}
}

// attach opens a CDP session of its own on t's target, with the Page
// domain on.
func (t *tab) attach(ctx context.Context) error {
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
func (t *tab) reset() {
	t.mu.Lock()
	t.main, t.blocked, t.private = nil, nil, false
	t.inflight = map[string]struct{}{}
	t.lastNet = time.Now()
	if t.isLoaded {
		t.loaded, t.isLoaded = make(chan struct{}), false
	}
	t.mu.Unlock()
	select {
	case <-t.taken:
	default:
	}
}

// setup readies a blank tab for one scrape.
func (t *tab) setup(ctx context.Context, opts *Options, guard *netguard.Cache, static bool, ua string, log *slog.Logger) error {
	t.opts, t.guard, t.static, t.log = opts, guard, static, log
	if guard.Guard.AllowPrivate {
		t.reach = &netguard.Cache{Guard: &netguard.Guard{Resolver: guard.Guard.Resolver}, TTL: guard.TTL}
	}
	if err := t.prepare(ctx, ua); err != nil {
		t.close()
		return err
	}
	return nil
}

// call sends a command cdproto has no type for, or whose reply is read in
// part, on the tab's session.
func (t *tab) call(ctx context.Context, method string, params, result any) error {
	return t.sess.Call(ctx, method, params, result)
}

// prepare sets up interception, emulation and headers before navigation.
func (t *tab) prepare(ctx context.Context, browserUA string) error {
	// The Network domain (which the smart wait's idle tracking needs) costs
	// the browser an event per request and per chunk of data, and a copy of
	// every body: a static tab turns it on only when a page turns out to
	// need rendering (see networkOn), before that page's resources load.
	var steps []func() error
	if !t.static || len(t.extraHeaders()) > 0 {
		steps = append(steps, func() error { return cdp.EnableNetwork(ctx, t.sess) })
		t.mu.Lock()
		t.network = true
		t.mu.Unlock()
	}
	metrics := emulation.SetDeviceMetricsOverrideParams{Width: 1920, Height: 1080, DeviceScaleFactor: 1}
	if t.opts.Mobile {
		metrics = emulation.SetDeviceMetricsOverrideParams{Width: 390, Height: 844, DeviceScaleFactor: 3, Mobile: true}
	}
	steps = append(steps,
		func() error {
			return cdp.Intercept(ctx, t.sess, cdp.RequestsAndDocuments...)
		},
		func() error {
			return cdp.Run(ctx, t.sess, security.SetIgnoreCertificateErrors,
				security.SetIgnoreCertificateErrorsParams{Ignore: t.opts.SkipTLSVerification})
		},
		func() error { return cdp.Run(ctx, t.sess, emulation.SetDeviceMetricsOverride, metrics) })
	if t.opts.Mobile {
		steps = append(steps, func() error {
			return cdp.Run(ctx, t.sess, emulation.SetTouchEmulationEnabled,
				emulation.SetTouchEmulationEnabledParams{Enabled: true, MaxTouchPoints: 5})
		})
	}
	if loc := t.opts.Location; loc != nil {
		steps = append(steps, func() error {
			return cdp.Run(ctx, t.sess, emulation.SetLocaleOverride, emulation.SetLocaleOverrideParams{Locale: t.languages()[0]})
		})
		if tz := countryTimezone(loc.Country); tz != "" {
			steps = append(steps, func() error {
				return cdp.Run(ctx, t.sess, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: tz})
			})
		}
	}
	ua := t.userAgentOverride(t.userAgent(browserUA))
	steps = append(steps, func() error { return t.sess.OverrideUserAgent(ctx, ua) })
	if extra := t.extraHeaders(); len(extra) > 0 {
		headers := network.Headers{}
		for k, v := range extra {
			headers[k] = v
		}
		steps = append(steps, func() error {
			return cdp.Run(ctx, t.sess, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: headers})
		})
	}
	scripts := []string{}
	if t.opts.BlockAds {
		scripts = append(scripts, hideBannersScript)
	}
	t.probe = newProbeName()
	scripts = append(scripts, fmt.Sprintf(settleProbeScript, t.probe))
	for _, src := range scripts {
		steps = append(steps, func() error {
			return cdp.Run(ctx, t.sess, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: src})
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
func (t *tab) languages() []string {
	loc := t.opts.Location
	if len(loc.Languages) > 0 {
		return loc.Languages
	}
	return defaultLanguages(loc.Country)
}

// userAgentOverride is Network.setUserAgentOverride's parameters for the
// tab's options: the user agent, and the languages of its location.
func (t *tab) userAgentOverride(ua string) emulation.SetUserAgentOverrideParams {
	p := emulation.SetUserAgentOverrideParams{UserAgent: ua}
	if t.opts.Location != nil {
		p.AcceptLanguage = acceptLanguage(t.languages())
	}
	return p
}

// networkOn turns the Network domain on for a page that is going to be
// rendered, before it commits (so before any of its resources load).
func (t *tab) networkOn(ctx context.Context) {
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
func (t *tab) userAgent(browserUA string) string {
	for k, v := range t.opts.Headers {
		if strings.EqualFold(k, "User-Agent") {
			return v
		}
	}
	if t.opts.Mobile {
		version := "120.0.0.0"
		if i := strings.Index(browserUA, "Chrome/"); i >= 0 {
			version = strings.Fields(browserUA[i+len("Chrome/"):])[0]
		}
		return "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/" + version + " Mobile Safari/537.36"
	}
	return browserUA
}

// browserUserAgent asks the browser for its user agent and drops the
// "Headless" marker.
func browserUserAgent(ctx context.Context, conn *cdp.Conn) (string, error) {
	v, err := cdp.Do(ctx, cdp.Browser(conn), browser.GetVersion, cdproto.Empty{})
	if err != nil {
		return "", err
	}
	return strings.Replace(v.UserAgent, "HeadlessChrome", "Chrome", 1), nil
}

func (t *tab) extraHeaders() map[string]string {
	out := map[string]string{}
	for k, v := range t.opts.Headers {
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
func (t *tab) onEvent(ev cdp.Event) {
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
			t.inflight[e.RequestID] = struct{}{}
			t.lastNet = time.Now()
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
func (t *tab) onPaused(e *fetch.EventRequestPaused) {
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
// or the ad blocker refuse it; answered with the prefetched response the
// tab is to render; else sent.
func (t *tab) onRequest(ctx context.Context, p paused, e *fetch.EventRequestPaused, isMain bool) {
	if !t.noteRequest(e.Request.URL, isMain) {
		// The tab is being cleared for another scrape: nothing the page
		// left behind (a beacon on unload) may reach the network.
		p.fail(network.ErrorReasonAborted)
		return
	}
	if !isMain && t.opts.skipsAssets() && isAsset(string(e.ResourceType)) {
		p.fail(network.ErrorReasonBlockedByClient)
		return
	}
	if err := t.checkRequest(ctx, e.Request.URL); err != nil {
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
	if isMain && pre != nil && pre.url == e.Request.URL {
		t.prefetched = nil
		t.main = &mainResponse{URL: pre.url, Status: pre.status, ContentType: pre.contentType}
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
	t.commitSite(pre.url)
	t.networkOn(ctx)
	p.fulfil(pre.status, "text/html; charset=utf-8", pre.body)
}

// onMainResponse decides what becomes of the main document's response:
// rendered (handed on), or taken from the network as it came (a document
// for parse, a text body, a server-rendered page of a static tab).
func (t *tab) onMainResponse(ctx context.Context, p paused, e *fetch.EventRequestPaused) {
	ct := cdp.ResponseHeader(e, "Content-Type")
	main := &mainResponse{URL: e.Request.URL, Status: int(e.ResponseStatusCode), StatusText: e.ResponseStatusText, ContentType: ct}
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
	if kind == "" && !text && !(t.static && detect.IsHTML(ct)) {
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
		keep := ok && text && !t.static
		if keep {
			t.mu.Lock()
			main.text, main.taken = decoded, true
			t.mu.Unlock()
		}
		if keep || !ok || !text && !detect.ServerRendered(decoded, ct) {
			render() // after all: the response goes on unchanged
			return
		}
		raw = decoded
	}
	select {
	case t.taken <- takenBody{body: raw, binary: kind != ""}:
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
func (t *tab) commitSite(u string) {
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

// prefetched is a response fetchInPage took.
type prefetched struct {
	url         string // after redirects
	status      int
	contentType string
	body        []byte // UTF-8
}

// fetchInPage takes the HTML page at u with fetch() from the document the
// tab shows, which must be of u's site: the request goes through the
// browser's network stack with the tab's cookies, user agent and
// language, and through the Fetch-domain guard like any request of the
// tab, but costs no navigation (a navigation costs the browser about four
// times the CPU, most of a crawl's budget). It returns the page when it is
// server-rendered HTML; a prefetched response when it is HTML that needs
// rendering (the caller navigates to it, and the tab renders that response
// without a second request); and neither when fetch() cannot take it (not
// HTML, another origin, a network error): the caller then navigates.
func (t *tab) fetchInPage(ctx context.Context, u string) (*page, *prefetched, error) {
	t.mu.Lock()
	t.fetching, t.blocked = true, nil
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.fetching = false
		t.mu.Unlock()
	}()
	headers := t.extraHeaders()
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
	err := t.evaluate(ctx, fmt.Sprintf(fetchScript, uj, hj, detect.DocumentTypesJS, detect.DocumentExtensionsJS, detect.UnlabelledTypesJS), &out)
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
		return nil, &prefetched{url: out.URL, status: out.Status, contentType: out.Type, body: body}, nil
	}
	return t.fetched(out.URL, out.Status, out.Type, body), nil, nil
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

func (t *tab) fetched(u string, status int, contentType string, body []byte) *page {
	t.mu.Lock()
	t.main = &mainResponse{URL: u, Status: status, ContentType: contentType}
	t.mu.Unlock()
	return &page{engine: "browser-fetch", status: status, finalURL: u, contentType: contentType, body: body}
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
func (t *tab) checkRequest(ctx context.Context, raw string) error {
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
	if t.opts.BlockAds && isAdHost(u.Hostname()) {
		return errAdBlocked
	}
	if err := t.guard.CheckHost(ctx, u.Hostname()); err != nil {
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
func (t *tab) reachedPrivate() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.private
}

var errAdBlocked = errors.New("blocked as an ad or tracker")

// navigate loads u and returns once the main document has been answered.
func (t *tab) navigate(ctx context.Context, u string) error {
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
func (t *tab) evaluate(ctx context.Context, expr string, v any) error {
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
func (t *tab) shownText(ctx context.Context) ([]byte, error) {
	var text string
	err := t.evaluate(ctx, `document.documentElement instanceof HTMLElement ?
  ((document.body && document.body.querySelector("pre")) || document.body || document.documentElement).textContent :
  new XMLSerializer().serializeToString(document)`, &text)
	return []byte(text), err
}

// ScriptError is an exception thrown by JavaScript run in the page.
type ScriptError struct{ Message string }

func (e *ScriptError) Error() string { return "script error: " + e.Message }

// html returns the page's current HTML (with its doctype) and URL.
func (t *tab) html(ctx context.Context) (string, string, error) {
	var out struct {
		HTML string `json:"html"`
		URL  string `json:"url"`
	}
	err := t.evaluate(ctx, `({html: (document.doctype ? new XMLSerializer().serializeToString(document.doctype) + "\n" : "") + document.documentElement.outerHTML, url: location.href})`, &out)
	return out.HTML, out.URL, err
}

// screenshot captures the page as a data URL.
func (t *tab) screenshot(ctx context.Context, fullPage bool, quality int, vp *Viewport) (string, error) {
	if vp != nil {
		err := cdp.Run(ctx, t.sess, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
			Width: int64(vp.Width), Height: int64(vp.Height), DeviceScaleFactor: 1, Mobile: t.opts.Mobile})
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
// context it shares with other tabs (crew.go) closes itself, and the last
// one out disposes of the context.
func (t *tab) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	t.conn.OnEvent(nil)
	if t.shared != nil {
		if t.sess.TargetID != "" {
			cdp.Run(ctx, cdp.Browser(t.conn), target.CloseTarget, target.CloseTargetParams{TargetID: t.sess.TargetID})
		}
		t.shared.leave(ctx)
		return
	}
	if t.contextID != "" {
		disposeContext(ctx, t.conn, t.contextID)
	}
	if t.route != nil {
		t.route.Close()
	}
}

// disposeContext disposes of the browser context id, closing its tabs.
func disposeContext(ctx context.Context, conn *cdp.Conn, id string) error {
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
func (t *tab) showsSite(u string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.site != "" && t.site == siteOf(u)
}
