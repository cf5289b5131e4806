// Package branding owns the branding format: what a rendered page shows of
// its brand (colours, fonts, type scale, spacing, buttons, logo, icons),
// read by a script in an isolated world of the page's tab (branding.js)
// and ranked here (rank.go). The brand's personality, a model's
// judgement, is scrape's.
package branding

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	cdproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"

	"github.com/trawler-dev/trawler/cdp"
)

// Branding is the branding member of a document (spec 2.2): what the
// rendered page shows of its brand. Every member is read from the page; one
// the page does not give is left out. Colours are CSS colour strings
// ("#rrggbb", or "rgba(r, g, b, a)" when translucent), URLs absolute (an
// inline SVG logo is a data: URL), sizes computed CSS lengths.
type Branding struct {
	// ColorScheme is "dark" or "light": from the background's luminance,
	// and the root's color-scheme for a background of middling lightness.
	ColorScheme string `json:"colorScheme,omitempty"`
	// Logo is the URL of the page's logo (Images.Logo).
	Logo       string      `json:"logo,omitempty"`
	Colors     *Colors     `json:"colors,omitempty"`
	Fonts      []Font      `json:"fonts,omitempty"`
	Typography *Typography `json:"typography,omitempty"`
	Spacing    *Spacing    `json:"spacing,omitempty"`
	Components *Components `json:"components,omitempty"`
	// Icons holds favicon, appleTouchIcon, maskIcon, manifest (URLs) and
	// style ("svg", "font" or "image": what most of the page's small icons
	// are).
	Icons  map[string]any `json:"icons,omitempty"`
	Images *Images        `json:"images,omitempty"`
	// Animations holds transitionDuration and transitionTimingFunction (the
	// most common on links, buttons and inputs), keyframes (the names of
	// the readable stylesheets' @keyframes) and reducedMotion (true when a
	// stylesheet has a prefers-reduced-motion rule).
	Animations map[string]any `json:"animations,omitempty"`
	// Layout holds maxContentWidth (the max-width of the largest element
	// that sets one), headerHeight, headerPosition and footerHeight.
	Layout map[string]any `json:"layout,omitempty"`
	// Personality (tone, energy, targetAudience) is a judgement, not a
	// reading: the language model gives it when one is configured
	// (brandPersonality); without one it is left out.
	Personality map[string]any `json:"personality,omitempty"`
}

// Colors are the page's colours by role.
type Colors struct {
	Primary       string `json:"primary,omitempty"`
	Secondary     string `json:"secondary,omitempty"`
	Accent        string `json:"accent,omitempty"`
	Background    string `json:"background,omitempty"`
	TextPrimary   string `json:"textPrimary,omitempty"`
	TextSecondary string `json:"textSecondary,omitempty"`
	Link          string `json:"link,omitempty"`
	Success       string `json:"success,omitempty"`
	Warning       string `json:"warning,omitempty"`
	Error         string `json:"error,omitempty"`
}

// Font is a font family the page uses.
type Font struct {
	Family string `json:"family"`
}

// Typography is the page's type: families by role, sizes of the
// headings and the body text, weights in use, line heights (as ratios of
// the font size, or "normal").
type Typography struct {
	FontFamilies *FontFamilies `json:"fontFamilies,omitempty"`
	FontSizes    *FontSizes    `json:"fontSizes,omitempty"`
	FontWeights  *FontWeights  `json:"fontWeights,omitempty"`
	LineHeights  *LineHeights  `json:"lineHeights,omitempty"`
}

// FontFamilies are the first named family of each role's font stack.
type FontFamilies struct {
	Primary string `json:"primary,omitempty"`
	Heading string `json:"heading,omitempty"`
	Code    string `json:"code,omitempty"`
}

// FontSizes are computed font sizes ("32px").
type FontSizes struct {
	H1   string `json:"h1,omitempty"`
	H2   string `json:"h2,omitempty"`
	H3   string `json:"h3,omitempty"`
	Body string `json:"body,omitempty"`
}

