// Drives the docker-compose rig (deploy/docker-compose.yml) the way a user
// would, for deploy/compose_test.go: a Firecrawl SDK scrape, then a
// Playwright session with a profile saved to MinIO and read back by a second
// session. Settings: TRAWLER_URL, TRAWLER_KEY, SITE_URL. Exits non-zero on
// any failure.

import assert from 'node:assert/strict';
import Firecrawl from '@mendable/firecrawl-js';
import { chromium } from 'playwright-core';

const { TRAWLER_URL: apiUrl, TRAWLER_KEY: apiKey, SITE_URL: site } = process.env;
const fc = new Firecrawl({ apiKey, apiUrl, maxRetries: 1, timeoutMs: 60_000 });

const doc = await fc.scrape(`${site}/`, { formats: ['markdown'] });
assert.match(doc.markdown, /Hello from the rig/, 'the SDK scrape through the rig');

const s1 = await fc.browser({ profile: { name: 'rig', saveChanges: true } });
let browser = await chromium.connectOverCDP(s1.cdpUrl, { timeout: 30_000 });
let page = browser.contexts()[0].pages()[0] ?? await browser.contexts()[0].newPage();
await page.goto(`${site}/login`);
assert.match(await page.textContent('body'), /welcome/);
await browser.close();
await fc.deleteBrowser(s1.id);

const s2 = await fc.browser({ profile: { name: 'rig', saveChanges: false } });
browser = await chromium.connectOverCDP(s2.cdpUrl, { timeout: 30_000 });
page = browser.contexts()[0].pages()[0] ?? await browser.contexts()[0].newPage();
await page.goto(`${site}/`);
assert.match(await page.textContent('body'), /signed in/, 'the profile, saved in MinIO, signs the second session in');
await browser.close();
await fc.deleteBrowser(s2.id);
console.log('rig: SDK scrape, Playwright session and profile round trip through MinIO all worked');
