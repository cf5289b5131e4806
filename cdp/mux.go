package cdp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// Mux is the one CDP connection of a browser started with
// --remote-debugging-pipe, shared by every client of that browser. The
// browser then listens on no port at all, so nothing but Trawler can reach
// its DevTools: not a page of any browser, not another container.
//
// Each client gets a Channel that behaves like a WebSocket to the browser's
// /devtools/browser or /devtools/page/<id> endpoint. Underneath, a channel
// is a flat session that the Mux opened on the pipe
// (Target.attachToBrowserTarget or Target.attachToTarget): the client's
// messages without a sessionId are sent to it, and the sessions the client
// attaches to from there are recorded as its own, so that each message from
// the browser goes to the one channel that owns its session and a channel
// can never address another's. The browser keeps per-session state
// (auto-attach, enabled domains, interception) as it does per WebSocket.
//
// Methods that would reach the host from the browser (file:// URLs, host
// file paths, another proxy, port forwarding) are refused or confined; see
// vet.
type Mux struct {
	w      io.Writer
	closer io.Closer
	opts   MuxOptions

	wmu sync.Mutex // one writer on the pipe at a time

	mu       sync.Mutex
	nextID   int64
	pending  map[int64]func(json.RawMessage, error) // the Mux's own calls, run on the reader
	sessions map[string]*route
	targets  map[string]*trackedTarget
	seq      int64 // activation clock of the tracked targets
	version  map[string]any
	err      error
	done     chan struct{}
}

// MuxOptions confine what clients may ask of the browser.
type MuxOptions struct {
	// DownloadDir is where downloads go whatever directory a client names
	// (in the browser's own filesystem); files offered to file inputs must
	// lie in it. Empty refuses both.
	DownloadDir string
}

type route struct {
	ch     *Channel
	target string // the target the session is attached to; "" for a browser session
}

type trackedTarget struct {
	info   TargetInfo
	active int64 // the activation clock when it last came to the front
}

// TargetInfo is the part of CDP's Target.TargetInfo that the Mux tracks.
type TargetInfo struct {
	TargetID         string `json:"targetId"`
	Type             string `json:"type"`
	Title            string `json:"title"`
	URL              string `json:"url"`
	OpenerID         string `json:"openerId,omitempty"`
	BrowserContextID string `json:"browserContextId,omitempty"`
}

// ErrMuxClosed is the error of a Mux whose pipe closed, usually because the
// browser exited.
var ErrMuxClosed = errors.New("the browser's DevTools pipe closed")

// NewMux starts reading the browser's messages from r (the browser's fd 4,
// NUL-terminated JSON) and writes to w (its fd 3); closer closes both.
// Call Start before opening channels.
func NewMux(r io.Reader, w io.Writer, closer io.Closer, opts MuxOptions) *Mux {
	m := &Mux{w: w, closer: closer, opts: opts, pending: map[int64]func(json.RawMessage, error){},
		sessions: map[string]*route{}, targets: map[string]*trackedTarget{}, done: make(chan struct{})}
	go m.read(r)
	return m
}

// Start asks the browser for its version and to report its targets, both
// at once. It doubles as the readiness check: it returns once the browser
// answers.
func (m *Mux) Start(ctx context.Context) error {
	var v struct {
		ProtocolVersion string `json:"protocolVersion"`
		Product         string `json:"product"`
		Revision        string `json:"revision"`
		UserAgent       string `json:"userAgent"`
		JSVersion       string `json:"jsVersion"`
	}
	discovered := make(chan error, 1)
	go func() { discovered <- m.call(ctx, "Target.setDiscoverTargets", map[string]any{"discover": true}, nil) }()
	if err := m.call(ctx, "Browser.getVersion", nil, &v); err != nil {
		return err
	}
	m.mu.Lock()
	m.version = map[string]any{"Browser": v.Product, "Protocol-Version": v.ProtocolVersion,
		"User-Agent": v.UserAgent, "V8-Version": v.JSVersion, "WebKit-Version": v.Revision}
	m.mu.Unlock()
	return <-discovered
}

