package recording

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/store"
)

// Objects keeps the bytes of chunks in an object store (S3), so that on
// a shared PostgreSQL the database holds their index only.
type Objects interface {
	Put(ctx context.Context, key string, data []byte) error
	Get(ctx context.Context, key string) ([]byte, error)
	Delete(ctx context.Context, keys []string) error
}

// Archive keeps recordings: each chunk is a row of the store, its bytes
// there or in Objects. Every node sharing the store (and the object store)
// serves every recording.
type Archive struct {
	Store *store.Store
	// Objects, when set, holds the chunks' bytes.
	Objects Objects
	// Retention is how long a recording is kept after its session started.
	Retention time.Duration
	Log       *slog.Logger
}

// Record starts recording the tabs of session's browser. stop writes what
// is left and ends the recording; the browser must still run then.
func (a *Archive) Record(ctx context.Context, browser *cdp.Mux, team, session string, started time.Time) (stop func(context.Context), err error) {
	sink := &sessionSink{a: a, team: team, session: session, expires: started.Add(a.Retention)}
	r, err := Start(ctx, browser, sink, a.Log)
	if err != nil {
		return nil, fmt.Errorf("recording the session: %w", err)
	}
	return r.Stop, nil
}

type sessionSink struct {
	a             *Archive
	team, session string
	expires       time.Time
}

func (s *sessionSink) Put(ctx context.Context, c Chunk) error {
	row := store.RecordingChunk{Session: s.session, Page: c.Page, Team: s.team, Seq: c.Seq, URL: c.URL, Title: c.Title,
		FirstAt: c.First, LastAt: c.Last, Events: c.Events, Bytes: len(c.Data), Data: c.Data, ExpiresAt: s.expires}
	if s.a.Objects != nil {
		row.Object = fmt.Sprintf("%s/%s/%s/%08d.json.gz", s.team, s.session, c.Page, c.Seq)
		if err := s.a.Objects.Put(ctx, row.Object, c.Data); err != nil {
			return err
		}
		row.Data = nil
	}
	return s.a.Store.PutRecordingChunk(ctx, row)
}

// Pages lists the recorded tabs of team's session.
func (a *Archive) Pages(ctx context.Context, team, session string) ([]store.RecordedPage, error) {
	return a.Store.RecordedPages(ctx, team, session)
}

// chunksPerRead bounds the chunks one read takes from the store.
const chunksPerRead = 64

// Events returns a recorded tab's events from chunk from on, sorted by
// time, stopping after the chunk that brings them past maxBytes (of JSON);
// next is the chunk to go on from, -1 when there is no more.
func (a *Archive) Events(ctx context.Context, team, session, page string, from, maxBytes int) (events []json.RawMessage, next int, err error) {
	next = from
	size := 0
	for {
		chunks, err := a.Store.RecordingChunks(ctx, team, session, page, next, chunksPerRead)
		if err != nil {
			return nil, 0, err
		}
		for _, c := range chunks {
			data := c.Data
			if c.Object != "" {
				if a.Objects == nil {
					return nil, 0, fmt.Errorf("chunk %d of the recording is in an object store this server is not configured with", c.Seq)
				}
				if data, err = a.Objects.Get(ctx, c.Object); err != nil {
					return nil, 0, err
				}
			}
			evs, err := decodeChunk(data)
			if err != nil {
				return nil, 0, fmt.Errorf("chunk %d of the recording: %w", c.Seq, err)
			}
			events = append(events, evs...)
			for _, e := range evs {
				size += len(e) + 1
			}
			next = c.Seq + 1
			if size >= maxBytes {
				sortByTime(events)
				return events, next, nil
			}
		}
		if len(chunks) < chunksPerRead {
			sortByTime(events)
			return events, -1, nil
		}
	}
}

func decodeChunk(data []byte) ([]json.RawMessage, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	var evs []json.RawMessage
	return evs, json.Unmarshal(raw, &evs)
}

// sortByTime orders events by their timestamps, keeping the order of
// events of the same millisecond (a snapshot's meta event comes first).
func sortByTime(events []json.RawMessage) {
	at := make(map[*byte]int64, len(events))
	stamp := func(e json.RawMessage) int64 {
		if len(e) == 0 {
			return 0
		}
		if t, ok := at[&e[0]]; ok {
			return t
		}
		var h struct {
			Timestamp int64 `json:"timestamp"`
		}
		json.Unmarshal(e, &h)
		at[&e[0]] = h.Timestamp
		return h.Timestamp
	}
	slices.SortStableFunc(events, func(x, y json.RawMessage) int {
		tx, ty := stamp(x), stamp(y)
		switch {
		case tx < ty:
			return -1
		case tx > ty:
			return 1
		}
		return 0
	})
}

