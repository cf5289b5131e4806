// The Firecrawl SDK's crawl, batch scrape, watcher and map against Trawler,
// on a small site served on loopback whose access log shows what the
// service really fetched: scope, robots.txt, sitemaps, de-duplication,
// pagination of results, errors, cancelling, live progress over the
// WebSocket and team isolation.

import assert from 'node:assert/strict';
import http from 'node:http';
import { after } from 'node:test';
import Firecrawl from '@mendable/firecrawl-js';
import { useTrawler, within, eventually, sleep } from './harness.mjs';

const { trawler, test } = useTrawler({ TRAWLER_ALLOW_PRIVATE_NETWORKS: 'true' });

// ---------------------------------------------------------------------------
// The test site.

/** Every request the site got: {path (with query), t (ms since epoch)}. */
const requests = [];
const SLOW_MS = 400;

const html = (title, body, links = []) =>
  `<!doctype html><html lang="en"><head><title>${title}</title></head><body><main><h1>${title}</h1><p>${body}</p>` +
  `<ul>${links.map(([href, text]) => `<li><a href="${href}">${text}</a></li>`).join('')}</ul></main></body></html>`;

const CHAIN = 6; // /docs/c1 -> /docs/c2 -> ... -> /docs/c6
const MANY = 110; // /many/ links to /many/p1 .. /many/p109
const SLOW_CANCEL = 24;
const SLOW_WATCH = 6;

/** path (with query) → [title, body, links]. */
const pages = new Map();
pages.set('/docs/', ['Docs Home', 'Welcome to the docs.', [
  ['/docs/intro', 'Intro'], ['/docs/guide', 'Guide'], ['/docs/api', 'API'], ['/docs/faq', 'FAQ'],
  ['/docs/c1', 'Chapter 1'], ['/docs/variant?v=1', 'Variant one'], ['/docs/variant?v=2', 'Variant two'],
  ['/blog/post', 'Our blog'], ['/docs/private/secret', 'Secret'], ['mailto:docs@example.com', 'Mail us'],
]]);
pages.set('/docs/intro', ['Intro Page', 'Start here.', [['/docs/guide', 'Guide'], ['/docs/', 'Home']]]);
pages.set('/docs/guide', ['Guide Page', 'How to use it.', [['/docs/api', 'API'], ['/docs/guide#setup', 'Setup']]]);
pages.set('/docs/api', ['API Page', 'The reference.', [['/docs/index.html', 'Home'], ['/docs', 'Home again']]]);
pages.set('/docs/faq', ['FAQ Page', 'Questions.', [['/docs/c3', 'Chapter 3 directly'], ['/docs/variant?v=1#top', 'Variant one']]]);
for (let i = 1; i <= CHAIN; i++) {
  const links = [['/docs/', 'Home']];
  if (i < CHAIN) links.push([`/docs/c${i + 1}`, `Chapter ${i + 1}`]);
  pages.set(`/docs/c${i}`, [`Chapter ${i} Page`, `Text of chapter ${i}.`, links]);
}
pages.set('/docs/variant?v=1', ['Variant One', 'The first variant.', []]);
pages.set('/docs/variant?v=2', ['Variant Two', 'The second variant.', []]);
pages.set('/docs/hidden', ['Hidden Page', 'Only the sitemap knows me.', []]);
pages.set('/docs/private/secret', ['Secret Page', 'Robots say no.', []]);
pages.set('/docs/index.html', ['Docs Index File', 'Same as /docs/.', []]);
pages.set('/blog/post', ['Blog Post', 'Outside the docs.', []]);
pages.set('/blog/from-sitemap', ['Blog From Sitemap', 'Outside the docs too.', []]);
pages.set('/many/', ['Many Home', 'Lots of pages.', Array.from({ length: MANY - 1 }, (_, i) => [`/many/p${i + 1}`, `Page ${i + 1}`])]);
for (let i = 1; i < MANY; i++) pages.set(`/many/p${i}`, [`Many Page ${i}`, `Number ${i}.`, []]);
pages.set('/err/', ['Errors Home', 'Some of these fail.', [
  ['/err/ok', 'Fine'], ['/err/hang', 'Hangs'], ['/docs/private/secret', 'Secret'],
]]);
pages.set('/err/ok', ['Err OK Page', 'This one works.', []]);
pages.set('/slow/cancel/', ['Slow Cancel Home', 'Slow pages.', Array.from({ length: SLOW_CANCEL }, (_, i) => [`/slow/cancel/p${i + 1}`, `Slow ${i + 1}`])]);
for (let i = 1; i <= SLOW_CANCEL; i++) pages.set(`/slow/cancel/p${i}`, [`Slow Cancel ${i}`, `Slowly ${i}.`, []]);
pages.set('/slow/watch/', ['Slow Watch Home', 'Slow pages.', Array.from({ length: SLOW_WATCH - 1 }, (_, i) => [`/slow/watch/p${i + 1}`, `Slow ${i + 1}`])]);
for (let i = 1; i < SLOW_WATCH; i++) pages.set(`/slow/watch/p${i}`, [`Slow Watch ${i}`, `Slowly ${i}.`, []]);
for (let i = 1; i <= 4; i++) pages.set(`/slow/batch/b${i}`, [`Slow Batch ${i}`, `Batch page ${i}.`, []]);
pages.set('/iso/', ['Iso Home', 'Isolation.', [['/iso/a', 'A']]]);
pages.set('/iso/a', ['Iso A', 'A page.', []]);
pages.set('/plain/one', ['Plain One', 'First plain page.', []]);
pages.set('/plain/two', ['Plain Two', 'Second plain page.', []]);

