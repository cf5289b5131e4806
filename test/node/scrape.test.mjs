// The Firecrawl SDK's scrape against Trawler: Markdown, links, metadata and a
// screenshot from a page served on loopback, and the cache seen from the
// site's own access log.

import assert from 'node:assert/strict';
import http from 'node:http';
import { after } from 'node:test';
import Firecrawl from '@mendable/firecrawl-js';
import { useTrawler, within } from './harness.mjs';

const { trawler, test } = useTrawler({ TRAWLER_ALLOW_PRIVATE_NETWORKS: 'true' });

const hits = new Map();
const page = `<!doctype html><html lang="en"><head><title>Net Mending</title><meta name="description" content="A guide"></head><body>
<nav><a href="/home">Home</a> <a href="/shop">Shop</a></nav>
<main><h1>Net Mending</h1><p>Mend the <a href="/knots#square">square knot</a> first, then the sheet bend.</p>
<ol><li>Cut the torn mesh</li><li>Tie in new twine</li></ol>
<table><tr><th>Tool</th><th>Use</th></tr><tr><td>Needle</td><td>Carries twine</td></tr></table></main>
<footer>Copyright the harbour</footer></body></html>`;
const site = http.createServer((req, res) => {
  hits.set(req.url, (hits.get(req.url) ?? 0) + 1);
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  res.end(page);
});
await new Promise((r) => site.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${site.address().port}`;
after(() => new Promise((r) => site.close(r)));

const sdk = () => new Firecrawl({ apiKey: trawler.keys.acme, apiUrl: trawler.apiUrl, maxRetries: 1, timeoutMs: 60_000 });

test('SDK scrape: clean Markdown, links, metadata and a screenshot', async () => {
  const doc = await within(60_000, sdk().scrape(`${base}/guide`, { formats: ['markdown', 'links', 'screenshot'] }), 'scrape');
  assert.match(doc.markdown, /^# Net Mending/m);
  assert.match(doc.markdown, /\[square knot\]\(http:\/\/127\.0\.0\.1:\d+\/knots#square\)/);
  assert.match(doc.markdown, /1\. Cut the torn mesh/);
  assert.match(doc.markdown, /\| Needle \| Carries twine \|/);
  assert.doesNotMatch(doc.markdown, /Copyright the harbour|Shop/);
  assert.ok(doc.links.includes(`${base}/knots`), JSON.stringify(doc.links));
  assert.ok(doc.links.every((l) => !l.includes('#')), 'links carry no fragments');
  assert.match(doc.screenshot, /^data:image\/png;base64,iVBOR/);
  assert.equal(doc.metadata.title, 'Net Mending');
  assert.equal(doc.metadata.statusCode, 200);
  assert.equal(doc.metadata.sourceURL, `${base}/guide`);
  assert.ok(doc.metadata.scrapeId);
});

test('SDK scrape: a second scrape is served from the cache, maxAge 0 goes to the site', async () => {
  const fc = sdk();
  const first = await fc.scrape(`${base}/cached`, { formats: ['markdown'] });
  assert.equal(first.metadata.cacheState, 'miss');
  const second = await fc.scrape(`${base}/cached`, { formats: ['markdown'] });
  assert.equal(second.metadata.cacheState, 'hit');
  assert.equal(hits.get('/cached'), 1, 'the site was contacted once');
  await fc.scrape(`${base}/cached`, { formats: ['markdown'], maxAge: 0 });
  assert.equal(hits.get('/cached'), 2);
});

test('SDK scrape: invalid options are refused naming the field', async () => {
  await assert.rejects(sdk().scrape(`${base}/x`, { formats: ['markdown'], timeout: 500 }), (err) => {
    assert.equal(err.status, 400);
    assert.match(err.message, /timeout must be between 1000 and 300000/);
    return true;
  });
});
