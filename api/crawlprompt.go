package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/trawler-dev/trawler/model"
	"github.com/trawler-dev/trawler/teams"
	"github.com/trawler-dev/trawler/wire"
)

// maxCrawlPrompt bounds a crawl prompt, in characters (spec 4.3).
const maxCrawlPrompt = 10000

// crawlParamsSchema is what the model may set of a crawl: the members of
// spec 4.3 that decide what is visited. Never the enterprise options
// (ignoreRobotsTxt, robotsUserAgent): a prompt does not get a team
// features its operator did not give it.
var crawlParamsSchema = json.RawMessage(`{
	"type": "object",
	"properties": {
		"includePaths": {"type": "array", "items": {"type": "string"}, "description": "regular expressions over the URL path (such as ^/blog/.*); only matching pages are crawled"},
		"excludePaths": {"type": "array", "items": {"type": "string"}, "description": "regular expressions over the URL path; matching pages are skipped"},
		"maxDiscoveryDepth": {"type": "integer", "minimum": 0, "description": "how many links away from the start page to go"},
		"limit": {"type": "integer", "minimum": 1, "description": "the most pages to crawl"},
		"sitemap": {"type": "string", "enum": ["skip", "include", "only"], "description": "whether to use the site's sitemap"},
		"crawlEntireDomain": {"type": "boolean", "description": "follow sibling and parent paths, not only pages below the start URL"},
		"allowExternalLinks": {"type": "boolean", "description": "follow links to other sites"},
		"allowSubdomains": {"type": "boolean", "description": "follow links to subdomains"},
		"ignoreQueryParameters": {"type": "boolean", "description": "treat URLs that differ only in their query as one page"},
		"deduplicateSimilarURLs": {"type": "boolean", "description": "treat www/non-www, http/https and trailing-slash variants as one page"},
		"delay": {"type": "number", "minimum": 0, "description": "seconds to wait between pages"}
	}
}`)

const crawlPromptSystem = "You turn a request in plain language into the options of a web crawl that starts at a " +
	"given URL. Set only the options the request implies and answer null for every other one. includePaths and " +
	"excludePaths are regular expressions matched against the URL's path (for example ^/blog/.* or .*\\.pdf$), " +
	"not whole URLs. Answer with JSON only."

// promptedCrawl turns req's prompt into crawl options with the model and
// returns the request with them: the options body (the request as sent)
// sets itself win, and a generated option the API would refuse is left
// out with a warning, so that a model cannot produce a crawl that a
// hand-written request could not. The model's calls count under id.
func (a *API) promptedCrawl(ctx context.Context, body []byte, req *crawlRequest, team teams.Team, id string) (crawlRequest, []string, error) {
	prompt, err := a.checkPrompt(req.Prompt)
	if err != nil {
		return *req, nil, err
	}
	if req.URL == nil {
		return *req, nil, nil // the request's own 400 says so
	}
	target, p := checkURL("url", *req.URL)
	if p != nil {
		return *req, nil, nil
	}
	var explicit map[string]json.RawMessage
	if err := json.Unmarshal(body, &explicit); err != nil {
		return *req, nil, err
	}
	generated, err := a.generateCrawlParams(ctx, team, id, target, prompt)
	if err != nil {
		return *req, nil, err
	}
	merged, warnings := a.mergeGenerated(ctx, explicit, generated, team)
	raw, err := json.Marshal(merged)
	if err != nil {
		return *req, nil, err
	}
	var out crawlRequest
	if err := decodeJSON(raw, &out, ""); err != nil {
		return *req, nil, err
	}
	return out, warnings, nil
}

// checkPrompt checks a crawl prompt, and that a model can answer it.
func (a *API) checkPrompt(prompt *string) (string, error) {
	switch {
	case prompt == nil || strings.TrimSpace(*prompt) == "":
		return "", badRequest(fieldError("prompt", "prompt must be a non-empty string"))
	case utf8.RuneCountInString(*prompt) > maxCrawlPrompt:
		return "", badRequest(fieldError("prompt", "prompt must be at most %d characters, got %d", maxCrawlPrompt,
			utf8.RuneCountInString(*prompt)))
	case a.Model == nil:
		return "", modelNotConfigured("prompt", "prompt")
	}
	return *prompt, nil
}

