// Package recording records interactive browser sessions for replay and
// serves the recordings: every tab's DOM and its changes, input and
// navigations as rrweb events, with the tab's console messages and network
// requests beside them as rrweb custom events.
//
// The recorder must not be seen by the page. rrweb's recorder runs in an
// isolated world of the tab (Page.addScriptToEvaluateOnNewDocument with a
// worldName): it shares the page's DOM, so its MutationObserver and event
// listeners see everything the page shows and the user does, but none of
// its globals, prototypes or patches exist in the page's world. Its events
// are fetched from that world every half second (Runtime.evaluate in the
// world's context); a binding would need Runtime.enable, which makes the
// inspector preview what pages log, the very thing bot detectors test for.
// Events up to a click or a keystroke, and the last of a document, leave
// the world at once as a console message of that world (see lastGasp).
// The page's console messages come from the Console domain and its
// requests from the Network domain, neither of which a page can observe.
//
// What the isolated world cannot see: the page's own calls to patched APIs
// (CSSStyleSheet.insertRule, attachShadow, a programmatic input.value),
// which rrweb watches by patching them in its own world; a page that builds
// its styles that way replays unstyled. Cross-origin iframes are not
// recorded.
package recording

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trawler-dev/trawler/cdp"
)

// world names the isolated world the recorder runs in. Pages cannot see
// it; a session's own CDP client that enables Runtime sees a context by
// this name.
const world = "trawler-recorder"

//go:embed inject/rrweb-record.js
var rrwebRecord string

//go:embed inject/start.js
var startScript string

// pollEvery is how often a tab's buffered events are fetched and written:
// a crash loses at most this much, plus a write. Input and clicks do not
// wait for it (see lastGasp).
const pollEvery = time.Second

// Chunk is one write of a tab's recording: the events gathered since the
// last, as a gzip-compressed JSON array.
type Chunk struct {
	// Page is the tab's target id.
	Page string
	// Seq numbers the tab's chunks from 0.
	Seq        int
	URL, Title string
	// First and Last are the times of its first and last events.
	First, Last time.Time
	Events      int
	Data        []byte
}

// Sink takes a session's chunks as they are made. Put is called from one
// goroutine per tab, in Seq order for each tab.
type Sink interface {
	Put(ctx context.Context, c Chunk) error
}

// Recorder records the tabs of one browser.
type Recorder struct {
	conn *cdp.Conn
	sink Sink
	log  *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// mark starts the messages the recorder world logs as its document
	// goes (see lastGasp); the page cannot know it.
	mark string

	mu      sync.Mutex
	tabs    map[string]*tab // by CDP session id
	stopped bool
}