let base = '';
const site = http.createServer((req, res) => {
  requests.push({ path: req.url, t: Date.now() });
  const u = new URL(req.url, 'http://x');
  if (u.pathname === '/robots.txt') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`User-agent: *\nDisallow: /docs/private/\n\nSitemap: ${base}/sitemap.xml\n`);
    return;
  }
  if (u.pathname === '/sitemap.xml') {
    const locs = ['/docs/hidden', '/docs/intro', '/blog/from-sitemap'];
    res.writeHead(200, { 'content-type': 'application/xml' });
    res.end(`<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` +
      locs.map((l) => `<url><loc>${base}${l}</loc></url>`).join('') + '</urlset>');
    return;
  }
  if (u.pathname === '/err/hang') {
    // Answers long after any scrape timeout of the tests; after() ends it.
    const timer = setTimeout(() => { res.writeHead(200, { 'content-type': 'text/html' }); res.end(html('Late', 'Too late.')); }, 15_000);
    res.on('close', () => clearTimeout(timer));
    return;
  }
  const page = pages.get(req.url) ?? pages.get(u.pathname);
  const answer = () => {
    if (!page) {
      res.writeHead(404, { 'content-type': 'text/html' });
      res.end(html('Not Found', 'Nothing here.'));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(html(...page));
  };
  if (u.pathname.startsWith('/slow/')) setTimeout(answer, SLOW_MS);
  else answer();
});
await new Promise((r) => site.listen(0, '127.0.0.1', r));
base = `http://127.0.0.1:${site.address().port}`;
after(() => new Promise((r) => {
  site.closeAllConnections();
  site.close(r);
}));

/** The site's requests since index `from` whose path starts with prefix. */
const hitsSince = (from, prefix = '/') => requests.slice(from).filter((r) => r.path.startsWith(prefix));
/** Requests for pages (not robots.txt, the sitemap or a favicon). */
const pageHits = (list) => list.filter((r) => !['/robots.txt', '/sitemap.xml', '/favicon.ico'].includes(r.path));

// ---------------------------------------------------------------------------
// The SDK's watcher uses the global WebSocket (or undici's). Node 20 has
// neither, and the SDK would then poll silently: give it the ws package's,
// wrapped so that the test sees what came over the socket.

/** Every socket the watcher opened: {url, protocols, messages: [type]}. */
const sockets = [];
const BaseWebSocket = globalThis.WebSocket ?? (await import('ws')).WebSocket;
class RecordingWebSocket extends BaseWebSocket {
  constructor(url, protocols) {
    super(url, protocols);
    const rec = { url: String(url), messages: [] };
    sockets.push(rec);
    this.addEventListener('message', (ev) => {
      try {
        const text = typeof ev.data === 'string' ? ev.data : Buffer.from(ev.data).toString('utf8');
        rec.messages.push(JSON.parse(text).type);
      } catch {
        rec.messages.push('(unparsable)');
      }
    });
  }
}
globalThis.WebSocket = RecordingWebSocket;

