package api

import (
	"bytes"
	"io"
	"net/http"
	"slices"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"

	"github.com/trawler-dev/trawler/wire"
)

// Handler serves the whole API on net/http: the Fiber routes through
// Fiber's adaptor, behind the JSON body limit, and on net/http itself what
// Fiber cannot serve: a parse upload (streamed, past the JSON body limit),
// a job's watch socket (a hijack) and a method Fiber does not know (which
// it would answer in plain text).
func (a *API) Handler() http.Handler {
	app := limitBody(adaptor.FiberApp(a.app))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case isWatch(r):
			a.serveWatch(w, r)
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
