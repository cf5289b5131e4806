// Package sessions owns interactive browser sessions (POST /v2/browser):
// each holds a lease from the browser pool for its life, with its tokens,
// its ttl and activityTtl, its profile, the attached clients that must be
// told of its end, and JavaScript execution in its active page. It knows
// nothing of HTTP.
package sessions

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/google/uuid"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/profiles"
	"github.com/trawler-dev/trawler/store"
)

// Errors callers branch on.
var (
	// ErrNotFound: no such session, or it belongs to another team.
	ErrNotFound = errors.New("browser session not found")
	// ErrClosed: the manager is shutting down.
	ErrClosed = errors.New("the service is shutting down")
)

// UnconfinedError refuses a session on a host whose browsers cannot be
// confined: its client would stand behind the CDP proxy's policy alone.
type UnconfinedError struct{ Reason string }

func (e *UnconfinedError) Error() string { return "browser sessions are not available: " + e.Reason }

// DestroyedError is returned for a session that has already ended.
type DestroyedError struct {
	ID     string
	Reason string
}

func (e *DestroyedError) Error() string {
	return fmt.Sprintf("browser session %s was already destroyed (%s)", e.ID, e.Reason)
}

// Manager runs interactive browser sessions on leases from the pool.
type Manager struct {
	pool  *browsers.Pool
	store *store.Store
	log   *slog.Logger

	// Recorder records the sessions created with Record; without one,
	// Create refuses them.
	Recorder Recorder

	// BindEgress, when set, binds a new session's browser's egress route
	// to its team and id, so that its traffic is counted against them.
	BindEgress func(browser, team, session string)

	mu     sync.Mutex
	active map[string]*Session
	closed bool
	refuse string         // why sessions are refused, when they are
	wg     sync.WaitGroup // session watchers
}

// RefuseSessions makes Create refuse every session with an
// UnconfinedError saying why.
func (m *Manager) RefuseSessions(why string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.refuse = why
}

// NewManager returns a manager. Sessions left active in the store by a
// service that did not shut down cleanly are marked destroyed.
func NewManager(ctx context.Context, pool *browsers.Pool, st *store.Store, log *slog.Logger) (*Manager, error) {
	n, err := st.EndActiveSessions(ctx, Restarted.Text, Credits)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		log.Warn("marked sessions of an earlier run destroyed", "sessions", n)
	}
	return &Manager{pool: pool, store: st, log: log, active: map[string]*Session{}}, nil
}

// EndLost ends the sessions of the nodes sharing the store that were last
// seen alive before before: their browsers went with them. It returns how
// many it ended.
func (m *Manager) EndLost(ctx context.Context, before time.Time) (int, error) {
	return m.store.EndLostSessions(ctx, before, NodeLost.Text, Credits)
}

// CreateOptions are the options of a new session.
type CreateOptions struct {
	Team          string
	TeamLimit     int
	TTL           time.Duration
	ActivityTTL   time.Duration
	StreamWebView bool
	// Record records the session for replay (Recorder).
	Record bool
	// Profile, when set, is restored into the browser before the session
	// starts and closed when it ends (a writer saves the browser's state
	// then). Create takes ownership: it closes the profile if it fails.
	Profile Profile
}

// Profile is browser state a session loads at its start and, for a writer,
// saves at its end (a *profiles.Use).
type Profile interface {
	// Apply restores the state into the browser's default context.
	Apply(ctx context.Context, browser *cdp.Mux, browserContextID string) error
	// Close ends the use; with profiles.Save, a writer captures and saves
	// the browser's state first.
	Close(ctx context.Context, changes profiles.Changes) error
}

// Recorder records a session's tabs (a *recording.Archive).
type Recorder interface {
	// Record starts recording browser's tabs for team's session; stop
	// writes what is left, while the browser still runs.
	Record(ctx context.Context, browser *cdp.Mux, team, session string, started time.Time) (stop func(context.Context), err error)
}

// ErrNoRecorder refuses a recorded session on a manager without a
// Recorder.
var ErrNoRecorder = errors.New("session recording is not available on this server")

// recordingStopTimeout bounds the last fetch and write of a recording.
const recordingStopTimeout = 15 * time.Second

// profileGrace is how long a session's browser outlives its ttl, so that
// a profile writer can save the browser's state before it is stopped.
const profileGrace = time.Minute

