package liveview

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cdproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/gorilla/websocket"

	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/sessions"
	"github.com/trawler-dev/trawler/wire"
)

const (
	// touchEvery is how often a watched session is marked active: well
	// under the smallest activityTtl (10 s).
	touchEvery = 2 * time.Second
	// frontEvery is how often the browser's /json/list is read: its order
	// tells the front tab (to follow an agent that brings a tab to the
	// front) and its titles catch changes no target event reports.
	frontEvery = time.Second
	// titleSettle is how long after a navigation the titles are read again.
	titleSettle = 300 * time.Millisecond
	// resizeSettle lets a viewer's window finish resizing before the
	// screencast is restarted at the new size.
	resizeSettle = 250 * time.Millisecond
	callTimeout  = 10 * time.Second
)

// hub is the live view of one session, shared by its viewers. Its owner is
// the Handler, which creates it with the first viewer and stops it when the
// last one leaves; it stops by itself when the session ends or the browser
// connection drops, after telling the viewers.
type hub struct {
	sess *sessions.Session
	log  *slog.Logger

	openOnce sync.Once
	openErr  error
	conn     *cdp.Conn
	refs     int // viewers joined or joining, under Handler.mu

	stopOnce sync.Once
	stop     chan struct{} // closed by the owner: no viewer is left
	finished chan struct{} // closed when the hub no longer runs
	kick     chan struct{} // the wanted screencasts may have changed
	acks     chan ack
	inputs   chan inputReq
	seq      atomic.Uint64 // frame numbers

	mu        sync.Mutex
	closed    bool // viewers have been told the end; no one joins
	viewers   map[*viewer]struct{}
	tabs      map[string]*tab
	tabSeq    int
	active    string             // the tab followers watch
	lastFront string             // first page of /json/list at the last look
	pollFront bool               // look up the front tab at the next turn
	streams   map[string]*stream // by tab id
	bySession map[string]*stream // by CDP session id
	resizing  bool               // a reconcile after resizeSettle is pending
}

// tab is a page target of the session's browser.
type tab struct {
	ID        string `json:"id"`
	URL       string `json:"url"`
	Title     string `json:"title"`
	contextID string
	seq       int
}

// stream is a tab attached over the hub's connection, with its screencast.
type stream struct {
	tab     string
	session string     // CDP session id; "" while attaching
	running castParams // zero until the screencast runs
	last    *frame     // newest frame, for viewers that start watching
}

type ack struct {
	session string
	id      int64
}

type inputReq struct {
	v *viewer
	m clientMsg
}

func newHub(s *sessions.Session, log *slog.Logger) *hub {
	return &hub{
		sess: s, log: log.With("session", s.ID()),
		stop: make(chan struct{}), finished: make(chan struct{}), kick: make(chan struct{}, 1),
		acks: make(chan ack, 64), inputs: make(chan inputReq, 256),
		viewers: map[*viewer]struct{}{}, tabs: map[string]*tab{},
		streams: map[string]*stream{}, bySession: map[string]*stream{},
	}
}

// join adds v to the session's hub, starting the hub if need be.
func (h *Handler) join(s *sessions.Session, v *viewer) (*hub, error) {
	h.mu.Lock()
	hb := h.hubs[s.ID()]
	if hb == nil || hb.isFinished() {
		hb = newHub(s, h.log)
		h.hubs[s.ID()] = hb
	}
	hb.refs++
	h.mu.Unlock()
	if err := hb.open(); err != nil {
		h.leave(hb, nil)
		return nil, err
	}
	if !hb.add(v) {
		h.leave(hb, nil)
		return nil, errors.New("the live view of this session is closing")
	}
	return hb, nil
}

// leave removes v (nil for a viewer that never joined) and stops the hub
// after its last viewer.
func (h *Handler) leave(hb *hub, v *viewer) {
	if v != nil {
		hb.remove(v)
	}
	h.mu.Lock()
	hb.refs--
	last := hb.refs == 0
	if last && h.hubs[hb.sess.ID()] == hb {
		delete(h.hubs, hb.sess.ID())
	}
	h.mu.Unlock()
	if last {
		hb.stopOnce.Do(func() { close(hb.stop) })
	}
}

