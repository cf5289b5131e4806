package profiles

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"time"

	cdproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	cdppage "github.com/chromedp/cdproto/page"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"

	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/cdp/rawjson"
)

// This file is the helper tabs: tabs of ours that visit origins, with a page of ours that runs
// state.js, and answer every request they make themselves, so that no visit reaches the network
// or a site's service worker.

const (
	// helperPath is the path the helper tab visits on each origin. Nothing is fetched: the tab
	// answers its own requests, with a page of ours that runs state.js and with the storage that
	// page asks for.
	helperPath = "/__trawler_profile__"
	// originTimeout bounds the visit of one origin: navigating there and reading or writing its
	// storage.
	originTimeout = 30 * time.Second
	// closeTimeout bounds the clean-up calls made after the caller's context may have ended.
	closeTimeout = 5 * time.Second
)

//go:embed state.js
var stateJS string

// maxTabs is how many helper tabs visit origins at once: one per two CPUs, up to four. A visit is
// mostly the browser starting a renderer, so parallel tabs help where there are cores to spare and
// only add contention where there are not (two tabs on two cores measured slower than one).
var maxTabs = min(max(runtime.NumCPU()/2, 1), 4)

// helper owns the helper tabs of one Capture or Restore and the connection's event handler, which
// routes each tab's events to it.
type helper struct {
	// precompress has a capture compress each large part of the storage as it comes, for a save.
	precompress bool
	conn        *cdp.Conn
	bulk        *bulk // conn's transport, for the messages that carry storage
	contextID   string
	// answering counts the calls answering requests in flight.
	answering sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	targets []target.ID     // every tab opened, to close
	tabs    map[string]*tab // the attached ones, by session id
}

// tab is a tab of our own that visits origins to read or write their storage. Its Fetch domain
// answers every request the tab makes: the visit of an origin with a page of ours, so that any
// origin can be visited without reaching the network or the site's service worker, and the page's
// requests for the storage to restore with that storage.
type tab struct {
	h       *helper
	session cdp.Session
	// world, when not 0, is the script world of ours in a page of the user's (see borrow), where
	// the tab's scripts run.
	world cdpruntime.ExecutionContextID
	// notify gets a token after each load.
	notify chan struct{}

	// Guarded by h.mu:
	scheme    string                    // of the origin being visited
	page      []byte                    // the helper page of the visit
	loaded    map[cdproto.LoaderID]bool // loader ids whose document has loaded
	restoring *restoreData              // the storage a restore sends the page
	dataErr   error                     // why answering the page's request for it failed
}

// newHelper starts routing conn's events to the helper tabs it opens.
func newHelper(conn *cdp.Conn, b *bulk, browserContextID string) *helper {
	h := &helper{conn: conn, bulk: b, contextID: browserContextID, tabs: map[string]*tab{}}
	conn.OnEvent(h.event)
	return h
}

// openedTab is the outcome of helper.open.
type openedTab struct {
	t   *tab
	err error
}

