package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/andybalholm/cascadia"
	"github.com/gofiber/fiber/v2"
	whatwgerrors "github.com/nlnwa/whatwg-url/errors"
	whatwg "github.com/nlnwa/whatwg-url/url"
	"golang.org/x/net/http/httpguts"

	"github.com/trawler-dev/trawler/scrape"
	"github.com/trawler-dev/trawler/teams"
	"github.com/trawler-dev/trawler/wire"
)

// scrapeOptionsRequest is spec 2.1 as it arrives: pointers tell "absent"
// from "zero". It is embedded wherever scrape options are accepted.
type scrapeOptionsRequest struct {
	Formats             []json.RawMessage `json:"formats"`
	OnlyMainContent     *bool             `json:"onlyMainContent"`
	OnlyCleanContent    *bool             `json:"onlyCleanContent"`
	IncludeTags         []string          `json:"includeTags"`
	ExcludeTags         []string          `json:"excludeTags"`
	MaxAge              *int64            `json:"maxAge"`
	MinAge              *int64            `json:"minAge"`
	Headers             map[string]string `json:"headers"`
	WaitFor             *int              `json:"waitFor"`
	Mobile              *bool             `json:"mobile"`
	SkipTLSVerification *bool             `json:"skipTlsVerification"`
	Timeout             *int              `json:"timeout"`
	Parsers             []json.RawMessage `json:"parsers"`
	Actions             []json.RawMessage `json:"actions"`
	Location            *locationRequest  `json:"location"`
	RemoveBase64Images  *bool             `json:"removeBase64Images"`
	BlockAds            *bool             `json:"blockAds"`
	Proxy               *string           `json:"proxy"`
	StoreInCache        *bool             `json:"storeInCache"`
	Lockdown            *bool             `json:"lockdown"`
	Profile             *profileRequest   `json:"profile"`
	FastMode            *bool             `json:"fastMode"`
	RedactPII           json.RawMessage   `json:"redactPII"`
	UseMock             *string           `json:"useMock"`
	ThreatProtection    json.RawMessage   `json:"threatProtection"`
	alexandriaOptions
}

type locationRequest struct {
	Country   *string  `json:"country"`
	Languages []string `json:"languages"`
}

// unsupportedFormats are formats of Firecrawl's API that Trawler does
// not make yet.
var unsupportedFormats = map[string]bool{"attributes": true, "product": true, "menu": true}

var plainFormats = map[string]bool{"markdown": true, "html": true, "rawHtml": true, "links": true, "images": true, "screenshot": true}

// options validates the request into scrape options; prefix names the
// object the fields live in ("" at the top level, "scrapeOptions." in a
// crawl). Problems are appended; the result is only meaningful without any.
func (r *scrapeOptionsRequest) options(prefix string, team teams.Team, problems *[]FieldProblem) scrape.Options {
	o := scrape.DefaultOptions()
	add := func(path, format string, args ...any) {
		*problems = append(*problems, fieldError(prefix+path, prefix+format, args...))
	}
	r.formats(&o, add)
	r.content(&o, add)
	r.timing(&o, add)
	r.cache(&o, add)
	r.fetching(&o, add)
	o.Profile = profileOption(problems, prefix+"profile", r.Profile)
	if len(r.RedactPII) > 0 && string(r.RedactPII) != "false" && string(r.RedactPII) != "null" {
		add("redactPII", "redactPII needs a language model, which this server does not have; it is not supported yet")
	}
	if r.UseMock != nil {
		add("useMock", "useMock is not supported by this server")
	}
	r.actions(&o, add)
	r.alexandriaOptions.check(problems, prefix)
	threatProtection(problems, prefix, r.ThreatProtection)
	o.Unserved = r.alexandriaOptions.warning()
	// Sensitive scraping (a profile's pages are a user's own) is never
	// cached, nor answered from the cache.
	if len(o.Actions) > 0 || len(o.Headers) > 0 || o.Profile != nil {
		o.StoreInCache = false
		if o.MinAge == nil && !o.Lockdown {
			o.MaxAge = 0
		}
	}
	return o
}