func (hb *hub) isFinished() bool {
	select {
	case <-hb.finished:
		return true
	default:
		return false
	}
}

// open connects to the session's browser once, learns its tabs and starts
// the hub. Every joiner gets the same outcome.
func (hb *hub) open() error {
	hb.openOnce.Do(func() {
		hb.openErr = hb.connect()
		if hb.openErr != nil {
			close(hb.finished)
			return
		}
		go hb.acker()
		go hb.dispatcher()
		go hb.run()
	})
	return hb.openErr
}

func (hb *hub) connect() error {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	go func() {
		select {
		case <-hb.sess.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	conn, err := hb.sess.CDP().Dial(ctx)
	if err != nil {
		return err
	}
	conn.OnEvent(hb.onEvent)
	hb.conn = conn
	// Discovery reports every existing target first, then each change.
	if err := cdp.Run(ctx, cdp.Browser(conn), target.SetDiscoverTargets, target.SetDiscoverTargetsParams{Discover: true}); err != nil {
		conn.Close()
		return err
	}
	hb.lookUpFront(ctx)
	return nil
}

// run reconciles the screencasts with what the viewers watch, marks the
// session active while it is watched and follows the browser's front tab,
// until the session ends, the browser connection drops or no viewer is left.
func (hb *hub) run() {
	defer close(hb.finished)
	defer hb.conn.Close()
	touch := time.NewTicker(touchEvery)
	defer touch.Stop()
	front := time.NewTicker(frontEvery)
	defer front.Stop()
	for {
		hb.reconcile()
		hb.mu.Lock()
		poll := hb.pollFront
		hb.pollFront = false
		hb.mu.Unlock()
		if poll {
			hb.lookUpFront(context.Background())
			continue
		}
		select {
		case <-hb.kick:
		case <-touch.C:
			hb.mu.Lock()
			watched := len(hb.viewers) > 0
			hb.mu.Unlock()
			if watched {
				hb.sess.Touch()
			}
		case <-front.C:
			hb.lookUpFront(context.Background())
		case <-hb.sess.Done():
			hb.end(endedNote(hb.sess.Ended()))
			return
		case <-hb.conn.Done():
			// A browser that went away ends its session: wait a moment to
			// name the reason.
			select {
			case <-hb.sess.Done():
				hb.end(endedNote(hb.sess.Ended()))
			case <-time.After(time.Second):
				hb.end(endNote{code: websocket.CloseInternalServerErr, reason: "connection to the browser lost"})
			}
			return
		case <-hb.stop:
			hb.mu.Lock()
			hb.closed = true
			hb.mu.Unlock()
			return
		}
	}
}

// end tells every viewer that the live view is over.
func (hb *hub) end(n endNote) {
	hb.mu.Lock()
	hb.closed = true
	for v := range hb.viewers {
		v.finish(n)
	}
	hb.mu.Unlock()
}

func (hb *hub) wake() {
	select {
	case hb.kick <- struct{}{}:
	default:
	}
}

// add registers a viewer; false once the hub is closing.
func (hb *hub) add(v *viewer) bool {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if hb.closed {
		return false
	}
	hb.viewers[v] = struct{}{}
	v.watching = ""
	hb.retargetLocked()
	v.markTabs(hb)
	hb.wake()
	return true
}

func (hb *hub) remove(v *viewer) {
	hb.mu.Lock()
	delete(hb.viewers, v)
	hb.mu.Unlock()
	v.drop()
	hb.wake()
}

// watchedLocked is the tab v sees: the one it picked while that tab lasts,
// else the browser's active tab.
func (hb *hub) watchedLocked(v *viewer) string {
	if v.pick != "" && hb.tabs[v.pick] != nil {
		return v.pick
	}
	return hb.active
}

// retargetLocked gives each viewer whose tab changed the newest frame of its
// new tab at once, rather than after the tab's next change.
func (hb *hub) retargetLocked() {
	for v := range hb.viewers {
		w := hb.watchedLocked(v)
		if w == v.watching {
			continue
		}
		v.watching = w
		v.markTabs(hb)
		if st := hb.streams[w]; st != nil && st.last != nil {
			st.last.claims.Add(1)
			v.offer(st.last)
		}
	}
}

// tabsMessage is the tab strip as viewer v sees it.
func (hb *hub) tabsMessage(v *viewer) []byte {
	hb.mu.Lock()
	// Copies: the tabs change under the lock while the message is encoded.
	list := make([]tab, 0, len(hb.tabs))
	for _, t := range hb.tabs {
		list = append(list, *t)
	}
	slices.SortFunc(list, func(a, b tab) int { return a.seq - b.seq })
	msg := map[string]any{"type": "tabs", "tabs": list, "active": hb.active,
		"watching": hb.watchedLocked(v), "follow": v.pick == ""}
	hb.mu.Unlock()
	b, _ := json.Marshal(msg)
	return b
}

// onEvent runs on the connection's reader: it only updates state and hands
// frames to viewers' mailboxes; calls to the browser happen elsewhere.
func (hb *hub) onEvent(ev cdp.Event) {
	if e, ok, err := cdp.Decode(ev, cdppage.ScreencastFrame); ok {
		if err == nil {
			hb.onFrame(ev.SessionID, e)
		}
		return
	}
	if ti := cdp.ChangedTarget(ev); ti != nil {
		hb.onTarget(ti)
		return
	}
	if e, ok, err := cdp.Decode(ev, target.TargetDestroyed); ok {
		if err == nil {
			hb.onTargetDestroyed(string(e.TargetID))
		}
		return
	}
	if e, ok, err := cdp.Decode(ev, target.DetachedFromTarget); ok && err == nil {
		hb.mu.Lock()
		if st := hb.bySession[string(e.SessionID)]; st != nil {
			delete(hb.bySession, string(e.SessionID))
			if hb.streams[st.tab] == st {
				delete(hb.streams, st.tab)
			}
		}
		hb.mu.Unlock()
		hb.wake()
	}
}

// onTarget records a tab the browser opened or changed.
func (hb *hub) onTarget(ti *target.Info) {
	if ti.Type != "page" || ti.Subtype != "" || strings.HasPrefix(ti.URL, "devtools://") {
		return
	}
	id := string(ti.TargetID)
	hb.mu.Lock()
	t := hb.tabs[id]
	if t == nil {
		hb.tabSeq++
		t = &tab{ID: id, seq: hb.tabSeq}
		hb.tabs[t.ID] = t
		// A new tab is where the agent's work went: followers follow.
		hb.active = t.ID
	}
	navigated := t.URL != ti.URL
	t.URL, t.Title, t.contextID = ti.URL, ti.Title, string(ti.BrowserContextID)
	hb.tabsChangedLocked()
	hb.mu.Unlock()
	if navigated {
		// The new document's title comes later, and not always in an event.
		time.AfterFunc(titleSettle, func() {
			hb.mu.Lock()
			hb.pollFront = true
			hb.mu.Unlock()
			hb.wake()
		})
	}
}

// onTargetDestroyed forgets a closed tab.
func (hb *hub) onTargetDestroyed(id string) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if hb.tabs[id] == nil {
		return
	}
	delete(hb.tabs, id)
	if hb.active == id {
		hb.active = hb.newestTabLocked()
		hb.lastFront = ""
		hb.pollFront = true
	}
	for v := range hb.viewers {
		if v.pick == id {
			v.pick = ""
		}
	}
	hb.tabsChangedLocked()
}

func (hb *hub) tabsChangedLocked() {
	hb.retargetLocked()
	for v := range hb.viewers {
		v.markTabs(hb)
	}
	hb.wake()
}

func (hb *hub) newestTabLocked() string {
	best, seq := "", -1
	for id, t := range hb.tabs {
		if t.seq > seq {
			best, seq = id, t.seq
		}
	}
	return best
}

// lookUpFront reads the browser's targets as its /json/list orders them:
// the first page is the front tab, which becomes the active one when it
// changed since the last look; and they carry the latest titles.
func (hb *hub) lookUpFront(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	list := hb.sess.CDP().Targets(ctx)
	hb.mu.Lock()
	defer hb.mu.Unlock()
	changed := false
	front := ""
	for _, t := range list {
		if t.Type != "page" || strings.HasPrefix(t.URL, "devtools://") {
			continue
		}
		if front == "" {
			front = t.TargetID
		}
		if tb := hb.tabs[t.TargetID]; tb != nil && (tb.Title != t.Title || tb.URL != t.URL) {
			tb.Title, tb.URL = t.Title, t.URL
			changed = true
		}
	}
	if front != "" && front != hb.lastFront {
		hb.lastFront = front
		if hb.tabs[front] != nil && hb.active != front {
			hb.active = front
			changed = true
		}
	}
	if changed {
		hb.tabsChangedLocked()
	}
}

// castParams are a screencast's settings.
type castParams struct {
	maxWidth, maxHeight, quality int
}

const (
	maxCastSide = 2560
	minCastSide = 200
)

// paramsFor sizes frames to a viewer's drawing area in device pixels, so a
// small window costs small frames; larger frames get a lower JPEG quality.
func paramsFor(width, height, dpr float64) castParams {
	if width <= 0 || height <= 0 {
		width, height = 1280, 800
	}
	if dpr <= 0 || dpr > 4 || math.IsNaN(dpr) {
		dpr = 1
	}
	side := func(css float64) int {
		px := int(math.Ceil(css*dpr/32)) * 32 // steps of 32 px: small resizes restart nothing
		return min(maxCastSide, max(minCastSide, px))
	}
	return castParams{maxWidth: side(width), maxHeight: side(height)}.withQuality()
}

func (p castParams) withQuality() castParams {
	switch px := p.maxWidth * p.maxHeight; {
	case px <= 1_100_000:
		p.quality = 80
	case px <= 2_500_000:
		p.quality = 70
	default:
		p.quality = 60
	}
	return p
}

// union is the size that serves both viewers: the larger of each side.
func (p castParams) union(q castParams) castParams {
	return castParams{maxWidth: max(p.maxWidth, q.maxWidth), maxHeight: max(p.maxHeight, q.maxHeight)}.withQuality()
}

// reconcile starts a screencast for every watched tab, restarts one whose
// viewers' size changed, and stops the rest. Calls are made without the lock.
func (hb *hub) reconcile() {
	type change struct {
		st     *stream
		params castParams
		attach bool
	}
	hb.mu.Lock()
	want := map[string]castParams{}
	for v := range hb.viewers {
		w := hb.watchedLocked(v)
		if w == "" {
			continue
		}
		p := paramsFor(v.width, v.height, v.dpr)
		if q, ok := want[w]; ok {
			p = p.union(q)
		}
		want[w] = p
	}
	var stops []string
	for id, st := range hb.streams {
		if _, ok := want[id]; !ok {
			delete(hb.streams, id)
			if st.session != "" {
				delete(hb.bySession, st.session)
				stops = append(stops, st.session)
			}
		}
	}
	var changes []change
	for id, p := range want {
		st := hb.streams[id]
		switch {
		case st == nil:
			st = &stream{tab: id}
			hb.streams[id] = st
			changes = append(changes, change{st: st, params: p, attach: true})
		case st.session != "" && st.running != p:
			changes = append(changes, change{st: st, params: p})
		}
	}
	hb.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	for _, sid := range stops {
		hb.detach(ctx, sid)
	}
	for _, c := range changes {
		if c.attach {
			s, err := cdp.Attach(ctx, hb.conn, target.ID(c.st.tab))
			hb.mu.Lock()
			current := hb.streams[c.st.tab] == c.st
			if err != nil || !current {
				if current {
					delete(hb.streams, c.st.tab)
				}
				hb.mu.Unlock()
				if err == nil {
					hb.detach(ctx, s.ID)
				} else {
					hb.log.Debug("live view: attaching to a tab", "tab", c.st.tab, "err", err)
				}
				continue
			}
			c.st.session = s.ID
			hb.bySession[s.ID] = c.st
			hb.mu.Unlock()
		}
		err := cdp.Run(ctx, hb.on(c.st.session), cdppage.StartScreencast, cdppage.StartScreencastParams{
			Format: cdppage.StartScreencastFormatJpeg, Quality: new(int64(c.params.quality)),
			MaxWidth: int64(c.params.maxWidth), MaxHeight: int64(c.params.maxHeight), EveryNthFrame: 1,
			// Two frames in flight: one being written to viewers, the next
			// encoded meanwhile. With sendLastFrame the newest picture is
			// sent on the next ack even when the page has stopped changing.
			MaxFramesInFlight: 2, SendLastFrame: new(true),
		})
		if err != nil {
			hb.log.Debug("live view: starting a screencast", "tab", c.st.tab, "err", err)
			continue
		}
		hb.mu.Lock()
		c.st.running = c.params
		hb.mu.Unlock()
	}
}

// on is the session id over the hub's connection.
func (hb *hub) on(id string) cdp.Session { return cdp.Session{Conn: hb.conn, ID: id} }

// detach ends the hub's session id, leaving its tab open.
func (hb *hub) detach(ctx context.Context, id string) {
	cdp.Run(ctx, cdp.Browser(hb.conn), target.DetachFromTarget, target.DetachFromTargetParams{SessionID: target.SessionID(id)})
}

// frameMeta is the screencast's description of a frame: the page's viewport
// in CSS pixels, which input coordinates are mapped onto.
type frameMeta struct {
	OffsetTop       float64 `json:"offsetTop"`
	PageScaleFactor float64 `json:"pageScaleFactor"`
	DeviceWidth     float64 `json:"deviceWidth"`
	DeviceHeight    float64 `json:"deviceHeight"`
	ScrollOffsetX   float64 `json:"scrollOffsetX"`
	ScrollOffsetY   float64 `json:"scrollOffsetY"`
	Timestamp       float64 `json:"timestamp,omitempty"`
}

// frameHeader leads each binary frame message.
type frameHeader struct {
	Tab string `json:"tab"`
	Seq uint64 `json:"seq"`
	frameMeta
}

// frame is one screencast frame on its way to the viewers. Chromium sends
// the next frame only after an ack, so a frame is acknowledged as soon as
// the first viewer has it on the wire (the fastest viewer sets the pace), or
// once no viewer holds it any more; every frame is acknowledged once.
type frame struct {
	tab    string
	meta   frameMeta
	msg    []byte // the binary message: header length, header, JPEG
	claims atomic.Int32
	acked  atomic.Bool
	ack    func()
}

func (f *frame) settle() {
	if f.acked.CompareAndSwap(false, true) && f.ack != nil {
		f.ack()
	}
}

// release drops one holder's claim.
func (f *frame) release() {
	if f.claims.Add(-1) <= 0 {
		f.settle()
	}
}

// sent is release for a holder that wrote the frame out.
func (f *frame) sent() {
	f.settle()
	f.release()
}

// encodeFrame builds the binary message of a frame: a 4-byte big-endian
// header length, the JSON header, then the JPEG.
func encodeFrame(h frameHeader, jpeg []byte) []byte {
	head, _ := json.Marshal(h)
	msg := make([]byte, 4, 4+len(head)+len(jpeg))
	binary.BigEndian.PutUint32(msg, uint32(len(head)))
	msg = append(msg, head...)
	return append(msg, jpeg...)
}

// onFrame hands a frame of the screencast on session to the viewers of its
// tab.
func (hb *hub) onFrame(session string, p cdppage.EventScreencastFrame) {
	a := ack{session: session, id: p.SessionID}
	var meta frameMeta
	if m := p.Metadata; m != nil {
		meta = frameMeta{
			OffsetTop: m.OffsetTop, PageScaleFactor: m.PageScaleFactor,
			DeviceWidth: m.DeviceWidth, DeviceHeight: m.DeviceHeight,
			ScrollOffsetX: m.ScrollOffsetX, ScrollOffsetY: m.ScrollOffsetY, Timestamp: float64(m.Timestamp),
		}
	}
	hb.mu.Lock()
	st := hb.bySession[session]
	if st == nil {
		hb.mu.Unlock()
		hb.sendAck(a)
		return
	}
	f := &frame{tab: st.tab, meta: meta, ack: func() { hb.sendAck(a) }}
	f.msg = encodeFrame(frameHeader{Tab: st.tab, Seq: hb.seq.Add(1), frameMeta: meta}, p.Data)
	st.last = f
	f.claims.Add(1) // the hub's own, until every viewer has it
	for v := range hb.viewers {
		if v.watching == st.tab {
			f.claims.Add(1)
			v.offer(f)
		}
	}
	hb.mu.Unlock()
	f.release()
}

// sendAck never blocks the connection's reader.
func (hb *hub) sendAck(a ack) {
	select {
	case hb.acks <- a:
	default:
		go func() {
			select {
			case hb.acks <- a:
			case <-hb.finished:
			}
		}()
	}
}

// acker acknowledges frames off the connection's reader. Chromium sends a
// frame per ack, so the frame rate follows the fastest viewer (a frame is
// acknowledged once the first viewer has it on the wire), up to the page's
// own rate.
func (hb *hub) acker() {
	for {
		select {
		case a := <-hb.acks:
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			cdp.Run(ctx, hb.on(a.session), cdppage.ScreencastFrameAck, cdppage.ScreencastFrameAckParams{SessionID: a.id})
			cancel()
		case <-hb.finished:
			return
		}
	}
}

// handle acts on one message from a viewer.
func (hb *hub) handle(v *viewer, raw []byte) {
	var m clientMsg
	if err := json.Unmarshal(raw, &m); err != nil {
		v.sendError("BAD_MESSAGE", "messages are JSON objects with a type")
		return
	}
	switch m.Type {
	case "viewport":
		hb.mu.Lock()
		v.width, v.height, v.dpr = m.Width, m.Height, m.DPR
		pending := hb.resizing
		hb.resizing = true
		hb.mu.Unlock()
		if !pending {
			time.AfterFunc(resizeSettle, func() {
				hb.mu.Lock()
				hb.resizing = false
				hb.mu.Unlock()
				hb.wake()
			})
		}
	case "pick":
		hb.mu.Lock()
		if m.Tab == "" || hb.tabs[m.Tab] != nil {
			v.pick = m.Tab
		}
		hb.retargetLocked()
		v.markTabs(hb)
		hb.mu.Unlock()
		hb.wake()
	case "ping":
	default:
		if !inputTypes[m.Type] {
			v.sendError("BAD_MESSAGE", "unknown message type "+wire.Truncate(m.Type, 40))
			return
		}
		if !v.interactive {
			v.refuse()
			return
		}
		hb.sess.Touch()
		in := inputReq{v: v, m: m}
		if m.Type == "mouse" && m.Action == "move" {
			select { // moves are many and replaceable: drop them when behind
			case hb.inputs <- in:
			default:
			}
			return
		}
		select {
		case hb.inputs <- in:
		case <-hb.finished:
		}
	}
}

// dispatcher sends viewers' input to the browser in the order it came.
func (hb *hub) dispatcher() {
	for {
		select {
		case in := <-hb.inputs:
			hb.dispatch(in)
		case <-hb.finished:
			return
		}
	}
}

// dispatch carries out one viewer's input on the tab it watches.
func (hb *hub) dispatch(in inputReq) {
	hb.mu.Lock()
	tabID := hb.watchedLocked(in.v)
	t := hb.tabs[tabID]
	var session string
	var meta frameMeta
	if st := hb.streams[tabID]; st != nil {
		session = st.session
		if st.last != nil {
			meta = st.last.meta
		}
	}
	var contextID string
	if t != nil {
		contextID = t.contextID
	}
	hb.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	m := in.m
	fail := func(what string, err error) {
		if err != nil {
			in.v.sendError("INPUT_FAILED", what+": "+err.Error())
		}
	}
	if m.Type == "newTab" || m.Type == "closeTab" {
		hb.dispatchTab(ctx, in, contextID, fail)
		return
	}
	if session == "" {
		return // the tab is not attached yet: nothing is shown to act on
	}
	s := hb.on(session)
	switch m.Type {
	case "mouse":
		if p, ok := mouseParams(m, meta); ok {
			// encoding/json, not cdp.Run: a wheel event is a wheelEvent
			// (see mouseEvent), which carries zero deltas.
			fail("mouse", s.Call(ctx, input.CommandDispatchMouseEvent, mouseEvent(p), nil))
		}
	case "key":
		if p, ok := keyParams(m); ok {
			fail("keyboard", cdp.Run(ctx, s, input.DispatchKeyEvent, p))
		}
	case "text":
		if m.Text != "" && len(m.Text) <= maxInsertText {
			fail("text", cdp.Run(ctx, s, input.InsertText, input.InsertTextParams{Text: m.Text}))
		}
	case "navigate":
		hb.navigate(in, s, fail)
	case "reload":
		fail("reloading", cdp.Run(ctx, s, cdppage.Reload, cdppage.ReloadParams{}))
	case "back", "forward":
		hb.goInHistory(ctx, s, m.Type, fail)
	}
}

// dispatchTab opens a tab (in the watched tab's browser context) or closes
// one, for a viewer's newTab or closeTab.
func (hb *hub) dispatchTab(ctx context.Context, in inputReq, contextID string, fail func(string, error)) {
	m := in.m
	if m.Type == "closeTab" {
		hb.mu.Lock()
		known := hb.tabs[m.Tab] != nil
		hb.mu.Unlock()
		if known {
			fail("closing the tab", cdp.CloseTarget(hb.conn, target.ID(m.Tab)))
		}
		return
	}
	u := "about:blank"
	if m.URL != "" {
		var err error
		if u, err = checkURL(m.URL); err != nil {
			in.v.sendError("BAD_URL", err.Error())
			return
		}
	}
	hb.mu.Lock()
	in.v.pick = "" // see the new tab, which becomes the active one
	hb.mu.Unlock()
	// Not cdp.OpenTarget: the hub attaches to a tab once a viewer watches it.
	fail("opening a tab", cdp.Run(ctx, cdp.Browser(hb.conn), target.CreateTarget,
		target.CreateTargetParams{URL: u, BrowserContextID: cdproto.BrowserContextID(contextID)}))
}

// navigate loads a viewer's URL in the watched tab. A navigation answers
// once the page commits, which can take long: it must not hold up the
// input behind it.
func (hb *hub) navigate(in inputReq, s cdp.Session, fail func(string, error)) {
	u, err := checkURL(in.m.URL)
	if err != nil {
		in.v.sendError("BAD_URL", err.Error())
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := cdp.Do(ctx, s, cdppage.Navigate, cdppage.NavigateParams{URL: u})
		if err == nil && res.ErrorText != "" {
			err = errors.New(res.ErrorText)
		}
		fail("navigating to "+u, err)
	}()
}

// goInHistory goes one entry back or forward in the watched tab's history,
// when there is one.
func (hb *hub) goInHistory(ctx context.Context, s cdp.Session, direction string, fail func(string, error)) {
	hist, err := cdp.Do(ctx, s, cdppage.GetNavigationHistory, cdproto.Empty{})
	if err != nil {
		fail("reading the history", err)
		return
	}
	i := int(hist.CurrentIndex) - 1
	if direction == "forward" {
		i = int(hist.CurrentIndex) + 1
	}
	if i < 0 || i >= len(hist.Entries) || hist.Entries[i] == nil {
		return
	}
	fail("going "+direction, cdp.Run(ctx, s, cdppage.NavigateToHistoryEntry, cdppage.NavigateToHistoryEntryParams{EntryID: hist.Entries[i].ID}))
}
