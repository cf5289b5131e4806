package cdp

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/trawler-dev/trawler/test/polltest"
)

// TestPolicy: what a session's client may not ask of its browser, judged
// on parsed commands.
func TestPolicy(t *testing.T) {
	t.Parallel()
	m := &Mux{opts: MuxOptions{DownloadDir: "/tmp/trawler-user-data/Downloads"}, targets: map[string]*trackedTarget{}, sessions: map[string]*route{}}
	ch := &Channel{m: m}
	for _, tc := range []struct {
		msg     string
		refused string // a word of the refusal, or "" when allowed
	}{
		{`{"id":1,"method":"Page.navigate","params":{"url":"file:///etc/passwd"}}`, "file:"},
		{`{"id":1,"method":"Page.navigate","params":{"url":"FILE:///data/trawler.db"}}`, "file:"},
		{`{"id":1,"method":"Page.navigate","params":{"url":" file:///data/trawler.db"}}`, "control"},
		{`{"id":1,"method":"Page.navigate","params":{"url":"fi\tle:///etc/passwd"}}`, "control"},
		{`{"id":1,"method":"Page.navigate","params":{"url":"file:///etc/passwd#%zz"}}`, "file:"},
		{`{"id":1,"method":"Page.navigate","params":{"url":"fil%65:///etc/passwd"}}`, "not an absolute URL"},
		{`{"id":1,"method":"Page.navigate","params":{"url":"/etc/passwd"}}`, "not an absolute URL"},
		{`{"id":1,"method":"Page.navigate","params":{"url":"view-source:file:///etc/passwd"}}`, "view-source"},
		{`{"id":1,"method":"Page.navigate","params":{"url":"javascript:alert(1)"}}`, "javascript"},
		{`{"id":1,"method":"Page.navigate","params":{"url":"https://%zz/"}}`, "can read"},
		{`{"id":1,"method":"Page.navigate","params":{"url":"blob:file:///x"}}`, "blob"},
		{`{"id":1,"method":"Page.navigate","params":{"url":"about:version"}}`, "about"},
		{`{"id":1,"method":"Page.navigate","params":{"url":7}}`, "string"},
		{`{"id":1,"method":"Page.navigate","params":{}}`, "string"},
		{`{"id":1,"method":"Target.createTarget","params":{"url":"chrome://version"}}`, "chrome:"},
		{`{"id":1,"method":"Network.loadNetworkResource","params":{"url":"filesystem:http://a/x","frameId":"F"}}`, "filesystem:"},
		{`{"id":1,"method":"Fetch.continueRequest","params":{"requestId":"R","url":"file:///etc/shadow"}}`, "file:"},
		{`{"id":1,"method":"Target.createBrowserContext","params":{"proxyServer":"direct://"}}`, "proxyServer"},
		{`{"id":1,"method":"Target.createBrowserContext","params":{"proxyBypassList":"<-loopback>"}}`, "proxyBypassList"},
		{`{"id":1,"method":"Target.exposeDevToolsProtocol","params":{"targetId":"T"}}`, "DevTools channel"},
		{`{"id":1,"method":"Target.sendMessageToTarget","params":{"message":"{}","sessionId":"S"}}`, "flat"},
		{`{"id":1,"method":"Target.attachToTarget","params":{"targetId":"T"}}`, "flatten"},
		{`{"id":1,"method":"Target.setAutoAttach","params":{"autoAttach":true,"waitForDebuggerOnStart":false}}`, "flatten"},
		{`{"id":1,"method":"Target.detachFromTarget","params":{"sessionId":"someone-elses"}}`, "no session"},
		{`{"id":1,"method":"Target.detachFromTarget","params":{"targetId":"T"}}`, "sessionId"},
		{`{"id":1,"method":"Target.openDevTools","params":{"targetId":"T"}}`, "DevTools"},
		{`{"id":1,"method":"SystemInfo.getProcessInfo"}`, "host's processes"},
		{`{"id":1,"method":"Browser.getBrowserCommandLine"}`, "command line"},
		{`{"id":1,"method":"Browser.executeBrowserCommand","params":{"commandId":"openTabSearch"}}`, "not available"},
		{`{"id":1,"method":"Tracing.start","params":{"tracingBackend":"system"}}`, "system tracing"},
		{`{"id":1,"method":"DOM.setFileInputFiles","params":{"files":["/data/trawler.db"],"backendNodeId":3}}`, "not a file the browser downloaded"},
		{`{"id":1,"method":"DOM.setFileInputFiles","params":{"files":["/tmp/trawler-user-data/Downloads/../Default/Cookies"]}}`, "not a file the browser downloaded"},
		{`{"id":1,"method":"DOM.setFileInputFiles","params":{"files":"/etc/shadow"}}`, "array"},
		{`{"id":1,"method":"Input.dispatchDragEvent","params":{"type":"drop","x":1,"y":1,"data":{"items":[],"files":["/etc/shadow"],"dragOperationsMask":1}}}`, "not a file"},
		{`{"id":1,"method":"Tethering.bind","params":{"port":9222}}`, "no ports"},
		{`{"id":1,"method":"Target.setRemoteLocations","params":{"locations":[{"host":"10.0.0.1","port":9222}]}}`, "DevTools hosts"},
		{`{"id":1,"method":"Extensions.loadUnpacked","params":{"path":"/tmp/x"}}`, "install nothing"},
		{`{"id":1,"method":"NewDomain.doSomething"}`, "NewDomain domain is not available"},
		{`{"id":1,"method":"Page.startScreenRecording"}`, "not available"},
		{`{"id":1,"method":"Runtime"}`, "not a method"},
		// What clients need.
		{`{"id":1,"method":"Page.navigate","params":{"url":"https://example.org/"}}`, ""},
		{`{"id":1,"method":"Page.navigate","params":{"url":"HTTP://example.org/"}}`, ""},
		{`{"id":1,"method":"Page.navigate","params":{"url":"data:text/html,<p>hi</p>"}}`, ""},
		{`{"id":1,"method":"Page.navigate","params":{"url":"data:text/html,<title>a b</title>"}}`, ""},
		{`{"id":1,"method":"Page.navigate","params":{"url":"file:///etc/passwd\n"}}`, "control"},
		{`{"id":1,"method":"Page.navigate","params":{"url":"fi le:///etc/passwd"}}`, "not an absolute URL"},
		{`{"id":1,"method":"Page.navigate","params":{"url":"about:blank"}}`, ""},
		{`{"id":1,"method":"Page.navigate","params":{"url":"blob:https://example.org/3c4e"}}`, ""},
		{`{"id":1,"method":"Page.navigate","params":{"url":"blob:null/3c4e"}}`, ""},
		{`{"id":1,"method":"Target.createTarget","params":{"url":""}}`, ""},
		{`{"id":1,"method":"Target.createTarget","params":{"url":"about:blank","browserContextId":"C"}}`, ""},
		{`{"id":1,"method":"Target.createBrowserContext","params":{"disposeOnDetach":true}}`, ""},
		{`{"id":1,"method":"Target.attachToTarget","params":{"targetId":"T","flatten":true}}`, ""},
		{`{"id":1,"method":"Target.setAutoAttach","params":{"autoAttach":true,"waitForDebuggerOnStart":true,"flatten":true}}`, ""},
		{`{"id":1,"method":"Target.setAutoAttach","params":{"autoAttach":false}}`, ""},
		{`{"id":1,"method":"Fetch.continueRequest","params":{"requestId":"R"}}`, ""},
		{`{"id":1,"method":"DOM.setFileInputFiles","params":{"files":["/tmp/trawler-user-data/Downloads/report.pdf"]}}`, ""},
		{`{"id":1,"method":"Runtime.evaluate","params":{"expression":"1"}}`, ""},
		{`{"id":1,"method":"Emulation.setUserAgentOverride","params":{"userAgent":"x"}}`, ""},
		{`{"id":1,"method":"Browser.grantPermissions","params":{"permissions":["geolocation"]}}`, ""},
		{`{"id":1,"method":"Tracing.start","params":{"transferMode":"ReturnAsStream"}}`, ""},
	} {
		c, err := ParseCommand([]byte(tc.msg))
		if err != nil {
			t.Fatalf("%s: %v", tc.msg, err)
		}
		refusal := m.vet(ch, c)
		switch {
		case tc.refused == "" && refusal != nil:
			t.Errorf("%s refused: %s", tc.msg, refusal.Message)
		case tc.refused != "" && refusal == nil:
			t.Errorf("%s allowed", tc.msg)
		case tc.refused != "" && !strings.Contains(refusal.Message, tc.refused):
			t.Errorf("%s: refusal %q does not say %q", tc.msg, refusal.Message, tc.refused)
		case refusal != nil && !strings.HasPrefix(refusal.Message, "Trawler: "):
			t.Errorf("%s: refusal %q is not signed", tc.msg, refusal.Message)
		}
	}

	// A download directory is replaced by the browser's own.
	c, _ := ParseCommand([]byte(`{"id":4,"method":"Browser.setDownloadBehavior","params":{"behavior":"allowAndName","downloadPath":"/home/me/.cache/ms-playwright/artifacts","eventsEnabled":true}}`))
	if refusal := m.vet(ch, c); refusal != nil {
		t.Fatalf("setDownloadBehavior refused: %v", refusal)
	}
	out, _ := c.encode("S")
	if want := `{"id":4,"method":"Browser.setDownloadBehavior","sessionId":"S","params":{"behavior":"allowAndName","downloadPath":"/tmp/trawler-user-data/Downloads","eventsEnabled":true}}`; string(out) != want {
		t.Errorf("setDownloadBehavior became %s", out)
	}
}