// FontWeights are the weights the page's text uses, by band: light below
// 400, regular 400-499, medium 500-599, bold 600 and above; the most used
// of each band.
type FontWeights struct {
	Light   int `json:"light,omitempty"`
	Regular int `json:"regular,omitempty"`
	Medium  int `json:"medium,omitempty"`
	Bold    int `json:"bold,omitempty"`
}

// LineHeights are line heights of h1 and of the body text.
type LineHeights struct {
	Heading string `json:"heading,omitempty"`
	Body    string `json:"body,omitempty"`
}

// Spacing is the page's spacing scale. Padding holds button and input
// (their padding) and common (the most used padding values); Margins holds
// heading (h1's), paragraph and common.
type Spacing struct {
	BaseUnit     int            `json:"baseUnit,omitempty"`
	BorderRadius string         `json:"borderRadius,omitempty"`
	Padding      map[string]any `json:"padding,omitempty"`
	Margins      map[string]any `json:"margins,omitempty"`
}

// Components are the styles of the page's primary and secondary
// buttons and of its first text input.
type Components struct {
	ButtonPrimary   *ButtonStyle `json:"buttonPrimary,omitempty"`
	ButtonSecondary *ButtonStyle `json:"buttonSecondary,omitempty"`
	// Input holds background, textColor, borderColor, borderWidth,
	// borderRadius, padding and height.
	Input map[string]any `json:"input,omitempty"`
}

// ButtonStyle is one button's look. BorderColor is given for the
// secondary button (spec 2.2), and for a primary one only when it is
// outlined (a page without a filled button).
type ButtonStyle struct {
	Background   string `json:"background,omitempty"`
	TextColor    string `json:"textColor,omitempty"`
	BorderColor  string `json:"borderColor,omitempty"`
	BorderRadius string `json:"borderRadius,omitempty"`
}

// Images are the page's brand images.
type Images struct {
	Logo    string `json:"logo,omitempty"`
	Favicon string `json:"favicon,omitempty"`
	OGImage string `json:"ogImage,omitempty"`
}

//go:embed branding.js
var brandingJS string

// readTimeout bounds the reading of one page.
const readTimeout = 10 * time.Second

// Read reads the brand of the page s shows. The script runs in an isolated
// world of the page's main frame, so that nothing the page defined (a
// patched getComputedStyle, a broken Array.prototype) changes what it
// reads. log, when not nil, gets a debug line on what was read.
func Read(ctx context.Context, s cdp.Session, log *slog.Logger) (*Branding, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	start := time.Now()
	var p pageBrand
	if err := evaluateIsolated(ctx, s, "trawler-branding", brandingJS, &p); err != nil {
		return nil, fmt.Errorf("reading the page: %w", err)
	}
	b := brandOf(&p)
	if log != nil {
		log.Debug("branding read", "elements", p.Elements, "truncated", p.Truncated, "logo_from", p.LogoFrom,
			"script_ms", p.MS, "ms", time.Since(start).Milliseconds())
	}
	return b, nil
}

// evaluateIsolated runs expr in a fresh isolated world of the main frame
// of s's page (the page's DOM, its own globals) and decodes its value into
// v.
func evaluateIsolated(ctx context.Context, s cdp.Session, world, expr string, v any) error {
	w, err := cdp.Do(ctx, s, page.CreateIsolatedWorld, page.CreateIsolatedWorldParams{
		FrameID: cdproto.FrameID(s.TargetID), WorldName: world})
	if err != nil {
		return err
	}
	// The result is read as cdp.EvalResult: cdproto's RemoteObject keeps
	// its value in the v2 JSON package.
	byValue := true
	var res cdp.EvalResult
	err = s.Call(ctx, runtime.CommandEvaluate, runtime.EvaluateParams{Expression: expr, ContextID: w.ExecutionContextID,
		ReturnByValue: &byValue}, &res)
	if err != nil {
		return err
	}
	if msg := res.Exception(); msg != "" {
		return errors.New("script error: " + msg)
	}
	if len(res.Result.Value) == 0 {
		return errors.New("the script returned nothing")
	}
	return json.Unmarshal(res.Result.Value, v)
}
