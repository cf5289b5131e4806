// The Firecrawl SDK's parse against Trawler: uploaded documents come back as
// Markdown with their structure, and every refusal reaches the SDK as the
// status and code a user can branch on. A document URL scraped with the SDK
// goes through the same converters.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after } from 'node:test';
import { fileURLToPath } from 'node:url';
import Firecrawl from '@mendable/firecrawl-js';
import { useTrawler, within } from './harness.mjs';

const { trawler, test } = useTrawler({ TRAWLER_ALLOW_PRIVATE_NETWORKS: 'true' });
const testdata = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../parse/testdata');
const fixture = (name) => readFileSync(path.join(testdata, name));
const sdk = () => new Firecrawl({ apiKey: trawler.keys.acme, apiUrl: trawler.apiUrl, maxRetries: 1, timeoutMs: 60_000 });

// A site serving the fixtures with honest and with vague content types.
const site = http.createServer((req, res) => {
  const [name, type] = {
    '/files/q3-report.pdf': ['report.pdf', 'application/pdf'],
    '/download?id=7': ['report.pdf', 'application/pdf'],
    '/files/sales.pdf': ['table.pdf', 'application/octet-stream'],
    '/files/notes.docx': ['office-rich.docx', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'],
    '/files/figures.xlsx': ['sheets.xlsx', 'application/octet-stream'],
    '/files/ferry.rtf': ['legacy.rtf', 'text/rtf'],
  }[req.url] ?? [];
  if (!name) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { 'content-type': type });
  res.end(fixture(name));
});
await new Promise((r) => site.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${site.address().port}`;
after(() => new Promise((r) => site.close(r)));

test('SDK parse: a PDF report as Markdown with headings, lists and metadata', async () => {
  const doc = await within(60_000, sdk().parse({ filename: 'q3-report.pdf', data: fixture('report.pdf') },
    { formats: ['markdown', 'links'] }), 'parse');
  assert.match(doc.markdown, /^# Harbour Water Quality Report$/m);
  assert.match(doc.markdown, /^## Key findings$/m);
  assert.match(doc.markdown, /^- Dissolved oxygen stayed above/m);
  assert.match(doc.markdown, /^1\. Add two stations/m);
  assert.equal(doc.metadata.sourceURL, 'q3-report.pdf');
  assert.equal(doc.metadata.title, 'Harbour Water Quality Report');
  assert.equal(doc.metadata.author, 'Marta Quinn');
  assert.equal(doc.metadata.numPages, 1);
});

test('SDK parse: a table PDF as a pipe table, HTML and a Blob upload', async () => {
  const doc = await within(60_000, sdk().parse({ filename: 'sales.pdf', data: new Blob([fixture('table.pdf')]) },
    { formats: ['markdown', 'html'] }), 'parse');
  assert.match(doc.markdown, /^\| Region \| Q1 units \| Q2 units \| Change \|$/m);
  assert.match(doc.html, /<th>Region<\/th>/);
});

test('SDK parse: office documents, each with its structure', async () => {
  const cases = [
    ['notes.docx', 'office-rich.docx', [/^## Equipment$/m, /^- Probes\n {4}- Steel probes$/m, /^3\. Calibrate the gauge$/m, /\[the project site\]\(https:\/\/example\.org\/method\?id=7\)/, /^\| North \| 120 cm \| 5 January \|$/m]],
    ['notes.odt', 'office-rich.odt', [/^## Equipment$/m, /^\[\^1\]: Measured at low tide\.$/m]],
    ['ferry.doc', 'legacy.doc', [/^# Lake Ferry Guide$/m, /Zürich — 東京 ✓/, /^\| East \| 09:30 \| 19:30 \|$/m]],
    ['ferry.rtf', 'legacy.rtf', [/^## Boarding$/m, /^2\. Show your ticket$/m]],
    ['figures.xlsx', 'sheets.xlsx', [/^## Sales$/m, /^\| North \| 1,234,567 \| 3\.14 \| 2024-03-15 \| 15 Mar 2024 \| 25% \| \$1,234\.50 \| a \\\| b \|$/m]],
    ['figures.xls', 'sheets.xls', [/^## Résumé$/m, /^\| Greek \| Ελληνικά \|$/m]],
  ];
  for (const [filename, file, patterns] of cases) {
    const doc = await within(60_000, sdk().parse({ filename, data: fixture(file) }, { formats: ['markdown', 'links'] }), `parse ${filename}`);
    for (const p of patterns) assert.match(doc.markdown, p, `${filename}:\n${doc.markdown}`);
    assert.equal(doc.metadata.sourceURL, filename);
  }
});

test('SDK parse: refusals carry their status and code', async () => {
  const cases = [
    [{ filename: 'setup.exe', data: Buffer.from('MZ') }, {}, 415, 'UNSUPPORTED_FILE_TYPE', /extension/],
    [{ filename: 'letter.docx', data: fixture('report.pdf') }, {}, 415, 'UNSUPPORTED_FILE_TYPE', /content is PDF/],
    // (The SDK itself refuses waitFor, actions, mobile, location and cache
    // options before sending; the server refuses them too: service tests.)
    [{ filename: 'q3.pdf', data: fixture('report.pdf') }, { timeout: 5 }, 400, 'BAD_REQUEST', /options\.timeout must be between 1000 and 300000/],
    [{ filename: 'q3.pdf', data: fixture('report.pdf') }, { includeTags: ['<<'] }, 400, 'BAD_REQUEST', /options\.includeTags\[0\] must be a CSS selector/],
    [{ filename: 'q3.pdf', data: fixture('report.pdf') }, { zeroDataRetention: true }, 403, 'FEATURE_NOT_ENABLED', /zeroDataRetention/],
    [{ filename: 'broken.pdf', data: fixture('report.pdf').subarray(0, 4000) }, {}, 422, 'PARSE_ERROR', /parsing the document/],
  ];
  for (const [file, opts, status, code, msg] of cases) {
    await assert.rejects(within(60_000, sdk().parse(file, opts), `parse ${file.filename}`), (err) => {
      assert.equal(err.status, status, `${file.filename}: ${err.status} ${err.message}`);
      assert.equal(err.code, code, `${file.filename}: ${err.code}`);
      assert.match(err.message, msg);
      return true;
    });
  }
});

test('SDK parse: a 51 MB upload is refused with 413', async () => {
  const big = Buffer.alloc(51 << 20, 0x20);
  big.write('%PDF-1.7\n');
  await assert.rejects(within(120_000, sdk().parse({ filename: 'big.pdf', data: big }), 'parse big'), (err) => {
    assert.equal(err.status, 413, `${err.status} ${err.message}`);
    assert.equal(err.code, 'FILE_TOO_LARGE');
    return true;
  });
});

test('SDK scrape of document URLs: by content type, by extension, and parsers [] for the PDF itself', async () => {
  let doc = await within(60_000, sdk().scrape(`${base}/download?id=7`, { formats: ['markdown'] }), 'scrape pdf');
  assert.match(doc.markdown, /^# Harbour Water Quality Report$/m);
  assert.equal(doc.metadata.numPages, 1);
  doc = await within(60_000, sdk().scrape(`${base}/files/sales.pdf`, { formats: ['markdown'] }), 'scrape octet-stream pdf');
  assert.match(doc.markdown, /\| Region \| Q1 units \|/);
  doc = await within(60_000, sdk().scrape(`${base}/files/notes.docx`, { formats: ['markdown', 'links'] }), 'scrape docx');
  assert.match(doc.markdown, /^## Equipment$/m);
  assert.ok(doc.links.includes('https://example.org/method?id=7'), JSON.stringify(doc.links));
  doc = await within(60_000, sdk().scrape(`${base}/files/figures.xlsx`, { formats: ['markdown'] }), 'scrape octet-stream xlsx');
  assert.match(doc.markdown, /^## Sales$/m);
  doc = await within(60_000, sdk().scrape(`${base}/files/ferry.rtf`, { formats: ['markdown'] }), 'scrape rtf');
  assert.match(doc.markdown, /^# Lake Ferry Guide$/m);
  doc = await within(60_000, sdk().scrape(`${base}/files/q3-report.pdf`, { formats: ['markdown'], parsers: [] }), 'scrape pdf base64');
  assert.ok(Buffer.from(doc.markdown, 'base64').subarray(0, 5).equals(Buffer.from('%PDF-')));
});