// TestClientChannelAgainstChromium sends the four bypasses an attacker used,
// as raw frames, through a client channel to a real browser: each is
// answered by Trawler and never reaches the browser, while frames that
// spell an allowed command unusually still run as judged.
func TestClientChannelAgainstChromium(t *testing.T) {
	b := startPipeBrowser(t, MuxOptions{DownloadDir: t.TempDir()})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch, err := b.mux.OpenClient(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	c := &raw{t: t, ch: ch}
	target := c.call("", "Target.createTarget", map[string]any{"url": "about:blank"})["targetId"].(string)
	sid := c.call("", "Target.attachToTarget", map[string]any{"targetId": target, "flatten": true})["sessionId"].(string)
	location := func() string {
		res := c.call(sid, "Runtime.evaluate", map[string]any{"expression": "location.href", "returnByValue": true})
		return res["result"].(map[string]any)["value"].(string)
	}

	send := func(frame string) map[string]any {
		t.Helper()
		if err := ch.WriteMessage([]byte(frame)); err != nil {
			t.Fatalf("writing %q: %v", frame, err)
		}
		return c.reply(77)
	}
	for _, frame := range []string{
		`{"id":77,"sessionId":"` + sid + `","meth\u006fd":"Page.navigate","params":{"url":"file:///etc/passwd"}}`,
		`{"id":77,"method":"Target.exposeDevToolsProtocol","params":{"targetId":"` + target + `","bindingName":"cdp"}}`,
		"{\"id\":77,\"method\":\"Runtime.evaluate\",\"sessionId\":\"" + sid + "\",\"params\":{\"expression\":\"1\x00{\\\"id\\\":78,\\\"sessionId\\\":\\\"" + sid + "\\\",\\\"method\\\":\\\"Page.navigate\\\",\\\"params\\\":{\\\"url\\\":\\\"file:///etc/passwd\\\"}}\"}}",
		`{"id":77,"sessionId":"` + sid + `","method":"Page.navigate","params":{"url":"fi\tle:///etc/passwd"}}`,
		`{"id":77,"sessionId":"` + sid + `","method":"Page.navigate","params":{"url":"file:///etc/passwd#%zz"}}`,
		`{"id":77,"sessionId":"` + sid + `","method":"Page.navigate","params":{"url":"file:///etc/passwd","URL":"about:blank"}}`,
	} {
		r := send(frame)
		e, _ := r["error"].(map[string]any)
		if msg, _ := e["message"].(string); !strings.HasPrefix(msg, "Trawler: ") {
			t.Errorf("%q answered %v, want Trawler's refusal", frame, r)
		}
		if got := location(); got != "about:blank" {
			t.Fatalf("after %q the page is at %s", frame, got)
		}
	}
	if got := c.call(sid, "Runtime.evaluate", map[string]any{"expression": "typeof cdp", "returnByValue": true}); got["result"].(map[string]any)["value"] != "undefined" {
		t.Errorf("the page got a DevTools binding: %v", got)
	}

	// Escapes in values, white space and member order are the client's to
	// choose: the browser runs what they spell.
	r := send(` { "params" : { "expression" : "\u0036*\u0037" , "returnByValue" : true } , "sessionId" : "` + sid + `" , "method" : "Runtime.evaluate" , "id" : 77 } `)
	res, _ := r["result"].(map[string]any)
	if v, _ := res["result"].(map[string]any); v["value"] != float64(42) {
		t.Errorf("an escaped expression answered %v", r)
	}
	r = send(`{"id":77,"sessionId":"` + sid + `","method":"Page.navigate","params":{"url":"data:text/html,<title>ok\u0021</title>"}}`)
	if r["error"] != nil {
		t.Fatalf("a data: URL was refused: %v", r)
	}
	polltest.UntilState(t, 10*time.Second, "the data: URL to load", func() bool { return strings.HasPrefix(location(), "data:") }, location)

	// Browser.close is the session owner's to act on.
	if err := ch.WriteMessage([]byte(`{"id":79,"method":"Browser.close"}`)); err != ErrBrowserClose {
		t.Errorf("Browser.close: %v, want ErrBrowserClose", err)
	}
	var v struct{ Product string }
	if err := b.mux.call(ctx, "Browser.getVersion", nil, &v); err != nil || v.Product == "" {
		t.Errorf("the browser closed: %v", err)
	}
}
