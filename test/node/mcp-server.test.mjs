// Trawler's own MCP server (/v2/mcp), driven by the MCP TypeScript SDK's
// client over the streamable HTTP transport, as an agent's host connects
// to Firecrawl's hosted one: its tools, a scrape, a crawl followed with
// progress notifications, a cancelled crawl, a session Playwright attaches
// to, and two teams kept apart.

import assert from 'node:assert/strict';
import http from 'node:http';
import { after } from 'node:test';
import { chromium } from 'playwright-core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { eventually, useTrawler, within } from './harness.mjs';

const { trawler, test } = useTrawler({ TRAWLER_ALLOW_PRIVATE_NETWORKS: 'true' });

// A site of linked pages; /slow/ pages take 300 ms each, and link on.
const site = http.createServer((req, res) => {
  const { pathname } = new URL(req.url, 'http://x');
  const n = Number(pathname.split('/').pop()) || 0;
  const slow = pathname.startsWith('/slow/');
  setTimeout(() => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><html><head><title>Page ${n}</title></head><body><main><h1>Harbour page ${n}</h1>` +
      `<p>${'Nets, ropes and tides. '.repeat(20)}</p><a href="${slow ? '/slow' : '/p'}/${2 * n + 1}">a</a> <a href="${slow ? '/slow' : '/p'}/${2 * n + 2}">b</a></main></body></html>`);
  }, slow ? 300 : 0);
});
await new Promise((r) => site.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${site.address().port}`;
after(() => new Promise((r) => {
  site.closeAllConnections();
  site.close(r);
}));

async function connect(team) {
  const client = new Client({ name: 'trawler-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${trawler.apiUrl}/v2/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${trawler.keys[team]}` } },
  });
  await within(20_000, client.connect(transport), `MCP connect as ${team}`);
  return client;
}

/** Calls a tool; its answer (the API's JSON) and whether it is an error. */
async function call(client, name, args, options = {}) {
  const res = await client.callTool({ name, arguments: args }, CallToolResultSchema, { timeout: 120_000, ...options });
  return { body: JSON.parse(res.content[0].text), isError: !!res.isError };
}

test('the MCP server: tools, scrape, a crawl with progress, a cancelled crawl, a session, two teams apart', async () => {
  const acme = await connect('acme');
  const globex = await connect('globex');
  try {
    const { tools } = await acme.listTools();
    const names = tools.map((t) => t.name);
    for (const want of ['firecrawl_scrape', 'firecrawl_map', 'firecrawl_crawl', 'firecrawl_check_crawl_status', 'firecrawl_cancel_crawl',
      'firecrawl_search', 'firecrawl_extract', 'firecrawl_parse', 'firecrawl_batch_scrape', 'firecrawl_browser_create', 'firecrawl_credit_usage']) {
      assert.ok(names.includes(want), `${want} among ${names.join(', ')}`);
    }

    let r = await call(acme, 'firecrawl_scrape', { url: `${base}/p/0`, formats: ['markdown'] });
    assert.equal(r.isError, false, JSON.stringify(r.body));
    assert.match(r.body.data.markdown, /^# Harbour page 0/m);
    r = await call(acme, 'firecrawl_scrape', { formats: ['markdown'] });
    assert.equal(r.isError, true, 'a scrape without a url');
    assert.equal(r.body.code, 'BAD_REQUEST');
    assert.match(JSON.stringify(r.body), /url/);

    const progress = [];
    r = await call(acme, 'firecrawl_crawl', { url: `${base}/p/0`, limit: 4, crawlEntireDomain: true, wait: true }, { onprogress: (p) => progress.push(p) });
    assert.equal(r.isError, false, JSON.stringify(r.body));
    assert.equal(r.body.status, 'completed');
    assert.equal(r.body.completed, 4);
    assert.ok(progress.length > 0, 'progress notifications during the crawl');
    assert.equal(progress.at(-1).progress, 4);

    // A session, its cdpUrl attached to by Playwright.
    r = await call(acme, 'firecrawl_browser_create', { ttl: 120 });
    assert.equal(r.isError, false, JSON.stringify(r.body));
    const session = r.body;
    const browser = await chromium.connectOverCDP(session.cdpUrl, { timeout: 15_000 });
    try {
      const page = browser.contexts()[0].pages()[0] ?? await browser.contexts()[0].newPage();
      await page.goto(`${base}/p/7`);
      r = await call(acme, 'firecrawl_browser_execute', { id: session.id, code: 'document.title' });
      assert.equal(r.body.value, 'Page 7');
      r = await call(globex, 'firecrawl_browser_execute', { id: session.id, code: 'document.title' });
      assert.equal(r.isError, true, 'globex ran code in acme\'s session');
    } finally {
      await browser.close();
      await call(acme, 'firecrawl_browser_delete', { id: session.id });
    }

    // A crawl whose call is aborted is cancelled; globex can neither read nor cancel it.
    const abort = new AbortController();
    const long = call(acme, 'firecrawl_crawl', { url: `${base}/slow/0`, limit: 300, crawlEntireDomain: true, wait: true }, { signal: abort.signal });
    let id;
    await eventually(20_000, async () => {
      const active = await trawler.api('acme', 'GET', '/v2/crawl/active');
      id = active.body.crawls?.find((c) => c.url.startsWith(`${base}/slow/`))?.id;
      return id;
    }, 'the slow crawl to start');
    r = await call(globex, 'firecrawl_check_crawl_status', { id });
    assert.equal(r.isError, true, 'globex read acme\'s crawl');
    r = await call(globex, 'firecrawl_cancel_crawl', { id });
    assert.equal(r.isError, true, 'globex cancelled acme\'s crawl');
    abort.abort();
    await assert.rejects(long);
    await eventually(20_000, async () => {
      const st = await trawler.api('acme', 'GET', `/v2/crawl/${id}`);
      return st.body.status === 'cancelled';
    }, 'the crawl to be cancelled');
  } finally {
    await acme.close();
    await globex.close();
  }
});