// problemAdder records a problem with the option at path (relative to the
// options' own prefix).
type problemAdder func(path, format string, args ...any)

// formats reads formats: each known, none twice.
func (r *scrapeOptionsRequest) formats(o *scrape.Options, add problemAdder) {
	if r.Formats == nil {
		return
	}
	o.Formats = nil
	seen := map[string]bool{}
	for i, raw := range r.Formats {
		name := fmt.Sprintf("formats[%d]", i)
		f, msg := decodeFormat(raw)
		if memberFormats[f.Type] != nil {
			var path string
			f, path, msg = decodeMemberFormat(raw, name)
			if msg != "" {
				add(path, "%s", msg)
				continue
			}
		}
		switch {
		case msg != "":
			add(name, "%s %s", name, msg)
			continue
		case seen[f.Type]:
			add(name, "%s repeats the format %q", name, f.Type)
			continue
		}
		seen[f.Type] = true
		o.Formats = append(o.Formats, f)
	}
	if seen["changeTracking"] && !seen["markdown"] {
		for i, f := range o.Formats {
			if f.Type == "changeTracking" {
				name := fmt.Sprintf("formats[%d]", i)
				add(name, "%s changeTracking compares the page's Markdown: add markdown to the formats", name)
			}
		}
	}
}

// content reads what of the page is kept: the main-content filter and the
// tag selectors.
func (r *scrapeOptionsRequest) content(o *scrape.Options, add problemAdder) {
	if r.OnlyMainContent != nil {
		o.OnlyMainContent = *r.OnlyMainContent
	}
	if r.OnlyCleanContent != nil {
		o.OnlyCleanContent = *r.OnlyCleanContent
	}
	for _, f := range []struct {
		name string
		sels []string
		dst  *[]string
	}{{"includeTags", r.IncludeTags, &o.IncludeTags}, {"excludeTags", r.ExcludeTags, &o.ExcludeTags}} {
		for i, s := range f.sels {
			if _, err := cascadia.ParseGroup(s); err != nil || strings.TrimSpace(s) == "" {
				add(fmt.Sprintf("%s[%d]", f.name, i), "%s[%d] must be a CSS selector, got %q", f.name, i, s)
			}
		}
		*f.dst = f.sels
	}
	if r.RemoveBase64Images != nil {
		o.RemoveBase64Images = *r.RemoveBase64Images
	}
}

// timing reads timeout and waitFor (at most half of it).
func (r *scrapeOptionsRequest) timing(o *scrape.Options, add problemAdder) {
	if r.Timeout != nil {
		if *r.Timeout < 1000 || *r.Timeout > 300000 {
			add("timeout", "timeout must be between 1000 and 300000 milliseconds")
		}
		o.Timeout = time.Duration(*r.Timeout) * time.Millisecond
	}
	if r.WaitFor != nil {
		switch {
		case *r.WaitFor < 0:
			add("waitFor", "waitFor must not be negative")
		case time.Duration(*r.WaitFor)*time.Millisecond > o.Timeout/2:
			add("waitFor", "waitFor must not exceed half of timeout (%d ms)", o.Timeout.Milliseconds()/2)
		}
		o.WaitFor = time.Duration(*r.WaitFor) * time.Millisecond
	}
}

// cache reads maxAge, minAge, storeInCache and lockdown.
func (r *scrapeOptionsRequest) cache(o *scrape.Options, add problemAdder) {
	if r.MaxAge != nil {
		if *r.MaxAge < 0 {
			add("maxAge", "maxAge must not be negative")
		}
		o.MaxAge = time.Duration(*r.MaxAge) * time.Millisecond
	}
	if r.MinAge != nil {
		if *r.MinAge < 0 {
			add("minAge", "minAge must not be negative")
		}
		d := time.Duration(*r.MinAge) * time.Millisecond
		o.MinAge = &d
	}
	if r.StoreInCache != nil {
		o.StoreInCache = *r.StoreInCache
	}
	if r.Lockdown != nil && *r.Lockdown {
		o.Lockdown = true
		o.ZeroDataRetention = true // lockdown is treated as zero data retention
		if r.MaxAge == nil {
			o.MaxAge = 2 * 365 * 24 * time.Hour
		}
	}
}

