// Package cdpproxy owns the WebSocket proxy between CDP clients (Playwright,
// Puppeteer, chromedp) and a session's browser, the /json/version and
// /json/list discovery answers that let those clients connect by URL, and
// the reporting of every client message as session activity. It decides no
// lifetimes: it closes sockets, with the reason, when the session ends.
//
// It is served by net/http and gorilla/websocket on the same listener as the
// API (which runs Fiber behind an adaptor), so cdpUrl shares the API's host.
package cdpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/publicurl"
	"github.com/trawler-dev/trawler/sessions"
)

// Sessions finds sessions; it is implemented by *sessions.Manager.
type Sessions interface {
	Lookup(ctx context.Context, id string) (*sessions.Session, error)
}

// Proxy serves /cdp/{id}...
type Proxy struct {
	sessions Sessions
	urls     publicurl.Resolver
	log      *slog.Logger
	upgrader websocket.Upgrader

	conns atomic.Int64
	wg    sync.WaitGroup
}

// New returns a proxy.
func New(s Sessions, urls publicurl.Resolver, log *slog.Logger) *Proxy {
	return &Proxy{
		sessions: s, urls: urls, log: log,
		upgrader: websocket.Upgrader{
			ReadBufferSize: 64 << 10, WriteBufferSize: 64 << 10,
			// CDP clients are programs, not pages: the token is the credential.
			CheckOrigin: func(*http.Request) bool { return true },
		},
	}
}

// Connections is how many client sockets are open now.
func (p *Proxy) Connections() int64 { return p.conns.Load() }

// Wait waits for every proxied connection to finish.
func (p *Proxy) Wait() { p.wg.Wait() }

// CDPURL is the cdpUrl of session id for a client that reached the service
// at base (http(s)://host).
func CDPURL(base, id, token string) string {
	return publicurl.WebSocket(base) + "/cdp/" + id + "?token=" + url.QueryEscape(token)
}

func (p *Proxy) baseURL(r *http.Request) string {
	return p.urls.BaseURL(publicurl.Request{RemoteAddr: r.RemoteAddr, TLS: r.TLS != nil, Host: r.Host,
		ForwardedProto: r.Header.Get("X-Forwarded-Proto"), ForwardedHost: r.Header.Get("X-Forwarded-Host")})
}

// LookupSession finds live session id for an HTTP handler of the session's
// URLs (CDP here, the live view too), answering the request itself when
// there is none: 404 unknown, 410 destroyed with the reason, 500 otherwise.
func LookupSession(w http.ResponseWriter, r *http.Request, s Sessions, id string, log *slog.Logger) (*sessions.Session, bool) {
	sess, err := s.Lookup(r.Context(), id)
	var destroyed *sessions.DestroyedError
	switch {
	case errors.Is(err, sessions.ErrNotFound):
		WriteError(w, http.StatusNotFound, "NOT_FOUND", "browser session not found")
		return nil, false
	case errors.As(err, &destroyed):
		WriteError(w, http.StatusGone, "SESSION_DESTROYED", "browser session was destroyed: "+destroyed.Reason)
		return nil, false
	case err != nil:
		log.Error("looking up a session", "session", id, "err", err)
		WriteError(w, http.StatusInternalServerError, "INTERNAL", "could not look up the session")
		return nil, false
	}
	return sess, true
}

// WriteError answers with the API's error shape.
func WriteError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"success": false, "error": msg, "code": code})
}

// ServeHTTP routes /cdp/{id}, /cdp/{id}/json/version, /cdp/{id}/json/list and
// /cdp/{id}/devtools/page/{target}.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/cdp/")
	id, sub, _ := strings.Cut(rest, "/")
	sub = strings.TrimSuffix("/"+sub, "/")
	if id == "" {
		WriteError(w, http.StatusNotFound, "NOT_FOUND", "no browser session id in the path")
		return
	}
	s, ok := LookupSession(w, r, p.sessions, id, p.log)
	if !ok {
		return
	}
	token := r.URL.Query().Get("token")
	if token == "" {
		WriteError(w, http.StatusUnauthorized, "UNAUTHORIZED", "token query parameter is required: use the cdpUrl returned by POST /v2/browser")
		return
	}
	if !s.CheckCDPToken(token) {
		WriteError(w, http.StatusUnauthorized, "UNAUTHORIZED", "token does not match this browser session")
		return
	}
	upgrade := websocket.IsWebSocketUpgrade(r)
	switch {
	case sub == "" && upgrade, strings.HasPrefix(sub, "/devtools/browser") && upgrade:
		p.proxy(w, r, s, "")
	case strings.HasPrefix(sub, "/devtools/page/") && upgrade:
		p.proxy(w, r, s, strings.TrimPrefix(sub, "/devtools/page/"))
	case sub == "" || sub == "/json/version":
		p.version(w, r, s, token)
	case sub == "/json/list" || sub == "/json":
		p.list(w, r, s, token)
	default:
		WriteError(w, http.StatusNotFound, "NOT_FOUND", "unknown CDP path "+sub)
	}
}

