package branding

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPickButtons(t *testing.T) {
	t.Parallel()
	const white = "#ffffff"
	btn := func(bg, border string, w, h, y float64) pageButton {
		bw := 0.0
		if border != "" {
			bw = 1
		}
		return pageButton{BG: bg, Behind: white, Text: "#111111", Border: border, BorderWidth: bw, Radius: "6px", W: w, H: h, Y: y}
	}
	clear := "rgba(0, 0, 0, 0)"
	for _, tc := range []struct {
		name               string
		buttons            []pageButton
		primary, secondary string // backgrounds, or borders for outlined ones; "" for none
	}{
		{"saturated beats a larger grey", []pageButton{btn("#e5e7eb", "", 220, 56, 100), btn("#2563eb", "", 140, 44, 100)}, "#2563eb", "#e5e7eb"},
		{"outlined is the secondary", []pageButton{btn("#2563eb", "", 140, 44, 100), btn(clear, "#0f766e", 140, 44, 100)}, "#2563eb", "#0f766e"},
		{"the primary's look again is not a secondary", []pageButton{btn("#2563eb", "", 140, 44, 100), btn("#2563eb", "", 100, 40, 900)}, "#2563eb", ""},
		{"louder than the primary is not a secondary", []pageButton{btn("#2563eb", "", 300, 60, 100), btn("#111827", "", 100, 40, 100)}, "#2563eb", ""},
		{"a larger button higher up wins", []pageButton{btn("#dc2626", "", 100, 36, 3000), btn("#16a34a", "", 180, 52, 80)}, "#16a34a", ""},
		{"ghost buttons are neither", []pageButton{btn(clear, "", 140, 44, 100), btn(white, "", 140, 44, 100)}, "", ""},
		{"outlined only: the most prominent is the primary", []pageButton{btn(clear, "#0f766e", 100, 40, 100), btn(clear, "#7c3aed", 160, 48, 100)}, "#7c3aed", "#0f766e"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, s := pickButtons(tc.buttons, 1080)
			look := func(b *button) string {
				if b == nil {
					return ""
				}
				return b.look().String()
			}
			assert.Equal(t, tc.primary, look(p), "primary")
			assert.Equal(t, tc.secondary, look(s), "secondary")
		})
	}
}

func TestBrandColors(t *testing.T) {
	t.Parallel()
	base := func() *pageBrand {
		return &pageBrand{VW: 1920, VH: 1080, Canvas: "#ffffff",
			Paints: map[string]float64{"#ffffff": 2e6, "#fef9c3": 4e5, "#0ea5e9": 3e4},
			Runs: []textRun{
				{Role: "text", Color: "#111111", Family: "Inter, sans-serif", Size: "16px", Weight: 400, LineHeight: "24px", Area: 9e4},
				{Role: "text", Color: "#ffffff", Family: "Inter", Size: "16px", Weight: 400, Area: 6e4}, // on a band of colour
				{Role: "text", Color: "#7c3aed", Family: "Inter", Size: "16px", Weight: 600, Area: 3e4}, // an emphasis
				{Role: "text", Color: "#6b7280", Family: "Inter", Size: "14px", Weight: 400, Area: 2e4},
				{Role: "navlink", Color: "#374151", Family: "Inter", Size: "15px", Weight: 500, Area: 5e4},
				{Role: "link", Color: "#0ea5e9", Family: "Inter", Size: "16px", Weight: 400, Area: 1e4},
				{Role: "code", Color: "#dc2626", Family: "Menlo", Size: "14px", Weight: 400, Area: 8e4}, // syntax colours
			},
		}
	}
	for _, tc := range []struct {
		name string
		edit func(p *pageBrand)
		want Colors
	}{
		{"from areas alone: no status colour invented", nil, Colors{Primary: "#0ea5e9", Secondary: "#7c3aed",
			Background: "#ffffff", TextPrimary: "#111111", TextSecondary: "#6b7280", Link: "#0ea5e9"}},
		{"the page's names come before its areas", func(p *pageBrand) {
			p.Vars = [][2]string{{"--brand-primary-foreground", "#ffffff"}, {"--brand-primary", "#e11d48"},
				{"--secondary", "#f59e0b"}, {"--accent", "#10b981"}, {"--bs-danger", "#dc3545"}, {"--bs-danger-bg-subtle", "#f8d7da"}}
		}, Colors{Primary: "#e11d48", Secondary: "#f59e0b", Accent: "#10b981", Background: "#ffffff",
			TextPrimary: "#111111", TextSecondary: "#6b7280", Link: "#0ea5e9", Error: "#dc3545"}},
		{"shown status elements win over names", func(p *pageBrand) {
			p.Vars = [][2]string{{"--warning", "#eab308"}}
			p.Status = map[string][]string{"warning": {"#d97706"}, "success": {"#16a34a"}}
		}, Colors{Primary: "#0ea5e9", Secondary: "#7c3aed", Background: "#ffffff", TextPrimary: "#111111",
			TextSecondary: "#6b7280", Link: "#0ea5e9", Success: "#16a34a", Warning: "#d97706"}},
		{"the primary button's fill is the primary", func(p *pageBrand) {
			p.ThemeColor = "#0ea5e9"
			p.Buttons = []pageButton{{BG: "#ea580c", Behind: "#ffffff", Text: "#ffffff", W: 120, H: 40, Y: 100}}
		}, Colors{Primary: "#ea580c", Secondary: "#0ea5e9", Accent: "#7c3aed", Background: "#ffffff",
			TextPrimary: "#111111", TextSecondary: "#6b7280", Link: "#0ea5e9"}},
		{"without links in prose, navigation links give the link colour", func(p *pageBrand) {
			p.Runs = p.Runs[:len(p.Runs)-2]
		}, Colors{Primary: "#0ea5e9", Secondary: "#7c3aed", Background: "#ffffff", TextPrimary: "#111111",
			TextSecondary: "#6b7280", Link: "#374151"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := base()
			if tc.edit != nil {
				tc.edit(p)
			}
			b := brandOf(p)
			require.NotNil(t, b.Colors)
			assert.Equal(t, tc.want, *b.Colors)
			assert.Nil(t, b.Personality, "personality needs a language model")
		})
	}
}