// fetching reads how the page is fetched: headers, emulation, TLS,
// parsers, location, ad blocking and proxy.
func (r *scrapeOptionsRequest) fetching(o *scrape.Options, add problemAdder) {
	checkHeaders(r.Headers, func(format string, args ...any) { add("headers", format, args...) })
	o.Headers = r.Headers
	if r.Mobile != nil {
		o.Mobile = *r.Mobile
	}
	if r.SkipTLSVerification != nil {
		o.SkipTLSVerification = *r.SkipTLSVerification
	}
	r.parsers(o, add)
	r.location(o, add)
	if r.BlockAds != nil {
		o.BlockAds = *r.BlockAds
	}
	if r.Proxy != nil {
		switch *r.Proxy {
		case "basic", "enhanced", "stealth", "auto":
			o.Proxy = *r.Proxy
		default:
			add("proxy", "proxy must be basic, enhanced or auto, got %q", *r.Proxy)
		}
	}
}

// parsers reads parsers: "pdf" or {"type": "pdf"}, the only parser of
// scrapes; none returns a PDF as base64.
func (r *scrapeOptionsRequest) parsers(o *scrape.Options, add problemAdder) {
	if r.Parsers == nil {
		return
	}
	o.PDF = false
	for i, raw := range r.Parsers {
		var name string
		var obj struct {
			Type     string `json:"type"`
			MaxPages *int   `json:"maxPages"`
		}
		switch {
		case json.Unmarshal(raw, &name) == nil:
		case json.Unmarshal(raw, &obj) == nil && obj.Type != "":
			name = obj.Type
		default:
			add(fmt.Sprintf("parsers[%d]", i), "parsers[%d] must be \"pdf\" or {\"type\": \"pdf\"}", i)
			continue
		}
		if name != "pdf" {
			add(fmt.Sprintf("parsers[%d]", i), "parsers[%d] must be \"pdf\", the only parser of scrapes, got %q", i, name)
		}
		o.PDF = true
	}
}

// location reads location: a country code and language tags.
func (r *scrapeOptionsRequest) location(o *scrape.Options, add problemAdder) {
	if r.Location == nil {
		return
	}
	loc := &scrape.Location{Country: "US", Languages: r.Location.Languages}
	if r.Location.Country != nil {
		c := strings.ToUpper(*r.Location.Country)
		if len(c) != 2 || c[0] < 'A' || c[0] > 'Z' || c[1] < 'A' || c[1] > 'Z' {
			add("location.country", "location.country must be a two-letter ISO 3166-1 country code, got %q", *r.Location.Country)
		}
		loc.Country = c
	}
	for i, l := range loc.Languages {
		if l == "" || len(l) > 35 || strings.ContainsAny(l, " ,;") {
			add(fmt.Sprintf("location.languages[%d]", i), "location.languages[%d] must be a language tag such as en-US, got %q", i, l)
		}
	}
	o.Location = loc
}

// actions reads actions, at most 50.
func (r *scrapeOptionsRequest) actions(o *scrape.Options, add problemAdder) {
	for i, raw := range r.Actions {
		a, msg := decodeAction(raw)
		if msg != "" {
			add(fmt.Sprintf("actions[%d]", i), "actions[%d] %s", i, msg)
			continue
		}
		o.Actions = append(o.Actions, a)
	}
	if len(r.Actions) > 50 {
		add("actions", "actions must hold at most 50 actions")
	}
}

// Limits on the headers a scrape sends.
const (
	maxHeaders         = 100
	maxHeaderValueSize = 8 << 10
)

