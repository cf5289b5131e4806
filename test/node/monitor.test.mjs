// Monitors as the Firecrawl SDK's users meet them: a monitor of two pages
// of a local site is created, run, changed and run again, listed, edited
// and deleted with the SDK's monitor methods only, and its webhook gets
// one signed monitor.check.completed per check.

import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import http from 'node:http';
import { after, before } from 'node:test';
import Firecrawl from '@mendable/firecrawl-js';
import { eventually, sleep, useTrawler, within } from './harness.mjs';

const SECRET = 'monitor-e2e-signing-secret';

const { trawler, test } = useTrawler({
  TRAWLER_ALLOW_PRIVATE_NETWORKS: 'true', // the site and the receiver are on loopback
  TRAWLER_MONITOR_MIN_INTERVAL: '1s',
  TRAWLER_WEBHOOK_SECRETS: `acme:${SECRET}`,
});

const sdk = () => new Firecrawl({ apiKey: trawler.keys.acme, apiUrl: trawler.apiUrl, maxRetries: 1, timeoutMs: 30_000 });

// The site: each path's status and body, changed by the test.
const pages = new Map();
let site;
let siteURL;
// The webhook receiver: every delivery, with its raw body and signature.
const hooks = [];
let receiver;
let hookURL;

const listen = (srv) => new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve(srv)));

before(async () => {
  site = await listen(http.createServer((req, res) => {
    const p = pages.get(new URL(req.url, 'http://127.0.0.1').pathname) ?? { status: 404, html: 'not found' };
    res.writeHead(p.status, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(p.html);
  }));
  siteURL = `http://127.0.0.1:${site.address().port}`;
  receiver = await listen(http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body;
      try { body = JSON.parse(raw); } catch { body = { unparsed: raw }; }
      hooks.push({ path: req.url, raw, body, signature: req.headers['x-firecrawl-signature'] });
      res.end('ok');
    });
  }));
  hookURL = `http://127.0.0.1:${receiver.address().port}/hooks`;
});
after(() => {
  site?.close();
  receiver?.close();
});

const page = (title, text) => ({ status: 200, html: `<!doctype html><title>${title}</title><h1>${title}</h1><p>${text}</p>` });

// Runs the monitor and waits for the check's end with getMonitorCheck.
async function runCheck(fc, monitorId) {
  const queued = await within(15_000, fc.runMonitor(monitorId), 'runMonitor');
  assert.match(queued.id, /^[0-9a-f-]{36}$/, `runMonitor's check id: ${JSON.stringify(queued)}`);
  assert.equal(queued.monitorId, monitorId);
  assert.equal(queued.trigger, 'manual');
  assert.ok(['queued', 'running'].includes(queued.status), `a new check is queued: ${queued.status}`);
  return eventually(15_000, async () => {
    const c = await fc.getMonitorCheck(monitorId, queued.id);
    return ['queued', 'running'].includes(c.status) ? null : c;
  }, `check ${queued.id} to finish`, 150);
}

const statuses = (check) => Object.fromEntries(check.pages.map((p) => [p.url.replace(siteURL, ''), p.status]));

