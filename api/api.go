// Package api owns Trawler's REST API (Fiber v2): routes, authentication,
// strict request decoding and validation, the mapping from errors to HTTP
// answers, and the response shapes of spec/web-content-acquisition-v2.md.
package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"runtime"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/trawler-dev/trawler/crawl"
	"github.com/trawler-dev/trawler/docsearch"
	"github.com/trawler-dev/trawler/execute"
	"github.com/trawler-dev/trawler/extract"
	"github.com/trawler-dev/trawler/model"
	"github.com/trawler-dev/trawler/monitor"
	"github.com/trawler-dev/trawler/profiles"
	"github.com/trawler-dev/trawler/recording"
	"github.com/trawler-dev/trawler/scrape"
	"github.com/trawler-dev/trawler/search"
	"github.com/trawler-dev/trawler/sessions"
	"github.com/trawler-dev/trawler/store"
	"github.com/trawler-dev/trawler/teams"
	"github.com/trawler-dev/trawler/wire"
)

// Deps are what the API serves.
type Deps struct {
	Teams    *teams.Registry
	Sessions *sessions.Manager
	Scraper  *scrape.Service
	Crawler  *crawl.Service
	Store    *store.Store
	URLs     wire.PublicURL
	Log      *slog.Logger
	// Profiles opens the teams' browser profiles.
	Profiles *profiles.Opener
	// Search answers POST /v2/search.
	Search *search.Service
	// Model is the language model (nil: none configured).
	Model *model.Client
	// Extract runs extract jobs.
	Extract *extract.Service
	// Docs answers POST /v2/support/docs-search from Trawler's documentation.
	Docs *docsearch.Index
	// Execute runs the node and bash code of POST /v2/browser/{id}/execute.
	Execute *execute.Service
	// Recordings keeps the recordings of recorded sessions (nil: sessions
	// are not recorded).
	Recordings *recording.Archive
	// Monitors runs the monitors' checks.
	Monitors *monitor.Service
	// MonitorMinInterval is the shortest interval a monitor's schedule
	// may have.
	MonitorMinInterval time.Duration
	// Browsers is how the service's browsers are confined, for /healthz.
	Browsers BrowserHealth
}

// BrowserHealth is the browsers part of GET /healthz: whether each browser
// is confined (browsers.Confinement) and so whether sessions are served.
type BrowserHealth struct {
	Runtime  string `json:"runtime"`
	Confined bool   `json:"confined"`
	Sandbox  bool   `json:"sandbox"`
	// Sessions: POST /v2/browser is served (refused on a host that cannot
	// confine browsers, unless the operator allows it).
	Sessions bool   `json:"sessions"`
	Detail   string `json:"detail"`
}

// API is the Fiber application and what it needs.
type API struct {
	Deps
	log *slog.Logger
	app *fiber.App
	// parseSlots bounds the uploads read and parsed at once: each may hold
	// 50 MB and several times that while it is parsed.
	parseSlots chan struct{}
}

// BodyLimit is the largest JSON body accepted.
const BodyLimit = 10 << 20

// New builds the application.
func New(d Deps) *API {
	a := &API{Deps: d, log: d.Log, parseSlots: make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))}
	a.app = fiber.New(fiber.Config{
		AppName:               "trawler",
		BodyLimit:             BodyLimit,
		DisableStartupMessage: true,
		ErrorHandler:          a.errorHandler,
	})
	// ok says the service answers; browsers and store say what it can do.
	a.app.Get("/healthz", func(c *fiber.Ctx) error {
		return c.JSON(fiber.Map{"ok": true, "browsers": a.Browsers, "store": a.Store.Health(requestContext(c))})
	})
	// Each route names the query parameters it takes; any other is a 400.
	v2 := a.app.Group("/v2", a.authenticate)
	v2.Post("/browser", query(), a.billable, a.createBrowser)
	v2.Get("/browser", query("status"), a.listBrowsers)
	v2.Get("/browser/:id", query(), a.getBrowser)
	v2.Delete("/browser/:id", query(), a.deleteBrowser)
	v2.Post("/browser/:id/execute", query(), a.executeBrowser)
	v2.Get("/browser/:id/replay", query("cursor"), a.getReplay)
	v2.Get("/browser/:id/replay/:pageId", query("cursor"), a.getReplay)
	v2.Get("/team/activity", query("endpoint", "limit", "cursor"), a.listActivity)
	v2.Get("/team/token-usage", query(), a.tokenUsage)
	v2.Get("/team/credit-usage", query(), a.creditUsage)
	v2.Get("/team/credit-usage/historical", query("byApiKey"), a.creditHistory)
	v2.Get("/team/queue-status", query(), a.queueStatus)
	v2.Get("/concurrency-check", query(), a.concurrencyCheck)
	v2.Post("/scrape", query(), a.billable, a.scrape)
	v2.Get("/scrape/:id", query(), a.getScrape)
	v2.Post("/crawl", query(), a.billable, a.startCrawl)
	v2.Post("/crawl/params-preview", query(), a.paramsPreview)
	v2.Get("/crawl/active", query(), a.activeCrawls)
	v2.Get("/crawl/ongoing", query(), a.activeCrawls) // Firecrawl v2 serves both names
	v2.Get("/crawl/:id", query("skip", "limit"), a.jobStatus(crawl.KindCrawl))
	v2.Delete("/crawl/:id", query(), a.cancelJob(crawl.KindCrawl))
	v2.Get("/crawl/:id/errors", query(), a.jobErrors(crawl.KindCrawl))
	v2.Post("/batch/scrape", query(), a.billable, a.startBatch)
	v2.Get("/batch/scrape/:id", query("skip", "limit"), a.jobStatus(crawl.KindBatch))
	v2.Delete("/batch/scrape/:id", query(), a.cancelJob(crawl.KindBatch))
	v2.Get("/batch/scrape/:id/errors", query(), a.jobErrors(crawl.KindBatch))
	v2.Post("/extract", query(), a.billable, a.startExtract)
	v2.Get("/extract/:id", query(), a.getExtract)
	v2.Post("/map", query(), a.mapSite)
	v2.Post("/search", query(), a.billable, a.search)
	v2.Get("/profiles", query(), a.listProfiles)
	v2.Delete("/profiles/:name", query(), a.deleteProfile)
	v2.Post("/support/docs-search", query(), a.docsSearch)
	v2.Post("/monitor", query(), a.billable, a.createMonitor)
	v2.Get("/monitor", query("limit", "offset"), a.listMonitors)
	v2.Get("/monitor/:id", query(), a.getMonitor)
	v2.Patch("/monitor/:id", query(), a.updateMonitor)
	v2.Delete("/monitor/:id", query(), a.deleteMonitor)
	v2.Post("/monitor/:id/run", query(), a.billable, a.runMonitor)
	v2.Get("/monitor/:id/checks", query("limit", "offset", "status"), a.listMonitorChecks)
	v2.Get("/monitor/:id/checks/:checkId", query("limit", "skip", "status"), a.getMonitorCheck)
	return a
}

