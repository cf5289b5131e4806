package tabs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/cdproto/input"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"

	"github.com/trawler-dev/trawler/cdp"
)

// Viewport is a screen size in CSS pixels.
type Viewport struct {
	Width, Height int
}

// Action is one step performed on the page before content is taken.
type Action struct {
	Type         string // wait, click, write, press, scroll, screenshot, scrape, executeJavascript, pdf
	Milliseconds int
	Selector     string
	All          bool // click every match
	Text         string
	Key          string
	Direction    string // up or down
	FullPage     bool
	Quality      int
	Viewport     *Viewport
	Script       string
	PaperFormat  string // pdf: A4, Letter, ...
	Landscape    bool
	Scale        float64
}

// Location is the country and languages to emulate.
type Location struct {
	Country   string
	Languages []string
}

// ActionResults are what actions produced.
type ActionResults struct {
	Screenshots       []string       `json:"screenshots"`
	Scrapes           []ActionScrape `json:"scrapes"`
	JavascriptReturns []JSReturn     `json:"javascriptReturns"`
	PDFs              []string       `json:"pdfs"`
}

// ActionScrape is the page as a scrape action saw it.
type ActionScrape struct {
	URL  string `json:"url"`
	HTML string `json:"html"`
}

// JSReturn is the value an executeJavascript action returned.
type JSReturn struct {
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// ActionError is an action that could not be performed.
type ActionError struct {
	Index  int
	Type   string
	Reason string
}

func (e *ActionError) Error() string {
	return fmt.Sprintf("action %d (%s) failed: %s", e.Index, e.Type, e.Reason)
}

// paperSizes are the PDF action's paper formats in inches.
var paperSizes = map[string][2]float64{
	"A0": {33.1, 46.8}, "A1": {23.4, 33.1}, "A2": {16.54, 23.4}, "A3": {11.7, 16.54}, "A4": {8.27, 11.7},
	"A5": {5.83, 8.27}, "A6": {4.13, 5.83}, "Letter": {8.5, 11}, "Legal": {8.5, 14}, "Tabloid": {11, 17},
	"Ledger": {17, 11},
}

// keys are the keys the press action knows beyond single characters.
var keys = map[string]struct {
	code string
	vk   int
	text string
}{
	"Enter": {"Enter", 13, "\r"}, "Tab": {"Tab", 9, ""}, "Escape": {"Escape", 27, ""},
	"Backspace": {"Backspace", 8, ""}, "Delete": {"Delete", 46, ""}, "Space": {"Space", 32, " "},
	"ArrowUp": {"ArrowUp", 38, ""}, "ArrowDown": {"ArrowDown", 40, ""}, "ArrowLeft": {"ArrowLeft", 37, ""},
	"ArrowRight": {"ArrowRight", 39, ""}, "Home": {"Home", 36, ""}, "End": {"End", 35, ""},
	"PageUp": {"PageUp", 33, ""}, "PageDown": {"PageDown", 34, ""},
}

// runActions performs the actions in order and collects what they return.
func (t *Tab) RunActions(ctx context.Context, actions []Action) (*ActionResults, error) {
	res := &ActionResults{Screenshots: []string{}, Scrapes: []ActionScrape{}, JavascriptReturns: []JSReturn{}, PDFs: []string{}}
	for i, a := range actions {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		err := t.runAction(ctx, a, res)
		var stop *stopActions
		switch {
		case errors.As(err, &stop):
			return nil, stop.err
		case err != nil:
			return nil, &ActionError{Index: i, Type: a.Type, Reason: err.Error()}
		}
	}
	return res, nil
}

// stopActions ends the actions with err as it is, not as the action's
// failure: the scrape's time ran out during a plain wait.
type stopActions struct{ err error }

func (e *stopActions) Error() string { return e.err.Error() }

// runAction performs one action, adding what it returns to res.
func (t *Tab) runAction(ctx context.Context, a Action, res *ActionResults) error {
	sel, _ := json.Marshal(a.Selector)
	switch a.Type {
	case "wait":
		return t.wait(ctx, a, string(sel))
	case "click":
		if err := t.click(ctx, a, string(sel)); err != nil {
			return err
		}
	case "write":
		return cdp.Run(ctx, t.sess, input.InsertText, input.InsertTextParams{Text: a.Text})
	case "press":
		if err := t.press(ctx, a.Key); err != nil {
			return err
		}
	case "scroll":
		if err := t.scroll(ctx, a, string(sel)); err != nil {
			return err
		}
	case "screenshot":
		shot, err := t.Screenshot(ctx, a.FullPage, a.Quality, a.Viewport)
		if err != nil {
			return err
		}
		res.Screenshots = append(res.Screenshots, shot)
		return nil
	case "scrape":
		html, u, err := t.HTML(ctx)
		if err != nil {
			return err
		}
		res.Scrapes = append(res.Scrapes, ActionScrape{URL: u, HTML: html})
		return nil
	case "executeJavascript":
		ret, err := t.runScript(ctx, a.Script)
		if err != nil {
			return err
		}
		res.JavascriptReturns = append(res.JavascriptReturns, ret)
	case "pdf":
		pdf, err := t.pdf(ctx, a)
		if err != nil {
			return err
		}
		res.PDFs = append(res.PDFs, pdf)
		return nil
	default:
		return errors.New("unknown action type")
	}
	t.afterInput(ctx)
	return nil
}

// wait waits the action's milliseconds, or until an element matches its
// selector.
func (t *Tab) wait(ctx context.Context, a Action, sel string) error {
	if a.Selector == "" {
		select {
		case <-time.After(time.Duration(a.Milliseconds) * time.Millisecond):
			return nil
		case <-ctx.Done():
			return &stopActions{err: ctx.Err()}
		}
	}
	for {
		var found bool
		if err := t.Evaluate(ctx, "!!document.querySelector("+sel+")", &found); err != nil {
			return err
		}
		if found {
			return nil
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("no element matched %s before the timeout", a.Selector)
		}
	}
}

// scroll scrolls the page, or the element the selector matches, by a
// screenful up or down.
func (t *Tab) scroll(ctx context.Context, a Action, sel string) error {
	sign := 1
	if a.Direction == "up" {
		sign = -1
	}
	script := fmt.Sprintf("window.scrollBy(0, %d * window.innerHeight); true", sign)
	if a.Selector != "" {
		script = fmt.Sprintf(`(() => { const el = document.querySelector(%s); if (!el) throw new Error("no element matches " + %s);
  el.scrollBy(0, %d * (el.clientHeight || window.innerHeight)); return true; })()`, sel, sel, sign)
	}
	return t.Evaluate(ctx, script, nil)
}

// pdf prints the page as the action asks, as a data URL.
func (t *Tab) pdf(ctx context.Context, a Action) (string, error) {
	size := paperSizes[a.PaperFormat]
	if a.PaperFormat == "" {
		size = paperSizes["Letter"]
	}
	scale := a.Scale
	if scale == 0 {
		scale = 1
	}
	// Read as the browser's base64, which the data URL is.
	var pdf struct {
		Data string `json:"data"`
	}
	err := t.call(ctx, cdppage.CommandPrintToPDF, cdppage.PrintToPDFParams{Landscape: new(a.Landscape), Scale: scale,
		PaperWidth: size[0], PaperHeight: size[1], PrintBackground: new(true)}, &pdf)
	if err != nil {
		return "", err
	}
	return "data:application/pdf;base64," + pdf.Data, nil
}

// scriptGroup holds the remote objects an executeJavascript action makes.
const scriptGroup = "trawler-action"

// runScript runs an executeJavascript action: the script is the body of an
// async function, so it may use return and await, and its value is reported
// with its type (typeof, or "null"). The value is taken by reference and
// then by value, so one that JSON cannot carry (window, a circular object,
// a symbol) is reported as its description, as DevTools shows it ("Window",
// "Object", "Symbol(x)"), rather than failing the scrape; NaN, Infinity, -0
// and BigInts are reported as their text ("NaN", "10n").
func (t *Tab) runScript(ctx context.Context, script string) (JSReturn, error) {
	defer func() {
		// Even when the action's time is up, within a bound: a hung
		// browser must not hold the scrape.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		cdp.Run(rctx, t.sess, runtime.ReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: scriptGroup})
	}()
	var res cdp.EvalResult
	err := t.call(ctx, runtime.CommandEvaluate, runtime.EvaluateParams{Expression: "(async () => {\n" + script + "\n})()",
		AwaitPromise: new(true), UserGesture: new(true), ObjectGroup: scriptGroup}, &res)
	if err != nil {
		return JSReturn{}, err
	}
	if msg := res.Exception(); msg != "" {
		return JSReturn{}, &ScriptError{Message: msg}
	}
	r := res.Result
	out := JSReturn{Type: r.Type, Value: nil}
	if r.Subtype == "null" {
		out.Type = "null"
	}
	v, err := cdp.ValueOf(ctx, t.conn, t.sess.ID, r)
	if err != nil {
		return JSReturn{}, err
	}
	if string(v) != "null" {
		out.Value = v
	}
	return out, nil
}

// click clicks the first element matching the selector with a real mouse
// event at its centre (after scrolling it into view), or every match with
// the DOM's click() when all is set.
func (t *Tab) click(ctx context.Context, a Action, sel string) error {
	if a.All {
		var n int
		if err := t.Evaluate(ctx, "(() => { const els = document.querySelectorAll("+sel+"); els.forEach(e => e.click()); return els.length; })()", &n); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("no element matches %s", a.Selector)
		}
		return nil
	}
	var box *struct{ X, Y float64 }
	script := `(() => { const el = document.querySelector(` + sel + `); if (!el) return null;
  el.scrollIntoView({block: "center", inline: "center"}); const r = el.getBoundingClientRect();
  return {X: r.left + r.width / 2, Y: r.top + r.height / 2}; })()`
	if err := t.Evaluate(ctx, script, &box); err != nil {
		return err
	}
	if box == nil {
		return fmt.Errorf("no element matches %s", a.Selector)
	}
	for _, event := range []input.DispatchMouseEventType{input.DispatchMouseEventTypeMouseMoved,
		input.DispatchMouseEventTypeMousePressed, input.DispatchMouseEventTypeMouseReleased} {
		p := input.DispatchMouseEventParams{Type: event, X: box.X, Y: box.Y, Button: input.MouseButtonLeft, ClickCount: 1}
		if event == input.DispatchMouseEventTypeMouseMoved {
			p.Button = input.MouseButtonNone
		}
		if err := cdp.Run(ctx, t.sess, input.DispatchMouseEvent, p); err != nil {
			return err
		}
	}
	return nil
}

func (t *Tab) press(ctx context.Context, key string) error {
	k, ok := keys[key]
	if !ok {
		r := []rune(key)
		if len(r) != 1 {
			return fmt.Errorf("unknown key %q", key)
		}
		upper := strings.ToUpper(key)
		k.code, k.vk, k.text = "Key"+upper, int([]rune(upper)[0]), key
	}
	ev := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyDown, Key: key, Code: k.code,
		WindowsVirtualKeyCode: int64(k.vk), Text: k.text}
	if err := cdp.Run(ctx, t.sess, input.DispatchKeyEvent, ev); err != nil {
		return err
	}
	ev.Type, ev.Text = input.DispatchKeyEventTypeKeyUp, ""
	return cdp.Run(ctx, t.sess, input.DispatchKeyEvent, ev)
}

// afterInput gives what an input set off (a navigation, a fetch) a moment
// to finish.
func (t *Tab) afterInput(ctx context.Context) {
	time.Sleep(100 * time.Millisecond)
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		t.mu.Lock()
		idle := t.younger(lingering) == 0 && time.Since(t.lastNet) >= 300*time.Millisecond
		t.mu.Unlock()
		if idle {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