// Prune deletes the recordings past their retention.
func (a *Archive) Prune(ctx context.Context) error {
	objects, err := a.Store.PruneRecordings(ctx, time.Now())
	if err != nil {
		return err
	}
	if len(objects) > 0 && a.Objects != nil {
		return a.Objects.Delete(ctx, objects)
	}
	return nil
}

// Page describes one recorded tab in a replay's answer.
type Page struct {
	ID        string `json:"id"`
	URL       string `json:"url"`
	Title     string `json:"title"`
	StartedAt string `json:"startedAt"`
	EndedAt   string `json:"endedAt"`
	Events    int    `json:"events"`
	Bytes     int    `json:"bytes"`
}

// Replay is one page of a recording's events.
type Replay struct {
	Pages []Page `json:"pages"`
	// Events are rrweb events, sorted by time within each tab; in a
	// replay of every tab, each names its tab in pageId.
	Events []json.RawMessage `json:"events"`
	// Next is the cursor of the following page of events; "" at the end.
	Next string `json:"-"`
}

// ErrPageNotFound is returned for a tab the recording does not have.
var ErrPageNotFound = errors.New("the recording has no such page")

// ErrBadCursor is returned for a cursor no answer gave.
var ErrBadCursor = errors.New("cursor is not one this endpoint returned")

// MaxReplayBytes bounds the events of one answer; the rest follow its
// cursor.
const MaxReplayBytes = 4 << 20

// Read returns team's recording of session: its tabs, and from cursor on
// ("" for the start) the events of tab page, or of every tab in turn when
// page is "".
func (a *Archive) Read(ctx context.Context, team, session, page, cursor string) (Replay, error) {
	recorded, err := a.Pages(ctx, team, session)
	if err != nil {
		return Replay{}, err
	}
	r := Replay{Pages: pageList(recorded), Events: []json.RawMessage{}}
	index := slices.IndexFunc(recorded, func(p store.RecordedPage) bool { return p.ID == page })
	if page != "" && index < 0 {
		return Replay{}, ErrPageNotFound
	}
	at, seq := 0, 0
	if page != "" {
		at = index
	}
	if cursor != "" {
		if page != "" {
			if _, err := fmt.Sscanf(cursor, "%d", &seq); err != nil || fmt.Sprint(seq) != cursor || seq < 0 {
				return Replay{}, ErrBadCursor
			}
		} else if _, err := fmt.Sscanf(cursor, "%d.%d", &at, &seq); err != nil || fmt.Sprintf("%d.%d", at, seq) != cursor ||
			at < 0 || seq < 0 || at >= len(recorded) {
			return Replay{}, ErrBadCursor
		}
	}
	size := 0
	for at < len(recorded) {
		id := recorded[at].ID
		evs, next, err := a.Events(ctx, team, session, id, seq, MaxReplayBytes-size)
		if err != nil {
			return Replay{}, err
		}
		for _, e := range evs {
			if page == "" {
				e = withPage(e, id)
			}
			size += len(e) + 1
			r.Events = append(r.Events, e)
		}
		switch {
		case next >= 0 && page != "":
			r.Next = fmt.Sprint(next)
			return r, nil
		case next >= 0:
			r.Next = fmt.Sprintf("%d.%d", at, next)
			return r, nil
		case page != "":
			return r, nil
		}
		at, seq = at+1, 0
		if size >= MaxReplayBytes && at < len(recorded) {
			r.Next = fmt.Sprintf("%d.0", at)
			return r, nil
		}
	}
	return r, nil
}

func pageList(recorded []store.RecordedPage) []Page {
	out := make([]Page, 0, len(recorded))
	for _, p := range recorded {
		out = append(out, Page{ID: p.ID, URL: p.URL, Title: p.Title, StartedAt: iso(p.FirstAt),
			EndedAt: iso(p.LastAt), Events: p.Events, Bytes: p.Bytes})
	}
	return out
}

// withPage adds the tab's id to an event object.
func withPage(e json.RawMessage, page string) json.RawMessage {
	if len(e) < 2 || e[0] != '{' {
		return e
	}
	id, _ := json.Marshal(page)
	out := make([]byte, 0, len(e)+len(id)+12)
	out = append(out, `{"pageId":`...)
	out = append(out, id...)
	if len(bytes.TrimSpace(e[1:])) > 1 {
		out = append(out, ',')
	}
	return append(out, e[1:]...)
}

func iso(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}
