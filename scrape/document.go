package scrape

import (
	"github.com/trawler-dev/trawler/index"
	"github.com/trawler-dev/trawler/scrape/branding"
	"github.com/trawler-dev/trawler/scrape/changetracking"
	"github.com/trawler-dev/trawler/store"
)

// Document is a scraped document (spec section 2.2). Members appear
// according to the requested formats.
type Document struct {
	Markdown   string         `json:"markdown,omitempty"`
	Summary    string         `json:"summary,omitempty"`
	JSON       any            `json:"json,omitempty"`
	Answer     string         `json:"answer,omitempty"`
	HTML       string         `json:"html,omitempty"`
	RawHTML    string         `json:"rawHtml,omitempty"`
	Links      []string       `json:"links,omitempty"`
	Images     []string       `json:"images,omitempty"`
	Screenshot string         `json:"screenshot,omitempty"`
	Actions    *ActionResults `json:"actions,omitempty"`
	Metadata   map[string]any `json:"metadata"`
	Warning    string         `json:"warning,omitempty"`
	// Highlights are the passages of the page most relevant to the
	// highlights format's query, verbatim, separated by blank lines.
	Highlights     string                 `json:"highlights,omitempty"`
	ChangeTracking *changetracking.Result `json:"changeTracking,omitempty"`
	Branding       *branding.Branding     `json:"branding,omitempty"`
	// Audio and Video are URLs of Trawler's own (GET /v2/media/{id}).
	Audio string `json:"audio,omitempty"`
	Video string `json:"video,omitempty"`
	// Discovered are every link of the page, absolute and without
	// fragments, when the request asked for them (never serialised).
	Discovered []string `json:"-"`
	// pdfPages is how many pages of a parsed PDF the document bills.
	pdfPages int
	// forIndex is the search index's document of the page, when the
	// transform made it (see servesIndex).
	forIndex *index.Doc
	// modelInput is the page's Markdown, made for the model's formats
	// even when markdown was not asked for.
	modelInput string
}

// indexDoc returns the search index's document of the page c cached, when
// the transform made it; nil otherwise (and for a failed transform).
func (d *Document) indexDoc(c store.CachedPage) *index.Doc {
	if d == nil || d.forIndex == nil {
		return nil
	}
	out := *d.forIndex
	out.Team, out.URL, out.ContentType, out.Fetched, out.Private = c.Team, c.FinalURL, c.ContentType, c.CreatedAt, c.Private
	if out.URL == "" {
		out.URL = c.URL
	}
	return &out
}