const sdk = (team = 'acme') => new Firecrawl({ apiKey: trawler.keys[team], apiUrl: trawler.apiUrl, maxRetries: 1, timeoutMs: 30_000 });

const sourceURLs = (docs) => docs.map((d) => d.metadata?.sourceURL);
const sorted = (a) => [...a].sort();
const dupes = (a) => a.filter((x, i) => a.indexOf(x) !== i);

/** Polls a crawl until it is no longer scraping; returns its status. */
async function finished(fc, id, ms = 60_000, kind = 'crawl') {
  return eventually(ms, async () => {
    const st = kind === 'crawl'
      ? await fc.getCrawlStatus(id, { autoPaginate: false })
      : await fc.getBatchScrapeStatus(id, { autoPaginate: false });
    return st.status !== 'scraping' ? st : null;
  }, `${kind} ${id} finishes`, 300);
}

// ---------------------------------------------------------------------------

const DOCS_EXPECTED = [
  '/docs/', '/docs/intro', '/docs/guide', '/docs/api', '/docs/faq',
  ...Array.from({ length: CHAIN }, (_, i) => `/docs/c${i + 1}`),
  '/docs/variant?v=1', '/docs/variant?v=2', '/docs/hidden',
];

test('crawl: waits for completion; one document per page in scope, sitemap page included, robots.txt and scope obeyed, each page fetched once', async () => {
  const fc = sdk();
  const from = requests.length;
  const st = await within(90_000, fc.crawl(`${base}/docs/`, { limit: 50, pollInterval: 1, scrapeOptions: { formats: ['markdown'] } }), 'fc.crawl /docs/');

  assert.equal(st.status, 'completed');
  const urls = sourceURLs(st.data);
  assert.deepEqual(dupes(urls), [], 'no page twice in the results');
  assert.deepEqual(sorted(urls), sorted(DOCS_EXPECTED.map((p) => base + p)), 'exactly the pages under /docs/ (linked or in the sitemap), nothing else');
  assert.equal(st.completed, DOCS_EXPECTED.length);
  assert.equal(st.total, DOCS_EXPECTED.length);
  assert.equal(st.data.length, DOCS_EXPECTED.length);
  for (const doc of st.data) {
    const path = doc.metadata.sourceURL.slice(base.length);
    const [title] = pages.get(path);
    assert.match(doc.markdown, new RegExp(`^# ${title}$`, 'm'), `Markdown of ${path}`);
    assert.equal(doc.metadata.statusCode, 200, path);
    assert.equal(doc.metadata.title, title, path);
  }

  const seen = pageHits(hitsSince(from));
  const paths = seen.map((r) => r.path);
  assert.deepEqual(dupes(paths), [], `every page was requested at most once: ${JSON.stringify(paths)}`);
  for (const p of ['/docs/private/secret', '/blog/post', '/blog/from-sitemap', '/docs/index.html']) {
    assert.ok(!paths.includes(p), `${p} was never requested (robots.txt, scope, or the same page as /docs/): ${JSON.stringify(paths)}`);
  }
  assert.ok(hitsSince(from, '/robots.txt').length >= 1, 'robots.txt was read');

  const errs = await fc.getCrawlErrors(st.id);
  assert.deepEqual(errs.errors, []);
  assert.deepEqual(errs.robotsBlocked, [`${base}/docs/private/secret`]);
});

test('crawl options: ignoreQueryParameters merges the variants, maxDiscoveryDepth and excludePaths narrow the crawl, sitemap skip', async () => {
  const fc = sdk();
  const st = await within(90_000, fc.crawl(`${base}/docs/`, {
    ignoreQueryParameters: true, maxDiscoveryDepth: 1, excludePaths: ['^/docs/faq$'], sitemap: 'skip', pollInterval: 1,
    scrapeOptions: { formats: ['markdown'] },
  }), 'fc.crawl /docs/ with options');
  assert.equal(st.status, 'completed');
  const paths = sourceURLs(st.data).map((u) => u.slice(base.length));
  const variants = paths.filter((p) => p.startsWith('/docs/variant'));
  assert.equal(variants.length, 1, `one of the two query variants: ${JSON.stringify(paths)}`);
  assert.deepEqual(sorted(paths.filter((p) => !p.startsWith('/docs/variant'))),
    sorted(['/docs/', '/docs/intro', '/docs/guide', '/docs/api', '/docs/c1']),
    'depth 0 and 1 only, without the excluded FAQ or the sitemap-only page');
  assert.equal(st.completed, 6);
});

