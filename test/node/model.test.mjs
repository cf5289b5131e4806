// The model-backed half of the API through the Firecrawl SDK: json
// extraction with a schema, summary and question formats, crawl prompts and
// params-preview, extract jobs, token usage. The language model is
// test/fakellm, an OpenAI-compatible test server (no model weights can be
// had here); what is asserted is what Trawler controls: what it sends the
// model, and what it makes of each answer.

import assert from 'node:assert/strict';
import http from 'node:http';
import { after } from 'node:test';
import Firecrawl from '@mendable/firecrawl-js';
import { useFakeLLM, useTrawler, within } from './harness.mjs';

const llm = useFakeLLM();
const { trawler, test } = useTrawler(async () => ({ TRAWLER_ALLOW_PRIVATE_NETWORKS: 'true', ...(await llm.env()) }));

const page = (title, body, links = []) =>
  `<!doctype html><html><head><title>${title}</title></head><body><nav>Home | Shop | About</nav><main><h1>${title}</h1>` +
  `<p>${body}</p><ul>${links.map((l) => `<li><a href="${l}">${l}</a></li>`).join('')}</ul></main>` +
  '<footer>Copyright Chandlery Ltd</footer></body></html>';

const pages = {
  '/': page('Chandlery', 'Ropes, nets and lanterns for working boats.', ['/products/rope', '/products/lantern', '/about']),
  '/products/rope': page('Tarred rope', 'Hemp rope, tarred, 12 mm. Price: 18.50 EUR per metre. In stock.'),
  '/products/lantern': page('Storm lantern', 'Brass storm lantern, paraffin. Price: 64.00 EUR. Out of stock.'),
  '/about': page('About us', 'A family business on the quay since 1921.'),
};
const site = http.createServer((req, res) => {
  const body = pages[new URL(req.url, 'http://x').pathname];
  res.writeHead(body ? 200 : 404, { 'Content-Type': 'text/html; charset=utf-8' });
  res.end(body ?? '<h1>Not found</h1>');
});
await new Promise((r) => site.listen(0, '127.0.0.1', r));
after(() => site.close());
const base = `http://127.0.0.1:${site.address().port}`;

const sdk = (team = 'acme') => new Firecrawl({ apiKey: trawler.keys[team], apiUrl: trawler.apiUrl, maxRetries: 1, timeoutMs: 60_000 });
const lastRequests = async (n) => (await llm.requests()).slice(-n);
const userText = (r) => r.messages.filter((m) => m.role === 'user').map((m) => m.content).join('\n');

const productSchema = {
  type: 'object',
  properties: { name: { type: 'string' }, price: { type: 'number' }, inStock: { type: 'boolean' } },
  required: ['name', 'price'],
};

