package cdp

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestParseCommandRefuses: frames on which two readers could disagree, and
// frames that are not one command, are refused with a reason.
func TestParseCommandRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, frame, why string
		id               int64 // the id the refusal answers, -1 for none
	}{
		{"escaped method key", `{"id":1,"meth\u006fd":"Page.navigate","params":{"url":"file:///etc/passwd"}}`, "escape", 1},
		{"escaped params key", `{"id":2,"method":"Page.navigate","params":{"\u0075rl":"file:///etc/passwd"}}`, "escape", 2},
		{"escaped nested key", `{"id":3,"method":"Input.dispatchDragEvent","params":{"data":{"fil\u0065s":["/etc/shadow"]}}}`, "escape", 3},
		{"NUL in a string", "{\"id\":4,\"method\":\"Runtime.evaluate\",\"params\":{\"expression\":\"1\x00{\\\"id\\\":5,\\\"method\\\":\\\"Page.navigate\\\"}\"}}", "JSON", 4},
		{"raw newline in a string", "{\"id\":4,\"method\":\"Runtime.evaluate\",\"params\":{\"expression\":\"1\n+1\"}}", "JSON", 4},
		{"NUL between frames", "{\"id\":4,\"method\":\"Browser.getVersion\"}\x00{\"id\":5,\"method\":\"Page.navigate\",\"sessionId\":\"X\"}", "JSON", 4},
		{"two objects", `{"id":4,"method":"Browser.getVersion"}{"id":5,"method":"Page.navigate"}`, "one JSON object", 4},
		{"duplicate key", `{"id":6,"method":"Page.navigate","params":{"url":"https://a/","url":"file:///etc/passwd"}}`, "twice", 6},
		{"case variant key", `{"id":7,"method":"Page.navigate","params":{"url":"file:///etc/passwd","URL":"about:blank"}}`, "case", 7},
		{"Kelvin sign variant", "{\"id\":7,\"method\":\"M.m\",\"params\":{\"k\":1,\"\u212a\":2}}", "case", 7},
		{"duplicate method", `{"id":8,"method":"Runtime.evaluate","method":"Page.navigate"}`, "twice", 8},
		{"case variant top key", `{"id":8,"method":"Runtime.evaluate","Method":"Page.navigate"}`, "case", 8},
		{"unknown member", `{"id":9,"method":"Runtime.evaluate","Params":{}}`, "unknown member", 9},
		{"invalid UTF-8", "{\"id\":10,\"method\":\"Runtime.evaluate\",\"params\":{\"expression\":\"\xff\"}}", "UTF-8", 10},
		{"not an object", `[1]`, "object", -1},
		{"no id", `{"method":"Browser.getVersion"}`, "no id", -1},
		{"fractional id", `{"id":1.5,"method":"Browser.getVersion"}`, "integer", -1},
		{"huge id", `{"id":99999999999,"method":"Browser.getVersion"}`, "integer", -1},
		{"no method", `{"id":11}`, "no method", 11},
		{"method not a string", `{"id":12,"method":1}`, "string", 12},
		{"params not an object", `{"id":13,"method":"Runtime.evaluate","params":[]}`, "object", 13},
		{"number out of range", `{"id":14,"method":"Runtime.evaluate","params":{"x":1e999}}`, "range", 14},
		{"deep nesting", `{"id":15,"method":"M.m","params":{"a":` + strings.Repeat("[", 400) + strings.Repeat("]", 400) + `}}`, "deeper", 15},
		{"cut short", `{"id":16,"method":"M.m","params":{"a":"b`, "JSON", 16},
		{"empty", ``, "JSON", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseCommand([]byte(tc.frame))
			if err == nil {
				t.Fatalf("accepted as %+v", c)
			}
			if !strings.Contains(err.Error(), tc.why) {
				t.Errorf("refused with %q, want a reason mentioning %q", err, tc.why)
			}
			if c.ID != tc.id {
				t.Errorf("the refusal answers id %d, want %d", c.ID, tc.id)
			}
		})
	}
}

// TestParseCommandReencodes: what the browser gets is the command judged,
// whatever the client's spelling of it.
func TestParseCommandReencodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ frame, session, want string }{
		{` { "method" : "Runtime.evaluate" , "id" : 3 , "params" : { "expression" : "\u0031+1" , "returnByValue" : true } } `, "S1",
			`{"id":3,"method":"Runtime.evaluate","sessionId":"S1","params":{"expression":"1+1","returnByValue":true}}`},
		{`{"id":4,"method":"Page.navigate","params":{"url":"https://example.org/?a=1&b=<2>"},"sessionId":"C"}`, "C",
			`{"id":4,"method":"Page.navigate","sessionId":"C","params":{"url":"https://example.org/?a=1&b=<2>"}}`},
		{`{"id":5,"method":"Browser.getVersion"}`, "",
			`{"id":5,"method":"Browser.getVersion"}`},
		{`{"id":6,"method":"M.m","params":{"big":12345678901234567890,"f":1.50,"s":"a\"b\\c\ud83d\ude00\u2028"}}`, "",
			`{"id":6,"method":"M.m","params":{"big":12345678901234567890,"f":1.50,"s":"a\"b\\c😀\u2028"}}`},
	} {
		c, err := ParseCommand([]byte(tc.frame))
		if err != nil {
			t.Fatalf("%s: %v", tc.frame, err)
		}
		out, err := c.encode(tc.session)
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != tc.want {
			t.Errorf("%s\n became %s\n  want %s", tc.frame, out, tc.want)
		}
	}
}

