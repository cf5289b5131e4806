package branding

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// pageBrand is what branding.js reads from the page; brandOf ranks it.
type pageBrand struct {
	VW        float64 `json:"vw"`
	VH        float64 `json:"vh"`
	Elements  int     `json:"elements"`
	Truncated bool    `json:"truncated"`
	MS        float64 `json:"ms"`
	// Scheme is the root's computed color-scheme ("normal", "dark", "light
	// dark").
	Scheme string `json:"scheme"`
	// Canvas is the colour behind everything: the root's or the body's
	// background, or the browser's default.
	Canvas string `json:"canvas"`
	// Paints is the area each background colour shows, in CSS pixels² of
	// the page's first four viewport heights; Borders the same for borders.
	// Neither counts status elements (alerts, badges).
	Paints  map[string]float64 `json:"paints"`
	Borders map[string]float64 `json:"borders"`
	// Runs are the page's text by style, each with the area it covers.
	Runs    []textRun         `json:"runs"`
	Buttons []pageButton      `json:"buttons"`
	Input   map[string]string `json:"input"`
	// Paddings and Margins count the page's padding and margin values in
	// whole pixels (1..128).
	Paddings map[string]int `json:"paddings"`
	Margins  map[string]int `json:"margins"`
	// Radii counts the top-left radius of each box drawn (a background or
	// a border all round).
	Radii map[string]int `json:"radii"`
	// Icons counts small icons by kind: svg, font, image.
	Icons map[string]int `json:"icons"`
	// Status holds the colours of the success, warning and error elements
	// shown, in page order.
	Status          map[string][]string     `json:"status"`
	Headings        map[string]headingStyle `json:"headings"`
	Code            string                  `json:"code"`
	ParagraphMargin string                  `json:"paragraphMargin"`
	ThemeColor      string                  `json:"themeColor"`
	OGImage         string                  `json:"ogImage"`
	Favicon         string                  `json:"favicon"`
	AppleTouchIcon  string                  `json:"appleTouchIcon"`
	MaskIcon        string                  `json:"maskIcon"`
	Manifest        string                  `json:"manifest"`
	// Vars are the root's custom properties that hold a colour: name and
	// colour.
	Vars [][2]string `json:"vars"`
	// FontFaces are the families of readable @font-face rules and of the
	// fonts the page loaded.
	FontFaces     []string       `json:"fontFaces"`
	Keyframes     []string       `json:"keyframes"`
	ReducedMotion bool           `json:"reducedMotion"`
	Durations     map[string]int `json:"durations"`
	Timings       map[string]int `json:"timings"`
	// Logo is the URL of the page's own logo, found as LogoFrom says: an
	// "img", an inline "svg" (a data: URL) or a "bg" (background image).
	Logo     string            `json:"logo"`
	LogoFrom string            `json:"logoFrom"`
	Layout   map[string]string `json:"layout"`
}

// textRun is text of one style and role: "text", "link", "heading",
// "button" or "status".
type textRun struct {
	Role       string  `json:"role"`
	Color      string  `json:"color"`
	Family     string  `json:"family"`
	Size       string  `json:"size"`
	Weight     int     `json:"weight"`
	LineHeight string  `json:"lineHeight"`
	Area       float64 `json:"area"`
}

type headingStyle struct {
	Family     string `json:"family"`
	Size       string `json:"size"`
	Weight     int    `json:"weight"`
	LineHeight string `json:"lineHeight"`
	Margin     string `json:"margin"`
}

// pageButton is a button or a link drawn as one. Behind is the colour of
// what it sits on; X and Y place it on the page.
type pageButton struct {
	BG          string  `json:"bg"`
	Behind      string  `json:"behind"`
	Text        string  `json:"text"`
	Border      string  `json:"border"`
	BorderWidth float64 `json:"borderWidth"`
	Radius      string  `json:"radius"`
	Padding     string  `json:"padding"`
	W           float64 `json:"w"`
	H           float64 `json:"h"`
	X           float64 `json:"x"`
	Y           float64 `json:"y"`
}