// eachOrigin calls fn for the indexes 0..n-1 on up to maxTabs helper tabs at once, and returns the
// first error, which stops the other calls. first, when not nil, brings the first tab, already
// being opened.
func (h *helper) eachOrigin(ctx context.Context, n int, first <-chan openedTab, fn func(ctx context.Context, t *tab, i int) error) error {
	if n == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	var (
		wg       sync.WaitGroup
		failOnce sync.Once
		failed   error
	)
	fail := func(err error) {
		failOnce.Do(func() {
			failed = err
			cancel()
		})
	}
	for k := range min(n, maxTabs) {
		wg.Go(func() {
			var t *tab
			var err error
			if k == 0 && first != nil {
				o := <-first
				t, err = o.t, o.err
			} else {
				t, err = h.open(ctx)
			}
			if err != nil {
				fail(err)
				return
			}
			for i := range next {
				if ctx.Err() != nil {
					return
				}
				if err := fn(ctx, t, i); err != nil {
					fail(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if failed == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return failed
}

// createAttempts are the Target.createTarget options tried in turn: a hidden tab (a target of type
// "other", in no tab strip, closed with our connection) where the browser supports it, else a
// background tab.
var createAttempts = []target.CreateTargetParams{
	{Hidden: new(true), Background: new(true)},
	{Background: new(true)},
	{},
}

// open opens and prepares a helper tab. The tab is created and attached to in two steps, rather
// than with cdp.OpenTarget, so that only a browser's refusal of the options tries the next ones.
func (h *helper) open(ctx context.Context) (*tab, error) {
	var created target.CreateTargetResult
	var err error
	for _, p := range createAttempts {
		p.URL, p.BrowserContextID = "about:blank", cdproto.BrowserContextID(h.contextID)
		if created, err = cdp.Do(ctx, cdp.Browser(h.conn), target.CreateTarget, p); err == nil {
			break
		}
		var cdpErr *cdp.Error
		if !errors.As(err, &cdpErr) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("opening a helper tab: %w", err)
	}
	h.mu.Lock()
	h.targets = append(h.targets, created.TargetID)
	h.mu.Unlock()

	s, err := cdp.Attach(ctx, h.conn, created.TargetID)
	if err != nil {
		return nil, fmt.Errorf("attaching to a helper tab: %w", err)
	}
	t := &tab{h: h, session: s, loaded: map[cdproto.LoaderID]bool{}, notify: make(chan struct{}, 1)}
	h.mu.Lock()
	h.tabs[s.ID] = t
	h.mu.Unlock()

	// The steps are written one after the other, in order, and their replies awaited together.
	var noBuffer int64 // the tab's requests are answered by us: nothing to keep of them
	steps := []rawCommand{
		call(s.ID, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*"}}}),
		call(s.ID, network.Enable, network.EnableParams{MaxTotalBufferSize: &noBuffer, MaxResourceBufferSize: &noBuffer}),
		call(s.ID, network.SetBypassServiceWorker, network.SetBypassServiceWorkerParams{Bypass: true}),
		call(s.ID, cdppage.Enable, cdppage.EnableParams{}),
		call(s.ID, cdppage.SetLifecycleEventsEnabled, cdppage.SetLifecycleEventsEnabledParams{Enabled: true}),
	}
	var waits []func(context.Context) ([]byte, error)
	for _, step := range steps {
		wait, err := h.bulk.start(step)
		if err != nil {
			return nil, fmt.Errorf("preparing a helper tab: %w", err)
		}
		waits = append(waits, wait)
	}
	for _, wait := range waits {
		if _, err := wait(ctx); err != nil {
			return nil, fmt.Errorf("preparing a helper tab: %w", err)
		}
	}
	return t, nil
}

// close closes the helper tabs and waits for the request answers in flight.
func (h *helper) close() {
	h.mu.Lock()
	h.closed = true
	targets := h.targets
	h.mu.Unlock()
	for _, id := range targets {
		cdp.CloseTarget(h.conn, id)
	}
	h.answering.Wait()
	h.conn.OnEvent(nil)
}

// answerKind is how a helper tab's request is answered.
type answerKind int

const (
	answerRefuse answerKind = iota // a refused connection
	answerPage                     // the helper page
	answerData                     // a part of the storage to restore
)

// event runs on the connection's reader: it records loads and hands requests to goroutines.
func (h *helper) event(e cdp.Event) {
	if p, ok, err := cdp.Decode(e, fetch.RequestPaused); ok {
		if err == nil {
			h.paused(e.SessionID, p)
		}
		return
	}
	if p, ok, err := cdp.Decode(e, cdppage.LifecycleEvent); ok && err == nil && p.Name == "load" {
		h.loaded(e.SessionID, p.LoaderID)
	}
}

// paused hands a request of the tab of session to a goroutine that answers it.
func (h *helper) paused(session string, p fetch.EventRequestPaused) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.tabs[session]
	if h.closed || t == nil {
		return
	}
	a := answer{t: t, requestID: p.RequestID}
	var reqURL string
	if p.Request != nil {
		reqURL = p.Request.URL
	}
	if u, err := url.Parse(reqURL); err == nil && u.Path == helperPath && u.Scheme == t.scheme {
		switch {
		case p.ResourceType == network.ResourceTypeDocument:
			a.kind, a.page = answerPage, t.page
		case p.ResourceType == network.ResourceTypeFetch || p.ResourceType == network.ResourceTypeXHR:
			if part, ok := strings.CutPrefix(u.RawQuery, dataQuery); ok && t.restoring != nil {
				a.kind, a.data, a.part = answerData, t.restoring, part
			}
		}
	}
	h.answering.Add(1)
	go h.answer(a)
}

// loaded records that the document of loader has loaded in the tab of session.
func (h *helper) loaded(session string, loader cdproto.LoaderID) {
	h.mu.Lock()
	t := h.tabs[session]
	if t != nil {
		t.loaded[loader] = true
	}
	h.mu.Unlock()
	if t != nil {
		select {
		case t.notify <- struct{}{}:
		default:
		}
	}
}

// answer is how to answer one paused request of a tab.
type answer struct {
	t         *tab
	requestID fetch.RequestID
	kind      answerKind
	page      []byte       // answerPage: the document
	data      *restoreData // answerData: the storage
	part      string       // answerData: the part of it asked for
}

// answer fulfils a helper tab's request for the helper page with that page, its request for a
// part of the storage to restore with that part, and fails every other request, among them the
// browser's automatic upgrade of an http visit to https: a refused connection makes the browser
// fall back to the http origin being visited (a request blocked by the client would not).
func (h *helper) answer(a answer) {
	defer h.answering.Done()
	timeout := closeTimeout
	if a.kind == answerData {
		timeout = originTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	switch a.kind {
	case answerPage:
		cdp.Run(ctx, a.t.session, fetch.FulfillRequest, fetch.FulfillRequestParams{
			RequestID:    a.requestID,
			ResponseCode: 200,
			ResponseHeaders: []*fetch.HeaderEntry{
				{Name: "Content-Type", Value: "text/html; charset=utf-8"},
				{Name: "Cache-Control", Value: "no-store"},
			},
			Body: a.page,
		})
		return
	case answerData:
		err := h.answerData(ctx, a)
		if err == nil {
			return
		}
		h.mu.Lock()
		a.t.dataErr = fmt.Errorf("answering the page's request for the storage: %w", err)
		h.mu.Unlock()
	}
	cdp.Run(ctx, a.t.session, fetch.FailRequest,
		fetch.FailRequestParams{RequestID: a.requestID, ErrorReason: network.ErrorReasonConnectionRefused})
}

// script is the expression that runs state.js in mode on origin: its value is a promise (restore)
// or an object of promises, one per part (capture).
func script(mode, origin string) string {
	args := appendJSON(nil, mode)
	args = append(args, ',')
	args = appendJSON(args, origin)
	args = append(args, ',')
	args = appendJSON(args, helperPath+"?"+dataQuery)
	return "(" + stateJS + "\n)(" + string(args) + ")"
}

// helperPage is the helper page that runs state.js in mode on origin as soon as it is parsed,
// before the page has loaded and the tab's load event has reached us, and keeps what it returns in
// globalThis.trawlerProfile. The script holds no "</" (see
// TestStateJSFitsAPage), so it cannot end its element early. A restore's parts, when given, are in
// the page, as the JSON object of a script element that state.js reads (#trawler-parts), rather
// than asked for: every "<" in them is escaped, which leaves the JSON the same and keeps them from
// ending their element.
func helperPage(mode, origin string, parts map[string][]byte) []byte {
	var page bytes.Buffer
	page.WriteString("<!doctype html><meta charset=utf-8>")
	if parts != nil {
		page.WriteString(`<script type="application/json" id="trawler-parts">{`)
		for i, p := range dataParts {
			if i > 0 {
				page.WriteByte(',')
			}
			page.Write(appendJSON(nil, p))
			page.WriteByte(':')
			page.Write(bytes.ReplaceAll(parts[p], []byte("<"), []byte(`\u003c`)))
		}
		page.WriteString("}</script>")
	}
	page.WriteString("<script>globalThis.trawlerProfile = " + script(mode, origin) + ";</script>")
	return page.Bytes()
}

// results awaits the promises of the helper page's script, the one it returned (member "") or
// those of the object it returned (the members named), and returns the protocol's result object
// (a Runtime.RemoteObject) of each, undecoded, or the first error the script threw. It asks for
// all of them at once, and reads the replies itself, megabytes of them for a capture, rather than
// cdp.Conn: only the values are decoded, once. Should the page's own script not have run, it runs
// state.js now.
func (t *tab) results(ctx context.Context, mode, origin string, members ...string) ([][]byte, error) {
	return t.resultsEach(ctx, mode, origin, nil, members...)
}

// resultsEach is results, calling arrived, when not nil, with each result as it comes, in order.
func (t *tab) resultsEach(ctx context.Context, mode, origin string, arrived func(i int, result []byte) error, members ...string) ([][]byte, error) {
	expr := func(fallback bool, member string) string {
		e := "globalThis.trawlerProfile"
		if fallback {
			e = "(globalThis.trawlerProfile ??= " + script(mode, origin) + ")"
		}
		switch {
		case member == "":
			return e
		case fallback:
			return e + "." + member
		}
		return e + "?." + member
	}
	evaluate := func(e string) (func(context.Context) ([]byte, error), error) {
		return t.h.bulk.start(call(t.session.ID, cdpruntime.Evaluate, cdpruntime.EvaluateParams{
			Expression: e, AwaitPromise: new(true), ReturnByValue: new(true), ContextID: t.world}))
	}
	waits := make([]func(context.Context) ([]byte, error), len(members))
	for i, m := range members {
		var err error
		if waits[i], err = evaluate(expr(false, m)); err != nil {
			return nil, fmt.Errorf("the page did not answer: %w", err)
		}
	}
	out := make([][]byte, len(members))
	for i, m := range members {
		for fallback := false; ; fallback = true {
			msg, err := waits[i](ctx)
			if err != nil {
				return nil, fmt.Errorf("the page did not answer: %w", err)
			}
			res := rawjson.Member(msg, "result")
			if rawjson.Member(res, "exceptionDetails") != nil {
				var r cdp.EvalResult
				if err := json.Unmarshal(res, &r); err != nil {
					return nil, fmt.Errorf("decoding the page's answer: %w", err)
				}
				return nil, errors.New(r.Exception())
			}
			out[i] = rawjson.Member(res, "result")
			if string(rawjson.Member(out[i], "type")) != `"undefined"` {
				if arrived != nil {
					if err := arrived(i, out[i]); err != nil {
						return nil, err
					}
				}
				break
			}
			if fallback {
				return nil, errors.New("the page did not run the script")
			}
			if waits[i], err = evaluate(expr(true, m)); err != nil {
				return nil, fmt.Errorf("the page did not answer: %w", err)
			}
		}
	}
	return out, nil
}

// visit navigates the tab to origin's helper page, which is page, and waits for it to load.
func (t *tab) visit(ctx context.Context, origin string, page []byte) error {
	u, err := url.Parse(origin)
	if err != nil {
		return err
	}
	t.h.mu.Lock()
	t.scheme, t.page = u.Scheme, page
	t.h.mu.Unlock()

	nav, err := cdp.Do(ctx, t.session, cdppage.Navigate, cdppage.NavigateParams{URL: origin + helperPath})
	if err != nil {
		return fmt.Errorf("visiting: %w", err)
	}
	if nav.ErrorText != "" {
		return fmt.Errorf("visiting: %s", nav.ErrorText)
	}
	for {
		t.h.mu.Lock()
		ok := t.loaded[nav.LoaderID]
		t.h.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-t.notify:
		case <-t.h.conn.Done():
			return errors.New("visiting: the browser connection closed")
		case <-ctx.Done():
			return fmt.Errorf("visiting: the helper page did not load: %w", ctx.Err())
		}
	}
}
