package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/trawler-dev/trawler/crawl"
	"github.com/trawler-dev/trawler/discover"
	"github.com/trawler-dev/trawler/scrape"
	"github.com/trawler-dev/trawler/teams"
	"github.com/trawler-dev/trawler/webhook"
	"github.com/trawler-dev/trawler/wire"
)

// crawlOptions are the members of a crawl request that say which pages
// it takes and how: a monitor's crawl target takes them as its
// crawlOptions.
type crawlOptions struct {
	ExcludePaths           []string `json:"excludePaths"`
	IncludePaths           []string `json:"includePaths"`
	MaxDiscoveryDepth      *int     `json:"maxDiscoveryDepth"`
	Sitemap                *string  `json:"sitemap"`
	IgnoreQueryParameters  *bool    `json:"ignoreQueryParameters"`
	DeduplicateSimilarURLs *bool    `json:"deduplicateSimilarURLs"`
	RegexOnFullURL         *bool    `json:"regexOnFullURL"`
	Limit                  *int     `json:"limit"`
	CrawlEntireDomain      *bool    `json:"crawlEntireDomain"`
	AllowExternalLinks     *bool    `json:"allowExternalLinks"`
	AllowSubdomains        *bool    `json:"allowSubdomains"`
	IgnoreRobotsTxt        *bool    `json:"ignoreRobotsTxt"`
	RobotsUserAgent        *string  `json:"robotsUserAgent"`
	Delay                  *float64 `json:"delay"`
	MaxConcurrency         *int     `json:"maxConcurrency"`
}

// crawlRequest is POST /v2/crawl (spec 4.2).
type crawlRequest struct {
	URL               *string         `json:"url"`
	Prompt            *string         `json:"prompt"`
	Webhook           json.RawMessage `json:"webhook"`
	ScrapeOptions     json.RawMessage `json:"scrapeOptions"`
	ZeroDataRetention *bool           `json:"zeroDataRetention"`
	crawlOptions
	clientTags
}

// maxCrawlLimit bounds limit: a larger crawl is a mistake more often than not.
const maxCrawlLimit = 100000

func featureError(option string) *Error {
	return &Error{Status: fiber.StatusForbidden, Code: "FEATURE_NOT_ENABLED",
		Message: option + " is not enabled for this team; the operator enables it with TRAWLER_TEAM_FEATURES"}
}

func (a *API) startCrawl(c *fiber.Ctx) error {
	var req crawlRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	team := teamOf(c)
	id := uuid.NewString()
	var warnings []string
	if req.Prompt != nil {
		var err error
		if req, warnings, err = a.promptedCrawl(requestContext(c), c.Request().Body(), &req, team, id); err != nil {
			return err
		}
	}
	spec, problems := a.crawlSpec(requestContext(c), &req, team)
	if len(problems) > 0 {
		return badRequest(problems...)
	}
	co := &spec.Crawl
	if (co.IgnoreRobotsTxt || co.RobotsUserAgent != "") && !team.Features.IgnoreRobotsTxt {
		if co.IgnoreRobotsTxt {
			return featureError("ignoreRobotsTxt")
		}
		return featureError("robotsUserAgent")
	}
	var err error
	if spec.ZeroDataRetention, err = zeroDataRetention(req.ZeroDataRetention, team, &spec.Scrape); err != nil {
		return err
	}
	if err := a.modelGate(&spec.Scrape, "scrapeOptions."); err != nil {
		return err
	}
	spec.ID = id
	body, err := a.createJob(c, team, spec, spec.URL, "crawl")
	if err != nil {
		return err
	}
	if len(warnings) > 0 {
		body["warning"] = strings.Join(warnings, "; ")
	}
	return c.JSON(body)
}