// Thresholds of the colour decisions, on 0..255 channels.
const (
	// chromaMin: a colour with less spread between its channels is a
	// neutral (white, black, a grey, a faint tint): never a brand colour.
	chromaMin = 40
	// sameColor: colours closer than this (RGB distance) are one colour
	// (a hover shade, a rounding difference).
	sameColor = 24
	// filledMin: a button whose background is at least this far from
	// what is behind it is filled.
	filledMin = 12
)

// brandOf ranks what the page script read into the branding member.
func brandOf(p *pageBrand) *Branding {
	b := &Branding{}
	background := backgroundOf(p)
	b.ColorScheme = colorScheme(background, p.Scheme)
	colors := &Colors{Background: background.String()}
	textColors(p, background, colors)
	primaryBtn, secondaryBtn := pickButtons(p.Buttons, p.VH)
	brandColors(p, primaryBtn, secondaryBtn, colors)
	statusColors(p, colors)
	b.Colors = colors

	b.Fonts, b.Typography = typographyOf(p)
	b.Spacing = spacingOf(p, primaryBtn)
	b.Components = componentsOf(p, primaryBtn, secondaryBtn)
	imagesOf(p, b)
	if anim := animationsOf(p); len(anim) > 0 {
		b.Animations = anim
	}
	if l := nonEmpty(p.Layout); len(l) > 0 {
		b.Layout = l
	}
	return b
}

// backgroundOf is the page's background: the opaque colour showing the
// most area, else what is behind everything.
func backgroundOf(p *pageBrand) rgba {
	if top := rankColors(p.Paints, func(c rgba) bool { return c.a >= 0.9 }); len(top) > 0 {
		return top[0].c
	}
	if c, ok := parseColor(p.Canvas); ok {
		return c
	}
	return rgba{255, 255, 255, 1}
}

// textColors sets the text colours by role, weighed by the area of their
// text; the body text's are those readable on the background (text on a
// band of its own colour is not the page's text colour).
func textColors(p *pageBrand, background rgba, colors *Colors) {
	textBy := func(minContrast float64, roles ...string) []ranked {
		m := map[string]float64{}
		for _, r := range p.Runs {
			if slices.Contains(roles, r.Role) {
				m[r.Color] += r.Area
			}
		}
		return rankColors(m, func(c rgba) bool { return c.a >= 0.5 && contrast(c, background) >= minContrast })
	}
	text, links := textBy(2, "text"), textBy(0, "link")
	if len(links) == 0 {
		links = textBy(0, "navlink")
	}
	if len(text) == 0 {
		text = textBy(0, "text", "heading")
	}
	if len(text) > 0 {
		colors.TextPrimary = text[0].c.String()
		// The secondary text colour is a neutral one (a grey for captions
		// and footers): coloured text is a link, code or an emphasis.
		for _, t := range text[1:] {
			if t.c.chromatic() || dist(t.c, text[0].c) < sameColor || len(links) > 0 && dist(t.c, links[0].c) < sameColor {
				continue
			}
			colors.TextSecondary = t.c.String()
			break
		}
	}
	if len(links) > 0 {
		colors.Link = links[0].c.String()
	}
}

// picker hands out brand colours, each one unlike those it gave before.
type picker struct{ chosen []rgba }

// pick returns the first of cands that is colourful and unlike the colours
// chosen so far, or "".
func (pk *picker) pick(cands ...rgba) string {
	for _, c := range cands {
		if !c.chromatic() {
			continue
		}
		if slices.ContainsFunc(pk.chosen, func(o rgba) bool { return dist(o, c) < sameColor }) {
			continue
		}
		pk.chosen = append(pk.chosen, c)
		return c.String()
	}
	return ""
}

