package cdp

import (
	"encoding/json"
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
