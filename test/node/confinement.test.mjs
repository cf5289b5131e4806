// An attacker holding one team's key and a session: the four ways past the
// CDP proxy's filter that a tester found, and the commands that reached the
// host through them, replayed with Playwright, Puppeteer and raw WebSocket
// frames. Each must be answered by Trawler ("Trawler: ..."), the page
// left where it was, and nothing of the host shown.

import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import puppeteer from 'puppeteer-core';
import { rawWebSocket, useTrawler, within, sleep } from './harness.mjs';

const { trawler, test } = useTrawler();

const fileURLs = ['file:///etc/passwd', 'fi\tle:///etc/passwd', 'file:///etc/passwd#%zz', 'FILE:///etc/shadow', 'view-source:file:///etc/passwd'];

async function refused(promise, what) {
  await assert.rejects(within(15_000, promise, what), /Trawler: /, `${what} was not refused by Trawler`);
}

test('Playwright: file URLs, exposeDevToolsProtocol, another proxy and host paths are refused', async () => {
  const s = await trawler.createSession('globex');
  let browser;
  try {
    browser = await within(20_000, chromium.connectOverCDP(s.cdpUrl, { timeout: 15_000 }), 'connectOverCDP');
    const context = browser.contexts()[0];
    const page = context.pages()[0] ?? await context.newPage();
    await page.setContent('<title>start</title><p>start</p>');
    const cdp = await context.newCDPSession(page);
    for (const url of fileURLs) await refused(cdp.send('Page.navigate', { url }), `Page.navigate ${JSON.stringify(url)}`);
    // Go's decoder matches keys without case; Chromium does not: both
    // spellings at once are refused rather than guessed at.
    await refused(cdp.send('Page.navigate', { url: 'file:///etc/passwd', URL: 'about:blank' }), 'url and URL');
    await refused(page.goto('file:///etc/passwd'), 'page.goto(file:)');
    const root = await browser.newBrowserCDPSession();
    const { targetInfos } = await root.send('Target.getTargets');
    const target = targetInfos.find((t) => t.type === 'page').targetId;
    await refused(root.send('Target.exposeDevToolsProtocol', { targetId: target, bindingName: 'cdp' }), 'Target.exposeDevToolsProtocol');
    await refused(root.send('Target.createBrowserContext', { proxyServer: 'direct://' }), 'a context with proxyServer direct://');
    await refused(root.send('SystemInfo.getProcessInfo'), 'SystemInfo.getProcessInfo');
    await refused(root.send('Target.createTarget', { url: 'file:///etc/hostname' }), 'Target.createTarget file:');
    await refused(cdp.send('DOM.setFileInputFiles', { files: ['/etc/shadow'], backendNodeId: 1 }), 'a host file for a file input');
    // Playwright's own proxy option asks for a context with proxyServer.
    await assert.rejects(browser.newContext({ proxy: { server: 'direct://' } }), /Trawler: /);

    assert.equal(await page.title(), 'start', 'the page moved');
    assert.equal(await page.evaluate(() => typeof window.cdp), 'undefined', 'the page got a DevTools binding');
    // Everyday Playwright still works on the same session.
    await page.setContent('<h1>still here</h1>');
    assert.equal(await page.locator('h1').textContent(), 'still here');
    const other = await browser.newContext();
    const p2 = await other.newPage();
    await p2.goto('data:text/html,<title>data ok</title>');
    assert.equal(await p2.title(), 'data ok');
    await other.close();
  } finally {
    await browser?.close().catch(() => {});
    await trawler.cleanup('globex', s.id);
  }
});

