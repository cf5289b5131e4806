// Session recordings as their users meet them: Playwright drives a session
// created with recording: true across two pages (clicks, typing, a
// password), the session ends, and the recording is replayed by the replay
// page in a real Chromium (launched here, the viewer): the replayed
// document at the end must be the one the session's tab last showed, and
// the password must appear nowhere in the events.

import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before } from 'node:test';
import { chromium } from 'playwright-core';
import { eventually, launchViewer, useTrawler, within } from './harness.mjs';

const { trawler, test } = useTrawler({ TRAWLER_ALLOW_PRIVATE_NETWORKS: 'true' }); // the site is on loopback

const PASSWORD = 'hunter2-Secret-9f3a';

let viewerBrowser;
let site;
let siteURL;

// A sign-in form, and a page whose list grows with each click.
function startSite() {
  const srv = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://127.0.0.1');
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    if (u.pathname === '/api/items') {
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ next: 'item from the server' }));
      return;
    }
    if (u.pathname === '/two') {
      res.end(`<!doctype html><title>Two</title><style>li{color:rgb(0, 90, 200)}</style>
        <h1>Welcome, ${u.searchParams.get('name') ?? ''}</h1><ul id="items"><li>first</li></ul>
        <img src="/missing.png" onerror="try { window.top.document.title = 'pwned' } catch (e) {}">
        <button id="more">More</button>
        <script>
          document.getElementById('more').addEventListener('click', async () => {
            const r = await fetch('/api/items');
            const li = document.createElement('li');
            li.textContent = (await r.json()).next + ' ' + document.querySelectorAll('li').length;
            document.getElementById('items').append(li);
            console.log('added item', document.querySelectorAll('li').length);
          });
        </script>`);
      return;
    }
    res.end(`<!doctype html><title>One</title>
      <form action="/two" method="get"><label>Name <input id="name" name="name"></label>
      <label>Password <input id="pw" type="password"></label><button id="go">Sign in</button></form>
      <script>console.warn('page one loaded')</script>`);
  });
  return new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve(srv)));
}

before(async () => {
  viewerBrowser = await launchViewer();
  site = await startSite();
  siteURL = `http://127.0.0.1:${site.address().port}`;
});
after(async () => {
  await viewerBrowser?.close();
  site?.close();
});

// The document as a comparable string: the body's elements with their text
// and input values, scripts aside.
const describe = () => {
  const walk = (n) => {
    if (n.nodeType === 3) return n.textContent.trim() ? [n.textContent.trim()] : [];
    if (n.nodeType !== 1 || ['SCRIPT', 'NOSCRIPT', 'STYLE'].includes(n.tagName)) return [];
    const attrs = n.tagName === 'INPUT' ? `[${n.type}=${n.type === 'password' ? '' : n.value}]` : '';
    return [`<${n.tagName.toLowerCase()}${attrs}>`, ...[...n.childNodes].flatMap(walk), `</${n.tagName.toLowerCase()}>`];
  };
  return { title: document.title, body: walk(document.body).join('') };
};

