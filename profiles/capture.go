package profiles

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	cdproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/klauspost/compress/gzip"

	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/cdp/rawjson"
)

// This file reads a browser's state over the DevTools protocol: its cookies, and the storage of
// each origin, from a page of the user's that shows it or on a helper tab.

// Capture reads the state of browser context browserContextID ("" for the browser's default
// context) of browser: all its cookies, and the
// localStorage and IndexedDB of origins (http(s) origins, as a Tracker lists them). Origins that
// hold nothing are left out of the state.
//
// Storage is read from a helper tab of its own that never reaches the network (and bypasses the
// sites' service workers): the user's tabs are left as they are. Each origin gets 30 seconds; an
// origin that fails, say because another page keeps one of its databases in an upgrade, fails the
// capture with an error naming it. IndexedDB records holding a value that cannot be saved (a
// non-extractable CryptoKey) are left out and listed in OriginState.Skipped.
func Capture(ctx context.Context, browser *cdp.Mux, browserContextID string, origins []string) (*State, error) {
	snap, err := capture(ctx, browser, browserContextID, origins, false)
	if err != nil {
		return nil, err
	}
	return snap.state()
}

// capture is Capture, keeping each origin's storage as the page's JSON text, unchecked (see
// snapshot.check); with precompress, for a save, its large parts are compressed as they come.
func capture(ctx context.Context, browser *cdp.Mux, browserContextID string, origins []string, precompress bool) (*snapshot, error) {
	want := make([]string, 0, len(origins))
	for _, o := range origins {
		p, err := parseOrigin(o)
		if err != nil {
			return nil, err
		}
		want = append(want, p)
	}
	slices.Sort(want)
	want = slices.Compact(want)

	conn, b, err := dialBulk(ctx, browser)
	if err != nil {
		return nil, err
	}
	defer conn.Close()

	// The cookies are read while the helper tab visits the origins.
	var cookies []Cookie
	cookiesRead := make(chan error, 1)
	go func() {
		var err error
		cookies, err = getCookies(ctx, conn, browserContextID)
		cookiesRead <- err
	}()
	stored, err := captureStorage(ctx, conn, b, browserContextID, want, precompress)
	if cerr := <-cookiesRead; cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, err
	}
	return &snapshot{cookies: cookies, origins: stored}, nil
}

// captureStorage reads the storage of origins. An origin that a page of the browser context shows
// is read from that page, in a script world of our own (see borrow), which saves opening a helper
// tab and visiting the origin; the others, and any that its page fails to answer, on helper tabs.
func captureStorage(ctx context.Context, conn *cdp.Conn, b *bulk, browserContextID string, origins []string, precompress bool) ([]rawOrigin, error) {
	got := make([]rawOrigin, len(origins))
	held := make([]bool, len(origins))
	h := newHelper(conn, b, browserContextID)
	h.precompress = precompress
	defer h.close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pages := h.pagesShowing(ctx, origins)
	var (
		rest, missed []int
		mu           sync.Mutex
		borrowed     sync.WaitGroup
	)
	for i, o := range origins {
		id, ok := pages[o]
		if !ok {
			rest = append(rest, i)
			continue
		}
		borrowed.Go(func() {
			var err error
			if got[i], held[i], err = h.captureIn(ctx, id, o); err != nil {
				mu.Lock()
				missed = append(missed, i)
				mu.Unlock()
			}
		})
	}
	onHelpers := func(indexes []int) error {
		return h.eachOrigin(ctx, len(indexes), nil, func(ctx context.Context, t *tab, k int) error {
			i := indexes[k]
			var err error
			if got[i], held[i], err = t.capture(ctx, origins[i]); err != nil {
				return fmt.Errorf("reading the storage of %s: %w", origins[i], err)
			}
			return nil
		})
	}
	err := onHelpers(rest)
	if err != nil {
		cancel() // the capture fails: stop reading the pages
	}
	borrowed.Wait()
	if err == nil && len(missed) > 0 {
		slices.Sort(missed)
		err = onHelpers(missed)
	}
	if err != nil {
		return nil, err
	}
	out := []rawOrigin{}
	for i, o := range got {
		if !held[i] {
			continue
		}
		if slices.ContainsFunc(out, func(x rawOrigin) bool { return x.origin == o.origin }) {
			continue // two spellings of one origin
		}
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b rawOrigin) int { return strings.Compare(a.origin, b.origin) })
	return out, nil
}

