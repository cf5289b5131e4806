package profiles_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"math/bits"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/profiles"
	"github.com/trawler-dev/trawler/test/polltest"
)

// The browser tests are not parallel: Chromium keeps this machine's cores busy, and the store tests
// of this package, which run in parallel afterwards, time lock expiries in fractions of a second.
//
// The browser tests reach three test servers, all on loopback: app.trawler.test (http) and
// secure.trawler.test (https), which a host-resolver rule sends to 127.0.0.1, and 127.0.0.2 (http).
// Real host names are what let a cookie carry a Domain attribute.
const hostRules = "--host-resolver-rules=MAP *.trawler.test 127.0.0.1, MAP *.example.com 127.0.0.1"

// startBrowser starts a Chromium for the test and stops it at the end.
func startBrowser(t testing.TB) browsers.Browser {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed")
	}
	rt := &browsers.ProcessRuntime{
		Chromium:     bin,
		Dir:          t.TempDir(),
		StartTimeout: 30 * time.Second,
		ExtraFlags:   []string{hostRules, "--ignore-certificate-errors"},
	}
	b, err := rt.Start(context.Background(), "profile-test")
	require.NoError(t, err, "starting chromium")
	t.Cleanup(func() { b.Close() })
	return b
}

// sites are the test servers, by role.
type sites struct {
	app, secure, other string // origins
}

func startSites(t testing.TB) sites {
	t.Helper()
	h := http.HandlerFunc(serveSite)

	app := httptest.NewServer(h) // 127.0.0.1
	t.Cleanup(app.Close)

	secure := httptest.NewUnstartedServer(h)
	secure.StartTLS()
	t.Cleanup(secure.Close)

	l, err := net.Listen("tcp", "127.0.0.2:0")
	require.NoError(t, err, "listening on 127.0.0.2")
	other := httptest.NewUnstartedServer(h)
	other.Listener.Close()
	other.Listener = l
	other.Start()
	t.Cleanup(other.Close)

	port := func(s *httptest.Server) string { return fmt.Sprintf(":%d", s.Listener.Addr().(*net.TCPAddr).Port) }
	return sites{
		app:    "http://app.trawler.test" + port(app),
		secure: "https://secure.trawler.test" + port(secure),
		other:  other.URL,
	}
}

// serveSite serves every test origin: /cookies sets the origin's cookies, /echo returns the Cookie
// header the server received, and anything else is an empty page (with a cross-site iframe at /framed).
func serveSite(w http.ResponseWriter, r *http.Request) {
	host, _, _ := net.SplitHostPort(r.Host)
	switch r.URL.Path {
	case "/echo":
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, r.Header.Get("Cookie"))
		return
	case "/cookies":
		switch host {
		case "app.trawler.test":
			for _, c := range []string{
				"persist=p1; Max-Age=3600; Path=/",
				"sess=s1; Path=/",
				"hidden=h1; HttpOnly; Path=/",
				"dom=d1; Domain=trawler.test; Path=/; Max-Age=3600",
				"strict=st1; SameSite=Strict; Path=/",
				"pathy=pa1; Path=/sub",
			} {
				w.Header().Add("Set-Cookie", c)
			}
		case "secure.trawler.test":
			w.Header().Add("Set-Cookie", "sec=se1; Secure; Path=/; Max-Age=3600")
			w.Header().Add("Set-Cookie", "chip=c1; Secure; Path=/; SameSite=None; Partitioned")
		default:
			w.Header().Add("Set-Cookie", "other=o1; Path=/")
		}
	}
	w.Header().Set("Content-Type", "text/html")
	if r.URL.Path == "/framed" {
		fmt.Fprintf(w, "<!doctype html><title>framed</title><iframe src=%q></iframe>", r.URL.Query().Get("src"))
		return
	}
	io.WriteString(w, "<!doctype html><title>page</title>")
}

// driver drives a browser's tabs the way a user's automation would, over its own connection.
type driver struct {
	t    testing.TB
	conn *cdp.Conn
}

