// Package cdp owns Trawler's side of the Chrome DevTools Protocol: the
// multiplexer over each browser's one DevTools pipe (Mux), which gives every
// client, Trawler's own and the users' through the CDP proxy, a channel of
// its own; the policy on a user's channel, which parses each command
// strictly, refuses what would reach beyond the browser and sends the
// browser its own re-encoding (policy.go); and a minimal client (Conn) with
// commands matched to replies by id. It is written here rather
// than taken from chromedp because chromedp ties a target's lifetime to a
// context (cancelling closes the tab), while Trawler acts on tabs that
// belong to its users and must leave them be, and because no library
// multiplexes one pipe among clients. Parameter and result types come from
// github.com/chromedp/cdproto.
package cdp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/gorilla/websocket"
)

// Error is an error answered by the browser.
type Error struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return fmt.Sprintf("cdp error %d: %s", e.Code, e.Message) }

// Transport carries whole CDP messages, one JSON object each: a WebSocket
// to a CDP endpoint, or a Channel of a browser's Mux.
type Transport interface {
	ReadMessage() ([]byte, error)
	WriteMessage(msg []byte) error
	Close() error
}

// Conn is one CDP connection: commands matched to replies, events to one
// handler.
type Conn struct {
	t Transport

	wmu sync.Mutex // one writer at a time

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan reply
	err     error
	done    chan struct{}
	handler func(Event)
}

// Event is a protocol event.
type Event struct {
	Method    string
	SessionID string
	Params    json.RawMessage
}

type reply struct {
	Result json.RawMessage
	Err    error
}

