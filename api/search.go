package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/trawler-dev/trawler/index"
	"github.com/trawler-dev/trawler/search"
	"github.com/trawler-dev/trawler/store"
	"github.com/trawler-dev/trawler/teams"
)

// searchRequest is spec 4.6 as it arrives.
type searchRequest struct {
	Query             *string           `json:"query"`
	Limit             *int              `json:"limit"`
	Sources           []json.RawMessage `json:"sources"`
	Categories        []json.RawMessage `json:"categories"`
	IncludeDomains    []string          `json:"includeDomains"`
	ExcludeDomains    []string          `json:"excludeDomains"`
	TBS               *string           `json:"tbs"`
	Location          *string           `json:"location"`
	Country           *string           `json:"country"`
	Timeout           *int              `json:"timeout"`
	IgnoreInvalidURLs *bool             `json:"ignoreInvalidURLs"`
	Enterprise        []string          `json:"enterprise"`
	ScrapeOptions     json.RawMessage   `json:"scrapeOptions"`
	Highlights        *bool             `json:"highlights"`
	Safe              *bool             `json:"safe"`
	ThreatProtection  json.RawMessage   `json:"threatProtection"`
	alexandriaOptions
	clientTags
}

// Sources and categories of Firecrawl's search that Trawler has no
// provider for: accepted, and answered as searchOptions says.
const (
	// sourceAlexandria is Firecrawl's catalogue of data providers: its
	// list is empty here.
	sourceAlexandria = "alexandria"
	// categoryDeveloper is Firecrawl's index for coding agents (issues,
	// pull requests, READMEs, documentation); here it is the GitHub
	// category.
	categoryDeveloper = "developer"
)

// maxQuery is the longest query, in characters.
const maxQuery = 500

func (a *API) search(c *fiber.Ctx) error {
	if a.Search == nil {
		return &Error{Status: fiber.StatusServiceUnavailable, Code: "UNAVAILABLE", Message: "search is not configured on this server"}
	}
	var req searchRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	team := teamOf(c)
	r, err := a.searchOptions(&req, team)
	if err != nil {
		return err
	}
	r.ID = uuid.NewString()
	resp, err := a.Search.Search(requestContext(c), r)
	if errors.Is(err, search.ErrTimeout) {
		return &Error{Status: fiber.StatusRequestTimeout, Code: "SEARCH_TIMEOUT", Message: "Search timed out"}
	}
	if err != nil {
		return err
	}
	id := r.ID
	// A search's results are not stored: its charge, results and their
	// scrapes together, is written alone.
	charge := store.Charge{Team: team.ID, Request: id, Kind: store.CreditSearch, Credits: resp.Credits, At: time.Now()}
	if err := a.Store.AddCharge(requestContext(c), charge); err != nil {
		return fmt.Errorf("recording a search's credits: %w", err) // no results that nobody paid for
	}
	if !r.ZDR {
		a.recordActivity(team.ID, id, "search", r.Text)
	}
	data := fiber.Map{}
	dev := developer(&req)
	for _, src := range r.Sources {
		data[src] = relabel(searchEntries(src, resp.Results[src]), index.CategoryGitHub, dev)
	}
	if sourceAsked(req.Sources, sourceAlexandria) {
		data[sourceAlexandria] = []fiber.Map{}
	}
	var warning any
	if w := uniqueJoin(append(searchWarnings(&req), resp.Warnings...)); w != "" {
		warning = w
	}
	return c.JSON(fiber.Map{"success": true, "data": data, "warning": warning, "id": id, "creditsUsed": resp.Credits})
}

