package service_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/profiles/miniotest"
)

// loginSite is a site whose /login signs the browser in with a session
// cookie (httpOnly, no expiry), a persistent cookie, localStorage and an
// IndexedDB record, and whose /account says what the browser carries.
type loginSite struct {
	*httptest.Server
	mu       sync.Mutex
	accounts []bool // whether each /account request carried the session cookie
}

const loginPage = `<!doctype html><title>login</title><script>
localStorage.setItem('user', 'Ada Lovelace ✓');
const open = indexedDB.open('shop', 3);
open.onupgradeneeded = () => {
  const db = open.result;
  db.createObjectStore('cart', {keyPath: 'sku'}).createIndex('byQty', 'qty');
  db.createObjectStore('log', {autoIncrement: true});
};
open.onsuccess = () => {
  const tx = open.result.transaction(['cart', 'log'], 'readwrite');
  tx.objectStore('cart').put({sku: 'A1', qty: 2, added: new Date(86400000), tags: new Set(['gift'])});
  tx.objectStore('log').add(new Uint8Array([1, 2, 3]));
  tx.oncomplete = () => { document.title = 'ready'; };
};
</script>`

// accountPage shows the server's view (cookie) and the page's view
// (localStorage and IndexedDB) as text, so that a scrape's Markdown says
// which state the browser had.
const accountPage = `<!doctype html><title>account</title><main><h1>Account</h1><p>Server says: %s</p>
<p id="ls">Local user: unknown</p><p id="idb">Cart: unknown</p></main><script>
document.getElementById('ls').textContent = 'Local user: ' + (localStorage.getItem('user') || 'none');
const open = indexedDB.open('shop');
open.onsuccess = () => {
  const db = open.result;
  if (!db.objectStoreNames.contains('cart')) { document.getElementById('idb').textContent = 'Cart: empty'; return; }
  db.transaction('cart').objectStore('cart').get('A1').onsuccess = (e) => {
    const v = e.target.result;
    document.getElementById('idb').textContent = v ? 'Cart: ' + v.qty + ' of A1 since ' + v.added.toISOString().slice(0, 10) : 'Cart: empty';
  };
};
</script>`

func newLoginSite(t *testing.T) *loginSite {
	s := &loginSite{}
	mux := http.NewServeMux()
	mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: "s3cr3t", Path: "/", HttpOnly: true})
		http.SetCookie(w, &http.Cookie{Name: "theme", Value: "dark", Path: "/", MaxAge: 3600})
		fmt.Fprint(w, loginPage)
	})
	mux.HandleFunc("/bump", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "bumped", Value: "yes", Path: "/", MaxAge: 3600})
		fmt.Fprint(w, "<!doctype html><title>bump</title><p>bumped</p>")
	})
	mux.HandleFunc("/account", func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie("sid")
		in := err == nil && c.Value == "s3cr3t"
		s.mu.Lock()
		s.accounts = append(s.accounts, in)
		s.mu.Unlock()
		state := "signed out"
		if in {
			state = "signed in"
		}
		if b, err := r.Cookie("bumped"); err == nil && b.Value == "yes" {
			state += ", bumped"
		}
		fmt.Fprintf(w, accountPage, state)
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// drive runs fn against a tab of the session's browser, through its
// cdpUrl, as a user's chromedp script would.
func drive(t *testing.T, cdpURL string, fn func(ctx context.Context) error) {
	t.Helper()
	allocCtx, cancelAlloc := remote.NewAllocator(context.Background(), cdpURL, remote.NoModifyURL)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 30*time.Second)
	defer cancelT()
	require.NoError(t, fn(ctx), "driving the session")
}

// visit opens url in the session and returns what the page sees of the
// browser's storage, after running script (if any) in the page.
func visit(t *testing.T, cdpURL, url, script string) browserState {
	t.Helper()
	var got browserState
	drive(t, cdpURL, func(ctx context.Context) error {
		if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
			return err
		}
		var err error
		if got, err = chromedp.Run(ctx, chromedp.Evaluate[browserState](readState, chromedp.EvalAwaitPromise)); err != nil {
			return err
		}
		if script != "" {
			_, err = chromedp.Run(ctx, chromedp.Evaluate[any](script))
		}
		return err
	})
	return got
}

