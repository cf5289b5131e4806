package tabs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"
)

// A rendered page is settled when nothing is left that could still change
// it soon: the load event has fired, no request is in flight, no timer of
// a second or less is pending, and the DOM has not changed for a moment.
// The timers are what the browser cannot tell over CDP, so a small script,
// installed in every document before the page's own (settleProbeScript),
// counts the short timers the page sets and clears and when the DOM last
// changed. A page that shows too little text (an app still waiting on
// something the probe cannot see, such as storage or a worker, which
// under load can take seconds), or whose timers are still pending, is
// given settleLate after its load event, then settles by the older rule:
// the network idle for 500 ms and the DOM unchanged for 300 ms.

const (
	// quietNet and quietDOM are how long the network and the DOM must have
	// been quiet, with no short timer pending, for a page to be settled.
	quietNet = 100 * time.Millisecond
	quietDOM = 100 * time.Millisecond
	// quietText is the text a page must show to be taken by that rule: a
	// page still empty (an app waiting on a promise the probe cannot see:
	// storage, a worker) is taken by the older one.
	quietText = 200
	// idleNet and idleDOM are the older rule's, for a page with too little
	// text, or with timers still pending, settleLate after the load event.
	idleNet    = 500 * time.Millisecond
	idleDOM    = 300 * time.Millisecond
	settleLate = 2 * time.Second
	// settlePoll is how often the tab looks.
	settlePoll = 25 * time.Millisecond
)

// newProbeName is the name of a tab's probe on window: random, not
// enumerable, so that a page cannot count on it.
func newProbeName() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "_" + hex.EncodeToString(b)
}

// settleProbeScript, with the probe's name, wraps setTimeout and
// clearTimeout to count pending timers of 1 s or less (the wrappers look
// native to the page: name, length and toString), and watches the DOM
// from the document's start. A timer set by a timer's callback is one
// generation deeper; from the third generation on a chain is taken for a
// loop (a carousel, a poll) that never ends, and no longer counted.
// window[name](quietMs) answers [pending timers, milliseconds since the DOM
// last changed, characters of text the page shows (0 until no timer is
// pending and the DOM has been quiet quietMs: it costs a layout)].
const settleProbeScript = `(() => {
  const name = %q;
  if (Object.getOwnPropertyDescriptor(window, name)) return;
  const st = window.setTimeout, ct = window.clearTimeout, fnToString = Function.prototype.toString;
  const pending = new Set();
  let last = performance.now();
  const natives = new WeakMap();
  const toString = new Proxy(fnToString, {apply(target, self, args) {
    return natives.has(self) ? natives.get(self) : Reflect.apply(target, self, args);
  }});
  natives.set(toString, Reflect.apply(fnToString, fnToString, []));
  const disguise = (fake, orig) => {
    natives.set(fake, Reflect.apply(fnToString, orig, []));
    Object.defineProperty(fake, "name", {value: orig.name});
    Object.defineProperty(fake, "length", {value: orig.length});
    return fake;
  };
  let depth = 0;
  const setTimeout = disguise({setTimeout(handler, delay, ...args) {
    const d = Number(delay) || 0;
    if (typeof handler !== "function" || d > 1000 || depth >= 3) return Reflect.apply(st, window, [handler, delay, ...args]);
    const mine = depth + 1;
    let id;
    id = Reflect.apply(st, window, [function () {
      pending.delete(id);
      const outer = depth;
      depth = mine;
      try { return Reflect.apply(handler, this, args); } finally { depth = outer; }
    }, delay]);
    pending.add(id);
    return id;
  }}.setTimeout, st);
  const clearTimeout = disguise({clearTimeout(id) {
    pending.delete(id);
    return Reflect.apply(ct, window, [id]);
  }}.clearTimeout, ct);
  Object.defineProperty(Function.prototype, "toString", {value: toString, writable: true, configurable: true, enumerable: false});
  Object.defineProperty(window, "setTimeout", {value: setTimeout, writable: true, configurable: true, enumerable: true});
  Object.defineProperty(window, "clearTimeout", {value: clearTimeout, writable: true, configurable: true, enumerable: true});
  new MutationObserver(() => { last = performance.now(); })
    .observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
  Object.defineProperty(window, name, {value: (quietMs) => {
    const since = performance.now() - last;
    // innerText lays the page out: only asked once the rest is quiet.
    const text = pending.size === 0 && since >= quietMs && document.body ? document.body.innerText.length : 0;
    return [pending.size, since, text];
  }, enumerable: false});
})()`

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
	probe := fmt.Sprintf("(() => { const p = window[%q]; return p ? p(%d) : null; })()", t.probe, quietDOM.Milliseconds())
	for {
		t.mu.Lock()
		inflight, sinceNet := len(t.inflight), time.Since(t.lastNet)
		t.mu.Unlock()
		if inflight == 0 && sinceNet >= quietNet {
			var state []float64
			if err := t.Evaluate(dctx, probe, &state); err != nil && dctx.Err() != nil {
				return time.Since(start)
			}
			if len(state) == 3 {
				sinceDOM := time.Duration(state[1] * float64(time.Millisecond))
				quiet := state[0] == 0 && sinceDOM >= quietDOM && state[2] >= quietText
				if quiet || time.Since(start) >= settleLate && sinceNet >= idleNet && sinceDOM >= idleDOM {
					return time.Since(start)
				}
			} else if sinceNet >= idleNet {
				// No probe (a document it could not run in): the network
				// rule alone, and a last look at the DOM.
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
