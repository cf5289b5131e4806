package api

import (
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/trawler-dev/trawler/wire"
)

// GET /v2/media/{id} serves the files of the audio and video formats. It
// is served by net/http rather than Fiber, as uploads are (see parse.go):
// Fiber's adaptor reads a whole answer into memory before writing it, and a
// media file may be hundreds of megabytes. http.ServeContent streams it
// and answers Range requests, which players make to seek.

// mediaPrefix is the path of the media files.
const mediaPrefix = "/v2/media/"

// isMedia reports whether r is for a media file.
func isMedia(r *http.Request) bool {
	return strings.HasPrefix(r.URL.Path, mediaPrefix)
}

// serveMedia serves a team's media file, with its type, length and name,
// in whole or by ranges. Another team's file, an unknown or expired one is
// 404 NOT_FOUND.
func (a *API) serveMedia(w http.ResponseWriter, r *http.Request) {
	if err := a.sendMedia(w, r); err != nil {
		e := a.toError(err)
		e.body().Write(w, e.Status)
	}
}

func (a *API) sendMedia(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return &Error{Status: http.StatusMethodNotAllowed, Code: "METHOD_NOT_ALLOWED", Message: "method not allowed on this endpoint"}
	}
	team, err := a.teamFor(r.Header.Get("Authorization"))
	if err != nil {
		return err
	}
	if problems := queryProblems(r.URL.RawQuery); len(problems) > 0 {
		return badRequest(problems...)
	}
	notFound := &Error{Status: http.StatusNotFound, Code: "NOT_FOUND", Message: "media not found (it may have expired)"}
	id := strings.TrimPrefix(r.URL.Path, mediaPrefix)
	if id == "" || strings.Contains(id, "/") || len(id) > 64 {
		return notFound
	}
	f, m, err := a.Scraper.OpenMedia(r.Context(), team.ID, id)
	if err != nil {
		return err
	}
	defer f.Close()
	h := w.Header()
	h.Set("Content-Type", m.ContentType)
	h.Set("Content-Disposition", mime.FormatMediaType("inline", map[string]string{"filename": m.FileName}))
	// A file never changes under its id: its id is a strong validator
	// (If-Range), and a client may keep it until it expires, privately.
	h.Set("ETag", `"`+m.ID+`"`)
	h.Set("Cache-Control", fmt.Sprintf("private, max-age=%d", max(0, int(time.Until(m.ExpiresAt).Seconds()))))
	h.Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(&errorShape{w: w}, r, m.FileName, m.CreatedAt, f)
	return nil
}

// errorShape answers the errors http.ServeContent writes in plain text (a
// range past the end, a failed precondition) in the API's error shape.
type errorShape struct {
	w       http.ResponseWriter
	refused bool
}

func (e *errorShape) Header() http.Header { return e.w.Header() }

func (e *errorShape) WriteHeader(status int) {
	if status < 400 {
		e.w.WriteHeader(status)
		return
	}
	e.refused = true
	h := e.w.Header()
	h.Del("Content-Disposition")
	h.Del("ETag")
	h.Del("Cache-Control")
	code, msg := "BAD_REQUEST", http.StatusText(status)
	switch status {
	case http.StatusRequestedRangeNotSatisfiable:
		code, msg = "RANGE_NOT_SATISFIABLE", "the requested range is not within the file (its size is in Content-Range)"
	case http.StatusPreconditionFailed:
		code, msg = "PRECONDITION_FAILED", "the file does not match the request's If-Match or If-Unmodified-Since"
	case http.StatusInternalServerError:
		code, msg = "INTERNAL", "the file could not be read"
	}
	wire.WriteError(e.w, status, code, msg)
}

func (e *errorShape) Write(p []byte) (int, error) {
	if e.refused {
		return len(p), nil // ServeContent's own plain-text message
	}
	return e.w.Write(p)
}