// brandColors sets the primary, secondary and accent colours: what the
// primary button is filled with, else what the page names primary, its
// theme colour, or the most colourful area it paints; then the secondary
// button's, and what the page names secondary or accent.
func brandColors(p *pageBrand, primaryBtn, secondaryBtn *button, colors *Colors) {
	palette := brandPalette(p)
	var pk picker
	var cands []rgba
	if primaryBtn != nil {
		cands = append(cands, primaryBtn.look())
	}
	cands = append(cands, varColors(p.Vars, "primary", "brand")...)
	if c, ok := parseColor(p.ThemeColor); ok {
		cands = append(cands, c)
	}
	cands = append(cands, palette...)
	colors.Primary = pk.pick(cands...)
	if colors.Primary == "" && primaryBtn != nil {
		// A page without colour: its primary button's look is its brand.
		colors.Primary = primaryBtn.look().String()
		pk.chosen = append(pk.chosen, primaryBtn.look())
	}
	cands = nil
	if secondaryBtn != nil {
		cands = append(cands, secondaryBtn.bg, secondaryBtn.border, secondaryBtn.text)
	}
	cands = append(cands, varColors(p.Vars, "secondary")...)
	colors.Secondary = pk.pick(append(cands, palette...)...)
	colors.Accent = pk.pick(append(varColors(p.Vars, "accent", "tertiary", "highlight"), palette...)...)
}

// statusColors sets success, warning and error only when the page shows
// or names them.
func statusColors(p *pageBrand, colors *Colors) {
	for _, s := range []struct {
		to    *string
		kind  string
		words []string
	}{
		{&colors.Success, "success", []string{"success", "positive"}},
		{&colors.Warning, "warning", []string{"warning", "warn", "caution"}},
		{&colors.Error, "error", []string{"error", "danger", "destructive", "negative", "critical"}},
	} {
		if shown := p.Status[s.kind]; len(shown) > 0 {
			*s.to = shown[0]
			continue
		}
		for _, c := range varColors(p.Vars, s.words...) {
			if c.chromatic() {
				*s.to = c.String()
				break
			}
		}
	}
}

// componentsOf is the look of the primary and secondary buttons and of the
// first input; nil when the page has none of them.
func componentsOf(p *pageBrand, primaryBtn, secondaryBtn *button) *Components {
	comp := &Components{}
	if primaryBtn != nil {
		comp.ButtonPrimary = &ButtonStyle{Background: primaryBtn.bg.String(), TextColor: primaryBtn.b.Text, BorderRadius: primaryBtn.b.Radius}
		if primaryBtn.outlined {
			comp.ButtonPrimary.BorderColor = primaryBtn.b.Border
		}
	}
	if secondaryBtn != nil {
		s := &ButtonStyle{Background: secondaryBtn.bg.String(), TextColor: secondaryBtn.b.Text, BorderRadius: secondaryBtn.b.Radius}
		if secondaryBtn.hasBorder {
			s.BorderColor = secondaryBtn.b.Border
		}
		comp.ButtonSecondary = s
	}
	if in := nonEmpty(p.Input); len(in) > 0 {
		comp.Input = in
	}
	if comp.ButtonPrimary == nil && comp.ButtonSecondary == nil && comp.Input == nil {
		return nil
	}
	return comp
}

// imagesOf sets b's icons, logo and images.
func imagesOf(p *pageBrand, b *Branding) {
	icons := nonEmpty(map[string]string{"favicon": p.Favicon, "appleTouchIcon": p.AppleTouchIcon, "maskIcon": p.MaskIcon,
		"manifest": p.Manifest, "style": mostCommon(p.Icons, anyKey)})
	if len(icons) > 0 {
		b.Icons = icons
	}
	// The logo: the page's own, else its touch icon, favicon or Open
	// Graph image, in that order.
	for _, u := range []string{p.Logo, p.AppleTouchIcon, p.Favicon, p.OGImage} {
		if u != "" {
			b.Logo = u
			break
		}
	}
	if b.Logo != "" || p.Favicon != "" || p.OGImage != "" {
		b.Images = &Images{Logo: b.Logo, Favicon: p.Favicon, OGImage: p.OGImage}
	}
}

