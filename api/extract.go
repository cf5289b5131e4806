package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/trawler-dev/trawler/crawl"
	"github.com/trawler-dev/trawler/extract"
	"github.com/trawler-dev/trawler/model"
	"github.com/trawler-dev/trawler/scrape"
	"github.com/trawler-dev/trawler/teams"
)

// extractRequest is POST /v2/extract, as the Firecrawl SDKs send it.
type extractRequest struct {
	URLs               []json.RawMessage `json:"urls"`
	Prompt             *string           `json:"prompt"`
	Schema             json.RawMessage   `json:"schema"`
	SystemPrompt       *string           `json:"systemPrompt"`
	AllowExternalLinks *bool             `json:"allowExternalLinks"`
	EnableWebSearch    *bool             `json:"enableWebSearch"`
	ShowSources        *bool             `json:"showSources"`
	IgnoreInvalidURLs  *bool             `json:"ignoreInvalidURLs"`
	IncludeSubdomains  *bool             `json:"includeSubdomains"`
	IgnoreSitemap      *bool             `json:"ignoreSitemap"`
	ScrapeOptions      json.RawMessage   `json:"scrapeOptions"`
	Agent              json.RawMessage   `json:"agent"`
	Webhook            json.RawMessage   `json:"webhook"`
	clientTags
}

// maxExtractURLs bounds the URLs of one extract (wildcards included).
const maxExtractURLs = 10

// wildcard ends a URL that stands for the pages under its path.
const wildcard = "/*"

func (a *API) startExtract(c *fiber.Ctx) error {
	var req extractRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	team := teamOf(c)
	x := a.extractSpec(&req, team)
	if len(x.problems) > 0 {
		return badRequest(x.problems...)
	}
	if a.Model == nil {
		return modelNotConfigured("extract", x.modelField)
	}
	if err := a.modelGate(&x.spec.Scrape, "scrapeOptions."); err != nil {
		return err
	}
	// The network guard, as for a batch: a wildcard is checked by its host.
	guarded := &crawl.Spec{Kind: crawl.KindBatch, URLs: x.spec.URLs}
	if err := a.dropBlocked(requestContext(c), guarded, x.given, x.ignoreInvalid, &x.invalid); err != nil {
		return err
	}
	x.spec.URLs = guarded.URLs
	id, err := a.Extract.Create(requestContext(c), team.ID, team.Concurrency, x.spec)
	if errors.Is(err, extract.ErrClosed) {
		return &Error{Status: fiber.StatusServiceUnavailable, Code: "UNAVAILABLE", Message: "the service is shutting down"}
	}
	if err != nil {
		return err
	}
	a.recordActivity(team.ID, id, "extract", x.spec.URLs[0])
	body := fiber.Map{"success": true, "id": id}
	if x.ignoreInvalid {
		body["invalidURLs"] = x.invalid
	}
	return c.JSON(body)
}

// extractInput is an extract request, validated.
type extractInput struct {
	spec extract.Spec
	// given holds each of spec.URLs as the request gave it.
	given []batchURL
	// invalid are the URLs dropped (ignoreInvalid) as the request gave them.
	invalid       []string
	ignoreInvalid bool
	// modelField names what needs the model: prompt or schema.
	modelField string
	problems   []FieldProblem
}

// extractSpec validates an extract request; every problem is named by its
// field.
func (a *API) extractSpec(req *extractRequest, team teams.Team) *extractInput {
	x := &extractInput{invalid: []string{}, ignoreInvalid: req.IgnoreInvalidURLs == nil || *req.IgnoreInvalidURLs,
		modelField: "prompt"}
	x.urls(req.URLs)
	spec := &x.spec
	if req.Prompt != nil {
		spec.Prompt = x.text("prompt", *req.Prompt)
	}
	if req.SystemPrompt != nil {
		spec.SystemPrompt = x.text("systemPrompt", *req.SystemPrompt)
	}
	if len(req.Schema) > 0 && string(req.Schema) != "null" {
		if _, err := model.NormalizeSchema(req.Schema); err != nil {
			x.problems = append(x.problems, fieldError("schema", "schema %v", err))
		} else {
			spec.Schema = req.Schema
			if req.Prompt == nil {
				x.modelField = "schema"
			}
		}
	} else if req.Prompt == nil {
		x.problems = append(x.problems, fieldError("prompt", "prompt or schema is required: say what to extract, give the JSON schema of the answer, or both"))
	}
	if req.EnableWebSearch != nil && *req.EnableWebSearch {
		x.problems = append(x.problems, fieldError("enableWebSearch", "enableWebSearch is not supported: web search inside extract is not available; find the pages with POST /v2/search and pass their URLs in urls"))
	}
	if len(req.Agent) > 0 && string(req.Agent) != "null" {
		x.problems = append(x.problems, fieldError("agent", "agent is not supported by this server"))
	}
	if len(req.Webhook) > 0 && string(req.Webhook) != "null" {
		x.problems = append(x.problems, fieldError("webhook", "webhook is not supported for extract yet: poll GET /v2/extract/{id}"))
	}
	flag := func(v *bool, def bool) bool {
		if v == nil {
			return def
		}
		return *v
	}
	spec.AllowExternalLinks = flag(req.AllowExternalLinks, false)
	spec.ShowSources = flag(req.ShowSources, false)
	spec.IncludeSubdomains = flag(req.IncludeSubdomains, true)
	spec.IgnoreSitemap = flag(req.IgnoreSitemap, false)
	spec.Scrape = a.jobScrapeOptions(req.ScrapeOptions, "scrapeOptions.", team, &x.problems)
	if spec.Scrape.Lockdown {
		// Lockdown keeps nothing; an extract keeps the pages for the model
		// and sends them to it.
		x.problems = append(x.problems, fieldError("scrapeOptions.lockdown", "scrapeOptions.lockdown is not supported in an extract: its pages are kept and sent to the language model"))
	}
	// The model reads the pages' Markdown; what else a page could give
	// would be thrown away, and a page's own model formats would be
	// calls nobody reads.
	spec.Scrape.Formats = []scrape.Format{{Type: "markdown"}}
	return x
}

