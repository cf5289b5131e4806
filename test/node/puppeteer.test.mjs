// Puppeteer connects with browserWSEndpoint = cdpUrl. disconnect() leaves the
// session running for a later connection; close() ends the session.

import assert from 'node:assert/strict';
import puppeteer from 'puppeteer-core';
import { eventually, useTrawler, within } from './harness.mjs';

const { trawler, test } = useTrawler();

const connect = (cdpUrl) => within(20_000, puppeteer.connect({ browserWSEndpoint: cdpUrl, protocolTimeout: 15_000 }), `puppeteer.connect ${cdpUrl}`);

test('Puppeteer: new page, content, evaluate; disconnect() keeps the session, close() ends it', async (t) => {
  const s = await trawler.createSession('acme');
  let browser;
  try {
    browser = await connect(s.cdpUrl);
    assert.equal(browser.connected, true);
    assert.match(await browser.version(), /Chrom/);
    const page = await within(15_000, browser.newPage(), 'newPage');
    await page.setContent('<title>kept</title><ul><li>a</li><li>b</li><li>c</li></ul>');
    assert.equal(await page.evaluate(() => document.querySelectorAll('li').length), 3);
    assert.equal(await page.$eval('li:last-child', (el) => el.textContent), 'c');

    // disconnect(): the client goes, the session and its pages stay.
    const disconnected = new Promise((r) => browser.once('disconnected', r));
    await within(10_000, browser.disconnect(), 'disconnect');
    await within(5_000, disconnected, "'disconnected' after disconnect()");
    browser = undefined;
    // Give the server a moment to see the socket close, then check it did
    // not take that for the end of the session.
    await new Promise((r) => setTimeout(r, 1000));
    const rec = await trawler.session('acme', s.id);
    assert.equal(rec.status, 'active', `after disconnect(): ${JSON.stringify(rec)}`);

    browser = await connect(s.cdpUrl);
    const pages = await browser.pages();
    const titles = await Promise.all(pages.map((p) => p.title()));
    assert.ok(titles.includes('kept'), `the page made before disconnect() is still there: ${JSON.stringify(titles)}`);

    // close(): ends the session (instead of killing a browser the service owns).
    const t0 = Date.now();
    await within(10_000, browser.close(), 'browser.close()');
    browser = undefined;
    const ended = await eventually(5_000, async () => {
      const r = await trawler.session('acme', s.id);
      return r.status === 'destroyed' && r;
    }, 'session destroyed after browser.close()');
    t.diagnostic(`session destroyed ${Date.now() - t0} ms after browser.close() was called`);
    assert.match(ended.endReason, /client|closed/i);
    const active = await trawler.api('acme', 'GET', '/v2/browser?status=active');
    assert.ok(!active.body.sessions.some((x) => x.id === s.id), 'no longer listed as active');

    // A closed session cannot be reconnected to.
    await assert.rejects(within(15_000, puppeteer.connect({ browserWSEndpoint: s.cdpUrl, protocolTimeout: 10_000 }), 'reconnect after close'));
  } finally {
    await browser?.disconnect().catch(() => {});
    await trawler.cleanup('acme', s.id);
  }
});

test('after Puppeteer close() ended a session, the service still serves new sessions', async () => {
  // The browser behind the closed session must have been given back (or
  // replaced), not left wedged: a fresh session works end to end.
  for (let i = 0; i < 2; i++) {
    const s = await trawler.createSession('acme');
    let browser;
    try {
      browser = await connect(s.cdpUrl);
      const page = await within(15_000, browser.newPage(), 'newPage');
      await page.setContent(`<p>${i}</p>`);
      assert.equal(await page.$eval('p', (el) => el.textContent), String(i));
      // A new session starts clean: no page of an earlier session leaks in.
      const titles = await Promise.all((await browser.pages()).map((p) => p.title()));
      assert.ok(!titles.includes('kept'), `pages of an ended session leaked into a new one: ${JSON.stringify(titles)}`);
      await within(10_000, browser.close(), 'browser.close()');
      browser = undefined;
      await eventually(5_000, async () => (await trawler.session('acme', s.id)).status === 'destroyed', 'destroyed after close()');
    } finally {
      await browser?.disconnect().catch(() => {});
      await trawler.cleanup('acme', s.id);
    }
  }
});
