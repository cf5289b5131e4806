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
	send := func(v any) bool {
		conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
		return conn.WriteJSON(v) == nil
	}
	closeWith := func(code int, reason string) {
		conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(5*time.Second))
	}

	events, stop, running := a.Crawler.Watch(ctx, team.ID, kind, id)
	defer stop()
	st, err := a.Crawler.Status(ctx, team.ID, kind, id, 0, 1000)
	if err != nil {
		msg := "job not found"
		if !errors.Is(err, crawl.ErrNotFound) {
			msg = a.toError(err).Message
		}
		send(map[string]any{"type": "error", "error": msg})
		closeWith(websocket.ClosePolicyViolation, msg)
		return
	}
	if !send(map[string]any{"type": "catchup", "data": statusMessage(st, st.Data)}) {
		return
	}
	sent := len(st.Data)
	for more := st.More; more; {
		page, err := a.Crawler.Status(ctx, team.ID, kind, id, sent, 1000)
		if err != nil {
			return
		}
		for _, d := range page.Data {
			if !send(map[string]any{"type": "document", "data": d}) {
				return
			}
		}
		sent += len(page.Data)
		more = page.More && len(page.Data) > 0
	}
	final := func() {
		st, err := a.Crawler.Status(ctx, team.ID, kind, id, 0, 1)
		if err != nil {
			return
		}
		switch st.Status {
		case crawl.StatusCompleted:
			send(map[string]any{"type": "done", "data": statusMessage(st, []json.RawMessage{})})
		case crawl.StatusFailed:
			send(map[string]any{"type": "error", "error": "the job failed", "data": statusMessage(st, []json.RawMessage{})})
		default:
			send(map[string]any{"type": st.Status, "data": statusMessage(st, []json.RawMessage{})})
		}
		closeWith(websocket.CloseNormalClosure, "job "+st.Status)
	}
	if !running {
		final()
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				// Too slow to keep up, or the job ended: say which.
				if st, err := a.Crawler.Status(ctx, team.ID, kind, id, 0, 1); err == nil && st.Status == crawl.StatusScraping {
					closeWith(websocket.CloseTryAgainLater, "too slow to follow this job live; poll its status instead")
					return
				}
				final()
				return
			}
			if ev.Type != "document" {
				final()
				return
			}
			if ev.Seq <= int64(sent) {
				continue // already in the catchup
			}
			if !send(map[string]any{"type": "document", "data": ev.Doc}) {
				return
			}
		}
	}
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
