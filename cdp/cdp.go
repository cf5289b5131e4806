// Package cdp is a minimal Chrome DevTools Protocol client: one WebSocket,
// commands matched to replies by id, and the browser's HTTP discovery
// endpoints. It is written here rather than taken from chromedp because
// chromedp ties a target's lifetime to a context (cancelling closes the tab),
// while Trawler acts on tabs that belong to its users and must leave them be.
// Parameter and result types come from github.com/chromedp/cdproto.
package cdp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/gorilla/websocket"
)

// Error is an error answered by the browser.
type Error struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return fmt.Sprintf("cdp error %d: %s", e.Code, e.Message) }

// Conn is one CDP WebSocket connection.
type Conn struct {
	ws *websocket.Conn

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

// Dial connects to a CDP WebSocket endpoint.
func Dial(ctx context.Context, wsURL string) (*Conn, error) {
	d := websocket.Dialer{ReadBufferSize: 64 << 10, WriteBufferSize: 64 << 10}
	ws, _, err := d.DialContext(ctx, wsURL, nil)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", wsURL, err)
	}
	ws.SetReadLimit(-1)
	c := &Conn{ws: ws, pending: map[int64]chan reply{}, done: make(chan struct{})}
	go c.read()
	return c, nil
}

func (c *Conn) read() {
	defer close(c.done)
	for {
		var m message
		if err := c.ws.ReadJSON(&m); err != nil {
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
	c.wmu.Lock()
	err := c.ws.WriteJSON(message{ID: id, SessionID: sessionID, Method: method, Params: raw})
	c.wmu.Unlock()
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
	err := c.ws.Close()
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

// HTTPBase turns a browser's ws://host:port/devtools/browser/... endpoint
// into the http://host:port base of its discovery endpoints.
func HTTPBase(devtoolsURL string) (string, error) {
	u, err := url.Parse(devtoolsURL)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("not a DevTools URL: %q", devtoolsURL)
	}
	scheme := "http"
	if u.Scheme == "wss" {
		scheme = "https"
	}
	return scheme + "://" + u.Host, nil
}

// GetJSON fetches one of the browser's discovery documents (/json/version,
// /json/list) into v.
func GetJSON(ctx context.Context, devtoolsURL, path string, v any) error {
	base, err := HTTPBase(devtoolsURL)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("fetching %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetching %s: status %d", path, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// ErrNoPage is returned when a browser has no open page.
var ErrNoPage = errors.New("the browser has no open page")

// ActivePage returns the page the user last brought to the front. Chromium
// lists targets most recently active first.
func ActivePage(ctx context.Context, devtoolsURL string) (Target, error) {
	var list []Target
	if err := GetJSON(ctx, devtoolsURL, "/json/list", &list); err != nil {
		return Target{}, err
	}
	for _, t := range list {
		if t.Type == "page" && !strings.HasPrefix(t.URL, "devtools://") {
			return t, nil
		}
	}
	return Target{}, ErrNoPage
}

// RemoteObject is the part of a Runtime.RemoteObject that Trawler reads;
// cdproto's own type carries its value in the v2 JSON package.
type RemoteObject struct {
	Type     string          `json:"type"`
	Subtype  string          `json:"subtype"`
	Value    json.RawMessage `json:"value"`
	ObjectID string          `json:"objectId"`
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
