package liveview

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/trawler-dev/trawler/sessions"
)

const (
	writeTimeout = 10 * time.Second
	// readTimeout closes the socket of a viewer that has stopped answering
	// pings (a laptop closed, a network gone).
	readTimeout = 60 * time.Second
	pingEvery   = 20 * time.Second
	// maxClientMessage bounds what a viewer may send (a paste of text).
	maxClientMessage = 64 << 10
	// maxControlBacklog is how many JSON messages may wait for a viewer
	// before it is deemed gone; frames never wait more than one.
	maxControlBacklog = 64
)

// viewer is one open live-view socket. Its writer sends, in order, the
// waiting JSON messages, the tab strip if it changed, and the newest frame:
// the mailbox holds one frame, which a newer one replaces.
type viewer struct {
	ws          *websocket.Conn
	interactive bool

	// Under the hub's lock.
	pick          string // the tab chosen, "" to follow the active tab
	watching      string // the tab whose frames this viewer gets
	width, height float64
	dpr           float64

	closing atomic.Bool // a close frame went out: no more read deadlines
	quit    chan struct{}
	wakeup  chan struct{}

	mu          sync.Mutex
	frame       *frame
	ctrl        [][]byte
	tabs        *hub // set: send the tab strip of this hub
	end         *endNote
	dead        bool // the writer has stopped
	lastRefusal time.Time
}

// endNote is how a viewer's socket ends: an "ended" message naming the
// session's end reason when ended, then a close frame.
type endNote struct {
	code   int
	reason string
	ended  bool
}

// endedNote tells of the session's end.
func endedNote(e sessions.End) endNote {
	return endNote{code: e.CloseCode(), reason: e.Text, ended: true}
}

func newViewer(ws *websocket.Conn, interactive bool) *viewer {
	return &viewer{ws: ws, interactive: interactive, quit: make(chan struct{}), wakeup: make(chan struct{}, 1)}
}

func (v *viewer) wake() {
	select {
	case v.wakeup <- struct{}{}:
	default:
	}
}

// offer puts f in the mailbox, replacing (and releasing) an unsent frame.
// The caller has added a claim for this viewer.
func (v *viewer) offer(f *frame) {
	v.mu.Lock()
	if v.dead || v.end != nil {
		v.mu.Unlock()
		f.release()
		return
	}
	old := v.frame
	v.frame = f
	v.mu.Unlock()
	v.wake()
	if old != nil {
		old.release()
	}
}

// drop empties the mailbox of a viewer that left.
func (v *viewer) drop() {
	v.mu.Lock()
	v.dead = true
	f := v.frame
	v.frame = nil
	v.mu.Unlock()
	if f != nil {
		f.release()
	}
}

func (v *viewer) markTabs(hb *hub) {
	v.mu.Lock()
	v.tabs = hb
	v.mu.Unlock()
	v.wake()
}

func (v *viewer) send(msg any) {
	b, err := json.Marshal(msg)
	if err != nil {
		return
	}
	v.mu.Lock()
	if v.dead || v.end != nil {
		v.mu.Unlock()
		return
	}
	if len(v.ctrl) >= maxControlBacklog {
		v.mu.Unlock()
		v.finish(endNote{code: websocket.ClosePolicyViolation, reason: "viewer is not reading its messages"})
		return
	}
	v.ctrl = append(v.ctrl, b)
	v.mu.Unlock()
	v.wake()
}

func (v *viewer) sendError(code, msg string) {
	v.send(map[string]string{"type": "error", "code": code, "message": msg})
}

// refuse answers input on a view-only socket, at most once a second.
func (v *viewer) refuse() {
	v.mu.Lock()
	now := time.Now()
	quiet := now.Sub(v.lastRefusal) < time.Second
	if !quiet {
		v.lastRefusal = now
	}
	v.mu.Unlock()
	if !quiet {
		v.sendError("READ_ONLY", "this live view is read-only: input needs the session's interactiveLiveViewUrl")
	}
}

// finish ends the socket with n once what is queued has been sent.
func (v *viewer) finish(n endNote) {
	v.mu.Lock()
	if v.end == nil {
		v.end = &n
	}
	v.mu.Unlock()
	v.wake()
}

func (v *viewer) write(mt int, b []byte) bool {
	v.ws.SetWriteDeadline(time.Now().Add(writeTimeout))
	if err := v.ws.WriteMessage(mt, b); err != nil {
		v.ws.Close() // the reader stops too
		return false
	}
	return true
}

