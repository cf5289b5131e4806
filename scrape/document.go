package scrape

// Document is a scraped document (spec section 2.2). Members appear
// according to the requested formats.
type Document struct {
	Markdown   string         `json:"markdown,omitempty"`
	HTML       string         `json:"html,omitempty"`
	RawHTML    string         `json:"rawHtml,omitempty"`
	Links      []string       `json:"links,omitempty"`
	Images     []string       `json:"images,omitempty"`
	Screenshot string         `json:"screenshot,omitempty"`
	Actions    *ActionResults `json:"actions,omitempty"`
	Metadata   map[string]any `json:"metadata"`
	Warning    string         `json:"warning,omitempty"`
	// Discovered are every link of the page, absolute and without
	// fragments, when the request asked for them (never serialised).
	Discovered []string `json:"-"`
	// pdfPages is how many pages of a parsed PDF the document bills.
	pdfPages int
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