// animationsOf is the page's most common transition, its keyframes and
// whether it honours reduced motion.
func animationsOf(p *pageBrand) map[string]any {
	anim := nonEmpty(map[string]string{
		"transitionDuration":       mostCommon(p.Durations, anyKey),
		"transitionTimingFunction": mostCommon(p.Timings, anyKey),
	})
	if len(p.Keyframes) > 0 {
		anim["keyframes"] = p.Keyframes
	}
	if p.ReducedMotion {
		anim["reducedMotion"] = true
	}
	return anim
}

// colorScheme is dark for a dark background, light for a light one; for
// a background of middling lightness the page's color-scheme decides.
func colorScheme(bg rgba, declared string) string {
	l := bg.luminance()
	dark := strings.Contains(declared, "dark")
	light := strings.Contains(declared, "light")
	switch {
	case l < 0.1:
		return "dark"
	case l > 0.4:
		return "light"
	case dark && !light:
		return "dark"
	case light && !dark:
		return "light"
	case l < 0.179: // where white text starts to contrast better than black
		return "dark"
	}
	return "light"
}

// button is a pageButton with its colours parsed.
type button struct {
	b                         *pageButton
	bg, behind, text, border  rgba
	filled, outlined          bool
	hasBorder                 bool
	contrast, area, placement float64
}

// look is the colour that makes the button: its fill, or its outline.
func (bt *button) look() rgba {
	if bt.filled {
		return bt.bg
	}
	return bt.border
}

// pickButtons chooses the primary button, the one that stands out most: of
// the filled ones, the largest, most saturated and most contrasting with
// what it sits on, higher up the page counting more. The secondary is the
// most prominent of the rest that look different: outlined, or filled with
// less contrast than the primary.
func pickButtons(list []pageButton, vh float64) (primary, secondary *button) {
	var all []*button
	for i := range list {
		pb := &list[i]
		bt := &button{b: pb, area: pb.W * pb.H}
		var ok bool
		if bt.bg, ok = parseColor(pb.BG); !ok {
			continue
		}
		bt.behind, _ = parseColor(pb.Behind)
		bt.text, _ = parseColor(pb.Text)
		bt.border, bt.hasBorder = parseColor(pb.Border)
		bt.hasBorder = bt.hasBorder && pb.BorderWidth >= 1
		bt.filled = bt.bg.a >= 0.5 && dist(bt.bg, bt.behind) > filledMin
		bt.outlined = !bt.filled && bt.hasBorder && dist(bt.border, bt.behind) > 30
		bt.contrast = contrast(bt.bg, bt.behind)
		switch {
		case vh <= 0 || pb.Y < vh:
			bt.placement = 1.5
		case pb.Y < 2*vh:
			bt.placement = 1.2
		default:
			bt.placement = 1
		}
		if bt.filled || bt.outlined {
			all = append(all, bt)
		}
	}
	score := func(bt *button) float64 {
		if !bt.filled {
			return bt.area * bt.placement * 0.25
		}
		return bt.area * bt.placement * (1 + 2*float64(bt.bg.chroma())/255) * (0.5 + math.Min(bt.contrast, 7)/7)
	}
	for _, bt := range all {
		if primary == nil || score(bt) > score(primary) {
			primary = bt
		}
	}
	if primary == nil {
		return nil, nil
	}
	sameLook := func(x, y *button) bool {
		if x.filled != y.filled {
			return false
		}
		if x.filled {
			return dist(x.bg, y.bg) < sameColor
		}
		return dist(x.border, y.border) < sameColor
	}
	prominence := func(bt *button) float64 {
		if bt.outlined {
			return bt.area * bt.placement * 1.5
		}
		return bt.area * bt.placement
	}
	for _, bt := range all {
		switch {
		case bt == primary, sameLook(bt, primary):
			continue // the primary's look again
		case bt.filled && primary.filled && bt.contrast >= primary.contrast:
			continue // as loud as the primary, or louder: not a secondary
		}
		if secondary == nil || prominence(bt) > prominence(secondary) {
			secondary = bt
		}
	}
	return primary, secondary
}