// generateCrawlParams asks the model for the crawl options of prompt.
func (a *API) generateCrawlParams(ctx context.Context, team teams.Team, id, target, prompt string) (map[string]any, error) {
	schema, err := model.NormalizeSchema(crawlParamsSchema)
	if err != nil {
		return nil, err // a mistake of this file, found by its test
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	ans, err := a.Model.Complete(ctx, model.Call{Team: team.ID, Request: id, Purpose: "crawlPrompt",
		System: crawlPromptSystem, User: "Start URL: " + target + "\n\nWhat to crawl: " + prompt, Schema: schema})
	if err != nil {
		return nil, modelFailure("prompt", err)
	}
	out, _ := ans.JSON.(map[string]any)
	return out, nil
}

// modelFailure is the answer when a model call a request depends on
// failed: the model server is a dependency (502).
func modelFailure(what string, err error) *Error {
	var se *model.ServerError
	msg := err.Error()
	if errors.As(err, &se) {
		msg = se.Error()
	}
	return &Error{Status: fiber.StatusBadGateway, Code: "UPSTREAM_ERROR",
		Message: fmt.Sprintf("%s: the language model failed: %s", what, msg)}
}

// mergeGenerated adds the generated options that body does not set
// itself, each checked alone by the rules of a crawl request; it returns
// the merged body and a warning for each option left out.
func (a *API) mergeGenerated(ctx context.Context, body map[string]json.RawMessage, generated map[string]any, team teams.Team) (map[string]json.RawMessage, []string) {
	var warnings []string
	keys := make([]string, 0, len(generated))
	for k := range generated {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := generated[k]
		if _, set := body[k]; set || v == nil {
			continue
		}
		raw, err := json.Marshal(v)
		if err != nil {
			continue
		}
		if why := a.refusedOption(ctx, body["url"], k, raw, team); why != "" {
			warnings = append(warnings, fmt.Sprintf("the prompt's %s (%s) was left out: %s", k, wire.Truncate(string(raw), 200), why))
			continue
		}
		body[k] = raw
	}
	return body, warnings
}

// refusedOption says why a crawl request with url and option k set to raw
// would be refused, "" when it would not.
func (a *API) refusedOption(ctx context.Context, url json.RawMessage, k string, raw json.RawMessage, team teams.Team) string {
	var one bytes.Buffer
	fmt.Fprintf(&one, `{"url": %s, %q: %s}`, url, k, raw)
	var r crawlRequest
	if err := decodeJSON(one.Bytes(), &r, ""); err != nil {
		return err.Error()
	}
	_, problems := a.crawlSpec(ctx, &r, team)
	var msgs []string
	for _, p := range problems {
		if len(p.Path) > 0 && (p.Path[0] == k || strings.HasPrefix(p.Path[0], k+"[")) {
			msgs = append(msgs, p.Message)
		}
	}
	return strings.Join(msgs, "; ")
}

// paramsPreview is POST /v2/crawl/params-preview: the crawl options a
// prompt gives, exactly as POST /v2/crawl would take them.
func (a *API) paramsPreview(c *fiber.Ctx) error {
	var req paramsPreviewRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	var problems []FieldProblem
	target := requiredURL(&problems, "url", req.URL)
	if req.Prompt == nil || strings.TrimSpace(*req.Prompt) == "" {
		problems = append(problems, fieldError("prompt", "prompt is required and must be a non-empty string"))
	}
	if len(problems) > 0 {
		return badRequest(problems...)
	}
	prompt, err := a.checkPrompt(req.Prompt)
	if err != nil {
		return err
	}
	team := teamOf(c)
	id := uuid.NewString()
	generated, err := a.generateCrawlParams(requestContext(c), team, id, target, prompt)
	if err != nil {
		return err
	}
	url, _ := json.Marshal(target)
	merged, warnings := a.mergeGenerated(requestContext(c), map[string]json.RawMessage{"url": url}, generated, team)
	raw, _ := json.Marshal(merged)
	var cr crawlRequest
	if err := decodeJSON(raw, &cr, ""); err != nil {
		return err
	}
	spec, problems := a.crawlSpec(requestContext(c), &cr, team)
	if len(problems) > 0 {
		return badRequest(problems...) // cannot happen: each option was checked
	}
	co := spec.Crawl
	data := fiber.Map{"url": spec.URL, "includePaths": nonNil(co.IncludePaths), "excludePaths": nonNil(co.ExcludePaths),
		"crawlEntireDomain": co.CrawlEntireDomain, "allowExternalLinks": co.AllowExternalLinks,
		"allowSubdomains": co.AllowSubdomains, "sitemap": co.Sitemap, "ignoreQueryParameters": co.IgnoreQueryParameters,
		"ignoreRobotsTxt": co.IgnoreRobotsTxt, "robotsUserAgent": co.RobotsUserAgent,
		"deduplicateSimilarURLs": co.DeduplicateSimilarURLs, "delay": co.Delay.Seconds(), "limit": co.Limit}
	if co.MaxDiscoveryDepth != nil {
		data["maxDiscoveryDepth"] = *co.MaxDiscoveryDepth
	}
	resp := fiber.Map{"success": true, "data": data}
	if len(warnings) > 0 {
		resp["warning"] = strings.Join(warnings, "; ")
	}
	return c.JSON(resp)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
