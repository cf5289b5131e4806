// Playwright, the way its users connect to a remote browser: connectOverCDP
// with the session's cdpUrl (WebSocket) or its http discovery form.

import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { decodePng } from './png.mjs';
import { rawWebSocket, useTrawler, within } from './harness.mjs';

const { trawler, test } = useTrawler();

const connect = (url) => within(20_000, chromium.connectOverCDP(url, { timeout: 15_000 }), `connectOverCDP ${url}`);

async function defaultPage(browser) {
  const context = browser.contexts()[0];
  assert.ok(context, 'connectOverCDP exposes the default context');
  return context.pages()[0] ?? context.newPage();
}

test('connectOverCDP by ws cdpUrl: set content, evaluate, screenshot', async () => {
  const s = await trawler.createSession('acme');
  let browser;
  try {
    browser = await connect(s.cdpUrl);
    assert.equal(browser.isConnected(), true);
    const page = await defaultPage(browser);
    await page.setContent('<h1 style="color: rgb(0, 128, 0)">hi</h1>');
    assert.equal(await page.evaluate(() => document.querySelector('h1').textContent), 'hi');
    assert.equal(await page.locator('h1').textContent(), 'hi');
    assert.equal(await page.evaluate(() => getComputedStyle(document.querySelector('h1')).color), 'rgb(0, 128, 0)');

    const png = await within(20_000, page.screenshot(), 'screenshot');
    const img = decodePng(png);
    const vp = page.viewportSize() ?? await page.evaluate(() => ({ width: innerWidth, height: innerHeight }));
    assert.equal(img.width, vp.width);
    assert.equal(img.height, vp.height);

    // What the page did is visible to the service's own execute endpoint:
    // both look at the same browser.
    const exec = await trawler.api('acme', 'POST', `/v2/browser/${s.id}/execute`, { code: 'document.querySelector("h1").textContent', language: 'js' });
    assert.deepEqual(exec.body, { success: true, result: 'hi', value: 'hi', stdout: 'hi', stderr: '', exitCode: 0, killed: false });
  } finally {
    await browser?.close().catch(() => {});
    await trawler.cleanup('acme', s.id);
  }
});

// xorshift32, the same in the page and here, so the test knows every colour.
const NOISE_SRC = `(seed) => { let s = seed >>> 0; return () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s; }; }`;
const makeNoise = eval(NOISE_SRC);

test('a full-page screenshot of a 20000px page (several MB) passes through the proxy intact', async (t) => {
  const s = await trawler.createSession('acme');
  let browser;
  try {
    browser = await connect(s.cdpUrl);
    const page = await defaultPage(browser);
    const W = 800; const BAND = 200; const H = 20_000; const BLOCK = 4;
    await page.setViewportSize({ width: W, height: 600 });
    await page.setContent(`<style>body{margin:0} div{height:${BAND}px} canvas{display:block}</style>
      <div style="background:#ff0000"></div><canvas id="c" width="${W}" height="${H - 2 * BAND}"></canvas><div style="background:#0000ff"></div>`);
    await page.evaluate(({ src, block }) => {
      const next = eval(src)(20240611);
      const c = document.getElementById('c');
      const g = c.getContext('2d');
      const img = g.createImageData(c.width, c.height);
      const d = img.data;
      for (let by = 0; by < c.height; by += block) {
        for (let bx = 0; bx < c.width; bx += block) {
          const v = next();
          for (let y = by; y < by + block; y++) {
            for (let x = bx; x < bx + block; x++) {
              const i = (y * c.width + x) * 4;
              d[i] = v & 0xff; d[i + 1] = (v >>> 8) & 0xff; d[i + 2] = (v >>> 16) & 0xff; d[i + 3] = 255;
            }
          }
        }
      }
      g.putImageData(img, 0, 0);
    }, { src: NOISE_SRC, block: BLOCK });
    assert.equal(await page.evaluate(() => document.documentElement.scrollHeight), H);

    const started = Date.now();
    const png = await within(60_000, page.screenshot({ fullPage: true, timeout: 55_000 }), 'full-page screenshot');
    const took = Date.now() - started;
    assert.ok(png.length > 3 * 1024 * 1024, `the screenshot is several MB (got ${png.length} bytes)`);

    const img = decodePng(png); // checks signature, every CRC, and the inflated size
    assert.equal(img.width, W);
    assert.equal(img.height, H);
    assert.deepEqual(img.rgb(10, 10), [255, 0, 0], 'top band is red');
    assert.deepEqual(img.rgb(W - 10, H - 10), [0, 0, 255], 'bottom band is blue');

    // Every 101st noise block, spread over the whole height, has its colour.
    const next = makeNoise(20240611);
    const cols = W / BLOCK;
    const blocks = ((H - 2 * BAND) / BLOCK) * cols;
    let checked = 0;
    for (let n = 0; n < blocks; n++) {
      const v = next();
      if (n % 101 !== 0) continue;
      const x = (n % cols) * BLOCK + 1;
      const y = BAND + Math.floor(n / cols) * BLOCK + 1;
      const want = [v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff];
      const got = img.rgb(x, y);
      assert.ok(got.every((c, i) => Math.abs(c - want[i]) <= 2), `pixel ${x},${y} is ${got}, drawn as ${want}`);
      checked++;
    }
    assert.ok(checked > 9000);

    // The connection is still healthy afterwards.
    assert.equal(await page.evaluate(() => 1 + 1), 2);
    t.diagnostic(`full-page screenshot: ${(png.length / 1048576).toFixed(1)} MB in ${took} ms`);
  } finally {
    await browser?.close().catch(() => {});
    await trawler.cleanup('acme', s.id);
  }
});

