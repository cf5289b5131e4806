// browserExecute as the Firecrawl SDK calls it, in each language: js
// (evaluated in the session's page), node (Playwright's browser, context and
// page attached to the session) and bash (the SDK's default: a shell with
// the `browser` command), with Firecrawl's answer shape (stdout, result,
// stderr, exitCode, killed); the timeout, the output cap, python refused,
// another team's session refused, every run in the activity log.
//
// The sandbox is a local node process here (TRAWLER_EXECUTE=node), and a
// container per run under make test-docker (TRAWLER_EXECUTE=docker).

import assert from 'node:assert/strict';
import http from 'node:http';
import path from 'node:path';
import { after, before } from 'node:test';
import Firecrawl from '@mendable/firecrawl-js';
import { useTrawler, within } from './harness.mjs';

const docker = process.env.TRAWLER_TEST_RUNTIME === 'docker';
const { trawler, test } = useTrawler({
  TRAWLER_EXECUTE: docker ? 'docker' : 'node',
  TRAWLER_EXECUTE_PLAYWRIGHT: path.resolve('node_modules/playwright-core'),
  TRAWLER_ALLOW_PRIVATE_NETWORKS: 'true',
});

// The loopback test site the session's browser visits.
let site;
let siteUrl;
before(async () => {
  site = http.createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html' });
    res.end('<title>Execute test site</title><h1>Hello from the site</h1>');
  });
  await new Promise((resolve) => site.listen(0, '127.0.0.1', resolve));
  siteUrl = `http://127.0.0.1:${site.address().port}/`;
});
after(() => site?.close());

const sdk = (team) => new Firecrawl({ apiKey: trawler.keys[team], apiUrl: trawler.apiUrl, maxRetries: 1, timeoutMs: 60_000 });

// One session for the file's tests.
let session;
async function acmeSession() {
  session ??= await within(30_000, sdk('acme').browser({ ttl: 600, activityTtl: 300 }), 'fc.browser');
  return session;
}
after(async () => { if (session) await trawler.cleanup('acme', session.id); });

test('each language answers in the SDK shape', async () => {
  const fc = sdk('acme');
  const { id } = await acmeSession();

  // bash is the SDK's default language.
  const bash = await within(60_000, fc.browserExecute(id, { code: `browser open ${siteUrl} && browser text h1` }), 'bash');
  assert.deepEqual(bash, { success: true, stdout: 'Hello from the site\n', result: 'Hello from the site\n', stderr: '', exitCode: 0, killed: false, truncated: false });

  const node = await within(60_000, fc.browserExecute(id, {
    language: 'node',
    code: `console.log(page.url()); console.error('to stderr'); return await page.title();`,
  }), 'node');
  assert.deepEqual(node, { success: true, stdout: `${siteUrl}\nExecute test site\n`, result: `${siteUrl}\nExecute test site\n`, stderr: 'to stderr\n', exitCode: 0, killed: false, truncated: false });

  const js = await within(30_000, fc.browserExecute(id, { language: 'js', code: 'document.querySelector("h1").textContent' }), 'js');
  assert.deepEqual(js, { success: true, stdout: 'Hello from the site', result: 'Hello from the site', value: 'Hello from the site', stderr: '', exitCode: 0, killed: false });

  const failed = await within(60_000, fc.browserExecute(id, { language: 'node', code: 'throw new Error("boom from node")' }), 'node throws');
  assert.equal(failed.success, false);
  assert.equal(failed.exitCode, 1);
  assert.match(failed.stderr, /^Error: boom from node\n/);
  assert.equal(failed.error, 'the code exited with code 1: Error: boom from node');
});

test('a run past its timeout is killed, and output past 1 MB is cut', async () => {
  const fc = sdk('acme');
  const { id } = await acmeSession();
  const began = Date.now();
  const slow = await within(30_000, fc.browserExecute(id, { code: 'echo started; sleep 60', timeout: 2 }), 'slow bash');
  assert.ok(Date.now() - began < 10_000, `the killed run answered after ${Date.now() - began} ms`);
  assert.equal(slow.killed, true, JSON.stringify(slow));
  assert.equal(slow.success, false);
  assert.equal(slow.exitCode, 137);
  assert.equal(slow.result, 'started\n');
  assert.equal(slow.error, 'execution timed out after 2s and was killed');

  const big = await within(60_000, fc.browserExecute(id, { code: "head -c 1500000 /dev/zero | tr '\\0' x" }), 'big output');
  assert.equal(big.success, true);
  assert.equal(big.truncated, true);
  const marker = `\n[output truncated by Trawler: ${1_500_000 - (1 << 20)} more bytes not shown; the limit is ${1 << 20} bytes]\n`;
  assert.equal(big.stdout.length, (1 << 20) + marker.length);
  assert.ok(big.stdout.endsWith(marker), big.stdout.slice(-200));
  assert.equal(big.result, big.stdout);
});

test('python and unknown languages are refused, and so is another team', async () => {
  const { id } = await acmeSession();
  await assert.rejects(sdk('acme').browserExecute(id, { language: 'python', code: 'print(1)' }), (err) => {
    assert.equal(err.status, 400, err.message);
    assert.match(err.message, /language python is not supported: the languages are js .*, node .* and bash/);
    return true;
  });
  await assert.rejects(sdk('globex').browserExecute(id, { code: 'browser url' }), (err) => {
    assert.equal(err.status, 404, `globex's bash in acme's session: ${err.status} ${err.message}`);
    return true;
  });
  await assert.rejects(sdk('globex').browserExecute(id, { language: 'node', code: 'return 1' }), (err) => {
    assert.equal(err.status, 404, `globex's node in acme's session: ${err.status} ${err.message}`);
    return true;
  });

  // Every run is in acme's activity log, none in globex's.
  const acme = await trawler.api('acme', 'GET', '/v2/team/activity?endpoint=interact&limit=100');
  assert.equal(acme.status, 200);
  const runs = acme.body.data.filter((e) => e.id === id).length;
  assert.ok(runs >= 6, `acme's activity has ${runs} interact entries for the session, want one per run (6)`);
  const globex = await trawler.api('globex', 'GET', '/v2/team/activity?endpoint=interact&limit=100');
  assert.equal(globex.body.data.length, 0, JSON.stringify(globex.body));
});