// brandPalette is the page's colourful colours, by the area they paint
// (backgrounds, borders, text), near-duplicates merged.
func brandPalette(p *pageBrand) []rgba {
	m := map[string]float64{}
	for c, a := range p.Paints {
		m[c] += a
	}
	for c, a := range p.Borders {
		m[c] += a
	}
	for _, r := range p.Runs {
		if r.Role != "status" && r.Role != "code" {
			m[r.Color] += r.Area
		}
	}
	var out []rgba
	for _, r := range rankColors(m, rgba.chromatic) {
		out = append(out, r.c)
	}
	return out
}

// ranked is a colour with the area it covers.
type ranked struct {
	c    rgba
	area float64
}

// rankColors orders the colours of m that keep accepts by area, largest
// first, each near-duplicate merged into the larger.
func rankColors(m map[string]float64, keep func(rgba) bool) []ranked {
	var all []ranked
	for s, a := range m {
		if c, ok := parseColor(s); ok && keep(c) && a > 0 {
			all = append(all, ranked{c, a})
		}
	}
	slices.SortFunc(all, func(x, y ranked) int {
		if x.area != y.area {
			return cmp.Compare(y.area, x.area)
		}
		return cmp.Compare(x.c.String(), y.c.String())
	})
	var out []ranked
	for _, r := range all {
		if i := slices.IndexFunc(out, func(o ranked) bool { return dist(o.c, r.c) < sameColor && o.c.a == r.c.a }); i >= 0 {
			out[i].area += r.area
			continue
		}
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(x, y ranked) int { return cmp.Compare(y.area, x.area) })
	return out
}

// varColors are the colours of the custom properties named with one of
// words ("--color-primary", "--brand"), shortest name first, leaving out
// the variants of a colour (its text, hover, light or dark shade).
func varColors(vars [][2]string, words ...string) []rgba {
	variant := map[string]bool{"foreground": true, "fg": true, "text": true, "bg": true, "background": true, "hover": true,
		"active": true, "focus": true, "light": true, "lighter": true, "lightest": true, "dark": true, "darker": true,
		"darkest": true, "muted": true, "subtle": true, "border": true, "contrast": true, "disabled": true, "emphasis": true,
		"inverse": true, "soft": true, "pale": true, "shadow": true, "on": true, "container": true}
	type named struct {
		name string
		c    rgba
	}
	var found []named
	for _, v := range vars {
		toks := strings.FieldsFunc(strings.ToLower(v[0]), func(r rune) bool { return r == '-' || r == '_' })
		match, skip := false, false
		for _, t := range toks {
			match = match || slices.Contains(words, t)
			skip = skip || variant[t]
		}
		if c, ok := parseColor(v[1]); match && !skip && ok {
			found = append(found, named{v[0], c})
		}
	}
	slices.SortStableFunc(found, func(a, b named) int { return cmp.Compare(len(a.name), len(b.name)) })
	out := make([]rgba, len(found))
	for i, f := range found {
		out[i] = f.c
	}
	return out
}

// typographyOf reads the fonts in use and the type scale.
func typographyOf(p *pageBrand) ([]Font, *Typography) {
	u := typeUseOf(p)
	fonts := fontsOf(p, u)
	t := &Typography{}
	if ff := familiesOf(p, u, fonts); ff != (FontFamilies{}) {
		t.FontFamilies = &ff
	}
	bodySize := ""
	if top := byArea(u.textSizes); len(top) > 0 {
		bodySize = top[0]
	}
	fs := FontSizes{H1: p.Headings["h1"].Size, H2: p.Headings["h2"].Size, H3: p.Headings["h3"].Size, Body: bodySize}
	if fs != (FontSizes{}) {
		t.FontSizes = &fs
	}
	if fw := weightsOf(u.weights); fw != (FontWeights{}) {
		t.FontWeights = &fw
	}
	if lh := lineHeightsOf(p, bodySize); lh != (LineHeights{}) {
		t.LineHeights = &lh
	}
	if *t == (Typography{}) {
		t = nil
	}
	return fonts, t
}

// typeUse is the area of the page's text by family, weight and (for the
// body text) size, and the font stacks its text asks for.
type typeUse struct {
	families     map[string]float64 // the families the page names, not the browser's defaults
	textFamilies map[string]float64
	textSizes    map[string]float64
	weights      map[int]float64
	stacks       []string
}

