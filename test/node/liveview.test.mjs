// The live view as a person sees it: a real Chromium (launched here, the
// viewer) opens liveViewUrl or interactiveLiveViewUrl while Playwright,
// attached over the session's cdpUrl, plays the agent working in the
// session's browser.

import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before } from 'node:test';
import { chromium } from 'playwright-core';
import { decodePng } from './png.mjs';
import { eventually, launchViewer, sleep, useTrawler, within } from './harness.mjs';

const { trawler, test } = useTrawler({ TRAWLER_ALLOW_PRIVATE_NETWORKS: 'true' }); // the site is on loopback

let viewerBrowser;
let site;
let siteURL;

// Pages the agent opens: a full-window block of ?colour=.
function startSite() {
  const srv = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://127.0.0.1');
    const colour = u.searchParams.get('colour') || '#00c000';
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.end(`<!doctype html><title>Page ${u.pathname.slice(1)}</title>
      <style>html,body{margin:0;height:100%} body{background:${colour}}</style><h1>${u.pathname}</h1>`);
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

async function agentPage(s) {
  const browser = await within(20_000, chromium.connectOverCDP(s.cdpUrl, { timeout: 15_000 }), 'connectOverCDP');
  const context = browser.contexts()[0];
  const page = context.pages()[0] ?? await context.newPage();
  return { browser, page };
}

// openViewer opens a live-view URL in the viewer browser and waits for the
// first frame to be drawn.
async function openViewer(url, viewport = { width: 1000, height: 700 }, deviceScaleFactor = 1) {
  const page = await viewerBrowser.newPage({ viewport, deviceScaleFactor });
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
  page.on('pageerror', (e) => problems.push(e.message));
  await page.goto(url);
  await page.waitForSelector('canvas#screen[data-seq]', { timeout: 15_000 });
  return { page, problems };
}

// canvasPoint is where a remote CSS point (x, y) of a viewport of size vp is
// drawn in the viewer.
async function canvasPoint(viewer, vp, x, y) {
  const r = await viewer.evaluate(() => {
    const b = document.getElementById('screen').getBoundingClientRect();
    return { left: b.left, top: b.top, width: b.width, height: b.height };
  });
  return { x: r.left + (x / vp.width) * r.width, y: r.top + (y / vp.height) * r.height };
}

async function colourAt(viewer, p) {
  const img = decodePng(await viewer.screenshot({ scale: 'css' }));
  return img.rgb(Math.round(p.x), Math.round(p.y));
}

const near = (got, want, tol = 40) => got.every((c, i) => Math.abs(c - want[i]) <= tol);

async function waitColour(viewer, p, want, what) {
  return eventually(10_000, async () => {
    const c = await colourAt(viewer, p);
    return near(c, want) ? c : false;
  }, what, 250);
}

const remoteViewport = (page) => page.evaluate(() => ({ width: innerWidth, height: innerHeight }));

test('liveViewUrl draws the session\'s tab where it is and follows its navigation', async () => {
  const s = await trawler.createSession('acme');
  let agent;
  let viewer;
  try {
    agent = await agentPage(s);
    await agent.page.setContent(`<style>html,body{margin:0;height:100%;background:#fff}
      #l{position:fixed;left:0;top:0;width:50%;height:100%;background:rgb(220,30,30)}
      #r{position:fixed;right:0;top:0;width:50%;height:100%;background:rgb(30,60,220)}</style><div id=l></div><div id=r></div>`);
    const vp = await remoteViewport(agent.page);
    viewer = await openViewer(s.liveViewUrl);
    const left = await canvasPoint(viewer.page, vp, vp.width * 0.25, vp.height * 0.5);
    const right = await canvasPoint(viewer.page, vp, vp.width * 0.75, vp.height * 0.5);
    await waitColour(viewer.page, left, [220, 30, 30], 'the left block drawn red');
    await waitColour(viewer.page, right, [30, 60, 220], 'the right block drawn blue');
    assert.equal(await viewer.page.locator('#mode').textContent(), 'View only');
    assert.equal(await viewer.page.locator('#back').isVisible(), false, 'no navigation buttons on the view-only page');

    // A resized window gets frames fitted to it, still in the right place.
    await viewer.page.setViewportSize({ width: 640, height: 520 });
    await sleep(500);
    const left2 = await canvasPoint(viewer.page, vp, vp.width * 0.1, vp.height * 0.9);
    await waitColour(viewer.page, left2, [220, 30, 30], 'the left block after a resize');

    // The agent navigates: the view follows, URL and title with it.
    await agent.page.goto(`${siteURL}/next?colour=%23ffc800`);
    const mid = await canvasPoint(viewer.page, vp, vp.width * 0.5, vp.height * 0.7);
    await waitColour(viewer.page, mid, [255, 200, 0], 'the next page drawn');
    await eventually(5_000, async () => (await viewer.page.locator('#url').inputValue()).endsWith('/next?colour=%23ffc800'), 'the URL bar shows the new URL');
    await eventually(5_000, async () => (await viewer.page.locator('.tab[aria-selected="true"] .title').textContent()) === 'Page next', 'the tab strip shows the title');

    // A tab the agent opens is followed.
    const second = await agent.browser.contexts()[0].newPage();
    await second.goto(`${siteURL}/other?colour=%23a000a0`);
    await waitColour(viewer.page, mid, [160, 0, 160], 'the new tab followed');
    assert.equal(await viewer.page.locator('.tab').count(), 2);
    assert.deepEqual(viewer.problems, [], 'the page ran without errors (a CSP violation would show here)');
  } finally {
    await viewer?.page.close();
    await agent?.browser.close().catch(() => {});
    await trawler.cleanup('acme', s.id);
  }
});

test('interactiveLiveViewUrl: clicks and typing reach the page; liveViewUrl changes nothing', async () => {
  const s = await trawler.createSession('acme');
  let agent;
  let drive;
  let watch;
  try {
    agent = await agentPage(s);
    await agent.page.setContent(`<style>html,body{margin:0;height:100%;background:#fff}
      input{position:fixed;left:40px;top:40px;width:400px;height:40px;font-size:20px}
      #pad{position:fixed;left:40px;top:200px;width:300px;height:200px;background:#2a8}</style>
      <input id=field><div id=pad></div><div style="height:4000px"></div>
      <script>window.clicks = 0; window.dbl = 0; window.dragged = 0;
        const pad = document.getElementById('pad');
        pad.addEventListener('click', () => window.clicks++);
        pad.addEventListener('dblclick', () => window.dbl++);
        pad.addEventListener('mousemove', (e) => { if (e.buttons === 1) window.dragged++; });</script>`);
    const vp = await remoteViewport(agent.page);
    const state = () => agent.page.evaluate(() => ({ clicks: window.clicks, dbl: window.dbl, value: document.getElementById('field').value }));

    // View only: the same gestures do nothing.
    watch = await openViewer(s.liveViewUrl);
    const fieldAt = await canvasPoint(watch.page, vp, 240, 60);
    const padAt = await canvasPoint(watch.page, vp, 190, 300);
    await watch.page.mouse.click(fieldAt.x, fieldAt.y);
    await watch.page.keyboard.type('nope');
    await watch.page.mouse.click(padAt.x, padAt.y);
    // The page sends nothing in view-only mode; a script that sends input on
    // the view-only socket anyway is refused by the server.
    const refusal = await watch.page.evaluate(async ({ x, y }) => {
      const ws = new WebSocket(`${location.origin.replace(/^http/, 'ws')}${location.pathname}/ws${location.search}`);
      const refused = new Promise((resolve) => {
        ws.onmessage = (e) => {
          if (typeof e.data !== 'string') return;
          const m = JSON.parse(e.data);
          if (m.type === 'error') resolve(m.code);
        };
      });
      await new Promise((resolve) => { ws.onopen = resolve; });
      for (const action of ['down', 'up']) {
        ws.send(JSON.stringify({ type: 'mouse', action, x, y, button: 'left', buttons: action === 'down' ? 1 : 0, clickCount: 1 }));
      }
      ws.send(JSON.stringify({ type: 'text', text: 'nope' }));
      const code = await refused;
      ws.close();
      return code;
    }, { x: 190 / vp.width, y: 300 / vp.height });
    assert.equal(refusal, 'READ_ONLY');
    await sleep(1000);
    assert.deepEqual(await state(), { clicks: 0, dbl: 0, value: '' }, 'view-only input reached the page');

    // Interactive, on a high-DPI screen: a click focuses the field, typing
    // fills it, including characters no key of the keyboard types.
    drive = await openViewer(s.interactiveLiveViewUrl, { width: 900, height: 650 }, 2);
    assert.equal(await drive.page.locator('#mode').textContent(), 'Interactive');
    const fieldAt2 = await canvasPoint(drive.page, vp, 240, 60);
    await drive.page.mouse.click(fieldAt2.x, fieldAt2.y);
    await eventually(5_000, () => agent.page.evaluate(() => document.activeElement?.id === 'field'), 'the click focused the field');
    await drive.page.keyboard.type('Hello, wörld 日本 ✓');
    await eventually(5_000, async () => (await state()).value === 'Hello, wörld 日本 ✓', 'the typed text reached the page');
    await drive.page.keyboard.press('Backspace');
    await drive.page.keyboard.press('Shift+Home');
    await drive.page.keyboard.type('X');
    await eventually(5_000, async () => (await state()).value === 'X', 'Backspace and Shift+Home acted in the page');

    const padAt2 = await canvasPoint(drive.page, vp, 190, 300);
    await drive.page.mouse.click(padAt2.x, padAt2.y);
    await eventually(5_000, async () => (await state()).clicks === 1, 'the click on the pad');
    await drive.page.mouse.dblclick(padAt2.x, padAt2.y);
    await eventually(5_000, async () => (await state()).dbl === 1, 'the double click on the pad');

    // A drag across the pad moves with the button held; the wheel scrolls.
    await drive.page.mouse.move(padAt2.x - 30, padAt2.y);
    await drive.page.mouse.down();
    await drive.page.mouse.move(padAt2.x + 30, padAt2.y + 20, { steps: 6 });
    await drive.page.mouse.up();
    await eventually(5_000, () => agent.page.evaluate(() => window.dragged >= 1), 'the drag reached the pad');
    await drive.page.mouse.wheel(0, 500);
    await eventually(5_000, () => agent.page.evaluate(() => window.scrollY > 100), 'the wheel scrolled the page');

    // The URL bar navigates the tab.
    await drive.page.locator('#url').fill(`${siteURL}/typed?colour=%2300ffff`);
    await drive.page.locator('#url').press('Enter');
    await eventually(10_000, async () => agent.page.url().endsWith('/typed?colour=%2300ffff'), 'the URL bar navigated the tab');
    await waitColour(drive.page, await canvasPoint(drive.page, vp, vp.width / 2, vp.height / 2), [0, 255, 255], 'the typed URL drawn');
    assert.equal(await drive.page.evaluate(() => document.body.dataset.lastError), undefined, 'the server refused none of the input');
    assert.deepEqual(drive.problems, []);
    assert.deepEqual(watch.problems, []);
  } finally {
    await watch?.page.close();
    await drive?.page.close();
    await agent?.browser.close().catch(() => {});
    await trawler.cleanup('acme', s.id);
  }
});

test('a viewer keeps an idle session alive; the ttl ends it and the page says so', async (t) => {
  const s = await trawler.createSession('acme', { ttl: 30, activityTtl: 10 });
  const started = Date.now();
  let viewer;
  try {
    viewer = await openViewer(s.liveViewUrl);
    // Nothing else touches the session: past its activityTtl it lives on.
    await sleep(Math.max(0, 15_000 - (Date.now() - started)));
    assert.equal((await trawler.session('acme', s.id)).status, 'active', 'the watched session outlived its activityTtl');

    await viewer.page.waitForSelector('body[data-state="ended"]', { timeout: 30_000 });
    const text = await viewer.page.locator('#overlay-text').textContent();
    assert.match(text, /ttl of 30s/, `the ended state names the limit: ${text}`);
    assert.equal(await viewer.page.locator('#overlay').isVisible(), true);
    t.diagnostic(`ended ${Date.now() - started} ms after creation: ${text}`);
    const rec = await trawler.session('acme', s.id);
    assert.equal(rec.status, 'destroyed');
  } finally {
    await viewer?.page.close();
    await trawler.cleanup('acme', s.id);
  }
});

test('a live view opened after the end, or of a session without streamWebView, says why', async () => {
  const off = await trawler.createSession('acme', { ttl: 60, activityTtl: 60, streamWebView: false });
  const page = await viewerBrowser.newPage();
  try {
    let res = await page.goto(off.liveViewUrl);
    assert.equal(res.status(), 409);
    assert.match(await page.locator('body').textContent(), /streamWebView/);
    await trawler.api('acme', 'DELETE', `/v2/browser/${off.id}`);
    res = await page.goto(off.liveViewUrl);
    assert.equal(res.status(), 410);
    assert.match(await page.locator('body').textContent(), /deleted/);
  } finally {
    await page.close();
    await trawler.cleanup('acme', off.id);
  }
});
