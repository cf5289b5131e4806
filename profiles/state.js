// The page side of Capture and Restore. The helper page of each origin runs
// this function as it loads (Go evaluates it itself should the page not have):
// mode is "capture" or "restore", origin the origin the page must be at, and
// dataPath and a part's name (restore only) where the page fetches that part
// of the origin's saved state, a request that the tab's Fetch domain answers
// with the part as JSON: a response body reaches the page without the protocol
// converting it on the way, as an argument would. Little saved state is in the
// page instead, as the JSON of the #trawler-parts element. The page parses the
// JSON itself, which keeps members named "__proto__". A restore returns a
// promise; a capture returns an object of promises, one per part (see capture).
//
// A capture packs each part: "json:" and JSON text that is all ASCII, which
// crosses the protocol as it is and saves encoding on both sides; else "b64:"
// and base64 of JSON, or "gzip:" and base64 of gzip'd JSON, either of which
// crosses the protocol faster than JSON text in which the protocol escapes
// every non-ASCII character as six.
//
// Values and keys of IndexedDB records travel as tagged JSON: null, booleans,
// finite numbers, strings and arrays are themselves; everything else is an
// object whose "$" member names its type (see enc). A plain object that has
// its own "$" member is wrapped in {$: "o"}. Objects are numbered in the order
// the encoder first meets them, so that {$: "ref", i} can point back at one
// and shared or circular references survive; the decoder numbers them in the
// same order.
function trawlerProfileState(mode, origin, dataPath) {
  'use strict';

  const want = new URL(origin).origin;
  if (location.origin !== want) {
    throw new Error(`the helper page is at ${location.origin}, not ${want}`);
  }

  // blockedGrace is how long an open or delete may wait for another page to
  // close its connection to the database before the call fails.
  const blockedGrace = 5000;
  // flushSize is the size of a restore's localStorage writes, in characters,
  // above which it waits for the storage backend to have made them (see
  // localStorageWritten).
  const flushSize = 64 << 10;

  const B64_CHUNK = 0x8000;
  function toB64(u8) {
    if (typeof u8.toBase64 === 'function') return u8.toBase64();
    let s = '';
    for (let i = 0; i < u8.length; i += B64_CHUNK) {
      s += String.fromCharCode.apply(null, u8.subarray(i, i + B64_CHUNK));
    }
    return btoa(s);
  }
  function fromB64(s) {
    if (typeof Uint8Array.fromBase64 === 'function') return Uint8Array.fromBase64(s);
    const bin = atob(s);
    const u8 = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) u8[i] = bin.charCodeAt(i);
    return u8;
  }
  function viewBytes(v) {
    return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  }
  // put sets o[k] as an own data property, also when k is "__proto__".
  function put(o, k, v) {
    if (k === '__proto__') {
      Object.defineProperty(o, k, { value: v, writable: true, enumerable: true, configurable: true });
    } else {
      o[k] = v;
    }
  }
  function request(r) {
    return new Promise((resolve, reject) => {
      r.onsuccess = () => resolve(r.result);
      r.onerror = () => reject(r.error);
    });
  }
  function finished(tx) {
    return new Promise((resolve, reject) => {
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error || new Error('transaction aborted'));
    });
  }
  function blocked(what, reject) {
    return () => setTimeout(
      () => reject(new Error(`${what} is blocked: another page keeps the database open`)),
      blockedGrace);
  }

  const typedArrays = [
    'Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array',
    'Int32Array', 'Uint32Array', 'Float16Array', 'Float32Array', 'Float64Array',
    'BigInt64Array', 'BigUint64Array',
  ];
  const errorTypes = {
    Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError,
  };

  // encoder returns enc, which turns one structured-clone value into tagged
  // JSON. Blob contents and CryptoKey material are read asynchronously: enc
  // leaves their nodes to be filled in by settle. unsupported lists the types
  // met that cannot be saved (enc puts null in their place).
  function encoder() {
    const seen = new Map();
    const later = [];
    const unsupported = [];
    function enc(v) {
      switch (typeof v) {
        case 'undefined':
          return { $: 'u' };
        case 'boolean':
          return v;
        case 'string':
          if (typeof v.isWellFormed === 'function' && !v.isWellFormed()) {
            // Lone surrogates do not survive UTF-8: keep the UTF-16 code units.
            const u16 = new Uint16Array(v.length);
            for (let i = 0; i < v.length; i++) u16[i] = v.charCodeAt(i);
            return { $: 'us', b: toB64(viewBytes(u16)) };
          }
          return v;
        case 'number':
          if (Number.isFinite(v) && !Object.is(v, -0)) return v;
          return { $: 'n', v: Object.is(v, -0) ? '-0' : String(v) };
        case 'bigint':
          return { $: 'bi', v: v.toString() };
        case 'object':
          if (v === null) return null;
          break;
        default:
          unsupported.push(typeof v);
          return null;
      }
      const id = seen.get(v);
      if (id !== undefined) return { $: 'ref', i: id };
      seen.set(v, seen.size);

      const tag = Object.prototype.toString.call(v).slice(8, -1);
      switch (tag) {
        case 'Array': {
          const out = new Array(v.length);
          for (let i = 0; i < v.length; i++) out[i] = i in v ? enc(v[i]) : { $: 'h' };
          return out;
        }
        case 'Object': {
          const proto = Object.getPrototypeOf(v);
          if (proto !== Object.prototype && proto !== null) break;
          const out = {};
          for (const k of Object.keys(v)) put(out, k, enc(v[k]));
          return Object.prototype.hasOwnProperty.call(v, '$') ? { $: 'o', v: out } : out;
        }
        case 'Date':
          return { $: 'd', v: enc(v.getTime()) };
        case 'RegExp':
          return { $: 're', s: v.source, f: v.flags };
        case 'Boolean':
          return { $: 'bo', v: v.valueOf() };
        case 'Number':
          return { $: 'no', v: enc(v.valueOf()) };
        case 'String':
          return { $: 'so', v: enc(v.valueOf()) };
        case 'BigInt':
          return { $: 'bio', v: v.valueOf().toString() };
        case 'ArrayBuffer':
          return { $: 'ab', b: toB64(new Uint8Array(v)) };
        case 'DataView':
          return { $: 'dv', b: toB64(viewBytes(v)) };
        case 'Map': {
          const out = [];
          for (const [k, x] of v) out.push([enc(k), enc(x)]);
          return { $: 'map', v: out };
        }
        case 'Set': {
          const out = [];
          for (const x of v) out.push(enc(x));
          return { $: 'set', v: out };
        }
        case 'Error': {
          const out = { $: 'err', n: String(v.name), m: String(v.message) };
          if (typeof v.stack === 'string') out.s = v.stack;
          if (Object.prototype.hasOwnProperty.call(v, 'cause')) out.c = enc(v.cause);
          return out;
        }
        case 'File': {
          const out = { $: 'file', t: v.type, name: v.name, lm: v.lastModified, b: '' };
          later.push(v.arrayBuffer().then((b) => { out.b = toB64(new Uint8Array(b)); }));
          return out;
        }
        case 'Blob': {
          const out = { $: 'blob', t: v.type, b: '' };
          later.push(v.arrayBuffer().then((b) => { out.b = toB64(new Uint8Array(b)); }));
          return out;
        }
        case 'FileList':
          return { $: 'fl', v: Array.from(v, enc) };
        case 'ImageData':
          return { $: 'img', w: v.width, h: v.height, cs: v.colorSpace, b: toB64(viewBytes(v.data)) };
        case 'DOMPoint':
        case 'DOMPointReadOnly':
          return { $: 'dp', t: tag, v: [v.x, v.y, v.z, v.w].map(enc) };
        case 'DOMRect':
        case 'DOMRectReadOnly':
          return { $: 'dr', t: tag, v: [v.x, v.y, v.width, v.height].map(enc) };
        case 'DOMQuad':
          return { $: 'dq', v: [v.p1, v.p2, v.p3, v.p4].map((p) => [p.x, p.y, p.z, p.w].map(enc)) };
        case 'DOMMatrix':
        case 'DOMMatrixReadOnly':
          return { $: 'dm', t: tag, is2D: v.is2D, v: Array.from(v.toFloat64Array(), enc) };
        case 'CryptoKey': {
          if (!v.extractable || !globalThis.crypto || !crypto.subtle) break;
          // The algorithm is its own little value, encoded apart from the
          // record so that its objects do not shift the record's numbering.
          const out = { $: 'ck', a: encoder().enc(v.algorithm), x: true, u: v.usages, k: null };
          later.push(crypto.subtle.exportKey('jwk', v).then((jwk) => { out.k = jwk; }));
          return out;
        }
        default:
          if (typedArrays.includes(tag)) return { $: 'ta', t: tag, b: toB64(viewBytes(v)) };
      }
      unsupported.push(tag === 'CryptoKey' ? 'CryptoKey (non-extractable)' : tag);
      return null;
    }
    return { enc, later, unsupported };
  }

  // importKeys re-creates every CryptoKey in the tagged value x, which must
  // happen before the synchronous decode: importKey is asynchronous.
  async function importKeys(x, keys) {
    const stack = [x];
    const jobs = [];
    while (stack.length) {
      const n = stack.pop();
      if (n === null || typeof n !== 'object') continue;
      if (n.$ === 'ck') {
        const alg = decoder(new Map()).dec(n.a);
        jobs.push(crypto.subtle.importKey('jwk', n.k, alg, n.x, n.u).then((k) => keys.set(n, k)));
        continue;
      }
      for (const k in n) stack.push(n[k]);
    }
    await Promise.all(jobs);
  }

  // decoder returns dec, the inverse of an encoder's enc. keys holds the
  // CryptoKeys made by importKeys.
  function decoder(keys) {
    const refs = [];
    function fromUTF16(b) {
      const bytes = fromB64(b);
      const u16 = new Uint16Array(bytes.buffer, 0, bytes.length >> 1);
      let s = '';
      for (let i = 0; i < u16.length; i += B64_CHUNK) {
        s += String.fromCharCode.apply(null, u16.subarray(i, i + B64_CHUNK));
      }
      return s;
    }
    // keep numbers the object being decoded before its members are, as the
    // encoder did.
    function keep(o) {
      refs.push(o);
      return o;
    }
    function dec(x) {
      if (x === null || typeof x !== 'object') return x;
      if (Array.isArray(x)) {
        const a = keep(new Array(x.length));
        for (let i = 0; i < x.length; i++) {
          const e = x[i];
          if (e !== null && typeof e === 'object' && e.$ === 'h') continue;
          a[i] = dec(e);
        }
        return a;
      }
      if (!Object.prototype.hasOwnProperty.call(x, '$')) return plain(x);
      switch (x.$) {
        case 'u': return undefined;
        case 'us': return fromUTF16(x.b);
        case 'n': return Number(x.v);
        case 'bi': return BigInt(x.v);
        case 'ref':
          if (!(x.i >= 0 && x.i < refs.length)) throw new Error(`bad reference ${x.i}`);
          return refs[x.i];
        case 'o': return plain(x.v);
        case 'd': return keep(new Date(dec(x.v)));
        case 're': return keep(new RegExp(x.s, x.f));
        case 'bo': return keep(Object(Boolean(x.v)));
        case 'no': return keep(Object(dec(x.v)));
        case 'so': return keep(Object(dec(x.v)));
        case 'bio': return keep(Object(BigInt(x.v)));
        case 'ab': return keep(fromB64(x.b).buffer);
        case 'dv': return keep(new DataView(fromB64(x.b).buffer));
        case 'ta': {
          if (!typedArrays.includes(x.t) || typeof globalThis[x.t] !== 'function') {
            throw new Error(`unknown typed array ${x.t}`);
          }
          return keep(new globalThis[x.t](fromB64(x.b).buffer));
        }
        case 'map': {
          const m = keep(new Map());
          for (const [k, v] of x.v) {
            const key = dec(k);
            m.set(key, dec(v));
          }
          return m;
        }
        case 'set': {
          const s = keep(new Set());
          for (const v of x.v) s.add(dec(v));
          return s;
        }
        case 'err': {
          const Ctor = errorTypes[x.n] || Error;
          const e = keep(new Ctor(x.m));
          if (!errorTypes[x.n]) e.name = x.n;
          if ('s' in x) e.stack = x.s;
          if ('c' in x) e.cause = dec(x.c);
          return e;
        }
        case 'blob': return keep(new Blob([fromB64(x.b)], { type: x.t }));
        case 'file': return keep(new File([fromB64(x.b)], x.name, { type: x.t, lastModified: x.lm }));
        case 'fl': {
          const i = refs.push(null) - 1;
          const dt = new DataTransfer();
          for (const f of x.v) dt.items.add(dec(f));
          refs[i] = dt.files;
          return dt.files;
        }
        case 'img': {
          const px = new Uint8ClampedArray(fromB64(x.b).buffer);
          return keep(new ImageData(px, x.w, x.h, x.cs ? { colorSpace: x.cs } : undefined));
        }
        case 'dp': return keep(new globalThis[x.t === 'DOMPointReadOnly' ? 'DOMPointReadOnly' : 'DOMPoint'](...x.v.map(dec)));
        case 'dr': return keep(new globalThis[x.t === 'DOMRectReadOnly' ? 'DOMRectReadOnly' : 'DOMRect'](...x.v.map(dec)));
        case 'dq': return keep(new DOMQuad(...x.v.map((p) => new DOMPoint(...p.map(dec)))));
        case 'dm': {
          let m = x.v.map(dec);
          if (x.is2D) m = [m[0], m[1], m[4], m[5], m[12], m[13]];
          return keep(new globalThis[x.t === 'DOMMatrixReadOnly' ? 'DOMMatrixReadOnly' : 'DOMMatrix'](m));
        }
        case 'ck': {
          const k = keys.get(x);
          if (!k) throw new Error('a CryptoKey was not imported');
          return keep(k);
        }
      }
      throw new Error(`unknown value tag ${JSON.stringify(x.$)}`);
    }
    function plain(x) {
      const o = keep({});
      for (const k of Object.keys(x)) put(o, k, dec(x[k]));
      return o;
    }
    return { dec };
  }

  // capture reads the origin's storage in two parts, and answers each with a promise: localStorage,
  // copied at once, and the databases, which take longer, so that the first is on its way while
  // the page still reads the second. The databases are read, which is mostly the browser's work,
  // while the page copies localStorage. An answer is "1" if its part holds anything, else "0", then
  // (localStorage only) the origin, a newline, and the part packed: the localStorage object, or
  // {indexedDB, skipped}.
  function capture() {
    const dbs = { indexedDB: [], skipped: [] };
    const databases = (async () => {
      for (const info of await indexedDB.databases()) {
        const db = await openExisting(info.name);
        if (!db) continue; // deleted meanwhile
        try {
          dbs.indexedDB.push(await readDatabase(db, dbs.skipped));
        } finally {
          db.close();
        }
      }
    })();
    const ls = {};
    for (let i = 0; i < localStorage.length; i++) {
      const k = localStorage.key(i);
      put(ls, k, localStorage.getItem(k));
    }
    const answer = async (held, head, v) => (held ? '1' : '0') + head + '\n' + await pack(v);
    return {
      localStorage: answer(Object.keys(ls).length > 0, location.origin, ls),
      indexedDB: databases.then(() => answer(dbs.indexedDB.length > 0, '', dbs)),
    };
  }

  // openExisting opens a database at its current version, or returns null
  // if it no longer exists (and creates nothing).
  function openExisting(name) {
    return new Promise((resolve, reject) => {
      let created = false;
      const r = indexedDB.open(name);
      r.onupgradeneeded = () => {
        created = true;
        r.transaction.abort();
      };
      r.onsuccess = () => resolve(r.result);
      r.onerror = (e) => {
        if (created) {
          e.preventDefault();
          resolve(null);
        } else {
          reject(new Error(`opening database ${name}: ${r.error}`));
        }
      };
      r.onblocked = blocked(`opening database ${name}`, reject);
    });
  }

  async function readDatabase(db, skipped) {
    const names = Array.from(db.objectStoreNames);
    const out = { name: db.name, version: db.version, stores: [] };
    if (names.length === 0) return out;
    const tx = db.transaction(names, 'readonly');
    const done = finished(tx);
    const reads = [];
    for (const name of names) {
      const os = tx.objectStore(name);
      const s = { name, keyPath: os.keyPath, autoIncrement: os.autoIncrement, indexes: [], records: [] };
      for (const ix of Array.from(os.indexNames, (n) => os.index(n))) {
        s.indexes.push({ name: ix.name, keyPath: ix.keyPath, unique: ix.unique, multiEntry: ix.multiEntry });
      }
      out.stores.push(s);
      reads.push(Promise.all([request(os.getAllKeys()), request(os.getAll())]));
    }
    const all = await Promise.all(reads);
    await done;

    const later = [];
    for (let i = 0; i < out.stores.length; i++) {
      const s = out.stores[i];
      const [keys, values] = all[i];
      const outOfLine = s.keyPath === null;
      const bad = new Set();
      let nbad = 0;
      for (let j = 0; j < values.length; j++) {
        const e = encoder();
        const rec = { v: e.enc(values[j]) };
        if (outOfLine) rec.k = e.enc(keys[j]);
        if (e.unsupported.length) {
          nbad++;
          e.unsupported.forEach((t) => bad.add(t));
          continue;
        }
        later.push(...e.later);
        s.records.push(rec);
      }
      if (nbad) {
        skipped.push(`${db.name}/${s.name}: ${nbad} record(s) holding ${Array.from(bad).join(', ')}`);
      }
    }
    await Promise.all(later);
    return out;
  }

  async function restore() {
    // The database backend starts, and both parts of the saved state come, at the same time:
    // localStorage is written while the databases' part is still on its way.
    const warm = indexedDB.databases();
    const inline = document.getElementById('trawler-parts');
    const inlineParts = inline && JSON.parse(inline.textContent);
    const part = async (name) => {
      if (inlineParts) return inlineParts[name];
      const res = await fetch(dataPath + name, { cache: 'no-store' });
      if (!res.ok) throw new Error(`fetching the saved ${name}: status ${res.status}`);
      return res.json();
    };
    const lsPart = part('localStorage');
    const idbPart = part('indexedDB');
    for (const p of [warm, lsPart, idbPart]) p.catch(() => {});

    const ls = (await lsPart) || {};
    if (typeof ls !== 'object' || Array.isArray(ls)) throw new Error('the saved localStorage is not an object');
    const entries = Object.entries(ls);
    for (const [k, v] of entries) {
      if (typeof v !== 'string') throw new Error(`the saved localStorage item ${JSON.stringify(k)} is not a string`);
    }
    let size = 0;
    for (const [k, v] of entries) size += k.length + v.length;
    const written = size > flushSize ? localStorageWritten(entries[entries.length - 1][0]) : Promise.resolve();
    localStorage.clear();
    for (const [k, v] of entries) localStorage.setItem(k, v);

    for (const info of await warm) await deleteDatabase(info.name);
    const dbs = (await idbPart) || [];
    if (!Array.isArray(dbs)) throw new Error('the saved indexedDB is not an array');
    for (const d of dbs) await writeDatabase(d);
    await written;
    return null;
  }

  // localStorageWritten returns a promise that the storage backend has made the writes about to
  // be made, the last of which sets lastKey. The page hands them to the backend without waiting,
  // and a large batch of them can still be queued in the page's process when the tab closes, and
  // be lost (a batch of 2 MB lost items; one of 250 kB never did, nor any smaller one): hence
  // flushSize. The backend tells the other documents of the origin in this page's process about
  // each write it has made, in order, with a storage event: an iframe of ours waits for the last.
  function localStorageWritten(lastKey) {
    const frame = document.createElement('iframe'); // about:blank, of this page's origin
    document.documentElement.appendChild(frame);
    const w = frame.contentWindow;
    return new Promise((resolve) => {
      w.addEventListener('storage', (e) => {
        if (e.key === lastKey) resolve();
      });
      w.localStorage.length; // the frame's window now shares the origin's storage area
    }).finally(() => frame.remove());
  }

  function deleteDatabase(name) {
    return new Promise((resolve, reject) => {
      const r = indexedDB.deleteDatabase(name);
      r.onsuccess = () => resolve();
      r.onerror = () => reject(new Error(`deleting database ${name}: ${r.error}`));
      r.onblocked = blocked(`deleting database ${name}`, reject);
    });
  }

  async function writeDatabase(d) {
    const stores = d.stores || [];
    const keys = new Map();
    await importKeys(stores, keys);
    const db = await new Promise((resolve, reject) => {
      const r = indexedDB.open(d.name, d.version);
      r.onupgradeneeded = () => {
        for (const s of stores) {
          const os = r.result.createObjectStore(s.name, { keyPath: s.keyPath, autoIncrement: !!s.autoIncrement });
          for (const ix of s.indexes || []) {
            os.createIndex(ix.name, ix.keyPath, { unique: !!ix.unique, multiEntry: !!ix.multiEntry });
          }
        }
      };
      r.onsuccess = () => resolve(r.result);
      r.onerror = () => reject(new Error(`creating database ${d.name}: ${r.error}`));
      r.onblocked = blocked(`creating database ${d.name}`, reject);
    });
    try {
      const filled = stores.filter((s) => s.records && s.records.length);
      if (filled.length === 0) return;
      // Relaxed: the browser need not wait for the disk before the restore goes on.
      const tx = db.transaction(filled.map((s) => s.name), 'readwrite', { durability: 'relaxed' });
      const done = finished(tx);
      for (const s of filled) {
        const os = tx.objectStore(s.name);
        const outOfLine = s.keyPath === null;
        try {
          for (const rec of s.records) {
            const dc = decoder(keys);
            const v = dc.dec(rec.v);
            if (outOfLine) os.put(v, dc.dec(rec.k));
            else os.put(v);
          }
        } catch (e) {
          // Write all of the database or none of it.
          done.catch(() => {});
          tx.abort();
          throw new Error(`writing database ${d.name}, store ${s.name}: ${e.message || e}`);
        }
      }
      await done.catch((e) => { throw new Error(`writing database ${d.name}: ${e}`); });
    } finally {
      db.close();
    }
  }

  // pack returns v as its JSON text when that is all ASCII, else as base64
  // of its JSON in UTF-8, gzip'd when that shrinks it well. A sample decides, since on data that barely compresses the
  // page's deflate costs more time than the smaller transfer saves.
  async function pack(v) {
    const text = JSON.stringify(v);
    if (/^[\x00-\x7f]*$/.test(text)) return 'json:' + text;
    const bytes = new TextEncoder().encode(text);
    const sample = bytes.subarray(0, 256 << 10);
    if (typeof CompressionStream === 'function' && bytes.length > 64 << 10 &&
        (await gzip(sample)).length < sample.length / 2) {
      return 'gzip:' + toB64(await gzip(bytes));
    }
    return 'b64:' + toB64(bytes);
  }
  async function gzip(bytes) {
    const t = new CompressionStream('gzip');
    return new Uint8Array(await new Response(new Blob([bytes]).stream().pipeThrough(t)).arrayBuffer());
  }

  switch (mode) {
    case 'capture': return capture();
    case 'restore': return restore();
  }
  throw new Error(`unknown mode ${mode}`);
}
