package liveview

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chromedp/cdproto/input"
)

func TestLiveViewMouseMapsFractionsOntoTheViewport(t *testing.T) {
	t.Parallel()
	meta := frameMeta{DeviceWidth: 1280, DeviceHeight: 720, PageScaleFactor: 1}
	tests := []struct {
		name string
		m    clientMsg
		ok   bool
		want input.DispatchMouseEventParams
	}{
		{"move", clientMsg{Action: "move", X: 0.5, Y: 0.25}, true,
			input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMouseMoved, X: 640, Y: 180, Button: input.MouseButtonNone}},
		{"drag holds its button", clientMsg{Action: "move", X: 0.1, Y: 0.1, Buttons: 1}, true,
			input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMouseMoved, X: 128, Y: 72, Button: input.MouseButtonLeft, Buttons: 1}},
		{"double click", clientMsg{Action: "down", X: 1, Y: 1, Button: "left", Buttons: 1, ClickCount: 2, Modifiers: 8}, true,
			input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMousePressed, X: 1280, Y: 720, Button: input.MouseButtonLeft, Buttons: 1, ClickCount: 2, Modifiers: 8}},
		{"outside is clamped", clientMsg{Action: "up", X: -3, Y: 7, Button: "right"}, true,
			input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMouseReleased, X: 0, Y: 720, Button: input.MouseButtonRight, ClickCount: 1}},
		{"wheel", clientMsg{Action: "wheel", X: 0.5, Y: 0.5, DeltaY: 120}, true,
			input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMouseWheel, X: 640, Y: 360, DeltaY: 120, Button: input.MouseButtonNone}},
		{"press without a button", clientMsg{Action: "down", X: 0.5, Y: 0.5}, false, input.DispatchMouseEventParams{}},
		{"unknown button", clientMsg{Action: "down", Button: "thumb"}, false, input.DispatchMouseEventParams{}},
		{"unknown action", clientMsg{Action: "hover"}, false, input.DispatchMouseEventParams{}},
		{"not a number", clientMsg{Action: "move", X: math.NaN()}, false, input.DispatchMouseEventParams{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := mouseParams(tc.m, meta)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if ok && got != tc.want {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	p, _ := mouseParams(clientMsg{Action: "wheel", X: 0.5, Y: 0.5, DeltaY: 100}, meta)
	if b, _ := json.Marshal(mouseEvent(p)); !strings.Contains(string(b), `"deltaX":0`) || !strings.Contains(string(b), `"deltaY":100`) {
		t.Fatalf("a wheel event must carry both deltas: %s", b)
	}
	if _, ok := mouseParams(clientMsg{Action: "move"}, frameMeta{}); ok {
		t.Fatal("input before the first frame has nowhere to go")
	}
}

func TestLiveViewKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		m        clientMsg
		ok       bool
		typ      input.DispatchKeyEventType
		text     string
		modifier int64
	}{
		{"printable", clientMsg{Action: "down", Key: "é", Code: "Digit2", KeyCode: 50, Text: "é"}, true, input.DispatchKeyEventTypeKeyDown, "é", 0},
		{"enter types a return", clientMsg{Action: "down", Key: "Enter", Code: "Enter", KeyCode: 13}, true, input.DispatchKeyEventTypeKeyDown, "\r", 0},
		{"ctrl+enter does not", clientMsg{Action: "down", Key: "Enter", KeyCode: 13, Modifiers: 2}, true, input.DispatchKeyEventTypeRawKeyDown, "", 2},
		{"arrow", clientMsg{Action: "down", Key: "ArrowLeft", KeyCode: 37, Modifiers: 8 | 64}, true, input.DispatchKeyEventTypeRawKeyDown, "", 8},
		{"up", clientMsg{Action: "up", Key: "a", KeyCode: 65}, true, input.DispatchKeyEventTypeKeyUp, "", 0},
		{"no key", clientMsg{Action: "down"}, false, "", "", 0},
		{"long text", clientMsg{Action: "down", Key: "x", Text: "0123456789"}, false, "", "", 0},
		{"bad action", clientMsg{Action: "press", Key: "x"}, false, "", "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := keyParams(tc.m)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if ok && (p.Type != tc.typ || p.Text != tc.text || p.Modifiers != tc.modifier || p.WindowsVirtualKeyCode != tc.m.KeyCode) {
				t.Fatalf("got %+v", p)
			}
		})
	}
}

