package branding_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/browsers/browserstest"
	"github.com/trawler-dev/trawler/netguard"
	"github.com/trawler-dev/trawler/scrape"
	"github.com/trawler-dev/trawler/scrape/branding"
	"github.com/trawler-dev/trawler/store"
)

// brandingService is a scrape service on a pool of real local browsers,
// allowed to reach 127.0.0.1, with its own store.
func brandingService(t *testing.T) *scrape.Service {
	t.Helper()
	pool, _ := browserstest.NewPool(t, browsers.PoolOptions{Size: 2, Warm: 1, QueueWait: 30 * time.Second})
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "t.db"))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return &scrape.Service{Pool: pool, Store: st, Guard: &netguard.Guard{AllowPrivate: true},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// scrapeBranding scrapes u for the branding format and fails the test
// unless the document has one and no warning about it.
func scrapeBranding(t *testing.T, s *scrape.Service, u string) *branding.Branding {
	t.Helper()
	o := scrape.DefaultOptions()
	o.Formats = []scrape.Format{{Type: "branding"}}
	o.StoreInCache = false
	doc, err := s.Scrape(context.Background(), scrape.Request{Team: "t", URL: u, Options: o})
	require.NoError(t, err, "scraping %s", u)
	require.NotContains(t, doc.Warning, "branding", "warning of %s", u)
	require.NotNil(t, doc.Branding, "branding of %s", u)
	raw, _ := json.MarshalIndent(doc.Branding, "", "  ")
	t.Logf("%s:\n%s", u, raw)
	return doc.Branding
}

// design is a local page whose brand is known, and what the branding
// format must read of it. URLs are written relative to the site's root.
type design struct {
	name, path string
	scheme     string
	logo       string // "svg" for an inline SVG (a data: URL)
	colors     branding.Colors
	fonts      []string
	typography branding.Typography
	baseUnit   int
	radius     string
	primary    branding.ButtonStyle
	secondary  *branding.ButtonStyle
	input      map[string]any // members of components.input
	images     branding.Images
	icons      map[string]any
	layout     map[string]any
	animations map[string]any
}

var designs = []design{{
	name: "light, image logo, outlined secondary", path: "/harbor/",
	scheme: "light", logo: "/harbor/logo.svg",
	colors: branding.Colors{Primary: "#2563eb", Secondary: "#0f766e", Accent: "#f97316", Background: "#ffffff",
		TextPrimary: "#1f2937", TextSecondary: "#6b7280", Link: "#2563eb",
		Success: "#16a34a", Warning: "#f59e0b", Error: "#dc2626"},
	fonts: []string{"Harbor Sans", "Harbor Display", "JetBrains Mono"},
	typography: branding.Typography{
		FontFamilies: &branding.FontFamilies{Primary: "Harbor Sans", Heading: "Harbor Display", Code: "JetBrains Mono"},
		FontSizes:    &branding.FontSizes{H1: "48px", H2: "32px", H3: "24px", Body: "16px"},
		FontWeights:  &branding.FontWeights{Regular: 400, Bold: 700},
		LineHeights:  &branding.LineHeights{Heading: "1.2", Body: "1.5"},
	},
	baseUnit: 8, radius: "8px",
	primary:   branding.ButtonStyle{Background: "#2563eb", TextColor: "#ffffff", BorderRadius: "8px"},
	secondary: &branding.ButtonStyle{Background: "rgba(0, 0, 0, 0)", TextColor: "#0f766e", BorderColor: "#0f766e", BorderRadius: "8px"},
	input: map[string]any{"background": "#f9fafb", "textColor": "#111827", "borderColor": "#d1d5db", "borderRadius": "6px",
		"borderWidth": "1px", "padding": "8px 12px"},
	images: branding.Images{Logo: "/harbor/logo.svg", Favicon: "/harbor/favicon.svg", OGImage: "/harbor/og.png"},
	icons:  map[string]any{"favicon": "/harbor/favicon.svg", "appleTouchIcon": "/harbor/touch.png", "style": "svg"},
	layout: map[string]any{"maxContentWidth": "1120px", "headerPosition": "sticky"},
	animations: map[string]any{"transitionDuration": "0.15s", "transitionTimingFunction": "ease-in-out",
		"keyframes": []string{"pulse"}, "reducedMotion": true},
}, {
	name: "dark, inline SVG logo, pill buttons", path: "/nightfall/",
	scheme: "dark", logo: "svg",
	// Secondary, accent and success are named by custom properties (the
	// success one as bare HSL channels); no warning colour is shown or named.
	colors: branding.Colors{Primary: "#a855f7", Secondary: "#22d3ee", Accent: "#f472b6", Background: "#0b1020",
		TextPrimary: "#e5e7eb", TextSecondary: "#9ca3af", Link: "#38bdf8", Success: "#36d39f", Error: "#f43f5e"},
	fonts: []string{"Nightfall Grotesk", "Fira Code"},
	typography: branding.Typography{
		FontFamilies: &branding.FontFamilies{Primary: "Nightfall Grotesk", Heading: "Nightfall Grotesk", Code: "Fira Code"},
		FontSizes:    &branding.FontSizes{H1: "56px", H2: "28px", H3: "20px", Body: "15px"},
		FontWeights:  &branding.FontWeights{Light: 300, Regular: 400, Medium: 500, Bold: 700},
		LineHeights:  &branding.LineHeights{Heading: "1.1", Body: "1.6"},
	},
	baseUnit: 4, radius: "16px",
	primary:   branding.ButtonStyle{Background: "#a855f7", TextColor: "#ffffff", BorderRadius: "9999px"},
	secondary: &branding.ButtonStyle{Background: "#1f2937", TextColor: "#e5e7eb", BorderColor: "#374151", BorderRadius: "9999px"},
	input: map[string]any{"background": "#111827", "textColor": "#e5e7eb", "borderColor": "#374151", "borderRadius": "12px",
		"padding": "12px 20px"},
	images: branding.Images{Logo: "svg", Favicon: "/nightfall/favicon.png", OGImage: "https://cdn.nightfall.test/og/cover.jpg"},
	icons: map[string]any{"favicon": "/nightfall/favicon.png", "appleTouchIcon": "/nightfall/apple-touch-icon.png",
		"maskIcon": "/nightfall/mask.svg", "style": "svg"},
	layout:     map[string]any{"maxContentWidth": "960px", "headerPosition": "static"},
	animations: map[string]any{"transitionDuration": "0.2s", "transitionTimingFunction": "cubic-bezier(0.4, 0, 0.2, 1)"},
}, {
	// Its own script patches getComputedStyle, getBoundingClientRect and
	// CSS.supports.
	name: "serif, square, link as primary button, no header element, patched globals", path: "/fernleaf/",
	scheme: "light", logo: "/fernleaf/mark.svg",
	// No accent, secondary text colour or success colour: the page has none.
	colors: branding.Colors{Primary: "#2f6b3a", Secondary: "#b5542d", Background: "#fdf6e3", TextPrimary: "#3b2f2f",
		Link: "#b5542d", Warning: "#d97706", Error: "#b91c1c"},
	fonts: []string{"Fern Serif", "Fern Sans"},
	typography: branding.Typography{
		FontFamilies: &branding.FontFamilies{Primary: "Fern Serif", Heading: "Fern Sans"},
		FontSizes:    &branding.FontSizes{H1: "40px", H2: "30px", H3: "20px", Body: "18px"},
		FontWeights:  &branding.FontWeights{Regular: 400, Medium: 500},
		LineHeights:  &branding.LineHeights{Heading: "normal", Body: "1.7"},
	},
	baseUnit: 5, radius: "0px",
	primary:   branding.ButtonStyle{Background: "#2f6b3a", TextColor: "#fdf6e3", BorderRadius: "0px"},
	secondary: &branding.ButtonStyle{Background: "#e9dfc7", TextColor: "#3b2f2f", BorderRadius: "0px"},
	input: map[string]any{"background": "#fffdf7", "textColor": "#3b2f2f", "borderColor": "#8c7b6b", "borderRadius": "0px",
		"padding": "5px 10px"},
	images: branding.Images{Logo: "/fernleaf/mark.svg", Favicon: "/fernleaf/favicon.ico", OGImage: "/fernleaf/social.png"},
	icons:  map[string]any{"favicon": "/fernleaf/favicon.ico", "appleTouchIcon": "/fernleaf/apple-touch-icon.png"},
	layout: map[string]any{"maxContentWidth": "720px"},
}}

// TestBrandingDesigns reads three local designs whose brand is known: a
// light one with an image logo and an outlined secondary button, a dark
// one with an inline SVG logo and pill buttons, and a serif one with square
// corners, a link drawn as its primary button, no <header>, and a script
// that patches the globals a style reader calls.
func TestBrandingDesigns(t *testing.T) {
	s := brandingService(t)
	site := httptest.NewServer(http.FileServer(http.Dir("testdata")))
	t.Cleanup(site.Close)
	abs := func(u string) string {
		if strings.HasPrefix(u, "/") {
			return site.URL + u
		}
		return u
	}
	for _, tc := range designs {
		t.Run(tc.name, func(t *testing.T) {
			b := scrapeBranding(t, s, site.URL+tc.path)
			assert.Equal(t, tc.scheme, b.ColorScheme, "colorScheme")
			if tc.logo == "svg" {
				require.True(t, strings.HasPrefix(b.Logo, "data:image/svg+xml;base64,"), "logo %.60s", b.Logo)
				svg, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(b.Logo, "data:image/svg+xml;base64,"))
				require.NoError(t, err)
				// The symbol the logo <use>s comes with it.
				assert.Contains(t, string(svg), `<symbol id="mark"`, "the inline logo")
				assert.Contains(t, string(svg), "Nightfall", "the inline logo")
				assert.Equal(t, b.Logo, b.Images.Logo, "images.logo")
			} else {
				assert.Equal(t, abs(tc.logo), b.Logo, "logo")
				assert.Equal(t, abs(tc.images.Logo), b.Images.Logo, "images.logo")
			}
			require.NotNil(t, b.Colors)
			assert.Equal(t, tc.colors, *b.Colors, "colors")
			var fonts []string
			for _, f := range b.Fonts {
				fonts = append(fonts, f.Family)
			}
			assert.Equal(t, tc.fonts, fonts, "fonts")
			require.NotNil(t, b.Typography)
			assert.Equal(t, tc.typography, *b.Typography, "typography")
			require.NotNil(t, b.Spacing)
			assert.Equal(t, tc.baseUnit, b.Spacing.BaseUnit, "spacing.baseUnit")
			assert.Equal(t, tc.radius, b.Spacing.BorderRadius, "spacing.borderRadius")
			require.NotNil(t, b.Components)
			assert.Equal(t, &tc.primary, b.Components.ButtonPrimary, "components.buttonPrimary")
			assert.Equal(t, tc.secondary, b.Components.ButtonSecondary, "components.buttonSecondary")
			for k, v := range tc.input {
				assert.Equal(t, v, b.Components.Input[k], "components.input.%s", k)
			}
			assert.Equal(t, abs(tc.images.Favicon), b.Images.Favicon, "images.favicon")
			assert.Equal(t, abs(tc.images.OGImage), b.Images.OGImage, "images.ogImage")
			icons := map[string]any{}
			for k, v := range tc.icons {
				if u, ok := v.(string); ok && k != "style" {
					v = abs(u)
				}
				icons[k] = v
			}
			assert.Equal(t, icons, b.Icons, "icons")
			for k, v := range tc.layout {
				assert.Equal(t, v, b.Layout[k], "layout.%s", k)
			}
			assert.Equal(t, tc.animations, nilIfEmpty(b.Animations), "animations")
			assert.Nil(t, b.Personality, "personality needs a language model")
		})
	}
}

