'use strict';
// The replay page: loads a recorded session's tabs and events from
// ./data (with the page's own token), plays a tab with rrweb-player, and
// lists the tab's console messages and requests beside it; a click on one
// seeks the replay there. window.trawlerReplay lets a program drive it.
(() => {
  const id = location.pathname.split('/').filter(Boolean)[1];
  const token = new URLSearchParams(location.search).get('token') || '';
  const $ = (s) => document.querySelector(s);
  const status = (text) => { $('#status').textContent = text; };
  let player = null;
  let resolveReady;
  const ready = new Promise((r) => { resolveReady = r; });

  async function fetchAll(page) {
    let cursor = '';
    let events = [];
    let pages = [];
    for (;;) {
      const q = new URLSearchParams({ token });
      if (page) q.set('page', page);
      if (cursor) q.set('cursor', cursor);
      const res = await fetch(`/replay/${encodeURIComponent(id)}/data?${q}`, { cache: 'no-store' });
      const body = await res.json();
      if (!res.ok || !body.success) throw new Error(body.error || `HTTP ${res.status}`);
      pages = body.pages;
      events = events.concat(body.events);
      if (!body.next) return { pages, events };
      cursor = body.next;
    }
  }

  const clock = (ms) => {
    const s = Math.max(0, Math.floor(ms / 1000));
    return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
  };

  function side(events, start) {
    const consoleList = $('#console');
    const network = $('#network');
    consoleList.replaceChildren();
    network.replaceChildren();
    let nc = 0;
    let nn = 0;
    for (const e of events) {
      if (e.type !== 5 || !e.data) continue;
      const p = e.data.payload || {};
      const li = document.createElement('li');
      const at = document.createElement('span');
      at.className = 'at';
      at.textContent = clock(e.timestamp - start);
      li.append(at);
      if (e.data.tag === 'trawler/console') {
        li.className = p.level || '';
        li.append(`${p.level}: ${p.text}`);
        consoleList.append(li);
        nc++;
      } else if (e.data.tag === 'trawler/network') {
        li.className = p.error ? 'failed' : '';
        li.append(`${p.method} ${p.status || p.error || ''} ${p.url} (${p.durationMs} ms, ${p.bytes} B)`);
        network.append(li);
        nn++;
      } else continue;
      li.addEventListener('click', () => player && player.goto(Math.max(0, e.timestamp - start), false));
    }
    $('#console-count').textContent = `(${nc})`;
    $('#network-count').textContent = `(${nn})`;
  }

  async function show(page, pages) {
    for (const b of document.querySelectorAll('#pages button')) b.setAttribute('aria-pressed', String(b.dataset.page === page));
    status('Loading…');
    const { events } = await fetchAll(page);
    const stage = $('#stage');
    stage.replaceChildren();
    player = null;
    const dom = events.filter((e) => e.type !== 5);
    if (dom.length < 2) {
      status('This page has no recorded document yet.');
      document.body.dataset.state = 'empty';
      resolveReady();
      return;
    }
    const start = events[0].timestamp;
    const width = Math.max(320, stage.clientWidth || 1024);
    const Player = rrwebPlayer.Player || rrwebPlayer.default || rrwebPlayer;
    player = new Player({
      target: stage,
      props: { events, width, height: Math.round(width * 0.6), autoPlay: false, showController: true, mouseTail: false },
    });
    side(events, start);
    const info = pages.find((p) => p.id === page) || {};
    status(`${info.url || ''} · ${events.length} events`);
    document.body.dataset.state = 'ready';
    resolveReady();
  }

  async function main() {
    try {
      const { pages: list } = await fetchAll('');
      const nav = $('#pages');
      for (const p of list) {
        const b = document.createElement('button');
        b.type = 'button';
        b.dataset.page = p.id;
        b.title = p.url;
        b.textContent = p.title || p.url || p.id;
        b.addEventListener('click', () => show(p.id, list));
        nav.append(b);
      }
      if (!list.length) {
        status('Nothing was recorded yet.');
        document.body.dataset.state = 'empty';
        resolveReady();
        return;
      }
      await show(list[list.length - 1].id, list);
    } catch (err) {
      status(`The replay could not be loaded: ${err.message}`);
      document.body.dataset.state = 'error';
      resolveReady();
    }
  }

  window.trawlerReplay = {
    ready,
    // seekToEnd shows the replayed document as the tab last showed it.
    async seekToEnd() {
      await ready;
      if (!player) return false;
      const replayer = player.getReplayer();
      // The replayer applies at once only the events before the time it
      // is sent to: past the last one, every event is applied.
      const total = replayer.getMetaData().totalTime;
      player.goto(total + 1, false);
      await new Promise((r) => setTimeout(r, 300));
      return true;
    },
    show: (page) => show(page, []),
  };
  main();
})();
