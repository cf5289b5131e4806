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

	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/sessions"
	"github.com/trawler-dev/trawler/wire"
)

// Sessions finds sessions; it is implemented by *sessions.Manager.
type Sessions interface {
	Lookup(ctx context.Context, id string) (*sessions.Session, error)
}

// Proxy serves /cdp/{id}...
type Proxy struct {
	sessions Sessions
	urls     wire.PublicURL
	log      *slog.Logger
	upgrader websocket.Upgrader

	conns atomic.Int64
	wg    sync.WaitGroup
}

// New returns a proxy.
func New(s Sessions, urls wire.PublicURL, log *slog.Logger) *Proxy {
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
	return wire.WebSocket(base) + "/cdp/" + id + "?token=" + url.QueryEscape(token)
}

// Refusal is the answer to a request for a session that is not live.
type Refusal struct {
	Status        int
	Code, Message string
}

// FindSession finds live session id for an HTTP handler of the session's
// URLs (CDP here, the live view too); when there is none, it returns the
// answer to give instead: 404 unknown, 410 destroyed with the reason, 500
// otherwise.
func FindSession(ctx context.Context, s Sessions, id string, log *slog.Logger) (*sessions.Session, *Refusal) {
	sess, err := s.Lookup(ctx, id)
	var destroyed *sessions.DestroyedError
	switch {
	case errors.Is(err, sessions.ErrNotFound):
		return nil, &Refusal{http.StatusNotFound, "NOT_FOUND", "browser session not found"}
	case errors.As(err, &destroyed):
		return nil, &Refusal{http.StatusGone, "SESSION_DESTROYED", "browser session was destroyed: " + destroyed.Reason}
	case err != nil:
		log.Error("looking up a session", "session", id, "err", err)
		return nil, &Refusal{http.StatusInternalServerError, "INTERNAL", "could not look up the session"}
	}
	return sess, nil
}

// LookupSession is FindSession answering the request itself, in the wire
// format, when there is no live session.
func LookupSession(w http.ResponseWriter, r *http.Request, s Sessions, id string, log *slog.Logger) (*sessions.Session, bool) {
	sess, no := FindSession(r.Context(), s, id, log)
	if no != nil {
		wire.WriteError(w, no.Status, no.Code, no.Message)
		return nil, false
	}
	return sess, true
}

// ServeHTTP routes /cdp/{id}, /cdp/{id}/json/version, /cdp/{id}/json/list and
// /cdp/{id}/devtools/page/{target}.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/cdp/")
	id, sub, _ := strings.Cut(rest, "/")
	sub = strings.TrimSuffix("/"+sub, "/")
	if id == "" {
		wire.WriteError(w, http.StatusNotFound, "NOT_FOUND", "no browser session id in the path")
		return
	}
	s, ok := LookupSession(w, r, p.sessions, id, p.log)
	if !ok {
		return
	}
	token := r.URL.Query().Get("token")
	if token == "" {
		wire.WriteError(w, http.StatusUnauthorized, "UNAUTHORIZED", "token query parameter is required: use the cdpUrl returned by POST /v2/browser")
		return
	}
	if !s.CheckCDPToken(token) {
		wire.WriteError(w, http.StatusUnauthorized, "UNAUTHORIZED", "token does not match this browser session")
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
		wire.WriteError(w, http.StatusNotFound, "NOT_FOUND", "unknown CDP path "+sub)
	}
}

// version answers /json/version as the browser would, with the proxy's
// endpoint.
func (p *Proxy) version(w http.ResponseWriter, r *http.Request, s *sessions.Session, token string) {
	v := s.CDP().Version()
	v["webSocketDebuggerUrl"] = CDPURL(p.urls.ForHTTP(r), s.ID(), token)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// list answers /json/list as the browser would, front tab first, with the
// proxy's page endpoints.
func (p *Proxy) list(w http.ResponseWriter, r *http.Request, s *sessions.Session, token string) {
	ws := wire.WebSocket(p.urls.ForHTTP(r))
	targets := s.CDP().Targets(r.Context())
	list := make([]cdp.Target, 0, len(targets))
	for _, t := range targets {
		list = append(list, cdp.Target{ID: t.TargetID, Type: t.Type, Title: t.Title, URL: t.URL,
			WebSocketDebuggerURL: ws + "/cdp/" + s.ID() + "/devtools/page/" + url.PathEscape(t.TargetID) + "?token=" + url.QueryEscape(token)})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(list)
}

// closeMessage is the close frame that tells a client of the session's end.
func closeMessage(end sessions.End) []byte {
	reason := "session ended: " + end.Text
	if len(reason) > 123 {
		reason = reason[:123]
	}
	return websocket.FormatCloseMessage(end.CloseCode(), reason)
}

func (p *Proxy) proxy(w http.ResponseWriter, r *http.Request, s *sessions.Session, target string) {
	detach, ok := s.Attach()
	if !ok {
		wire.WriteError(w, http.StatusGone, "SESSION_DESTROYED", "browser session was destroyed: "+s.Ended().Text)
		return
	}
	defer detach()
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	up, err := s.CDP().OpenClient(ctx, target)
	cancel()
	if err != nil {
		if target != "" {
			wire.WriteError(w, http.StatusNotFound, "NOT_FOUND", "no target "+target+" in the session's browser")
			return
		}
		wire.WriteError(w, http.StatusBadGateway, "UPSTREAM_ERROR", "could not reach the session's browser: "+err.Error())
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
		msg = closeMessage(s.Ended())
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
				msg = closeMessage(s.Ended())
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
// activity. The channel parses, judges and re-encodes each (cdp's policy).
// Browser.close is not forwarded: it ends the session instead, so a
// Puppeteer browser.close() frees the session cleanly rather than looking
// like a crash.
func (p *Proxy) fromClient(up *cdp.Channel, client *websocket.Conn, s *sessions.Session) error {
	for {
		_, msg, err := client.ReadMessage()
		if err != nil {
			return clientSide{err}
		}
		s.Touch()
		err = up.WriteMessage(msg)
		if errors.Is(err, cdp.ErrBrowserClose) {
			p.log.Info("client closed the browser", "session", s.ID())
			go s.End(sessions.ClientClosed)
			continue
		}
		if err != nil {
			return err
		}
	}
}

// toClient sends the browser's messages for this client's channel. Most
// replies are written by the browser's reader itself (Channel.Forward);
// those writes get a deadline, since the browser's other channels wait for
// them: a client that does not read is cut off rather than let it stall
// them.
func toClient(client *websocket.Conn, up *cdp.Channel) error {
	return up.Forward(func(msg []byte, direct bool) error {
		deadline := time.Time{}
		if direct {
			deadline = time.Now().Add(directWriteTimeout)
		}
		client.SetWriteDeadline(deadline)
		if err := client.WriteMessage(websocket.TextMessage, msg); err != nil {
			return clientSide{err}
		}
		return nil
	})
}

// directWriteTimeout bounds a write of a small message to a client's
// socket: it blocks only when the socket's buffer is full, that is when
// the client has stopped reading.
const directWriteTimeout = 5 * time.Second