test('crawl pagination: next links over raw HTTP, limit honoured, and the SDK auto-paginates to every document', async () => {
  const fc = sdk();
  const LIMIT = 105;
  const started = await fc.startCrawl(`${base}/many/`, { limit: LIMIT, sitemap: 'skip', scrapeOptions: { formats: ['markdown'] } });
  assert.match(started.id, /^[0-9a-f-]{36}$/);
  assert.equal(started.url, `${trawler.baseUrl}/v2/crawl/${started.id}`);

  const early = await fc.getCrawlStatus(started.id, { autoPaginate: false });
  assert.ok(['scraping', 'completed'].includes(early.status), early.status);

  const done = await finished(fc, started.id, 90_000);
  assert.equal(done.status, 'completed');
  assert.equal(done.completed, LIMIT, 'limit caps the crawl');
  assert.equal(done.total, LIMIT);
  // The server's page size is 100: without auto-pagination the SDK shows
  // the first page and the next link.
  assert.equal(done.data.length, 100);
  assert.ok(done.next, 'next is set when more documents follow');
  assert.match(done.next, new RegExp(`^${trawler.baseUrl.replace(/\./g, '\\.')}/v2/crawl/${started.id}\\?`));

  // Raw pages of 5 follow their next links to the end.
  let url = `/v2/crawl/${started.id}?limit=5`;
  const raw = [];
  let pagesRead = 0;
  for (;;) {
    const res = await trawler.api('acme', 'GET', url);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.status, 'completed');
    assert.ok(res.body.data.length <= 5, `page ${pagesRead} holds at most 5`);
    raw.push(...res.body.data);
    pagesRead++;
    if (!res.body.next) break;
    assert.ok(res.body.data.length === 5, 'only the last page is short');
    const next = new URL(res.body.next);
    assert.equal(next.origin, trawler.baseUrl, `next ${res.body.next} is absolute on the service`);
    assert.equal(next.searchParams.get('skip'), String(raw.length));
    assert.equal(next.searchParams.get('limit'), '5');
    url = next.pathname + next.search;
    assert.ok(pagesRead < 100, 'the next links end');
  }
  assert.equal(pagesRead, Math.ceil(LIMIT / 5));
  assert.equal(raw.length, LIMIT);
  assert.deepEqual(dupes(sourceURLs(raw)), []);

  const all = await fc.getCrawlStatus(started.id);
  assert.equal(all.status, 'completed');
  assert.equal(all.data.length, all.completed);
  assert.equal(all.next, null);
  const urls = sourceURLs(all.data);
  assert.deepEqual(dupes(urls), [], 'no duplicates across pages');
  assert.deepEqual(sorted(urls), sorted(sourceURLs(raw)), 'the SDK saw the same documents as the raw pages');
  assert.ok(urls.every((u) => u.startsWith(`${base}/many/`)));

  // A finished crawl cannot be cancelled.
  assert.equal(await fc.cancelCrawl(started.id), false);
  assert.equal((await fc.getCrawlStatus(started.id, { autoPaginate: false })).status, 'completed');
});