test('the SDK creates, runs, lists, edits and deletes a monitor whose webhook is signed', async () => {
  const fc = sdk();
  pages.set('/a', page('Alpha', 'the price is 10 euros'));
  pages.set('/b', page('Beta', 'beta stays for now'));
  const urls = [`${siteURL}/a`, `${siteURL}/b`];

  // Email notification is refused, naming the field.
  await assert.rejects(fc.createMonitor({
    name: 'mailed', schedule: { cron: '0 * * * *' }, targets: [{ type: 'scrape', urls }],
    notification: { email: { enabled: true, recipients: ['someone@example.com'] } },
  }), (err) => {
    assert.equal(err.status, 400, `${err.status} ${err.message}`);
    assert.match(err.message, /notification\.email/);
    return true;
  });

  const created = Date.now();
  const m = await within(15_000, fc.createMonitor({
    name: 'two pages',
    schedule: { text: 'daily at 9:00', timezone: 'Europe/Berlin' },
    targets: [{ id: 'pages', type: 'scrape', urls }],
    webhook: { url: hookURL, metadata: { run: 'e2e' }, events: ['monitor.page', 'monitor.check.completed'] },
  }), 'createMonitor');
  assert.match(m.id, /^[0-9a-f-]{36}$/, `monitor id: ${JSON.stringify(m)}`);
  assert.equal(m.name, 'two pages');
  assert.equal(m.status, 'active');
  assert.deepEqual(m.schedule, { cron: '0 9 * * *', timezone: 'Europe/Berlin' }, 'the text schedule is answered as its cron');
  const next = Date.parse(m.nextRunAt);
  assert.ok(next > created && next <= created + 25 * 3600_000, `nextRunAt ${m.nextRunAt} is within a day`);
  assert.ok([7, 8].includes(new Date(next).getUTCHours()), `nextRunAt ${m.nextRunAt} is 9:00 in Berlin`);
  assert.equal(m.targets.length, 1);
  assert.deepEqual({ id: m.targets[0].id, type: m.targets[0].type, urls: m.targets[0].urls }, { id: 'pages', type: 'scrape', urls });
  assert.equal(m.webhook.url, hookURL);
  assert.deepEqual(m.webhook.events, ['monitor.page', 'monitor.check.completed']);
  assert.equal(typeof m.retentionDays, 'number');
  assert.ok(!Number.isNaN(Date.parse(m.createdAt)) && !Number.isNaN(Date.parse(m.updatedAt)), 'createdAt, updatedAt');

  try {
    const first = await runCheck(fc, m.id);
    assert.equal(first.status, 'completed', JSON.stringify(first));
    assert.deepEqual(statuses(first), { '/a': 'new', '/b': 'new' });
    assert.deepEqual(first.summary, { totalPages: 2, same: 0, changed: 0, new: 2, removed: 0, error: 0 });
    assert.equal(first.billingStatus, 'confirmed');
    assert.ok(first.pages.every((p) => p.targetId === 'pages' && p.id && p.createdAt), JSON.stringify(first.pages));

    pages.set('/a', page('Alpha', 'the price is 12 euros'));
    pages.delete('/b');
    const second = await runCheck(fc, m.id);
    assert.equal(second.status, 'completed', JSON.stringify(second));
    assert.deepEqual(statuses(second), { '/a': 'changed', '/b': 'removed' });
    assert.deepEqual(second.summary, { totalPages: 2, same: 0, changed: 1, new: 0, removed: 1, error: 0 });
    const changed = second.pages.find((p) => p.status === 'changed');
    assert.match(changed.diff?.text ?? '', /^-the price is 10 euros$/m, `the diff: ${JSON.stringify(changed.diff)}`);
    assert.match(changed.diff.text, /^\+the price is 12 euros$/m);
    assert.ok(Array.isArray(changed.diff.json?.files), 'diff.json is the parse-diff structure');

    // The SDK follows next when a page of results is smaller than the check.
    const paged = await fc.getMonitorCheck(m.id, second.id, { limit: 1 });
    assert.deepEqual(statuses(paged), { '/a': 'changed', '/b': 'removed' }, 'autoPaginate gathers every page');
    const one = await fc.getMonitorCheck(m.id, second.id, { limit: 1, autoPaginate: false });
    assert.equal(one.pages.length, 1);
    assert.match(one.next ?? '', /skip=1&limit=1/);

    const checks = await fc.listMonitorChecks(m.id);
    assert.deepEqual(checks.map((c) => c.id), [second.id, first.id], 'newest first');
    assert.ok(checks.every((c) => c.status === 'completed' && c.trigger === 'manual'));

    const got = await fc.getMonitor(m.id);
    assert.deepEqual(got.lastCheckSummary, second.summary);
    assert.equal(got.currentCheckId ?? null, null);
    assert.ok(got.lastRunAt, 'lastRunAt is set');

    // The webhook: a monitor.page per page not the same, one
    // monitor.check.completed per check, each signed with the team's secret.
    const of = (type) => hooks.filter((h) => h.body.type === type);
    await eventually(15_000, () => of('monitor.check.completed').length >= 2 && of('monitor.page').length >= 4,
      `the webhooks (${hooks.map((h) => h.body.type)})`);
    await sleep(500); // a duplicate would come now
    const done = of('monitor.check.completed');
    assert.deepEqual(done.map((h) => h.body.data[0].checkId).sort(), [first.id, second.id].sort(), 'one completed event per check');
    for (const h of done) {
      assert.equal(h.body.id, h.body.data[0].checkId);
      assert.equal(h.body.data[0].monitorId, m.id);
      assert.equal(h.body.data[0].status, 'completed');
      assert.deepEqual(h.body.metadata, { run: 'e2e' });
    }
    assert.deepEqual(done.find((h) => h.body.id === second.id).body.data[0].summary, second.summary);
    assert.deepEqual(of('monitor.page').map((h) => `${h.body.data[0].url.replace(siteURL, '')} ${h.body.data[0].status}`).sort(),
      ['/a changed', '/a new', '/b new', '/b removed']);
    assert.equal(hooks.length, 6, `no other events: ${hooks.map((h) => h.body.type)}`);
    for (const h of hooks) {
      assert.equal(h.path, '/hooks');
      assert.equal(h.signature, 'sha256=' + createHmac('sha256', SECRET).update(h.raw).digest('hex'), 'X-Firecrawl-Signature');
    }

    // Edits are kept; what the edit leaves out stays.
    const edited = await fc.updateMonitor(m.id, { name: 'two pages, weekly', schedule: { cron: '30 6 * * 1', timezone: 'UTC' } });
    assert.equal(edited.name, 'two pages, weekly');
    assert.deepEqual(edited.schedule, { cron: '30 6 * * 1', timezone: 'UTC' });
    const reread = await fc.getMonitor(m.id);
    assert.equal(reread.name, 'two pages, weekly');
    assert.deepEqual(reread.schedule, { cron: '30 6 * * 1', timezone: 'UTC' });
    const n = new Date(reread.nextRunAt);
    assert.deepEqual([n.getUTCDay(), n.getUTCHours(), n.getUTCMinutes()], [1, 6, 30], `nextRunAt ${reread.nextRunAt} follows the new schedule`);
    assert.deepEqual(reread.targets[0].urls, urls);
    assert.equal(reread.webhook.url, hookURL);

    const listed = await fc.listMonitors();
    assert.ok(listed.some((x) => x.id === m.id && x.name === 'two pages, weekly'), `listMonitors: ${JSON.stringify(listed.map((x) => x.id))}`);
  } finally {
    assert.equal(await fc.deleteMonitor(m.id), true);
  }
  await assert.rejects(fc.getMonitor(m.id), (err) => {
    assert.equal(err.status, 404, `${err.status} ${err.message}`);
    return true;
  });
  assert.ok(!(await fc.listMonitors()).some((x) => x.id === m.id), 'a deleted monitor is not listed');
});
