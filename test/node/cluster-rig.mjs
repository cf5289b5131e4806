// Drives the multi-node rig (deploy/cluster.compose.yml) through its load
// balancer only, for deploy/cluster_test.go: Playwright sessions whose CDP
// connections the balancer spreads over both nodes (each session is
// connected to several times, each time a page loaded and its title read,
// its live view's status asked, and it is described), then a Firecrawl SDK crawl polled until
// it completes, every page once. Settings: TRAWLER_URL (the balancer),
// TRAWLER_KEY, SITE_URL (/title/NAME answers <title>rig NAME</title>,
// /c/0 starts the crawl's chain of CRAWL_PAGES pages), SESSIONS and
// CONNECTS (per session). Then a session with an activityTtl of 10 s,
// driven past it, which must end 10 s after its last activity. Prints one
// JSON line, {"sessions":[ids],"idle":id,"crawl":id}, last; exits non-zero
// on any failure.

import assert from 'node:assert/strict';
import Firecrawl from '@mendable/firecrawl-js';
import { chromium } from 'playwright-core';

const { TRAWLER_URL: apiUrl, TRAWLER_KEY: apiKey, SITE_URL: site } = process.env;
const sessions = Number(process.env.SESSIONS ?? 3);
const connects = Number(process.env.CONNECTS ?? 3);
const crawlPages = Number(process.env.CRAWL_PAGES ?? 8);
const fc = new Firecrawl({ apiKey, apiUrl, maxRetries: 1, timeoutMs: 60_000 });
const started = Date.now();
const log = (msg) => console.log(`[${((Date.now() - started) / 1000).toFixed(1)}s] ${msg}`);

const ids = [];
for (let i = 0; i < sessions; i++) {
  const s = await fc.browser({ ttl: 300, activityTtl: 120 });
  assert.ok(s.id && s.cdpUrl && s.liveViewUrl, `session ${i}: ${JSON.stringify(s)}`);
  assert.ok(s.cdpUrl.startsWith(apiUrl.replace(/^http/, 'ws') + '/'), `the cdpUrl ${s.cdpUrl} goes through the balancer ${apiUrl}`);
  assert.ok(s.liveViewUrl.startsWith(apiUrl + '/'), `the liveViewUrl goes through the balancer`);
  ids.push(s.id);
  for (let j = 0; j < connects; j++) {
    const name = `${i}-${j}`;
    const browser = await chromium.connectOverCDP(s.cdpUrl, { timeout: 30_000 });
    const context = browser.contexts()[0];
    const page = context.pages()[0] ?? await context.newPage();
    await page.goto(`${site}/title/${name}`, { timeout: 30_000 });
    assert.equal(await page.title(), `rig ${name}`, `the title of the page session ${i} loaded on connection ${j}`);
    // Closing a CDP connection leaves the session running.
    await browser.close();

    // The live view's status, after every other connection: with the
    // session's other requests, that makes the connections' turns in the
    // balancer's round robin fall on both nodes.
    if (j % 2 === 0) {
      const live = new URL(s.liveViewUrl);
      const res = await fetch(`${live.origin}${live.pathname}/status${live.search}`);
      const body = await res.json();
      assert.equal(res.status, 200, `the live view status of session ${i}: ${JSON.stringify(body)}`);
      assert.equal(body.status, 'active', `the live view status of session ${i}`);
    }
  }
  // Any node describes any session.
  const res = await fetch(`${apiUrl}/v2/browser/${s.id}`, { headers: { Authorization: `Bearer ${apiKey}` } });
  const desc = await res.json();
  assert.equal(res.status, 200, `describing session ${i}: ${JSON.stringify(desc)}`);
  assert.equal(desc.status ?? desc.data?.status, 'active', `session ${i} described: ${JSON.stringify(desc)}`);
  log(`session ${i} (${s.id}): ${connects} connections through the balancer, each loaded a page and read its title`);
}
for (const id of ids) {
  const del = await fc.deleteBrowser(id);
  assert.equal(del.success, true, `deleting session ${id}: ${JSON.stringify(del)}`);
}
log(`${ids.length} sessions deleted through the balancer`);