// reservedHeaders are the headers a request may not set: the browser
// derives them from the URL and the body, and they decide how the request
// is framed.
var reservedHeaders = map[string]string{
	"host":              "the host comes from the URL",
	"content-length":    "the browser sets it",
	"transfer-encoding": "the browser sets it",
	"connection":        "the browser manages its connections",
	"keep-alive":        "the browser manages its connections",
	"proxy-connection":  "the browser manages its connections",
	"upgrade":           "the browser manages its connections",
	"te":                "the browser sets it",
	"trailer":           "the browser sets it",
	"expect":            "the browser sets it",
}

// checkHeaders checks the headers a scrape sends, in a stable order, and
// reports each problem once through bad: names must be HTTP tokens, values
// may not hold control characters (CR and LF would start another header),
// and the framing headers are the browser's.
func checkHeaders(headers map[string]string, bad func(format string, args ...any)) {
	if len(headers) > maxHeaders {
		bad("headers must hold at most %d headers", maxHeaders)
		return
	}
	for _, k := range slices.Sorted(maps.Keys(headers)) {
		v := headers[k]
		switch {
		case !httpguts.ValidHeaderFieldName(k):
			bad("headers must map header names to strings; %q is not a header name", wire.Truncate(k, 100))
		case reservedHeaders[strings.ToLower(k)] != "":
			bad("headers must not set %s: %s", k, reservedHeaders[strings.ToLower(k)])
		case len(v) > maxHeaderValueSize:
			bad("headers.%s must be at most %d bytes", k, maxHeaderValueSize)
		case !httpguts.ValidHeaderFieldValue(v):
			bad("headers.%s must not contain control characters such as CR, LF or NUL", k)
		}
	}
}

