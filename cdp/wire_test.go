package cdp

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestScanHeader(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, msg       string
		id              int64
		method, session string
		without         string // msg without its sessionId, when it has one
	}{
		{"reply last", `{"id":7,"result":{"a":[1,{"b":"}"}]},"sessionId":"S1"}`, 7, "", "S1", `{"id":7,"result":{"a":[1,{"b":"}"}]}}`},
		{"event", `{"method":"Page.loadEventFired","params":{"timestamp":1.5},"sessionId":"AB"}`, 0, "Page.loadEventFired", "AB", `{"method":"Page.loadEventFired","params":{"timestamp":1.5}}`},
		{"session first", `{"sessionId":"X","id":3,"method":"Runtime.evaluate"}`, 3, "Runtime.evaluate", "X", `{"id":3,"method":"Runtime.evaluate"}`},
		{"session only", `{"sessionId":"X"}`, 0, "", "X", `{}`},
		{"spaces", ` { "id" : 2 , "sessionId" : "Y" , "params" : { } } `, 2, "", "Y", ` { "id" : 2  , "params" : { } } `},
		{"escapes in strings", `{"params":{"s":"a\"b\\"},"method":"M\u002e1"}`, 0, "M.1", "", ""},
		{"no session", `{"id":1,"method":"Browser.getVersion"}`, 1, "Browser.getVersion", "", ""},
		{"nested sessionId is not the message's", `{"id":1,"params":{"sessionId":"inner"}}`, 1, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := scanHeader([]byte(tc.msg))
			if err != nil {
				t.Fatal(err)
			}
			if h.id != tc.id || h.method != tc.method || h.sessionID != tc.session {
				t.Errorf("got id %d method %q session %q", h.id, h.method, h.sessionID)
			}
			if tc.session == "" {
				return
			}
			got := string(withoutSession([]byte(tc.msg), h))
			if got != tc.without {
				t.Errorf("without session:\n got %s\nwant %s", got, tc.without)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("not JSON any more: %s", got)
			}
		})
	}
	for _, bad := range []string{``, `[]`, `"x"`, `{`, `{"id":}`, `{"id":1`, `{"a":"unterminated}`, `{"id":1}x`, `{id:1}`, `{"a":[1,2}`, `{"a":"\`, `{"a":"b\`} {
		if _, err := scanHeader([]byte(bad)); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

func TestWithSession(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"id":1,"method":"M"}`: `{"sessionId":"S","id":1,"method":"M"}`,
		`{}`:                    `{"sessionId":"S"}`,
		` { } `:                 ` {"sessionId":"S" } `,
	} {
		got := string(withSession([]byte(in), "S"))
		if got != want {
			t.Errorf("withSession(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestVet: what a session's client may not ask of its browser.
func TestVet(t *testing.T) {
	t.Parallel()
	m := &Mux{opts: MuxOptions{DownloadDir: "/data/browsers/b1/Downloads"}, targets: map[string]*trackedTarget{}}
	for _, tc := range []struct {
		msg     string
		refused string // a word of the refusal, or "" when allowed
	}{
		{`{"id":1,"method":"Page.navigate","params":{"url":"file:///etc/passwd"}}`, "file:"},
		{`{"id":1,"method":"Page.navigate","params":{"url":" FILE:///data/trawler.db"}}`, "file:"},
		{`{"id":1,"method":"Page.navigate","params":{"url":"view-source:file:///etc/passwd"}}`, "file:"},
		{`{"id":1,"method":"Target.createTarget","params":{"url":"chrome://version"}}`, "chrome:"},
		{`{"id":1,"method":"Network.loadNetworkResource","params":{"url":"filesystem:http://a/x","frameId":"F"}}`, "filesystem:"},
		{`{"id":1,"method":"Page.navigate","params":{"url":"https://example.org/"}}`, ""},
		{`{"id":1,"method":"Target.createBrowserContext","params":{"proxyServer":"direct://"}}`, "proxyServer"},
		{`{"id":1,"method":"Target.createBrowserContext","params":{"disposeOnDetach":true}}`, ""},
		{`{"id":1,"method":"DOM.setFileInputFiles","params":{"files":["/data/trawler.db"],"backendNodeId":3}}`, "not a file the browser downloaded"},
		{`{"id":1,"method":"DOM.setFileInputFiles","params":{"files":["/data/browsers/b1/Downloads/../../b2/Cookies"]}}`, "not a file the browser downloaded"},
		{`{"id":1,"method":"DOM.setFileInputFiles","params":{"files":["/data/browsers/b1/Downloads/report.pdf"]}}`, ""},
		{`{"id":1,"method":"Input.dispatchDragEvent","params":{"type":"drop","x":1,"y":1,"data":{"items":[],"files":["/etc/shadow"],"dragOperationsMask":1}}}`, "not a file"},
		{`{"id":1,"method":"Tethering.bind","params":{"port":9222}}`, "no ports"},
		{`{"id":1,"method":"Target.setRemoteLocations","params":{"locations":[{"host":"10.0.0.1","port":9222}]}}`, "DevTools hosts"},
		{`{"id":1,"method":"Extensions.loadUnpacked","params":{"path":"/tmp/x"}}`, "install nothing"},
	} {
		h, err := scanHeader([]byte(tc.msg))
		if err != nil {
			t.Fatal(err)
		}
		_, refusal := m.vet([]byte(tc.msg), h, "")
		switch {
		case tc.refused == "" && refusal != nil:
			t.Errorf("%s refused: %s", tc.msg, refusal.Message)
		case tc.refused != "" && refusal == nil:
			t.Errorf("%s allowed", tc.msg)
		case tc.refused != "" && !strings.Contains(refusal.Message, tc.refused):
			t.Errorf("%s: refusal %q does not say %q", tc.msg, refusal.Message, tc.refused)
		}
	}

	// A download directory is replaced by the browser's own.
	msg := `{"id":4,"method":"Browser.setDownloadBehavior","params":{"behavior":"allowAndName","downloadPath":"/home/me/.cache/ms-playwright/artifacts","eventsEnabled":true}}`
	h, _ := scanHeader([]byte(msg))
	out, refusal := m.vet([]byte(msg), h, "")
	if refusal != nil {
		t.Fatalf("setDownloadBehavior refused: %v", refusal)
	}
	var got struct {
		ID     int            `json:"id"`
		Params map[string]any `json:"params"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"behavior": "allowAndName", "downloadPath": "/data/browsers/b1/Downloads", "eventsEnabled": true}
	if got.ID != 4 || !reflect.DeepEqual(got.Params, want) {
		t.Errorf("setDownloadBehavior became %s", out)
	}
}
