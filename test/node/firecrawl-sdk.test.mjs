// The Firecrawl JS SDK, pointed at Trawler, drives a browser session's whole
// life: create, list, execute, delete; and one team cannot see or end
// another team's session.

import assert from 'node:assert/strict';
import Firecrawl from '@mendable/firecrawl-js';
import { chromium } from 'playwright-core';
import { useTrawler, within } from './harness.mjs';

const { trawler, test } = useTrawler();

const sdk = (team) => new Firecrawl({ apiKey: trawler.keys[team], apiUrl: trawler.apiUrl, maxRetries: 1, timeoutMs: 30_000 });

const ids = (list) => (list.sessions ?? []).map((s) => s.id);

test('SDK creates, lists, executes in and deletes a browser session', async () => {
  const fc = sdk('acme');
  const port = trawler.port;
  const before = Date.now();
  const s = await within(30_000, fc.browser({ ttl: 600, activityTtl: 120 }), 'fc.browser');
  let browser;
  try {
    assert.equal(s.success, true);
    assert.match(s.id, /^[A-Za-z0-9_-]+$/, 'session id');

    const cdp = s.cdpUrl.match(new RegExp(`^ws://127\\.0\\.0\\.1:${port}/cdp/${s.id}\\?token=([^&]+)$`));
    assert.ok(cdp, `cdpUrl ${s.cdpUrl} is ws://127.0.0.1:${port}/cdp/${s.id}?token=...`);
    const live = s.liveViewUrl.match(new RegExp(`^http://127\\.0\\.0\\.1:${port}/live/${s.id}\\?token=([^&]+)$`));
    assert.ok(live, `liveViewUrl ${s.liveViewUrl}`);
    const interactive = s.interactiveLiveViewUrl.match(new RegExp(`^http://127\\.0\\.0\\.1:${port}/live/${s.id}\\?token=([^&]+)$`));
    assert.ok(interactive, `interactiveLiveViewUrl ${s.interactiveLiveViewUrl}`);
    const tokens = new Set([cdp[1], live[1], interactive[1]]);
    assert.equal(tokens.size, 3, 'the CDP, view and interactive tokens are all different');
    for (const tok of tokens) assert.ok(decodeURIComponent(tok).length >= 16, `token ${tok} is long enough to be a secret`);

    const expiresAt = Date.parse(s.expiresAt);
    assert.ok(!Number.isNaN(expiresAt), `expiresAt ${s.expiresAt} is a date`);
    assert.ok(Math.abs(expiresAt - (before + 600_000)) < 15_000, `expiresAt ${s.expiresAt} is about now + 600 s`);

    const active = await fc.listBrowsers({ status: 'active' });
    assert.equal(active.success, true);
    const listed = active.sessions.find((x) => x.id === s.id);
    assert.ok(listed, `listBrowsers({status:'active'}) contains ${s.id}: ${JSON.stringify(ids(active))}`);
    assert.equal(listed.status, 'active');
    assert.equal(listed.cdpUrl, s.cdpUrl);

    // Playwright sets the title of the session's page; execute reads it back.
    browser = await within(20_000, chromium.connectOverCDP(s.cdpUrl, { timeout: 15_000 }), 'connectOverCDP');
    const context = browser.contexts()[0];
    assert.ok(context, 'the session has a default context');
    const page = context.pages()[0] ?? (await context.newPage());
    const title = `Trawler SDK ${Date.now()}`;
    await page.setContent(`<title>${title}</title><p>hello</p>`);
    assert.equal(await page.title(), title);

    // language js is evaluated in the page (node and bash run in the
    // execute sandbox: execute.test.mjs).
    const exec = await within(20_000, fc.browserExecute(s.id, { code: 'document.title', language: 'js' }), 'browserExecute');
    assert.equal(exec.success, true, `execute answered ${JSON.stringify(exec)}`);
    assert.equal(exec.result, title);

    const exec2 = await within(20_000, fc.browserExecute(s.id, { code: '({n: 6 * 7, text: document.querySelector("p").textContent})', language: 'js' }), 'browserExecute object');
    assert.deepEqual(exec2.value, { n: 42, text: 'hello' });
    assert.deepEqual(JSON.parse(exec2.result), { n: 42, text: 'hello' }, 'result is the value as a string');

    const thrown = await within(20_000, fc.browserExecute(s.id, { code: 'throw new Error("boom from test")', language: 'js' }), 'browserExecute throw');
    assert.equal(thrown.success, false);
    assert.match(String(thrown.error), /boom from test/);

    await browser.close().catch(() => {});
    browser = undefined;

    const del = await within(20_000, fc.deleteBrowser(s.id), 'deleteBrowser');
    const elapsed = Date.now() - before;
    assert.equal(del.success, true);
    assert.equal(typeof del.sessionDurationMs, 'number');
    assert.ok(del.sessionDurationMs > 0 && del.sessionDurationMs <= elapsed + 1000,
      `sessionDurationMs ${del.sessionDurationMs} is between 0 and the ${elapsed} ms this test has run`);

    const destroyed = await fc.listBrowsers({ status: 'destroyed' });
    const gone = destroyed.sessions.find((x) => x.id === s.id);
    assert.ok(gone, `listBrowsers({status:'destroyed'}) contains ${s.id}: ${JSON.stringify(ids(destroyed))}`);
    assert.equal(gone.status, 'destroyed');
    const stillActive = await fc.listBrowsers({ status: 'active' });
    assert.ok(!ids(stillActive).includes(s.id), `listBrowsers({status:'active'}) no longer contains ${s.id}`);

    // Deleting twice is refused with 410, not a second success.
    await assert.rejects(fc.deleteBrowser(s.id), (err) => {
      assert.equal(err.status, 410, `second delete: ${err.status} ${err.message}`);
      return true;
    });
  } finally {
    await browser?.close().catch(() => {});
    await trawler.cleanup('acme', s.id);
  }
});

