package profiles

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/chromedp/cdproto/fetch"

	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/cdp/rawjson"
)

// This file writes a state back into a browser over the DevTools protocol: its cookies, and the
// storage of each origin on a helper tab, which answers the helper page's requests for it.

// Restore writes st into browser context browserContextID ("" for the default context) of the
// browser. Cookies are added, replacing cookies of the same name, domain and path;
// cookies that have expired since the capture are dropped. For each origin in st, its localStorage
// and IndexedDB replace what the browser holds for that origin (a database that another page keeps
// open for more than 5 seconds after being asked to close fails the restore); other origins are
// left alone. A cookie the browser refuses fails the restore after all the others are set, with an
// error naming it.
func Restore(ctx context.Context, browser *cdp.Mux, browserContextID string, st *State) error {
	if st == nil {
		return errors.New("restoring a nil profile state")
	}
	for _, o := range st.Origins {
		if _, err := parseOrigin(o.Origin); err != nil {
			return err
		}
	}
	snap, err := st.snapshot()
	if err != nil {
		return err
	}
	return restore(ctx, browser, browserContextID, func(context.Context) (*snapshot, error) { return snap, nil }, false)
}

// restore is Restore of the snapshot that load returns, which may still be being decoded. With
// speculate, a helper tab opens meanwhile, in case the snapshot holds storage.
func restore(ctx context.Context, browser *cdp.Mux, browserContextID string, load func(context.Context) (*snapshot, error), speculate bool) error {
	var snap *snapshot
	if !speculate {
		var err error
		if snap, err = load(ctx); err != nil {
			return err
		}
		if len(snap.cookies) == 0 && len(snap.origins) == 0 {
			return nil
		}
	}
	conn, b, err := dialBulk(ctx, browser)
	if err != nil {
		return err
	}
	defer conn.Close()
	h := newHelper(conn, b, browserContextID)
	defer h.close()
	var first chan openedTab
	if speculate {
		opening := make(chan openedTab, 1)
		go func() {
			t, err := h.open(ctx)
			opening <- openedTab{t, err}
		}()
		first = opening
		// Once the tab is open, unless eachOrigin took it, it is closed with the others.
		defer func() {
			if first != nil {
				<-first
			}
		}()
	}
	if snap == nil {
		if snap, err = load(ctx); err != nil {
			return err
		}
	}
	for _, o := range snap.origins {
		if _, err := parseOrigin(o.origin); err != nil {
			return err
		}
	}

	// The cookies are written while the helper tab visits the origins.
	cookiesSet := make(chan error, 1)
	go func() { cookiesSet <- setCookies(ctx, conn, browserContextID, snap.cookies) }()
	if len(snap.origins) > 0 {
		opened := first
		first = nil
		err = h.eachOrigin(ctx, len(snap.origins), opened, func(ctx context.Context, t *tab, i int) error {
			o := snap.origins[i]
			if err := t.restore(ctx, o); err != nil {
				return fmt.Errorf("writing the storage of %s: %w", o.origin, err)
			}
			return nil
		})
	}
	return errors.Join(<-cookiesSet, err)
}

// restore visits o's origin and writes its storage. The page asks for the storage, in parts
// (dataParts), which the tab's Fetch domain answers: a response body reaches the page without the
// script engine's protocol layer converting it on the way, as an argument would. Little storage
// comes in the page itself.
func (t *tab) restore(ctx context.Context, o rawOrigin) error {
	ctx, cancel := context.WithTimeout(ctx, originTimeout)
	defer cancel()
	var page []byte
	if len(o.json) <= inlineSize {
		parts, err := cutParts(o)
		if err != nil {
			return err
		}
		page = helperPage("restore", o.origin, parts)
	} else {
		data := newRestoreData()
		go data.prepare(t.session.ID, o)
		t.h.mu.Lock()
		t.restoring, t.dataErr = data, nil
		t.h.mu.Unlock()
		defer func() {
			t.h.mu.Lock()
			t.restoring = nil
			t.h.mu.Unlock()
			close(data.done)
		}()
		page = helperPage("restore", o.origin, nil)
	}
	if err := t.visit(ctx, o.origin, page); err != nil {
		return err
	}
	if _, err := t.results(ctx, "restore", o.origin, ""); err != nil {
		t.h.mu.Lock()
		dataErr := t.dataErr
		t.h.mu.Unlock()
		if dataErr != nil {
			return fmt.Errorf("%w (%v)", dataErr, err)
		}
		return err
	}
	return nil
}

// inlineSize is the size of an origin's storage up to which a restore puts it in the helper page:
// for little storage, that saves the page's requests for it.
const inlineSize = 256 << 10

