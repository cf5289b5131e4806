package api

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"

	"github.com/trawler-dev/trawler/wire"
)

// Handler serves the whole API on net/http: the Fiber routes through
// Fiber's adaptor, behind the JSON body limit, and on net/http itself what
// Fiber cannot serve: a parse upload (streamed, past the JSON body limit),
// a job's watch socket (a hijack) and a method Fiber does not know (which
// it would answer in plain text).
//
// A request with a body to a route that takes an API key is refused before
// a byte of its body is read when its key is not good (see refuseUnknown).
func (a *API) Handler() http.Handler {
	app := limitBody(adaptor.FiberApp(a.app))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case isWatch(r):
			a.serveWatch(w, r)
		case a.refuseUnknown(w, r):
		case isParse(r):
			// Uploads stream past the JSON body limit, bounded on their own.
			a.serveParse(w, r)
		case isMedia(r): // streamed, by ranges (media.go)
			a.serveMedia(w, r)
		case !slices.Contains(fiber.DefaultMethods, r.Method):
			wire.WriteError(w, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "method not allowed on this endpoint")
		default:
			app.ServeHTTP(w, r)
		}
	})
}

// refuseUnknown answers 401, as the route itself would, a request with a
// body to a /v2 route (every one of which takes an API key) whose
// Authorization header does not authenticate, and reports whether it did.
// Fiber's routes authenticate only once the adaptor has read the whole
// body, and a client without a key must not be able to hold a connection
// and a handler by sending it slowly. The answer closes the connection,
// so that net/http does not read the body before it sends it.
func (a *API) refuseUnknown(w http.ResponseWriter, r *http.Request) bool {
	// Fiber matches the /v2 group as a prefix of the lower-cased path.
	if r.ContentLength == 0 || !strings.HasPrefix(strings.ToLower(r.URL.Path), "/v2") {
		return false
	}
	if _, err := a.teamFor(r.Header.Get("Authorization")); err != nil {
		e := a.toError(err)
		w.Header().Set("Connection", "close")
		e.body().Write(w, e.Status)
		return true
	}
	return false
}

// limitBody refuses bodies over BodyLimit before Fiber's adaptor reads them
// whole into memory, and reads the body itself: the adaptor answers a body
// that cannot be read (cut short of its Content-Length, a malformed chunk)
// with a plain-text 500, where it is the client's mistake.
func limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > BodyLimit {
			tooLarge(w)
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			body, err := io.ReadAll(io.LimitReader(r.Body, BodyLimit+1))
			switch {
			case len(body) > BodyLimit:
				tooLarge(w)
				return
			case err != nil:
				wire.WriteError(w, http.StatusBadRequest, "BAD_REQUEST",
					"the request body could not be read: it ended before its Content-Length, or its chunked encoding is malformed")
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		next.ServeHTTP(w, r)
	})
}

func tooLarge(w http.ResponseWriter) {
	wire.WriteError(w, http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE", "request body is larger than 10 MB")
}

// TeamOf returns the team an Authorization header authenticates, as every
// /v2 route authenticates it (the MCP endpoint's check).
func (a *API) TeamOf(header string) (string, error) {
	t, err := a.teamFor(header)
	return t.ID, err
}

// WriteError answers err as the API's routes answer it.
func (a *API) WriteError(w http.ResponseWriter, err error) {
	e := a.toError(err)
	e.body().Write(w, e.Status)
}
