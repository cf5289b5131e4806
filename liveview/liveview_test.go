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
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
			require.Equal(t, tc.ok, ok, "ok")
			if ok {
				require.Equal(t, tc.want, got)
			}
		})
	}
	p, _ := mouseParams(clientMsg{Action: "wheel", X: 0.5, Y: 0.5, DeltaY: 100}, meta)
	b, _ := json.Marshal(mouseEvent(p))
	for _, delta := range []string{`"deltaX":0`, `"deltaY":100`} {
		require.Contains(t, string(b), delta, "a wheel event must carry both deltas")
	}
	_, ok := mouseParams(clientMsg{Action: "move"}, frameMeta{})
	require.False(t, ok, "input before the first frame has nowhere to go")
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
			require.Equal(t, tc.ok, ok, "ok")
			if ok {
				require.Equal(t, tc.typ, p.Type, "type")
				require.Equal(t, tc.text, p.Text, "text")
				require.Equal(t, tc.modifier, p.Modifiers, "modifiers")
				require.Equal(t, tc.m.KeyCode, p.WindowsVirtualKeyCode, "key code")
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
		_, err := checkURL(raw)
		assert.Equal(t, ok, err == nil, "checkURL(%q): %v", raw, err)
	}
}

func TestLiveViewFrameSizeFollowsTheWindow(t *testing.T) {
	t.Parallel()
	small := paramsFor(640, 400, 1)
	require.Equal(t, castParams{maxWidth: 640, maxHeight: 416, quality: 80}, small, "640x400@1")
	require.Equal(t, castParams{maxWidth: maxCastSide, maxHeight: 1824, quality: 60}, paramsFor(1440, 900, 2), "1440x900@2")
	if d := paramsFor(0, 0, 0); d.maxWidth != 1280 || d.maxHeight != 800 {
		t.Fatalf("default: %+v", d)
	}
	if u := small.union(paramsFor(300, 900, 1)); u.maxWidth != 640 || u.maxHeight != 928 {
		t.Fatalf("union: %+v", u)
	}
	require.Equal(t, paramsFor(1000, 690, 1), paramsFor(1010, 700, 1), "a few pixels of resize restart the screencast")
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
			_, dup := acks.LoadOrStore(n, true)
			assert.False(t, dup, "frame %d acknowledged twice", n)
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
	require.Equal(t, int32(4), total.Load(), "acks after five frames, one unsent: the dropped ones")
	v.mu.Lock()
	pending := v.frame
	v.frame = nil
	v.mu.Unlock()
	require.True(t, pending == frames[4], "the mailbox does not hold the newest frame")
	pending.sent()
	require.Equal(t, int32(5), total.Load(), "acks after the newest was sent")
	// A viewer that is gone releases at once.
	v.drop()
	f := newFrame(9)
	f.claims.Add(1)
	v.offer(f)
	f.release()
	require.Equal(t, int32(6), total.Load(), "a frame offered to a gone viewer was not acknowledged")
}

func TestLiveViewFrameMessage(t *testing.T) {
	t.Parallel()
	msg := encodeFrame(frameHeader{Tab: "T", Seq: 7, frameMeta: frameMeta{DeviceWidth: 800, DeviceHeight: 600}}, []byte{0xff, 0xd8, 1})
	n := binary.BigEndian.Uint32(msg)
	header := msg[4 : 4+n]
	var h map[string]any
	require.NoError(t, json.Unmarshal(header, &h), "header %s", header)
	require.Equal(t, "T", h["tab"], "header %s", header)
	require.Equal(t, float64(800), h["deviceWidth"], "header %s", header)
	require.Equal(t, float64(7), h["seq"], "header %s", header)
	require.Equal(t, "\xff\xd8\x01", string(msg[4+n:]), "the JPEG does not follow the header")
}

func TestLiveViewStaticAssetsAndPage(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"liveview.js", "liveview.css"} {
		w := httptest.NewRecorder()
		serveStatic(w, httptest.NewRequest("GET", "/live/static/"+name, nil), name)
		require.Equal(t, 200, w.Code, name)
		require.NotEmpty(t, w.Header().Get("ETag"), "%s: ETag", name)
		require.Equal(t, contentSecurityPolicy, w.Header().Get("Content-Security-Policy"), name)
		require.Contains(t, string(static.Page()), `"`+assetPath(name)+`"`, "the page does not link %s", assetPath(name))
	}
	w := httptest.NewRecorder()
	serveStatic(w, httptest.NewRequest("GET", "/live/static/index.html", nil), "index.html")
	require.Equal(t, 404, w.Code, "index.html is served only as the page")
}
