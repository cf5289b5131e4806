// A session's browser, driven by Playwright and by Puppeteer as their
// users do, reads as an ordinary Chrome to two open-source bot detectors
// (BotD, fpscanner), but for what the client's own library does over CDP:
// both enable the Runtime domain, which fpscanner's hasCDP sees (the
// README's Browser sessions section says so).

import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import puppeteer from 'puppeteer-core';
import { useTrawler, within } from './harness.mjs';
import { detect, detectorSite } from './stealth-site.mjs';

const { trawler, test } = useTrawler({ TRAWLER_ALLOW_PRIVATE_NETWORKS: 'true' });

function assertOrdinary(d, client) {
  assert.equal(d.botdError ?? d.fpError, undefined, `${client}: the detectors failed`);
  assert.equal(d.botd.bot, false, `${client}: BotD ${JSON.stringify(d.botd)}`);
  // hasCDP is the client's Runtime.enable; nothing else may show.
  assert.deepEqual(d.signals.filter((s) => !s.startsWith('hasCDP:')), [], `${client}: fpscanner's signals`);
  assert.doesNotMatch(d.userAgent, /Headless/, `${client}: user agent`);
  assert.equal(d.workerUserAgent, d.userAgent, `${client}: a worker's user agent`);
  assert.ok(d.brands?.includes('Chromium'), `${client}: userAgentData.brands ${JSON.stringify(d.brands)}`);
  assert.notEqual(d.timezone, 'UTC', `${client}: time zone`);
  assert.doesNotMatch(d.webgl ?? '', /SwiftShader/, `${client}: WebGL renderer`);
  assert.deepEqual(d.screen.slice(0, 2), [1920, 1080], `${client}: screen`);
}

// A recorded session too: its recorder lives in an isolated world, which
// none of the page's checks can see.
for (const recording of [false, true]) test(`a ${recording ? 'recorded ' : ''}session driven by Playwright looks like an ordinary Chrome`, async () => {
  const site = await detectorSite();
  const s = await trawler.createSession('acme', { ttl: 300, activityTtl: 120, recording });
  assert.equal(s.recording, recording);
  let browser;
  try {
    browser = await within(20_000, chromium.connectOverCDP(s.cdpUrl, { timeout: 15_000 }), 'connectOverCDP');
    const context = browser.contexts()[0];
    const page = context.pages()[0] ?? await context.newPage();
    assertOrdinary(await within(30_000, detect(page, site.url), 'detectors'), recording ? 'Playwright, recorded' : 'Playwright');
  } finally {
    await browser?.close().catch(() => {});
    await trawler.cleanup('acme', s.id);
    await site.close();
  }
});

for (const recording of [false, true]) test(`a ${recording ? 'recorded ' : ''}session driven by Puppeteer (defaultViewport: null) looks like an ordinary Chrome`, async () => {
  const site = await detectorSite();
  const s = await trawler.createSession('acme', { ttl: 300, activityTtl: 120, recording });
  let browser;
  try {
    // Puppeteer's own default viewport is 800x600 in a 1920x1080 screen,
    // which detectors flag; null keeps the window's.
    browser = await within(20_000, puppeteer.connect({ browserWSEndpoint: s.cdpUrl, defaultViewport: null }), 'puppeteer.connect');
    const page = (await browser.pages())[0] ?? await browser.newPage();
    assertOrdinary(await within(30_000, detect(page, site.url), 'detectors'), recording ? 'Puppeteer, recorded' : 'Puppeteer');
  } finally {
    await browser?.disconnect().catch(() => {});
    await trawler.cleanup('acme', s.id);
    await site.close();
  }
});