// profileSaveTimeout bounds the capture and save of a profile at the end
// of a session.
const profileSaveTimeout = 50 * time.Second

// Session is one live interactive session.
type Session struct {
	rec     store.Session
	lease   *browsers.Lease
	mgr     *Manager
	profile Profile
	// stopRecording ends the session's recording; nil when unrecorded.
	stopRecording func(context.Context)

	lastActivity atomic.Int64 // unix nanoseconds

	mu       sync.Mutex
	ended    bool
	end      End
	endedAt  time.Time
	credits  int // billed when the session ended
	done     chan struct{}
	attached int
	detached chan struct{} // closed when attached drops to 0 after the end
}

// ID is the session's id.
func (s *Session) ID() string { return s.rec.ID }

// Team is the session's team.
func (s *Session) Team() string { return s.rec.Team }

// BrowserID names the session's browser (its runtime id).
func (s *Session) BrowserID() string { return s.lease.Browser().ID() }

// CDP is the browser's DevTools connection, on which each client opens a
// channel of its own.
func (s *Session) CDP() *cdp.Mux { return s.lease.Browser().CDP() }

// Done is closed when the session ends.
func (s *Session) Done() <-chan struct{} { return s.done }

// Ended says why the session ended; the zero End while it lasts.
func (s *Session) Ended() End {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.end
}

// End ends the session with e, as DELETE does.
func (s *Session) End(e End) { s.mgr.finish(s, e) }

// Touch records activity, which postpones the activityTtl expiry.
func (s *Session) Touch() { s.lastActivity.Store(time.Now().UnixNano()) }

// CheckCDPToken reports whether token is the session's CDP token.
func (s *Session) CheckCDPToken(token string) bool { return tokenEqual(token, s.rec.CDPToken) }

// CheckLiveToken reports whether token opens the session's live view, and
// whether it is the interactive one (which may also send input).
func (s *Session) CheckLiveToken(token string) (interactive, ok bool) {
	switch {
	case tokenEqual(token, s.rec.InteractToken):
		return true, true
	case tokenEqual(token, s.rec.ViewToken):
		return false, true
	}
	return false, false
}

// Attach registers a client connection. The session waits for every
// attached connection to detach (after it has been told of the end through
// Done) before it frees the browser, so clients get a close frame naming the
// reason rather than a dropped socket. ok is false once the session ended.
func (s *Session) Attach() (detach func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return nil, false
	}
	s.attached++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.attached--
			if s.attached == 0 && s.detached != nil {
				close(s.detached)
				s.detached = nil
			}
			s.mu.Unlock()
		})
	}, true
}

// Record returns the session as it stands, activity included.
func (s *Session) Record() store.Session {
	r := s.rec
	r.LastActivity = time.Unix(0, s.lastActivity.Load()).UTC()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		// Ending (saving a profile, freeing the browser) takes a moment;
		// the record says destroyed from its start, as the store does.
		r.Status, r.EndReason, r.DestroyedAt = "destroyed", s.end.Text, s.endedAt
	}
	return r
}

func tokenEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

func newToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Create leases a browser and starts a session on it.
func (m *Manager) Create(ctx context.Context, o CreateOptions) (*Session, error) {
	m.mu.Lock()
	closed, refuse := m.closed, m.refuse
	m.mu.Unlock()
	if closed || refuse != "" || (o.Record && m.Recorder == nil) {
		if o.Profile != nil {
			o.Profile.Close(context.Background(), profiles.Discard)
		}
		if !closed && refuse == "" {
			return nil, ErrNoRecorder
		}
		if refuse != "" {
			return nil, &UnconfinedError{Reason: refuse}
		}
		return nil, ErrClosed
	}
	// The pool's deadline is a backstop: the session's own ttl timer (in
	// watch) ends it first, while its browser still runs, so that a
	// profile can be saved.
	lease, err := m.pool.Acquire(ctx, browsers.LeaseRequest{Team: o.Team, TeamLimit: o.TeamLimit, Lifetime: o.TTL + profileGrace})
	if err != nil {
		if o.Profile != nil {
			o.Profile.Close(context.Background(), profiles.Discard)
		}
		return nil, err
	}
	if o.Profile != nil {
		if err := o.Profile.Apply(ctx, lease.Browser().CDP(), ""); err != nil {
			o.Profile.Close(context.Background(), profiles.Discard)
			lease.Release(browsers.Destroy)
			return nil, err
		}
	}
	now := time.Now().UTC()
	s := &Session{
		rec: store.Session{
			ID: uuid.NewString(), Team: o.Team, Status: "active", StreamWebView: o.StreamWebView,
			TTL: o.TTL, ActivityTTL: o.ActivityTTL,
			CDPToken: newToken(), ViewToken: newToken(), InteractToken: newToken(),
			CreatedAt: now, ExpiresAt: now.Add(o.TTL), LastActivity: now, Recording: o.Record,
		},
		lease: lease, mgr: m, profile: o.Profile, done: make(chan struct{}),
	}
	s.lastActivity.Store(now.UnixNano())
	if o.Record {
		// Before any client: the recording starts with the session.
		stop, err := m.Recorder.Record(ctx, lease.Browser().CDP(), o.Team, s.rec.ID, now)
		if err != nil {
			if o.Profile != nil {
				o.Profile.Close(context.Background(), profiles.Discard)
			}
			lease.Release(browsers.Destroy)
			return nil, err
		}
		s.stopRecording = stop
	}
	if err := m.store.InsertSession(ctx, s.rec); err != nil {
		if s.stopRecording != nil {
			s.stopRecording(context.Background())
		}
		if o.Profile != nil {
			o.Profile.Close(context.Background(), profiles.Discard)
		}
		lease.Release(browsers.Destroy)
		return nil, err
	}
	if m.BindEgress != nil {
		m.BindEgress(lease.Browser().ID(), o.Team, s.rec.ID)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		m.finish(s, Shutdown)
		return nil, ErrClosed
	}
	m.active[s.rec.ID] = s
	m.wg.Add(1)
	m.mu.Unlock()
	go m.watch(s)
	return s, nil
}

// watch ends s when its lease ends (ttl, browser exit, shutdown) or when it
// has been idle for activityTtl.
func (m *Manager) watch(s *Session) {
	defer m.wg.Done()
	timer := time.NewTimer(s.rec.ActivityTTL)
	defer timer.Stop()
	ttl := time.NewTimer(time.Until(s.rec.ExpiresAt))
	defer ttl.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-ttl.C:
			m.finish(s, ttlEnd(s.rec.TTL))
			return
		case <-s.lease.Done():
			m.finish(s, leaseEnd(s.lease.Cause(), s.rec.TTL))
			return
		case <-timer.C:
			idle := time.Since(time.Unix(0, s.lastActivity.Load()))
			if idle >= s.rec.ActivityTTL {
				m.finish(s, idleEnd(s.rec.ActivityTTL))
				return
			}
			timer.Reset(s.rec.ActivityTTL - idle)
		}
	}
}

// finish ends s once: tells attached clients, waits briefly for them to
// detach, frees the browser and records the end. It reports whether this
// call ended the session.
func (m *Manager) finish(s *Session, e End) bool {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return false
	}
	s.ended = true
	s.end = e
	s.endedAt = time.Now().UTC()
	s.credits = Credits(s.endedAt.Sub(s.rec.CreatedAt))
	if s.rec.Recording {
		s.credits += RecordingCredits(s.endedAt.Sub(s.rec.CreatedAt))
	}
	var detached chan struct{}
	if s.attached > 0 {
		detached = make(chan struct{})
		s.detached = detached
	}
	s.mu.Unlock()

	// The record says destroyed before any client sees its socket close
	// (closing done is what tells them), so that a client reacting to the
	// close frame never reads "active".
	last := time.Unix(0, s.lastActivity.Load())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.store.EndSession(ctx, s.rec.ID, s.endedAt, last, e.Text, s.credits); err != nil {
		m.log.Error("recording the end of a session", "session", s.rec.ID, "err", err)
		var fault *store.FaultError
		if errors.As(err, &fault) {
			// Its end and charge are written once the store takes them;
			// a restart meanwhile ends it from its last activity instead.
			go m.retryEnd(s.rec.ID, s.endedAt, last, e.Text, s.credits)
		}
	}
	close(s.done)
	if detached != nil {
		select {
		case <-detached:
		case <-time.After(3 * time.Second):
			m.log.Warn("clients did not detach in time", "session", s.rec.ID)
		}
	}
	if s.stopRecording != nil {
		rctx, cancel := context.WithTimeout(context.Background(), recordingStopTimeout)
		s.stopRecording(rctx)
		cancel()
	}
	if s.profile != nil {
		// A browser that is still leased is still running: save its state.
		// One that exited keeps the profile's last saved version.
		changes := profiles.Discard
		if s.lease.Cause() == nil {
			changes = profiles.Save
		}
		pctx, cancel := context.WithTimeout(context.Background(), profileSaveTimeout)
		if err := s.profile.Close(pctx, changes); err != nil {
			m.log.Error("saving the session's profile", "session", s.rec.ID, "err", err)
		}
		cancel()
	}
	s.lease.Release(browsers.Destroy)
	m.mu.Lock()
	delete(m.active, s.rec.ID)
	m.mu.Unlock()
	m.log.Info("browser session ended", "session", s.rec.ID, "team", s.rec.Team, "reason", e.Text)
	return true
}

