package liveview

import (
	"errors"
	"math"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/chromedp/cdproto/input"

	"github.com/trawler-dev/trawler/wire"
)

// clientMsg is a message from the page. Coordinates are fractions (0 to 1)
// of the frame as drawn, so the page need not know the remote viewport: the
// server maps them onto the CSS pixels of the frame's metadata.
type clientMsg struct {
	Type string `json:"type"`

	// viewport: the drawing area in CSS pixels and the device pixel ratio.
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
	DPR    float64 `json:"dpr"`

	// pick, closeTab.
	Tab string `json:"tab"`

	// mouse: action move, down, up or wheel.
	Action     string  `json:"action"`
	X          float64 `json:"x"`
	Y          float64 `json:"y"`
	Button     string  `json:"button"`
	Buttons    int64   `json:"buttons"`
	ClickCount int64   `json:"clickCount"`
	DeltaX     float64 `json:"deltaX"`
	DeltaY     float64 `json:"deltaY"`

	// key (action down or up); text.
	Key       string `json:"key"`
	Code      string `json:"code"`
	KeyCode   int64  `json:"keyCode"`
	Location  int64  `json:"location"`
	Repeat    bool   `json:"repeat"`
	Text      string `json:"text"`
	Modifiers int64  `json:"modifiers"` // Alt=1, Ctrl=2, Meta=4, Shift=8

	// navigate, newTab.
	URL string `json:"url"`
}

// inputTypes are the messages that act on the browser: only an interactive
// viewer may send them.
var inputTypes = map[string]bool{
	"mouse": true, "key": true, "text": true, "navigate": true, "back": true, "forward": true,
	"reload": true, "newTab": true, "closeTab": true,
}

const (
	maxInsertText = 32 << 10
	maxKeyText    = 8 // runes of a key event's text
	maxURL        = 8 << 10
)

var mouseButtons = map[string]input.MouseButton{
	"": input.MouseButtonNone, "none": input.MouseButtonNone, "left": input.MouseButtonLeft, "middle": input.MouseButtonMiddle, "right": input.MouseButtonRight,
	"back": input.MouseButtonBack, "forward": input.MouseButtonForward,
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// mouseParams maps a mouse message onto the page's viewport as meta (the
// newest frame's metadata) describes it.
func mouseParams(m clientMsg, meta frameMeta) (input.DispatchMouseEventParams, bool) {
	if meta.DeviceWidth <= 0 || meta.DeviceHeight <= 0 || !finite(m.X) || !finite(m.Y) {
		return input.DispatchMouseEventParams{}, false
	}
	x := math.Max(0, math.Min(1, m.X)) * meta.DeviceWidth
	y := math.Max(0, math.Min(1, m.Y)) * meta.DeviceHeight
	p := input.DispatchMouseEventParams{
		X: math.Round(x*100) / 100, Y: math.Round(y*100) / 100,
		Modifiers: m.Modifiers & 15, Buttons: m.Buttons & 31,
	}
	button, ok := mouseButtons[m.Button]
	if !ok {
		return p, false
	}
	switch m.Action {
	case "move":
		p.Type = input.DispatchMouseEventTypeMouseMoved
		// A drag moves with its button held.
		switch {
		case p.Buttons&1 != 0:
			button = input.MouseButtonLeft
		case p.Buttons&2 != 0:
			button = input.MouseButtonRight
		case p.Buttons&4 != 0:
			button = input.MouseButtonMiddle
		}
	case "down", "up":
		p.Type = input.DispatchMouseEventTypeMousePressed
		if m.Action == "up" {
			p.Type = input.DispatchMouseEventTypeMouseReleased
		}
		if button == input.MouseButtonNone {
			return p, false
		}
		p.ClickCount = max(1, min(m.ClickCount, 3))
	case "wheel":
		if !finite(m.DeltaX) || !finite(m.DeltaY) {
			return p, false
		}
		p.Type = input.DispatchMouseEventTypeMouseWheel
		p.DeltaX = math.Max(-10000, math.Min(10000, m.DeltaX))
		p.DeltaY = math.Max(-10000, math.Min(10000, m.DeltaY))
		button = input.MouseButtonNone
	default:
		return p, false
	}
	p.Button = button
	return p, true
}

// wheelEvent is Input.dispatchMouseEvent for the wheel: the protocol wants
// both deltas, and cdproto's type leaves out a zero one.
type wheelEvent struct {
	Type      input.DispatchMouseEventType `json:"type"`
	X         float64                      `json:"x"`
	Y         float64                      `json:"y"`
	Modifiers int64                        `json:"modifiers"`
	DeltaX    float64                      `json:"deltaX"`
	DeltaY    float64                      `json:"deltaY"`
}

// mouseEvent is what goes on the wire for p.
func mouseEvent(p input.DispatchMouseEventParams) any {
	if p.Type == input.DispatchMouseEventTypeMouseWheel {
		return wheelEvent{Type: p.Type, X: p.X, Y: p.Y, Modifiers: p.Modifiers, DeltaX: p.DeltaX, DeltaY: p.DeltaY}
	}
	return p
}

// keyParams maps a key message onto Input.dispatchKeyEvent: a key that
// types a character is a keyDown with its text, any other a rawKeyDown.
// Text without a key (IME, paste, characters the page's keyboard cannot
// name) comes as a text message instead.
func keyParams(m clientMsg) (input.DispatchKeyEventParams, bool) {
	if m.Key == "" || len(m.Key) > 32 || len(m.Code) > 32 || utf8.RuneCountInString(m.Text) > maxKeyText ||
		m.KeyCode < 0 || m.KeyCode > 255 {
		return input.DispatchKeyEventParams{}, false
	}
	p := input.DispatchKeyEventParams{
		Key: m.Key, Code: m.Code, Modifiers: m.Modifiers & 15,
		WindowsVirtualKeyCode: m.KeyCode, NativeVirtualKeyCode: m.KeyCode,
	}
	if m.Location >= 1 && m.Location <= 2 {
		p.Location = m.Location
	}
	if m.Location == 3 {
		yes := true
		p.IsKeypad = &yes
	}
	if m.Repeat {
		yes := true
		p.AutoRepeat = &yes
	}
	switch m.Action {
	case "down":
		text := m.Text
		if text == "" && m.Key == "Enter" && m.Modifiers&(2|4) == 0 {
			text = "\r" // what makes Enter submit a form
		}
		p.Type = input.DispatchKeyEventTypeRawKeyDown
		if text != "" {
			p.Type = input.DispatchKeyEventTypeKeyDown
			p.Text, p.UnmodifiedText = text, text
		}
	case "up":
		p.Type = input.DispatchKeyEventTypeKeyUp
	default:
		return p, false
	}
	return p, true
}

// checkURL accepts what the URL bar may open: an http or https URL, or
// about:blank.
func checkURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "about:blank" {
		return raw, nil
	}
	if len(raw) > maxURL {
		return "", errors.New("the URL is too long")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", errors.New("not a URL: " + wire.Truncate(raw, 100))
	}
	if s := strings.ToLower(u.Scheme); (s != "http" && s != "https") || u.Host == "" {
		return "", errors.New("only http and https URLs can be opened from the live view")
	}
	return u.String(), nil
}