func newDriver(t testing.TB, ctx context.Context, b browsers.Browser) *driver {
	t.Helper()
	conn, err := b.CDP().Dial(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return &driver{t: t, conn: conn}
}

// newContext creates a browser context, which outlives the driver's connection.
func (d *driver) newContext(ctx context.Context) string {
	var res struct {
		BrowserContextID string `json:"browserContextId"`
	}
	require.NoError(d.t, d.conn.Call(ctx, "", "Target.createBrowserContext", map[string]any{"disposeOnDetach": false}, &res))
	return res.BrowserContextID
}

type tab struct {
	d                 *driver
	targetID, session string
}

// open opens a tab on url in browser context contextID ("" for the default one) and waits for it
// to load.
func (d *driver) open(ctx context.Context, contextID, url string) *tab {
	d.t.Helper()
	params := map[string]any{"url": "about:blank"}
	if contextID != "" {
		params["browserContextId"] = contextID
	}
	var created struct {
		TargetID string `json:"targetId"`
	}
	require.NoError(d.t, d.conn.Call(ctx, "", "Target.createTarget", params, &created))
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	require.NoError(d.t, d.conn.Call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": created.TargetID, "flatten": true}, &attached))
	tb := &tab{d: d, targetID: created.TargetID, session: attached.SessionID}
	tb.navigate(ctx, url)
	return tb
}

func (tb *tab) navigate(ctx context.Context, url string) {
	tb.d.t.Helper()
	require.NoError(tb.d.t, tb.d.conn.Call(ctx, tb.session, "Page.navigate", map[string]any{"url": url}, nil))
	for {
		var ready struct{ Href, State string }
		tb.eval(ctx, `({href: location.href, state: document.readyState})`, &ready)
		if ready.Href == url && ready.State == "complete" {
			return
		}
		select {
		case <-ctx.Done():
			tb.d.t.Fatalf("%s did not load: at %s, %s", url, ready.Href, ready.State)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// eval runs js (awaiting a promise) and decodes its value into v.
func (tb *tab) eval(ctx context.Context, js string, v any) {
	tb.d.t.Helper()
	var res cdp.EvalResult
	err := tb.d.conn.Call(ctx, tb.session, "Runtime.evaluate",
		map[string]any{"expression": js, "awaitPromise": true, "returnByValue": true}, &res)
	require.NoError(tb.d.t, err)
	require.Empty(tb.d.t, res.Exception(), "evaluating script")
	if v != nil {
		require.NoError(tb.d.t, json.Unmarshal(res.Result.Value, v), "decoding %s", res.Result.Value)
	}
}

func (tb *tab) close(ctx context.Context) {
	tb.d.conn.Call(ctx, "", "Target.closeTarget", map[string]any{"targetId": tb.targetID}, nil)
}

// cookies returns the cookies of a browser context, as CDP reports them.
func (d *driver) cookies(ctx context.Context, contextID string) []networkCookie {
	d.t.Helper()
	params := map[string]any{}
	if contextID != "" {
		params["browserContextId"] = contextID
	}
	var res struct{ Cookies []networkCookie }
	require.NoError(d.t, d.conn.Call(ctx, "", "Storage.getCookies", params, &res))
	return res.Cookies
}

type networkCookie struct {
	Name, Value, Domain, Path string
	Expires                   float64
	HTTPOnly                  bool `json:"httpOnly"`
	Secure, Session           bool
	SameSite                  string `json:"sameSite"`
	PartitionKey              *profiles.CookiePartitionKey
}

func findCookie(cs []networkCookie, name string) *networkCookie {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

// setupApp fills the app origin's localStorage and IndexedDB with values of every kind state.js
// round-trips.
const setupApp = `(async () => {
  localStorage.setItem('plain', 'value');
  localStorage.setItem('unicode', 'héllo wörld ✓ 日本語 🎉');
  localStorage.setItem('big', 'x'.repeat(1 << 20));
  localStorage.setItem('__proto__', 'not a prototype');
  localStorage.setItem('', 'empty key');

  const open = (name, version, upgrade) => new Promise((resolve, reject) => {
    const r = indexedDB.open(name, version);
    r.onupgradeneeded = () => upgrade(r.result);
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
  const db = await open('app', 3, (db) => {
    const users = db.createObjectStore('users', {keyPath: 'id'});
    users.createIndex('by_email', 'email', {unique: true});
    users.createIndex('by_tag', 'tags', {multiEntry: true});
    db.createObjectStore('log', {autoIncrement: true});
    db.createObjectStore('kv');
    db.createObjectStore('counters', {keyPath: 'n', autoIncrement: true});
    db.createObjectStore('compound', {keyPath: ['a', 'b']}).createIndex('by_c', ['c', 'a']);
  });
  const tx = db.transaction(['users', 'log', 'kv', 'counters', 'compound'], 'readwrite');
  const users = tx.objectStore('users');
  users.put({id: 1, email: 'a@x.test', tags: ['x', 'y'], born: new Date(86400000)});
  users.put({id: 2, email: 'b@x.test', tags: ['y']});
  tx.objectStore('log').add('first');
  tx.objectStore('log').add({second: true});
  const kv = tx.objectStore('kv');
  kv.put(null, 'null');
  kv.put(undefined, 'undefined');
  kv.put(true, 'bool');
  kv.put(NaN, 'nan');
  kv.put(Infinity, 'inf');
  kv.put(-Infinity, 'ninf');
  kv.put(-0, 'negzero');
  kv.put(1.5, 'float');
  kv.put('strîng ✓ 🎉', 'string');
  kv.put('lone \ud800 surrogate', 'lone');
  kv.put(12345678901234567890n, 'bigint');
  kv.put(new Date(1700000000000), 'date');
  kv.put(new Date(NaN), 'baddate');
  kv.put(/a+b/gi, 'regexp');
  kv.put(new Uint8Array([1, 2, 3, 255]).buffer, 'arraybuffer');
  kv.put(new Float64Array([1.5, -2]), 'float64');
  kv.put(new BigInt64Array([-5n]), 'bigint64');
  kv.put(new Uint8Array(new Uint8Array([0, 1, 2, 3, 4, 5]).buffer, 2, 3), 'subview');
  kv.put(new DataView(new Uint8Array([9, 8, 7]).buffer), 'dataview');
  kv.put(new Blob(['blob body'], {type: 'text/plain'}), 'blob');
  kv.put(new File(['file body'], 'notes.txt', {type: 'text/markdown', lastModified: 1600000000000}), 'file');
  kv.put(new Map([['k', 1], [2, {deep: [1, 2]}]]), 'map');
  kv.put(new Set([1, 'two', 3]), 'set');
  kv.put({nested: {arr: [1, {x: 'y'}], $: 'dollar'}, holes: [1, , 3], u: undefined}, 'object');
  const shared = {s: 1};
  kv.put({a: shared, b: shared}, 'shared');
  const cyc = {name: 'cyc'};
  cyc.self = cyc;
  kv.put(cyc, 'cycle');
  kv.put(new TypeError('boom'), 'error');
  kv.put(new Boolean(false), 'boolobj');
  kv.put(new String('strobj'), 'strobj');
  const bin = new Uint8Array(2 << 20);
  for (let i = 0; i < bin.length; i++) bin[i] = (i * 7919) & 255;
  kv.put(bin, 'bigbinary');
  kv.put('date key', new Date(5));
  kv.put('binary key', new Uint8Array([1, 2]).buffer);
  kv.put('array key', [1, 'a', [2]]);
  kv.put('infinite key', -Infinity);
  const counters = tx.objectStore('counters');
  counters.put({v: 'a'});
  counters.put({v: 'b'});
  tx.objectStore('compound').put({a: 1, b: 'x', c: 'val'});
  await new Promise((resolve, reject) => { tx.oncomplete = resolve; tx.onerror = () => reject(tx.error); });
  db.close();
  (await open('empty', 7, () => {})).close();
  document.cookie = 'script=js1; path=/';
})()`

// verifyApp checks, in the page, that everything setupApp wrote is there with its type, and
// returns what is not.
const verifyApp = `(async () => {
  const f = [];
  const eq = (what, got, want) => { if (!Object.is(got, want)) f.push(what + ': got ' + String(got) + ', want ' + String(want)); };
  eq('plain', localStorage.getItem('plain'), 'value');
  eq('unicode', localStorage.getItem('unicode'), 'héllo wörld ✓ 日本語 🎉');
  eq('big', localStorage.getItem('big'), 'x'.repeat(1 << 20));
  eq('__proto__', localStorage.getItem('__proto__'), 'not a prototype');
  eq('empty key', localStorage.getItem(''), 'empty key');
  eq('localStorage length', localStorage.length, 5);

  const dbs = (await indexedDB.databases()).map((d) => d.name + '@' + d.version).sort().join(',');
  eq('databases', dbs, 'app@3,empty@7');
  const db = await new Promise((resolve, reject) => {
    const r = indexedDB.open('app');
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
  eq('stores', Array.from(db.objectStoreNames).join(','), 'compound,counters,kv,log,users');
  const req = (r) => new Promise((resolve, reject) => { r.onsuccess = () => resolve(r.result); r.onerror = () => reject(r.error); });
  const tx = db.transaction(Array.from(db.objectStoreNames), 'readonly');
  const users = tx.objectStore('users');
  eq('users keyPath', users.keyPath, 'id');
  eq('users autoIncrement', users.autoIncrement, false);
  const byEmail = users.index('by_email'), byTag = users.index('by_tag');
  eq('by_email unique', byEmail.unique, true);
  eq('by_email multiEntry', byEmail.multiEntry, false);
  eq('by_tag multiEntry', byTag.multiEntry, true);
  eq('by_tag y', (await req(byTag.getAll('y'))).length, 2);
  eq('by_email b', (await req(byEmail.get('b@x.test'))).id, 2);
  const u1 = await req(users.get(1));
  eq('user born is a Date', u1.born instanceof Date, true);
  eq('user born', u1.born.getTime(), 86400000);
  const log = tx.objectStore('log');
  eq('log autoIncrement', log.autoIncrement, true);
  eq('log keyPath', log.keyPath, null);
  eq('log keys', JSON.stringify(await req(log.getAllKeys())), '[1,2]');
  eq('log 2', (await req(log.get(2))).second, true);
  const counters = tx.objectStore('counters');
  eq('counters', JSON.stringify(await req(counters.getAll())), '[{"v":"a","n":1},{"v":"b","n":2}]');
  const compound = tx.objectStore('compound');
  eq('compound keyPath', JSON.stringify(compound.keyPath), '["a","b"]');
  eq('compound index keyPath', JSON.stringify(compound.index('by_c').keyPath), '["c","a"]');
  eq('compound get', (await req(compound.get([1, 'x']))).c, 'val');

  const kv = tx.objectStore('kv');
  const [kvKeys, kvValues] = [await req(kv.getAllKeys()), await req(kv.getAll())];
  await new Promise((resolve) => { tx.oncomplete = resolve; });
  const records = new Map(kvKeys.map((k, i) => [k, kvValues[i]]));
  const get = async (k) => records.get(k);
  eq('undefined stored', records.has('undefined'), true);
  eq('null', await get('null'), null);
  eq('undefined', await get('undefined'), undefined);
  eq('bool', await get('bool'), true);
  eq('nan', await get('nan'), NaN);
  eq('inf', await get('inf'), Infinity);
  eq('ninf', await get('ninf'), -Infinity);
  eq('negzero', await get('negzero'), -0);
  eq('float', await get('float'), 1.5);
  eq('string', await get('string'), 'strîng ✓ 🎉');
  eq('lone', await get('lone'), 'lone \ud800 surrogate');
  eq('bigint', await get('bigint'), 12345678901234567890n);
  const date = await get('date');
  eq('date is a Date', date instanceof Date, true);
  eq('date', date.getTime(), 1700000000000);
  eq('baddate', (await get('baddate')).getTime(), NaN);
  const re = await get('regexp');
  eq('regexp is a RegExp', re instanceof RegExp, true);
  eq('regexp', String(re), '/a+b/gi');
  const ab = await get('arraybuffer');
  eq('arraybuffer is an ArrayBuffer', ab instanceof ArrayBuffer, true);
  eq('arraybuffer', Array.from(new Uint8Array(ab)).join(','), '1,2,3,255');
  const f64 = await get('float64');
  eq('float64 is a Float64Array', f64 instanceof Float64Array, true);
  eq('float64', Array.from(f64).join(','), '1.5,-2');
  const b64 = await get('bigint64');
  eq('bigint64 is a BigInt64Array', b64 instanceof BigInt64Array, true);
  eq('bigint64', b64[0], -5n);
  const sub = await get('subview');
  eq('subview is a Uint8Array', sub instanceof Uint8Array, true);
  eq('subview', Array.from(sub).join(','), '2,3,4');
  const dv = await get('dataview');
  eq('dataview is a DataView', dv instanceof DataView, true);
  eq('dataview', dv.getUint8(0) + ',' + dv.getUint8(2), '9,7');
  const blob = await get('blob');
  eq('blob is a Blob', blob instanceof Blob, true);
  eq('blob type', blob.type, 'text/plain');
  eq('blob body', await blob.text(), 'blob body');
  const file = await get('file');
  eq('file is a File', file instanceof File, true);
  eq('file name', file.name, 'notes.txt');
  eq('file type', file.type, 'text/markdown');
  eq('file lastModified', file.lastModified, 1600000000000);
  eq('file body', await file.text(), 'file body');
  const map = await get('map');
  eq('map is a Map', map instanceof Map, true);
  eq('map k', map.get('k'), 1);
  eq('map 2', JSON.stringify(map.get(2)), '{"deep":[1,2]}');
  const set = await get('set');
  eq('set is a Set', set instanceof Set, true);
  eq('set', Array.from(set).join(','), '1,two,3');
  const obj = await get('object');
  eq('object $', obj.nested.$, 'dollar');
  eq('object nested', JSON.stringify(obj.nested.arr), '[1,{"x":"y"}]');
  eq('object holes', obj.holes.length + ':' + (1 in obj.holes), '3:false');
  eq('object undefined member', 'u' in obj && obj.u === undefined, true);
  const shared = await get('shared');
  eq('shared reference', shared.a === shared.b, true);
  const cyc = await get('cycle');
  eq('cycle', cyc.self === cyc && cyc.name === 'cyc', true);
  const err = await get('error');
  eq('error is a TypeError', err instanceof TypeError, true);
  eq('error message', err.message, 'boom');
  const boolobj = await get('boolobj');
  eq('boolobj', typeof boolobj === 'object' && boolobj.valueOf() === false, true);
  eq('strobj', (await get('strobj')) instanceof String, true);
  const bin = await get('bigbinary');
  let binOK = bin instanceof Uint8Array && bin.length === 2 << 20;
  for (let i = 0; binOK && i < bin.length; i++) binOK = bin[i] === ((i * 7919) & 255);
  eq('bigbinary', binOK, true);
  const keyOf = async (value) => kvKeys[kvValues.indexOf(value)];
  const dk = await keyOf('date key');
  eq('date key is a Date', dk instanceof Date && dk.getTime() === 5, true);
  const bk = await keyOf('binary key');
  eq('binary key', bk instanceof ArrayBuffer && new Uint8Array(bk).join(',') === '1,2', true);
  eq('array key', JSON.stringify(await keyOf('array key')), '[1,"a",[2]]');
  eq('infinite key', await keyOf('infinite key'), -Infinity);

  // Key generators carry on after the restored keys.
  const wtx = db.transaction(['log'], 'readwrite');
  eq('next log key', await req(wtx.objectStore('log').add('third')), 3);
  db.close();
  return f;
})()`

// setupOther gives the second origin a little storage and two CryptoKeys, one of which cannot be
// saved. 127.0.0.2 is loopback, hence a secure context with WebCrypto.
const setupOther = `(async () => {
  localStorage.setItem('other', 'origin');
  const aes = await crypto.subtle.generateKey({name: 'AES-GCM', length: 256}, true, ['encrypt', 'decrypt']);
  const hmac = await crypto.subtle.generateKey({name: 'HMAC', hash: 'SHA-256'}, false, ['sign']);
  const iv = new Uint8Array(12);
  const sealed = await crypto.subtle.encrypt({name: 'AES-GCM', iv}, aes, new TextEncoder().encode('secret'));
  const db = await new Promise((resolve, reject) => {
    const r = indexedDB.open('keys', 1);
    r.onupgradeneeded = () => r.result.createObjectStore('k');
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
  const tx = db.transaction('k', 'readwrite');
  tx.objectStore('k').put({key: aes, sealed}, 'aes');
  tx.objectStore('k').put(hmac, 'hmac');
  await new Promise((resolve) => { tx.oncomplete = resolve; });
  db.close();
})()`

const verifyOther = `(async () => {
  const f = [];
  if (localStorage.getItem('other') !== 'origin') f.push('other localStorage: ' + localStorage.getItem('other'));
  const db = await new Promise((resolve, reject) => {
    const r = indexedDB.open('keys');
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
  const req = (r) => new Promise((resolve, reject) => { r.onsuccess = () => resolve(r.result); r.onerror = () => reject(r.error); });
  const store = db.transaction('k').objectStore('k');
  const rec = await req(store.get('aes'));
  if (!(rec && rec.key instanceof CryptoKey)) {
    f.push('aes key is not a CryptoKey');
  } else {
    const plain = await crypto.subtle.decrypt({name: 'AES-GCM', iv: new Uint8Array(12)}, rec.key, rec.sealed);
    if (new TextDecoder().decode(plain) !== 'secret') f.push('aes key decrypts wrongly');
    if (rec.key.usages.join(',') !== 'encrypt,decrypt') f.push('aes usages ' + rec.key.usages);
  }
  if ((await req(store.count('hmac'))) !== 0) f.push('the unsaveable hmac key was restored');
  db.close();
  return f;
})()`

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestCaptureRestoreRoundTrip(t *testing.T) {
	ctx := testContext(t)
	s := startSites(t)

	a := startBrowser(t)
	da := newDriver(t, ctx, a)
	// The secure site's tab closes before tracking starts: the tracker sees that origin only in
	// the frame below.
	sec := da.open(ctx, "", s.secure+"/cookies")
	sec.close(ctx)
	tr, err := profiles.Track(ctx, a.CDP(), "")
	require.NoError(t, err)
	defer tr.Close()
	app := da.open(ctx, "", s.app+"/cookies")
	app.eval(ctx, setupApp, nil)
	app.navigate(ctx, s.app+"/framed?src="+s.secure+"/") // a cross-site frame
	other := da.open(ctx, "", s.other+"/cookies")
	other.eval(ctx, setupOther, nil)

	polltest.UntilState(t, time.Minute, "the tracker to see every origin", func() bool {
		return slices.Equal(tr.Origins(), []string{s.other, s.app, s.secure})
	}, func() string { return fmt.Sprint("it saw ", tr.Origins()) })

	start := time.Now()
	st, err := profiles.Capture(ctx, a.CDP(), "", tr.Origins())
	require.NoError(t, err)
	t.Logf("capture: %s", time.Since(start))
	assert.Equal(t, []string{s.other, s.app}, st.OriginList(), "captured origins (the secure origin holds only cookies)")
	for _, o := range st.Origins {
		if o.Origin == s.other && (len(o.Skipped) != 1 || !strings.Contains(o.Skipped[0], "CryptoKey (non-extractable)")) {
			t.Errorf("skipped records of %s: %q, want the non-extractable key", o.Origin, o.Skipped)
		}
	}
	byName := map[string]profiles.Cookie{}
	for _, c := range st.Cookies {
		byName[c.Name] = c
	}
	for _, tc := range []struct {
		name              string
		hostOnly, session bool
	}{
		{"persist", true, false}, {"sess", true, true}, {"hidden", true, true},
		{"dom", false, false}, {"strict", true, true}, {"pathy", true, true},
		{"script", true, true}, {"sec", true, false}, {"chip", true, true}, {"other", true, true},
	} {
		c, ok := byName[tc.name]
		if !ok {
			t.Errorf("cookie %s was not captured", tc.name)
			continue
		}
		if c.HostOnly() != tc.hostOnly || c.Session() != tc.session {
			t.Errorf("captured cookie %s: host-only %v, session %v; want %v, %v", tc.name, c.HostOnly(), c.Session(), tc.hostOnly, tc.session)
		}
	}
	assert.NotNil(t, byName["chip"].PartitionKey, "the partitioned cookie lost its partition key: %+v", byName["chip"])

	blob, err := st.Encode()
	require.NoError(t, err)
	t.Logf("encoded state: %d bytes", len(blob))
	a.Close()

	b := startBrowser(t)
	st2, err := profiles.DecodeState(blob)
	require.NoError(t, err)
	start = time.Now()
	require.NoError(t, profiles.Restore(ctx, b.CDP(), "", st2))
	t.Logf("restore: %s", time.Since(start))

	// What B holds now reads back as what A held.
	again, err := profiles.Capture(ctx, b.CDP(), "", []string{s.app, s.secure, s.other})
	require.NoError(t, err)
	compareStates(t, st, again)

	db := newDriver(t, ctx, b)
	cs := db.cookies(ctx, "")
	for _, tc := range []struct {
		name, domain string
		session      bool
	}{
		{"persist", "app.trawler.test", false},
		{"sess", "app.trawler.test", true},
		{"dom", ".trawler.test", false},
		{"hidden", "app.trawler.test", true},
	} {
		c := findCookie(cs, tc.name)
		if c == nil {
			t.Errorf("cookie %s missing after restore", tc.name)
			continue
		}
		if c.Domain != tc.domain || c.Session != tc.session {
			t.Errorf("cookie %s after restore: domain %q session %v, want %q %v", tc.name, c.Domain, c.Session, tc.domain, tc.session)
		}
	}
	if c := findCookie(cs, "hidden"); c != nil && !c.HTTPOnly {
		t.Errorf("hidden lost httpOnly")
	}
	if c := findCookie(cs, "strict"); c != nil && c.SameSite != "Strict" {
		t.Errorf("strict has sameSite %q", c.SameSite)
	}
	if c := findCookie(cs, "sec"); c != nil && !c.Secure {
		t.Errorf("sec lost secure")
	}

	app = db.open(ctx, "", s.app+"/")
	var failures []string
	app.eval(ctx, verifyApp, &failures)
	for _, f := range failures {
		t.Errorf("app origin: %s", f)
	}
	var docCookie, echoed string
	app.eval(ctx, `document.cookie`, &docCookie)
	assert.Equal(t, "dom=d1; persist=p1; script=js1; sess=s1; strict=st1", sortedCookies(docCookie), "document.cookie")
	app.eval(ctx, `fetch('/echo').then((r) => r.text())`, &echoed)
	assert.Equal(t, "dom=d1; hidden=h1; persist=p1; script=js1; sess=s1; strict=st1", sortedCookies(echoed), "the cookies the server received")
	// The host-only cookies stay on their host; the domain cookie reaches the sibling.
	sec = db.open(ctx, "", s.secure+"/")
	sec.eval(ctx, `fetch('/echo').then((r) => r.text())`, &echoed)
	assert.Equal(t, "chip=c1; dom=d1; sec=se1", sortedCookies(echoed), "the cookies the secure site received")
	other = db.open(ctx, "", s.other+"/")
	failures = nil
	other.eval(ctx, verifyOther, &failures)
	for _, f := range failures {
		t.Errorf("other origin: %s", f)
	}
}

// sortedCookies sorts a Cookie header's pairs.
func sortedCookies(h string) string {
	parts := strings.Split(h, "; ")
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}

// compareStates checks that two captures hold the same cookies and storage.
func compareStates(t *testing.T, want, got *profiles.State) {
	t.Helper()
	key := func(c profiles.Cookie) string { return c.Domain + "|" + c.Path + "|" + c.Name }
	wc := map[string]profiles.Cookie{}
	for _, c := range want.Cookies {
		wc[key(c)] = c
	}
	if len(got.Cookies) != len(want.Cookies) {
		t.Errorf("%d cookies, want %d", len(got.Cookies), len(want.Cookies))
	}
	for _, c := range got.Cookies {
		w, ok := wc[key(c)]
		if !ok {
			t.Errorf("unexpected cookie %+v", c)
			continue
		}
		if d := c.Expires - w.Expires; d > 1 || d < -1 {
			t.Errorf("cookie %s expires at %f, want %f", key(c), c.Expires, w.Expires)
		}
		c.Expires = w.Expires
		if !jsonEqual(c, w) {
			t.Errorf("cookie %s:\n got %s\nwant %s", key(c), mustJSON(c), mustJSON(w))
		}
	}
	if !slices.Equal(got.OriginList(), want.OriginList()) {
		t.Errorf("origins %v, want %v", got.OriginList(), want.OriginList())
		return
	}
	for i := range want.Origins {
		w, g := want.Origins[i], got.Origins[i]
		w.Skipped = nil
		if jsonEqual(w, g) {
			continue
		}
		for k, v := range w.LocalStorage {
			if gv, ok := g.LocalStorage[k]; !ok || gv != v {
				t.Errorf("%s: localStorage[%q] = %.100q (present %v), want %.100q", w.Origin, k, gv, ok, v)
			}
		}
		if len(w.LocalStorage) != len(g.LocalStorage) {
			t.Errorf("%s: %d localStorage keys, want %d", w.Origin, len(g.LocalStorage), len(w.LocalStorage))
		}
		for j := range w.IndexedDB {
			if j >= len(g.IndexedDB) {
				t.Errorf("%s: database %s missing", w.Origin, w.IndexedDB[j].Name)
				continue
			}
			wd, gd := w.IndexedDB[j], g.IndexedDB[j]
			for k := range wd.Stores {
				if k >= len(gd.Stores) || !jsonEqual(wd.Stores[k], gd.Stores[k]) {
					t.Errorf("%s: database %s, store %s differs:\n got %.2000s\nwant %.2000s", w.Origin, wd.Name, wd.Stores[k].Name,
						mustJSON(gd.Stores[min(k, len(gd.Stores)-1)]), mustJSON(wd.Stores[k]))
				}
			}
		}
		if !t.Failed() {
			t.Errorf("%s differs:\n got %.2000s\nwant %.2000s", w.Origin, mustJSON(g), mustJSON(w))
		}
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func jsonEqual(a, b any) bool { return bytes.Equal(mustJSON(a), mustJSON(b)) }

func TestCaptureRestoreBrowserContext(t *testing.T) {
	ctx := testContext(t)
	s := startSites(t)
	b := startBrowser(t)
	d := newDriver(t, ctx, b)

	newContext := func() string { return d.newContext(ctx) }

	def := d.open(ctx, "", s.app+"/")
	def.eval(ctx, `localStorage.setItem('where', 'default'); document.cookie = 'who=default; max-age=3600'`, nil)
	d.open(ctx, "", s.other+"/")

	ctx1 := newContext()
	tr, err := profiles.Track(ctx, b.CDP(), ctx1)
	require.NoError(t, err)
	defer tr.Close()
	in1 := d.open(ctx, ctx1, s.app+"/")
	in1.eval(ctx, `localStorage.setItem('where', 'context'); document.cookie = 'who=context; max-age=3600'; document.cookie = 'only=context'`, nil)
	polltest.Until(t, time.Minute, "the tracker", func() bool { return len(tr.Origins()) > 0 })
	assert.Equal(t, []string{s.app}, tr.Origins(), "the origins the context's tracker saw")

	st, err := profiles.Capture(ctx, b.CDP(), ctx1, tr.Origins())
	require.NoError(t, err)
	assert.Equal(t, "only=context who=context", cookieNames(st), "the context's cookies")
	if len(st.Origins) != 1 || st.Origins[0].LocalStorage["where"] != "context" {
		t.Errorf("the context's storage: %+v", st.Origins)
	}

	ctx2 := newContext()
	require.NoError(t, profiles.Restore(ctx, b.CDP(), ctx2, st))
	in2 := d.open(ctx, ctx2, s.app+"/")
	var got struct{ Where, Cookie string }
	in2.eval(ctx, `({where: localStorage.getItem('where'), cookie: document.cookie})`, &got)
	if got.Where != "context" || sortedCookies(got.Cookie) != "only=context; who=context" {
		t.Errorf("the restored context holds %+v", got)
	}

	// The default context is untouched by all of it.
	def.eval(ctx, `({where: localStorage.getItem('where'), cookie: document.cookie})`, &got)
	if got.Where != "default" || got.Cookie != "who=default" {
		t.Errorf("the default context now holds %+v", got)
	}
	dst, err := profiles.Capture(ctx, b.CDP(), "", []string{s.app})
	require.NoError(t, err)
	assert.Equal(t, "who=default", cookieNames(dst), "the default context's cookies")
}

func cookieNames(st *profiles.State) string {
	var out []string
	for _, c := range st.Cookies {
		out = append(out, c.Name+"="+c.Value)
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

func TestCaptureEmptyBrowser(t *testing.T) {
	ctx := testContext(t)
	s := startSites(t)
	b := startBrowser(t)

	tr, err := profiles.Track(ctx, b.CDP(), "")
	require.NoError(t, err)
	defer tr.Close()
	for _, origins := range [][]string{nil, {s.app, s.other}} {
		st, err := profiles.Capture(ctx, b.CDP(), "", origins)
		require.NoError(t, err, "capturing %v", origins)
		if len(st.Cookies) != 0 || len(st.Origins) != 0 {
			t.Errorf("capturing %v of an empty browser: %+v", origins, st)
		}
		blob, err := st.Encode()
		require.NoError(t, err)
		back, err := profiles.DecodeState(blob)
		require.NoError(t, err)
		require.NoError(t, profiles.Restore(ctx, b.CDP(), "", back), "restoring an empty state")
	}
	// about:blank is no origin, and the helper tab is hidden (a target of type "other"), so the
	// tracker has seen nothing.
	assert.Empty(t, tr.Origins(), "tracked")
	_, err = profiles.Capture(ctx, b.CDP(), "", []string{"file:///etc"})
	assert.Error(t, err, "capturing a file: origin succeeded")
}

func TestCaptureLeavesUserTabsAlone(t *testing.T) {
	ctx := testContext(t)
	s := startSites(t)
	b := startBrowser(t)
	d := newDriver(t, ctx, b)

	user := d.open(ctx, "", s.app+"/some/page?q=1#frag")
	user.eval(ctx, `window.marker = 'still here'; localStorage.setItem('k', 'v')`, nil)
	before := pageTargets(t, ctx, d)

	st, err := profiles.Capture(ctx, b.CDP(), "", []string{s.app})
	require.NoError(t, err)
	if len(st.Origins) != 1 || st.Origins[0].LocalStorage["k"] != "v" {
		t.Errorf("captured %+v", st.Origins)
	}
	require.NoError(t, profiles.Restore(ctx, b.CDP(), "", st))

	var got struct{ Href, Marker string }
	user.eval(ctx, `({href: location.href, marker: window.marker})`, &got)
	if got.Href != s.app+"/some/page?q=1#frag" || got.Marker != "still here" {
		t.Errorf("the user's tab is now %+v", got)
	}
	assert.Equal(t, before, pageTargets(t, ctx, d), "page targets")
}

// A capture reads an origin that a user's page shows from that page, in a script world of its own:
// no helper tab opens for it, and the page's own scripts can neither see nor change what the
// capture reads. A page that cannot answer, here one that shows a dialog, is read on a helper tab.
func TestCaptureReadsUserPagesInAWorldOfItsOwn(t *testing.T) {
	ctx := testContext(t)
	s := startSites(t)
	b := startBrowser(t)
	d := newDriver(t, ctx, b)

	app := d.open(ctx, "", s.app+"/page")
	app.eval(ctx, setupApp, nil)
	// The page's own world lies about its storage, and would leak anything left on its globals.
	app.eval(ctx, `(() => {
		history.pushState({}, '', '/page?pushed');
		Storage.prototype.getItem = () => 'forged';
		IDBObjectStore.prototype.getAll = function () { throw new Error('forged'); };
		JSON.stringify = () => '"forged"';
		window.seen = [];
		for (const name of ['trawlerProfile', 'trawlerProfileState']) {
			Object.defineProperty(window, name, {set(v) { window.seen.push(name); }, get() { return undefined; }, configurable: true});
		}
		return true;
	})()`, nil)
	other := d.open(ctx, "", s.other+"/page")
	other.eval(ctx, `localStorage.setItem('behind', 'a dialog')`, nil)
	require.NoError(t, d.conn.Call(ctx, other.session, "Page.enable", nil, nil))
	require.NoError(t, d.conn.Call(ctx, other.session, "Runtime.evaluate", map[string]any{"expression": `setTimeout(() => alert('busy'), 0)`}, nil))
	var historyBefore int
	app.eval(ctx, `history.length`, &historyBefore)

	// Record the targets that open during the capture, and every address they show.
	watch, err := b.CDP().Dial(ctx)
	require.NoError(t, err)
	defer watch.Close()
	var mu sync.Mutex
	known := map[string]bool{}
	helpers := map[string][]string{} // target id → the addresses it showed
	watch.OnEvent(func(e cdp.Event) {
		if e.Method != "Target.targetCreated" && e.Method != "Target.targetInfoChanged" {
			return
		}
		var p struct {
			TargetInfo struct{ TargetID, URL string } `json:"targetInfo"`
		}
		json.Unmarshal(e.Params, &p)
		ti := p.TargetInfo
		mu.Lock()
		defer mu.Unlock()
		if !known[ti.TargetID] {
			helpers[ti.TargetID] = append(helpers[ti.TargetID], ti.URL)
		}
	})
	require.NoError(t, watch.Call(ctx, "", "Target.setDiscoverTargets", map[string]any{"discover": true}, nil))
	for _, pt := range pageTargets(t, ctx, d) {
		id, _, _ := strings.Cut(pt, "=")
		mu.Lock()
		known[id] = true
		delete(helpers, id)
		mu.Unlock()
	}

	start := time.Now()
	st, err := profiles.Capture(ctx, b.CDP(), "", []string{s.app, s.other})
	took := time.Since(start)
	require.NoError(t, err)
	t.Logf("capture: %s", took)
	mu.Lock()
	var visited []string
	for _, urls := range helpers {
		for _, u := range urls {
			if strings.HasPrefix(u, "http") {
				visited = append(visited, u)
			}
		}
	}
	mu.Unlock()
	assert.Len(t, helpers, 1, "tabs the capture opened: one, for the origin whose page shows a dialog")
	for _, u := range visited {
		assert.True(t, strings.HasPrefix(u, s.other+"/"), "a helper tab visited %s: only the origin behind the dialog needs one", u)
	}
	assert.NotEmpty(t, visited, "the helper tab's visits")
	require.Equal(t, []string{s.other, s.app}, st.OriginList())
	for _, o := range st.Origins {
		switch o.Origin {
		case s.other:
			assert.Equal(t, map[string]string{"behind": "a dialog"}, o.LocalStorage, "the storage of the origin behind a dialog")
		case s.app:
			assert.NotContains(t, string(mustJSON(o)), "forged", "the page's own scripts changed what was captured")
		}
	}

	// The dialog goes; the app's page is as it was, and the app's storage restores whole.
	require.NoError(t, d.conn.Call(ctx, other.session, "Page.handleJavaScriptDialog", map[string]any{"accept": true}, nil))
	var after struct {
		Href    string
		History int
		Seen    []string
		Globals bool
	}
	app.eval(ctx, `({href: location.href, history: history.length, seen: window.seen,
		globals: Object.getOwnPropertyNames(window).some((n) => n.startsWith('trawler') && !Object.getOwnPropertyDescriptor(window, n).set)})`, &after)
	assert.Equal(t, s.app+"/page?pushed", after.Href)
	assert.Equal(t, historyBefore, after.History, "history length")
	assert.Empty(t, after.Seen, "what the capture set on the page's globals")
	assert.False(t, after.Globals, "the page has globals of the capture")

	c := startBrowser(t)
	require.NoError(t, profiles.Restore(ctx, c.CDP(), "", st))
	restored := newDriver(t, ctx, c).open(ctx, "", s.app+"/page")
	var missing []string
	restored.eval(ctx, verifyApp, &missing)
	assert.Empty(t, missing, "what the restored app lacks")
}

// pageTargets lists the browser's pages as id=url, sorted.
func pageTargets(t *testing.T, ctx context.Context, d *driver) []string {
	t.Helper()
	var res struct {
		TargetInfos []struct {
			TargetID string `json:"targetId"`
			Type     string `json:"type"`
			URL      string `json:"url"`
		} `json:"targetInfos"`
	}
	require.NoError(t, d.conn.Call(ctx, "", "Target.getTargets", nil, &res))
	var out []string
	for _, ti := range res.TargetInfos {
		if ti.Type == "page" {
			out = append(out, ti.TargetID+"="+ti.URL)
		}
	}
	slices.Sort(out)
	return out
}

func TestDecodeStateRefusesBadInput(t *testing.T) {
	good, err := (&profiles.State{Cookies: []profiles.Cookie{{Name: "a", Value: "b", Domain: "x.test", Path: "/"}},
		Origins: []profiles.OriginState{{Origin: "https://x.test", LocalStorage: map[string]string{"k": strings.Repeat("v", 10000)}}}}).Encode()
	require.NoError(t, err)
	st, err := profiles.DecodeState(good)
	require.NoError(t, err, "decoding a good state")
	require.Equal(t, "a", st.Cookies[0].Name, "decoding a good state: %+v", st)
	require.Equal(t, profiles.StateVersion, st.Version, "decoding a good state")

	gz := func(s string) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		io.WriteString(zw, s)
		zw.Close()
		return buf.Bytes()
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "empty or truncated"},
		{"garbage", []byte("this is not a profile"), "not gzip"},
		{"truncated", good[:len(good)/2], "truncated"},
		{"no trailer", good[:len(good)-4], "truncated"},
		{"corrupt checksum", append(append([]byte{}, good[:len(good)-8]...), 0, 0, 0, 0, 0, 0, 0, 0), "checksum"},
		{"trailing bytes", append(append([]byte{}, good...), "junk"...), "trailing"},
		{"not json", gz("<html>"), "invalid"},
		{"truncated json", gz(`{"version":1,"cookies":[`), "truncated"},
		{"two values", gz(`{"version":1} {}`), "trailing"},
		{"unknown version", gz(`{"version":99}`), "version 99"},
		{"no version", gz(`{}`), "version 0"},
		{"bad origin", gz(`{"version":1,"origins":[{"origin":"javascript:alert(1)"}]}`), "origin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := profiles.DecodeState(tc.data)
			assert.ErrorIs(t, err, profiles.ErrInvalidState)
			assert.ErrorContains(t, err, tc.want)
		})
	}

	t.Run("too large", func(t *testing.T) {
		_, err := profiles.DecodeState(spaceBomb(513 << 20))
		assert.ErrorIs(t, err, profiles.ErrInvalidState, "want a refusal of more than 512 MiB")
		assert.ErrorContains(t, err, "512 MiB", "want a refusal of more than 512 MiB")
	})
}

// spaceBomb returns a gzip stream of about n/160 bytes that inflates to at least n spaces. It is
// written by hand, one fixed-Huffman deflate block of repeated 258-byte matches, because
// compressing that much takes minutes under the race detector.
func spaceBomb(n int) []byte {
	out := bytes.NewBuffer([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	var acc uint64
	var nbits uint
	put := func(v uint64, n uint) {
		acc |= v << nbits
		for nbits += n; nbits >= 8; nbits -= 8 {
			out.WriteByte(byte(acc))
			acc >>= 8
		}
	}
	huff8 := func(code uint8) { put(uint64(bits.Reverse8(code)), 8) } // codes go most significant bit first
	put(1, 1)                                                         // the final block
	put(1, 2)                                                         // of fixed Huffman codes:
	huff8(0x30 + ' ')                                                 // a literal space,
	matches := (n + 256) / 258
	for range matches {
		huff8(0xc0 + 5) // length 258 (code 285)
		put(0, 5)       // at distance 1
	}
	put(0, 7) // end of block
	if nbits > 0 {
		out.WriteByte(byte(acc))
	}
	size := 1 + 258*matches
	crc := crc32.NewIEEE()
	chunk := bytes.Repeat([]byte{' '}, 1<<20)
	for left := size; left > 0; left -= len(chunk) {
		crc.Write(chunk[:min(left, len(chunk))])
	}
	b := binary.LittleEndian.AppendUint32(out.Bytes(), crc.Sum32())
	return binary.LittleEndian.AppendUint32(b, uint32(size))
}

func TestRestoreNamesFailingOrigin(t *testing.T) {
	ctx := testContext(t)
	b := startBrowser(t)
	st := &profiles.State{Origins: []profiles.OriginState{
		{Origin: "http://fine.trawler.test", LocalStorage: map[string]string{"k": "v"}},
		{Origin: "http://broken.trawler.test", IndexedDB: []profiles.Database{{Name: "db", Version: 1, Stores: []profiles.ObjectStore{{
			Name: "s", KeyPath: json.RawMessage(`null`),
			Records: []profiles.Record{{Key: json.RawMessage(`1`), Value: json.RawMessage(`{"$":"no such type"}`)}},
		}}}}},
	}}
	err := profiles.Restore(ctx, b.CDP(), "", st)
	assert.ErrorContains(t, err, "http://broken.trawler.test", "restoring a broken record")
	assert.ErrorContains(t, err, "no such type", "restoring a broken record")
}

// benchStorage fills an origin with about 5 MB of data that compresses poorly: 2 MB of
// localStorage, 2.5 MB of small IndexedDB records and 0.5 MB of binary ones.
const benchStorage = `(async () => {
  const words = (n) => {
    let s = '';
    while (s.length < n) s += Math.random().toString(36).slice(2) + (Math.random() < 0.1 ? ' é ' : ' ');
    return s.slice(0, n);
  };
  for (let i = 0; i < 100; i++) localStorage.setItem('item' + i, words(20000));
  const db = await new Promise((resolve, reject) => {
    const r = indexedDB.open('bench', 1);
    r.onupgradeneeded = () => {
      r.result.createObjectStore('docs', {keyPath: 'id'}).createIndex('by_tag', 'tags', {multiEntry: true});
      r.result.createObjectStore('blobs');
    };
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
  const tx = db.transaction(['docs', 'blobs'], 'readwrite');
  for (let i = 0; i < 2000; i++) {
    tx.objectStore('docs').put({id: i, title: 'document ' + i, body: words(1100),
      tags: ['t' + (i % 7), 't' + (i % 11)], when: new Date(1700000000000 + i), score: i / 3});
  }
  for (let i = 0; i < 20; i++) tx.objectStore('blobs').put(crypto.getRandomValues(new Uint8Array(25000)), 'blob' + i);
  await new Promise((resolve, reject) => { tx.oncomplete = resolve; tx.onerror = () => reject(tx.error); });
  db.close();
})()`

// BenchmarkCaptureRestore times Capture and Restore of 1,000 cookies (over ten sites: Chromium
// keeps at most 180 per site) plus about 5 MB of localStorage and IndexedDB in one origin.
func BenchmarkCaptureRestore(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	s := startSites(b)
	a := startBrowser(b)
	d := newDriver(b, ctx, a)

	var cookies []map[string]any
	for i := range 1000 {
		c := map[string]any{"name": fmt.Sprintf("c%d", i), "value": strings.Repeat("v", 40), "path": "/",
			"httpOnly": i%3 == 0}
		site := fmt.Sprintf("site%d.test", i%10)
		if i%2 == 0 {
			c["url"] = "http://www." + site + "/"
		} else {
			c["domain"] = "." + site
		}
		if i%4 != 0 {
			c["expires"] = time.Now().Add(time.Hour).Unix()
		}
		cookies = append(cookies, c)
	}
	require.NoError(b, d.conn.Call(ctx, "", "Storage.setCookies", map[string]any{"cookies": cookies}, nil))
	d.open(ctx, "", s.app+"/").eval(ctx, benchStorage, nil)
	origins := []string{s.app}

	st, err := profiles.Capture(ctx, a.CDP(), "", origins)
	require.NoError(b, err)
	if len(st.Cookies) != 1000 || len(st.Origins) != 1 {
		b.Fatalf("captured %d cookies and %d origins", len(st.Cookies), len(st.Origins))
	}
	raw, _ := json.Marshal(st)
	blob, err := st.Encode()
	require.NoError(b, err)

	b.Run("Capture", func(b *testing.B) {
		for b.Loop() {
			if _, err := profiles.Capture(ctx, a.CDP(), "", origins); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(raw)), "state-bytes")
	})
	b.Run("Encode", func(b *testing.B) {
		for b.Loop() {
			if _, err := st.Encode(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(blob)), "encoded-bytes")
	})
	b.Run("Decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := profiles.DecodeState(blob); err != nil {
				b.Fatal(err)
			}
		}
	})
	fresh := startBrowser(b)
	b.Run("Restore", func(b *testing.B) {
		for b.Loop() {
			require.NoError(b, profiles.Restore(ctx, fresh.CDP(), "", st))
		}
	})
}

// TestStorageOfUnreachableOrigins restores and captures origins that no server answers for, on the
// default ports: the helper tab never reaches the network, and an http origin stays http although
// the browser tries https first for a public host name (www.example.com, which the host-resolver
// rule keeps on loopback all the same).
func TestStorageOfUnreachableOrigins(t *testing.T) {
	ctx := testContext(t)
	b := startBrowser(t)
	want := &profiles.State{
		Cookies: []profiles.Cookie{},
		Origins: []profiles.OriginState{
			{Origin: "http://nowhere.trawler.test", LocalStorage: map[string]string{"scheme": "http"}},
			{Origin: "http://www.example.com", LocalStorage: map[string]string{"upgraded": "no"}},
			{Origin: "https://nowhere.trawler.test", LocalStorage: map[string]string{"scheme": "https"}},
			{Origin: "https://xn--bcher-kva.trawler.test:8443", LocalStorage: map[string]string{"scheme": "https", "port": "8443"}},
		},
	}
	require.NoError(t, profiles.Restore(ctx, b.CDP(), "", want))
	got, err := profiles.Capture(ctx, b.CDP(), "", []string{
		"http://www.example.com", "http://nowhere.trawler.test", "https://nowhere.trawler.test:443", "HTTPS://Xn--Bcher-Kva.trawler.test:8443/",
	})
	require.NoError(t, err)
	for i := range want.Origins {
		if i >= len(got.Origins) || !jsonEqual(got.Origins[i], want.Origins[i]) {
			t.Errorf("captured %s, want %s", mustJSON(got.Origins), mustJSON(want.Origins))
			break
		}
	}
}

func TestRestoreNamesRefusedCookies(t *testing.T) {
	ctx := testContext(t)
	b := startBrowser(t)
	st := &profiles.State{Cookies: []profiles.Cookie{
		{Name: "good", Value: "1", Domain: "app.trawler.test", Path: "/"},
		{Name: "__Host-bad", Value: "2", Domain: ".trawler.test", Path: "/"}, // the prefix forbids a Domain
		{Name: "expired", Value: "3", Domain: "app.trawler.test", Path: "/", Expires: 1},
	}}
	err := profiles.Restore(ctx, b.CDP(), "", st)
	if err == nil || !strings.Contains(err.Error(), "__Host-bad (") || strings.Contains(err.Error(), "good") {
		t.Errorf("restoring a refused cookie: %v", err)
	}
	got, err := profiles.Capture(ctx, b.CDP(), "", nil)
	require.NoError(t, err)
	assert.Equal(t, "good=1", cookieNames(got), "the browser's cookies: want the good cookie only")
}

// BenchmarkManyOrigins times Capture and Restore of ten origins holding 50 kB of localStorage and
// a small database each: there the visits dominate, not the data.
func BenchmarkManyOrigins(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	br := startBrowser(b)
	st := &profiles.State{}
	var origins []string
	for i := range 10 {
		o := fmt.Sprintf("http://o%d.trawler.test", i)
		origins = append(origins, o)
		st.Origins = append(st.Origins, profiles.OriginState{
			Origin:       o,
			LocalStorage: map[string]string{"k": strings.Repeat("v", 50000)},
			IndexedDB: []profiles.Database{{Name: "db", Version: 1, Stores: []profiles.ObjectStore{{
				Name: "s", KeyPath: json.RawMessage(`null`),
				Records: []profiles.Record{{Key: json.RawMessage(`"a"`), Value: json.RawMessage(`{"x":1}`)}},
			}}}},
		})
	}
	require.NoError(b, profiles.Restore(ctx, br.CDP(), "", st))
	b.Run("Capture", func(b *testing.B) {
		for b.Loop() {
			got, err := profiles.Capture(ctx, br.CDP(), "", origins)
			require.NoError(b, err)
			if len(got.Origins) != len(origins) {
				b.Fatalf("captured %d origins", len(got.Origins))
			}
		}
	})
	b.Run("Restore", func(b *testing.B) {
		for b.Loop() {
			require.NoError(b, profiles.Restore(ctx, br.CDP(), "", st))
		}
	})
}

// TestUseRestoresLocalStorageWhole saves a profile whose origin holds many localStorage items and
// no database, and restores it into fresh browser contexts: a page opened as soon as Apply returns
// sees every item, exactly (a string that is not well-formed UTF-16 included). The page writes
// localStorage without waiting for the browser's storage backend, so Restore must wait for it
// before the helper tab closes.
func TestUseRestoresLocalStorageWhole(t *testing.T) {
	ctx := testContext(t)
	s := startSites(t)
	b := startBrowser(t)
	d := newDriver(t, ctx, b)
	newContext := func() string { return d.newContext(ctx) }
	opener := &profiles.Opener{Store: profiles.NewFS(t.TempDir()), Instance: "test", LockTTL: time.Minute}

	writer, err := opener.Open(ctx, "team", "many", profiles.ReadWrite)
	require.NoError(t, err)
	ctx1 := newContext()
	require.NoError(t, writer.Apply(ctx, b.CDP(), ctx1))
	var n int
	d.open(ctx, ctx1, s.app+"/").eval(ctx, `(() => {
  for (let i = 0; i < 3000; i++) localStorage.setItem('item' + i, String(i).repeat(300));
  localStorage.setItem('lone', 'a\ud800b');
  localStorage.setItem('__proto__', 'p');
  localStorage.setItem('', 'empty key');
  return localStorage.length;
})()`, &n)
	require.Equal(t, 3003, n)
	require.NoError(t, writer.Close(ctx, profiles.Save))

	for round := range 3 {
		reader, err := opener.Open(ctx, "team", "many", profiles.ReadOnly)
		require.NoError(t, err)
		c := newContext()
		require.NoError(t, reader.Apply(ctx, b.CDP(), c))
		var got string
		d.open(ctx, c, s.app+"/").eval(ctx, `(() => {
  const f = [];
  if (localStorage.length !== 3003) f.push('length ' + localStorage.length);
  for (let i = 0; i < 3000; i++) {
    if (localStorage.getItem('item' + i) !== String(i).repeat(300)) { f.push('item' + i); break; }
  }
  if (localStorage.getItem('lone') !== 'a\ud800b') f.push('lone: ' + escape(localStorage.getItem('lone')));
  if (localStorage.getItem('__proto__') !== 'p') f.push('__proto__');
  if (localStorage.getItem('') !== 'empty key') f.push('empty key');
  return f.join(', ');
})()`, &got)
		assert.Empty(t, got, "round %d: the restored localStorage", round)
		require.NoError(t, reader.Close(ctx, profiles.Discard))
	}
}