// version answers /json/version as the browser would, with the proxy's
// endpoint.
func (p *Proxy) version(w http.ResponseWriter, r *http.Request, s *sessions.Session, token string) {
	v := s.CDP().Version()
	v["webSocketDebuggerUrl"] = CDPURL(p.baseURL(r), s.ID(), token)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// list answers /json/list as the browser would, front tab first, with the
// proxy's page endpoints.
func (p *Proxy) list(w http.ResponseWriter, r *http.Request, s *sessions.Session, token string) {
	ws := publicurl.WebSocket(p.baseURL(r))
	targets := s.CDP().Targets(r.Context())
	list := make([]cdp.Target, 0, len(targets))
	for _, t := range targets {
		list = append(list, cdp.Target{ID: t.TargetID, Type: t.Type, Title: t.Title, URL: t.URL,
			WebSocketDebuggerURL: ws + "/cdp/" + s.ID() + "/devtools/page/" + url.PathEscape(t.TargetID) + "?token=" + url.QueryEscape(token)})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(list)
}

// closeCode maps a session's end reason to a WebSocket close code.
func closeCode(reason string) int {
	switch {
	case reason == sessions.ReasonShutdown:
		return websocket.CloseGoingAway
	case strings.Contains(reason, browsers.ErrBrowserExited.Error()):
		return websocket.CloseInternalServerErr
	default:
		return websocket.CloseNormalClosure
	}
}

func closeMessage(code int, reason string) []byte {
	reason = "session ended: " + reason
	if len(reason) > 123 {
		reason = reason[:123]
	}
	return websocket.FormatCloseMessage(code, reason)
}

func (p *Proxy) proxy(w http.ResponseWriter, r *http.Request, s *sessions.Session, target string) {
	detach, ok := s.Attach()
	if !ok {
		WriteError(w, http.StatusGone, "SESSION_DESTROYED", "browser session was destroyed: "+s.Reason())
		return
	}
	defer detach()
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	up, err := s.CDP().Open(ctx, target)
	cancel()
	if err != nil {
		if target != "" {
			WriteError(w, http.StatusNotFound, "NOT_FOUND", "no target "+target+" in the session's browser")
			return
		}
		WriteError(w, http.StatusBadGateway, "UPSTREAM_ERROR", "could not reach the session's browser: "+err.Error())
		return
	}
	client, err := p.upgrader.Upgrade(w, r, nil)
	if err != nil {
		up.Close()
		return // the upgrader has answered the client
	}
	p.wg.Add(1)
	defer p.wg.Done()
	p.conns.Add(1)
	defer p.conns.Add(-1)
	s.Touch()
	// Tens of megabytes (full-page screenshots) must pass in both directions.
	client.SetReadLimit(-1)

	errc := make(chan error, 2)
	clientDone := make(chan struct{})
	go func() {
		defer close(clientDone)
		errc <- p.fromClient(up, client, s)
	}()
	go func() { errc <- toClient(client, up) }()

	var msg []byte
	select {
	case <-s.Done():
		msg = closeMessage(closeCode(s.Reason()), s.Reason())
	case err := <-errc:
		// One side went away. If the browser went, the session is ending
		// (its watcher sees the exit): wait a moment to name the reason.
		switch {
		case isClientGone(err):
		case errors.Is(err, cdp.ErrTargetClosed):
			msg = websocket.FormatCloseMessage(websocket.CloseNormalClosure, "the target closed")
		default:
			select {
			case <-s.Done():
				msg = closeMessage(closeCode(s.Reason()), s.Reason())
			case <-time.After(time.Second):
				msg = websocket.FormatCloseMessage(websocket.CloseInternalServerErr, "connection to the browser lost")
			}
		}
	}
	up.Close()
	if msg != nil {
		client.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second))
		// Give the client a moment to answer the close frame, so the socket
		// is not reset under a frame it has not read yet.
		select {
		case <-clientDone:
		case <-time.After(time.Second):
		}
	}
	client.Close()
}

// clientSide marks errors that came from the client's socket.
type clientSide struct{ error }

func isClientGone(err error) bool {
	var c clientSide
	return errors.As(err, &c)
}

// fromClient forwards client messages to the browser, counting each as
// activity. Browser.close is not forwarded: it ends the session instead, so
// a Puppeteer browser.close() frees the session cleanly rather than looking
// like a crash.
func (p *Proxy) fromClient(up *cdp.Channel, client *websocket.Conn, s *sessions.Session) error {
	for {
		_, msg, err := client.ReadMessage()
		if err != nil {
			return clientSide{err}
		}
		s.Touch()
		if bytes.Contains(msg, []byte(`"Browser.close"`)) {
			var m struct {
				ID     int64  `json:"id"`
				Method string `json:"method"`
			}
			if json.Unmarshal(msg, &m) == nil && m.Method == "Browser.close" {
				p.log.Info("client closed the browser", "session", s.ID())
				go s.End(sessions.ReasonClientClosed)
				continue
			}
		}
		if err := up.WriteMessage(msg); err != nil {
			return err
		}
	}
}

// toClient sends the browser's messages for this client's channel.
func toClient(client *websocket.Conn, up *cdp.Channel) error {
	for {
		msg, err := up.ReadMessage()
		if err != nil {
			return err
		}
		if err := client.WriteMessage(websocket.TextMessage, msg); err != nil {
			return clientSide{err}
		}
	}
}
