package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/trawler-dev/trawler/crawl"
	"github.com/trawler-dev/trawler/wire"
)

// The live-progress WebSocket of a job lives on the API's paths
// (/v2/crawl/{id}, /v2/batch/scrape/{id}) but is served by net/http:
// gorilla/websocket needs it, and Fiber's adaptor cannot hijack. Handler
// routes upgrade requests of those paths here.

var watchUpgrader = websocket.Upgrader{
	ReadBufferSize:  4 << 10,
	WriteBufferSize: 64 << 10,
	// Any origin: the socket is authenticated by its API key, not by cookies.
	CheckOrigin: func(*http.Request) bool { return true },
	// A failed handshake is answered in the API's error shape.
	Error: func(w http.ResponseWriter, _ *http.Request, status int, reason error) {
		code := "BAD_REQUEST"
		if status == http.StatusMethodNotAllowed {
			code = "METHOD_NOT_ALLOWED"
		}
		wire.WriteError(w, status, code, "the WebSocket handshake failed: "+reason.Error())
	},
}

// isWatch reports whether r asks for a job's live-progress WebSocket.
func isWatch(r *http.Request) bool {
	if !websocket.IsWebSocketUpgrade(r) {
		return false
	}
	_, _, ok := watchPath(r.URL.Path)
	return ok
}

func watchPath(p string) (kind, id string, ok bool) {
	switch {
	case strings.HasPrefix(p, "/v2/crawl/"):
		kind, id = crawl.KindCrawl, strings.TrimPrefix(p, "/v2/crawl/")
	case strings.HasPrefix(p, "/v2/batch/scrape/"):
		kind, id = crawl.KindBatch, strings.TrimPrefix(p, "/v2/batch/scrape/")
	default:
		return "", "", false
	}
	return kind, id, id != "" && !strings.Contains(id, "/")
}

// serveWatch serves a job's live progress: a catchup message with the job's
// status and the documents so far, then each new document as it is
// scraped, then done (or cancelled, or error). The API key comes as the
// WebSocket subprotocol (what the Firecrawl SDK sends) or as a bearer
// token.
func (a *API) serveWatch(w http.ResponseWriter, r *http.Request) {
	kind, id, _ := watchPath(r.URL.Path)
	protocols := websocket.Subprotocols(r)
	team, ok := a.Teams.Authenticate(watchKey(r, protocols))
	if !ok {
		wire.WriteError(w, http.StatusUnauthorized, "UNAUTHORIZED",
			"invalid or missing API key: send it as the WebSocket subprotocol or as Authorization: Bearer")
		return
	}
	if problems := queryProblems(r.URL.RawQuery); len(problems) > 0 {
		e := badRequest(problems...)
		e.body().Write(w, e.Status)
		return
	}
	up := watchUpgrader
	if len(protocols) > 0 {
		up.Subprotocols = protocols[:1]
	}
	conn, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer conn.Close()
	// The socket lives as long as its connection, which net/http no longer
	// watches once hijacked: the reader below ends it when the client goes.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				cancel()
				return
			}
		}
	}()
	s := &watchSocket{a: a, conn: conn, team: team.ID, kind: kind, id: id}
	events, stop, running := a.Crawler.Watch(ctx, team.ID, kind, id)
	defer stop()
	if !s.catchUp(ctx) {
		return
	}
	if !running {
		s.final(ctx)
		return
	}
	s.follow(ctx, events)
}

// watchSocket is one live-progress socket and the job it follows.
type watchSocket struct {
	a              *API
	conn           *websocket.Conn
	team, kind, id string
	// sent counts the documents the catchup sent, which events may bring
	// again.
	sent int
}

func (s *watchSocket) send(v any) bool {
	s.conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
	return s.conn.WriteJSON(v) == nil
}

func (s *watchSocket) closeWith(code int, reason string) {
	s.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(5*time.Second))
}

// catchUp sends the job's status with its first documents, then the rest
// of the documents so far. It reports whether the socket goes on.
func (s *watchSocket) catchUp(ctx context.Context) bool {
	st, err := s.a.Crawler.Status(ctx, s.team, s.kind, s.id, 0, 1000)
	if err != nil {
		msg := "job not found"
		if !errors.Is(err, crawl.ErrNotFound) {
			msg = s.a.toError(err).Message
		}
		s.send(map[string]any{"type": "error", "error": msg})
		s.closeWith(websocket.ClosePolicyViolation, msg)
		return false
	}
	if !s.send(map[string]any{"type": "catchup", "data": statusMessage(st, st.Data)}) {
		return false
	}
	s.sent = len(st.Data)
	for more := st.More; more; {
		page, err := s.a.Crawler.Status(ctx, s.team, s.kind, s.id, s.sent, 1000)
		if err != nil {
			return false
		}
		for _, d := range page.Data {
			if !s.send(map[string]any{"type": "document", "data": d}) {
				return false
			}
		}
		s.sent += len(page.Data)
		more = page.More && len(page.Data) > 0
	}
	return true
}

// follow sends each new document of the job as events bring it, until
// the job ends (then final), the client goes or falls behind.
func (s *watchSocket) follow(ctx context.Context, events <-chan crawl.Event) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				// Too slow to keep up, or the job ended: say which.
				if st, err := s.a.Crawler.Status(ctx, s.team, s.kind, s.id, 0, 1); err == nil && st.Status == crawl.StatusScraping {
					s.closeWith(websocket.CloseTryAgainLater, "too slow to follow this job live; poll its status instead")
					return
				}
				s.final(ctx)
				return
			}
			if ev.Type != "document" {
				s.final(ctx)
				return
			}
			if ev.Seq <= int64(s.sent) {
				continue // already in the catchup
			}
			if !s.send(map[string]any{"type": "document", "data": ev.Doc}) {
				return
			}
		}
	}
}

// final sends how the job ended and closes the socket.
func (s *watchSocket) final(ctx context.Context) {
	st, err := s.a.Crawler.Status(ctx, s.team, s.kind, s.id, 0, 1)
	if err != nil {
		return
	}
	switch st.Status {
	case crawl.StatusCompleted:
		s.send(map[string]any{"type": "done", "data": statusMessage(st, []json.RawMessage{})})
	case crawl.StatusFailed:
		s.send(map[string]any{"type": "error", "error": "the job failed", "data": statusMessage(st, []json.RawMessage{})})
	default:
		s.send(map[string]any{"type": st.Status, "data": statusMessage(st, []json.RawMessage{})})
	}
	s.closeWith(websocket.CloseNormalClosure, "job "+st.Status)
}

// watchKey is the API key of a watch socket: the bearer token, else the
// first of the WebSocket subprotocols.
func watchKey(r *http.Request, protocols []string) string {
	if scheme, rest, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		return strings.TrimSpace(rest)
	}
	if len(protocols) > 0 {
		return protocols[0]
	}
	return ""
}

func statusMessage(st *crawl.Status, docs []json.RawMessage) map[string]any {
	m := map[string]any{"status": st.Status, "total": st.Total, "completed": st.Completed, "creditsUsed": st.CreditsUsed,
		"expiresAt": isoTime(st.ExpiresAt), "data": docs}
	if st.Warning != "" {
		m["warning"] = st.Warning
	}
	return m
}
