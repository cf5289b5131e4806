// Package liveview owns the live-view URLs of browser sessions
// (/live/{id}?token=...): who may open them, the page a person opens in an
// ordinary browser to watch (liveViewUrl) or drive (interactiveLiveViewUrl)
// the session's tabs, and the WebSocket that streams the tabs to that page.
//
// One hub per session, created with its first viewer and gone with its last,
// holds a browser-level CDP connection to the session's browser: it keeps the
// list of page targets, runs one screencast per tab that some viewer watches
// (however many watch it), and fans the frames out to the viewers, each of
// which holds at most one unsent frame, so a slow viewer drops frames rather
// than buffering them. Input is accepted only from sockets opened with the
// interactive token; the check is made here, not in the page.
//
// The URLs keep the contract they had before the page existed: an unknown
// session is 404, a wrong token 401, a destroyed session 410 with the
// reason; a session created with streamWebView:false answers 409.
package liveview

import (
	"embed"
	"encoding/json"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/trawler-dev/trawler/cdpproxy"
	"github.com/trawler-dev/trawler/sessions"
	"github.com/trawler-dev/trawler/wire"
)

// Handler serves /live/{id} (the page), /live/{id}/ws (the page's socket),
// /live/{id}/status (whether the session still lasts, for the page after a
// dropped socket) and /live/static/ (the page's script and style sheet).
type Handler struct {
	sessions cdpproxy.Sessions
	urls     wire.PublicURL
	log      *slog.Logger
	upgrader websocket.Upgrader

	mu   sync.Mutex
	hubs map[string]*hub // by session id
}

// New returns a handler for the sessions of s. urls tells which origin the
// page is served from when a proxy forwards it, for the socket's origin check.
func New(s cdpproxy.Sessions, urls wire.PublicURL, log *slog.Logger) *Handler {
	h := &Handler{sessions: s, urls: urls, log: log, hubs: map[string]*hub{}}
	h.upgrader = websocket.Upgrader{
		ReadBufferSize: 4 << 10, WriteBufferSize: 64 << 10,
		HandshakeTimeout: 10 * time.Second,
		CheckOrigin:      h.sameOrigin,
	}
	return h
}

// Headers of the page and its assets. The page needs nothing from elsewhere:
// scripts and styles come from /live/static/, frames are drawn from blobs,
// and the only connection is the page's own WebSocket (connect-src 'self'
// covers ws: and wss: to the same host).
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func secureHeaders(w http.ResponseWriter) { wire.PageHeaders(w, contentSecurityPolicy) }

// ServeHTTP routes a live-view request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, sub, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/live/"), "/")
	if id == "static" {
		serveStatic(w, r, sub)
		return
	}
	if name, ok := strings.CutPrefix(sub, "static/"); ok {
		// The page opened as /live/{id}/ resolves its relative links here.
		serveStatic(w, r, name)
		return
	}
	sub = strings.TrimSuffix(sub, "/")
	if id == "" || (sub != "" && sub != "ws" && sub != "status") {
		writeError(w, r, http.StatusNotFound, "NOT_FOUND", "no such live-view path")
		return
	}
	if sub == "" && r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, r, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "the live view is opened with GET")
		return
	}
	s, ok := h.lookup(w, r, id)
	if !ok {
		return
	}
	interactive, ok := s.CheckLiveToken(r.URL.Query().Get("token"))
	if !ok {
		writeError(w, r, http.StatusUnauthorized, "UNAUTHORIZED", "token does not match this session's live view")
		return
	}
	if !s.Record().StreamWebView {
		writeError(w, r, http.StatusConflict, "LIVE_VIEW_DISABLED",
			"this browser session was created with streamWebView:false, so it has no live view")
		return
	}
	switch sub {
	case "":
		servePage(w, r)
	case "status":
		writeJSON(w, http.StatusOK, map[string]any{"success": true, "status": "active", "interactive": interactive})
	case "ws":
		if !websocket.IsWebSocketUpgrade(r) {
			writeError(w, r, http.StatusBadRequest, "BAD_REQUEST", "this URL takes a WebSocket upgrade")
			return
		}
		h.serveViewer(w, r, s, interactive)
	}
}

// lookup is cdpproxy.LookupSession with errors a person can read when the
// page itself was asked for by a browser.
func (h *Handler) lookup(w http.ResponseWriter, r *http.Request, id string) (*sessions.Session, bool) {
	if !wantsHTML(r) {
		return cdpproxy.LookupSession(w, r, h.sessions, id, h.log)
	}
	s, no := cdpproxy.FindSession(r.Context(), h.sessions, id, h.log)
	if no != nil {
		writeError(w, r, no.Status, no.Code, no.Message)
		return nil, false
	}
	return s, true
}

// wantsHTML tells a browser opening the page from a program: errors of the
// page's own URL are shown as a page to the one, JSON to the other.
func wantsHTML(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/html") &&
		!strings.Contains(strings.TrimPrefix(r.URL.Path, "/live/"), "/")
}

// sameOrigin accepts a socket opened by a page of this service: the Origin
// must name the host the request reached, or the public base URL. Programs
// that send no Origin are accepted; the token is their credential.
func (h *Handler) sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	b, err := url.Parse(h.urls.ForHTTP(r))
	return err == nil && strings.EqualFold(u.Host, b.Host)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// writeError answers with the API's error shape, or a short page for a
// browser that opened the live-view URL.
func writeError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	if !wantsHTML(r) {
		w.Header().Set("Cache-Control", "no-store")
		wire.WriteError(w, status, code, msg)
		return
	}
	secureHeaders(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	errorPage.Execute(w, map[string]string{"Code": code, "Message": msg, "Asset": assetPath("liveview.css"), "Icon": assetPath("favicon.svg")})
}

var errorPage = template.Must(template.New("error").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Live view unavailable</title><link rel="icon" href="{{.Icon}}" type="image/svg+xml"><link rel="stylesheet" href="{{.Asset}}"></head>
<body class="message-page"><main><h1>Live view unavailable</h1><p>{{.Message}}</p><p class="code">{{.Code}}</p></main></body></html>
`))

//go:embed static
var staticFiles embed.FS

// static is the page and its assets.
var static = wire.NewStatic(staticFiles, "static", secureHeaders)

func assetPath(name string) string { return static.Path(name) }

func serveStatic(w http.ResponseWriter, r *http.Request, name string) { static.ServeAsset(w, r, name) }

func servePage(w http.ResponseWriter, r *http.Request) { static.ServePage(w, r) }