// decodeFormat reads a format given as a string or as an object.
func decodeFormat(raw json.RawMessage) (scrape.Format, string) {
	var name string
	if json.Unmarshal(raw, &name) == nil {
		if name == "screenshot@fullPage" {
			return scrape.Format{Type: "screenshot", FullPage: true}, ""
		}
		return checkFormatName(name)
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return scrape.Format{}, "must be a format name or an object with a type"
	}
	if json.Unmarshal(obj["type"], &name) != nil {
		return scrape.Format{}, "must have a string type"
	}
	f, msg := checkFormatName(name)
	if msg != "" || memberFormats[name] != nil {
		return f, msg
	}
	if name != "screenshot" {
		if len(obj) > 1 {
			return f, fmt.Sprintf("of type %s takes no other members", name)
		}
		return f, ""
	}
	var shot struct {
		Type     string `json:"type"`
		FullPage *bool  `json:"fullPage"`
		Quality  *int   `json:"quality"`
		Viewport *struct {
			Width  *int `json:"width"`
			Height *int `json:"height"`
		} `json:"viewport"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&shot); err != nil {
		return f, "of type screenshot accepts fullPage (boolean), quality (1..100) and viewport {width, height}: " + err.Error()
	}
	if shot.FullPage != nil {
		f.FullPage = *shot.FullPage
	}
	if shot.Quality != nil {
		if *shot.Quality < 1 || *shot.Quality > 100 {
			return f, "quality must be between 1 and 100"
		}
		f.Quality = *shot.Quality
	}
	if v := shot.Viewport; v != nil {
		if v.Width == nil || v.Height == nil || *v.Width < 100 || *v.Width > 7680 || *v.Height < 100 || *v.Height > 4320 {
			return f, "viewport must have width 100..7680 and height 100..4320"
		}
		f.Viewport = &scrape.Viewport{Width: *v.Width, Height: *v.Height}
	}
	return f, ""
}

func checkFormatName(name string) (scrape.Format, string) {
	switch {
	case plainFormats[name], memberFormats[name] != nil:
		return scrape.Format{Type: name}, ""
	case unsupportedFormats[name]:
		return scrape.Format{}, fmt.Sprintf("%q is not supported yet", name)
	}
	return scrape.Format{}, fmt.Sprintf("must be one of markdown, html, rawHtml, links, images, screenshot, json, summary, question, highlights, changeTracking, branding, audio, video; got %q", name)
}

// modelGate refuses what o asks of a language model when none is
// configured (400 MODEL_NOT_CONFIGURED, naming the format and the
// setting), and onlyCleanContent under zero data retention; prefix names
// the object the options came in.
func (a *API) modelGate(o *scrape.Options, prefix string) error {
	if o.OnlyCleanContent && o.ZeroDataRetention {
		return badRequest(fieldError(prefix+"onlyCleanContent", "%sonlyCleanContent is not supported with zero data retention (nor lockdown): it sends the page to the language model", prefix))
	}
	if a.Model != nil || !o.NeedsModel() {
		return nil
	}
	what, path := prefix+"onlyCleanContent", prefix+"onlyCleanContent"
	for i, f := range o.Formats {
		if f.NeedsModel() {
			path = fmt.Sprintf("%sformats[%d]", prefix, i)
			what = fmt.Sprintf("%s (%s)", path, f.Type)
			break
		}
	}
	return modelNotConfigured(what, path)
}

// modelNotConfigured is the answer to what needs a language model on a
// server without one; path names the field.
func modelNotConfigured(what, path string) *Error {
	return &Error{Status: fiber.StatusBadRequest, Code: "MODEL_NOT_CONFIGURED",
		Message: what + " needs a language model, and this server has none configured: the operator sets TRAWLER_LLM_BASE_URL and TRAWLER_LLM_MODEL (or OPENAI_API_KEY) to an OpenAI-compatible server such as Ollama, vLLM or llama.cpp",
		Details: []FieldProblem{fieldError(path, "needs a language model")}}
}

// actionKeys lists the members each action type takes.
var actionKeys = map[string]map[string]bool{
	"wait":              {"milliseconds": true, "selector": true},
	"click":             {"selector": true, "all": true},
	"write":             {"text": true},
	"press":             {"key": true},
	"scroll":            {"direction": true, "selector": true},
	"screenshot":        {"fullPage": true, "quality": true, "viewport": true},
	"scrape":            {},
	"executeJavascript": {"script": true},
	"pdf":               {"format": true, "landscape": true, "scale": true},
}

// decodeAction reads one of a scrape's actions; it returns what is wrong
// with it, "" for nothing.
func decodeAction(raw json.RawMessage) (scrape.Action, string) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return scrape.Action{}, "must be an object with a type"
	}
	var typ string
	if json.Unmarshal(obj["type"], &typ) != nil {
		return scrape.Action{}, "must have a string type"
	}
	allowed, ok := actionKeys[typ]
	if !ok {
		return scrape.Action{}, fmt.Sprintf("type must be one of wait, click, write, press, scroll, screenshot, scrape, executeJavascript, pdf; got %q", typ)
	}
	for k := range obj {
		if k != "type" && !allowed[k] {
			return scrape.Action{}, fmt.Sprintf("of type %s does not take %q", typ, k)
		}
	}
	var a actionMembers
	if err := json.Unmarshal(raw, &a); err != nil {
		return scrape.Action{}, "has a member of the wrong type: " + err.Error()
	}
	out := scrape.Action{Type: typ}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	out.Selector, out.Text, out.Key, out.Script = str(a.Selector), str(a.Text), str(a.Key), str(a.Script)
	if a.Selector != nil {
		if _, err := cascadia.ParseGroup(*a.Selector); err != nil {
			return out, fmt.Sprintf("selector must be a CSS selector, got %q", *a.Selector)
		}
	}
	msg := a.check(&out, raw)
	return out, msg
}

// actionMembers are the members of every action type, in the order of
// actionKeys.
type actionMembers struct {
	Milliseconds *int            `json:"milliseconds"`
	Selector     *string         `json:"selector"`
	All          *bool           `json:"all"`
	Text         *string         `json:"text"`
	Key          *string         `json:"key"`
	Direction    *string         `json:"direction"`
	FullPage     *bool           `json:"fullPage"`
	Quality      *int            `json:"quality"`
	Viewport     json.RawMessage // decoded on its own: a screenshot format's viewport
	Script       *string         `json:"script"`
	Format       *string         `json:"format"`
	Landscape    *bool           `json:"landscape"`
	Scale        *float64        `json:"scale"`
}

// check checks the members that out's type needs and reads them into out
// (raw is the whole action); it returns what is wrong, "" for nothing.
func (a *actionMembers) check(out *scrape.Action, raw json.RawMessage) string {
	switch out.Type {
	case "wait":
		switch {
		case (a.Milliseconds == nil) == (a.Selector == nil):
			return "of type wait needs exactly one of milliseconds or selector"
		case a.Milliseconds != nil && (*a.Milliseconds < 1 || *a.Milliseconds > 60000):
			return "milliseconds must be between 1 and 60000"
		case a.Milliseconds != nil:
			out.Milliseconds = *a.Milliseconds
		}
	case "click":
		if out.Selector == "" {
			return "of type click needs a selector"
		}
		out.All = a.All != nil && *a.All
	case "write":
		if a.Text == nil {
			return "of type write needs text"
		}
	case "press":
		if out.Key == "" {
			return "of type press needs a key"
		}
	case "scroll":
		out.Direction = "down"
		if a.Direction != nil {
			if *a.Direction != "up" && *a.Direction != "down" {
				return "direction must be up or down"
			}
			out.Direction = *a.Direction
		}
	case "screenshot":
		// A screenshot action has the members of the screenshot format.
		f, msg := decodeFormat(raw)
		if msg != "" {
			return msg
		}
		out.FullPage, out.Quality, out.Viewport = f.FullPage, f.Quality, f.Viewport
	case "executeJavascript":
		if strings.TrimSpace(out.Script) == "" {
			return "of type executeJavascript needs a script"
		}
	case "pdf":
		return a.pdf(out)
	}
	return ""
}

// pdf reads a pdf action's paper format, orientation and scale into out.
func (a *actionMembers) pdf(out *scrape.Action) string {
	if a.Format != nil {
		switch *a.Format {
		case "A0", "A1", "A2", "A3", "A4", "A5", "A6", "Letter", "Legal", "Tabloid", "Ledger":
			out.PaperFormat = *a.Format
		default:
			return "format must be one of A0..A6, Letter, Legal, Tabloid, Ledger"
		}
	}
	out.Landscape = a.Landscape != nil && *a.Landscape
	if a.Scale != nil {
		if *a.Scale < 0.1 || *a.Scale > 2 {
			return "scale must be between 0.1 and 2"
		}
		out.Scale = *a.Scale
	}
	return ""
}

type scrapeRequest struct {
	URL *string `json:"url"`
	scrapeOptionsRequest
	ZeroDataRetention *bool `json:"zeroDataRetention"`
	clientTags
}

// maxURLLength bounds a target URL.
const maxURLLength = 8192

// checkURL validates a target URL (at path, e.g. "url" or "urls[3]") and
// returns it normalised the way a browser reads it (WHATWG URL parsing, as
// Chromium does): an IPv4 address in another notation (0177.0.0.1, 127.1,
// 0x7f.0.0.1, 2130706433) becomes the dotted address it is, an
// internationalised host its punycode, the default port and dot segments
// go, and what must be percent-encoded is. That normalised URL is what the
// rest of Trawler sees, so the network guard judges the host the browser
// will reach. A port outside 1..65535 and credentials (user:pass@) are
// refused: credentials would be sent to the target and echoed back in
// results.
// requiredURL checks the required target URL member field: its canonical
// form, or "" with the problem recorded.
func requiredURL(problems *[]FieldProblem, field string, raw *string) string {
	if raw == nil {
		*problems = append(*problems, fieldError(field, "%s is required", field))
		return ""
	}
	u, p := checkURL(field, *raw)
	if p != nil {
		*problems = append(*problems, *p)
	}
	return u
}

func checkURL(path, raw string) (string, *FieldProblem) {
	problem := func(format string, args ...any) (string, *FieldProblem) {
		p := fieldError(path, format, args...)
		return "", &p
	}
	raw = strings.TrimSpace(raw)
	switch {
	case raw == "":
		return problem("%s is required", path)
	case len(raw) > maxURLLength:
		return problem("%s must be at most %d characters", path, maxURLLength)
	}
	if !hasScheme(raw) {
		raw = "http://" + raw // what users type: example.com, localhost:3000
	}
	w, err := whatwg.Parse(raw)
	if err != nil {
		switch whatwgerrors.Type(err) {
		case whatwgerrors.PortOutOfRange, whatwgerrors.PortInvalid:
			return problem("%s has an invalid port: a port is a number from 1 to 65535", path)
		}
		return problem("%s must be an absolute http or https URL", path)
	}
	switch {
	case w.Scheme() != "http" && w.Scheme() != "https":
		return problem("%s must be an absolute http or https URL", path)
	case w.Username() != "" || w.Password() != "":
		return problem("%s must not contain credentials (user:password@): they would be sent to the target and echoed back in results; send an Authorization header instead", path)
	case w.Port() == "0":
		return problem("%s has an invalid port: a port is a number from 1 to 65535", path)
	}
	norm := w.Href(false)
	// Go's parser reads the normalised URL the same way, or the URL is
	// refused: a host the guard and the browser disagree on is a way past
	// the guard.
	u, err := url.Parse(norm)
	if err != nil || u.Hostname() != strings.Trim(w.Hostname(), "[]") || u.Port() != w.Port() || u.User != nil ||
		!plausibleHost(u.Hostname()) {
		return problem("%s must be an absolute http or https URL", path)
	}
	if len(norm) > maxURLLength {
		return problem("%s must be at most %d characters", path, maxURLLength)
	}
	return norm, nil
}

// redactURL is an invalid URL as it may be echoed back: without
// credentials, and cut short past maxURLLength.
func redactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		u.User = nil
		raw = u.String()
	} else if scheme, rest, ok := strings.Cut(raw, "://"); ok {
		// Unparsable, and may still hold user:pass@ in its authority.
		authority, _, _ := strings.Cut(rest, "/")
		if at := strings.LastIndexByte(authority, '@'); at >= 0 {
			raw = scheme + "://" + rest[at+1:]
		}
	}
	return wire.Truncate(raw, maxURLLength)
}

// hasScheme reports whether raw starts with a URL scheme ("https:",
// "javascript:"), as opposed to a host and port ("localhost:3000").
func hasScheme(raw string) bool {
	if strings.Contains(raw, "://") {
		return true
	}
	scheme, rest, ok := strings.Cut(raw, ":")
	if !ok || scheme == "" || (rest != "" && rest[0] >= '0' && rest[0] <= '9') {
		return false
	}
	for i, c := range scheme {
		letter := (c|0x20) >= 'a' && (c|0x20) <= 'z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return true
}

// plausibleHost refuses a bare word such as "nope" (which http:// would
// otherwise turn into a host): a host name needs a dot, unless it is an IP
// address or localhost.
func plausibleHost(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	h = strings.TrimSuffix(h, ".")
	return strings.Contains(strings.Trim(h, "."), ".") || strings.EqualFold(h, "localhost")
}

func (a *API) scrape(c *fiber.Ctx) error {
	var req scrapeRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	team := teamOf(c)
	var problems []FieldProblem
	target := requiredURL(&problems, "url", req.URL)
	opts := req.options("", team, &problems)
	if len(problems) > 0 {
		return badRequest(problems...)
	}
	if _, err := zeroDataRetention(req.ZeroDataRetention, team, &opts); err != nil {
		return err
	}
	if err := a.modelGate(&opts, ""); err != nil {
		return err
	}
	doc, err := a.Scraper.Scrape(requestContext(c), scrape.Request{Team: team.ID, TeamLimit: team.Concurrency, URL: target, Options: opts})
	if err != nil {
		return err
	}
	if !opts.ZeroDataRetention {
		a.recordActivity(team.ID, doc.Metadata["scrapeId"].(string), "scrape", target)
	}
	return c.JSON(fiber.Map{"success": true, "data": doc})
}

func (a *API) getScrape(c *fiber.Ctx) error {
	raw, err := a.Scraper.Get(requestContext(c), teamOf(c).ID, c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"success": true, "data": json.RawMessage(raw)})
}
