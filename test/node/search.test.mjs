// POST /v2/search through the Firecrawl SDK: a team crawls a small site
// served on loopback, then finds its pages in the embedded index with the
// query operators, the image and news sources and scraped results; another
// team finds nothing of it; zero-data-retention and uncached scrapes are
// never findable, an ordinary scrape is at once; bad requests are refused
// naming the field.

import assert from 'node:assert/strict';
import http from 'node:http';
import zlib from 'node:zlib';
import { after } from 'node:test';
import Firecrawl from '@mendable/firecrawl-js';
import { useTrawler, within } from './harness.mjs';

const { trawler, test } = useTrawler({
  TRAWLER_ALLOW_PRIVATE_NETWORKS: 'true',
  TRAWLER_TEAM_FEATURES: 'acme:zeroDataRetention,globex:searchAnon',
});

// ---------------------------------------------------------------------------
// The test site. 127.0.0.1 and localhost are two hosts of one server: the
// site proper lives on 127.0.0.1, a partner page on localhost links back.

/** A solid-colour RGB PNG of width × height. */
function png(width, height, [r, g, b]) {
  const row = Buffer.alloc(1 + width * 3);
  for (let x = 0; x < width; x++) row.set([r, g, b], 1 + x * 3);
  const raw = Buffer.concat(Array.from({ length: height }, () => row));
  const chunk = (type, data) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(zlib.crc32(body));
    return Buffer.concat([len, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr), chunk('IDAT', zlib.deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}
const images = { '/img/big.png': png(800, 600, [200, 30, 30]), '/img/tiny.png': png(100, 100, [20, 20, 200]) };

const LIGHTHOUSE_DATE = '2026-10-01T10:00:00Z';
const FERRY_DATE = '2025-03-15T08:00:00Z';

const html = ({ title, body, head = '', extra = '', links = [] }) =>
  `<!doctype html><html lang="en"><head><title>${title}</title>${head}</head><body><main><h1>${title}</h1>` +
  `<p>${body}</p>${extra}<ul>${links.map(([href, text]) => `<li><a href="${href}">${text}</a></li>`).join('')}</ul>` +
  '</main></body></html>';

let base = ''; // http://127.0.0.1:PORT
let other = ''; // http://localhost:PORT

/** path → page; on 127.0.0.1 unless the path is /partner. */
const pages = {
  '/': () => html({
    title: 'Saltmarsh Harbour',
    body: 'Welcome to Saltmarsh harbour. Read our articles and guides.',
    // Link texts are words of the page too: these share none with the
    // pages they name.
    links: [['/blog/lighthouse', 'First article'], ['/blog/ferry', 'Second article'], ['/docs/knots', 'First guide'],
      ['/docs/ropes', 'Second guide'], ['/docs/tides', 'Third guide'], ['/notes.txt', 'Notes'], [`${other}/partner`, 'Friends']],
  }),
  '/blog/lighthouse': () => html({
    title: 'Lighthouse Restoration Finished',
    head: `<meta property="article:published_time" content="${LIGHTHOUSE_DATE}">`,
    body: 'The harbour lighthouse shines again after the restoration. Volunteers repainted the lantern room.',
    extra: '<img src="/img/big.png" width="800" height="600" alt="a red lighthouse at dusk">' +
      '<img src="/img/tiny.png" width="100" height="100" alt="tiny icon">',
  }),
  '/blog/ferry': () => html({
    title: 'Ferry Timetable Changes',
    head: `<meta property="article:published_time" content="${FERRY_DATE}"><meta name="description" content="Spring sailings from Saltmarsh">`,
    body: 'The harbour ferry timetable changes in spring. Mackerel boats leave at dawn.',
  }),
  '/docs/knots': () => html({ title: 'Knot Guide', body: 'Tie a sheet bend to join two ropes of different thickness.' }),
  '/docs/ropes': () => html({ title: 'Rope Care', body: 'Keep the sheet dry and never bend a wet rope too sharply.' }),
  '/docs/tides': () => html({
    title: 'Tide Tables',
    body: 'Check the tide tables before you sail. Mackerel follow the timetable of the tides.',
  }),
  '/partner': () => html({
    title: 'Partner Marina',
    body: 'Our partner marina sits beside Saltmarsh harbour.',
    links: [[`${base}/`, 'Saltmarsh Harbour']],
  }),
  // Never linked: scraped one by one.
  '/zdr/page': () => html({ title: 'Retention Test', body: 'The zorbulon word is in a zero data retention scrape.' }),
  '/nocache/page': () => html({ title: 'Cache Test', body: 'The glimmerwick word is in a scrape kept out of the cache.' }),
  '/fresh/page': () => html({ title: 'Fresh Test', body: 'The plonkadoodle word is in an ordinary scrape.' }),
};

const site = http.createServer((req, res) => {
  const u = new URL(req.url, 'http://x');
  const onPartnerHost = (req.headers.host ?? '').startsWith('localhost:');
  if (images[u.pathname]) {
    res.writeHead(200, { 'content-type': 'image/png' });
    res.end(images[u.pathname]);
    return;
  }
  if (u.pathname === '/notes.txt' && !onPartnerHost) {
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    res.end('Deckhand notes: mackerel were plentiful this week.\n');
    return;
  }
  const page = pages[u.pathname];
  if (!page || onPartnerHost !== (u.pathname === '/partner')) {
    res.writeHead(404, { 'content-type': 'text/html' });
    res.end(html({ title: 'Not Found', body: 'Nothing here.' }));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  res.end(page());
});
await new Promise((r) => site.listen(0, '127.0.0.1', r));
base = `http://127.0.0.1:${site.address().port}`;
other = `http://localhost:${site.address().port}`;
after(() => new Promise((r) => {
  site.closeAllConnections();
  site.close(r);
}));

// ---------------------------------------------------------------------------

const sdk = (team = 'acme') => new Firecrawl({ apiKey: trawler.keys[team], apiUrl: trawler.apiUrl, maxRetries: 1, timeoutMs: 30_000 });

/** The pages of a result list: path for 127.0.0.1, the full URL for others. */
const where = (list) => (list ?? []).map((e) => (e.url.startsWith(base) ? e.url.slice(base.length) : e.url));
const sorted = (a) => [...a].sort();

/** fc.search as team, bounded in time. */
const search = (query, opts = {}, team = 'acme') => within(30_000, sdk(team).search(query, opts), `search ${query}`);

/** Raw POST /v2/search as team: {status, body}. */
const post = (body, team = 'acme') => trawler.api(team, 'POST', '/v2/search', body);

// The site is crawled and the partner page scraped once, by the first test
// that needs them; every later test reuses the index they filled.
let indexed;
function siteIndexed() {
  indexed ??= (async () => {
    const fc = sdk('acme');
    const st = await within(60_000, fc.crawl(`${base}/`, { limit: 20, sitemap: 'skip', pollInterval: 1 }), 'crawl the site');
    assert.equal(st.status, 'completed', JSON.stringify(st));
    const crawled = st.data.map((d) => d.metadata.sourceURL.slice(base.length));
    for (const p of ['/', '/blog/lighthouse', '/blog/ferry', '/docs/knots', '/docs/ropes', '/docs/tides', '/notes.txt']) {
      assert.ok(crawled.includes(p), `the crawl took ${p}: ${JSON.stringify(crawled)}`);
    }
    const partner = await within(30_000, fc.scrape(`${other}/partner`, { formats: ['markdown'] }), 'scrape the partner page');
    assert.match(partner.markdown, /partner marina/);
  })();
  return indexed;
}

test('web search: response shape, body words, phrases and exclusions', async () => {
  await siteIndexed();

  // The wire shape of spec 4.6, without formats: url, title, description
  // and position only.
  const raw = await post({ query: 'lighthouse' });
  assert.equal(raw.status, 200, JSON.stringify(raw.body));
  assert.deepEqual(sorted(Object.keys(raw.body)), ['creditsUsed', 'data', 'id', 'success', 'warning']);
  assert.equal(raw.body.success, true);
  assert.equal(raw.body.warning, null);
  assert.match(raw.body.id, /^[0-9a-f-]{36}$/);
  assert.ok(Number.isInteger(raw.body.creditsUsed) && raw.body.creditsUsed > 0, `creditsUsed ${raw.body.creditsUsed}`);
  assert.deepEqual(Object.keys(raw.body.data), ['web']);
  assert.deepEqual(where(raw.body.data.web), ['/blog/lighthouse']);
  const [hit] = raw.body.data.web;
  assert.deepEqual(sorted(Object.keys(hit)), ['description', 'position', 'title', 'url']);
  assert.equal(hit.url, `${base}/blog/lighthouse`);
  assert.equal(hit.title, 'Lighthouse Restoration Finished');
  assert.match(hit.description, /lighthouse shines again/i);
  assert.equal(hit.position, 1);

  // The words together rank first; the phrase finds only them together.
  const apart = await search('sheet bend');
  assert.deepEqual(where(apart.web), ['/docs/knots', '/docs/ropes']);
  assert.deepEqual(apart.web.map((e) => e.position), [1, 2]);
  const phrase = await search('"sheet bend"');
  assert.deepEqual(where(phrase.web), ['/docs/knots']);

  const mackerel = await search('mackerel');
  assert.deepEqual(sorted(where(mackerel.web)), ['/blog/ferry', '/docs/tides', '/notes.txt']);
  const notFerry = await search('mackerel -ferry');
  assert.deepEqual(sorted(where(notFerry.web)), ['/docs/tides', '/notes.txt']);
  const notPhrase = await search('sheet -"sheet bend"');
  assert.deepEqual(where(notPhrase.web), ['/docs/ropes']);
});

test('web search: site:, inurl:, intitle:, filetype: and related:', async () => {
  await siteIndexed();
  const cases = [
    ['harbour site:localhost', [`${other}/partner`]],
    ['harbour site:127.0.0.1', ['/', '/blog/ferry', '/blog/lighthouse']],
    ['harbour -site:127.0.0.1', [`${other}/partner`]],
    ['inurl:docs', ['/docs/knots', '/docs/ropes', '/docs/tides']],
    ['harbour inurl:blog', ['/blog/ferry', '/blog/lighthouse']],
    ['timetable', ['/blog/ferry', '/docs/tides']],
    ['intitle:timetable', ['/blog/ferry']],
    ['allintitle: tide tables', ['/docs/tides']],
    ['mackerel filetype:html', ['/blog/ferry', '/docs/tides']],
    ['mackerel filetype:txt', ['/notes.txt']],
    ['mackerel -filetype:txt', ['/blog/ferry', '/docs/tides']],
    // Pages that link to 127.0.0.1, not 127.0.0.1's own pages.
    ['related:127.0.0.1', [`${other}/partner`]],
  ];
  for (const [query, want] of cases) {
    const res = await search(query);
    assert.deepEqual(sorted(where(res.web)), sorted(want), query);
  }
  const only = await search('harbour', { includeDomains: ['localhost'] });
  assert.deepEqual(where(only.web), [`${other}/partner`], 'includeDomains');
  const but = await search('harbour', { excludeDomains: ['localhost'] });
  assert.deepEqual(sorted(where(but.web)), ['/', '/blog/ferry', '/blog/lighthouse'], 'excludeDomains');
});

test("highlights: on by default a result's passage of the query's words, off the page's own description", async () => {
  await siteIndexed();
  const ferry = (res) => res.web.find((e) => e.url === `${base}/blog/ferry`);
  assert.match(ferry(await search('mackerel')).description, /Mackerel boats leave at dawn/);
  assert.equal(ferry(await search('mackerel', { highlights: false })).description, 'Spring sailings from Saltmarsh');
  // A scraped result is described by its page's highlights.
  const scraped = await search('mackerel', { scrapeOptions: { formats: ['markdown'] } });
  assert.match(ferry(scraped).description, /Mackerel boats leave at dawn\./);
});

test("Firecrawl's newer search fields: served where they can be, else named in the warning", async () => {
  await siteIndexed();
  const res = await post({ query: 'lighthouse', sources: ['web', { type: 'alexandria' }], domainTools: true, toolDetail: 'full',
    enterprise: ['default'], safe: true });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(where(res.body.data.web), ['/blog/lighthouse']);
  assert.deepEqual(res.body.data.alexandria, []);
  for (const named of ['alexandria', 'domainTools', 'safe']) assert.match(res.body.warning, new RegExp(named), named);
  // The developer index is the GitHub category here: none of this site.
  const dev = await post({ query: 'harbour', categories: ['developer'] });
  assert.equal(dev.status, 200, JSON.stringify(dev.body));
  assert.deepEqual(dev.body.data.web, []);
  assert.match(dev.body.warning, /developer/);
});

test('web search with scrapeOptions formats: each result carries its own Markdown', async () => {
  await siteIndexed();
  const res = await search('sheet bend', { scrapeOptions: { formats: ['markdown'] } });
  assert.deepEqual(where(res.web), ['/docs/knots', '/docs/ropes']);
  const [knots, ropes] = res.web;
  assert.match(knots.markdown, /^# Knot Guide$/m);
  assert.match(knots.markdown, /Tie a sheet bend to join two ropes/);
  assert.match(ropes.markdown, /^# Rope Care$/m);
  assert.match(ropes.markdown, /Keep the sheet dry/);
  for (const e of res.web) {
    assert.equal(e.metadata?.sourceURL, e.url, `metadata.sourceURL of ${e.url}`);
    assert.equal(e.metadata?.statusCode, 200, `metadata.statusCode of ${e.url}`);
  }
});

test('images: entries with their size; larger: and imagesize: filter by it', async () => {
  await siteIndexed();
  const big = { imageUrl: `${base}/img/big.png`, imageWidth: 800, imageHeight: 600, url: `${base}/blog/lighthouse` };
  const tiny = { imageUrl: `${base}/img/tiny.png`, imageWidth: 100, imageHeight: 100, url: `${base}/blog/lighthouse` };
  const pick = (e) => ({ imageUrl: e.imageUrl, imageWidth: e.imageWidth, imageHeight: e.imageHeight, url: e.url });

  const all = await search('lighthouse', { sources: ['images'] });
  assert.equal(all.web, undefined, 'only the images array is asked for');
  assert.equal(all.images.length, 2, JSON.stringify(all.images));
  assert.deepEqual(all.images[0], { ...big, title: 'a red lighthouse at dusk', position: 1 },
    'the image whose alt text holds the word comes first');
  assert.deepEqual({ ...pick(all.images[1]), position: all.images[1].position }, { ...tiny, position: 2 });

  const larger = await search('lighthouse larger:500x500', { sources: ['images'] });
  assert.deepEqual(larger.images.map(pick), [big]);
  const exact = await search('imagesize:100x100', { sources: [{ type: 'images' }] });
  assert.deepEqual(exact.images.map(pick), [tiny]);
});

test('news: the pages with a published date, newest first; tbs bounds the dates', async () => {
  await siteIndexed();
  const res = await search('harbour', { sources: ['news'] });
  assert.deepEqual(where(res.news), ['/blog/lighthouse', '/blog/ferry'], 'no undated page, newest first');
  assert.deepEqual(res.news.map((e) => Date.parse(e.date)), [Date.parse(LIGHTHOUSE_DATE), Date.parse(FERRY_DATE)]);
  assert.deepEqual(res.news.map((e) => e.position), [1, 2]);
  assert.equal(res.news[0].title, 'Lighthouse Restoration Finished');
  assert.match(res.news[1].snippet, /ferry timetable/i);

  // A page's date is its published date, else when it was fetched (now).
  const ranged = await search('harbour', { tbs: 'cdr:1,cd_min:01/01/2026,cd_max:12/31/2026' });
  assert.deepEqual(sorted(where(ranged.web)), sorted(['/', '/blog/lighthouse', `${other}/partner`]));
  const byDate = await search('harbour', { tbs: 'sbd:1', includeDomains: ['127.0.0.1'] });
  assert.deepEqual(where(byDate.web), ['/', '/blog/lighthouse', '/blog/ferry'], 'sorted by date, newest first');
});

test("another team finds nothing of the team's pages, only its own", async () => {
  await siteIndexed();
  for (const [query, opts] of [['lighthouse', {}], ['harbour', {}], ['inurl:docs', {}], ['lighthouse', { sources: ['images'] }],
    ['harbour', { sources: ['news'] }]]) {
    const res = await post({ query, ...opts }, 'globex');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const source = opts.sources?.[0] ?? 'web';
    assert.deepEqual(res.body.data[source], [], `globex: ${query} in ${source}`);
  }

  // globex's own scrape of one of the pages is globex's to find, and only
  // that one.
  const own = await within(30_000, sdk('globex').scrape(`${base}/docs/knots`, { formats: ['markdown'] }), 'globex scrape');
  assert.match(own.markdown, /sheet bend/);
  const plain = await post({ query: 'sheet bend' }, 'globex');
  assert.deepEqual(where(plain.body.data.web), ['/docs/knots']);
  assert.equal(plain.body.creditsUsed, 2);

  // An anonymized search (globex has searchAnon) finds the same, costs 2
  // credits per 10 results like an ordinary one (spec 4.6; only zdr costs
  // 10), and is not in the activity log.
  const anon = await post({ query: 'bend sheet', enterprise: ['anon'] }, 'globex');
  assert.equal(anon.status, 200, JSON.stringify(anon.body));
  assert.deepEqual(where(anon.body.data.web), ['/docs/knots']);
  assert.equal(anon.body.creditsUsed, 2, 'anon: 2 credits per 10 results');
  const activity = await trawler.api('globex', 'GET', '/v2/team/activity?endpoint=search');
  assert.equal(activity.status, 200, JSON.stringify(activity.body));
  const targets = activity.body.data.map((a) => a.target);
  assert.ok(targets.includes('sheet bend'), `the ordinary search is logged: ${JSON.stringify(targets)}`);
  assert.ok(!targets.includes('bend sheet'), `the anon search is not: ${JSON.stringify(targets)}`);
});

test('a zero-data-retention or uncached scrape is never findable; an ordinary one is at once', async () => {
  const fc = sdk('acme');
  const zdr = await within(30_000, fc.scrape(`${base}/zdr/page`, { formats: ['markdown'], zeroDataRetention: true }), 'zdr scrape');
  assert.match(zdr.markdown, /zorbulon/);
  const uncached = await within(30_000, fc.scrape(`${base}/nocache/page`, { formats: ['markdown'], storeInCache: false }), 'uncached scrape');
  assert.match(uncached.markdown, /glimmerwick/);
  const fresh = await within(30_000, fc.scrape(`${base}/fresh/page`, { formats: ['markdown'] }), 'ordinary scrape');
  assert.match(fresh.markdown, /plonkadoodle/);

  const found = await search('plonkadoodle');
  assert.deepEqual(where(found.web), ['/fresh/page'], 'the ordinary scrape is found right after it returned');
  assert.equal(found.warning, undefined, 'no warning that the index is behind');
  // The ordinary scrape was indexed after the two others: they had their
  // chance to be.
  assert.deepEqual((await search('zorbulon')).web, [], 'zero data retention');
  assert.deepEqual((await search('glimmerwick')).web, [], 'storeInCache: false');
});

test('bad requests are refused naming the field', async () => {
  const ok = await post({ query: 'x'.repeat(500) });
  assert.equal(ok.status, 200, `a 500-character query is allowed: ${JSON.stringify(ok.body)}`);

  const cases = [
    ['501-character query', { query: 'x'.repeat(501) }, 'query', /query/],
    ['limit 0', { query: 'harbour', limit: 0 }, 'limit', /limit/],
    ['limit 101', { query: 'harbour', limit: 101 }, 'limit', /limit/],
    ['includeDomains with excludeDomains', { query: 'harbour', includeDomains: ['a.com'], excludeDomains: ['b.com'] }, /^(in|ex)cludeDomains$/, /includeDomains and excludeDomains/],
    ['unknown tbs', { query: 'harbour', tbs: 'qdr:z' }, 'tbs', /qdr:z/],
    ['malformed imagesize:', { query: 'imagesize:big' }, 'query', /imagesize/],
    ['unknown source', { query: 'harbour', sources: ['video'] }, 'sources', /video/],
    ['unknown toolDetail', { query: 'harbour', toolDetail: 'everything' }, 'toolDetail', /compact, summary or full/],
    ['threatProtection', { query: 'harbour', threatProtection: { mode: 'normal' } }, 'threatProtection', /threatProtection/],
    ['developer with another category', { query: 'harbour', categories: ['developer', 'pdf'] }, 'categories', /developer/],
    ['a key nobody defines', { query: 'harbour', domainToolz: true }, 'domainToolz', /domainToolz/],
  ];
  for (const [name, body, field, message] of cases) {
    const res = await post(body);
    assert.equal(res.status, 400, `${name}: ${JSON.stringify(res.body)}`);
    assert.equal(res.body.success, false, name);
    assert.equal(res.body.code, 'BAD_REQUEST', name);
    assert.match(res.body.error, message, name);
    assert.ok(Array.isArray(res.body.details) && res.body.details.some((d) => (typeof field === 'string' ? d.path[0] === field : field.test(d.path[0]))),
      `${name}: details name ${field}: ${JSON.stringify(res.body.details)}`);
  }

  const zdr = await post({ query: 'harbour', enterprise: ['zdr'] });
  assert.equal(zdr.status, 403, JSON.stringify(zdr.body));
  assert.equal(zdr.body.success, false);
  assert.equal(zdr.body.code, 'FEATURE_NOT_ENABLED');
  assert.match(zdr.body.error, /zdr/);
});