// searchOptions validates the request into a search; every problem is
// named by its field.
func (a *API) searchOptions(req *searchRequest, team teams.Team) (*search.Request, error) {
	var problems []FieldProblem
	r := &search.Request{Team: team.ID, TeamLimit: team.Concurrency, Country: ""}
	switch {
	case req.Query == nil:
		problems = append(problems, fieldError("query", "query is required"))
	case strings.TrimSpace(*req.Query) == "":
		problems = append(problems, fieldError("query", "query must not be empty"))
	case utf8.RuneCountInString(*req.Query) > maxQuery:
		problems = append(problems, fieldError("query", "query must be at most %d characters, got %d", maxQuery,
			utf8.RuneCountInString(*req.Query)))
	default:
		r.Text = strings.TrimSpace(*req.Query)
		q, err := index.ParseQuery(r.Text)
		if err != nil {
			problems = append(problems, fieldError("query", "query: %v", err))
		}
		r.Query = q
	}
	r.Limit = intRange(&problems, "limit", req.Limit, 1, 100, 10)
	sources := typedList(&problems, "sources", req.Sources,
		[]string{index.SourceWeb, index.SourceImages, index.SourceNews, sourceAlexandria})
	r.Sources = slices.DeleteFunc(sources, func(s string) bool { return s == sourceAlexandria })
	if len(sources) == 0 {
		r.Sources = []string{index.SourceWeb}
	}
	r.Categories = typedList(&problems, "categories", req.Categories,
		[]string{index.CategoryGitHub, index.CategoryResearch, index.CategoryPDF, categoryDeveloper})
	if slices.Contains(r.Categories, categoryDeveloper) {
		if len(r.Categories) > 1 {
			problems = append(problems, fieldError("categories", "categories developer cannot be combined with other categories"))
		}
		r.Categories = []string{index.CategoryGitHub}
	}
	r.Highlights = req.Highlights == nil || *req.Highlights
	r.Safe = req.Safe != nil && *req.Safe
	req.alexandriaOptions.check(&problems, "")
	threatProtection(&problems, "", req.ThreatProtection)
	r.IncludeDomains = hostList(&problems, "includeDomains", req.IncludeDomains)
	r.ExcludeDomains = hostList(&problems, "excludeDomains", req.ExcludeDomains)
	if len(req.IncludeDomains) > 0 && len(req.ExcludeDomains) > 0 {
		problems = append(problems, fieldError("excludeDomains", "includeDomains and excludeDomains cannot be used together"))
	}
	if req.TBS != nil {
		t, err := index.ParseTBS(*req.TBS, time.Now())
		if err != nil {
			problems = append(problems, fieldError("tbs", "%v", err))
		}
		r.TBS = t
	}
	if req.Location != nil {
		if n := utf8.RuneCountInString(*req.Location); n > 200 {
			problems = append(problems, fieldError("location", "location must be at most 200 characters"))
		}
		r.Location = strings.TrimSpace(*req.Location)
	}
	if req.Country != nil {
		if !isCountryCode(*req.Country) {
			problems = append(problems, fieldError("country", "country must be a two-letter ISO 3166-1 code such as US, got %q", *req.Country))
		}
		r.Country = strings.ToUpper(*req.Country)
	}
	r.Timeout = time.Duration(intRange(&problems, "timeout", req.Timeout, 1000, 600000, 60000)) * time.Millisecond
	if req.IgnoreInvalidURLs != nil && *req.IgnoreInvalidURLs {
		r.Valid = func(u string) bool { _, p := checkURL("url", u); return p == nil }
	}
	enterprise := enterpriseList(&problems, req.Enterprise)
	// scrapeOptions are checked whenever given; the results are scraped
	// only when they ask for formats.
	if len(req.ScrapeOptions) > 0 && string(req.ScrapeOptions) != "null" {
		o := a.jobScrapeOptions(req.ScrapeOptions, "scrapeOptions.", team, &problems)
		if formatsGiven(req.ScrapeOptions) {
			r.Scrape = &o
		}
	}
	if len(problems) > 0 {
		return nil, badRequest(problems...)
	}
	for _, e := range enterprise {
		if (e == "zdr" && !team.Features.SearchZDR) || (e == "anon" && !team.Features.SearchAnon) {
			return nil, featureError("enterprise " + e)
		}
		r.ZDR = true
		r.EndToEnd = r.EndToEnd || e == "zdr"
	}
	if r.ZDR && r.Scrape != nil {
		r.Scrape.ZeroDataRetention, r.Scrape.StoreInCache = true, false
	}
	if r.Scrape != nil {
		if err := a.modelGate(r.Scrape, "scrapeOptions."); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// typedList reads an array of names given as strings or as {type: name}
// objects (sources, categories), each one of allowed, in order, once.
func typedList(problems *[]FieldProblem, field string, raw []json.RawMessage, allowed []string) []string {
	var out []string
	for i, item := range raw {
		path := fmt.Sprintf("%s.%d", field, i)
		var name string
		if err := json.Unmarshal(item, &name); err != nil {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(item, &obj); err != nil {
				*problems = append(*problems, fieldError(path, "%s[%d] must be a string or an object with a type", field, i))
				continue
			}
			for k := range obj {
				if k != "type" {
					*problems = append(*problems, fieldError(path+"."+k, "%s[%d].%s is not a known member (only type is)", field, i, k))
				}
			}
			if err := json.Unmarshal(obj["type"], &name); err != nil {
				*problems = append(*problems, fieldError(path+".type", "%s[%d].type must be a string", field, i))
				continue
			}
		}
		if !slices.Contains(allowed, name) {
			*problems = append(*problems, fieldError(path, "%s[%d] must be one of %s, got %q", field, i,
				strings.Join(allowed, ", "), name))
			continue
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// hostList checks an array of host names (no scheme, no path).
func hostList(problems *[]FieldProblem, field string, hosts []string) []string {
	var out []string
	for i, h := range hosts {
		h = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
		if h == "" || strings.ContainsAny(h, "/:?#@ ") || !plausibleHost(h) {
			*problems = append(*problems, fieldError(fmt.Sprintf("%s.%d", field, i),
				"%s[%d] must be a host name such as example.com, without protocol or path, got %q", field, i, hosts[i]))
			continue
		}
		out = append(out, h)
	}
	return out
}

// enterpriseList reads enterprise: zdr and anon, each a team feature;
// default asks for neither.
func enterpriseList(problems *[]FieldProblem, values []string) []string {
	var out []string
	for i, v := range values {
		switch v {
		case "zdr", "anon":
			out = append(out, v)
		case "default":
		default:
			*problems = append(*problems, fieldError(fmt.Sprintf("enterprise.%d", i),
				"enterprise[%d] must be default, zdr or anon, got %q", i, v))
		}
	}
	return out
}

// searchWarnings name what of req this server accepts but cannot serve.
func searchWarnings(req *searchRequest) []string {
	var out []string
	if sourceAsked(req.Sources, sourceAlexandria) {
		out = append(out, "sources alexandria: this server has no Alexandria provider, so its list is empty")
	}
	if w := req.alexandriaOptions.warning(); w != "" {
		out = append(out, w)
	}
	if developer(req) {
		out = append(out, "categories developer: this server has no developer index; its results are the GitHub category's (repositories, issues, pull requests, READMEs)")
	}
	return out
}

// sourceAsked reports whether the raw sources name src.
func sourceAsked(raw []json.RawMessage, src string) bool {
	var ignored []FieldProblem
	return slices.Contains(typedList(&ignored, "sources", raw, []string{src}), src)
}

// developer reports whether req asks for the developer category.
func developer(req *searchRequest) bool {
	var ignored []FieldProblem
	return slices.Contains(typedList(&ignored, "categories", req.Categories, []string{categoryDeveloper}), categoryDeveloper)
}

// relabel renames the category from of entries to developer's, when asked.
func relabel(entries []fiber.Map, from string, asked bool) []fiber.Map {
	if asked {
		for _, e := range entries {
			if e["category"] == from {
				e["category"] = categoryDeveloper
			}
		}
	}
	return entries
}

func isCountryCode(s string) bool {
	if len(s) != 2 {
		return false
	}
	for _, r := range s {
		if (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') {
			return false
		}
	}
	return true
}

// formatsGiven reports whether scrapeOptions names formats: only then is
// each result scraped.
func formatsGiven(raw json.RawMessage) bool {
	var o struct {
		Formats []json.RawMessage `json:"formats"`
	}
	return len(raw) > 0 && json.Unmarshal(raw, &o) == nil && len(o.Formats) > 0
}

// searchEntries shapes one source's results as spec 2.6 does.
func searchEntries(source string, results []search.Result) []fiber.Map {
	out := make([]fiber.Map, 0, len(results))
	for _, r := range results {
		e := fiber.Map{}
		if r.Document != nil {
			raw, _ := json.Marshal(r.Document)
			_ = json.Unmarshal(raw, &e)
		}
		if r.Error != "" {
			e["metadata"] = fiber.Map{"sourceURL": r.URL, "url": r.URL, "error": r.Error}
		}
		e["url"] = r.URL
		e["title"] = r.Title
		e["position"] = r.Position
		switch source {
		case index.SourceImages:
			e["imageUrl"] = r.ImageURL
			e["imageWidth"] = r.ImageWidth
			e["imageHeight"] = r.ImageHeight
		case index.SourceNews:
			e["snippet"] = r.Description
			if !r.Published.IsZero() {
				e["date"] = isoTime(r.Published)
			}
			if r.ImageURL != "" {
				e["imageUrl"] = r.ImageURL
			}
		default:
			e["description"] = r.Description
		}
		if r.Category != "" {
			e["category"] = r.Category
		}
		out = append(out, e)
	}
	return out
}

// uniqueJoin joins warnings, each once.
func uniqueJoin(ws []string) string {
	var out []string
	for _, w := range ws {
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return strings.Join(out, "; ")
}
