// The bot detectors' page of test/stealth (detect.html, with BotD and
// fpscanner as this directory's node_modules hold them), served on
// loopback for the session tests and the bench's baselines.

import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const files = {
  '/detect.html': [join(here, '..', 'stealth', 'detect.html'), 'text/html; charset=utf-8'],
  '/botd.esm.js': [join(here, 'node_modules', '@fingerprintjs', 'botd', 'dist', 'botd.esm.js'), 'text/javascript'],
  '/fpScanner.es.js': [join(here, 'node_modules', 'fpscanner', 'dist', 'fpScanner.es.js'), 'text/javascript'],
};

/** Serves the page; resolves to {url, close}. */
export async function detectorSite() {
  const server = createServer(async (req, res) => {
    const f = files[new URL(req.url, 'http://x').pathname];
    if (!f) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': f[1] }).end(await readFile(f[0]));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) };
}

/** Opens the page in page (Playwright's or Puppeteer's) and returns what the detectors found. */
export async function detect(page, siteUrl) {
  await page.goto(`${siteUrl}/detect.html`);
  await page.waitForSelector('#done', { state: 'attached', timeout: 20_000 });
  return JSON.parse(await page.$eval('#out', (e) => e.textContent));
}
