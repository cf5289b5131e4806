// Starts rrweb's recorder in the recorder's isolated world of a tab's top
// document; the recorder fetches the events with __trawlerTake. Nothing
// here exists in the page's own world.
(() => {
  if (window !== window.top || globalThis.__trawlerTake) return;
  // An isolated world has no custom element registry (customElements is
  // null there), and rrweb asks it of every element it serializes: each
  // TypeError it catches costs a stack trace, a second for a page of a few
  // thousand elements. The page's custom elements are the same in every
  // world, so nothing is lost by answering that none is known here.
  if (!globalThis.customElements) {
    Object.defineProperty(globalThis, 'customElements', { value: { get: () => undefined }, configurable: true });
  }
  let buffer = [];
  // A tab whose recorder stopped fetching (a browser under strain) drops
  // the oldest changes rather than growing without end; the next full
  // snapshot (the next document) makes the replay whole again.
  const limit = 20000;
  // A batch is "COUNT FIRST LAST [events]": the recorder stores the array
  // as it is, without reading the events.
  globalThis.__trawlerTake = () => {
    const out = buffer;
    if (!out.length) return '';
    buffer = [];
    let first = Infinity;
    let last = 0;
    for (const e of out) {
      if (e.timestamp < first) first = e.timestamp;
      if (e.timestamp > last) last = e.timestamp;
    }
    return `${out.length} ${first} ${last} ${JSON.stringify(out)}`;
  };
  // Input may be followed at once by a navigation, faster than the next
  // fetch: events up to a click or a keystroke, and what is left when the
  // document goes, leave as a console message of this world instead (the
  // recorder reads it from the Console domain; the page's own console is
  // not involved).
  let pushing = false;
  const push = () => {
    pushing = false;
    const rest = __trawlerTake();
    if (rest) console.debug('__TRAWLER_MARK__' + rest);
  };
  addEventListener('pagehide', push, true);
  rrwebRecord.record({
    emit(event) {
      if (buffer.length >= limit) buffer.splice(0, buffer.length - limit + 1);
      buffer.push(event);
      // 2: a click or another mouse interaction; 5: input.
      if (event.type === 3 && (event.data.source === 2 || event.data.source === 5) && !pushing) {
        pushing = true;
        queueMicrotask(push);
      }
    },
    maskInputOptions: { password: true },
    recordCanvas: false,
    collectFonts: false,
    sampling: { mousemove: 50, scroll: 150 },
  });
})();
