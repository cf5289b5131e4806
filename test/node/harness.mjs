// Harness for Trawler's real-client end-to-end tests.
//
// useTrawler() starts the service binary named by TRAWLER_BIN as a child
// process (fresh temp data dir, a free loopback port, two teams with random
// keys, one warm browser), waits for GET /healthz, and stops it with SIGTERM
// after the file's tests. The service's stderr is kept in memory and printed
// only for a test that fails (or when the service will not start).
//
// Tests talk only to 127.0.0.1.

import { spawn } from 'node:child_process';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test as nodeTest } from 'node:test';
import { chromium } from 'playwright-core';

const HOST = '127.0.0.1';
const FIRECRAWL_MODEL_VARS = ['OPENAI_BASE_URL', 'OPENAI_API_KEY', 'MODEL_NAME', 'OLLAMA_BASE_URL'];
const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 20_000;

/** Resolves after ms milliseconds. */
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Rejects with a clear message if promise does not settle within ms. Used
 * around every client call that could hang, so a hang fails fast.
 */
export async function within(ms, promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls fn until it returns a truthy value or ms pass; returns that value. */
export async function eventually(ms, fn, what, intervalMs = 200) {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (err) {
      last = err;
    }
    if (Date.now() >= deadline) {
      throw new Error(`not true within ${ms} ms: ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
    }
    await sleep(intervalMs);
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, HOST, () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

const randomKey = (prefix) => `${prefix}-${randomBytes(18).toString('hex')}`;

class Trawler {
  constructor() {
    this.child = null;
    this.port = 0;
    this.baseUrl = '';
    this.keys = { acme: randomKey('acme'), globex: randomKey('globex') };
    this.dataDir = '';
    this.log = '';
    this.exited = null; // {code, signal} once the process has gone
  }

  async start(extraEnv = {}) {
    const bin = process.env.TRAWLER_BIN;
    if (!bin) throw new Error('TRAWLER_BIN must name the trawler binary (e.g. TRAWLER_BIN=$PWD/bin/trawler)');
    if (!path.isAbsolute(bin)) throw new Error(`TRAWLER_BIN must be an absolute path, got ${bin}`);
    this.dataDir = await mkdtemp(path.join(os.tmpdir(), 'trawler-e2e-'));

    // A port found free can be taken before the service binds it: try again.
    let lastErr;
    for (let attempt = 0; attempt < 3; attempt++) {
      this.port = await freePort();
      this.baseUrl = `http://${HOST}:${this.port}`;
      try {
        await this.#spawnAndWait(bin, extraEnv);
        return this;
      } catch (err) {
        lastErr = err;
        await this.#kill();
        if (!/address already in use/i.test(this.log)) break;
      }
    }
    throw lastErr;
  }

  async #spawnAndWait(bin, extraEnv) {
    const env = {};
    // Keep PATH, HOME and friends; drop any TRAWLER_ setting of the caller's
    // shell so each test file controls its service fully.
    // Firecrawl's model variables, which Trawler also reads, are dropped
    // too: a key in the caller's shell must never send a test to a model.
    for (const [k, v] of Object.entries(process.env)) {
      if (!k.startsWith('TRAWLER_') && !FIRECRAWL_MODEL_VARS.includes(k)) env[k] = v;
    }
    Object.assign(env, {
      TRAWLER_ADDR: `${HOST}:${this.port}`,
      TRAWLER_DATA_DIR: this.dataDir,
      TRAWLER_API_KEYS: `acme:${this.keys.acme},globex:${this.keys.globex}`,
      TRAWLER_WARM_BROWSERS: '1',
      TRAWLER_LOG_LEVEL: process.env.TRAWLER_LOG_LEVEL || 'info',
      // make test-docker runs the suites again with browsers in containers.
      ...(process.env.TRAWLER_TEST_RUNTIME ? { TRAWLER_RUNTIME: process.env.TRAWLER_TEST_RUNTIME } : {}),
      ...extraEnv,
    });
    this.log += `--- starting ${bin} serve on ${this.baseUrl}\n`;
    this.exited = null;
    const child = spawn(bin, ['serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (d) => { this.log += d; });
    child.stderr.on('data', (d) => { this.log += d; });
    child.on('exit', (code, signal) => {
      this.exited = { code, signal };
      this.log += `--- trawler exited (code ${code}, signal ${signal})\n`;
    });
    child.on('error', (err) => {
      this.exited = { code: null, signal: null, error: err };
      this.log += `--- could not run trawler: ${err.message}\n`;
    });

    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      if (this.exited) {
        throw new Error(`trawler exited before answering /healthz:\n${this.log}`);
      }
      try {
        const res = await fetch(`${this.baseUrl}/healthz`, { signal: AbortSignal.timeout(1000) });
        if (res.status === 200) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) {
        throw new Error(`trawler did not answer GET /healthz with 200 within ${START_TIMEOUT_MS} ms:\n${this.log}`);
      }
      await sleep(100);
    }
  }

  async #kill() {
    const child = this.child;
    if (!child || this.exited) return;
    const gone = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    const timer = setTimeout(() => {
      this.log += `--- trawler did not stop within ${STOP_TIMEOUT_MS} ms of SIGTERM: killing it\n`;
      child.kill('SIGKILL');
    }, STOP_TIMEOUT_MS);
    await gone;
    clearTimeout(timer);
  }

  async stop() {
    await this.#kill();
    if (this.dataDir) {
      await rm(this.dataDir, { recursive: true, force: true, maxRetries: 3 });
    }
    return this.exited;
  }

  /** The API base a Firecrawl SDK client uses. */
  get apiUrl() {
    return this.baseUrl;
  }

  /**
   * A raw API call as team (acme or globex): returns {status, body}.
   */
  async api(team, method, urlPath, body) {
    const headers = { Authorization: `Bearer ${this.keys[team]}` };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(this.baseUrl + urlPath, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    let json;
    try {
      json = JSON.parse(text);
    } catch {
      json = { raw: text };
    }
    return { status: res.status, body: json };
  }

  /** Creates a session for team over the REST API and checks it worked. */
  async createSession(team, opts = { ttl: 300, activityTtl: 120 }) {
    const res = await this.api(team, 'POST', '/v2/browser', opts);
    if (res.status !== 200 || !res.body.success) {
      throw new Error(`POST /v2/browser as ${team} answered ${res.status}: ${JSON.stringify(res.body)}`);
    }
    return res.body;
  }

  /** GET /v2/browser/{id} as team: the session record (body). */
  async session(team, id) {
    const res = await this.api(team, 'GET', `/v2/browser/${id}`);
    if (res.status !== 200) {
      throw new Error(`GET /v2/browser/${id} as ${team} answered ${res.status}: ${JSON.stringify(res.body)}`);
    }
    return res.body;
  }

  /** Deletes a session, ignoring "already destroyed": for cleanup. */
  async cleanup(team, id) {
    if (!id || this.exited) return;
    try {
      await this.api(team, 'DELETE', `/v2/browser/${id}`);
    } catch {
      // the test already failed or the service is gone; stop() follows
    }
  }
}

/**
 * Starts one Trawler for the calling test file (before all its tests) and
 * stops it after them. extraEnv adds or overrides TRAWLER_* settings; it may be
 * an async function that returns them.
 *
 * Returns {trawler, test}: test has node:test's signature and prints the
 * service's log written during a test when that test fails.
 */
export function useTrawler(extraEnv = {}) {
  const trawler = new Trawler();
  // If this process dies without running after(), do not leave the service
  // (and its browsers) running.
  const onExit = () => {
    if (trawler.child && !trawler.exited) trawler.child.kill('SIGKILL');
  };
  process.on('exit', onExit);

  before(async () => {
    await trawler.start(typeof extraEnv === 'function' ? await extraEnv() : extraEnv);
  });
  after(async () => {
    const exited = await trawler.stop();
    process.off('exit', onExit);
    // A clean stop on SIGTERM is part of the contract (sessions end with a
    // close frame, browsers are freed): anything else fails the file.
    if (exited && exited.code !== 0) {
      throw new Error(`trawler did not stop cleanly on SIGTERM (exit code ${exited.code}, signal ${exited.signal}); its log:\n${tail(trawler.log)}`);
    }
  });

  function test(name, options, fn) {
    if (typeof options === 'function') {
      fn = options;
      options = {};
    }
    return nodeTest(name, options, async (t) => {
      const from = trawler.log.length;
      try {
        return await fn(t);
      } catch (err) {
        if (!options.todo) process.stderr.write(`\n===== trawler log during failed test "${name}" (${trawler.baseUrl}):\n${tail(trawler.log.slice(from))}\n===== end of trawler log\n`);
        throw err;
      }
    });
  }

  return { trawler, test };
}

/**
 * Starts test/fakellm (FAKELLM_BIN), the OpenAI-compatible test server, for
 * the file's tests. Returns a handle: env() resolves, once the server
 * listens, to the Trawler settings that point at it (pass
 * () => llm.env() to useTrawler: top-level before hooks run at once, not
 * in turn), and enqueue(replies), requests(), reset() and stats() script it
 * through its control API.
 */
export function useFakeLLM(args = []) {
  let child = null;
  let started = null;
  const start = () => {
    started ??= new Promise((resolve, reject) => {
      const bin = process.env.FAKELLM_BIN;
      if (!bin) throw new Error('FAKELLM_BIN must name the fakellm binary (go build -o bin/fakellm ./test/fakellm)');
      child = spawn(bin, ['-addr', `${HOST}:0`, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (d) => {
        out += d;
        const m = out.match(/fakellm listening on (http:\/\/\S+)/);
        if (m) resolve(m[1]);
      });
      child.on('exit', (code) => reject(new Error(`fakellm exited with code ${code} before listening`)));
      setTimeout(() => reject(new Error('fakellm did not start within 10 s')), 10_000);
    });
    return started;
  };
  const control = async (method, p, body) => {
    const url = await start();
    const res = await fetch(url + '/_test/' + p, {
      method,
      headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    if (res.status !== 200) throw new Error(`fakellm ${method} /_test/${p} answered ${res.status}: ${await res.text()}`);
    return res.json();
  };
  after(() => {
    if (child && child.exitCode === null) child.kill('SIGTERM');
  });
  return {
    env: async () => ({ TRAWLER_LLM_BASE_URL: await start(), TRAWLER_LLM_MODEL: 'test-model' }),
    enqueue: (replies) => control('POST', 'replies', replies),
    requests: () => control('GET', 'requests'),
    reset: () => control('POST', 'reset'),
    stats: () => control('GET', 'stats'),
  };
}

function tail(text, lines = 300) {
  const all = text.split('\n');
  if (all.length <= lines) return text;
  return `... (${all.length - lines} earlier lines left out)\n` + all.slice(-lines).join('\n');
}

/**
 * A bare WebSocket client (RFC 6455, just enough for the tests) so a test can
 * see what Playwright and Puppeteer hide: the HTTP status of a refused
 * upgrade, and the close frame's code and reason.
 *
 * Resolves to {status, body} when the server refuses the upgrade, or to
 * {status: 101, closed, send, messages} when it accepts; closed resolves to
 * {code, reason} on a close frame, or {code: null, reason: 'socket ended
 * without a close frame'} when the connection just drops.
 */
export function rawWebSocket(wsUrl, { timeoutMs = 10_000 } = {}) {
  const u = new URL(wsUrl);
  if (u.hostname !== HOST) throw new Error(`tests talk only to ${HOST}, not ${u.hostname}`);
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: u.hostname,
      port: u.port,
      path: u.pathname + u.search,
      headers: {
        Connection: 'Upgrade',
        Upgrade: 'websocket',
        'Sec-WebSocket-Version': '13',
        'Sec-WebSocket-Key': randomBytes(16).toString('base64'),
      },
      timeout: timeoutMs,
    });
    req.on('timeout', () => req.destroy(new Error(`no answer to the WebSocket upgrade of ${wsUrl} within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { body += d; });
      res.on('end', () => {
        let json;
        try { json = JSON.parse(body); } catch { json = { raw: body }; }
        resolve({ status: res.statusCode, body: json });
      });
    });
    req.on('upgrade', (res, socket, head) => {
      const messages = [];
      let buf = head;
      let resolveClosed;
      let done = false;
      const closed = new Promise((r) => { resolveClosed = r; });
      const finish = (v) => {
        if (done) return;
        done = true;
        resolveClosed(v);
        socket.destroy();
      };
      const writeFrame = (opcode, payload) => {
        const mask = randomBytes(4);
        const len = payload.length;
        let header;
        if (len < 126) {
          header = Buffer.from([0x80 | opcode, 0x80 | len]);
        } else if (len < 65536) {
          header = Buffer.alloc(4);
          header[0] = 0x80 | opcode; header[1] = 0x80 | 126; header.writeUInt16BE(len, 2);
        } else {
          header = Buffer.alloc(10);
          header[0] = 0x80 | opcode; header[1] = 0x80 | 127; header.writeBigUInt64BE(BigInt(len), 2);
        }
        const masked = Buffer.from(payload);
        for (let i = 0; i < masked.length; i++) masked[i] ^= mask[i & 3];
        socket.write(Buffer.concat([header, mask, masked]));
      };
      socket.on('data', (d) => {
        buf = Buffer.concat([buf, d]);
        for (;;) {
          if (buf.length < 2) return;
          const opcode = buf[0] & 0x0f;
          let len = buf[1] & 0x7f;
          let off = 2;
          if (len === 126) { if (buf.length < 4) return; len = buf.readUInt16BE(2); off = 4; }
          else if (len === 127) { if (buf.length < 10) return; len = Number(buf.readBigUInt64BE(2)); off = 10; }
          if (buf[1] & 0x80) off += 4; // servers do not mask; tolerate it anyway
          if (buf.length < off + len) return;
          const payload = buf.subarray(off, off + len);
          buf = buf.subarray(off + len);
          if (opcode === 0x8) {
            finish({
              code: payload.length >= 2 ? payload.readUInt16BE(0) : 1005,
              reason: payload.subarray(2).toString('utf8'),
            });
            return;
          } else if (opcode === 0x9) {
            writeFrame(0xa, payload);
          } else if (opcode === 0x1 || opcode === 0x0) {
            messages.push(payload.toString('utf8'));
          }
        }
      });
      socket.on('close', () => finish({ code: null, reason: 'socket ended without a close frame' }));
      socket.on('error', () => {});
      resolve({
        status: 101,
        closed,
        messages,
        send: (text) => writeFrame(0x1, Buffer.from(text, 'utf8')),
        close: () => finish({ code: null, reason: 'closed by the test' }),
      });
    });
    req.end();
  });
}

/**
 * Launches a local headless Chromium for a test's viewer (the person who
 * opens a live view or a replay): a client of Trawler, not one of its
 * browsers, so it runs as the test does, without Chromium's sandbox when
 * that is root.
 */
export function launchViewer() {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
      '--disable-sync', '--no-first-run', '--disable-quic'],
  });
}