test('connectOverCDP by the http discovery URL (ws:// replaced by http://, token kept)', async () => {
  const s = await trawler.createSession('acme');
  let browser;
  try {
    const httpUrl = s.cdpUrl.replace(/^ws:\/\//, 'http://');
    assert.match(httpUrl, /^http:\/\/127\.0\.0\.1:\d+\/cdp\/[^/?]+\?token=/);

    // What Playwright reads first: /json/version/ points back at cdpUrl.
    const u = new URL(httpUrl);
    const version = await fetch(`${u.origin}${u.pathname}/json/version/${u.search}`, { signal: AbortSignal.timeout(10_000) });
    assert.equal(version.status, 200);
    const v = await version.json();
    assert.equal(v.webSocketDebuggerUrl, s.cdpUrl);
    assert.match(v.Browser, /Chrom/);

    browser = await connect(httpUrl);
    const page = await defaultPage(browser);
    await page.setContent('<p id="x">over http discovery</p>');
    assert.equal(await page.textContent('#x'), 'over http discovery');
    assert.match(browser.version(), /^\d+\./);
  } finally {
    await browser?.close().catch(() => {});
    await trawler.cleanup('acme', s.id);
  }
});

test('deleting a session disconnects a connected Playwright promptly; its cdpUrl then answers 410', async (t) => {
  const s = await trawler.createSession('acme');
  let browser;
  let raw;
  try {
    browser = await connect(s.cdpUrl);
    const page = await defaultPage(browser);
    await page.setContent('<p>about to be deleted</p>');
    const disconnected = new Promise((r) => browser.once('disconnected', () => r(Date.now())));
    raw = await rawWebSocket(s.cdpUrl);
    assert.equal(raw.status, 101);

    const t0 = Date.now();
    const del = await trawler.api('acme', 'DELETE', `/v2/browser/${s.id}`);
    assert.equal(del.status, 200, JSON.stringify(del.body));
    assert.equal(del.body.success, true);
    const at = await within(5_000, disconnected, "Playwright's 'disconnected' event after DELETE");
    assert.ok(at - t0 < 5_000, `disconnected ${at - t0} ms after DELETE`);
    t.diagnostic(`Playwright disconnected ${at - t0} ms after DELETE was sent`);
    assert.equal(browser.isConnected(), false);
    await assert.rejects(page.evaluate(() => 1), 'the page is unusable after the session ended');

    // Not a silent drop: a close frame says why.
    const close = await within(5_000, raw.closed, 'close frame on the raw socket');
    assert.equal(close.code, 1000, `close code (reason: ${close.reason})`);
    assert.match(close.reason, /deleted/);

    // The old address is refused with 410, over WebSocket and over http.
    await assert.rejects(within(20_000, chromium.connectOverCDP(s.cdpUrl, { timeout: 10_000 }), 'reconnect'), /410|Gone|destroyed/i);
    const again = await rawWebSocket(s.cdpUrl);
    assert.equal(again.status, 410);
    assert.equal(again.body.code, 'SESSION_DESTROYED');
    const httpUrl = new URL(s.cdpUrl.replace(/^ws:/, 'http:'));
    const version = await fetch(`${httpUrl.origin}${httpUrl.pathname}/json/version${httpUrl.search}`);
    assert.equal(version.status, 410);

    const rec = await trawler.session('acme', s.id);
    assert.equal(rec.status, 'destroyed');
    assert.match(rec.endReason, /deleted/);
  } finally {
    raw?.close?.();
    await browser?.close().catch(() => {});
    await trawler.cleanup('acme', s.id);
  }
});

test('a wrong token in cdpUrl is refused', async () => {
  const s = await trawler.createSession('acme');
  try {
    const wrong = s.cdpUrl.replace(/token=[^&]+/, 'token=not-the-token');
    assert.notEqual(wrong, s.cdpUrl);
    await assert.rejects(within(20_000, chromium.connectOverCDP(wrong, { timeout: 10_000 }), 'connect with a wrong token'));
    await assert.rejects(within(20_000, chromium.connectOverCDP(wrong.replace(/^ws:/, 'http:'), { timeout: 10_000 }), 'http connect with a wrong token'));
    const noToken = s.cdpUrl.replace(/\?token=.*$/, '');
    await assert.rejects(within(20_000, chromium.connectOverCDP(noToken, { timeout: 10_000 }), 'connect without a token'));

    // Someone else's session's token does not open this one either.
    const other = await trawler.createSession('globex');
    try {
      const otherToken = new URL(other.cdpUrl).searchParams.get('token');
      const u = new URL(s.cdpUrl);
      u.searchParams.set('token', otherToken);
      const raw = await rawWebSocket(u.toString());
      assert.equal(raw.status, 401);
    } finally {
      await trawler.cleanup('globex', other.id);
    }
    const raw = await rawWebSocket(wrong);
    assert.equal(raw.status, 401);

    // The refused attempts did not harm the session: the right token works.
    const browser = await connect(s.cdpUrl);
    try {
      const page = await defaultPage(browser);
      assert.equal(await page.evaluate(() => 'still here'), 'still here');
    } finally {
      await browser.close().catch(() => {});
    }
  } finally {
    await trawler.cleanup('acme', s.id);
  }
});