// readState is what a page of the site sees of the browser's storage.
const readState = `new Promise((resolve) => {
  const open = indexedDB.open('shop');
  open.onsuccess = () => {
    const db = open.result;
    const out = {user: localStorage.getItem('user'), cookies: document.cookie, version: db.version, stores: [...db.objectStoreNames]};
    if (!out.stores.includes('cart')) { resolve(out); return; }
    const tx = db.transaction(['cart', 'log']);
    tx.objectStore('cart').get('A1').onsuccess = (e) => {
      const v = e.target.result;
      out.cart = v && {qty: v.qty, date: v.added instanceof Date && v.added.toISOString(), gift: v.tags instanceof Set && v.tags.has('gift')};
    };
    tx.objectStore('log').getAll().onsuccess = (e) => { out.log = e.target.result.map((b) => b instanceof Uint8Array && Array.from(b).join(',')); };
    tx.objectStore('cart').index('byQty').count(2).onsuccess = (e) => { out.byQty = e.target.result; };
    tx.oncomplete = () => resolve(out);
  };
})`

type browserState struct {
	User    string   `json:"user"`
	Cookies string   `json:"cookies"`
	Version int      `json:"version"`
	Stores  []string `json:"stores"`
	Cart    *struct {
		Qty  int    `json:"qty"`
		Date string `json:"date"`
		Gift bool   `json:"gift"`
	} `json:"cart"`
	Log   []string `json:"log"`
	ByQty int      `json:"byQty"`
}

func (s *loginSite) lastAccount() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.accounts) > 0 && s.accounts[len(s.accounts)-1]
}

func TestProfilesOnDisk(t *testing.T) {
	t.Parallel()
	profileRoundTrip(t, nil)
}

func TestProfilesInMinIO(t *testing.T) {
	t.Parallel()
	m := miniotest.Start(t)
	profileRoundTrip(t, m.Env("trawler-profiles")) // the service creates the bucket
}

