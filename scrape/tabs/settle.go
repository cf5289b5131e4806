package tabs

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	cdproto "github.com/chromedp/cdproto/cdp"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/trawler-dev/trawler/cdp"
)

// A rendered page is settled when nothing is left that could still change
// it soon: the load event has fired, no request has been sent for a moment
// or is still young, and the DOM has not changed for a moment. A small
// script (settleProbeScript) watches the DOM from each document's start in
// a world of its own (settleWorld), which shares the page's DOM but none of
// its JavaScript: the page cannot see it, and it wraps nothing of the
// page's (a probe that wrapped setTimeout to count timers was found out by
// fingerprinting scripts, docs/stealth.md).
//
// A page showing its content (quietText characters) is settled once the
// network and the DOM have been quiet for quietNet and quietDOM, and no
// request in flight is younger than busyAge: an older one is a connection the
// page keeps open (a long poll, a worker's script, whose end this session
// never hears), as Puppeteer's networkidle2 lets two connections stay open.
// A page showing less may still be waiting on its content: it is given
// idleNet and idleDOM, waits lingering for each request in flight, and,
// when it runs scripts, is given until shellWait after its load event (an
// app whose content waits on a timer the probe cannot see).

const (
	// quietNet and quietDOM are how long the network and the DOM must have
	// been quiet for a page showing its content to be settled.
	quietNet = 100 * time.Millisecond
	quietDOM = 100 * time.Millisecond
	// busyAge and lingering are the ages from which a request in flight is
	// taken for a connection the page keeps open, on a page showing its
	// content and on one showing little.
	busyAge   = 250 * time.Millisecond
	lingering = time.Second
	// quietText is the text a page must show to be taken by that rule; one
	// with less must have been quiet for idleNet and idleDOM.
	quietText = 200
	idleNet   = 300 * time.Millisecond
	idleDOM   = 300 * time.Millisecond
	// shellWait is how long after its load event a page with little text
	// and scripts is waited for.
	shellWait = time.Second
	// settlePoll is how often the tab looks.
	settlePoll = 25 * time.Millisecond
)

// settleWorld is the name of the isolated world the probe runs in.
const settleWorld = "trawler"

// younger counts the requests in flight sent less than age ago. The caller
// holds t.mu.
func (t *Tab) younger(age time.Duration) int {
	n := 0
	for _, sent := range t.inflight {
		if time.Since(sent) < age {
			n++
		}
	}
	return n
}

// settleProbeScript watches the DOM from the document's start.
// settled(quietMs) answers [milliseconds since the DOM last changed,
// characters of text the page shows (0 until the DOM has been quiet
// quietMs: it costs a layout), scripts in the document].
const settleProbeScript = `(() => {
  let last = performance.now();
  new MutationObserver(() => { last = performance.now(); })
    .observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
  globalThis.settled = (quietMs) => {
    const since = performance.now() - last;
    // innerText lays the page out: only asked once the DOM is quiet.
    const text = since >= quietMs && document.body ? document.body.innerText.length : 0;
    return [since, text, document.scripts.length];
  };
})()`

// probeState evaluates the settle probe in the main frame's document. ok is
// false when it is not there (a document it could not run in).
func (t *Tab) probeState(ctx context.Context) (state []float64, ok bool, err error) {
	expr := fmt.Sprintf("typeof settled === 'function' ? settled(%d) : null", quietDOM.Milliseconds())
	for range 2 {
		if t.world == 0 {
			w, err := cdp.Do(ctx, t.sess, cdppage.CreateIsolatedWorld, cdppage.CreateIsolatedWorldParams{
				FrameID: cdproto.FrameID(t.sess.TargetID), WorldName: settleWorld})
			if err != nil {
				return nil, false, err
			}
			t.world = w.ExecutionContextID
		}
		var res cdp.EvalResult
		err = t.call(ctx, runtime.CommandEvaluate, runtime.EvaluateParams{Expression: expr, ContextID: t.world,
			ReturnByValue: new(true)}, &res)
		if err != nil {
			// The document the world was made in has gone: the new
			// document's world is found again.
			t.world = 0
			continue
		}
		if len(res.Result.Value) > 0 && json.Unmarshal(res.Result.Value, &state) == nil && len(state) == 3 {
			return state, true, nil
		}
		return nil, false, nil
	}
	return nil, false, err
}

// settle waits for the load event, then until the page is quiet (as
// above), within max. It returns how long it waited after the load event.
func (t *Tab) Settle(ctx context.Context, max time.Duration) time.Duration {
	deadline := time.Now().Add(max)
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	t.mu.Lock()
	loaded := t.loaded
	t.mu.Unlock()
	select {
	case <-loaded:
	case <-t.crashed:
		return 0
	case <-dctx.Done():
		return 0
	}
	start := time.Now()
	for {
		t.mu.Lock()
		busy, fresh, sinceNet := t.younger(busyAge), t.younger(lingering), time.Since(t.lastNet)
		t.mu.Unlock()
		if busy == 0 && sinceNet >= quietNet {
			state, ok, err := t.probeState(dctx)
			if err != nil && dctx.Err() != nil {
				return time.Since(start)
			}
			if ok {
				sinceDOM, text, scripts := time.Duration(state[0]*float64(time.Millisecond)), state[1], state[2]
				quiet := sinceDOM >= quietDOM && text >= quietText
				idle := fresh == 0 && sinceNet >= idleNet && sinceDOM >= idleDOM
				if quiet || idle && (scripts == 0 || time.Since(start) >= shellWait) {
					return time.Since(start)
				}
			} else if fresh == 0 && sinceNet >= idleNet {
				// No probe: the network rule alone, and a last look at the
				// DOM.
				return time.Since(start)
			}
		}
		select {
		case <-dctx.Done():
			return time.Since(start)
		case <-t.crashed:
			return time.Since(start)
		case <-time.After(settlePoll):
		}
	}
}

// isAsset says whether a request of resourceType is one skipsAssets skips.
func isAsset(resourceType string) bool {
	return resourceType == "Image" || resourceType == "Media" || resourceType == "Font"
}
