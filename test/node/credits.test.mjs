// The Firecrawl JS SDK reads a team's credits, queue and concurrency from
// Trawler: getCreditUsage, getCreditUsageHistorical, getQueueStatus and
// getConcurrency; a team past its credit limit (TRAWLER_TEAM_CREDITS) is
// refused with 402, and the other team is not.

import assert from 'node:assert/strict';
import http from 'node:http';
import { after } from 'node:test';
import Firecrawl from '@mendable/firecrawl-js';
import { useTrawler, within } from './harness.mjs';

const { trawler, test } = useTrawler({ TRAWLER_ALLOW_PRIVATE_NETWORKS: 'true', TRAWLER_TEAM_CREDITS: 'globex:1' });

const site = http.createServer((req, res) => {
  res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
  res.end(`<!doctype html><html><head><title>Nets</title></head><body><main><h1>Nets</h1>
<p>${'A net is mended on the quay before the boat goes out again. '.repeat(8)}</p></main></body></html>`);
});
await new Promise((r) => site.listen(0, '127.0.0.1', r));
after(() => site.close());
const base = `http://127.0.0.1:${site.address().port}`;

const sdk = (team) => new Firecrawl({ apiKey: trawler.keys[team], apiUrl: trawler.apiUrl, maxRetries: 1, timeoutMs: 60_000 });

test('SDK reads credit usage, history, queue status and concurrency; a team past its limit gets 402', async () => {
  const acme = sdk('acme');
  const doc = await within(60_000, acme.scrape(`${base}/nets`, { formats: ['markdown'] }), 'scrape');
  let used = doc.metadata.creditsUsed;
  assert.equal(used, 1, 'a page costs a credit');
  assert.equal(doc.metadata.concurrencyLimited, false);

  const session = await within(30_000, acme.browser({ ttl: 120, activityTtl: 60 }), 'session');
  let ended;
  try {
    const conc = await acme.getConcurrency();
    assert.deepEqual(conc, { concurrency: 1, maxConcurrency: 4 }, 'the session holds one of acme\'s 4 browsers');
  } finally {
    ended = await acme.deleteBrowser(session.id);
  }
  assert.equal(ended.success, true);
  assert.equal(ended.creditsBilled, 2, 'a session under a minute costs 2 credits');
  used += ended.creditsBilled;
  assert.deepEqual(await acme.getConcurrency(), { concurrency: 0, maxConcurrency: 4 });

  const usage = await acme.getCreditUsage();
  assert.equal(usage.planCredits, 99_999_999, 'no limit');
  assert.equal(usage.remainingCredits, usage.planCredits - used, `remaining credits ${JSON.stringify(usage)}`);
  assert.ok(Date.parse(usage.billingPeriodStart) <= Date.now() && Date.now() <= Date.parse(usage.billingPeriodEnd),
    `the billing period holds now: ${JSON.stringify(usage)}`);

  const history = await acme.getCreditUsageHistorical(true);
  assert.equal(history.success, true);
  assert.equal(history.periods.length, 1, JSON.stringify(history));
  assert.equal(history.periods[0].totalCredits, used);
  assert.equal(history.periods[0].startDate, usage.billingPeriodStart);

  const queue = await acme.getQueueStatus();
  assert.equal(queue.success, true);
  assert.equal(queue.jobsInQueue, 0);
  assert.equal(queue.activeJobsInQueue, 0);
  assert.equal(queue.waitingJobsInQueue, 0);
  assert.equal(queue.maxConcurrency, 4);
  assert.ok(Date.parse(queue.mostRecentSuccess) <= Date.now(), `mostRecentSuccess ${queue.mostRecentSuccess}`);

  // globex has 1 credit a month: one scrape, then 402.
  const globex = sdk('globex');
  const before = await globex.getCreditUsage();
  assert.deepEqual([before.planCredits, before.remainingCredits], [1, 1], 'globex sees its own limit, none of acme\'s use');
  await within(60_000, globex.scrape(`${base}/nets`, { formats: ['markdown'] }), 'globex scrape');
  await assert.rejects(within(30_000, globex.scrape(`${base}/nets`, { formats: ['markdown'] }), 'scrape past the limit'), (err) => {
    assert.equal(err.status, 402, `${err.status} ${err.message}`);
    assert.match(err.message, /limit of 1/);
    return true;
  });
  assert.equal((await globex.getCreditUsage()).remainingCredits, 0);
  assert.equal((await acme.getCreditUsage()).remainingCredits, usage.remainingCredits, 'acme unchanged by globex');
});