// crawlSpec validates a crawl request into its job's spec; every problem
// is named by its field. The team's features are checked by the caller.
func (a *API) crawlSpec(ctx context.Context, req *crawlRequest, team teams.Team) (*crawl.Spec, []FieldProblem) {
	var problems []FieldProblem
	spec := &crawl.Spec{Kind: crawl.KindCrawl, Crawl: crawl.DefaultCrawlOptions()}
	co := &spec.Crawl
	spec.URL = requiredURL(&problems, "url", req.URL)
	co.IncludePaths, co.ExcludePaths = req.IncludePaths, req.ExcludePaths
	if req.MaxDiscoveryDepth != nil {
		d := intRange(&problems, "maxDiscoveryDepth", req.MaxDiscoveryDepth, 0, 1000, 0)
		co.MaxDiscoveryDepth = &d
	}
	if req.Sitemap != nil {
		switch *req.Sitemap {
		case "skip", "include", "only":
			co.Sitemap = *req.Sitemap
		default:
			problems = append(problems, fieldError("sitemap", "sitemap must be skip, include or only, got %q", *req.Sitemap))
		}
	}
	flag := func(dst *bool, v *bool) {
		if v != nil {
			*dst = *v
		}
	}
	flag(&co.IgnoreQueryParameters, req.IgnoreQueryParameters)
	flag(&co.DeduplicateSimilarURLs, req.DeduplicateSimilarURLs)
	flag(&co.RegexOnFullURL, req.RegexOnFullURL)
	flag(&co.CrawlEntireDomain, req.CrawlEntireDomain)
	flag(&co.AllowExternalLinks, req.AllowExternalLinks)
	flag(&co.AllowSubdomains, req.AllowSubdomains)
	co.Limit = intRange(&problems, "limit", req.Limit, 1, maxCrawlLimit, co.Limit)
	if req.Delay != nil {
		if *req.Delay < 0 || *req.Delay > 3600 {
			problems = append(problems, fieldError("delay", "delay must be between 0 and 3600 seconds"))
		}
		co.Delay = time.Duration(*req.Delay * float64(time.Second))
	}
	spec.MaxConcurrency = intRange(&problems, "maxConcurrency", req.MaxConcurrency, 1, 1000, 0)
	if req.RobotsUserAgent != nil {
		if strings.TrimSpace(*req.RobotsUserAgent) == "" || len(*req.RobotsUserAgent) > 200 {
			problems = append(problems, fieldError("robotsUserAgent", "robotsUserAgent must be 1 to 200 characters"))
		}
		co.RobotsUserAgent = *req.RobotsUserAgent
	}
	flag(&co.IgnoreRobotsTxt, req.IgnoreRobotsTxt)
	spec.Webhook = decodeWebhook(req.Webhook, &problems)
	spec.Scrape = a.jobScrapeOptions(req.ScrapeOptions, "scrapeOptions.", team, &problems)
	if len(req.ScrapeOptions) > 0 && string(req.ScrapeOptions) != "null" {
		spec.ScrapeOptions = req.ScrapeOptions
	}
	if len(problems) == 0 && spec.URL != "" {
		if _, err := discover.NewRules(discover.RulesOptions{Start: spec.URL, IncludePaths: co.IncludePaths,
			ExcludePaths: co.ExcludePaths}); err != nil {
			var pe *discover.PatternError
			var le *discover.LimitError
			switch {
			case errors.As(err, &pe):
				problems = append(problems, fieldError(pe.Field, "%s", pe.Error()))
			case errors.As(err, &le):
				problems = append(problems, fieldError(le.Field, "%s", le.Error()))
			default:
				problems = append(problems, fieldError("url", "url: %v", err))
			}
		}
	}
	a.checkWebhook(ctx, spec, &problems)
	return spec, problems
}

// jobScrapeOptions decodes a job's scrape options (a crawl's scrapeOptions
// object); the pages of a job are scraped with them.
func (a *API) jobScrapeOptions(raw json.RawMessage, prefix string, team teams.Team, problems *[]FieldProblem) scrape.Options {
	var r scrapeOptionsRequest
	if err := decodeJSON(raw, &r, prefix); err != nil {
		var e *Error
		if errors.As(err, &e) && e.Details != nil {
			*problems = append(*problems, e.Details.([]FieldProblem)...)
		} else {
			*problems = append(*problems, fieldError(strings.TrimSuffix(prefix, "."), "%s: %v", strings.TrimSuffix(prefix, "."), err))
		}
		return scrape.DefaultOptions()
	}
	o := r.options(prefix, team, problems)
	jobProfile(problems, prefix+"profile", r.Profile, &o)
	return o
}

func decodeWebhook(raw json.RawMessage, problems *[]FieldProblem) *webhook.Spec {
	spec, msgs := webhook.Decode(raw, "webhook")
	for _, m := range msgs {
		path, _, _ := strings.Cut(m, " ")
		*problems = append(*problems, FieldProblem{Path: strings.Split(path, "."), Message: m})
	}
	if spec != nil {
		// The target URL follows the rules of every target URL, and is
		// delivered to in the form a browser would read it.
		u, p := checkURL(spec.URLField(), spec.URL)
		if p != nil {
			*problems = append(*problems, *p)
			return nil
		}
		spec.URL = u
	}
	return spec
}