// query refuses, with a 400 naming them, query parameters other than
// names, and any given twice. origin and integration, which clients inject,
// are accepted everywhere, as in bodies.
func query(names ...string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if problems := queryProblems(string(c.Request().URI().QueryString()), names...); len(problems) > 0 {
			return badRequest(problems...)
		}
		return c.Next()
	}
}

// queryProblems checks a raw query string against the parameters an
// endpoint takes (see query).
func queryProblems(raw string, names ...string) []FieldProblem {
	if raw == "" {
		return nil
	}
	allowed := map[string]bool{"origin": true, "integration": true}
	for _, n := range names {
		allowed[n] = true
	}
	takes := "no query parameters"
	if len(names) > 0 {
		takes = "only " + strings.Join(names, ", ")
	}
	var problems []FieldProblem
	seen := map[string]int{}
	for pair := range strings.SplitSeq(raw, "&") {
		if pair == "" {
			continue
		}
		enc, _, _ := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(enc)
		if err != nil {
			name = enc
		}
		name = wire.Truncate(name, 100)
		seen[name]++
		switch {
		case seen[name] == 1 && !allowed[name]:
			problems = append(problems, FieldProblem{Path: []string{name},
				Message: fmt.Sprintf("unknown query parameter %q: this endpoint takes %s", name, takes)})
		case seen[name] == 2 && allowed[name]:
			problems = append(problems, FieldProblem{Path: []string{name},
				Message: fmt.Sprintf("query parameter %q is given more than once", name)})
		}
	}
	return problems
}

const teamKey = "trawler.team"

func (a *API) authenticate(c *fiber.Ctx) error {
	team, err := a.teamFor(c.Get(fiber.HeaderAuthorization))
	if err != nil {
		return err
	}
	c.Locals(teamKey, team)
	return c.Next()
}

// teamFor authenticates an Authorization header.
func (a *API) teamFor(auth string) (teams.Team, error) {
	key := ""
	if scheme, rest, ok := strings.Cut(auth, " "); ok && strings.EqualFold(scheme, "Bearer") {
		key = strings.TrimSpace(rest)
	}
	if auth != "" && key == "" && !a.Teams.Local() {
		return teams.Team{}, &Error{Status: fiber.StatusUnauthorized, Code: "UNAUTHORIZED", Message: "Authorization header must be \"Bearer <API key>\""}
	}
	team, ok := a.Teams.Authenticate(key)
	if !ok {
		if key == "" {
			return teams.Team{}, &Error{Status: fiber.StatusUnauthorized, Code: "UNAUTHORIZED", Message: "missing API key: send Authorization: Bearer <API key>"}
		}
		return teams.Team{}, &Error{Status: fiber.StatusUnauthorized, Code: "UNAUTHORIZED", Message: "invalid API key"}
	}
	return team, nil
}

func teamOf(c *fiber.Ctx) teams.Team { return c.Locals(teamKey).(teams.Team) }

func (a *API) baseURL(c *fiber.Ctx) string {
	return a.URLs.For(wire.Request{
		RemoteAddr:     c.Context().RemoteAddr().String(),
		TLS:            c.Protocol() == "https",
		Host:           string(c.Request().Host()),
		ForwardedProto: c.Get(fiber.HeaderXForwardedProto),
		ForwardedHost:  c.Get(fiber.HeaderXForwardedHost),
	})
}

// requestContext is the context of a Fiber handler's work:
// c.UserContext(), which nothing sets, so a context that never ends. The
// Fiber app is served through Fiber's net/http adaptor, which hands a
// handler neither the net/http request's context nor word that its client
// hung up (the answer is written once the handler returns). A handler's
// work therefore runs to its end, bounded by its own limits (a scrape's
// timeout, the pool's queue wait); what must end sooner takes a timeout of
// its own.
func requestContext(c *fiber.Ctx) context.Context { return c.UserContext() }

// recordActivity appends to the team's activity log; a failure is logged,
// never returned, since the job itself succeeded. The write has a context
// of its own: the work it records was done, whether or not its client
// still waits (POST /v2/parse's request context ends when it hangs up).
func (a *API) recordActivity(team, id, endpoint, target string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := a.Store.AddActivity(ctx, store.Activity{ID: id, Team: team, Endpoint: endpoint, APIVersion: "v2",
		CreatedAt: time.Now().UTC(), Target: target})
	if err != nil {
		a.log.Error("recording activity", "err", err)
	}
}

func isoTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}