// Start records every page target of browser, those open now and those
// opened later, until Stop. New tabs wait for the recorder (auto-attach
// with waitForDebuggerOnStart) so that their first document is recorded
// from its start. ctx bounds the setup only.
func Start(ctx context.Context, browser *cdp.Mux, sink Sink, log *slog.Logger) (*Recorder, error) {
	conn, err := browser.Dial(ctx)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	r := &Recorder{conn: conn, sink: sink, log: log, ctx: rctx, cancel: cancel, tabs: map[string]*tab{}, mark: newMark()}
	conn.OnEvent(r.event)
	if err := conn.Call(ctx, "", "Target.setDiscoverTargets", map[string]any{"discover": true}, nil); err == nil {
		err = conn.Call(ctx, "", "Target.setAutoAttach", map[string]any{"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true}, nil)
	}
	if err != nil {
		cancel()
		conn.Close()
		return nil, err
	}
	return r, nil
}

type attached struct {
	SessionID  string         `json:"sessionId"`
	TargetInfo cdp.TargetInfo `json:"targetInfo"`
	Waiting    bool           `json:"waitingForDebugger"`
}

// event runs on the connection's reader: it must not call the browser.
func (r *Recorder) event(e cdp.Event) {
	switch e.Method {
	case "Target.attachedToTarget":
		var a attached
		if json.Unmarshal(e.Params, &a) != nil {
			return
		}
		if a.TargetInfo.Type != "page" {
			// Workers and the like: nothing to record; let them run.
			go func() {
				ctx, cancel := context.WithTimeout(r.ctx, 5*time.Second)
				defer cancel()
				if a.Waiting {
					r.conn.Call(ctx, a.SessionID, "Runtime.runIfWaitingForDebugger", nil, nil)
				}
				r.conn.Call(ctx, "", "Target.detachFromTarget", map[string]any{"sessionId": a.SessionID}, nil)
			}()
			return
		}
		r.mu.Lock()
		if r.stopped {
			r.mu.Unlock()
			return
		}
		t := newTab(r, a)
		r.tabs[a.SessionID] = t
		r.wg.Add(1)
		r.mu.Unlock()
		go t.run(a.Waiting)
	case "Target.detachedFromTarget":
		var p struct {
			SessionID string `json:"sessionId"`
		}
		if json.Unmarshal(e.Params, &p) == nil {
			if t := r.tab(p.SessionID); t != nil {
				t.close()
			}
		}
	case "Target.targetInfoChanged":
		var p struct {
			TargetInfo cdp.TargetInfo `json:"targetInfo"`
		}
		if json.Unmarshal(e.Params, &p) != nil {
			return
		}
		r.mu.Lock()
		for _, t := range r.tabs {
			if t.target == p.TargetInfo.TargetID {
				t.setTitle(p.TargetInfo.Title, p.TargetInfo.URL)
			}
		}
		r.mu.Unlock()
	default:
		if e.SessionID != "" {
			if t := r.tab(e.SessionID); t != nil {
				t.event(e)
			}
		}
	}
}

func (r *Recorder) tab(session string) *tab {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tabs[session]
}

// Stop fetches and writes what every tab still holds, then stops
// recording. The browser must still run for the last events to be had.
func (r *Recorder) Stop(ctx context.Context) {
	r.mu.Lock()
	r.stopped = true
	tabs := make([]*tab, 0, len(r.tabs))
	for _, t := range r.tabs {
		tabs = append(tabs, t)
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, t := range tabs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.final(ctx)
		}()
	}
	wg.Wait()
	r.cancel()
	r.wg.Wait()
	r.conn.Close()
}

// tab records one page target.
type tab struct {
	r       *Recorder
	session string
	target  string

	poke chan struct{} // poll now: the tab is about to leave its document
	done chan struct{}
	once sync.Once

	mu       sync.Mutex
	url      string
	title    string
	context  int               // the recorder world's execution context; 0 when unknown
	batches  []batch           // from the recorder world, by console (lastGasp)
	extra    []json.RawMessage // custom events, with their times in first and last
	first    int64
	last     int64
	requests map[string]*request
	seq      int
	finished bool
}

// maxRequests bounds the requests a tab tracks at once; a page that opens
// more without finishing them loses the excess from its recording.
const maxRequests = 2000

func newTab(r *Recorder, a attached) *tab {
	return &tab{r: r, session: a.SessionID, target: a.TargetInfo.TargetID, url: a.TargetInfo.URL,
		title: a.TargetInfo.Title, poke: make(chan struct{}, 1), done: make(chan struct{}), requests: map[string]*request{}}
}

func (t *tab) close() { t.once.Do(func() { close(t.done) }) }

func (t *tab) setTitle(title, url string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.title, t.url = title, url
}

// run sets the tab up, lets it start, and writes its events until it
// closes or the recorder stops.
func (t *tab) run(waiting bool) {
	defer t.r.wg.Done()
	defer func() {
		t.r.mu.Lock()
		delete(t.r.tabs, t.session)
		t.r.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(t.r.ctx, 10*time.Second)
	err := t.setup(ctx)
	if waiting {
		// Whatever happened, the tab must not stay paused.
		t.call(ctx, "Runtime.runIfWaitingForDebugger", nil, nil)
	}
	cancel()
	if err != nil {
		if t.r.ctx.Err() == nil {
			t.r.log.Warn("recording a tab", "target", t.target, "err", err)
		}
		return
	}
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		select {
		case <-t.r.ctx.Done():
			return
		case <-t.done:
			t.write(t.r.ctx, batch{}, false) // what the CDP domains reported last
			return
		case <-tick.C:
		case <-t.poke:
		}
		t.flush(t.r.ctx)
	}
}

func (t *tab) setup(ctx context.Context) error {
	for _, m := range []string{"Page.enable", "Console.enable", "Log.enable"} {
		if err := t.call(ctx, m, nil, nil); err != nil {
			return err
		}
	}
	// The recording lists requests, not their bodies: the browser need not
	// keep a copy of each (Network.getResponseBody is never asked).
	if err := t.call(ctx, "Network.enable", map[string]any{"maxTotalBufferSize": 0, "maxResourceBufferSize": 0}, nil); err != nil {
		return err
	}
	return t.call(ctx, "Page.addScriptToEvaluateOnNewDocument", map[string]any{
		"source": rrwebRecord + ";\n" + strings.ReplaceAll(startScript, "__TRAWLER_MARK__", t.r.mark), "worldName": world, "runImmediately": true}, nil)
}

func (t *tab) call(ctx context.Context, method string, params, result any) error {
	return t.r.conn.Call(ctx, t.session, method, params, result)
}

// final is the last fetch of a tab, at Stop.
func (t *tab) final(ctx context.Context) {
	t.mu.Lock()
	if t.finished {
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	t.flush(ctx)
	t.mu.Lock()
	t.finished = true
	t.mu.Unlock()
}

// flush fetches the events the recorder world holds and writes them with
// those the CDP domains reported.
func (t *tab) flush(ctx context.Context) {
	t.mu.Lock()
	finished := t.finished
	t.mu.Unlock()
	if finished {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	b, ok := t.take(cctx)
	t.write(ctx, b, ok)
}

// batch is events of the recorder world: a JSON array of n events whose
// timestamps (Unix ms) span first to last.
type batch struct {
	n           int
	first, last int64
	events      string
}

// parseBatch reads a batch as the recorder world writes it:
// "COUNT FIRST LAST [events]".
func parseBatch(s string) (batch, bool) {
	var b batch
	var rest string
	for i, dst := range []*int64{nil, &b.first, &b.last} {
		head, tail, ok := strings.Cut(s, " ")
		if !ok {
			return batch{}, false
		}
		n, err := strconv.ParseInt(head, 10, 64)
		if err != nil {
			return batch{}, false
		}
		if i == 0 {
			b.n = int(n)
		} else {
			*dst = n
		}
		s, rest = tail, tail
	}
	if !strings.HasPrefix(rest, "[") || !strings.HasSuffix(rest, "]") || b.n <= 0 {
		return batch{}, false
	}
	b.events = rest
	return b, true
}

// take returns the events buffered in the recorder world.
func (t *tab) take(ctx context.Context) (batch, bool) {
	for attempt := 0; attempt < 2; attempt++ {
		t.mu.Lock()
		id := t.context
		t.mu.Unlock()
		if id == 0 {
			// Creating the world by name returns the one the script runs
			// in, when it exists (a page's main frame has its target's id).
			var w struct {
				ExecutionContextID int `json:"executionContextId"`
			}
			if err := t.call(ctx, "Page.createIsolatedWorld", map[string]any{"frameId": t.target, "worldName": world}, &w); err != nil {
				t.r.log.Debug("recording a tab: no recorder world", "target", t.target, "err", err)
				return batch{}, false
			}
			id = w.ExecutionContextID
			t.mu.Lock()
			t.context = id
			t.mu.Unlock()
		}
		var res struct {
			Result struct {
				Value string `json:"value"`
			} `json:"result"`
			ExceptionDetails json.RawMessage `json:"exceptionDetails"`
		}
		err := t.call(ctx, "Runtime.evaluate", map[string]any{"expression": "globalThis.__trawlerTake ? __trawlerTake() : ''",
			"contextId": id, "returnByValue": true, "silent": true}, &res)
		if err == nil && len(res.ExceptionDetails) > 0 {
			t.r.log.Debug("recording a tab: fetching events", "target", t.target, "exception", string(res.ExceptionDetails))
		}
		if err != nil {
			t.r.log.Debug("recording a tab: fetching events", "target", t.target, "err", err)
			// The document went, and its world with it.
			t.mu.Lock()
			t.context = 0
			t.mu.Unlock()
			continue
		}
		if res.Result.Value == "" {
			return batch{}, false
		}
		return parseBatch(res.Result.Value)
	}
	return batch{}, false
}

// write writes one chunk: the batches of the recorder world gathered
// meanwhile, then fetched, with the custom events of the CDP domains. The
// recorder world's events are stored as it wrote them, unread.
func (t *tab) write(ctx context.Context, fetched batch, ok bool) {
	t.mu.Lock()
	batches, extra, first, last := t.batches, t.extra, t.first, t.last
	t.batches, t.extra, t.first, t.last = nil, nil, 0, 0
	url, title := t.url, t.title
	t.mu.Unlock()
	if ok {
		batches = append(batches, fetched)
	}
	if len(batches) == 0 && len(extra) == 0 {
		return
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	zw.Write([]byte{'['})
	n := 0
	sep := func() {
		if n > 0 {
			zw.Write([]byte{','})
		}
	}
	for _, b := range batches {
		sep()
		io.WriteString(zw, b.events[1:len(b.events)-1])
		n += b.n
		first, last = span(first, last, b.first, b.last)
	}
	for _, e := range extra {
		sep()
		zw.Write(e)
		n++
	}
	zw.Write([]byte{']'})
	if err := zw.Close(); err != nil {
		return
	}
	t.mu.Lock()
	seq := t.seq
	t.seq++
	t.mu.Unlock()
	c := Chunk{Page: t.target, Seq: seq, URL: url, Title: title, First: time.UnixMilli(first), Last: time.UnixMilli(last),
		Events: n, Data: buf.Bytes()}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := t.r.sink.Put(wctx, c); err != nil {
		t.r.log.Error("writing a recording", "target", t.target, "err", err)
	}
}

// span widens [first, last] (0, 0 when empty) to take in [from, to].
func span(first, last, from, to int64) (int64, int64) {
	if first == 0 || from < first {
		first = from
	}
	return first, max(last, to)
}

func newMark() string {
	b := make([]byte, 16)
	rand.Read(b)
	return "\x01trawler-recorder:" + hex.EncodeToString(b) + ":"
}

// lastGasp takes the events the recorder world logged as its document went
// (pagehide): a navigation a few milliseconds after a click or a keystroke
// leaves no time to fetch them. Fetching them then, with the navigation
// paused (Fetch.requestPaused), does not work: the browser holds commands
// to a frame that is navigating. A console message is the one way out of
// the world that needs no command and that the page cannot observe.
func (t *tab) lastGasp(events string) {
	b, ok := parseBatch(events)
	if !ok {
		return
	}
	t.mu.Lock()
	t.batches = append(t.batches, b)
	t.mu.Unlock()
	select {
	case t.poke <- struct{}{}:
	default:
	}
}

// Custom event tags, for the replay page's console and requests.
const (
	TagConsole = "trawler/console"
	TagNetwork = "trawler/network"
)

// custom adds an rrweb custom event (type 5) to the tab's next chunk.
func (t *tab) custom(tag string, at time.Time, payload any) {
	b, err := json.Marshal(map[string]any{"type": 5, "timestamp": at.UnixMilli(),
		"data": map[string]any{"tag": tag, "payload": payload}})
	if err != nil {
		return
	}
	ms := at.UnixMilli()
	t.mu.Lock()
	t.extra = append(t.extra, b)
	t.first, t.last = span(t.first, t.last, ms, ms)
	t.mu.Unlock()
}

// ConsoleEntry is a console message, or a message the browser logged for
// the page (a failed load, a blocked request), in a recording.
type ConsoleEntry struct {
	Level  string `json:"level"`
	Source string `json:"source"`
	Text   string `json:"text"`
	URL    string `json:"url,omitempty"`
	Line   int    `json:"line,omitempty"`
}

// Request is one network request of a tab, in a recording: written when
// it finishes or fails.
type Request struct {
	URL        string  `json:"url"`
	Method     string  `json:"method"`
	Type       string  `json:"type,omitempty"`
	Status     int     `json:"status,omitempty"`
	MimeType   string  `json:"mimeType,omitempty"`
	Bytes      float64 `json:"bytes"`
	StartedAt  int64   `json:"startedAt"`
	DurationMs int64   `json:"durationMs"`
	Error      string  `json:"error,omitempty"`
}

type request struct {
	Request
	started time.Time
}

// maxText bounds a console message's text and a request's URL.
const maxText = 4096

func clip(s string) string {
	if len(s) <= maxText {
		return s
	}
	cut := maxText
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// event handles a CDP event of the tab (on the reader: no calls).
func (t *tab) event(e cdp.Event) {
	switch e.Method {
	case "Page.frameRequestedNavigation", "Page.frameStartedNavigating":
		var p struct {
			FrameID string `json:"frameId"`
		}
		if json.Unmarshal(e.Params, &p) == nil && p.FrameID == t.target {
			select {
			case t.poke <- struct{}{}: // fetch before the document goes
			default:
			}
		}
	case "Page.frameNavigated":
		var p struct {
			Frame struct {
				ID       string `json:"id"`
				ParentID string `json:"parentId"`
				URL      string `json:"url"`
			} `json:"frame"`
		}
		if json.Unmarshal(e.Params, &p) == nil && p.Frame.ParentID == "" {
			t.mu.Lock()
			t.url, t.context = p.Frame.URL, 0
			t.mu.Unlock()
		}
	case "Console.messageAdded":
		var p struct {
			Message struct {
				Source string `json:"source"`
				Level  string `json:"level"`
				Text   string `json:"text"`
				URL    string `json:"url"`
				Line   int    `json:"line"`
			} `json:"message"`
		}
		if json.Unmarshal(e.Params, &p) != nil || p.Message.Source != "console-api" {
			return
		}
		if rest, ok := strings.CutPrefix(p.Message.Text, t.r.mark); ok {
			t.lastGasp(rest)
			return
		}
		{
			m := p.Message
			t.custom(TagConsole, time.Now(), ConsoleEntry{Level: m.Level, Source: m.Source, Text: clip(m.Text), URL: clip(m.URL), Line: m.Line})
		}
	case "Log.entryAdded":
		var p struct {
			Entry struct {
				Source string `json:"source"`
				Level  string `json:"level"`
				Text   string `json:"text"`
				URL    string `json:"url"`
				Line   int    `json:"lineNumber"`
			} `json:"entry"`
		}
		if json.Unmarshal(e.Params, &p) == nil && p.Entry.Level != "verbose" {
			m := p.Entry
			t.custom(TagConsole, time.Now(), ConsoleEntry{Level: m.Level, Source: m.Source, Text: clip(m.Text), URL: clip(m.URL), Line: m.Line})
		}
	case "Network.requestWillBeSent":
		var p struct {
			RequestID string  `json:"requestId"`
			WallTime  float64 `json:"wallTime"`
			Type      string  `json:"type"`
			Request   struct {
				URL    string `json:"url"`
				Method string `json:"method"`
			} `json:"request"`
		}
		if json.Unmarshal(e.Params, &p) != nil {
			return
		}
		now := time.Now()
		t.mu.Lock()
		if prev := t.requests[p.RequestID]; prev != nil {
			// A redirect: the hop so far is a request of its own.
			delete(t.requests, p.RequestID)
			t.mu.Unlock()
			t.finish(prev, now, "")
			t.mu.Lock()
		}
		if len(t.requests) < maxRequests {
			t.requests[p.RequestID] = &request{Request: Request{URL: clip(p.Request.URL), Method: p.Request.Method,
				Type: p.Type, StartedAt: now.UnixMilli()}, started: now}
		}
		t.mu.Unlock()
	case "Network.responseReceived":
		var p struct {
			RequestID string `json:"requestId"`
			Response  struct {
				Status   int    `json:"status"`
				MimeType string `json:"mimeType"`
			} `json:"response"`
		}
		if json.Unmarshal(e.Params, &p) != nil {
			return
		}
		t.mu.Lock()
		if r := t.requests[p.RequestID]; r != nil {
			r.Status, r.MimeType = p.Response.Status, p.Response.MimeType
		}
		t.mu.Unlock()
	case "Network.loadingFinished", "Network.loadingFailed":
		var p struct {
			RequestID         string  `json:"requestId"`
			EncodedDataLength float64 `json:"encodedDataLength"`
			ErrorText         string  `json:"errorText"`
			Canceled          bool    `json:"canceled"`
		}
		if json.Unmarshal(e.Params, &p) != nil {
			return
		}
		t.mu.Lock()
		r := t.requests[p.RequestID]
		delete(t.requests, p.RequestID)
		t.mu.Unlock()
		if r == nil {
			return
		}
		r.Bytes = p.EncodedDataLength
		errText := p.ErrorText
		if p.Canceled && errText == "" {
			errText = "canceled"
		}
		t.finish(r, time.Now(), errText)
	}
}

func (t *tab) finish(r *request, at time.Time, errText string) {
	r.DurationMs = at.Sub(r.started).Milliseconds()
	r.Error = errText
	t.custom(TagNetwork, at, r.Request)
}

// ErrNotRecorded is returned for a session that was not recorded.
var ErrNotRecorded = errors.New("the session was not recorded")