// zeroDataRetention is the one gate of the zeroDataRetention option, for
// every endpoint that takes it (scrape, parse, crawl, batch scrape): asked
// for by a team that has the feature, o keeps nothing, not even a cache
// entry; asked for by another team, it is a 403. on reports whether it was
// asked for.
func zeroDataRetention(asked *bool, team teams.Team, o *scrape.Options) (on bool, err error) {
	if asked == nil || !*asked {
		return false, nil
	}
	if !team.Features.ZeroDataRetention {
		return false, featureError("zeroDataRetention")
	}
	o.ZeroDataRetention, o.StoreInCache = true, false
	return true, nil
}

// createJob starts a job (crawl or batch) and returns the answer's body:
// its id and status URL.
func (a *API) createJob(c *fiber.Ctx, team teams.Team, spec *crawl.Spec, target, endpoint string) (fiber.Map, error) {
	key := c.Get("x-idempotency-key")
	if len(key) > 256 {
		return nil, badRequest(fieldError("x-idempotency-key", "the x-idempotency-key header must be at most 256 characters"))
	}
	id, err := a.Crawler.Create(requestContext(c), team.ID, spec, key)
	if errors.Is(err, crawl.ErrIdempotencyConflict) {
		return nil, &Error{Status: fiber.StatusConflict, Code: "IDEMPOTENCY_CONFLICT", Message: "the x-idempotency-key header was already used for another job"}
	}
	if err != nil {
		return nil, err
	}
	if !spec.ZeroDataRetention {
		a.recordActivity(team.ID, id, endpoint, target)
	}
	path := "/v2/crawl/"
	if spec.Kind == crawl.KindBatch {
		path = "/v2/batch/scrape/"
	}
	return fiber.Map{"success": true, "id": id, "url": a.baseURL(c) + path + id}, nil
}

// batchRequest is POST /v2/batch/scrape (spec 4.5).
type batchRequest struct {
	URLs              []json.RawMessage `json:"urls"`
	Webhook           json.RawMessage   `json:"webhook"`
	MaxConcurrency    *int              `json:"maxConcurrency"`
	IgnoreInvalidURLs *bool             `json:"ignoreInvalidURLs"`
	AppendToID        *string           `json:"appendToId"`
	scrapeOptionsRequest
	ZeroDataRetention *bool `json:"zeroDataRetention"`
	clientTags
}

// maxBatchURLs bounds one batch.
const maxBatchURLs = 100000

func (a *API) startBatch(c *fiber.Ctx) error {
	var req batchRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	team := teamOf(c)
	var problems []FieldProblem
	spec := &crawl.Spec{Kind: crawl.KindBatch}
	ignoreInvalid := req.IgnoreInvalidURLs == nil || *req.IgnoreInvalidURLs
	invalid := []string{}
	switch {
	case req.URLs == nil:
		problems = append(problems, fieldError("urls", "urls is required"))
	case len(req.URLs) == 0:
		problems = append(problems, fieldError("urls", "urls must hold at least one URL"))
	case len(req.URLs) > maxBatchURLs:
		// Refused before each is read: the answer is about the count.
		return badRequest(fieldError("urls", "urls holds %d URLs; a batch may hold at most %d", len(req.URLs), maxBatchURLs))
	}
	var bad []string // the first maxQuoted of the nbad invalid URLs
	nbad := 0
	const maxQuoted = 20
	var given []batchURL // each of spec.URLs as the request gave it
	for i, raw := range req.URLs {
		var s string
		name := fmt.Sprintf("urls[%d]", i)
		if err := json.Unmarshal(raw, &s); err != nil {
			problems = append(problems, fieldError(name, "%s must be a string", name))
			continue
		}
		u, p := checkURL(name, s)
		if p != nil {
			invalid = append(invalid, redactURL(s))
			if len(bad) < maxQuoted {
				bad = append(bad, fmt.Sprintf("%s %q", name, wire.Truncate(redactURL(s), 200)))
			}
			nbad++
			continue
		}
		spec.URLs = append(spec.URLs, u)
		given = append(given, batchURL{name: name, raw: s})
	}
	if nbad > len(bad) {
		bad = append(bad, fmt.Sprintf("and %d more", nbad-len(bad)))
	}
	if len(bad) > 0 && !ignoreInvalid {
		problems = append(problems, fieldError("urls", "urls holds invalid URLs (each must be an absolute http or https URL): %s", strings.Join(bad, ", ")))
	} else if len(req.URLs) > 0 && len(spec.URLs) == 0 && len(bad) > 0 {
		problems = append(problems, fieldError("urls", "urls holds no valid URL (each must be an absolute http or https URL)"))
	}
	if req.AppendToID != nil {
		problems = append(problems, fieldError("appendToId", "appendToId is not supported: start a new batch"))
	}
	spec.MaxConcurrency = intRange(&problems, "maxConcurrency", req.MaxConcurrency, 1, 1000, 0)
	spec.Webhook = decodeWebhook(req.Webhook, &problems)
	spec.Scrape = req.options("", team, &problems)
	jobProfile(&problems, "profile", req.Profile, &spec.Scrape)
	a.checkWebhook(requestContext(c), spec, &problems)
	if len(problems) > 0 {
		return badRequest(problems...)
	}
	if err := a.dropBlocked(requestContext(c), spec, given, ignoreInvalid, &invalid); err != nil {
		return err
	}
	var err error
	if spec.ZeroDataRetention, err = zeroDataRetention(req.ZeroDataRetention, team, &spec.Scrape); err != nil {
		return err
	}
	if err := a.modelGate(&spec.Scrape, ""); err != nil {
		return err
	}
	body, err := a.createJob(c, team, spec, spec.URLs[0], "batch_scrape")
	if err != nil {
		return err
	}
	if ignoreInvalid {
		body["invalidURLs"] = invalid
	}
	return c.JSON(body)
}