test('fc.scrape with a json schema returns the extraction from the page Markdown', async () => {
  await llm.reset();
  await llm.enqueue([{ content: JSON.stringify({ name: 'Tarred rope', price: 18.5, inStock: null }), promptTokens: 200, completionTokens: 20 }]);
  const doc = await within(60_000, sdk().scrape(`${base}/products/rope`, {
    formats: ['markdown', { type: 'json', schema: productSchema, prompt: 'the product on sale' }],
  }), 'scrape with json');
  assert.deepEqual(doc.json, { name: 'Tarred rope', price: 18.5 }, 'the optional property answered null is left out');
  assert.match(doc.markdown, /# Tarred rope/);
  assert.equal(doc.metadata.creditsUsed, 5, 'json adds 4 credits to the page');

  const [sent] = await lastRequests(1);
  assert.equal(sent.model, 'test-model');
  assert.equal(sent.responseFormat.type, 'json_schema');
  assert.equal(sent.responseFormat.jsonSchema.strict, true);
  assert.deepEqual(sent.responseFormat.jsonSchema.schema.required.sort(), ['inStock', 'name', 'price'], 'strict mode: every property required');
  assert.equal(sent.responseFormat.jsonSchema.schema.additionalProperties, false);
  const user = userText(sent);
  assert.match(user, /# Tarred rope/, 'the model reads Markdown');
  assert.match(user, /Request: the product on sale/);
  assert.doesNotMatch(user, /<p>|<html/, 'never HTML');
  assert.doesNotMatch(user, /Copyright Chandlery/, 'the main content only');
});

test('summary and question formats answer from the page', async () => {
  await llm.reset();
  await llm.enqueue([{ content: 'A brass storm lantern, out of stock.' }, { content: 'A brass storm lantern, out of stock.' }]);
  const doc = await within(60_000, sdk().scrape(`${base}/products/lantern`, {
    formats: ['summary', { type: 'question', question: 'Is the lantern in stock?' }],
  }), 'scrape with summary and question');
  assert.equal(doc.summary, 'A brass storm lantern, out of stock.');
  assert.equal(doc.answer, 'A brass storm lantern, out of stock.');
  const sent = await lastRequests(2);
  assert.ok(sent.some((r) => /Question: Is the lantern in stock\?/.test(userText(r))), 'the question is asked');
});

test('a schema the model keeps breaking leaves a warning and no json', async () => {
  await llm.reset();
  await llm.enqueue([{ content: '{"name": 5}' }, { content: 'Sure! Here is the JSON you asked for.' }]);
  const doc = await within(60_000, sdk().scrape(`${base}/products/rope`, {
    formats: ['markdown', { type: 'json', schema: productSchema }],
  }), 'scrape with json');
  assert.equal(doc.json, undefined);
  assert.match(doc.warning, /did not match the schema/);
  assert.match(doc.markdown, /Tarred rope/, 'the rest of the document is there');
});

test('fc.crawlParamsPreview and fc.crawl with a prompt', async () => {
  await llm.reset();
  const generated = JSON.stringify({ includePaths: ['^/products/.*', '^/$'], excludePaths: null, limit: 5, maxDiscoveryDepth: null,
    sitemap: 'skip', crawlEntireDomain: null, allowExternalLinks: null, allowSubdomains: null, ignoreQueryParameters: null,
    deduplicateSimilarURLs: null, delay: null });
  await llm.enqueue([{ content: generated }, { content: generated }]);
  const fc = sdk();
  const preview = await within(30_000, fc.crawlParamsPreview(`${base}/`, 'only the product pages'), 'params preview');
  assert.deepEqual(preview.includePaths, ['^/products/.*', '^/$']);
  assert.equal(preview.limit, 5);
  assert.equal(preview.sitemap, 'skip');

  const job = await within(90_000, fc.crawl(`${base}/`, { prompt: 'only the product pages', pollInterval: 1, timeout: 80 }), 'crawl with a prompt');
  assert.equal(job.status, 'completed');
  const urls = job.data.map((d) => new URL(d.metadata.url).pathname).sort();
  assert.deepEqual(urls, ['/', '/products/lantern', '/products/rope'], 'the prompt decided what was crawled');
});

test('fc.extract merges what the pages say into one result', async () => {
  await llm.reset();
  // Strict mode: the optional inStock is answered, null.
  const answer = { products: [{ name: 'Tarred rope', price: 18.5, inStock: null }, { name: 'Storm lantern', price: 64, inStock: null }] };
  await llm.enqueue([{ content: JSON.stringify(answer) }]);
  const schema = { type: 'object', properties: { products: { type: 'array', items: productSchema } }, required: ['products'] };
  const res = await within(120_000, sdk().extract({ urls: [`${base}/products/*`], schema, prompt: 'every product', showSources: true,
    pollInterval: 1, timeout: 100 }), 'extract');
  assert.equal(res.status, 'completed', JSON.stringify(res));
  assert.deepEqual(res.data, { products: [{ name: 'Tarred rope', price: 18.5 }, { name: 'Storm lantern', price: 64 }] });
  // Sources by field, as Firecrawl's: each value's page.
  assert.deepEqual(res.sources['products[0].name'], [`${base}/products/rope`], JSON.stringify(res.sources));
  assert.deepEqual(res.sources['products[1].name'], [`${base}/products/lantern`], JSON.stringify(res.sources));
  assert.equal((await llm.requests()).length, 1, 'one model call for all the pages');
  assert.ok(res.tokensUsed > 0, 'tokensUsed counts the extraction');
  const [sent] = await lastRequests(1);
  const user = userText(sent);
  assert.match(user, /Tarred rope/);
  assert.match(user, /Storm lantern/);
  assert.doesNotMatch(user, /About us/, 'only the pages under the wildcard');
});

test('token usage and activity are per team', async () => {
  const acme = await trawler.api('acme', 'GET', '/v2/team/token-usage');
  assert.equal(acme.status, 200);
  assert.ok(acme.body.data.usedTokens > 0);
  assert.equal(typeof acme.body.data.remainingTokens, 'number', 'no plan, and a number all the same: the SDKs require one');
  assert.equal(acme.body.data.unlimited, true);
  const viaSdk = await sdk('acme').getTokenUsage();
  assert.ok('billingPeriodStart' in viaSdk);
  const globex = await trawler.api('globex', 'GET', '/v2/team/token-usage');
  assert.equal(globex.body.data.usedTokens, 0, "another team's usage is its own");
  const act = await trawler.api('acme', 'GET', '/v2/team/activity?endpoint=scrape');
  assert.ok(act.body.data.some((e) => (e.modelCalls ?? []).some((c) => c.purpose === 'json')), 'model calls appear in the activity');
});

test('bad model-backed requests are 400s naming the field', async () => {
  const fc = sdk();
  const cases = [
    [{ formats: [{ type: 'json', schema: { type: 'object', properties: 7 } }] }, /formats\[0\]\.schema is not a valid JSON schema/],
    [{ formats: [{ type: 'question', question: 'x'.repeat(10_001) }] }, /formats\[0\]\.question must be at most 10000 characters/],
    [{ formats: [{ type: 'summary', style: 'short' }] }, /formats\[0\]\.style is not a member/],
  ];
  for (const [opts, want] of cases) {
    await assert.rejects(fc.scrape(`${base}/`, opts), (err) => {
      assert.equal(err.status, 400, `${err.status} ${err.message}`);
      assert.match(err.message, want);
      return true;
    });
  }
  await assert.rejects(fc.crawlParamsPreview(`${base}/`, 'p'.repeat(10_001)), (err) => {
    assert.equal(err.status, 400, `${err.status} ${err.message}`);
    assert.match(err.message, /prompt must be at most 10000 characters/);
    return true;
  });
  const noSchemaNorPrompt = await trawler.api('acme', 'POST', '/v2/extract', { urls: [`${base}/`] });
  assert.equal(noSchemaNorPrompt.status, 400);
});
