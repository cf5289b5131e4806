'use strict';
// Trawler's execute runner: the Node.js side of POST /v2/browser/{id}/execute
// for the languages node and bash. Trawler writes this file next to the
// code of each run and starts it, in a sandbox container or as a local
// process, with:
//
//   TRAWLER_CDP_URL       ws:// URL of the session's browser, served by
//                         Trawler for this run only (loopback)
//   TRAWLER_PAGE_TARGET   CDP target id of the session's active page
//   TRAWLER_PLAYWRIGHT    directory of the playwright-core package
//   TRAWLER_COMPILE_CACHE directory of V8 code caches of playwright-core
//                         (optional; written when writable)
//
// Modes:
//   node runner.cjs node FILE     runs FILE's code as the body of an async
//                                 function of browser, context and page
//   node runner.cjs browser ARGS  the `browser` command of the bash sandbox
//   node runner.cjs warm          fills the compile cache (image build)

const fs = require('node:fs');
const path = require('node:path');
const Module = require('node:module');
const vm = require('node:vm');

const pwDir = process.env.TRAWLER_PLAYWRIGHT || 'playwright-core';

// Compile cache: playwright-core is 7 MB of JavaScript, and compiling it is
// most of a run's start on a small machine. Node 20 has no compile cache of
// its own, so V8's code cache is used directly for its big files, keyed by
// their path inside the package and their size; V8 itself rejects a cache
// made from other source or by another Node.
const cacheDir = process.env.TRAWLER_COMPILE_CACHE;
if (cacheDir) {
  const compile = Module.prototype._compile;
  Module.prototype._compile = function (content, filename) {
    const rel = path.relative(pwDir, filename);
    if (content.length < 200_000 || rel.startsWith('..') || path.isAbsolute(rel)) return compile.call(this, content, filename);
    const key = path.join(cacheDir, `${rel.replace(/[\\/]/g, '_')}-${content.length}.v8`);
    let cached;
    try { cached = fs.readFileSync(key); } catch { /* not cached yet */ }
    const script = new vm.Script(Module.wrap(content), {
      filename,
      cachedData: cached,
      importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
    });
    if (!cached || script.cachedDataRejected) {
      // Made at exit, so that it holds the functions the run compiled too.
      process.once('exit', () => {
        try {
          fs.mkdirSync(cacheDir, { recursive: true });
          const tmp = `${key}.${process.pid}.tmp`;
          fs.writeFileSync(tmp, script.createCachedData());
          fs.renameSync(tmp, key);
        } catch { /* a read-only cache (the sandbox image's) stays as it is */ }
      });
    }
    const req = (id) => this.require(id);
    req.resolve = (request, options) => Module._resolveFilename(request, this, false, options);
    req.cache = Module._cache;
    req.main = process.mainModule;
    return script.runInThisContext()(this.exports, req, this, filename, path.dirname(filename));
  };
}

const playwright = () => require(pwDir);

// exit ends the process once what it wrote has gone out.
function exit(code) {
  process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
}

function fail(err) {
  process.stderr.write(`${err && err.stack ? err.stack : String(err)}\n`);
  exit(1);
}

process.on('unhandledRejection', fail);

// connect attaches Playwright to the session and finds its active page.
async function connect() {
  const url = process.env.TRAWLER_CDP_URL;
  if (!url) throw new Error('TRAWLER_CDP_URL is not set: this runs only under Trawler');
  const browser = await playwright().chromium.connectOverCDP(url, { timeout: 15_000 });
  const context = browser.contexts()[0] ?? (await browser.newContext());
  const page = await activePage(context, process.env.TRAWLER_PAGE_TARGET);
  return { browser, context, page };
}

async function activePage(context, target) {
  const pages = context.pages();
  if (pages.length === 0) return context.newPage();
  if (pages.length === 1 || !target) return pages[0];
  for (const page of pages) {
    const cdp = await context.newCDPSession(page);
    try {
      const { targetInfo } = await cdp.send('Target.getTargetInfo');
      if (targetInfo.targetId === target) return page;
    } finally {
      await cdp.detach().catch(() => {});
    }
  }
  return pages[0];
}