// text checks a prompt of the request: not blank, at most maxModelText
// characters.
func (x *extractInput) text(name, s string) string {
	switch n := utf8.RuneCountInString(s); {
	case strings.TrimSpace(s) == "":
		x.problems = append(x.problems, fieldError(name, "%s must not be empty", name))
	case n > maxModelText:
		x.problems = append(x.problems, fieldError(name, "%s must be at most %d characters, got %d", name, maxModelText, n))
	}
	return s
}

// urls checks urls: 1 to maxExtractURLs absolute http(s) URLs, each
// perhaps ending in /*. An invalid one is dropped and listed when
// ignoreInvalid, else a problem.
func (x *extractInput) urls(raws []json.RawMessage) {
	switch {
	case raws == nil:
		x.problems = append(x.problems, fieldError("urls", "urls is required"))
		return
	case len(raws) == 0:
		x.problems = append(x.problems, fieldError("urls", "urls must hold at least one URL"))
		return
	case len(raws) > maxExtractURLs:
		x.problems = append(x.problems, fieldError("urls", "urls must hold at most %d URLs", maxExtractURLs))
		return
	}
	var bad []string
	for i, raw := range raws {
		name := fmt.Sprintf("urls[%d]", i)
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			x.problems = append(x.problems, fieldError(name, "%s must be a string", name))
			continue
		}
		u, p := checkExtractURL(name, s)
		if p != nil {
			if !x.ignoreInvalid {
				x.problems = append(x.problems, *p)
			}
			x.invalid = append(x.invalid, redactURL(s))
			bad = append(bad, name)
			continue
		}
		x.spec.URLs = append(x.spec.URLs, u)
		x.given = append(x.given, batchURL{name: name, raw: s})
	}
	if x.ignoreInvalid && len(x.spec.URLs) == 0 && len(bad) > 0 {
		x.problems = append(x.problems, fieldError("urls", "urls holds no valid URL (each must be an absolute http or https URL, perhaps ending in /* for the pages under its path)"))
	}
}

// checkExtractURL checks one URL of an extract: a target URL by checkURL's
// rules, or one whose path ends in /* (the pages under that path),
// returned normalised (with its /*).
func checkExtractURL(name, raw string) (string, *FieldProblem) {
	base, wild := strings.CutSuffix(strings.TrimSpace(raw), wildcard)
	if wild {
		base += "/"
	}
	if strings.Contains(base, "*") {
		p := fieldError(name, "%s may hold * only as a final /* (the pages under its path)", name)
		return "", &p
	}
	u, p := checkURL(name, base)
	if p != nil || !wild {
		return u, p
	}
	pu, err := url.Parse(u)
	if err != nil || pu.RawQuery != "" || pu.Fragment != "" || !strings.HasSuffix(pu.Path, "/") {
		p := fieldError(name, "%s must end its path with /*, after no query or fragment", name)
		return "", &p
	}
	return u + "*", nil
}

// getExtract answers GET /v2/extract/{id}.
func (a *API) getExtract(c *fiber.Ctx) error {
	st, err := a.Extract.Get(requestContext(c), teamOf(c).ID, c.Params("id"))
	if errors.Is(err, extract.ErrNotFound) {
		return &Error{Status: fiber.StatusNotFound, Code: "NOT_FOUND", Message: "extract job not found"}
	}
	if err != nil {
		return err
	}
	body := fiber.Map{"success": true, "id": st.ID, "status": st.Status, "data": st.Data,
		"expiresAt": isoTime(st.ExpiresAt), "createdAt": isoTime(st.CreatedAt), "tokensUsed": st.TokensUsed,
		"creditsUsed": st.CreditsUsed}
	if st.ShowSources {
		body["sources"] = st.Sources
	}
	if st.Warning != "" {
		body["warning"] = st.Warning
	}
	if st.Error != "" {
		body["error"] = st.Error
	}
	return c.JSON(body)
}
