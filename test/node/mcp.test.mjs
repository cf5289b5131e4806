// firecrawl-mcp, Firecrawl's own MCP server, pointed at Trawler as a
// self-hosted Firecrawl (FIRECRAWL_API_URL) and driven by the MCP SDK's
// client over stdio, as an agent's host runs it: its tools are listed, and
// scrape, map, crawl with its status, search (with the newer fields it
// always sends) and parse (a local file) answer from Trawler.

import assert from 'node:assert/strict';
import http from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { after, before } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { useTrawler, within } from './harness.mjs';

const { trawler, test } = useTrawler({ TRAWLER_ALLOW_PRIVATE_NETWORKS: 'true' });

const page = (title, body, links = []) => `<!doctype html><html lang="en"><head><title>${title}</title></head><body><main>` +
  `<h1>${title}</h1><p>${body}</p><ul>${links.map((l) => `<li><a href="${l}">${l}</a></li>`).join('')}</ul></main></body></html>`;
const pages = {
  '/': page('Quayside Chandlery', 'Rope, sails and brass fittings for every boat on the quay.', ['/blog/', '/blog/oakum', '/blog/tar']),
  '/blog/': page('Chandlery Notes', 'What the chandler writes about.', ['/blog/oakum', '/blog/tar']),
  '/blog/oakum': page('Caulking With Oakum', 'Oakum is tarred fibre driven into the seams of a wooden hull to keep it watertight.'),
  '/blog/tar': page('Stockholm Tar', 'Pine tar protects standing rigging and wooden blocks from rot.'),
};
const site = http.createServer((req, res) => {
  const body = pages[new URL(req.url, 'http://x').pathname];
  res.writeHead(body ? 200 : 404, { 'content-type': 'text/html; charset=utf-8' });
  res.end(body ?? page('Not Found', 'Nothing here.'));
});
await new Promise((r) => site.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${site.address().port}`;

let client;
let dir;
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'trawler-mcp-'));
  const server = createRequire(import.meta.url).resolve('firecrawl-mcp/dist/index.js');
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [server],
    // Only what the server needs: no proxy or key of the machine's.
    env: { PATH: process.env.PATH, HOME: dir, FIRECRAWL_API_URL: trawler.apiUrl, FIRECRAWL_API_KEY: trawler.keys.acme },
    stderr: 'pipe',
  });
  client = new Client({ name: 'trawler-test', version: '1.0.0' });
  await within(30_000, client.connect(transport), 'firecrawl-mcp starts');
});
after(async () => {
  await client?.close();
  await rm(dir, { recursive: true, force: true });
  await new Promise((r) => {
    site.closeAllConnections();
    site.close(r);
  });
});

/** Calls tool with args; its JSON answer, or a failure naming the tool. */
async function call(name, args, ms = 60_000) {
  const res = await within(ms, client.callTool({ name, arguments: args }, undefined, { timeout: ms }), name);
  const text = res.content?.find((c) => c.type === 'text')?.text ?? '';
  assert.ok(!res.isError, `${name} failed: ${text}`);
  return res.structuredContent ?? JSON.parse(text);
}

test('firecrawl-mcp lists its tools', async () => {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  for (const want of ['firecrawl_scrape', 'firecrawl_map', 'firecrawl_crawl', 'firecrawl_check_crawl_status', 'firecrawl_search',
    'firecrawl_parse', 'firecrawl_extract', 'firecrawl_credit_usage']) {
    assert.ok(names.includes(want), `${want} among ${names.join(', ')}`);
  }
});

test('firecrawl_scrape and firecrawl_map answer from Trawler', async () => {
  const doc = await call('firecrawl_scrape', { url: `${base}/blog/oakum`, formats: ['markdown', 'links'] });
  assert.match(doc.markdown, /^# Caulking With Oakum/m);
  assert.equal(doc.metadata.statusCode, 200);
  // The deprecated query format, which the tool's queryOptions build: a
  // direct quote is the page's passage, without a model.
  const quoted = await call('firecrawl_scrape', { url: `${base}/blog/tar`, formats: ['query'],
    queryOptions: { prompt: 'what protects rigging', mode: 'directQuote' } });
  assert.match(quoted.highlights, /Pine tar protects standing rigging/);

  const map = await call('firecrawl_map', { url: `${base}/`, sitemap: 'skip' });
  const urls = map.links.map((l) => (typeof l === 'string' ? l : l.url));
  for (const p of ['/blog/oakum', '/blog/tar']) assert.ok(urls.includes(base + p), `map has ${p}: ${urls.join(', ')}`);
});

test('firecrawl_crawl keeps what includePaths asks for, and its status reads the same', async () => {
  // From the home page, /blog/* only: the start page gives its links and
  // is left out.
  const crawled = await call('firecrawl_crawl', { url: `${base}/`, includePaths: ['^/blog/.+'], sitemap: 'skip', limit: 10,
    pollInterval: 1 }, 120_000);
  assert.equal(crawled.status, 'completed', JSON.stringify(crawled).slice(0, 500));
  const paths = crawled.data.map((d) => new URL(d.metadata.sourceURL).pathname).sort();
  assert.deepEqual(paths, ['/blog/oakum', '/blog/tar']);

  const started = await trawler.api('acme', 'POST', '/v2/crawl', { url: `${base}/`, sitemap: 'skip', limit: 10 });
  assert.equal(started.status, 200, JSON.stringify(started.body));
  let status;
  for (const deadline = Date.now() + 60_000; Date.now() < deadline;) {
    status = await call('firecrawl_check_crawl_status', { id: started.body.id });
    if (status.status !== 'scraping') break;
  }
  assert.equal(status.status, 'completed', JSON.stringify(status).slice(0, 500));
  assert.equal(status.data.length, 4, 'every page of the site');
  assert.equal(status.completed, 4);
});

test('firecrawl_search: the fields it always sends are accepted, and what has no provider here says so', async () => {
  await call('firecrawl_scrape', { url: `${base}/blog/tar`, formats: ['markdown'] }); // in the index now
  // firecrawl-mcp adds sources web and alexandria, domainTools and
  // toolDetail to every search of a session with a key.
  const res = await call('firecrawl_search', { query: 'pine tar rigging' });
  assert.equal(res.success, true, JSON.stringify(res));
  assert.ok(res.data.web.some((r) => r.url === `${base}/blog/tar`), `the scraped page is found: ${JSON.stringify(res.data.web)}`);
  assert.deepEqual(res.data.alexandria, [], 'no Alexandria provider: an empty list');
  assert.match(res.warning, /alexandria/);
  assert.match(res.warning, /domainTools/);
  // Highlights (the default) describe a result by the passage of the query's words.
  const hit = res.data.web.find((r) => r.url === `${base}/blog/tar`);
  assert.match(hit.description, /Pine tar protects standing rigging/);

  const webOnly = await call('firecrawl_search', { query: 'pine tar', sources: ['web'], domainTools: false, highlights: false });
  assert.equal(webOnly.warning ?? null, null, `nothing unserved was asked for: ${webOnly.warning}`);
});

test('firecrawl_parse reads a local file through /v2/parse', async () => {
  const file = path.join(dir, 'manifest.html');
  await writeFile(file, page('Cargo Manifest', 'Twelve coils of manila rope and four barrels of Stockholm tar.'));
  const doc = await call('firecrawl_parse', { filePath: file, formats: ['markdown'] });
  const data = doc.data ?? doc;
  assert.match(data.markdown, /Twelve coils of manila rope/);

  const usage = await call('firecrawl_credit_usage', {});
  assert.equal(typeof usage.remainingCredits, 'number');
});