// pagesShowing returns, for those of origins that a page of the helper's browser context shows,
// that page's target id. It returns none when the browser cannot say which pages are in the
// context.
func (h *helper) pagesShowing(ctx context.Context, origins []string) map[string]target.ID {
	browser := cdp.Browser(h.conn)
	contextID := cdproto.BrowserContextID(h.contextID)
	if contextID == "" {
		contexts, err := cdp.Do(ctx, browser, target.GetBrowserContexts, cdproto.Empty{})
		if err != nil {
			return nil
		}
		if contextID = contexts.DefaultBrowserContextID; contextID == "" {
			return nil
		}
	}
	targets, err := cdp.Do(ctx, browser, target.GetTargets, target.GetTargetsParams{})
	if err != nil {
		return nil
	}
	pages := map[string]target.ID{}
	for _, ti := range targets.TargetInfos {
		if ti == nil || ti.Type != "page" || ti.BrowserContextID != contextID {
			continue
		}
		u, err := url.Parse(ti.URL)
		if err != nil || u.User != nil {
			continue
		}
		if o, err := parseOrigin(u.Scheme + "://" + u.Host); err == nil && slices.Contains(origins, o) {
			pages[o] = ti.TargetID
		}
	}
	return pages
}

// probeTimeout is how long a page of the user's has to answer before its origin is read on a
// helper tab instead: a page that shows a dialog, or runs a long script, answers nothing.
const probeTimeout = 2 * time.Second

// captureIn reads origin's storage from the target id, a page of the user's that shows it (see
// borrow).
func (h *helper) captureIn(ctx context.Context, id target.ID, origin string) (rawOrigin, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, originTimeout)
	defer cancel()
	t, err := h.borrow(ctx, id)
	if err != nil {
		return rawOrigin{}, false, err
	}
	defer h.giveBack(ctx, t)
	return t.read(ctx, origin)
}

// borrow attaches to the target id, a page of the user's, and makes a script world of our own in its
// main frame, which runs with the page's origin, and so reaches its storage, but shares no
// JavaScript object with the page's own scripts. The page is left as it was: giveBack detaches.
// A page that does not answer within probeTimeout is given back at once.
func (h *helper) borrow(ctx context.Context, id target.ID) (*tab, error) {
	s, err := cdp.Attach(ctx, h.conn, id)
	if err != nil {
		return nil, fmt.Errorf("attaching to a page: %w", err)
	}
	// The session is never closed with s.CloseTarget: the page is the user's.
	t := &tab{h: h, session: s}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	// A page's main frame has its target's id.
	world, err := cdp.Do(pctx, s, page.CreateIsolatedWorld,
		page.CreateIsolatedWorldParams{FrameID: cdproto.FrameID(id), WorldName: "trawler-profile"})
	if err == nil {
		t.world = world.ExecutionContextID
		// Whether the world answers is what counts, not its answer.
		err = cdp.Run(pctx, s, runtime.Evaluate,
			runtime.EvaluateParams{Expression: "1", ContextID: t.world, ReturnByValue: new(true)})
	}
	if err != nil {
		h.giveBack(ctx, t)
		return nil, fmt.Errorf("reading a page: %w", err)
	}
	return t, nil
}

// giveBack drops what the tab's scripts kept in the borrowed page and detaches from it.
func (h *helper) giveBack(ctx context.Context, t *tab) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
	defer cancel()
	if t.world != 0 {
		cdp.Run(cctx, t.session, runtime.Evaluate,
			runtime.EvaluateParams{Expression: "delete globalThis.trawlerProfile", ContextID: t.world})
	}
	cdp.Run(cctx, cdp.Browser(h.conn), target.DetachFromTarget,
		target.DetachFromTargetParams{SessionID: target.SessionID(t.session.ID)})
}