func typeUseOf(p *pageBrand) *typeUse {
	u := &typeUse{families: map[string]float64{}, textFamilies: map[string]float64{}, textSizes: map[string]float64{},
		weights: map[int]float64{}}
	for _, r := range p.Runs {
		f := firstFamily(r.Family)
		if f == "" {
			continue
		}
		if !genericFamilies[strings.ToLower(f)] {
			u.families[f] += r.Area
		}
		u.weights[r.Weight] += r.Area
		if r.Role == "text" {
			u.textFamilies[f] += r.Area
			u.textSizes[r.Size] += r.Area
		}
		u.stacks = append(u.stacks, r.Family)
	}
	return u
}

// fontsOf is the families in use, by area, then the web fonts the page
// loads or declares when some text asks for them further down its stack;
// eight at most.
func fontsOf(p *pageBrand, u *typeUse) []Font {
	var fonts []Font
	for _, f := range byArea(u.families) {
		fonts = append(fonts, Font{Family: f})
	}
	for _, face := range p.FontFaces {
		if len(fonts) >= 8 || slices.ContainsFunc(fonts, func(f Font) bool { return strings.EqualFold(f.Family, face) }) {
			continue
		}
		if asksFor(u.stacks, face) {
			fonts = append(fonts, Font{Family: face})
		}
	}
	if len(fonts) > 8 {
		fonts = fonts[:8]
	}
	return fonts
}

// familiesOf is the family of the body text (else the first in use), of
// the first heading and of code.
func familiesOf(p *pageBrand, u *typeUse, fonts []Font) FontFamilies {
	ff := FontFamilies{Code: firstFamily(p.Code)}
	if top := byArea(u.textFamilies); len(top) > 0 {
		ff.Primary = top[0]
	} else if len(fonts) > 0 {
		ff.Primary = fonts[0].Family
	}
	for _, h := range []string{"h1", "h2", "h3"} {
		if hs, ok := p.Headings[h]; ok && ff.Heading == "" {
			ff.Heading = firstFamily(hs.Family)
		}
	}
	return ff
}

// weightsOf is the most used weight of each band.
func weightsOf(weights map[int]float64) FontWeights {
	var fw FontWeights
	for _, band := range []struct {
		to     *int
		lo, hi int
	}{{&fw.Light, 1, 399}, {&fw.Regular, 400, 499}, {&fw.Medium, 500, 599}, {&fw.Bold, 600, 1000}} {
		best := 0.0
		for w, a := range weights {
			if w >= band.lo && w <= band.hi && (a > best || a == best && w < *band.to) {
				*band.to, best = w, a
			}
		}
	}
	return fw
}

// lineHeightsOf is h1's line height and the most common of the body text
// (at the body's size), as ratios.
func lineHeightsOf(p *pageBrand, bodySize string) LineHeights {
	var lh LineHeights
	if h, ok := p.Headings["h1"]; ok {
		lh.Heading = lineRatio(h.LineHeight, h.Size)
	}
	bodyLines := map[string]float64{}
	for _, r := range p.Runs {
		if r.Role == "text" && r.Size == bodySize {
			bodyLines[r.LineHeight] += r.Area
		}
	}
	if top := byArea(bodyLines); len(top) > 0 {
		lh.Body = lineRatio(top[0], bodySize)
	}
	return lh
}