// Runs reports whether session id is active on this node.
func (m *Manager) Runs(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.active[id] != nil
}

// Lookup returns the live session id whatever its team (the CDP proxy
// authenticates with the session's own token), a *DestroyedError for one
// that ended, or ErrNotFound.
func (m *Manager) Lookup(ctx context.Context, id string) (*Session, error) {
	m.mu.Lock()
	s := m.active[id]
	m.mu.Unlock()
	if s != nil {
		return s, nil
	}
	rec, err := m.store.Session(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return nil, &DestroyedError{ID: id, Reason: rec.EndReason}
}

// TeamLookup is Lookup for an API caller: another team's session is
// ErrNotFound.
func (m *Manager) TeamLookup(ctx context.Context, team, id string) (*Session, error) {
	m.mu.Lock()
	s := m.active[id]
	m.mu.Unlock()
	if s != nil {
		if s.rec.Team != team {
			return nil, ErrNotFound
		}
		return s, nil
	}
	rec, err := m.store.TeamSession(ctx, team, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return nil, &DestroyedError{ID: id, Reason: rec.EndReason}
}

// Get returns the record of team's session id, live or ended.
func (m *Manager) Get(ctx context.Context, team, id string) (store.Session, error) {
	m.mu.Lock()
	s := m.active[id]
	m.mu.Unlock()
	if s != nil && s.rec.Team == team {
		return s.Record(), nil
	}
	rec, err := m.store.TeamSession(ctx, team, id)
	if errors.Is(err, store.ErrNotFound) {
		return rec, ErrNotFound
	}
	return rec, err
}

// List returns team's sessions, newest first; status filters when not empty.
func (m *Manager) List(ctx context.Context, team, status string) ([]store.Session, error) {
	recs, err := m.store.TeamSessions(ctx, team, status, 1000)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, r := range recs {
		if s := m.active[r.ID]; s != nil {
			recs[i] = s.Record()
		}
	}
	return recs, nil
}

// Delete ends team's session id and returns how long it lasted and the
// credits it was billed.
func (m *Manager) Delete(ctx context.Context, team, id string) (time.Duration, int, error) {
	s, err := m.TeamLookup(ctx, team, id)
	if err != nil {
		return 0, 0, err
	}
	if !m.finish(s, Deleted) {
		return 0, 0, &DestroyedError{ID: id, Reason: s.Ended().Text}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endedAt.Sub(s.rec.CreatedAt), s.credits, nil
}

// ExecResult is the outcome of Execute.
type ExecResult struct {
	// Value is the JSON value of the last expression (null for undefined).
	Value json.RawMessage
	// Exception is the text of an uncaught exception, if one was thrown.
	Exception string
}

// retryEnd writes a session's end that the store could not take (it was
// full or unreachable), until it does or the manager closes.
func (m *Manager) retryEnd(id string, at, last time.Time, reason string, credits int) {
	for wait := time.Second; ; wait = min(2*wait, 30*time.Second) {
		time.Sleep(wait)
		m.mu.Lock()
		closed := m.closed
		m.mu.Unlock()
		if closed {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := m.store.EndSession(ctx, id, at, last, reason, credits)
		cancel()
		var fault *store.FaultError
		if !errors.As(err, &fault) {
			if err != nil {
				m.log.Error("recording the end of a session", "session", id, "err", err)
			}
			return
		}
	}
}

// ErrExecTimeout is returned when the code ran past its timeout.
var ErrExecTimeout = errors.New("execution timed out")

const execGroup = "trawler-execute"

// Execute evaluates JavaScript in the session's active page. Top-level await
// is allowed, the completion value of the last statement is returned, and a
// promise that the code evaluates to is awaited.
func (m *Manager) Execute(ctx context.Context, team, id, code string, timeout time.Duration) (ExecResult, error) {
	s, err := m.TeamLookup(ctx, team, id)
	if err != nil {
		return ExecResult{}, err
	}
	s.Touch()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// End with the session: a browser that vanished must not hang the caller.
	go func() {
		select {
		case <-s.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	connectCtx, cancelConnect := context.WithTimeout(ctx, 10*time.Second)
	defer cancelConnect()
	page, err := s.CDP().ActivePage(connectCtx)
	if err != nil {
		return ExecResult{}, m.execErr(ctx, s, err)
	}
	conn, err := s.CDP().DialPage(connectCtx, page.TargetID)
	if err != nil {
		return ExecResult{}, m.execErr(ctx, s, err)
	}
	defer conn.Close()
	evalCtx, cancelEval := context.WithTimeout(ctx, timeout)
	defer cancelEval()
	defer conn.Call(context.Background(), "", runtime.CommandReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: execGroup}, nil)

	// REPL mode allows top-level await but wraps the completion value in a
	// promise of its own, so the value is fetched by reference and, when it
	// is itself a promise, awaited in a second step (by reference too).
	yes := true
	var res cdp.EvalResult
	started := time.Now()
	err = conn.Call(evalCtx, "", runtime.CommandEvaluate, runtime.EvaluateParams{Expression: code, ObjectGroup: execGroup,
		AwaitPromise: &yes, UserGesture: &yes, ReplMode: &yes, Timeout: runtime.TimeDelta(timeout.Milliseconds())}, &res)
	if err == nil && res.ExceptionDetails == nil && res.Result.Subtype == "promise" && res.Result.ObjectID != "" {
		promise := res.Result.ObjectID
		res = cdp.EvalResult{} // decoding into res would keep the promise's members
		err = conn.Call(evalCtx, "", runtime.CommandAwaitPromise, runtime.AwaitPromiseParams{
			PromiseObjectID: runtime.RemoteObjectID(promise)}, &res)
	}
	// Chromium sometimes reports code it terminated at the evaluation's own
	// timeout as an internal error rather than as a thrown termination
	// (seen under load, with the REPL mode's wrapper half built).
	var cdpErr *cdp.Error
	if errors.As(err, &cdpErr) && cdpErr.Code == -32603 && time.Since(started) >= timeout {
		return ExecResult{}, ErrExecTimeout
	}
	if err != nil {
		return ExecResult{}, m.execErr(evalCtx, s, err)
	}
	if msg := res.Exception(); msg != "" {
		s.Touch()
		if strings.Contains(msg, "Execution was terminated") {
			return ExecResult{}, ErrExecTimeout
		}
		return ExecResult{Exception: msg}, nil
	}
	// The value is then taken by value, or as a string when JSON cannot
	// carry it (see cdp.ValueOf).
	v, err := cdp.ValueOf(evalCtx, conn, "", res.Result)
	if err != nil {
		return ExecResult{}, m.execErr(evalCtx, s, err)
	}
	s.Touch()
	if len(v) == 0 {
		v = json.RawMessage("null")
	}
	return ExecResult{Value: v}, nil
}

func (m *Manager) execErr(ctx context.Context, s *Session, err error) error {
	select {
	case <-s.done:
		return &DestroyedError{ID: s.rec.ID, Reason: s.Ended().Text}
	default:
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ErrExecTimeout
	}
	return err
}

// Stats counts live sessions, for metrics.
func (m *Manager) Stats() (active int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.active)
}

// Close ends every session (their clients get a close frame saying the
// service is shutting down) and waits for them.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	all := make([]*Session, 0, len(m.active))
	for _, s := range m.active {
		all = append(all, s)
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.finish(s, Shutdown)
		}()
	}
	wg.Wait()
	m.wg.Wait()
}
