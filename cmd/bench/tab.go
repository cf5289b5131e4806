package main

import (
	"context"
	"time"

	cdproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"

	"github.com/trawler-dev/trawler/cdp"
)

// ownContext is a browser context disposed of when the connection that
// made it goes away, so that a bench that fails midway leaves none behind.
func ownContext() target.CreateBrowserContextParams {
	dispose := true
	return target.CreateBrowserContextParams{DisposeOnDetach: &dispose}
}

// contextTab opens a blank tab in a new browser context over conn, made
// as p says, and returns the tab's session and the context.
func contextTab(ctx context.Context, conn *cdp.Conn, p target.CreateBrowserContextParams) (cdp.Session, cdproto.BrowserContextID, error) {
	id, err := cdp.NewContext(ctx, conn, p)
	if err != nil {
		return cdp.Session{}, "", err
	}
	tab, err := cdp.OpenTarget(ctx, conn, target.CreateTargetParams{BrowserContextID: id})
	if err != nil {
		disposeContext(conn, id)
		return cdp.Session{}, "", err
	}
	return tab, id, nil
}

// disposeContext disposes of the browser context id and its tabs, on a
// context of its own: it is cleanup, after the work's context may have
// ended.
func disposeContext(conn *cdp.Conn, id cdproto.BrowserContextID) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return cdp.Run(ctx, cdp.Browser(conn), target.DisposeBrowserContext, target.DisposeBrowserContextParams{BrowserContextID: id})
}