func nilIfEmpty(m map[string]any) map[string]any {
	if len(m) == 0 {
		return nil
	}
	return m
}

// debianDoc serves an installed documentation package's HTML directory on
// loopback, or skips the test when the package is missing.
func debianDoc(t *testing.T, dir, page string) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, page)); err != nil {
		t.Skipf("%s is not installed", filepath.Join(dir, page))
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestBrandingDebianDocs reads two real pages nobody here designed,
// served from their installed directories so that their stylesheets load:
// Python's documentation (python3.11-doc), white, in Lucida Grande, its
// links #0072aa and the Python logo in its navigation bar; Valgrind's
// manual (valgrind), white, in Arial, its headings and links #74240f and no
// logo at all.
func TestBrandingDebianDocs(t *testing.T) {
	s := brandingService(t)
	t.Run("python", func(t *testing.T) {
		base := debianDoc(t, "/usr/share/doc/python3.11/html", "tutorial/controlflow.html")
		b := scrapeBranding(t, s, base+"/tutorial/controlflow.html")
		assert.Equal(t, "light", b.ColorScheme, "colorScheme")
		assert.Equal(t, base+"/_static/py.svg", b.Logo, "logo: the navigation bar's <img alt=\"python logo\">")
		require.NotNil(t, b.Images)
		assert.Equal(t, base+"/_static/py.svg", b.Images.Favicon, "images.favicon: <link rel=\"shortcut icon\">")
		assert.Empty(t, b.Images.OGImage, "the page has no og:image")
		require.NotNil(t, b.Colors)
		assert.Equal(t, "#ffffff", b.Colors.Background, "background")
		assert.Equal(t, "#222222", b.Colors.TextPrimary, "textPrimary: div.body's colour")
		assert.Equal(t, "#0072aa", b.Colors.Link, "link: div.body a")
		// The theme's two blues: the links', and the sidebar toggle's
		// (classic.css #sidebarbutton); the code blocks' pale green and
		// syntax colours are not the brand's.
		assert.ElementsMatch(t, []string{"#0072aa", "#3c6e83"}, []string{b.Colors.Primary, b.Colors.Secondary}, "primary and secondary")
		assert.Empty(t, b.Colors.Accent, "accent")
		require.NotEmpty(t, b.Fonts)
		assert.Equal(t, "Lucida Grande", b.Fonts[0].Family, "fonts")
		require.NotNil(t, b.Typography)
		assert.Equal(t, "Lucida Grande", b.Typography.FontFamilies.Primary, "fontFamilies.primary")
		assert.Equal(t, "monospace", b.Typography.FontFamilies.Code, "fontFamilies.code")
		assert.Equal(t, 400, b.Typography.FontWeights.Regular, "fontWeights.regular")
		assert.Nil(t, b.Personality)
	})
	t.Run("valgrind", func(t *testing.T) {
		base := debianDoc(t, "/usr/share/doc/valgrind/html", "manual-intro.html")
		b := scrapeBranding(t, s, base+"/manual-intro.html")
		assert.Equal(t, "light", b.ColorScheme, "colorScheme")
		assert.Empty(t, b.Logo, "the manual has no logo, icon or og:image")
		assert.Nil(t, b.Images)
		require.NotNil(t, b.Colors)
		assert.Equal(t, "#ffffff", b.Colors.Background, "background: vg_basic.css body")
		assert.Equal(t, "#202020", b.Colors.TextPrimary, "textPrimary: vg_basic.css body")
		assert.Equal(t, "#74240f", b.Colors.Link, "link: vg_basic.css a")
		assert.Equal(t, "#74240f", b.Colors.Primary, "primary: the colour of the headings and links")
		assert.Empty(t, b.Colors.Success+b.Colors.Warning+b.Colors.Error, "no status colours")
		require.NotEmpty(t, b.Fonts)
		assert.Equal(t, "Arial", b.Fonts[0].Family, "fonts")
		require.NotNil(t, b.Typography)
		assert.Equal(t, "Arial", b.Typography.FontFamilies.Primary, "fontFamilies.primary")
		assert.Equal(t, "14.4px", b.Typography.FontSizes.Body, "fontSizes.body: 90% of 16px")
		assert.Nil(t, b.Components, "no buttons, no inputs")
	})
}