// Version is the browser's /json/version document, without its
// webSocketDebuggerUrl (the caller knows how it is reached).
func (m *Mux) Version() map[string]any {
	m.mu.Lock()
	defer m.mu.Unlock()
	v := make(map[string]any, len(m.version)+1)
	for k, x := range m.version {
		v[k] = x
	}
	return v
}

// Targets lists the browser's targets as its /json/list would: pages first,
// the one brought to the front most recently first (a new tab comes to the
// front, as do Target.activateTarget and Page.bringToFront), then the rest.
// Titles are asked of the browser (Target.getTargets): a title set by the
// document is not reported by target events. When the browser does not
// answer within ctx, the titles last seen are listed.
func (m *Mux) Targets(ctx context.Context) []TargetInfo {
	var fresh struct {
		TargetInfos []TargetInfo `json:"targetInfos"`
	}
	if err := m.call(ctx, "Target.getTargets", nil, &fresh); err == nil {
		m.mu.Lock()
		for _, info := range fresh.TargetInfos {
			if t := m.targets[info.TargetID]; t != nil {
				t.info = info
			}
		}
		m.mu.Unlock()
	}
	m.mu.Lock()
	// Copies: the reader updates the targets under the lock.
	all := make([]trackedTarget, 0, len(m.targets))
	for _, t := range m.targets {
		if t.info.Type != "browser" && t.info.Type != "tab" {
			all = append(all, *t)
		}
	}
	m.mu.Unlock()
	sort.Slice(all, func(i, j int) bool {
		pi, pj := all[i].info.Type == "page", all[j].info.Type == "page"
		if pi != pj {
			return pi
		}
		return all[i].active > all[j].active
	})
	out := make([]TargetInfo, len(all))
	for i, t := range all {
		out[i] = t.info
	}
	return out
}

// ActivePage is the page most recently brought to the front.
func (m *Mux) ActivePage(ctx context.Context) (TargetInfo, error) {
	for _, t := range m.Targets(ctx) {
		if t.Type == "page" && !strings.HasPrefix(t.URL, "devtools://") {
			return t, nil
		}
	}
	return TargetInfo{}, ErrNoPage
}

// Dial opens a browser-level connection.
func (m *Mux) Dial(ctx context.Context) (*Conn, error) {
	ch, err := m.Open(ctx, "")
	if err != nil {
		return nil, err
	}
	return NewConn(ch), nil
}

// DialPage opens a connection to page target id, as its
// /devtools/page/<id> endpoint would.
func (m *Mux) DialPage(ctx context.Context, id string) (*Conn, error) {
	ch, err := m.Open(ctx, id)
	if err != nil {
		return nil, err
	}
	return NewConn(ch), nil
}

// Open opens a channel for Trawler's own use to the browser (target "") or
// to one target. What Trawler's code sends on it goes to the browser as it
// is.
func (m *Mux) Open(ctx context.Context, target string) (*Channel, error) {
	return m.open(ctx, target, false)
}

// OpenClient opens a channel for a session's client, as Open does: every
// message the client sends on it is parsed strictly, judged by the policy
// and re-encoded (see WriteMessage).
func (m *Mux) OpenClient(ctx context.Context, target string) (*Channel, error) {
	return m.open(ctx, target, true)
}

