// activityTtl as a client sees it: an idle session ends on time, closing the
// client's connection with a reason; a session in use does not.
//
// This file is the suite's one slow test (about 15 s).

import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { eventually, rawWebSocket, sleep, useTrawler, within } from './harness.mjs';

const { trawler, test } = useTrawler();

const IDLE_TTL = 10; // seconds, the smallest the API allows

test('activityTtl: an idle session ends and its clients are disconnected; a busy one lives on', async (t) => {
  const idle = await trawler.createSession('acme', { ttl: 300, activityTtl: IDLE_TTL });
  const busy = await trawler.createSession('acme', { ttl: 300, activityTtl: IDLE_TTL });
  let idleBrowser;
  let busyBrowser;
  let raw;
  try {
    idleBrowser = await within(20_000, chromium.connectOverCDP(idle.cdpUrl, { timeout: 15_000 }), 'connect idle');
    const idlePage = idleBrowser.contexts()[0].pages()[0] ?? await idleBrowser.contexts()[0].newPage();
    await idlePage.setContent('<p>idle</p>');
    raw = await rawWebSocket(idle.cdpUrl); // attached, sends nothing
    assert.equal(raw.status, 101);
    const lastActivity = Date.now();
    const disconnected = new Promise((r) => idleBrowser.once('disconnected', () => r(Date.now())));

    busyBrowser = await within(20_000, chromium.connectOverCDP(busy.cdpUrl, { timeout: 15_000 }), 'connect busy');
    const busyPage = busyBrowser.contexts()[0].pages()[0] ?? await busyBrowser.contexts()[0].newPage();
    const busyStart = Date.now();

    // Keep the busy session in use (a CDP message every 2 s) while the idle
    // one waits out its activityTtl.
    let idleEndedAt = null;
    disconnected.then((at) => { idleEndedAt = at; });
    let midCheck = null;
    while (idleEndedAt === null && Date.now() - lastActivity < 20_000) {
      assert.equal(await busyPage.evaluate(() => 'alive'), 'alive');
      if (midCheck === null && Date.now() - lastActivity > (IDLE_TTL / 2) * 1000) {
        // Half way: the idle session must not have ended early.
        midCheck = await trawler.session('acme', idle.id);
        assert.equal(midCheck.status, 'active', `idle session ended early: ${JSON.stringify(midCheck)}`);
      }
      await sleep(2000);
    }
    assert.ok(idleEndedAt !== null, `the idle client was not disconnected within 20 s of its last message (activityTtl ${IDLE_TTL}s)`);
    const after = idleEndedAt - lastActivity;
    t.diagnostic(`idle client disconnected ${after} ms after its last message (activityTtl ${IDLE_TTL} s)`);
    assert.ok(after >= IDLE_TTL * 1000 - 500, `disconnected too early: ${after} ms after the last message`);
    assert.ok(after <= IDLE_TTL * 1000 + 5000, `disconnected too late: ${after} ms after the last message`);

    // The raw client got a close frame that names the limit.
    const close = await within(5_000, raw.closed, 'close frame on the idle raw socket');
    assert.equal(close.code, 1000, `close code (reason: ${close.reason})`);
    assert.match(close.reason, /activityTtl/);

    const rec = await eventually(5_000, async () => {
      const r = await trawler.session('acme', idle.id);
      return r.status === 'destroyed' && r;
    }, 'idle session recorded as destroyed');
    assert.match(rec.endReason, /activityTtl/);
    const destroyed = await trawler.api('acme', 'GET', '/v2/browser?status=destroyed');
    assert.ok(destroyed.body.sessions.some((x) => x.id === idle.id), 'idle session listed as destroyed');
    const active = await trawler.api('acme', 'GET', '/v2/browser?status=active');
    assert.ok(!active.body.sessions.some((x) => x.id === idle.id), 'idle session no longer listed as active');

    // The busy session outlived its activityTtl counted from creation.
    assert.ok(Date.now() - busyStart > IDLE_TTL * 1000, 'the busy session has run longer than activityTtl');
    assert.equal(busyBrowser.isConnected(), true);
    assert.equal(await busyPage.evaluate(() => 40 + 2), 42);
    assert.equal((await trawler.session('acme', busy.id)).status, 'active');
  } finally {
    raw?.close?.();
    await idleBrowser?.close().catch(() => {});
    await busyBrowser?.close().catch(() => {});
    await trawler.cleanup('acme', idle.id);
    await trawler.cleanup('acme', busy.id);
  }
});
