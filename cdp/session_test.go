package cdp

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"

	"github.com/trawler-dev/trawler/test/polltest"
)

// TestSessionTyped opens a tab in a browser context of its own through the
// typed layer, drives it with cdproto's commands, reads a cdproto event and
// closes the tab: the browser lists it no more.
func TestSessionTyped(t *testing.T) {
	b, conn, ctx := dialPipeBrowser(t)
	bc, err := NewContext(ctx, conn, target.CreateBrowserContextParams{})
	if err != nil || bc == "" {
		t.Fatalf("creating a context: %q, %v", bc, err)
	}
	s, err := OpenTarget(ctx, conn, target.CreateTargetParams{BrowserContextID: bc})
	if err != nil {
		t.Fatal(err)
	}
	if s.ID == "" || s.TargetID == "" {
		t.Fatalf("session %+v has no ids", s)
	}
	loaded := make(chan page.EventLoadEventFired, 1)
	conn.OnEvent(func(ev Event) {
		if ev.SessionID != s.ID {
			return
		}
		if e, ok, err := Decode(ev, page.LoadEventFired); ok && err == nil {
			loaded <- e
		}
	})
	if err := Run(ctx, s, page.Enable, page.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	nav, err := Do(ctx, s, page.Navigate, page.NavigateParams{URL: "data:text/html,<title>typed</title><p>hi"})
	if err != nil || nav.FrameID == "" {
		t.Fatalf("navigating: %+v, %v", nav, err)
	}
	select {
	case <-loaded:
	case <-ctx.Done():
		t.Fatal("no Page.loadEventFired")
	}
	v, err := s.Evaluate(ctx, "Promise.resolve(document.title + 1)")
	var title string
	if err != nil || json.Unmarshal(v, &title) != nil || title != "typed1" {
		t.Fatalf("evaluating: %s, %v", v, err)
	}
	if _, err := s.Evaluate(ctx, "(() => { throw new Error('boom') })()"); err == nil {
		t.Fatal("a throwing script gave no error")
	}
	if _, err := Do(ctx, s, page.Navigate, page.NavigateParams{}); err == nil {
		t.Fatal("navigating to no URL gave no error")
	}
	if err := s.CloseTarget(); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, 5*time.Second, "the closed tab to leave the browser's targets", func() bool {
		for _, tg := range b.mux.Targets(ctx) {
			if tg.TargetID == string(s.TargetID) {
				return false
			}
		}
		return true
	})
}

// TestIntercept answers a tab's navigation from the interception: the
// request never leaves the browser, and the page shows the body given.
func TestIntercept(t *testing.T) {
	_, conn, ctx := dialPipeBrowser(t)
	s, err := OpenTarget(ctx, conn, target.CreateTargetParams{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.CloseTarget()
	conn.OnEvent(func(ev Event) {
		e, ok, err := Decode(ev, fetch.RequestPaused)
		if !ok || err != nil || ev.SessionID != s.ID {
			return
		}
		go func() {
			p := PausedOf(s, &e)
			if e.Request.URL != "http://127.0.0.1:9/page" {
				p.Fail(ctx, network.ErrorReasonBlockedByClient)
				return
			}
			p.Fulfil(ctx, 200, "text/html", []byte("<title>from the interception</title>"))
		}()
	})
	if err := Intercept(ctx, s, &fetch.RequestPattern{URLPattern: "*"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Do(ctx, s, page.Navigate, page.NavigateParams{URL: "http://127.0.0.1:9/page"}); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, 10*time.Second, "the fulfilled page to show", func() bool {
		v, err := s.Evaluate(ctx, "document.title")
		return err == nil && string(v) == `"from the interception"`
	})
	nav, err := Do(ctx, s, page.Navigate, page.NavigateParams{URL: "http://127.0.0.1:9/other"})
	if err != nil || nav.ErrorText != "net::ERR_BLOCKED_BY_CLIENT" {
		t.Fatalf("a failed request: %+v, %v", nav, err)
	}
}

// dialPipeBrowser starts a browser and connects to it, for the test's
// duration (the context ends with it too).
func dialPipeBrowser(t *testing.T) (*pipeBrowser, *Conn, context.Context) {
	b := startPipeBrowser(t, MuxOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	conn, err := b.mux.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return b, conn, ctx
}