test('crawl errors: a page past the scrape timeout is SCRAPE_TIMEOUT; the robots.txt-blocked URL is listed', async () => {
  const fc = sdk();
  const from = requests.length;
  const started = await fc.startCrawl(`${base}/err/`, {
    crawlEntireDomain: true, includePaths: ['^/err', '^/docs/private'], sitemap: 'skip',
    scrapeOptions: { formats: ['markdown'], timeout: 3000 },
  });
  const t0 = Date.now();
  const st = await finished(fc, started.id, 60_000);
  assert.equal(st.status, 'completed', 'pages did succeed, so the crawl completed');
  assert.deepEqual(sorted(sourceURLs(st.data)), sorted([`${base}/err/`, `${base}/err/ok`]));
  assert.ok(Date.now() - t0 < 20_000, 'the hanging page did not hold the crawl much past its timeout');

  const errs = await fc.getCrawlErrors(started.id);
  assert.equal(errs.errors.length, 1, JSON.stringify(errs.errors));
  const [e] = errs.errors;
  assert.equal(e.url, `${base}/err/hang`);
  assert.equal(e.code, 'SCRAPE_TIMEOUT');
  assert.ok(e.id, 'the error has an id');
  assert.ok(!Number.isNaN(Date.parse(e.timestamp)), `timestamp ${e.timestamp} is a date`);
  assert.equal(typeof e.error, 'string');
  assert.ok(e.error.length > 0);
  assert.deepEqual(errs.robotsBlocked, [`${base}/docs/private/secret`]);
  assert.ok(!pageHits(hitsSince(from)).some((r) => r.path.startsWith('/docs/private/')), '/docs/private/ never requested');
});

test('active crawls and cancel: listed while running, cancelCrawl stops it, no page is fetched afterwards', async (t) => {
  const fc = sdk();
  const from = requests.length;
  const start = `${base}/slow/cancel/`;
  const started = await fc.startCrawl(start, { limit: 50, maxConcurrency: 2, sitemap: 'skip', scrapeOptions: { formats: ['markdown'], maxAge: 0 } });
  let cancelled = false;
  try {
    await eventually(20_000, () => hitsSince(from, '/slow/cancel/p').length >= 2, 'the crawl has started on the slow pages', 50);

    const active = await fc.getActiveCrawls();
    assert.equal(active.success, true);
    const mine = active.crawls.find((c) => c.id === started.id);
    assert.ok(mine, `getActiveCrawls lists ${started.id}: ${JSON.stringify(active.crawls)}`);
    assert.equal(mine.teamId, 'acme');
    assert.equal(mine.url, start);
    assert.deepEqual(mine.options?.scrapeOptions?.formats, ['markdown']);

    const ok = await within(20_000, fc.cancelCrawl(started.id), 'cancelCrawl');
    const tCancel = Date.now();
    cancelled = true;
    assert.equal(ok, true, 'cancelCrawl returns true');

    const st = await fc.getCrawlStatus(started.id);
    assert.equal(st.status, 'cancelled');
    assert.ok(st.completed < SLOW_CANCEL + 1, `not every page was scraped (${st.completed})`);
    const activeAfter = await fc.getActiveCrawls();
    assert.ok(!activeAfter.crawls.some((c) => c.id === started.id), 'no longer active');

    await sleep(2500);
    const late = hitsSince(from, '/slow/cancel/').filter((r) => r.t > tCancel);
    if (late.length) t.diagnostic(`requests after cancelCrawl resolved: ${JSON.stringify(late.map((r) => ({ path: r.path, ms: r.t - tCancel })))}`);
    const tooLate = late.filter((r) => r.t > tCancel + 1000);
    assert.deepEqual(tooLate.map((r) => r.path), [], 'no page requested more than 1 s after cancelCrawl resolved');
    const again = await fc.getCrawlStatus(started.id);
    assert.equal(again.status, 'cancelled');
    assert.equal(again.completed, st.completed, 'nothing completed after the cancel');
    // Cancelling twice just reports the state.
    assert.equal(await fc.cancelCrawl(started.id), true);
  } finally {
    if (!cancelled) await fc.cancelCrawl(started.id).catch(() => {});
  }
});