// checkWebhook refuses a job whose webhook target the network guard
// blocks (it would never be delivered), naming the field that gave it.
// Nothing is resolved for a request refused anyway.
func (a *API) checkWebhook(ctx context.Context, spec *crawl.Spec, problems *[]FieldProblem) {
	if len(*problems) > 0 {
		return
	}
	if blocked := a.Crawler.CheckWebhook(ctx, spec.Webhook); blocked != nil {
		f := spec.Webhook.URLField()
		*problems = append(*problems, fieldError(f, "%s is refused by the network guard: %s", f, blocked.Error()))
	}
}

// batchURL is one of a batch's URLs as the request gave it.
type batchURL struct{ name, raw string }

// dropBlocked applies the network guard to a batch's URLs (given holds
// each as the request gave it). A blocked URL is an invalid one: skipped
// and listed in invalid when ignoreInvalid, else the batch is a 400 naming
// it. A batch whose every URL is blocked is a 403 URL_BLOCKED.
func (a *API) dropBlocked(ctx context.Context, spec *crawl.Spec, given []batchURL, ignoreInvalid bool, invalid *[]string) error {
	var kept, refused []string
	var first error
	for i, blocked := range a.Crawler.Blocked(ctx, spec.URLs) {
		if blocked == nil {
			kept = append(kept, spec.URLs[i])
			continue
		}
		if first == nil {
			first = blocked
		}
		*invalid = append(*invalid, given[i].raw)
		refused = append(refused, fmt.Sprintf("%s %q (%s)", given[i].name, given[i].raw, blocked.Reason))
	}
	switch {
	case first == nil:
		return nil
	case len(kept) == 0:
		return first
	case !ignoreInvalid:
		return badRequest(fieldError("urls", "urls holds URLs the network guard refuses (private networks are not reachable unless the operator sets TRAWLER_ALLOW_PRIVATE_NETWORKS=true): %s", strings.Join(refused, ", ")))
	}
	spec.URLs = kept
	return nil
}

// jobStatus answers GET /v2/crawl/{id} and GET /v2/batch/scrape/{id}.
func (a *API) jobStatus(kind string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		var problems []FieldProblem
		skip := queryInt(c, "skip", 0, 0, 1<<30, &problems)
		limit := queryInt(c, "limit", 100, 1, 1000, &problems)
		if len(problems) > 0 {
			return badRequest(problems...)
		}
		st, err := a.jobPage(requestContext(c), teamOf(c).ID, kind, c.Params("id"), skip, limit)
		if err != nil {
			return err
		}
		body := fiber.Map{"success": true, "status": st.Status, "total": st.Total, "completed": st.Completed,
			"creditsUsed": st.CreditsUsed, "expiresAt": isoTime(st.ExpiresAt), "createdAt": isoTime(st.CreatedAt),
			"data": st.Data}
		if !st.CompletedAt.IsZero() {
			body["completedAt"] = isoTime(st.CompletedAt)
		}
		// As Firecrawl's: next is set whenever more documents are coming,
		// after this page or, while the job runs, once it has them.
		if st.More || st.Status == crawl.StatusScraping {
			body["next"] = fmt.Sprintf("%s%s?skip=%d&limit=%d", a.baseURL(c), c.Path(), skip+len(st.Data), limit)
		}
		if st.Warning != "" {
			body["warning"] = st.Warning
		}
		return c.JSON(body)
	}
}

// pageWait is how long a page past the documents a running job has so far
// waits for the next one.
const pageWait = time.Second

