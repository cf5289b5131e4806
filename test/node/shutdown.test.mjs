// Stopping the service (SIGTERM) while clients are connected: they are told
// why with a close frame, not dropped, and the service exits cleanly.
// (This file's service is stopped by the test itself; after() then has
// nothing left to stop.)

import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { rawWebSocket, useTrawler, within } from './harness.mjs';

const { trawler, test } = useTrawler();

test('SIGTERM closes connected CDP clients with "service shutting down" and exits 0', async (t) => {
  const s = await trawler.createSession('acme');
  const browser = await within(20_000, chromium.connectOverCDP(s.cdpUrl, { timeout: 15_000 }), 'connectOverCDP');
  try {
    const page = browser.contexts()[0].pages()[0] ?? await browser.contexts()[0].newPage();
    await page.setContent('<p>up</p>');
    const disconnected = new Promise((r) => browser.once('disconnected', r));
    const raw = await rawWebSocket(s.cdpUrl);
    assert.equal(raw.status, 101);

    const t0 = Date.now();
    const exited = await within(25_000, trawler.stop(), 'trawler to stop on SIGTERM');
    t.diagnostic(`trawler stopped ${Date.now() - t0} ms after SIGTERM with 1 session attached`);
    assert.deepEqual([exited.code, exited.signal], [0, null], 'trawler exits 0 on SIGTERM');
    await within(5_000, disconnected, "Playwright 'disconnected'");
    const close = await within(5_000, raw.closed, 'close frame');
    assert.equal(close.code, 1001, `close code (reason: ${close.reason})`);
    assert.match(close.reason, /shutting down/);
  } finally {
    await browser.close().catch(() => {});
  }
});