func TestLiveViewURLBarAcceptsOnlyWebURLs(t *testing.T) {
	t.Parallel()
	for raw, ok := range map[string]bool{
		"https://example.com/a?b=c":              true,
		"http://127.0.0.1:8080/":                 true,
		" about:blank ":                          true,
		"javascript:alert(1)":                    false,
		"file:///etc/passwd":                     false,
		"data:text/html,hi":                      false,
		"chrome://settings":                      false,
		"https://":                               false,
		"example.com":                            false,
		"https://" + strings.Repeat("a", maxURL): false,
	} {
		if _, err := checkURL(raw); (err == nil) != ok {
			t.Errorf("checkURL(%q) = %v, want ok %v", raw, err, ok)
		}
	}
}

func TestLiveViewFrameSizeFollowsTheWindow(t *testing.T) {
	t.Parallel()
	small := paramsFor(640, 400, 1)
	if small.maxWidth != 640 || small.maxHeight != 416 || small.quality != 80 {
		t.Fatalf("640x400@1: %+v", small)
	}
	retina := paramsFor(1440, 900, 2)
	if retina.maxWidth != maxCastSide || retina.maxHeight != 1824 || retina.quality != 60 {
		t.Fatalf("1440x900@2: %+v", retina)
	}
	if d := paramsFor(0, 0, 0); d.maxWidth != 1280 || d.maxHeight != 800 {
		t.Fatalf("default: %+v", d)
	}
	if u := small.union(paramsFor(300, 900, 1)); u.maxWidth != 640 || u.maxHeight != 928 {
		t.Fatalf("union: %+v", u)
	}
	if paramsFor(1000, 690, 1) != paramsFor(1010, 700, 1) {
		t.Fatal("a few pixels of resize restart the screencast")
	}
}

// A slow viewer keeps only the newest frame; every frame is acknowledged
// exactly once, whether sent or dropped.
func TestLiveViewMailboxDropsOldFramesAndAcksEachOnce(t *testing.T) {
	t.Parallel()
	v := newViewer(nil, false)
	var acks sync.Map
	var total atomic.Int32
	newFrame := func(n int) *frame {
		f := &frame{ack: func() {
			total.Add(1)
			if _, dup := acks.LoadOrStore(n, true); dup {
				t.Errorf("frame %d acknowledged twice", n)
			}
		}}
		f.claims.Add(1) // the hub's
		return f
	}
	var frames []*frame
	for i := range 5 {
		f := newFrame(i)
		frames = append(frames, f)
		f.claims.Add(1)
		v.offer(f)
		f.release() // the hub lets go
	}
	if total.Load() != 4 {
		t.Fatalf("%d acks after five frames, one unsent: want 4 (the dropped ones)", total.Load())
	}
	v.mu.Lock()
	pending := v.frame
	v.frame = nil
	v.mu.Unlock()
	if pending != frames[4] {
		t.Fatal("the mailbox does not hold the newest frame")
	}
	pending.sent()
	if total.Load() != 5 {
		t.Fatalf("%d acks after the newest was sent", total.Load())
	}
	// A viewer that is gone releases at once.
	v.drop()
	f := newFrame(9)
	f.claims.Add(1)
	v.offer(f)
	f.release()
	if total.Load() != 6 {
		t.Fatal("a frame offered to a gone viewer was not acknowledged")
	}
}

func TestLiveViewFrameMessage(t *testing.T) {
	t.Parallel()
	msg := encodeFrame(frameHeader{Tab: "T", Seq: 7, frameMeta: frameMeta{DeviceWidth: 800, DeviceHeight: 600}}, []byte{0xff, 0xd8, 1})
	n := binary.BigEndian.Uint32(msg)
	var h map[string]any
	if err := json.Unmarshal(msg[4:4+n], &h); err != nil || h["tab"] != "T" || h["deviceWidth"] != float64(800) || h["seq"] != float64(7) {
		t.Fatalf("header %s: %v", msg[4:4+n], err)
	}
	if string(msg[4+n:]) != "\xff\xd8\x01" {
		t.Fatal("the JPEG does not follow the header")
	}
}

func TestLiveViewStaticAssetsAndPage(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"liveview.js", "liveview.css"} {
		w := httptest.NewRecorder()
		serveStatic(w, httptest.NewRequest("GET", "/live/static/"+name, nil), name)
		if w.Code != 200 || w.Header().Get("ETag") == "" || w.Header().Get("Content-Security-Policy") != contentSecurityPolicy {
			t.Fatalf("%s: %d %v", name, w.Code, w.Header())
		}
		if !strings.Contains(string(page), `"`+assetPath(name)+`"`) {
			t.Fatalf("the page does not link %s", assetPath(name))
		}
	}
	w := httptest.NewRecorder()
	serveStatic(w, httptest.NewRequest("GET", "/live/static/index.html", nil), "index.html")
	if w.Code != 404 {
		t.Fatal("index.html is served only as the page")
	}
}