// spacingOf reads the spacing scale: the base unit that most padding and
// margin values are multiples of, the most common corner radius.
func spacingOf(p *pageBrand, primary *button) *Spacing {
	s := &Spacing{}
	all := map[string]int{}
	for v, n := range p.Paddings {
		all[v] += n
	}
	for v, n := range p.Margins {
		all[v] += n
	}
	s.BaseUnit = baseUnit(all)
	if r := mostCommon(p.Radii, func(r string) bool { return r != "0px" }); r != "" {
		s.BorderRadius = r
	} else if len(p.Radii) > 0 {
		s.BorderRadius = "0px"
	}
	pad := map[string]any{}
	if primary != nil && primary.b.Padding != "" {
		pad["button"] = primary.b.Padding
	}
	if v := p.Input["padding"]; v != "" {
		pad["input"] = v
	}
	if c := commonLengths(p.Paddings); len(c) > 0 {
		pad["common"] = c
	}
	mar := map[string]any{}
	if h, ok := p.Headings["h1"]; ok && h.Margin != "" {
		mar["heading"] = h.Margin
	}
	if p.ParagraphMargin != "" {
		mar["paragraph"] = p.ParagraphMargin
	}
	if c := commonLengths(p.Margins); len(c) > 0 {
		mar["common"] = c
	}
	if len(pad) > 0 {
		s.Padding = pad
	}
	if len(mar) > 0 {
		s.Margins = mar
	}
	if s.BaseUnit == 0 && s.BorderRadius == "" && s.Padding == nil && s.Margins == nil {
		return nil
	}
	return s
}

// baseUnit is the largest of the usual grid units that at least 70% of
// the spacing values are multiples of; failing that, the most common value.
func baseUnit(counts map[string]int) int {
	total := 0
	values := map[int]int{}
	for v, n := range counts {
		// 1px is a hairline, not a step of a spacing scale.
		if px, err := strconv.Atoi(v); err == nil && px > 1 {
			values[px] += n
			total += n
		}
	}
	if total == 0 {
		return 0
	}
	for _, u := range []int{12, 10, 8, 6, 5, 4, 3, 2} {
		n := 0
		for v, c := range values {
			if v%u == 0 {
				n += c
			}
		}
		if float64(n) >= 0.7*float64(total) {
			return u
		}
	}
	best, bestN := 0, 0
	for v, n := range values {
		if n > bestN || n == bestN && v < best {
			best, bestN = v, n
		}
	}
	return best
}

// commonLengths are the five most common values of counts, as "16px".
func commonLengths(counts map[string]int) []string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if counts[a] != counts[b] {
			return cmp.Compare(counts[b], counts[a])
		}
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return cmp.Compare(x, y)
	})
	if len(keys) > 5 {
		keys = keys[:5]
	}
	for i, k := range keys {
		keys[i] = k + "px"
	}
	return keys
}

// lineRatio is a computed line height as a ratio of the font size ("1.5"),
// or "normal".
func lineRatio(lineHeight, size string) string {
	if lineHeight == "" || lineHeight == "normal" {
		return lineHeight
	}
	l, err1 := strconv.ParseFloat(strings.TrimSuffix(lineHeight, "px"), 64)
	s, err2 := strconv.ParseFloat(strings.TrimSuffix(size, "px"), 64)
	if err1 != nil || err2 != nil || s == 0 {
		return lineHeight
	}
	return strconv.FormatFloat(math.Round(l/s*100)/100, 'f', -1, 64)
}

// mostCommon is the key of counts with the highest count among those keep
// accepts ("" if none); ties go to the smaller key.
func mostCommon(counts map[string]int, keep func(string) bool) string {
	best, bestN := "", 0
	for k, n := range counts {
		if n <= 0 || !keep(k) {
			continue
		}
		if n > bestN || n == bestN && k < best {
			best, bestN = k, n
		}
	}
	return best
}

func anyKey(string) bool { return true }

// byArea is the keys of m, largest value first (ties by key).
func byArea(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if k != "" && v > 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			return cmp.Compare(m[b], m[a])
		}
		return cmp.Compare(a, b)
	})
	return keys
}