// capture visits origin and reads its storage, as the JSON text of an OriginState. held reports
// whether the origin holds any storage; the origin named in o is the page's own spelling of it.
func (t *tab) capture(ctx context.Context, origin string) (o rawOrigin, held bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, originTimeout)
	defer cancel()
	if err := t.visit(ctx, origin, helperPage("capture", origin, nil)); err != nil {
		return o, false, err
	}
	return t.read(ctx, origin)
}

// read reads the storage of origin, where the tab is, as capture returns it. For a save
// (helper.precompress), the origin's localStorage and its databases are each compressed as they
// come (see segments.go).
func (t *tab) read(ctx context.Context, origin string) (o rawOrigin, held bool, err error) {
	// Each answer is "1" when its part holds anything, else "0", then (localStorage only) the
	// origin, a newline, and the packed JSON of the part.
	var heads, texts [2][]byte
	var segs [2]*segment
	var dbs, skipped []byte
	arrived := func(i int, obj []byte) error {
		answer, err := rawjson.Unquote(rawjson.Member(obj, "value"))
		if err != nil {
			return fmt.Errorf("decoding the page's answer: %w", err)
		}
		head, packed, ok := bytes.Cut(answer, []byte{'\n'})
		if !ok || len(head) < 1 {
			return fmt.Errorf("decoding the page's answer: no header in %.40q", answer)
		}
		heads[i] = head
		if texts[i], err = unpack(packed); err != nil {
			return fmt.Errorf("decoding the page's answer: %w", err)
		}
		big := texts[i]
		if i == 1 {
			dbs, skipped = rawjson.Member(texts[1], "indexedDB"), rawjson.Member(texts[1], "skipped")
			if dbs == nil || skipped == nil {
				return errors.New("decoding the page's answer: no databases")
			}
			big = dbs
		}
		if t.h.precompress {
			segs[i] = compressSegment(big)
		}
		return nil
	}
	if _, err := t.resultsEach(ctx, "capture", origin, arrived, "localStorage", "indexedDB"); err != nil {
		return o, false, err
	}
	o.origin, held = string(heads[0][1:]), heads[0][0] == '1' || heads[1][0] == '1'
	buf := make([]byte, 0, len(o.origin)+len(texts[0])+len(dbs)+len(skipped)+64)
	buf = append(buf, `{"origin":`...)
	buf = appendJSON(buf, o.origin)
	buf = append(buf, `,"localStorage":`...)
	ls := len(buf)
	buf = append(buf, texts[0]...)
	buf = append(buf, `,"indexedDB":`...)
	db := len(buf)
	buf = append(buf, dbs...)
	buf = append(append(buf, `,"skipped":`...), skipped...)
	o.json = append(buf, '}')
	if t.h.precompress {
		o.spans = []span{{ls, ls + len(texts[0]), segs[0]}, {db, db + len(dbs), segs[1]}}
	}
	return o, held, nil
}

// unpack reads the packed JSON of a page's answer: "json:" and JSON text, "b64:" and base64 of
// JSON, or "gzip:" and base64 of gzip'd JSON.
func unpack(packed []byte) ([]byte, error) {
	kind, b64, _ := bytes.Cut(packed, []byte{':'})
	if string(kind) == "json" {
		return b64, nil
	}
	raw := make([]byte, base64.StdEncoding.DecodedLen(len(b64)))
	n, err := base64.StdEncoding.Decode(raw, b64)
	if err != nil {
		return nil, err
	}
	raw = raw[:n]
	switch string(kind) {
	case "b64":
		return raw, nil
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(&limitedReader{r: zr, n: maxStateSize})
	}
	return nil, fmt.Errorf("unknown packing %.10q", kind)
}
