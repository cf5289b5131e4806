// The formats that need no model, through the Firecrawl SDK: changeTracking
// between scrapes of a page that changes, highlights, branding; and a docs
// question.

import assert from 'node:assert/strict';
import http from 'node:http';
import { after } from 'node:test';
import Firecrawl from '@mendable/firecrawl-js';
import { useTrawler, within } from './harness.mjs';

const { trawler, test } = useTrawler({ TRAWLER_ALLOW_PRIVATE_NETWORKS: 'true' });

let price = '18.50';
const page = () => `<!doctype html><html><head><title>Tarred rope</title><meta name="theme-color" content="#0f766e">
<style>body{background:#fff;color:#1f2937;font-family:Georgia,serif} a.buy{display:inline-block;padding:12px 28px;background:#0f766e;color:#fff;border-radius:6px}</style>
</head><body><header><img src="/logo.svg" alt="Chandlery logo" width="120" height="40"></header><main><h1>Tarred rope</h1>
<p>Hemp rope, tarred against the weather, 12 mm thick. It holds knots well in wet conditions.</p>
<p>Price: ${price} EUR per metre. Sold by the metre, cut to length on the quay.</p>
<p><a class="buy" href="/buy">Buy now</a></p></main></body></html>`;
const site = http.createServer((req, res) => {
  if (req.url === '/logo.svg') {
    res.writeHead(200, { 'Content-Type': 'image/svg+xml' });
    res.end('<svg xmlns="http://www.w3.org/2000/svg" width="120" height="40"><rect width="120" height="40" fill="#0f766e"/></svg>');
    return;
  }
  res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
  res.end(page());
});
await new Promise((r) => site.listen(0, '127.0.0.1', r));
after(() => site.close());
const base = `http://127.0.0.1:${site.address().port}`;
const sdk = () => new Firecrawl({ apiKey: trawler.keys.acme, apiUrl: trawler.apiUrl, maxRetries: 1, timeoutMs: 60_000 });

test('changeTracking says new, then same, then changed with the diff', async () => {
  const fc = sdk();
  const opts = { formats: ['markdown', { type: 'changeTracking', modes: ['git-diff'], tag: 'sdk' }], maxAge: 0 };
  const first = await within(60_000, fc.scrape(`${base}/rope`, opts), 'first scrape');
  assert.equal(first.changeTracking.changeStatus, 'new');
  assert.equal(first.changeTracking.previousScrapeAt, null);
  const second = await within(60_000, fc.scrape(`${base}/rope`, opts), 'second scrape');
  assert.equal(second.changeTracking.changeStatus, 'same');
  price = '21.00';
  const third = await within(60_000, fc.scrape(`${base}/rope`, opts), 'third scrape');
  assert.equal(third.changeTracking.changeStatus, 'changed');
  assert.match(third.changeTracking.diff.text, /-Price: 18\.50 EUR/);
  assert.match(third.changeTracking.diff.text, /\+Price: 21\.00 EUR/);
  assert.ok(third.changeTracking.previousScrapeAt, 'the previous scrape is dated');
});

test('highlights and branding', async () => {
  const doc = await within(60_000, sdk().scrape(`${base}/rope`, {
    formats: [{ type: 'highlights', query: 'price per metre' }, 'branding'],
  }), 'scrape');
  assert.match(doc.highlights, /Price: \d+\.\d+ EUR per metre/);
  assert.equal(doc.branding.colorScheme, 'light');
  assert.equal(doc.branding.colors.primary, '#0f766e');
  assert.equal(doc.branding.logo, `${base}/logo.svg`);
});

test('a docs question answered from the documentation', async () => {
  const res = await trawler.api('acme', 'POST', '/v2/support/docs-search', { question: 'how do I keep cookies between sessions?' });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.ok(res.body.answer.length > 0);
  assert.ok(res.body.evidence.some((e) => /#profiles$/.test(e.pathOrUrl)), JSON.stringify(res.body.evidence));
  const bad = await trawler.api('acme', 'POST', '/v2/support/docs-search', { question: 'x'.repeat(2001) });
  assert.equal(bad.status, 400);
});