test("another team's key cannot see, use or delete the session", async () => {
  const acme = sdk('acme');
  const globex = sdk('globex');
  const s = await within(30_000, acme.browser({ ttl: 300, activityTtl: 120 }), 'fc.browser');
  try {
    const all = await globex.listBrowsers();
    assert.equal(all.success, true);
    assert.ok(!ids(all).includes(s.id), 'globex listBrowsers() does not include acme\'s session');
    const active = await globex.listBrowsers({ status: 'active' });
    assert.ok(!ids(active).includes(s.id), 'globex listBrowsers({status:active}) does not include acme\'s session');

    await assert.rejects(globex.deleteBrowser(s.id), (err) => {
      assert.ok(err.status === 404 || err.status === 403, `globex delete answered ${err.status}: ${err.message}`);
      return true;
    });
    await assert.rejects(globex.browserExecute(s.id, { code: '1+1', language: 'js' }), (err) => {
      assert.ok(err.status === 404 || err.status === 403, `globex execute answered ${err.status}: ${err.message}`);
      return true;
    });
    const get = await trawler.api('globex', 'GET', `/v2/browser/${s.id}`);
    assert.ok(get.status === 404 || get.status === 403, `globex GET answered ${get.status}`);

    // globex's failed attempts left acme's session alive and usable.
    const mine = await acme.listBrowsers({ status: 'active' });
    assert.ok(ids(mine).includes(s.id), 'acme\'s session is still active');
    const exec = await acme.browserExecute(s.id, { code: '1+1', language: 'js' });
    assert.equal(exec.result, '2');

    // A key that belongs to no team is refused outright.
    const stranger = new Firecrawl({ apiKey: 'not-a-key', apiUrl: trawler.apiUrl, maxRetries: 1 });
    await assert.rejects(stranger.listBrowsers(), (err) => {
      assert.equal(err.status, 401, `unknown key answered ${err.status}`);
      return true;
    });
  } finally {
    await trawler.cleanup('acme', s.id);
  }
});

// A Promise that is the value of the code is awaited, not answered as {}.
test('browserExecute resolves a returned Promise', async () => {
  const fc = sdk('acme');
  const s = await within(30_000, fc.browser({ ttl: 120, activityTtl: 60 }), 'fc.browser');
  try {
    const started = Date.now();
    const late = await within(20_000, fc.browserExecute(s.id, { code: 'new Promise((r) => setTimeout(() => r(document.readyState), 1500))', language: 'js', timeout: 10 }), 'execute a slow promise');
    assert.equal(late.success, true, JSON.stringify(late));
    assert.equal(late.result, 'complete');
    assert.ok(Date.now() - started >= 1400, 'the answer waited for the promise');
    const now = await fc.browserExecute(s.id, { code: 'Promise.resolve(42)', language: 'js' });
    assert.equal(now.result, '42');
    assert.equal(now.value, 42);
  } finally {
    await trawler.cleanup('acme', s.id);
  }
});