// profileRoundTrip is the user story on one profile store: a writer
// session signs in, its state is saved when it ends, and readers, scrapes,
// crawls and batches see it; the single-writer rule and the profile
// endpoints hold.
func profileRoundTrip(t *testing.T, env map[string]string) {
	site := newLoginSite(t)
	ts := crawlService(t, env)
	writer := map[string]any{"profile": map[string]any{"name": "shop-login", "saveChanges": true}}
	reader := map[string]any{"profile": map[string]any{"name": "shop-login", "saveChanges": false}}

	s1 := ts.create(keyAcme, writer)
	if r := ts.do("POST", "/v2/browser", keyAcme, writer); r.Status != 409 || r.str("code") != "PROFILE_LOCKED" {
		t.Fatalf("a second writer: %d %s, want 409 PROFILE_LOCKED", r.Status, r.Raw)
	}
	// Names are per team: globex's shop-login is another profile.
	g := ts.create(keyGlobex, writer)
	drive(t, s1.str("cdpUrl"), func(ctx context.Context) error {
		if err := chromedp.Do(ctx, chromedp.Navigate(site.URL+"/login")); err != nil {
			return err
		}
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.title === 'ready'`, chromedp.WithPollingTimeout(10*time.Second)))
		return err
	})
	r := ts.do("DELETE", "/v2/browser/"+s1.str("id"), keyAcme, nil)
	require.Equal(t, 200, r.Status, "DELETE the writer: %s", r.Raw)
	ts.do("DELETE", "/v2/browser/"+g.str("id"), keyGlobex, nil)

	list := ts.do("GET", "/v2/profiles", keyAcme, nil)
	ps, _ := list.Body["profiles"].([]any)
	if list.Status != 200 || len(ps) != 1 {
		t.Fatalf("GET /v2/profiles: %d %s, want shop-login only", list.Status, list.Raw)
	}
	if p := ps[0].(map[string]any); p["name"] != "shop-login" || p["locked"] != false || p["size"].(float64) <= 0 || p["savedAt"] == "" {
		t.Fatalf("profile entry %v", p)
	}

	// A reader is still signed in: the session cookie, localStorage and
	// IndexedDB (types, indexes and version included) came back.
	s2 := ts.create(keyAcme, reader)
	s3 := ts.create(keyAcme, reader) // readers do not exclude each other
	got := visit(t, s2.str("cdpUrl"), site.URL+"/account",
		`localStorage.setItem('user', 'Mallory'); document.cookie = 'theme=light; max-age=3600'`)
	require.True(t, site.lastAccount(), "the reader's browser did not send the session cookie saved from the writer")
	if got.User != "Ada Lovelace ✓" || !strings.Contains(got.Cookies, "theme=dark") || strings.Contains(got.Cookies, "sid=") ||
		got.Version != 3 || got.Cart == nil || got.Cart.Qty != 2 || got.Cart.Date != "1970-01-02T00:00:00.000Z" || !got.Cart.Gift ||
		len(got.Log) != 1 || got.Log[0] != "1,2,3" || got.ByQty != 1 {
		t.Fatalf("state in the reader: %+v (cart %+v)", got, got.Cart)
	}
	ts.do("DELETE", "/v2/browser/"+s2.str("id"), keyAcme, nil)
	ts.do("DELETE", "/v2/browser/"+s3.str("id"), keyAcme, nil)

	// A reader never writes: Mallory is gone.
	s4 := ts.create(keyAcme, reader)
	got = visit(t, s4.str("cdpUrl"), site.URL+"/account", "")
	if got.User != "Ada Lovelace ✓" || !strings.Contains(got.Cookies, "theme=dark") {
		t.Fatalf("a reader's changes were saved: %+v", got)
	}
	ts.do("DELETE", "/v2/browser/"+s4.str("id"), keyAcme, nil)

	// Scrapes: without the profile signed out, with it signed in (rendered,
	// so the page's scripts read localStorage and IndexedDB).
	scrape := func(path string, profile map[string]any) response {
		body := map[string]any{"url": site.URL + path, "waitFor": 300}
		if profile != nil {
			body["profile"] = profile
		}
		return ts.do("POST", "/v2/scrape", keyAcme, body)
	}
	if r := scrape("/account", nil); r.Status != 200 || !strings.Contains(string(r.Raw), "signed out") {
		t.Fatalf("scrape without a profile: %d %s", r.Status, r.Raw)
	}
	r = scrape("/account", reader["profile"].(map[string]any))
	md, _ := r.Body["data"].(map[string]any)["markdown"].(string)
	if r.Status != 200 || !strings.Contains(md, "Server says: signed in") || !strings.Contains(md, "Local user: Ada Lovelace ✓") ||
		!strings.Contains(md, "Cart: 2 of A1 since 1970-01-02") {
		t.Fatalf("scrape with the profile: %d %s", r.Status, r.Raw)
	}
	// A scrape that writes saves what the page set.
	r = scrape("/bump", writer["profile"].(map[string]any))
	require.Equal(t, 200, r.Status, "scrape with saveChanges: %s", r.Raw)
	r = scrape("/account", reader["profile"].(map[string]any))
	require.Contains(t, string(r.Raw), "signed in, bumped", "the writing scrape's cookie was not saved")

	// Crawls and batches load the profile read-only.
	_, st, docs := ts.runJob("/v2/crawl", keyAcme, map[string]any{"url": site.URL + "/account", "limit": 1,
		"scrapeOptions": map[string]any{"profile": map[string]any{"name": "shop-login"}, "waitFor": 300}})
	if st["status"] != "completed" || len(docs) != 1 || !strings.Contains(fmt.Sprint(docs[0]["markdown"]), "Local user: Ada Lovelace ✓") ||
		!strings.Contains(fmt.Sprint(docs[0]["markdown"]), "signed in, bumped") {
		t.Fatalf("crawl with the profile: %v %v", st, docs)
	}
	_, st, docs = ts.runJob("/v2/batch/scrape", keyAcme, map[string]any{"urls": []string{site.URL + "/account"},
		"profile": map[string]any{"name": "shop-login", "saveChanges": false}})
	if st["status"] != "completed" || len(docs) != 1 || !strings.Contains(fmt.Sprint(docs[0]["markdown"]), "signed in, bumped") {
		t.Fatalf("batch with the profile: %v %v", st, docs)
	}
	for _, c := range []struct {
		path  string
		body  map[string]any
		field string
	}{
		{"/v2/crawl", map[string]any{"url": site.URL, "scrapeOptions": map[string]any{"profile": writer["profile"]}}, "scrapeOptions.profile.saveChanges"},
		{"/v2/batch/scrape", map[string]any{"urls": []string{site.URL}, "profile": writer["profile"]}, "profile.saveChanges"},
		{"/v2/browser", map[string]any{"profile": map[string]any{"saveChanges": true}}, "profile.name"},
		{"/v2/browser", map[string]any{"profile": map[string]any{"name": "../etc"}}, "profile.name"},
		{"/v2/browser", map[string]any{"profile": map[string]any{"name": strings.Repeat("a", 129)}}, "profile.name"},
		{"/v2/scrape", map[string]any{"url": site.URL, "profile": map[string]any{"name": ""}}, "profile.name"},
	} {
		r := ts.do("POST", c.path, keyAcme, c.body)
		if r.Status != 400 || !strings.Contains(string(r.Raw), c.field) {
			t.Errorf("POST %s %v: %d %s, want 400 naming %s", c.path, c.body, r.Status, r.Raw, c.field)
		}
	}

	// The profile cannot be deleted while a writer holds it, nor written by
	// a scrape; after the writer it can.
	s5 := ts.create(keyAcme, writer)
	if r := ts.do("DELETE", "/v2/profiles/shop-login", keyAcme, nil); r.Status != 409 || r.str("code") != "PROFILE_LOCKED" {
		t.Fatalf("DELETE a profile being written: %d %s", r.Status, r.Raw)
	}
	if r := scrape("/account", writer["profile"].(map[string]any)); r.Status != 409 || r.str("code") != "PROFILE_LOCKED" {
		t.Fatalf("a writing scrape while a session writes: %d %s", r.Status, r.Raw)
	}
	l := ts.do("GET", "/v2/profiles", keyAcme, nil)
	require.Contains(t, string(l.Raw), `"locked":true`, "GET /v2/profiles while written")
	ts.do("DELETE", "/v2/browser/"+s5.str("id"), keyAcme, nil)
	r = ts.do("DELETE", "/v2/profiles/shop-login", keyAcme, nil)
	require.Equal(t, 200, r.Status, "DELETE the profile: %s", r.Raw)
	r = ts.do("DELETE", "/v2/profiles/shop-login", keyAcme, nil)
	require.Equal(t, 404, r.Status, "DELETE it again: %s", r.Raw)
	l = ts.do("GET", "/v2/profiles", keyAcme, nil)
	require.NotContains(t, string(l.Raw), "shop-login", "deleted profile still listed")
	// globex's profile is untouched.
	l = ts.do("GET", "/v2/profiles", keyGlobex, nil)
	require.Contains(t, string(l.Raw), "shop-login", "globex's profile")
	// A fresh reader of a deleted profile starts empty.
	s6 := ts.create(keyAcme, reader)
	got = visit(t, s6.str("cdpUrl"), site.URL+"/account", "")
	if got.User != "" || got.Cookies != "" || site.lastAccount() {
		t.Fatalf("a deleted profile still gave state: %+v", got)
	}
}

// A writer's lock outlives its ttl for as long as the session lives: the
// session renews it.
func TestProfileLockRenewedWhileSessionLives(t *testing.T) {
	t.Parallel()
	ts := start(t, map[string]string{"TRAWLER_PROFILE_LOCK_TTL": "1s"})
	writer := map[string]any{"profile": map[string]any{"name": "long-job", "saveChanges": true}}
	s := ts.create(keyAcme, writer)
	time.Sleep(3500 * time.Millisecond) // three and a half lock lifetimes
	r := ts.do("POST", "/v2/browser", keyAcme, writer)
	require.Equal(t, 409, r.Status, "a second writer after 3.5 lock ttls (the lock was not renewed): %s", r.Raw)
	ts.do("DELETE", "/v2/browser/"+s.str("id"), keyAcme, nil)
	r = ts.do("POST", "/v2/browser", keyAcme, writer)
	require.Equal(t, 200, r.Status, "a writer after the first ended: %s", r.Raw)
}
