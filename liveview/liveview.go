// Package liveview owns the live-view URLs of browser sessions
// (/live/{id}?token=...): who may open them, and what they show.
//
// The page that streams the session is not built yet. Until it is, the
// handler still enforces the contract of the URLs it answers: an unknown
// session is 404, a wrong token 401, a destroyed session 410 with the
// reason, and a live session 501 saying that the view is not available.
package liveview

import (
	"log/slog"
	"net/http"
	"strings"

	"github.com/trawler-dev/trawler/cdpproxy"
)

// Handler serves /live/{id}.
type Handler struct {
	Sessions cdpproxy.Sessions
	Log      *slog.Logger
}

// ServeHTTP answers a live-view URL.
func (h Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/live/"), "/")
	s, ok := cdpproxy.LookupSession(w, r, h.Sessions, id, h.Log)
	if !ok {
		return
	}
	if _, ok := s.CheckLiveToken(r.URL.Query().Get("token")); !ok {
		cdpproxy.WriteError(w, http.StatusUnauthorized, "UNAUTHORIZED", "token does not match this session's live view")
		return
	}
	cdpproxy.WriteError(w, http.StatusNotImplemented, "NOT_IMPLEMENTED", "the live view page is not available in this version of Trawler; the session itself is reachable over its cdpUrl")
}