func TestColorScheme(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		bg, declared, want string
	}{
		{"#ffffff", "normal", "light"},
		{"#0b1020", "normal", "dark"},
		{"#121212", "light", "dark"}, // the background has the last word when it is clear
		{"#5a5a5a", "dark", "dark"},  // middling: the page's color-scheme decides
		{"#5a5a5a", "light", "light"},
		{"#5a5a5a", "normal", "dark"},
		{"#f5f5dc", "dark", "light"},
	} {
		c, ok := parseColor(tc.bg)
		require.True(t, ok, tc.bg)
		assert.Equal(t, tc.want, colorScheme(c, tc.declared), "%s with color-scheme %s", tc.bg, tc.declared)
	}
}

func TestFirstFamily(t *testing.T) {
	t.Parallel()
	for stack, want := range map[string]string{
		`"Harbor Sans", Helvetica, sans-serif`:                         "Harbor Sans",
		`-apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, Arial`: "Segoe UI",
		`system-ui, sans-serif`:                                        "system-ui",
		`monospace`:                                                    "monospace",
		`'Fira Code', "a, b", monospace`:                               "Fira Code",
		``:                                                             "",
	} {
		assert.Equal(t, want, firstFamily(stack), "firstFamily(%q)", stack)
	}
}

func TestBaseUnit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		counts map[string]int
		want   int
	}{
		{"8px grid", map[string]int{"8": 10, "16": 20, "24": 6, "32": 8, "12": 3}, 8},
		{"4px grid", map[string]int{"4": 6, "12": 10, "20": 8, "8": 4}, 4},
		{"5px grid", map[string]int{"5": 4, "15": 10, "25": 6, "10": 8, "20": 4}, 5},
		{"hairlines do not count", map[string]int{"1": 50, "16": 10, "32": 4}, 8},
		{"no grid: the most common value", map[string]int{"7": 5, "9": 3, "13": 2, "11": 1}, 7},
		{"nothing", map[string]int{}, 0},
	} {
		assert.Equal(t, tc.want, baseUnit(tc.counts), tc.name)
	}
}

func TestColorStrings(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"#2563eb", "#000000", "rgba(0, 0, 0, 0)", "rgba(37, 99, 235, 0.5)"} {
		c, ok := parseColor(s)
		require.True(t, ok, s)
		assert.Equal(t, s, c.String())
	}
	for _, s := range []string{"", "red", "#abc", "rgb(1, 2, 3)", "#zzzzzz"} {
		_, ok := parseColor(s)
		assert.False(t, ok, "parseColor(%q)", s)
	}
	assert.Equal(t, "1.5", lineRatio("24px", "16px"))
	assert.Equal(t, "normal", lineRatio("normal", "16px"))
}