// A session with an activityTtl of 10 s, driven for longer than that by
// connections the balancer alternates between the nodes (nothing else goes
// through it meanwhile), stays alive on that activity and ends its
// activityTtl after the last of it.
const idleTtl = 10;
const idle = await fc.browser({ ttl: 300, activityTtl: idleTtl });
const idleStart = Date.now();
let lastActivity;
for (let k = 0; k < 4; k++) {
  const browser = await chromium.connectOverCDP(idle.cdpUrl, { timeout: 30_000 });
  const context = browser.contexts()[0];
  const page = context.pages()[0] ?? await context.newPage();
  await page.goto(`${site}/title/idle-${k}`, { timeout: 30_000 });
  await new Promise((r) => setTimeout(r, 3_000));
  assert.equal(await page.title(), `rig idle-${k}`, `the title on connection ${k} to the idle session`);
  lastActivity = Date.now();
  await browser.close();
}
const describe = async (id) => {
  const res = await fetch(`${apiUrl}/v2/browser/${id}`, { headers: { Authorization: `Bearer ${apiKey}` } });
  const body = await res.json();
  assert.equal(res.status, 200, `describing session ${id}: ${JSON.stringify(body)}`);
  return body.data ?? body;
};
let idleDesc = await describe(idle.id);
assert.equal(idleDesc.status, 'active', `the session after ${((Date.now() - idleStart) / 1000).toFixed(1)} s of activity, with an activityTtl of ${idleTtl} s`);
for (const deadline = Date.now() + 40_000; idleDesc.status === 'active';) {
  assert.ok(Date.now() < deadline, `the idle session was not ended 40 s after its last activity: ${JSON.stringify(idleDesc)}`);
  await new Promise((r) => setTimeout(r, 250));
  idleDesc = await describe(idle.id);
}
const idleAfter = (Date.now() - lastActivity) / 1000;
assert.equal(idleDesc.status, 'destroyed', `the idle session: ${JSON.stringify(idleDesc)}`);
assert.match(String(idleDesc.endReason), /activityTtl/, `the idle session's end reason`);
assert.ok(idleAfter >= idleTtl - 1, `the idle session ended ${idleAfter.toFixed(1)} s after its last activity, before its activityTtl`);
log(`session ${idle.id} (activityTtl ${idleTtl} s): alive after ${((lastActivity - idleStart) / 1000).toFixed(1)} s of activity, ended ${idleAfter.toFixed(1)} s after the last`);

const job = await fc.startCrawl(`${site}/c/0`, { limit: 100, sitemap: 'skip', crawlEntireDomain: true, scrapeOptions: { formats: ['markdown'] } });
assert.ok(job.id, `the crawl was not started: ${JSON.stringify(job)}`);
let st;
for (const deadline = Date.now() + 90_000; ;) {
  st = await fc.getCrawlStatus(job.id, { autoPaginate: false });
  if (st.status !== 'scraping') break;
  assert.ok(Date.now() < deadline, `the crawl did not end within 90 s: ${JSON.stringify(st).slice(0, 500)}`);
  await new Promise((r) => setTimeout(r, 500));
}
assert.equal(st.status, 'completed', `the crawl's status: ${JSON.stringify(st).slice(0, 500)}`);
// Every document, following the next links the balancer's URL is in.
const all = await fc.getCrawlStatus(job.id);
const seen = new Map();
for (const d of all.data) {
  const u = d.metadata?.sourceURL ?? d.metadata?.url;
  seen.set(u, (seen.get(u) ?? 0) + 1);
}
for (let i = 0; i < crawlPages; i++) {
  assert.equal(seen.get(`${site}/c/${i}`), 1, `times ${site}/c/${i} is in the crawl's results (${[...seen.keys()].join(' ')})`);
}
// The last pages link past the chain, to pages that answer 404: those are documents too.
assert.equal(all.data.length, seen.size, 'a page is in the results twice');
for (const d of all.data) {
  if (d.metadata?.statusCode === 200) assert.match(d.markdown ?? '', /Chained page/, `the markdown of ${d.metadata.sourceURL}`);
}
log(`crawl ${job.id} completed through the balancer: ${all.data.length} documents, each page once`);
console.log(JSON.stringify({ sessions: ids, idle: idle.id, crawl: job.id }));
