package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	cdproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/cdproto/target"

	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/profiles"
)

const (
	profileCookies = 1000
	profileRounds  = 5
)

// fillStorage writes 2 MB of localStorage (1,000 entries of 2,000
// characters) and 3 MB of IndexedDB (300 records of 10,000 characters), of
// random text, which compresses no better than real application state.
const fillStorage = `(async () => {
  const rnd = (n) => {
    const b = crypto.getRandomValues(new Uint8Array(n * 3 / 4));
    let s = '';
    for (let i = 0; i < b.length; i += 4096) s += String.fromCharCode(...b.subarray(i, i + 4096));
    return btoa(s);
  };
  for (let i = 0; i < 1000; i++) localStorage.setItem('k' + i, rnd(2000));
  await new Promise((resolve, reject) => {
    const open = indexedDB.open('bench', 1);
    open.onupgradeneeded = () => open.result.createObjectStore('s');
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const tx = open.result.transaction('s', 'readwrite');
      for (let i = 0; i < 300; i++) tx.objectStore('s').put({i, text: rnd(10000)}, i);
      tx.oncomplete = resolve;
      tx.onerror = () => reject(tx.error);
    };
  });
  return localStorage.length;
})()`

// countStorage is what a restored page holds: localStorage entries and
// IndexedDB records.
const countStorage = `(async () => {
  const records = await new Promise((resolve, reject) => {
    const open = indexedDB.open('bench');
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      if (!open.result.objectStoreNames.contains('s')) { resolve(0); return; }
      const req = open.result.transaction('s').objectStore('s').count();
      req.onsuccess = () => resolve(req.result);
    };
  });
  return localStorage.length + ',' + records;
})()`

// profileSaveRestore times the save of a large profile at the end of a
// writer session and its restore into a reader session's browser.
func (b *bench) profileSaveRestore(ctx context.Context, in *instance) error {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<!doctype html><title>profile bench</title>")
	}))
	defer site.Close()
	dir := filepath.Join(b.tmp, "profiles")
	opener := &profiles.Opener{Store: profiles.NewFS(dir), Instance: "bench", LockTTL: time.Minute}
	var saves, restores []time.Duration
	for range profileRounds {
		c, err := in.create(ctx)
		if err != nil {
			return err
		}
		s, err := in.session(ctx, c.ID)
		if err != nil {
			return err
		}
		use, err := opener.Open(ctx, "local", "bench", profiles.ReadWrite)
		if err != nil {
			return err
		}
		if err := use.Apply(ctx, s.CDP(), ""); err != nil {
			return err
		}
		if err := populate(ctx, s.CDP(), site.URL); err != nil {
			return err
		}
		t := time.Now()
		err = use.Close(ctx, profiles.Save)
		saves = append(saves, time.Since(t))
		if err != nil {
			return err
		}
		if err := in.remove(ctx, c.ID); err != nil {
			return err
		}

		c2, err := in.create(ctx)
		if err != nil {
			return err
		}
		s2, err := in.session(ctx, c2.ID)
		if err != nil {
			return err
		}
		t = time.Now()
		reader, err := opener.Open(ctx, "local", "bench", profiles.ReadOnly)
		if err == nil {
			err = reader.Apply(ctx, s2.CDP(), "")
		}
		restores = append(restores, time.Since(t))
		if err != nil {
			return err
		}
		got, err := inspect(ctx, s2.CDP(), site.URL)
		if err != nil {
			return err
		}
		if got != fmt.Sprintf("%d cookies, 1000,300", profileCookies) {
			return fmt.Errorf("the restored profile holds %s, want %d cookies, 1000 localStorage entries, 300 records", got, profileCookies)
		}
		reader.Close(ctx, profiles.Discard)
		if err := in.remove(ctx, c2.ID); err != nil {
			return err
		}
	}
	var size int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			size = max(size, fi.Size())
		}
		return nil
	})
	logf("profile save ms: %s; restore ms: %s; largest stored file %.1f MB", msList(saves), msList(restores), float64(size)/(1<<20))
	figure("profile_save_ms", ms(median(saves)), "ms")
	figure("profile_restore_ms", ms(median(restores)), "ms")
	return nil
}

// openPage opens a tab on url in browser, on a connection of its own, and
// returns its session (closing s.Conn closes both).
func openPage(ctx context.Context, browser *cdp.Mux, url string) (cdp.Session, error) {
	conn, err := browser.Dial(ctx)
	if err != nil {
		return cdp.Session{}, err
	}
	s, err := cdp.OpenTarget(ctx, conn, target.CreateTargetParams{URL: url})
	if err != nil {
		conn.Close()
		return cdp.Session{}, err
	}
	// Wait for the document (a blank page from the local site).
	for deadline := time.Now().Add(10 * time.Second); ; {
		state, err := evaluate(ctx, s, "location.href + ' ' + document.readyState")
		if err == nil && strings.Contains(state, url) && strings.Contains(state, "complete") {
			return s, nil
		}
		if time.Now().After(deadline) {
			conn.Close()
			return cdp.Session{}, fmt.Errorf("the page %s did not load", url)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// evaluate runs expr in the tab of s and returns its value, a string's
// without its quotes.
func evaluate(ctx context.Context, s cdp.Session, expr string) (string, error) {
	v, err := s.Evaluate(ctx, expr)
	if err != nil {
		return "", err
	}
	return strings.Trim(string(v), `"`), nil
}

// populate gives the browser's default context the bench's cookies and
// the storage of url's origin.
func populate(ctx context.Context, browser *cdp.Mux, url string) error {
	tab, err := openPage(ctx, browser, url)
	if err != nil {
		return err
	}
	defer tab.Conn.Close()
	// Chromium keeps at most 180 cookies per site: the 1,000 are spread
	// over ten sites (set over CDP, so nothing is fetched from them).
	expires := cdproto.TimeSinceEpoch(time.Now().Add(24 * time.Hour).Unix())
	cookies := make([]*network.CookieParam, profileCookies)
	for i := range cookies {
		cookies[i] = &network.CookieParam{Name: fmt.Sprintf("c%04d", i), Value: strings.Repeat("v", 40),
			URL: fmt.Sprintf("https://shop%d.test/", i%10), Expires: expires}
	}
	if err := cdp.Run(ctx, cdp.Browser(tab.Conn), storage.SetCookies, storage.SetCookiesParams{Cookies: cookies}); err != nil {
		return err
	}
	got, err := evaluate(ctx, tab, fillStorage)
	if err != nil {
		return err
	}
	if got != "1000" {
		return fmt.Errorf("filling localStorage gave %s entries", got)
	}
	return nil
}

// inspect reports the cookies and storage a page of url sees.
func inspect(ctx context.Context, browser *cdp.Mux, url string) (string, error) {
	tab, err := openPage(ctx, browser, url)
	if err != nil {
		return "", err
	}
	defer tab.Conn.Close()
	// Only the count is read: the cookies' own fields are left undecoded.
	var cs struct {
		Cookies []struct{} `json:"cookies"`
	}
	if err := cdp.Browser(tab.Conn).Call(ctx, storage.CommandGetCookies, nil, &cs); err != nil {
		return "", err
	}
	counts, err := evaluate(ctx, tab, countStorage)
	return fmt.Sprintf("%d cookies, %s", len(cs.Cookies), counts), err
}
