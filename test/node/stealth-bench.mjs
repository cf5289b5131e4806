// The stealth bench phase's Node side (cmd/bench/stealthbench.go): the
// bot detectors' page through two baselines on the same Chromium, a plain
// Playwright-launched headless browser and Puppeteer with
// puppeteer-extra-plugin-stealth, and through Trawler sessions driven by
// Playwright and by Puppeteer.
//
// Usage: node stealth-bench.mjs SITE_URL CHROMIUM [PLAYWRIGHT_CDP_URL PUPPETEER_CDP_URL]
// Prints one JSON object: path → what the detectors found (or {error}).

import { chromium } from 'playwright-core';
import puppeteer from 'puppeteer-core';
import { addExtra } from 'puppeteer-extra';
import StealthPlugin from 'puppeteer-extra-plugin-stealth';
import { detect } from './stealth-site.mjs';

const [site, executablePath, playwrightCdp, puppeteerCdp] = process.argv.slice(2);
// The closed network's flags (docs/configuration.md); --no-sandbox only
// where Chromium refuses to start without it, as root.
const args = ['--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic',
  ...(process.getuid?.() === 0 ? ['--no-sandbox'] : [])];

const paths = {
  async playwright_headless() {
    const browser = await chromium.launch({ executablePath, headless: true, args });
    try {
      return await detect(await browser.newPage(), site);
    } finally {
      await browser.close();
    }
  },
  async puppeteer_stealth() {
    const pptr = addExtra(puppeteer);
    pptr.use(StealthPlugin());
    const browser = await pptr.launch({ executablePath, headless: true, args });
    try {
      return await detect(await browser.newPage(), site);
    } finally {
      await browser.close();
    }
  },
};
if (playwrightCdp) {
  paths.trawler_session_playwright = async () => {
    const browser = await chromium.connectOverCDP(playwrightCdp, { timeout: 15_000 });
    try {
      const context = browser.contexts()[0];
      return await detect(context.pages()[0] ?? await context.newPage(), site);
    } finally {
      await browser.close();
    }
  };
}
if (puppeteerCdp) {
  paths.trawler_session_puppeteer = async () => {
    const browser = await puppeteer.connect({ browserWSEndpoint: puppeteerCdp, defaultViewport: null });
    try {
      return await detect((await browser.pages())[0] ?? await browser.newPage(), site);
    } finally {
      await browser.disconnect();
    }
  };
}
const out = {};
for (const [name, run] of Object.entries(paths)) {
  try {
    out[name] = await run();
  } catch (e) {
    out[name] = { error: String(e) };
  }
}
console.log(JSON.stringify(out));
