// The profile user story of the Firecrawl SDK: a writer session signs in
// through Playwright, its state is saved when it is deleted, and a reader
// session and a scrape are still signed in.

import assert from 'node:assert/strict';
import http from 'node:http';
import { after } from 'node:test';
import Firecrawl from '@mendable/firecrawl-js';
import { chromium } from 'playwright-core';
import { useTrawler, within } from './harness.mjs';

const { trawler, test } = useTrawler({ TRAWLER_ALLOW_PRIVATE_NETWORKS: 'true' });
const sdk = (team) => new Firecrawl({ apiKey: trawler.keys[team], apiUrl: trawler.apiUrl, maxRetries: 1, timeoutMs: 60_000 });

// /login sets an httpOnly session cookie and localStorage; /account says
// whether the request carried the cookie and what localStorage holds.
const site = http.createServer((req, res) => {
  res.setHeader('content-type', 'text/html; charset=utf-8');
  if (req.url === '/login') {
    res.setHeader('set-cookie', 'sid=opensesame; Path=/; HttpOnly');
    res.end(`<title>login</title><script>localStorage.setItem('user', 'Grace'); document.title = 'ready';</script>`);
    return;
  }
  const signedIn = /(^|; )sid=opensesame(;|$)/.test(req.headers.cookie ?? '');
  res.end(`<title>account</title><main><h1>Account</h1><p>Server says: ${signedIn ? 'signed in' : 'signed out'}</p>
<p id="u">Local user: unknown</p></main><script>document.getElementById('u').textContent = 'Local user: ' + (localStorage.getItem('user') || 'none');</script>`);
});
await new Promise((r) => site.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${site.address().port}`;
after(() => new Promise((r) => site.close(r)));

const connect = (url) => within(20_000, chromium.connectOverCDP(url, { timeout: 15_000 }), `connectOverCDP ${url}`);

test('a profile saved by a writer session signs in a reader session and a scrape', async () => {
  const fc = sdk('acme');
  const s1 = await fc.browser({ profile: { name: 'shop-login', saveChanges: true } });
  await assert.rejects(fc.browser({ profile: { name: 'shop-login', saveChanges: true } }), /locked|409/i, 'a second writer is refused');
  let browser = await connect(s1.cdpUrl);
  let page = browser.contexts()[0].pages()[0] ?? await browser.contexts()[0].newPage();
  await page.goto(`${base}/login`);
  await page.waitForFunction(() => document.title === 'ready');
  await browser.close();
  await fc.deleteBrowser(s1.id);

  const s2 = await fc.browser({ profile: { name: 'shop-login', saveChanges: false } });
  browser = await connect(s2.cdpUrl);
  page = browser.contexts()[0].pages()[0] ?? await browser.contexts()[0].newPage();
  await page.goto(`${base}/account`);
  assert.match(await page.textContent('main'), /Server says: signed in/);
  assert.match(await page.textContent('main'), /Local user: Grace/);
  await browser.close();
  await fc.deleteBrowser(s2.id);

  const doc = await fc.scrape(`${base}/account`, { formats: ['markdown'], waitFor: 300, profile: { name: 'shop-login', saveChanges: false } });
  assert.match(doc.markdown, /Server says: signed in/);
  assert.match(doc.markdown, /Local user: Grace/);
  const plain = await fc.scrape(`${base}/account`, { formats: ['markdown'], waitFor: 300 });
  assert.match(plain.markdown, /signed out/);

  // Another team's profile of the same name is its own (empty) profile.
  const other = await sdk('globex').scrape(`${base}/account`, { formats: ['markdown'], waitFor: 300, profile: { name: 'shop-login', saveChanges: false } });
  assert.match(other.markdown, /signed out/);
});