func nonEmpty(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

// asksFor reports whether one of the font-family stacks names family.
func asksFor(stacks []string, family string) bool {
	for _, s := range stacks {
		for _, f := range familyList(s) {
			if strings.EqualFold(f, family) {
				return true
			}
		}
	}
	return false
}

// genericFamilies are CSS generic families and the vendor names of the
// system font: a stack's brand font is the first family that is neither.
var genericFamilies = map[string]bool{"serif": true, "sans-serif": true, "monospace": true, "cursive": true,
	"fantasy": true, "system-ui": true, "ui-serif": true, "ui-sans-serif": true, "ui-monospace": true,
	"ui-rounded": true, "math": true, "emoji": true, "fangsong": true, "-apple-system": true,
	"blinkmacsystemfont": true, "inherit": true, "initial": true}

// firstFamily is the first named family of a computed font-family stack,
// unquoted; a stack of generic families only gives its first.
func firstFamily(stack string) string {
	list := familyList(stack)
	for _, f := range list {
		if !genericFamilies[strings.ToLower(f)] {
			return f
		}
	}
	if len(list) > 0 {
		return list[0]
	}
	return ""
}

// familyList splits a font-family value into unquoted names.
func familyList(stack string) []string {
	var out []string
	var cur strings.Builder
	var quote rune
	flush := func() {
		if f := strings.TrimSpace(cur.String()); f != "" {
			out = append(out, f)
		}
		cur.Reset()
	}
	for _, r := range stack {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote = r
		case r == ',':
			flush()
		default:
			cur.WriteRune(r)
		}
	}
	flush()
	return out
}

// rgba is a colour with 8-bit channels and an alpha of 0..1.
type rgba struct {
	r, g, b uint8
	a       float64
}

// parseColor reads the two forms the page script writes: "#rrggbb" and
// "rgba(r, g, b, a)".
func parseColor(s string) (rgba, bool) {
	var c rgba
	switch {
	case len(s) == 7 && s[0] == '#':
		v, err := strconv.ParseUint(s[1:], 16, 32)
		if err != nil {
			return c, false
		}
		return rgba{uint8(v >> 16), uint8(v >> 8), uint8(v), 1}, true
	case strings.HasPrefix(s, "rgba("):
		var r, g, b int
		if _, err := fmt.Sscanf(s, "rgba(%d, %d, %d, %g)", &r, &g, &b, &c.a); err != nil {
			return c, false
		}
		c.r, c.g, c.b = uint8(r), uint8(g), uint8(b)
		return c, true
	}
	return c, false
}

// String is the colour as the branding member gives it: "#rrggbb", or
// "rgba(r, g, b, a)" when translucent.
func (c rgba) String() string {
	if c.a >= 0.995 {
		return fmt.Sprintf("#%02x%02x%02x", c.r, c.g, c.b)
	}
	return fmt.Sprintf("rgba(%d, %d, %d, %s)", c.r, c.g, c.b, strconv.FormatFloat(math.Round(c.a*100)/100, 'f', -1, 64))
}

// chroma is the spread between the colour's strongest and weakest channel.
func (c rgba) chroma() int {
	return int(max(c.r, c.g, c.b)) - int(min(c.r, c.g, c.b))
}

// chromatic reports a solid enough colour that is neither a neutral nor
// a tint so pale (HSL lightness above 85%: a highlighted row, a code
// block) or a shade so dark (below 8%) that it reads as one.
func (c rgba) chromatic() bool {
	lightness := (int(max(c.r, c.g, c.b)) + int(min(c.r, c.g, c.b))) / 2
	return c.a >= 0.5 && c.chroma() >= chromaMin && lightness >= 20 && lightness <= 217
}

// luminance is the WCAG relative luminance, 0 (black) to 1 (white).
func (c rgba) luminance() float64 {
	lin := func(v uint8) float64 {
		s := float64(v) / 255
		if s <= 0.04045 {
			return s / 12.92
		}
		return math.Pow((s+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(c.r) + 0.7152*lin(c.g) + 0.0722*lin(c.b)
}

// contrast is the WCAG contrast ratio of a and b, 1 to 21.
func contrast(a, b rgba) float64 {
	la, lb := a.luminance(), b.luminance()
	return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)
}

// dist is the Euclidean distance of a and b's channels.
func dist(a, b rgba) float64 {
	dr, dg, db := float64(a.r)-float64(b.r), float64(a.g)-float64(b.g), float64(a.b)-float64(b.b)
	return math.Sqrt(dr*dr + dg*dg + db*db)
}
