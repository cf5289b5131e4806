package cdp

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	cdproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
)

// Session is one flattened CDP session over a Conn: the browser's own
// (ID "") or one attached to a target (a tab). It is a value: copying it
// copies a handle, not the session.
type Session struct {
	Conn *Conn
	// ID is the session's id; "" is the connection's own target.
	ID string
	// TargetID is the target the session is attached to; "" for the
	// browser's.
	TargetID target.ID
}

// Browser is the session of conn's own target (the browser, for a
// connection to a browser's endpoint or a Mux channel).
func Browser(conn *Conn) Session { return Session{Conn: conn} }

// Call sends method with params on the session and decodes the result
// into result (unless nil), with encoding/json: for commands that have no
// cdproto type, or whose reply Trawler reads in part.
func (s Session) Call(ctx context.Context, method string, params, result any) error {
	return s.Conn.Call(ctx, s.ID, method, params, result)
}

// lenientUTF8 reads what a browser sends as encoding/json does: a string a
// page made may hold a lone surrogate, which the v2 package refuses.
var lenientUTF8 = jsonv2.AllowInvalidUTF8(true)

// Do runs the cdproto command c with params on s and returns its result.
// cdproto's types are encoded and decoded with its own JSON layer (they
// rely on omitzero and on the v2 package's handling of their enums).
func Do[P, R any](ctx context.Context, s Session, c cdproto.Command[P, R], params P) (R, error) {
	var res R
	b, err := jsonv2.Marshal(params, lenientUTF8)
	if err != nil {
		return res, fmt.Errorf("encoding the params of %s: %w", c.Method, err)
	}
	var raw json.RawMessage
	if err := s.Conn.Call(ctx, s.ID, c.Method, json.RawMessage(b), &raw); err != nil {
		return res, err
	}
	if len(raw) > 0 {
		if err := jsonv2.Unmarshal(raw, &res, lenientUTF8); err != nil {
			return res, fmt.Errorf("decoding the result of %s: %w", c.Method, err)
		}
	}
	return res, nil
}

// Run is Do for a command whose result nobody reads.
func Run[P, R any](ctx context.Context, s Session, c cdproto.Command[P, R], params P) error {
	_, err := Do(ctx, s, c, params)
	return err
}

// Decode reads ev's params as the payload of the cdproto event e; ok is
// false when ev is another event.
func Decode[E any](ev Event, e cdproto.Event[E]) (payload E, ok bool, err error) {
	if ev.Method != e.Method {
		return payload, false, nil
	}
	if err := jsonv2.Unmarshal(ev.Params, &payload, lenientUTF8); err != nil {
		return payload, true, fmt.Errorf("decoding %s: %w", e.Method, err)
	}
	return payload, true, nil
}

// NewContext creates a browser context over conn (its own cookies, storage
// and, when p names one, proxy).
func NewContext(ctx context.Context, conn *Conn, p target.CreateBrowserContextParams) (cdproto.BrowserContextID, error) {
	res, err := Do(ctx, Browser(conn), target.CreateBrowserContext, p)
	return res.BrowserContextID, err
}

// OpenTarget creates a target as p says (about:blank when p.URL is empty)
// and attaches a flattened session to it. The target outlives the session
// unless closed (Session.CloseTarget) or created hidden.
func OpenTarget(ctx context.Context, conn *Conn, p target.CreateTargetParams) (Session, error) {
	if p.URL == "" {
		p.URL = "about:blank"
	}
	created, err := Do(ctx, Browser(conn), target.CreateTarget, p)
	if err != nil {
		return Session{}, err
	}
	s, err := Attach(ctx, conn, created.TargetID)
	if err != nil {
		CloseTarget(conn, created.TargetID)
		return Session{}, err
	}
	return s, nil
}

// Attach attaches a flattened session to the target id.
func Attach(ctx context.Context, conn *Conn, id target.ID) (Session, error) {
	flatten := true
	at, err := Do(ctx, Browser(conn), target.AttachToTarget, target.AttachToTargetParams{TargetID: id, Flatten: &flatten})
	if err != nil {
		return Session{}, err
	}
	return Session{Conn: conn, ID: string(at.SessionID), TargetID: id}, nil
}

// closeWait bounds how long closing a target waits for the browser: a
// browser that does not answer is one being torn down.
const closeWait = 5 * time.Second

// CloseTarget closes the target id, on a context of its own: closing is
// cleanup that must happen after the work's context has ended.
func CloseTarget(conn *Conn, id target.ID) error {
	ctx, cancel := context.WithTimeout(context.Background(), closeWait)
	defer cancel()
	return Run(ctx, Browser(conn), target.CloseTarget, target.CloseTargetParams{TargetID: id})
}

// CloseTarget closes the session's target (and so the session).
func (s Session) CloseTarget() error {
	if s.TargetID == "" {
		return nil
	}
	return CloseTarget(s.Conn, s.TargetID)
}

// OverrideUserAgent sets the user agent (and Accept-Language) of the
// session's requests with the Network domain's command, which cdproto
// types only as Emulation's (same parameters): the two differ in what
// else they emulate, and Trawler's pages have always had Network's.
func (s Session) OverrideUserAgent(ctx context.Context, p emulation.SetUserAgentOverrideParams) error {
	return s.Call(ctx, "Network.setUserAgentOverride", p, nil)
}

// Evaluate runs expression in the session's page and returns its value by
// JSON (awaited when it is a promise). An exception the code threw is an
// error holding its text.
func (s Session) Evaluate(ctx context.Context, expression string) (json.RawMessage, error) {
	var r EvalResult
	err := s.Call(ctx, runtime.CommandEvaluate, map[string]any{
		"expression": expression, "returnByValue": true, "awaitPromise": true}, &r)
	switch {
	case err != nil:
		return nil, err
	case r.Exception() != "":
		return nil, fmt.Errorf("the page's script threw: %s", r.Exception())
	}
	return r.Result.Value, nil
}