// FuzzParseCommand checks the proxy's reading against a lenient one of the
// kind Chromium's is (escapes decoded, the last of two duplicate keys
// taken): for every frame the strict parser accepts, the lenient reader
// finds the same command in the client's frame and in what the browser is
// sent, and the message sent carries no byte that could end or split a
// message on the browser's NUL-delimited pipe. So what the browser runs is,
// byte for byte after re-encoding, what the policy judged.
func FuzzParseCommand(f *testing.F) {
	for _, seed := range []string{
		`{"id":1,"method":"Runtime.evaluate","params":{"expression":"1+1"}}`,
		`{"id":1,"meth\u006fd":"Page.navigate","params":{"url":"file:///etc/passwd"}}`,
		`{"id":1,"method":"Page.navigate","params":{"url":"file:///etc/passwd","URL":"about:blank"}}`,
		"{\"id\":1,\"method\":\"Runtime.evaluate\",\"params\":{\"expression\":\"a\x00{\\\"id\\\":2}\"}}",
		`{"id":2,"method":"Target.attachToTarget","params":{"targetId":"T","flatten":true},"sessionId":"S"}`,
		`{"id":3,"method":"DOM.setFileInputFiles","params":{"files":["/a","/b"],"backendNodeId":3}}`,
		`{"id":4,"method":"M.m","params":{"a":[1,2.5,-3e10,true,false,null,{"b":"\ud800"}]}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		c, err := ParseCommand(frame)
		if err != nil {
			return
		}
		out, err := c.encode("SESSION")
		if err != nil {
			return // a value encoding/json cannot write back: refused too
		}
		for _, b := range out {
			if b < 0x20 {
				t.Fatalf("the message sent holds byte %#x: %q", b, out)
			}
		}
		// The lenient reader finds in the client's frame what was judged.
		if got := lenient(t, frame); got.ID != c.ID || got.Method != c.Method || got.SessionID != c.SessionID || !reflect.DeepEqual(got.Params, c.Params) {
			t.Fatalf("judged %+v, a lenient reader finds %+v in %q", c, got, frame)
		}
		// And in what the browser is sent.
		sent := lenient(t, out)
		if sent.ID != c.ID || sent.Method != c.Method || sent.SessionID != "SESSION" || !reflect.DeepEqual(sent.Params, c.Params) {
			t.Fatalf("judged %+v, the browser is sent %+v (%s)", c, sent, out)
		}
		// Re-encoding is stable: the message sent, parsed strictly, is sent
		// again unchanged.
		again, err := ParseCommand(out)
		if err != nil {
			t.Fatalf("the message sent is refused when read again: %v: %s", err, out)
		}
		out2, _ := again.encode("SESSION")
		if !bytes.Equal(out, out2) {
			t.Fatalf("re-encoding changed the message:\n%s\n%s", out, out2)
		}
	})
}

// lenient reads a frame as a reader that decodes escapes and keeps the last
// of duplicate keys does.
func lenient(t *testing.T, frame []byte) Command {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(frame))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("a lenient reader refuses %q: %v", frame, err)
	}
	var c Command
	if n, ok := m["id"].(json.Number); ok {
		c.ID, _ = n.Int64()
	}
	c.Method, _ = m["method"].(string)
	c.SessionID, _ = m["sessionId"].(string)
	c.Params, _ = m["params"].(map[string]any)
	return c
}

// BenchmarkParseCommand is what the proxy spends on each command of a
// client before it reaches the browser: parse, judge, re-encode.
func BenchmarkParseCommand(b *testing.B) {
	frame := []byte(`{"id":123,"method":"Runtime.evaluate","params":{"expression":"1+1","returnByValue":true},"sessionId":"0123456789ABCDEF0123456789ABCDEF"}`)
	m := &Mux{}
	ch := &Channel{m: m}
	for b.Loop() {
		c, err := ParseCommand(frame)
		if err != nil {
			b.Fatal(err)
		}
		if e := m.vet(ch, c); e != nil {
			b.Fatal(e)
		}
		if _, err := c.encode("S"); err != nil {
			b.Fatal(err)
		}
	}
}
