// Trawler's live view: draws a browser session's tab from the frames the
// server streams over a WebSocket, and, opened with the interactive URL,
// sends the mouse and keyboard back. The server decides what a socket may
// do: a view-only socket's input is refused there, whatever this page sends.
//
// Protocol (JSON text messages unless said otherwise):
//   server -> page: {type:"hello", mode}, {type:"tabs", tabs, active,
//     watching, follow}, {type:"error", code, message},
//     {type:"ended", reason}; binary frames: a 4-byte big-endian header
//     length, a JSON header {tab, seq, deviceWidth, deviceHeight, ...}, a JPEG.
//   page -> server: {type:"viewport", width, height, dpr}, {type:"pick", tab},
//     and, interactive only, mouse, key, text, navigate, back, forward,
//     reload, newTab and closeTab. Mouse positions are fractions (0 to 1) of
//     the frame as drawn; the server maps them onto the remote viewport.
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);
  const body = document.body;
  const canvas = $('screen');
  const g = canvas.getContext('2d', { alpha: false });
  const keys = $('keys');
  const urlBar = $('url');
  const stage = $('stage');

  const base = location.pathname.replace(/\/+$/, '');
  const query = new URLSearchParams(location.search);
  const wsBase = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + base + '/ws';
  const statusURL = base + '/status' + location.search;

  let ws = null;
  let interactive = false;
  let ended = false;
  let attempts = 0;
  let tabs = [];
  let watching = '';
  let following = true;
  let pickWanted = null; // a pick to send again after a reconnect

  function setState(state, text) {
    body.dataset.state = state;
    $('status').textContent = text;
  }

  function send(msg) {
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(msg));
  }

  function showOverlay(title, text) {
    $('overlay-title').textContent = title;
    $('overlay-text').textContent = text;
    $('overlay').hidden = false;
  }

  function end(reason) {
    if (ended) return;
    ended = true;
    setState('ended', 'Session ended');
    body.dataset.endReason = reason;
    showOverlay('Session ended', describeEnd(reason));
    urlBar.readOnly = true;
  }

  // describeEnd names the limit that ended the session.
  function describeEnd(reason) {
    if (/^ttl of/.test(reason)) return `The session reached its time limit (${reason}).`;
    if (/^activityTtl of/.test(reason)) return `The session was idle too long (${reason}).`;
    return `The session is over: ${reason}.`;
  }

  // ---- connection -------------------------------------------------------

  function connect() {
    setState(attempts ? 'reconnecting' : 'connecting', attempts ? 'Reconnecting…' : 'Connecting…');
    // The drawing area goes along, so the first frames already fit it.
    const q = new URLSearchParams(query);
    q.set('width', String(stage.clientWidth));
    q.set('height', String(stage.clientHeight));
    q.set('dpr', String(window.devicePixelRatio || 1));
    const sock = new WebSocket(`${wsBase}?${q}`);
    ws = sock;
    sock.binaryType = 'arraybuffer';
    sock.onopen = () => {
      attempts = 0;
      setState('live', 'Live');
      sendViewport(true);
      if (pickWanted !== null) send({ type: 'pick', tab: pickWanted });
    };
    sock.onmessage = (e) => {
      if (typeof e.data === 'string') onMessage(JSON.parse(e.data));
      else onFrame(e.data);
    };
    sock.onclose = (e) => {
      if (ws !== sock) return;
      ws = null;
      if (ended) return;
      const m = /^session ended: (.*)$/.exec(e.reason || '');
      if (m) {
        end(m[1]);
        return;
      }
      checkAndRetry();
    };
  }

  // After a socket dropped without saying why, the status URL tells whether
  // the session still lasts (then reconnect) or how it ended.
  async function checkAndRetry() {
    let res;
    try {
      res = await fetch(statusURL, { cache: 'no-store', credentials: 'omit' });
    } catch {
      res = null;
    }
    if (res && res.status !== 200) {
      const b = await res.json().catch(() => ({}));
      const msg = b.error || `status ${res.status}`;
      if (res.status === 410) {
        end(msg.replace(/^browser session was destroyed: /, ''));
      } else {
        setState('error', 'Unavailable');
        showOverlay('Live view unavailable', msg);
      }
      return;
    }
    attempts++;
    const delay = Math.min(5000, 250 * 2 ** Math.min(attempts, 5));
    setState('reconnecting', `Reconnecting in ${Math.ceil(delay / 1000)} s…`);
    setTimeout(connect, delay);
  }

  function onMessage(m) {
    switch (m.type) {
      case 'hello':
        interactive = !!m.interactive;
        body.classList.toggle('interactive', interactive);
        $('mode').textContent = interactive ? 'Interactive' : 'View only';
        urlBar.readOnly = !interactive;
        break;
      case 'tabs':
        tabs = m.tabs || [];
        watching = m.watching || '';
        following = !!m.follow;
        renderTabs(m.active);
        break;
      case 'ended':
        end(m.reason || 'ended');
        break;
      case 'error':
        body.dataset.lastError = m.code || 'error';
        flash(m.message || m.code);
        break;
    }
  }

  let flashTimer = 0;
  function flash(text) {
    const el = $('status');
    el.textContent = text;
    el.title = text;
    clearTimeout(flashTimer);
    flashTimer = setTimeout(() => { if (body.dataset.state === 'live') el.textContent = 'Live'; }, 4000);
  }

  // ---- tabs and address bar ---------------------------------------------

  function renderTabs(active) {
    const strip = $('tabs');
    strip.textContent = '';
    for (const t of tabs) {
      const el = document.createElement('div');
      el.className = 'tab' + (t.id === active ? ' active' : '');
      el.setAttribute('role', 'tab');
      el.setAttribute('aria-selected', String(t.id === watching));
      el.dataset.tab = t.id;
      el.title = `${t.title || t.url}\n${t.url}`;
      const dot = document.createElement('span');
      dot.className = 'active-dot';
      dot.title = 'The tab the session is working in';
      const title = document.createElement('span');
      title.className = 'title';
      title.textContent = t.title || t.url || 'New tab';
      el.append(dot, title);
      el.addEventListener('click', () => pick(t.id));
      if (interactive) {
        const close = document.createElement('button');
        close.className = 'close';
        close.type = 'button';
        close.textContent = '×';
        close.title = 'Close this tab';
        close.addEventListener('click', (e) => { e.stopPropagation(); send({ type: 'closeTab', tab: t.id }); });
        el.append(close);
      }
      strip.append(el);
    }
    $('follow').setAttribute('aria-pressed', String(following));
    const cur = tabs.find((t) => t.id === watching);
    $('empty').hidden = tabs.length > 0;
    if (document.activeElement !== urlBar) urlBar.value = cur ? cur.url : '';
    document.title = (cur && cur.title ? cur.title + ' · ' : '') + 'Live view · Trawler';
  }

  function pick(id) {
    pickWanted = id;
    send({ type: 'pick', tab: id });
  }

  $('follow').addEventListener('click', () => pick(''));
  $('back').addEventListener('click', () => send({ type: 'back' }));
  $('forward').addEventListener('click', () => send({ type: 'forward' }));
  $('reload').addEventListener('click', () => send({ type: 'reload' }));
  $('newtab').addEventListener('click', () => send({ type: 'newTab' }));
  urlBar.addEventListener('keydown', (e) => {
    if (!interactive) return;
    if (e.key === 'Escape') {
      const cur = tabs.find((t) => t.id === watching);
      urlBar.value = cur ? cur.url : '';
      urlBar.blur();
    }
    if (e.key !== 'Enter') return;
    e.preventDefault();
    let u = urlBar.value.trim();
    if (!u) return;
    if (!/^[a-z][a-z0-9+.-]*:/i.test(u)) u = (/^(localhost|127\.|\[)/.test(u) ? 'http://' : 'https://') + u;
    send({ type: 'navigate', url: u });
    urlBar.blur();
  });

  // ---- frames -----------------------------------------------------------

  const decoder = new TextDecoder();
  let pending = null; // the newest frame not drawn yet; older ones are dropped
  let drawing = false;
  let frameSeq = 0;

  function onFrame(buf) {
    const n = new DataView(buf).getUint32(0);
    const head = JSON.parse(decoder.decode(new Uint8Array(buf, 4, n)));
    pending = { head, blob: new Blob([new Uint8Array(buf, 4 + n)], { type: 'image/jpeg' }) };
    if (!drawing) draw();
  }

  async function draw() {
    drawing = true;
    while (pending) {
      const f = pending;
      pending = null;
      let bmp;
      try {
        bmp = await createImageBitmap(f.blob);
      } catch {
        continue;
      }
      if (canvas.width !== bmp.width || canvas.height !== bmp.height) {
        canvas.width = bmp.width;
        canvas.height = bmp.height;
        layout();
      }
      g.drawImage(bmp, 0, 0);
      bmp.close();
      frameSeq = f.head.seq;
      canvas.dataset.seq = String(frameSeq);
    }
    drawing = false;
  }

  // layout fits the frame into the stage, keeping its proportions.
  function layout() {
    if (!canvas.width || !canvas.height) return;
    const sw = stage.clientWidth;
    const sh = stage.clientHeight;
    const ratio = canvas.width / canvas.height;
    let w = sw;
    let h = sw / ratio;
    if (h > sh) {
      h = sh;
      w = sh * ratio;
    }
    canvas.style.width = `${Math.floor(w)}px`;
    canvas.style.height = `${Math.floor(h)}px`;
  }

  let lastViewport = '';
  function sendViewport(force) {
    const v = { type: 'viewport', width: stage.clientWidth, height: stage.clientHeight, dpr: window.devicePixelRatio || 1 };
    const key = `${v.width}x${v.height}@${v.dpr}`;
    if (!force && key === lastViewport) return;
    lastViewport = key;
    send(v);
  }

  new ResizeObserver(() => { layout(); sendViewport(false); }).observe(stage);

  // ---- input (interactive only; the server refuses it otherwise) ---------

  const modifiers = (e) => (e.altKey ? 1 : 0) | (e.ctrlKey ? 2 : 0) | (e.metaKey ? 4 : 0) | (e.shiftKey ? 8 : 0);
  const buttonNames = ['left', 'middle', 'right', 'back', 'forward'];
  const buttonBits = [1, 4, 2, 8, 16];

  function position(e) {
    const r = canvas.getBoundingClientRect();
    const clamp = (v) => Math.min(1, Math.max(0, v));
    return { x: clamp((e.clientX - r.left) / r.width), y: clamp((e.clientY - r.top) / r.height) };
  }

  function mouse(action, e, extra) {
    send({ type: 'mouse', action, ...position(e), button: buttonNames[e.button] || 'none', buttons: e.buttons,
      clickCount: e.detail || 1, modifiers: modifiers(e), ...extra });
  }

  let held = 0; // buttons pressed on the screen, followed outside it too
  let move = null;

  function flushMove() {
    if (!move) return;
    const e = move;
    move = null;
    send({ type: 'mouse', action: 'move', ...position(e), button: 'none', buttons: e.buttons, modifiers: modifiers(e) });
  }

  canvas.addEventListener('mousedown', (e) => {
    if (!interactive || ended) return;
    e.preventDefault();
    keys.focus({ preventScroll: true });
    flushMove();
    held |= buttonBits[e.button] || 0;
    mouse('down', e);
  });
  window.addEventListener('mouseup', (e) => {
    const bit = buttonBits[e.button] || 0;
    if (!interactive || !(held & bit)) return;
    held &= ~bit;
    flushMove();
    mouse('up', e);
  });
  window.addEventListener('mousemove', (e) => {
    if (!interactive || ended || (e.target !== canvas && !held)) return;
    const first = !move;
    move = e;
    if (first) requestAnimationFrame(flushMove);
  });
  canvas.addEventListener('wheel', (e) => {
    if (!interactive || ended) return;
    e.preventDefault();
    const unit = e.deltaMode === 1 ? 40 : e.deltaMode === 2 ? canvas.clientHeight : 1;
    flushMove();
    send({ type: 'mouse', action: 'wheel', ...position(e), button: 'none', buttons: e.buttons,
      deltaX: e.deltaX * unit, deltaY: e.deltaY * unit, modifiers: modifiers(e) });
  }, { passive: false });
  canvas.addEventListener('contextmenu', (e) => { if (interactive) e.preventDefault(); });

  function keyMessage(action, e, text) {
    const m = { type: 'key', action, key: e.key, code: e.code, keyCode: e.keyCode, location: e.location,
      repeat: e.repeat, modifiers: modifiers(e) };
    if (text) m.text = text;
    return m;
  }

  keys.addEventListener('keydown', (e) => {
    if (!interactive || ended) return;
    // Composed and dead-key text arrives whole through the input events.
    if (e.isComposing || e.key === 'Process' || e.key === 'Dead' || e.key === 'Unidentified') return;
    const printable = [...e.key].length === 1;
    const shortcut = e.ctrlKey || e.metaKey;
    if (printable && !shortcut) {
      e.preventDefault(); // typed on the remote page, not here
      send(keyMessage('down', e, e.key));
      return;
    }
    send(keyMessage('down', e));
    // Let paste reach the text area (its text is sent as text); keep the
    // rest (Tab, Backspace, arrows, shortcuts) from acting on this page.
    if (!(shortcut && (e.key === 'v' || e.key === 'V'))) e.preventDefault();
  });
  keys.addEventListener('keyup', (e) => {
    if (!interactive || ended || e.isComposing || e.key === 'Process' || e.key === 'Dead' || e.key === 'Unidentified') return;
    send(keyMessage('up', e));
  });
  // Text that no key event carried: input methods, paste, characters the
  // keyboard cannot name. It is inserted as text.
  keys.addEventListener('input', (e) => {
    if (e.isComposing) return;
    const text = keys.value;
    keys.value = '';
    if (text && interactive && !ended) send({ type: 'text', text });
  });
  keys.addEventListener('compositionend', (e) => {
    keys.value = '';
    if (e.data && interactive && !ended) send({ type: 'text', text: e.data });
  });

  connect();
})();