// jobPage is the job's status with the page of its documents from skip. A
// page past the documents a running job has so far waits up to pageWait
// for one: the SDKs follow next until a job ends, and would otherwise ask
// again at once, over and over.
func (a *API) jobPage(ctx context.Context, team, kind, id string, skip, limit int) (*crawl.Status, error) {
	st, err := a.Crawler.Status(ctx, team, kind, id, skip, limit)
	if err != nil || skip == 0 || len(st.Data) > 0 || st.Status != crawl.StatusScraping {
		return st, err
	}
	wctx, cancel := context.WithTimeout(ctx, pageWait)
	defer cancel()
	a.Crawler.AwaitDocument(wctx, team, kind, id, skip)
	return a.Crawler.Status(ctx, team, kind, id, skip, limit)
}

func queryInt(c *fiber.Ctx, name string, def, lo, hi int, problems *[]FieldProblem) int {
	raw := c.Query(name)
	if raw == "" {
		return def
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < lo || n > hi {
		*problems = append(*problems, fieldError(name, "%s must be a whole number between %d and %d", name, lo, hi))
		return def
	}
	return n
}

func (a *API) cancelJob(kind string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		st, err := a.Crawler.Cancel(requestContext(c), teamOf(c).ID, kind, c.Params("id"))
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{"success": true, "status": st})
	}
}

func (a *API) jobErrors(kind string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		e, err := a.Crawler.Errors(requestContext(c), teamOf(c).ID, kind, c.Params("id"))
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{"success": true, "errors": e.Errors, "robotsBlocked": e.RobotsBlocked})
	}
}

func (a *API) activeCrawls(c *fiber.Ctx) error {
	list, err := a.Crawler.Active(requestContext(c), teamOf(c).ID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"success": true, "crawls": list})
}

// paramsPreviewRequest is POST /v2/crawl/params-preview.
type paramsPreviewRequest struct {
	URL    *string `json:"url"`
	Prompt *string `json:"prompt"`
	clientTags
}

// mapRequest is POST /v2/map.
type mapRequest struct {
	URL                   *string          `json:"url"`
	Search                *string          `json:"search"`
	Sitemap               *string          `json:"sitemap"`
	IncludeSubdomains     *bool            `json:"includeSubdomains"`
	IgnoreQueryParameters *bool            `json:"ignoreQueryParameters"`
	IgnoreCache           *bool            `json:"ignoreCache"`
	Limit                 *int             `json:"limit"`
	Timeout               *int             `json:"timeout"`
	Location              *locationRequest `json:"location"`
	clientTags
}

func (a *API) mapSite(c *fiber.Ctx) error {
	var req mapRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	team := teamOf(c)
	var problems []FieldProblem
	m := crawl.MapRequest{Sitemap: "include", IncludeSubdomains: true, IgnoreQueryParameters: true}
	m.URL = requiredURL(&problems, "url", req.URL)
	if req.Search != nil {
		if len(*req.Search) > 500 {
			problems = append(problems, fieldError("search", "search must be at most 500 characters"))
		}
		m.Search = *req.Search
	}
	if req.Sitemap != nil {
		switch *req.Sitemap {
		case "skip", "include", "only":
			m.Sitemap = *req.Sitemap
		default:
			problems = append(problems, fieldError("sitemap", "sitemap must be skip, include or only, got %q", *req.Sitemap))
		}
	}
	if req.IncludeSubdomains != nil {
		m.IncludeSubdomains = *req.IncludeSubdomains
	}
	if req.IgnoreQueryParameters != nil {
		m.IgnoreQueryParameters = *req.IgnoreQueryParameters
	}
	m.Limit = intRange(&problems, "limit", req.Limit, 1, 100000, 5000)
	if req.Timeout != nil {
		m.Timeout = time.Duration(intRange(&problems, "timeout", req.Timeout, 1000, 300000, 0)) * time.Millisecond
	}
	if req.Location != nil {
		// The scrape options' rules apply to location.
		so := scrapeOptionsRequest{Location: req.Location}
		m.Location = so.options("", team, &problems).Location
	}
	if len(problems) > 0 {
		return badRequest(problems...)
	}
	links, err := a.Crawler.Map(requestContext(c), team.ID, team.Concurrency, m)
	if errors.Is(err, crawl.ErrMapTimeout) {
		return &Error{Status: fiber.StatusRequestTimeout, Code: "MAP_TIMEOUT", Message: "Map timed out"}
	}
	if err != nil {
		return err
	}
	id := uuid.NewString()
	a.recordActivity(team.ID, id, "map", m.URL)
	return c.JSON(fiber.Map{"success": true, "id": id, "links": links})
}