test('batch scrape: invalid URLs are skipped and reported, or refused with ignoreInvalidURLs false', async () => {
  const fc = sdk();
  const u1 = `${base}/plain/one`;
  const u2 = `${base}/plain/two`;
  const st = await within(60_000, fc.batchScrape([u1, u2, 'nope'], { options: { formats: ['markdown'] }, pollInterval: 1 }), 'batchScrape');
  assert.equal(st.status, 'completed');
  assert.equal(st.completed, 2);
  assert.equal(st.total, 2);
  assert.equal(st.data.length, 2);
  assert.deepEqual(sorted(sourceURLs(st.data)), sorted([u1, u2]));
  for (const d of st.data) assert.match(d.markdown, /^# Plain (One|Two)$/m);

  const started = await fc.startBatchScrape([u1, u2, 'nope'], { options: { formats: ['markdown'] } });
  assert.deepEqual(started.invalidURLs, ['nope']);
  assert.equal(started.url, `${trawler.baseUrl}/v2/batch/scrape/${started.id}`);
  const done = await finished(fc, started.id, 60_000, 'batch');
  assert.equal(done.status, 'completed');
  assert.equal(done.completed, 2);

  const strict = await fc.startBatchScrape([u1], { options: { formats: ['markdown'] }, ignoreInvalidURLs: false });
  assert.equal(strict.invalidURLs, undefined, 'invalidURLs is absent when ignoreInvalidURLs is false');
  await finished(fc, strict.id, 60_000, 'batch');

  await assert.rejects(fc.startBatchScrape([u1, 'nope'], { options: { formats: ['markdown'] }, ignoreInvalidURLs: false }), (err) => {
    assert.equal(err.status, 400, `${err.status} ${err.message}`);
    assert.match(err.message, /nope/);
    return true;
  });
});

/** Runs a watcher to its end; returns its events in order. */
async function watch(fc, id, kind) {
  const events = [];
  const w = fc.watcher(id, { kind, pollInterval: 1, timeout: 60 });
  w.on('document', (d) => events.push({ type: 'document', d, t: Date.now() }));
  w.on('done', (d) => events.push({ type: 'done', d, t: Date.now() }));
  w.on('error', (e) => events.push({ type: 'error', d: e, t: Date.now() }));
  await within(60_000, w.start(), `watcher ${kind} ${id}`);
  await sleep(200); // anything late would show up here
  w.close();
  return events;
}

test('watcher (crawl): documents arrive live over the WebSocket, then done', async () => {
  const fc = sdk();
  const socketsBefore = sockets.length;
  const started = await fc.startCrawl(`${base}/slow/watch/`, { limit: 20, maxConcurrency: 2, sitemap: 'skip', scrapeOptions: { formats: ['markdown'], maxAge: 0 } });
  const events = await watch(fc, started.id, 'crawl');

  assert.deepEqual(events.filter((e) => e.type === 'error').map((e) => e.d), [], 'no error event');
  const dones = events.filter((e) => e.type === 'done');
  assert.equal(dones.length, 1, 'one done event');
  assert.equal(events.at(-1).type, 'done', 'done comes last');
  assert.equal(dones[0].d.status, 'completed');
  const docs = events.filter((e) => e.type === 'document').map((e) => e.d);
  const final = await fc.getCrawlStatus(started.id);
  assert.equal(final.status, 'completed');
  assert.equal(final.completed, SLOW_WATCH);
  assert.equal(docs.length, final.completed, 'one document event per completed page');
  assert.equal(dones[0].d.completed, final.completed);
  assert.deepEqual(sorted(sourceURLs(docs)), sorted(sourceURLs(final.data)));
  for (const d of docs) assert.match(d.markdown, /^# Slow Watch/m);

  const mySockets = sockets.slice(socketsBefore);
  assert.equal(mySockets.length, 1, 'the watcher used one WebSocket');
  assert.equal(mySockets[0].url, `${trawler.baseUrl.replace(/^http/, 'ws')}/v2/crawl/${started.id}`);
  const types = mySockets[0].messages;
  assert.equal(types[0], 'catchup', `messages: ${types}`);
  assert.equal(types.at(-1), 'done', `messages: ${types}`);
  assert.ok(types.filter((x) => x === 'document').length >= 1, `some documents came live, not all in the catchup: ${types}`);
});

test('watcher (batch): documents then done over /v2/batch/scrape/{id}', async () => {
  const fc = sdk();
  const socketsBefore = sockets.length;
  const urls = [1, 2, 3, 4].map((i) => `${base}/slow/batch/b${i}`);
  const started = await fc.startBatchScrape(urls, { options: { formats: ['markdown'], maxAge: 0 }, maxConcurrency: 1 });
  const events = await watch(fc, started.id, 'batch');

  assert.deepEqual(events.filter((e) => e.type === 'error').map((e) => e.d), [], 'no error event');
  assert.equal(events.filter((e) => e.type === 'done').length, 1);
  assert.equal(events.at(-1).type, 'done');
  assert.equal(events.at(-1).d.status, 'completed');
  const docs = events.filter((e) => e.type === 'document').map((e) => e.d);
  assert.deepEqual(sorted(sourceURLs(docs)), sorted(urls));
  const mySockets = sockets.slice(socketsBefore);
  assert.equal(mySockets.length, 1);
  assert.equal(mySockets[0].url, `${trawler.baseUrl.replace(/^http/, 'ws')}/v2/batch/scrape/${started.id}`);
  assert.equal(mySockets[0].messages.at(-1), 'done', `messages: ${mySockets[0].messages}`);
  assert.ok(mySockets[0].messages.includes('document'), `messages: ${mySockets[0].messages}`);
});

test('map: linked pages and the sitemap-only page; search ranks; limit caps', async () => {
  const fc = sdk();
  const res = await within(60_000, fc.map(`${base}/docs/`), 'map');
  const urls = res.links.map((l) => l.url);
  assert.deepEqual(dupes(urls), [], 'no URL twice');
  for (const p of ['/docs/', '/docs/intro', '/docs/guide', '/docs/api', '/docs/faq', '/docs/c1', '/docs/hidden']) {
    assert.ok(urls.includes(base + p), `map has ${p}: ${JSON.stringify(urls)}`);
  }
  // ignoreQueryParameters defaults to true for map: the two variants are one.
  assert.deepEqual(urls.filter((u) => u.includes('/docs/variant')), [`${base}/docs/variant`]);
  const home = res.links.find((l) => l.url === `${base}/docs/`);
  assert.equal(home.title, 'Docs Home');

  const searched = await within(60_000, fc.map(`${base}/docs/`, { search: 'c3' }), 'map search');
  assert.equal(searched.links[0]?.url, `${base}/docs/c3`, JSON.stringify(searched.links.slice(0, 3)));

  const limited = await within(60_000, fc.map(`${base}/docs/`, { limit: 3 }), 'map limit');
  assert.equal(limited.links.length, 3);
});

test('map does not fetch pages robots.txt disallows', async () => {
  const fc = sdk();
  const from = requests.length;
  await within(60_000, fc.map(`${base}/docs/`, { sitemap: 'skip' }), 'map');
  const paths = pageHits(hitsSince(from)).map((r) => r.path);
  assert.ok(!paths.includes('/docs/private/secret'), `the map requested ${JSON.stringify(paths)}`);
});

test("team isolation: another team's crawl id is 404 everywhere", async () => {
  const acme = sdk('acme');
  const globex = sdk('globex');
  const started = await acme.startCrawl(`${base}/iso/`, { sitemap: 'skip', scrapeOptions: { formats: ['markdown'] } });
  const is404 = (what) => (err) => {
    assert.equal(err.status, 404, `${what}: ${err.status} ${err.message}`);
    return true;
  };
  await assert.rejects(globex.getCrawlStatus(started.id), is404('globex getCrawlStatus'));
  await assert.rejects(globex.getCrawlErrors(started.id), is404('globex getCrawlErrors'));
  await assert.rejects(globex.cancelCrawl(started.id), is404('globex cancelCrawl'));
  const theirs = await globex.getActiveCrawls();
  assert.ok(!theirs.crawls.some((c) => c.id === started.id), "globex's active list does not hold acme's crawl");
  // A crawl id is not a batch id either.
  await assert.rejects(acme.getBatchScrapeStatus(started.id), is404('acme getBatchScrapeStatus of a crawl id'));

  // globex's attempts did not disturb it.
  const done = await finished(acme, started.id, 60_000);
  assert.equal(done.status, 'completed');
  assert.deepEqual(sorted(sourceURLs(done.data)), sorted([`${base}/iso/`, `${base}/iso/a`]));
  await assert.rejects(globex.getCrawlStatus(started.id), is404('globex getCrawlStatus after completion'));

  // Nor can globex watch it.
  const events = await watch(globex, started.id, 'crawl');
  assert.ok(events.some((e) => e.type === 'error'), `globex's watcher gets an error: ${JSON.stringify(events.map((e) => e.type))}`);
  assert.ok(!events.some((e) => e.type === 'document'), 'and no document');
});