func (m *Mux) open(ctx context.Context, target string, client bool) (*Channel, error) {
	ch := &Channel{m: m, target: target, client: client, wake: make(chan struct{}, 1), done: make(chan struct{})}
	method, params := "Target.attachToBrowserTarget", any(nil)
	if target != "" {
		method, params = "Target.attachToTarget", map[string]any{"targetId": target, "flatten": true}
	}
	opened := make(chan error, 1)
	err := m.send(method, params, func(res json.RawMessage, err error) {
		// On the reader, before any message of the new session: route it
		// from the first.
		var r struct {
			SessionID string `json:"sessionId"`
		}
		if err == nil {
			err = json.Unmarshal(res, &r)
		}
		if err == nil {
			m.mu.Lock()
			ch.session = r.SessionID
			m.sessions[r.SessionID] = &route{ch: ch, target: target}
			m.mu.Unlock()
		}
		opened <- err
	})
	if err != nil {
		return nil, err
	}
	select {
	case err := <-opened:
		if err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		return ch, nil
	case <-ctx.Done():
		// The session may open after all: close it when it does.
		go func() {
			if <-opened == nil {
				ch.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// Done is closed once the pipe has closed.
func (m *Mux) Done() <-chan struct{} { return m.done }

// Err says why the pipe closed; nil while it is open.
func (m *Mux) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// Close closes the pipe, and with it every channel.
func (m *Mux) Close() error {
	err := m.closer.Close()
	<-m.done
	return err
}

// call sends one of the Mux's own commands and waits for its result.
func (m *Mux) call(ctx context.Context, method string, params, result any) error {
	got := make(chan error, 1)
	err := m.send(method, params, func(res json.RawMessage, err error) {
		if err == nil && result != nil {
			err = json.Unmarshal(res, result)
		}
		got <- err
	})
	if err != nil {
		return err
	}
	select {
	case err := <-got:
		if err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// send writes one of the Mux's own commands; done runs on the reader when
// the reply comes, or with an error when the pipe closes first.
func (m *Mux) send(method string, params any, done func(json.RawMessage, error)) error {
	var raw json.RawMessage
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return err
		}
		raw = b
	}
	m.mu.Lock()
	if m.err != nil {
		m.mu.Unlock()
		return m.err
	}
	m.nextID++
	id := m.nextID
	m.pending[id] = done
	m.mu.Unlock()
	msg, _ := json.Marshal(message{ID: id, Method: method, Params: raw})
	if err := m.write(msg); err != nil {
		m.mu.Lock()
		_, ok := m.pending[id]
		delete(m.pending, id)
		m.mu.Unlock()
		if ok {
			return err
		}
	}
	return nil
}

// write sends one message on the pipe.
func (m *Mux) write(msg []byte) error {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	buf := make([]byte, len(msg)+1)
	copy(buf, msg)
	if _, err := m.w.Write(buf); err != nil {
		return fmt.Errorf("writing to the browser: %w", err)
	}
	return nil
}

func (m *Mux) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 256<<10)
	var err error
	for {
		var msg []byte
		msg, err = br.ReadBytes(0)
		if err != nil {
			break
		}
		m.dispatch(msg[:len(msg)-1])
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, os.ErrClosed) {
		err = ErrMuxClosed
	} else {
		err = fmt.Errorf("%w: %v", ErrMuxClosed, err)
	}
	m.mu.Lock()
	m.err = err
	pending := m.pending
	m.pending = nil
	chans := map[*Channel]bool{}
	for _, r := range m.sessions {
		chans[r.ch] = true
	}
	m.sessions = map[string]*route{}
	m.mu.Unlock()
	for _, done := range pending {
		done(nil, err)
	}
	for ch := range chans {
		ch.fail(err)
	}
	close(m.done)
}

// dispatch routes one message from the browser.
func (m *Mux) dispatch(msg []byte) {
	h, err := scanHeader(msg)
	if err != nil {
		return // not from a working browser; nothing can be done with it
	}
	if h.sessionID == "" {
		m.root(h, msg)
		return
	}
	m.mu.Lock()
	rt := m.sessions[h.sessionID]
	var ch *Channel
	if rt != nil {
		ch = rt.ch
	}
	switch h.method {
	case "Target.attachedToTarget":
		// A session the channel's client attached (or auto-attached) to
		// is the channel's too.
		if ch != nil {
			var p struct {
				SessionID  string     `json:"sessionId"`
				TargetInfo TargetInfo `json:"targetInfo"`
			}
			if json.Unmarshal(paramsOf(msg), &p) == nil && p.SessionID != "" {
				m.sessions[p.SessionID] = &route{ch: ch, target: p.TargetInfo.TargetID}
			}
		}
	case "Target.detachedFromTarget":
		var p struct {
			SessionID string `json:"sessionId"`
		}
		if json.Unmarshal(paramsOf(msg), &p) == nil {
			if child := m.sessions[p.SessionID]; child != nil && child.ch == ch {
				delete(m.sessions, p.SessionID)
			}
		}
	}
	m.mu.Unlock()
	if ch == nil {
		return
	}
	if h.sessionID == ch.session {
		msg = withoutSession(msg, h)
	}
	ch.deliver(msg)
}

// root handles a message of the pipe's own session: replies to the Mux's
// calls and the target events it asked for.
func (m *Mux) root(h header, msg []byte) {
	if h.hasID {
		var r struct {
			Result json.RawMessage `json:"result"`
			Error  *Error          `json:"error"`
		}
		err := json.Unmarshal(msg, &r)
		if err == nil && r.Error != nil {
			err = r.Error
		}
		m.mu.Lock()
		done := m.pending[h.id]
		delete(m.pending, h.id)
		m.mu.Unlock()
		if done != nil {
			done(r.Result, err)
		}
		return
	}
	switch h.method {
	case "Target.targetCreated", "Target.targetInfoChanged":
		var p struct {
			TargetInfo TargetInfo `json:"targetInfo"`
		}
		if json.Unmarshal(paramsOf(msg), &p) != nil {
			return
		}
		m.mu.Lock()
		t := m.targets[p.TargetInfo.TargetID]
		if t == nil {
			// A new tab comes to the front, as in a browser with a window.
			m.seq++
			t = &trackedTarget{active: m.seq}
			m.targets[p.TargetInfo.TargetID] = t
		}
		t.info = p.TargetInfo
		m.mu.Unlock()
	case "Target.targetDestroyed":
		var p struct {
			TargetID string `json:"targetId"`
		}
		if json.Unmarshal(paramsOf(msg), &p) == nil {
			m.mu.Lock()
			delete(m.targets, p.TargetID)
			m.mu.Unlock()
		}
	case "Target.detachedFromTarget":
		// A channel's own session ended (its target closed, or the
		// channel detached it).
		var p struct {
			SessionID string `json:"sessionId"`
		}
		if json.Unmarshal(paramsOf(msg), &p) != nil {
			return
		}
		m.mu.Lock()
		rt := m.sessions[p.SessionID]
		var gone []string
		if rt != nil && rt.ch.session == p.SessionID {
			for sid, r := range m.sessions {
				if r.ch == rt.ch {
					gone = append(gone, sid)
				}
			}
			for _, sid := range gone {
				delete(m.sessions, sid)
			}
		}
		m.mu.Unlock()
		if rt != nil && rt.ch.session == p.SessionID {
			rt.ch.fail(ErrTargetClosed)
		}
	}
}

// ErrTargetClosed ends a page channel whose target closed.
var ErrTargetClosed = errors.New("the target closed")

// activate brings target to the front of the tracked order.
func (m *Mux) activate(target string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t := m.targets[target]; t != nil {
		m.seq++
		t.active = m.seq
	}
}

// owner returns the channel and target of a session.
func (m *Mux) owner(sessionID string) (*Channel, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.sessions[sessionID]; r != nil {
		return r.ch, r.target
	}
	return nil, ""
}

// paramsOf returns the raw params member of a message (nil when absent).
func paramsOf(msg []byte) json.RawMessage {
	var p struct {
		Params json.RawMessage `json:"params"`
	}
	json.Unmarshal(msg, &p)
	return p.Params
}

// Channel is one client's connection through a Mux. It implements
// Transport.
type Channel struct {
	m       *Mux
	session string // the channel's own session: messages without one go to it
	target  string
	client  bool // a session's client's (OpenClient), not Trawler's own

	mu      sync.Mutex
	queue   [][]byte
	queued  int                                 // bytes in queue
	forward func(msg []byte, direct bool) error // set by Forward
	writing bool                                // forward is running
	err     error
	wake    chan struct{}
	done    chan struct{}
	closed  bool
}

// maxQueued bounds what a channel holds for a client that does not read:
// past it the channel fails rather than the browser's other clients wait.
const maxQueued = 512 << 20

// ErrSlowClient ends a channel whose client stopped reading.
var ErrSlowClient = errors.New("the client did not read the browser's messages")

func (c *Channel) deliver(msg []byte) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	if fwd := c.forward; fwd != nil && !c.writing && len(c.queue) == 0 && len(msg) <= directMax {
		// The client has taken every message so far: hand it this one
		// here, on the reader, rather than wake its forwarder for it.
		c.writing = true
		c.mu.Unlock()
		err := fwd(msg, true)
		c.mu.Lock()
		c.writing = false
		backlog := len(c.queue) > 0
		c.mu.Unlock()
		if err != nil {
			c.fail(err)
			go c.detach()
			return
		}
		if backlog {
			c.wakeUp()
		}
		return
	}
	c.queue = append(c.queue, msg)
	c.queued += len(msg)
	over := c.queued > maxQueued
	c.mu.Unlock()
	if over {
		c.fail(ErrSlowClient)
		// Not on the reader: detaching writes to the pipe, and the browser
		// may be waiting for the reader to take its next message.
		go c.detach()
		return
	}
	c.wakeUp()
}

func (c *Channel) wakeUp() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// directMax is the largest message the reader hands a forwarding client
// itself (see Forward); larger ones (screenshots) go through the queue, so
// that the other channels of the browser do not wait while one is written.
const directMax = 64 << 10

// Forward passes the channel's messages to fn, in order, until the channel
// ends, and returns why it ended: it replaces ReadMessage for a client
// that forwards each message at once (the CDP proxy). While the client
// keeps up, a small message is passed on the Mux's reader itself, with
// direct true, which saves waking another goroutine for each reply; fn
// must then not block for long (a write deadline): the browser's other
// channels wait for it. Anything else is passed from the calling goroutine.
func (c *Channel) Forward(fn func(msg []byte, direct bool) error) error {
	c.mu.Lock()
	c.forward = fn
	c.mu.Unlock()
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return ErrChannelClosed
		}
		if len(c.queue) > 0 && !c.writing {
			msg := c.queue[0]
			c.queue[0] = nil
			c.queue = c.queue[1:]
			c.queued -= len(msg)
			c.writing = true
			c.mu.Unlock()
			err := fn(msg, false)
			c.mu.Lock()
			c.writing = false
			c.mu.Unlock()
			if err != nil {
				return err
			}
			continue
		}
		err, idle := c.err, !c.writing
		c.mu.Unlock()
		if err != nil && idle {
			return err
		}
		select {
		case <-c.wake:
		case <-c.done:
			if err != nil {
				// Ended while the reader was writing: wait for it.
				time.Sleep(time.Millisecond)
			}
		}
	}
}

