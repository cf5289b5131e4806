package scrape

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/trawler-dev/trawler/scrape/tabs"
)

// Options are the scrape options of spec section 2.1, decoded and validated
// (by the api package) with their defaults applied.
type Options struct {
	Formats             []Format
	OnlyMainContent     bool
	IncludeTags         []string
	ExcludeTags         []string
	MaxAge              time.Duration
	MinAge              *time.Duration // set: answer from the cache only
	Headers             map[string]string
	WaitFor             time.Duration
	Mobile              bool
	SkipTLSVerification bool
	Timeout             time.Duration
	// PDF: extract PDFs to Markdown (the default); false returns them base64.
	PDF                bool
	Actions            []Action
	Location           *Location
	RemoveBase64Images bool
	BlockAds           bool
	Proxy              string // basic, enhanced, stealth or auto
	StoreInCache       bool
	Lockdown           bool
	ZeroDataRetention  bool
	// Profile is the browser profile the page is loaded with, if any.
	Profile *Profile
	// OnlyCleanContent runs the model's cleaning pass over the Markdown.
	OnlyCleanContent bool
	// Unserved says what the request asked for that this server accepts
	// but does not serve (a field of Firecrawl's cloud); it is added to
	// each document's warning.
	Unserved string
}

// Profile names a team's browser profile; with SaveChanges the browser's
// state after the page is saved back into it.
type Profile struct {
	Name        string
	SaveChanges bool
}

// DefaultOptions are the spec's defaults.
func DefaultOptions() Options {
	return Options{
		Formats:             []Format{{Type: "markdown"}},
		OnlyMainContent:     true,
		MaxAge:              172800000 * time.Millisecond,
		SkipTLSVerification: true,
		Timeout:             60 * time.Second,
		PDF:                 true,
		RemoveBase64Images:  true,
		BlockAds:            true,
		Proxy:               "auto",
		StoreInCache:        true,
	}
}

// Format is one requested output.
type Format struct {
	Type string
	// Screenshot options.
	FullPage bool
	Quality  int // 0: PNG; 1..100: JPEG at that quality
	Viewport *Viewport
	// json: the user's schema as sent (normalised when it is used) and
	// the prompt; either may be empty, not both.
	Schema json.RawMessage `json:",omitempty"`
	Prompt string          `json:",omitempty"`
	// question: the question the page answers.
	Question string `json:",omitempty"`
	// highlights: what the passages are chosen for.
	Query string `json:",omitempty"`
	// changeTracking: the modes (git-diff, json; Schema and Prompt are
	// the json mode's) and the tag whose history the page is compared
	// with ("" is the default history).
	Modes []string `json:",omitempty"`
	Tag   string   `json:",omitempty"`
}

// NeedsModel reports whether f is answered by a language model only. A
// question is answered by the model when there is one, else by the
// page's passage that best matches it.
func (f Format) NeedsModel() bool {
	switch f.Type {
	case "json", "summary":
		return true
	case "changeTracking":
		return slices.Contains(f.Modes, "json")
	}
	return false
}

// NeedsModel reports whether o asks for anything only a language model
// gives.
func (o *Options) NeedsModel() bool {
	return o.OnlyCleanContent || slices.ContainsFunc(o.Formats, Format.NeedsModel)
}

// Format returns the requested format of kind t, if any.
func (o *Options) Format(t string) (Format, bool) {
	for _, f := range o.Formats {
		if f.Type == t {
			return f, true
		}
	}
	return Format{}, false
}

// The types of actions, their results and the screen are the tab's
// (package tabs runs the actions); they are named here for the API's
// callers, as the errors of a page are.
type (
	Viewport      = tabs.Viewport
	Location      = tabs.Location
	Action        = tabs.Action
	ActionResults = tabs.ActionResults
	ActionScrape  = tabs.ActionScrape
	JSReturn      = tabs.JSReturn
	ActionError   = tabs.ActionError
	ScriptError   = tabs.ScriptError
	LoadError     = tabs.LoadError
)

// Has reports whether format kind t was requested.
func (o *Options) Has(t string) bool {
	for _, f := range o.Formats {
		if f.Type == t {
			return true
		}
	}
	return false
}

// Screenshot returns the requested screenshot format, if any.
func (o *Options) Screenshot() (Format, bool) { return o.Format("screenshot") }

// needsRender reports whether the options ask for something only a
// rendered page can give.
func (o *Options) needsRender() bool {
	_, shot := o.Screenshot()
	return len(o.Actions) > 0 || o.WaitFor > 0 || shot || o.Mobile || o.needsLivePage()
}

// needsLivePage reports whether the options ask for what only the live,
// rendered page gives, never a cached copy: branding, audio, video.
func (o *Options) needsLivePage() bool {
	return o.Has("branding") || o.Has("audio") || o.Has("video")
}