test('a recorded Playwright session replays to the DOM it ended with, password masked', async () => {
  const s = await trawler.createSession('acme', { ttl: 300, activityTtl: 120, recording: true });
  assert.equal(s.recording, true, 'the answer says the session is recorded');
  assert.match(s.replayUrl, new RegExp(`/replay/${s.id}\\?token=`), 'replayUrl');
  let browser;
  let live;
  try {
    browser = await within(20_000, chromium.connectOverCDP(s.cdpUrl, { timeout: 15_000 }), 'connectOverCDP');
    const context = browser.contexts()[0];
    const page = context.pages()[0] ?? await context.newPage();
    await page.goto(`${siteURL}/one`);
    await page.click('#name');
    await page.keyboard.type('Ada');
    await page.fill('#pw', PASSWORD);
    await Promise.all([page.waitForURL(/\/two/), page.click('#go')]);
    await page.click('#more');
    await page.locator('li').nth(1).waitFor();
    await page.click('#more');
    await page.locator('li').nth(2).waitFor();
    live = await page.evaluate(describe);
    assert.match(live.body, /item from the server 2/, 'the live page took both clicks');
    assert.equal(live.title, 'pwned', 'the page\'s own error handler ran in the session');
    // The recorder fetches every half second: the session's end takes the rest.
  } finally {
    await browser?.close().catch(() => {});
    await trawler.cleanup('acme', s.id);
  }

  const replay = await trawler.api('acme', 'GET', `/v2/browser/${s.id}/replay`);
  assert.equal(replay.status, 200, JSON.stringify(replay.body).slice(0, 300));
  assert.equal(replay.body.status, 'completed');
  const pages = replay.body.pages;
  const tab = pages.find((p) => p.url.startsWith(`${siteURL}/two`));
  assert.ok(tab, `a recorded tab ended on page two: ${JSON.stringify(pages)}`);
  const events = [];
  for (let next = `/v2/browser/${s.id}/replay/${tab.id}`; next;) {
    const r = await trawler.api('acme', 'GET', next.replace(trawler.baseUrl, ''));
    assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 300));
    events.push(...r.body.events);
    next = r.body.next;
  }
  const raw = JSON.stringify(events);
  assert.ok(!raw.includes(PASSWORD), 'the password appears in the recording');
  const metas = events.filter((e) => e.type === 4).map((e) => e.data.href);
  assert.ok(metas.some((h) => h.endsWith('/one')) && metas.some((h) => h.includes('/two')), `both documents recorded: ${metas}`);
  assert.ok(events.filter((e) => e.type === 2).length >= 2, 'a full snapshot per document');
  const inputs = events.filter((e) => e.type === 3 && e.data.source === 5).map((e) => e.data.text);
  assert.ok(inputs.includes('Ada'), `the typed name is an input event: ${inputs}`);
  assert.ok(events.some((e) => e.type === 3 && e.data.source === 2 && e.data.type === 2), 'clicks are recorded');
  const custom = (tag) => events.filter((e) => e.type === 5 && e.data.tag === tag).map((e) => e.data.payload);
  assert.ok(custom('trawler/console').some((c) => c.text === 'added item 3' && c.level === 'log'), `console: ${JSON.stringify(custom('trawler/console'))}`);
  const requests = custom('trawler/network');
  assert.ok(requests.some((r) => r.url === `${siteURL}/api/items` && r.status === 200 && r.method === 'GET'), `requests: ${JSON.stringify(requests).slice(0, 500)}`);

  // The replay page, opened in the viewer with the session's token.
  const viewer = await viewerBrowser.newPage({ viewport: { width: 1400, height: 900 } });
  const problems = [];
  viewer.on('pageerror', (e) => problems.push(e.message));
  try {
    await viewer.goto(replay.body.replayUrl);
    await viewer.waitForFunction(() => document.body.dataset.state !== 'loading', null, { timeout: 20_000 });
    assert.equal(await viewer.evaluate(() => document.body.dataset.state), 'ready', await viewer.textContent('#status'));
    await viewer.evaluate(() => window.trawlerReplay.show(document.querySelector(`#pages button[title*="/two"]`).dataset.page));
    assert.ok(await viewer.evaluate(() => window.trawlerReplay.seekToEnd()), 'the player seeks to the end');
    const frame = await eventually(10_000, async () => viewer.frames().find((f) => f !== viewer.mainFrame()), 'the replay frame');
    const replayed = await eventually(10_000, async () => {
      const d = await frame.evaluate(describe);
      return d.body === live.body ? d : null;
    }, 'the replayed document to equal the live one').catch(async () => frame.evaluate(describe));
    assert.equal(replayed.body, live.body, 'the replayed document differs from the live one');
    assert.ok(await viewer.locator('#console li', { hasText: 'added item 3' }).count() > 0, 'the console panel lists the page\'s messages');
    assert.ok(await viewer.locator('#network li', { hasText: '/api/items' }).count() > 0, 'the requests panel lists the fetch');
    assert.deepEqual(problems, [], 'the replay page threw');
    // The recorded page's handlers do not run in the viewer: the replay
    // frame is sandboxed without scripts, and the page's CSP allows none.
    assert.doesNotMatch(await viewer.evaluate(() => document.querySelector('iframe').getAttribute('sandbox') ?? 'none'), /allow-scripts/);
    assert.equal(await viewer.title(), 'Replay · Trawler', 'a recorded handler ran in the replay page');
  } finally {
    await viewer.close();
  }
});

test('a recording is the team\'s own, opened with the session\'s token, and refused under zero data retention', async () => {
  const s = await trawler.createSession('acme', { ttl: 120, activityTtl: 60, recording: true });
  try {
    const other = await trawler.api('globex', 'GET', `/v2/browser/${s.id}/replay`);
    assert.equal(other.status, 404, 'another team reads the recording');
    const wrong = await fetch(`${trawler.baseUrl}/replay/${s.id}/data?token=nope`);
    assert.equal(wrong.status, 401, 'a wrong token opens the replay');
    const plain = await trawler.createSession('acme', { ttl: 60, activityTtl: 30 });
    assert.equal(plain.recording, false);
    const none = await trawler.api('acme', 'GET', `/v2/browser/${plain.id}/replay`);
    assert.equal(none.status, 404);
    assert.match(none.body.error, /was not recorded/);
    await trawler.cleanup('acme', plain.id);
    const zdr = await trawler.api('acme', 'POST', '/v2/browser', { recording: true, zeroDataRetention: true });
    assert.equal(zdr.status, 400, JSON.stringify(zdr.body));
    assert.match(zdr.body.error, /recording/);
    const bad = await trawler.api('acme', 'POST', '/v2/browser', { recording: 'yes' });
    assert.equal(bad.status, 400, JSON.stringify(bad.body));
  } finally {
    await trawler.cleanup('acme', s.id);
  }
});
