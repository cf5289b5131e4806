package recording

import (
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/trawler-dev/trawler/store"
	"github.com/trawler-dev/trawler/wire"
)

//go:embed static
var staticFiles embed.FS

// static is the replay page (rrweb-player with the console and the
// requests beside it) and its assets.
var static = wire.NewStatic(staticFiles, "static", secureHeaders)

// The replayed document is built in a frame of the page from what the tab
// showed: its styles are inline and its images are wherever the recorded
// page had them. Nothing of it runs (rrweb's replayer drops scripts and the
// frame is sandboxed without allow-scripts).
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src * data: blob:; font-src * data:; media-src * data: blob:; connect-src 'self'; frame-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func secureHeaders(w http.ResponseWriter) { wire.PageHeaders(w, contentSecurityPolicy) }

// Viewer serves /replay/{id}?token=... (the replay page), its data at
// /replay/{id}/data and its assets at /replay/static/. It opens with the
// session's view or interactive token, as the live view does, and is
// served by any node from the store, during the session and after it.
type Viewer struct {
	Archive *Archive
	Log     *slog.Logger
}

// ServeHTTP routes a replay request.
func (v *Viewer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, sub, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/replay/"), "/")
	if id == "static" {
		static.ServeAsset(w, r, sub)
		return
	}
	if name, ok := strings.CutPrefix(sub, "static/"); ok {
		static.ServeAsset(w, r, name)
		return
	}
	sub = strings.TrimSuffix(sub, "/")
	if id == "" || (sub != "" && sub != "data") {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "no such replay path")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "the replay is opened with GET")
		return
	}
	rec, err := v.Archive.Store.Session(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "browser session not found")
		return
	}
	if err != nil {
		v.Log.Error("reading a session for its replay", "session", id, "err", err)
		writeError(w, http.StatusServiceUnavailable, "UNAVAILABLE", "the service's database is unavailable")
		return
	}
	token := r.URL.Query().Get("token")
	if !tokenEqual(token, rec.ViewToken) && !tokenEqual(token, rec.InteractToken) {
		writeError(w, http.StatusUnauthorized, "UNAUTHORIZED", "token does not match this session's view token")
		return
	}
	if !rec.Recording {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "browser session "+id+" was not recorded")
		return
	}
	if sub == "" {
		static.ServePage(w, r)
		return
	}
	// The data lists the tabs; with page, it has that tab's events.
	q := r.URL.Query()
	var replay Replay
	if q.Get("page") == "" {
		var pages []store.RecordedPage
		if pages, err = v.Archive.Pages(r.Context(), rec.Team, id); err == nil {
			replay = Replay{Pages: pageList(pages), Events: []json.RawMessage{}}
		}
	} else {
		replay, err = v.Archive.Read(r.Context(), rec.Team, id, q.Get("page"), q.Get("cursor"))
	}
	switch {
	case errors.Is(err, ErrPageNotFound):
		writeError(w, http.StatusNotFound, "NOT_FOUND", "the recording has no such page")
	case errors.Is(err, ErrBadCursor):
		writeError(w, http.StatusBadRequest, "BAD_REQUEST", "cursor must be the value of a next cursor this endpoint returned")
	case err != nil:
		v.Log.Error("reading a recording", "session", id, "err", err)
		writeError(w, http.StatusServiceUnavailable, "UNAVAILABLE", "the recording could not be read")
	default:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		secureHeaders(w)
		json.NewEncoder(w).Encode(map[string]any{"success": true, "id": id, "active": rec.Status == "active",
			"pages": replay.Pages, "events": replay.Events, "next": replay.Next})
	}
}

func tokenEqual(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Cache-Control", "no-store")
	wire.WriteError(w, status, code, msg)
}