function print(value) {
  if (value === undefined) return;
  if (typeof value === 'string') process.stdout.write(value.endsWith('\n') ? value : `${value}\n`);
  else if (Buffer.isBuffer(value)) process.stdout.write(value);
  else process.stdout.write(`${JSON.stringify(value, null, 2) ?? String(value)}\n`);
}

async function runNode(file) {
  const code = fs.readFileSync(file, 'utf8');
  const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor;
  let fn;
  try {
    fn = new AsyncFunction('browser', 'context', 'page', 'require', code);
  } catch (err) {
    // A syntax error is the code's, not the runner's: no stack into here.
    process.stderr.write(`${err.name}: ${err.message}\n`);
    return exit(1);
  }
  const base = Module.createRequire(path.resolve(file));
  const userRequire = (id) => (id === 'playwright-core' || id === 'playwright' ? playwright() : base(id));
  const { browser, context, page } = await connect();
  // A value the code returns is printed, as a REPL would.
  print(await fn(browser, context, page, userRequire));
  exit(0);
}

const USAGE = `usage: browser COMMAND [ARGS]   (the session's active page)
  open URL             navigate to URL (also: navigate, goto)
  click SELECTOR       click the first element SELECTOR matches
  type SELECTOR TEXT   fill the field SELECTOR matches with TEXT
  press KEY            press a key (Enter, Tab, ArrowDown...)
  text [SELECTOR]      print the text of SELECTOR (default body)
  html [SELECTOR]      print the outer HTML of SELECTOR (default the document)
  eval EXPRESSION      evaluate JavaScript in the page, print its value
  screenshot [FILE]    save a PNG screenshot (default screenshot.png) and print
                       its path; FILE - prints it as base64
  wait SELECTOR|MS     wait for SELECTOR to appear, or MS milliseconds
  url | title          print the page's URL or title
`;

async function runBrowser(args) {
  const [cmd, ...rest] = args;
  const need = (n) => {
    if (rest.length < n) throw new Error(`browser ${cmd}: missing argument\n${USAGE}`);
  };
  if (!cmd || cmd === 'help' || cmd === '--help' || cmd === '-h') {
    process.stdout.write(USAGE);
    return exit(cmd ? 0 : 2);
  }
  const known = ['open', 'navigate', 'goto', 'click', 'type', 'fill', 'press', 'text', 'html', 'eval', 'screenshot', 'wait', 'url', 'title'];
  if (!known.includes(cmd)) {
    process.stderr.write(`browser: unknown command ${cmd}\n${USAGE}`);
    return exit(2);
  }
  const { page } = await connect();
  page.setDefaultTimeout(15_000);
  switch (cmd) {
    case 'open': case 'navigate': case 'goto':
      need(1);
      await page.goto(rest[0]);
      break;
    case 'click':
      need(1);
      await page.locator(rest[0]).first().click();
      break;
    case 'type': case 'fill':
      need(2);
      await page.locator(rest[0]).first().fill(rest.slice(1).join(' '));
      break;
    case 'press':
      need(1);
      await page.keyboard.press(rest[0]);
      break;
    case 'text':
      print(await page.locator(rest[0] ?? 'body').first().innerText());
      break;
    case 'html':
      print(rest[0] ? await page.locator(rest[0]).first().evaluate((e) => e.outerHTML) : await page.content());
      break;
    case 'eval':
      need(1);
      print(await page.evaluate(rest.join(' ')));
      break;
    case 'screenshot': {
      const png = await page.screenshot();
      if (rest[0] === '-') {
        print(png.toString('base64'));
      } else {
        const file = path.resolve(rest[0] ?? 'screenshot.png');
        fs.writeFileSync(file, png);
        print(file);
      }
      break;
    }
    case 'wait':
      need(1);
      if (/^\d+$/.test(rest[0])) await page.waitForTimeout(Number(rest[0]));
      else await page.locator(rest[0]).first().waitFor();
      break;
    case 'url':
      print(page.url());
      break;
    case 'title':
      print(await page.title());
      break;
  }
  exit(0);
}

const [mode, ...args] = process.argv.slice(2);
switch (mode) {
  case 'node':
    runNode(args[0]).catch(fail);
    break;
  case 'browser':
    runBrowser(args).catch(fail);
    break;
  case 'warm':
    playwright();
    break;
  default:
    process.stderr.write('usage: runner.cjs node FILE | browser ARGS... | warm\n');
    process.exit(2);
}
