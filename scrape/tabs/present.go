package tabs

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/browser"
	cdproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/trawler-dev/trawler/cdp"
)

// What a page sees of the browser is an ordinary Chrome's (docs/stealth.md):
// the browsers' flags do most of it (browsers.ChromiumFlags); a tab adds
// what depends on the scrape: the device, the languages, the time zone, and
// the user agent's client hints, which Chromium drops (navigator.userAgentData
// with no brands, no Sec-CH-UA) when a user agent is overridden without them.

// hintsOf caches the client hints of each browser version.
var hintsOf sync.Map // "156.0.8078.114" → *emulation.UserAgentMetadata

// browserHints are the client hints of the tab's browser, as Chromium
// reports them on Linux (ChromiumHints); nil when its version is unknown.
// They cannot be read from the page: navigator.userAgentData is only in
// secure contexts, and a blank tab is none.
func (t *Tab) browserHints(ctx context.Context) *emulation.UserAgentMetadata {
	v, err := cdp.Do(ctx, cdp.Browser(t.conn), browser.GetVersion, cdproto.Empty{})
	if err != nil {
		return nil
	}
	_, version, _ := strings.Cut(v.Product, "/")
	if m, ok := hintsOf.Load(version); ok {
		return m.(*emulation.UserAgentMetadata)
	}
	m := ChromiumHints(version)
	if m != nil {
		hintsOf.Store(version, m)
	}
	return m
}

// ChromiumHints are the client hints of a Chromium of version on Linux
// x86-64 ("156.0.8078.114"): its brand and the "GREASE" brand that Chromium
// derives from its major version (components/embedder_support's
// user_agent_utils.cc, after the UA-CH spec's "create arbitrary brands"),
// so that they are the browser's own (TestPresentedIdentityIsTheBrowsers
// compares them). No library computes them; nil for a version that is not
// Chromium's.
func ChromiumHints(version string) *emulation.UserAgentMetadata {
	majorText, _, _ := strings.Cut(version, ".")
	major, err := strconv.Atoi(majorText)
	if err != nil || major <= 0 {
		return nil
	}
	chars := []string{" ", "(", ":", "-", ".", "/", ")", ";", "=", "?", "_"}
	versions := []string{"8", "99", "24"}
	grease := "Not" + chars[major%len(chars)] + "A" + chars[(major+1)%len(chars)] + "Brand"
	greaseVersion := versions[major%len(versions)]
	brands := make([]*emulation.UserAgentBrandVersion, 2)
	full := make([]*emulation.UserAgentBrandVersion, 2)
	brands[major%2] = &emulation.UserAgentBrandVersion{Brand: grease, Version: greaseVersion}
	brands[(major+1)%2] = &emulation.UserAgentBrandVersion{Brand: "Chromium", Version: majorText}
	full[major%2] = &emulation.UserAgentBrandVersion{Brand: grease, Version: greaseVersion + ".0.0.0"}
	full[(major+1)%2] = &emulation.UserAgentBrandVersion{Brand: "Chromium", Version: version}
	return &emulation.UserAgentMetadata{Brands: brands, FullVersionList: full, Platform: "Linux",
		Architecture: "x86", Bitness: "64", FormFactors: []string{"Desktop"}}
}

// hintsFor are the client hints that go with user agent ua in a tab set up
// so: the browser's own, a phone's when mobile; none for a user agent that
// is not Chrome's (a browser claiming to be another one has no hints).
func (t *Tab) hintsFor(ua string, browser *emulation.UserAgentMetadata) *emulation.UserAgentMetadata {
	if browser == nil || !strings.Contains(ua, "Chrome/") {
		return nil
	}
	m := *browser
	if t.set.Mobile {
		m.Platform, m.PlatformVersion, m.Model, m.Mobile = "Android", "14.0.0", "Pixel 8", true
		m.Architecture, m.Bitness, m.Wow64, m.FormFactors = "", "", false, []string{"Mobile"}
	}
	return &m
}

// answerDialog answers a page's alert, confirm, prompt or beforeunload as a
// user would with a click on OK (a prompt with its default text): a dialog
// left open stops the page's scripts, and the scrape with them.
func (t *Tab) answerDialog(e *cdppage.EventJavascriptDialogOpening) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cdp.Run(ctx, t.sess, cdppage.HandleJavaScriptDialog, cdppage.HandleJavaScriptDialogParams{Accept: true, PromptText: e.DefaultPrompt})
}