// dataQuery and a part's name are the query of the helper page's requests for the parts of the
// storage to restore.
const dataQuery = "data="

// dataParts are the members of an OriginState that a restore writes, which the page asks for
// apart: it writes the first while the second comes.
var dataParts = []string{"localStorage", "indexedDB"}

// restoreData is the storage that a restore of one origin sends the page, in parts (dataParts),
// each as the Fetch.fulfillRequest command that answers the page's request for it, but for the
// request's id and the command's own (see fulfilData). It is made ready while the tab travels.
type restoreData struct {
	ready   chan struct{} // closed once parts or err is set
	parts   map[string][]byte
	err     error
	written []chan struct{} // by part, closed once its answer is written to the browser (or failed)
	sent    []sync.Once
	done    chan struct{} // closed when the restore of the origin ends
}

func newRestoreData() *restoreData {
	d := &restoreData{ready: make(chan struct{}), done: make(chan struct{}), sent: make([]sync.Once, len(dataParts))}
	for range dataParts {
		d.written = append(d.written, make(chan struct{}))
	}
	return d
}

// prepare cuts o's storage into parts and makes the commands that send them.
func (d *restoreData) prepare(session string, o rawOrigin) {
	defer close(d.ready)
	parts, err := cutParts(o)
	if err != nil {
		d.err = err
		return
	}
	d.parts = make(map[string][]byte, len(dataParts))
	for _, p := range dataParts {
		d.parts[p] = fulfilData(session, parts[p])
	}
}

// cutParts returns the JSON of each part of o's storage (dataParts), "null" for a part it lacks.
func cutParts(o rawOrigin) (map[string][]byte, error) {
	parts := make(map[string][]byte, len(dataParts))
	_, err := rawjson.EachMember(o.json, func(k, v []byte) bool {
		if slices.Contains(dataParts, string(k)) {
			parts[string(k)] = v
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("%w: the storage of %s is not a JSON object", ErrInvalidState, o.origin)
	}
	for _, p := range dataParts {
		if parts[p] == nil {
			parts[p] = []byte("null")
		}
	}
	return parts, nil
}

// fulfilData returns the start of the Fetch.fulfillRequest command on session that answers with
// body, a JSON document: all of it but for the requestId member and the id, which answerData
// appends. The body goes as base64, which the protocol carries as it is. The message is written
// here rather than encoded from fetch.FulfillRequestParams, which would copy the body, megabytes
// of it, twice more on its way to the browser.
func fulfilData(session string, body []byte) []byte {
	const (
		head = `"responseCode":200,"responseHeaders":[{"name":"Content-Type","value":"application/json; charset=utf-8"},` +
			`{"name":"Cache-Control","value":"no-store"}],"body":"`
		tail = 256 // room for what answerData appends
	)
	n := base64.StdEncoding.EncodedLen(len(body))
	buf := make([]byte, 0, 128+len(session)+len(head)+n+tail)
	buf = command(buf, session, fetch.CommandFulfillRequest)
	buf = append(buf, head...)
	buf = buf[:len(buf)+n]
	base64.StdEncoding.Encode(buf[len(buf)-n:], body)
	return append(buf, '"')
}

// answerData answers a request for a part of the storage to restore, once it is ready and the
// parts before it are sent: the page writes one part while the next comes. Each part is answered
// once.
func (h *helper) answerData(ctx context.Context, a answer) error {
	i := slices.Index(dataParts, a.part)
	if i < 0 {
		return fmt.Errorf("no part %q to answer", a.part)
	}
	written := func() { a.data.sent[i].Do(func() { close(a.data.written[i]) }) }
	defer written()
	for _, c := range append([]chan struct{}{a.data.ready}, a.data.written[:i]...) {
		select {
		case <-c:
		case <-a.data.done:
			return errors.New("the restore is over")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if a.data.err != nil {
		return a.data.err
	}
	h.mu.Lock()
	msg := a.data.parts[a.part]
	delete(a.data.parts, a.part)
	h.mu.Unlock()
	if msg == nil {
		return fmt.Errorf("part %q asked for twice", a.part)
	}
	wait, err := h.bulk.start(rawCommand{method: fetch.CommandFulfillRequest, build: func(id int64) []byte {
		msg = append(msg, `,"requestId":`...)
		msg = appendJSON(msg, a.requestID)
		return endCommand(msg, id)
	}})
	written() // the next part may follow it on the pipe before the browser replies
	if err != nil {
		return err
	}
	_, err = wait(ctx)
	return err
}