type message struct {
	ID        int64           `json:"id,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *Error          `json:"error,omitempty"`
}

// Dial connects to a CDP WebSocket endpoint (a session's cdpUrl, say).
func Dial(ctx context.Context, wsURL string) (*Conn, error) {
	d := websocket.Dialer{ReadBufferSize: 64 << 10, WriteBufferSize: 64 << 10}
	ws, _, err := d.DialContext(ctx, wsURL, nil)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", wsURL, err)
	}
	ws.SetReadLimit(-1)
	return NewConn(wsTransport{ws}), nil
}

// NewConn starts a connection over t; closing the connection closes t.
func NewConn(t Transport) *Conn {
	c := &Conn{t: t, pending: map[int64]chan reply{}, done: make(chan struct{})}
	go c.read()
	return c
}

type wsTransport struct{ ws *websocket.Conn }

func (w wsTransport) ReadMessage() ([]byte, error) {
	_, msg, err := w.ws.ReadMessage()
	return msg, err
}

func (w wsTransport) WriteMessage(msg []byte) error {
	return w.ws.WriteMessage(websocket.TextMessage, msg)
}

func (w wsTransport) Close() error { return w.ws.Close() }

func (c *Conn) read() {
	defer close(c.done)
	for {
		var m message
		raw, err := c.t.ReadMessage()
		if err == nil {
			err = json.Unmarshal(raw, &m)
		}
		if err != nil {
			c.mu.Lock()
			c.err = err
			for id, ch := range c.pending {
				ch <- reply{Err: fmt.Errorf("connection closed: %w", err)}
				delete(c.pending, id)
			}
			c.mu.Unlock()
			return
		}
		if m.ID == 0 {
			c.mu.Lock()
			h := c.handler
			c.mu.Unlock()
			if h != nil && m.Method != "" {
				h(Event{Method: m.Method, SessionID: m.SessionID, Params: m.Params})
			}
			continue
		}
		c.mu.Lock()
		ch := c.pending[m.ID]
		delete(c.pending, m.ID)
		c.mu.Unlock()
		if ch == nil {
			continue
		}
		if m.Error != nil {
			ch <- reply{Err: m.Error}
		} else {
			ch <- reply{Result: m.Result}
		}
	}
}

// Call sends method with params (to the target session sessionID, or the
// connection's own target when empty) and decodes the result into result
// (unless nil).
func (c *Conn) Call(ctx context.Context, sessionID, method string, params, result any) error {
	ch := make(chan reply, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return fmt.Errorf("connection closed: %w", c.err)
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()

	var raw json.RawMessage
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return fmt.Errorf("encoding the params of %s: %w", method, err)
		}
		raw = b
	}
	msg, err := json.Marshal(message{ID: id, SessionID: sessionID, Method: method, Params: raw})
	if err == nil {
		c.wmu.Lock()
		err = c.t.WriteMessage(msg)
		c.wmu.Unlock()
	}
	if err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return fmt.Errorf("sending %s: %w", method, err)
	}
	select {
	case r := <-ch:
		if r.Err != nil {
			return fmt.Errorf("%s: %w", method, r.Err)
		}
		if result != nil && len(r.Result) > 0 {
			if err := json.Unmarshal(r.Result, result); err != nil {
				return fmt.Errorf("decoding the result of %s: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return ctx.Err()
	}
}

// OnEvent sets the function that receives every event. It runs on the
// connection's reader: it must not block, and must not wait for a Call.
func (c *Conn) OnEvent(h func(Event)) {
	c.mu.Lock()
	c.handler = h
	c.mu.Unlock()
}

// Done is closed when the connection has closed.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Close closes the connection.
func (c *Conn) Close() error {
	err := c.t.Close()
	<-c.done
	return err
}

// Target is one entry of the browser's /json/list.
type Target struct {
	ID                   string `json:"id"`
	Type                 string `json:"type"`
	Title                string `json:"title"`
	URL                  string `json:"url"`
	WebSocketDebuggerURL string `json:"webSocketDebuggerUrl"`
	DevtoolsFrontendURL  string `json:"devtoolsFrontendUrl,omitempty"`
	Description          string `json:"description"`
	FaviconURL           string `json:"faviconUrl,omitempty"`
	ParentID             string `json:"parentId,omitempty"`
}

// ErrNoPage is returned when a browser has no open page.
var ErrNoPage = errors.New("the browser has no open page")

// RemoteObject is the part of a Runtime.RemoteObject that Trawler reads;
// cdproto's own type carries its value in the v2 JSON package.
type RemoteObject struct {
	Type     string          `json:"type"`
	Subtype  string          `json:"subtype"`
	Value    json.RawMessage `json:"value"`
	ObjectID string          `json:"objectId"`
	// Description is how DevTools shows the value ("Window", "Object").
	Description string `json:"description"`
	// UnserializableValue is the text of NaN, Infinity, -0 or a BigInt.
	UnserializableValue string `json:"unserializableValue"`
}

// ValueOf returns the JSON value of r, a result of code run in session
// sessionID of conn: the value the browser sent; for an object sent by
// reference, the object fetched by value; for a value JSON cannot carry, a
// string, its text (NaN, Infinity, -0, a BigInt's "10n") or, for what the
// browser cannot serialise (window, a circular object, a symbol), its
// description as DevTools shows it ("Window", "Object", "Symbol(x)"). An
// undefined value is JSON null.
func ValueOf(ctx context.Context, conn *Conn, sessionID string, r RemoteObject) (json.RawMessage, error) {
	switch {
	case r.UnserializableValue != "":
		return json.Marshal(r.UnserializableValue)
	case r.ObjectID == "":
		if len(r.Value) == 0 {
			return json.RawMessage("null"), nil
		}
		return r.Value, nil
	}
	var byValue EvalResult
	err := conn.Call(ctx, sessionID, "Runtime.callFunctionOn", map[string]any{
		"functionDeclaration": "function() { 'use strict'; return this; }", "objectId": r.ObjectID, "returnByValue": true}, &byValue)
	var refused *Error
	switch {
	case errors.As(err, &refused) && ctx.Err() == nil:
		return json.Marshal(r.Description) // the browser cannot serialise it
	case err != nil:
		return nil, err
	case len(byValue.Result.Value) == 0:
		return json.RawMessage("null"), nil
	}
	return byValue.Result.Value, nil
}

// EvalResult is the result of Runtime.evaluate, Runtime.awaitPromise and
// Runtime.callFunctionOn.
type EvalResult struct {
	Result           RemoteObject `json:"result"`
	ExceptionDetails *struct {
		Text      string `json:"text"`
		Exception *struct {
			Description string `json:"description"`
		} `json:"exception"`
	} `json:"exceptionDetails"`
}

// Exception is the text of the exception the code threw, or "".
func (r *EvalResult) Exception() string {
	d := r.ExceptionDetails
	switch {
	case d == nil:
		return ""
	case d.Exception != nil && d.Exception.Description != "":
		return d.Exception.Description
	case d.Text != "":
		return d.Text
	}
	return "uncaught exception"
}