// fail ends the channel: ReadMessage returns err once the queue is read.
func (c *Channel) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = err
	close(c.done)
}

// ReadMessage returns the next message from the browser for this channel.
func (c *Channel) ReadMessage() ([]byte, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, ErrChannelClosed
		}
		if len(c.queue) > 0 {
			msg := c.queue[0]
			c.queue[0] = nil
			c.queue = c.queue[1:]
			c.queued -= len(msg)
			c.mu.Unlock()
			return msg, nil
		}
		err := c.err
		c.mu.Unlock()
		if err != nil {
			return nil, err
		}
		select {
		case <-c.wake:
		case <-c.done:
		}
	}
}

// ErrChannelClosed is returned by a channel's methods after its Close.
var ErrChannelClosed = errors.New("use of closed CDP channel")

// WriteMessage sends one message: one without a sessionId goes to the
// channel's own session; one with a sessionId must name a session of this
// channel. On a client's channel (OpenClient) the message is first parsed
// strictly (ParseCommand) and judged (the policy in policy.go): a message
// the browser must not get is answered here with a CDP error, and what the
// browser gets is Trawler's re-encoding of the message it judged, never
// the client's bytes. A client's Browser.close is not sent: WriteMessage
// returns ErrBrowserClose, for the session's owner to end it.
func (c *Channel) WriteMessage(msg []byte) error {
	c.mu.Lock()
	err, closed := c.err, c.closed
	c.mu.Unlock()
	if closed {
		return ErrChannelClosed
	}
	if err != nil {
		return err
	}
	if c.client {
		return c.writeClient(msg)
	}
	h, err := scanHeader(msg)
	if err != nil {
		c.reply(-1, "", &Error{Code: -32700, Message: "Message must be a JSON object"})
		return nil
	}
	if h.sessionID != "" {
		if owner, _ := c.m.owner(h.sessionID); owner != c {
			c.reply(h.id, h.sessionID, &Error{Code: -32001, Message: "Session with given id not found."})
			return nil
		}
		return c.m.write(msg)
	}
	return c.m.write(withSession(msg, c.session))
}