// writeLoop is the socket's one writer.
func (v *viewer) writeLoop() {
	defer v.drop()
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	for {
		select {
		case <-v.wakeup:
			if !v.flush() {
				return
			}
		case <-ping.C:
			if err := v.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeTimeout)); err != nil {
				v.ws.Close()
				return
			}
		case <-v.quit:
			return
		}
	}
}

// flush writes what waits; false once the socket is done.
func (v *viewer) flush() bool {
	for {
		v.mu.Lock()
		ctrl, f, tabs, end := v.ctrl, v.frame, v.tabs, v.end
		v.ctrl, v.frame, v.tabs = nil, nil, nil
		v.mu.Unlock()
		if len(ctrl) == 0 && f == nil && tabs == nil && end == nil {
			return true
		}
		ok := true
		for _, m := range ctrl {
			if ok = v.write(websocket.TextMessage, m); !ok {
				break
			}
		}
		if ok && tabs != nil {
			ok = v.write(websocket.TextMessage, tabs.tabsMessage(v))
		}
		if f != nil {
			if ok {
				ok = v.write(websocket.BinaryMessage, f.msg)
				f.sent()
			} else {
				f.release()
			}
		}
		if !ok {
			return false
		}
		if end != nil {
			v.close(*end)
			return false
		}
	}
}

// close sends the end of the session, if it ended, and a close frame naming
// the reason, then gives the viewer a second to answer before the reader
// gives up on it.
func (v *viewer) close(n endNote) {
	if n.ended {
		b, _ := json.Marshal(map[string]string{"type": "ended", "reason": n.reason})
		if !v.write(websocket.TextMessage, b) {
			return
		}
	}
	reason := n.reason
	if n.ended {
		reason = "session ended: " + reason
	}
	if len(reason) > 123 {
		reason = reason[:123]
	}
	v.closing.Store(true)
	v.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(n.code, reason), time.Now().Add(time.Second))
	v.ws.SetReadDeadline(time.Now().Add(time.Second))
}

// readLoop reads the viewer's messages until the socket ends; hb is nil for
// a viewer that could not join (it is only waiting for its close frame).
func (v *viewer) readLoop(hb *hub) {
	v.ws.SetReadLimit(maxClientMessage)
	extend := func() {
		if !v.closing.Load() {
			v.ws.SetReadDeadline(time.Now().Add(readTimeout))
		}
	}
	extend()
	v.ws.SetPongHandler(func(string) error {
		extend()
		return nil
	})
	for {
		mt, msg, err := v.ws.ReadMessage()
		if err != nil {
			return
		}
		extend()
		if hb != nil && mt == websocket.TextMessage {
			hb.handle(v, msg)
		}
	}
}

// serveViewer runs one viewer's socket: it attaches to the session (which
// then waits for the viewer to be told of its end), joins the hub and reads
// the viewer's messages until either side ends.
func (h *Handler) serveViewer(w http.ResponseWriter, r *http.Request, s *sessions.Session, interactive bool) {
	detach, ok := s.Attach()
	if !ok {
		writeError(w, r, http.StatusGone, "SESSION_DESTROYED", "browser session was destroyed: "+s.Ended().Text)
		return
	}
	defer detach()
	ws, err := h.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered
	}
	defer ws.Close()
	s.Touch()
	v := newViewer(ws, interactive)
	// The page says its size up front, so the first screencast has it.
	q := r.URL.Query()
	v.width, v.height, v.dpr = queryFloat(q, "width"), queryFloat(q, "height"), queryFloat(q, "dpr")
	mode := "view"
	if interactive {
		mode = "interactive"
	}
	v.send(map[string]any{"type": "hello", "mode": mode, "session": s.ID(), "interactive": interactive})
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		v.writeLoop()
	}()
	hb, err := h.join(s, v)
	if err != nil {
		select {
		case <-s.Done():
			v.finish(endedNote(s.Ended()))
		default:
			h.log.Warn("live view: could not reach the session's browser", "session", s.ID(), "err", err)
			v.finish(endNote{code: websocket.CloseInternalServerErr, reason: "could not reach the session's browser"})
		}
		v.readLoop(nil)
	} else {
		v.readLoop(hb)
		h.leave(hb, v)
	}
	close(v.quit)
	<-writerDone
}

func queryFloat(q url.Values, key string) float64 {
	f, err := strconv.ParseFloat(q.Get(key), 64)
	if err != nil || !finite(f) || f < 0 || f > 100000 {
		return 0
	}
	return f
}