test('Puppeteer: the same commands are refused, and a download path is the browser\'s own', async () => {
  const s = await trawler.createSession('globex');
  let browser;
  try {
    browser = await within(20_000, puppeteer.connect({ browserWSEndpoint: s.cdpUrl, protocolTimeout: 15_000 }), 'puppeteer.connect');
    const [page] = await browser.pages();
    await page.setContent('<title>start</title>');
    const cdp = await page.createCDPSession();
    for (const url of fileURLs) await refused(cdp.send('Page.navigate', { url }), `Page.navigate ${JSON.stringify(url)}`);
    await refused(cdp.send('Page.navigate', { url: 'file:///etc/passwd', URL: 'about:blank' }), 'url and URL');
    await refused(page.goto('file:///etc/passwd'), 'page.goto(file:)');
    const root = await browser.target().createCDPSession();
    await refused(root.send('Target.exposeDevToolsProtocol', { targetId: page.target()._targetId, bindingName: 'cdp' }), 'Target.exposeDevToolsProtocol');
    await refused(root.send('Target.createBrowserContext', { proxyServer: 'direct://' }), 'proxyServer direct://');
    await refused(root.send('Target.sendMessageToTarget', { message: '{"id":1,"method":"Page.navigate","params":{"url":"file:///etc/passwd"}}', targetId: page.target()._targetId }), 'Target.sendMessageToTarget');
    await refused(browser.createBrowserContext({ proxyServer: 'direct://' }).then((c) => c.newPage()), 'createBrowserContext({proxyServer})');
    // A download directory of the client's is replaced, not refused.
    await root.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: '/var/lib/anything' });
    assert.equal(await page.title(), 'start', 'the page moved');
    await page.setContent('<h1>still here</h1>');
    assert.equal(await page.$eval('h1', (e) => e.textContent), 'still here');
  } finally {
    await browser?.disconnect().catch(() => {});
    await trawler.cleanup('globex', s.id);
  }
});

test('raw frames: an escaped key, a NUL byte that would split a frame, and duplicate keys are refused', async () => {
  const s = await trawler.createSession('globex');
  const ws = await rawWebSocket(s.cdpUrl);
  try {
    assert.equal(ws.status, 101, JSON.stringify(ws.body));
    const reply = async (id) => {
      for (let i = 0; i < 150; i++) {
        for (const m of ws.messages) {
          const j = JSON.parse(m);
          if (j.id === id) return j;
        }
        await sleep(100);
      }
      throw new Error(`no reply to ${id}: ${ws.messages.slice(-3).join(' | ')}`);
    };
    let next = 1;
    const call = async (method, params, sessionId) => {
      const id = next++;
      ws.send(JSON.stringify({ id, method, params, sessionId }));
      return reply(id);
    };
    const { result } = await call('Target.getTargets', {});
    const target = result.targetInfos.find((t) => t.type === 'page').targetId;
    const sid = (await call('Target.attachToTarget', { targetId: target, flatten: true })).result.sessionId;
    const href = async () => (await call('Runtime.evaluate', { expression: 'location.href', returnByValue: true }, sid)).result.result.value;
    const before = await href();
    const frames = [
      [900, `{"id":900,"sessionId":"${sid}","meth\\u006fd":"Page.navigate","params":{"url":"file:///etc/passwd"}}`],
      [901, `{"id":901,"sessionId":"${sid}","method":"Page.navigate","params":{"\\u0075rl":"file:///etc/passwd"}}`],
      [902, `{"id":902,"sessionId":"${sid}","method":"Runtime.evaluate","params":{"expression":"1\u0000{\\"id\\":903,\\"sessionId\\":\\"${sid}\\",\\"method\\":\\"Page.navigate\\",\\"params\\":{\\"url\\":\\"file:///etc/passwd\\"}}"}}`],
      [904, `{"id":904,"sessionId":"${sid}","method":"Page.navigate","params":{"url":"https://example.invalid/","url":"file:///etc/passwd"}}`],
      [905, `{"id":905,"sessionId":"${sid}","method":"Page.navigate","Method":"Runtime.evaluate","params":{"url":"file:///etc/passwd"}}`],
    ];
    for (const [id, f] of frames) {
      ws.send(f);
      const r = await reply(id);
      assert.match(r.error?.message ?? '', /^Trawler: /, `frame ${f} answered ${JSON.stringify(r)}`);
    }
    await sleep(500);
    assert.ok(!ws.messages.some((m) => JSON.parse(m).id === 903), 'the message hidden after a NUL byte ran');
    assert.equal(await href(), before, 'the page moved');
  } finally {
    ws.close();
    await trawler.cleanup('globex', s.id);
  }
});