// ErrBrowserClose is returned by a client channel's WriteMessage for
// Browser.close, which is not sent to the browser: the session it belongs
// to should end instead.
var ErrBrowserClose = errors.New("the client asked to close the browser")

func (c *Channel) writeClient(msg []byte) error {
	cmd, err := ParseCommand(msg)
	if err != nil {
		c.reply(cmd.ID, cmd.SessionID, &Error{Code: -32700, Message: "Trawler: " + err.Error()})
		return nil
	}
	cmd.target = c.target
	session := c.session
	if cmd.SessionID != "" {
		owner, target := c.m.owner(cmd.SessionID)
		if owner != c {
			c.reply(cmd.ID, cmd.SessionID, &Error{Code: -32001, Message: "Session with given id not found."})
			return nil
		}
		cmd.target, session = target, cmd.SessionID
	}
	if refusal := c.m.vet(c, cmd); refusal != nil {
		c.reply(cmd.ID, cmd.SessionID, refusal)
		return nil
	}
	if cmd.Method == "Browser.close" {
		return ErrBrowserClose
	}
	out, err := cmd.encode(session)
	if err != nil {
		c.reply(cmd.ID, cmd.SessionID, refuse(err.Error()))
		return nil
	}
	return c.m.write(out)
}

// reply answers a client's command itself, as the browser would; id -1
// when the command's id could not be read.
func (c *Channel) reply(id int64, sessionID string, e *Error) {
	r := map[string]any{"error": e}
	if id >= 0 {
		r["id"] = id
	}
	if sessionID != "" {
		r["sessionId"] = sessionID
	}
	msg, _ := json.Marshal(r)
	c.deliver(msg)
}

// Close detaches the channel's session (and with it every session its
// client attached from there) and ends the channel.
func (c *Channel) Close() error {
	c.mu.Lock()
	already := c.closed
	c.closed = true
	c.mu.Unlock()
	if already {
		return nil
	}
	c.fail(ErrChannelClosed)
	c.detach()
	return nil
}

// detach forgets the channel's sessions and detaches its own one.
func (c *Channel) detach() {
	m := c.m
	m.mu.Lock()
	for sid, r := range m.sessions {
		if r.ch == c {
			delete(m.sessions, sid)
		}
	}
	m.mu.Unlock()
	if c.session != "" {
		m.send("Target.detachFromTarget", map[string]any{"sessionId": c.session}, func(json.RawMessage, error) {})
	}
}

// Done is closed when the channel has ended.
func (c *Channel) Done() <-chan struct{} { return c.done }
