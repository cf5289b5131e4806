// Package liveview owns the live-view URLs of browser sessions
// (/live/{id}?token=...): who may open them, and what they show.
//
// The page that streams the session is not built yet. Until it is, the
// handler still enforces the contract of the URLs it answers: an unknown
// session is 404, a wrong token 401, a destroyed session 410 with the
// reason, and a live session 501 saying that the view is not available.
package liveview

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/trawler-dev/trawler/sessions"
)

// Sessions finds sessions; it is implemented by *sessions.Manager.
type Sessions interface {
	Lookup(ctx context.Context, id string) (*sessions.Session, error)
}

// Handler serves /live/{id}.
type Handler struct {
	Sessions Sessions
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"success": false, "error": msg, "code": code})
}

// ServeHTTP answers a live-view URL.
func (h Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/live/"), "/")
	s, err := h.Sessions.Lookup(r.Context(), id)
	var destroyed *sessions.DestroyedError
	switch {
	case errors.Is(err, sessions.ErrNotFound):
		writeError(w, http.StatusNotFound, "NOT_FOUND", "browser session not found")
		return
	case errors.As(err, &destroyed):
		writeError(w, http.StatusGone, "SESSION_DESTROYED", "browser session was destroyed: "+destroyed.Reason)
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, "INTERNAL", "could not look up the session")
		return
	}
	if _, ok := s.CheckLiveToken(r.URL.Query().Get("token")); !ok {
		writeError(w, http.StatusUnauthorized, "UNAUTHORIZED", "token does not match this session's live view")
		return
	}
	writeError(w, http.StatusNotImplemented, "NOT_IMPLEMENTED", "the live view page is not available in this version of Trawler; the session itself is reachable over its cdpUrl")
}
