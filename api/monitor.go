package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/trawler-dev/trawler/crawl"
	"github.com/trawler-dev/trawler/monitor"
	"github.com/trawler-dev/trawler/store"
	"github.com/trawler-dev/trawler/teams"
	"github.com/trawler-dev/trawler/webhook"
)

// monitorRequest is POST /v2/monitor and PATCH /v2/monitor/{id}, in
// Firecrawl's shape. Raw members tell null (PATCH: remove) from absent.
type monitorRequest struct {
	Name              *string           `json:"name"`
	Schedule          json.RawMessage   `json:"schedule"`
	Webhook           json.RawMessage   `json:"webhook"`
	Notification      json.RawMessage   `json:"notification"`
	Targets           []json.RawMessage `json:"targets"`
	RetentionDays     *int              `json:"retentionDays"`
	Goal              json.RawMessage   `json:"goal"`
	JudgeEnabled      *bool             `json:"judgeEnabled"`
	Status            *string           `json:"status"`
	ZeroDataRetention *bool             `json:"zeroDataRetention"`
	clientTags
}

// monitorTarget is one of a monitor's targets as sent.
type monitorTarget struct {
	ID             *string         `json:"id"`
	Type           *string         `json:"type"`
	URLs           []string        `json:"urls"`
	URL            *string         `json:"url"`
	CrawlOptions   json.RawMessage `json:"crawlOptions"`
	ScrapeOptions  json.RawMessage `json:"scrapeOptions"`
	Queries        json.RawMessage `json:"queries"`
	SearchWindow   json.RawMessage `json:"searchWindow"`
	MaxResults     json.RawMessage `json:"maxResults"`
	IncludeDomains json.RawMessage `json:"includeDomains"`
	ExcludeDomains json.RawMessage `json:"excludeDomains"`
}

// Bounds of a monitor.
const (
	maxMonitorTargets = 50
	maxMonitorURLs    = 1000
	maxMonitorCrawl   = 10000
)

var monitorEvents = []string{"monitor.page", "monitor.check.completed"}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// monitorDefinition validates a monitor request into its definition and
// schedule; every problem names its field. An *Error is returned for what
// is not a field's fault (zero data retention, no model).
func (a *API) monitorDefinition(c *fiber.Ctx, req *monitorRequest, team teams.Team) (string, monitor.Definition, monitor.Schedule, error) {
	var problems []FieldProblem
	var def monitor.Definition
	name := ""
	switch {
	case req.Name == nil:
		problems = append(problems, fieldError("name", "name is required"))
	case strings.TrimSpace(*req.Name) == "" || len(*req.Name) > 256:
		problems = append(problems, fieldError("name", "name must be 1 to 256 characters"))
	default:
		name = *req.Name
	}
	var sched monitor.Schedule
	if isNull(req.Schedule) {
		problems = append(problems, fieldError("schedule", "schedule is required: {\"cron\": \"*/30 * * * *\"} or {\"text\": \"every 30 minutes\"}"))
	} else {
		var spec monitor.ScheduleSpec
		if err := decodeJSON(req.Schedule, &spec, "schedule."); err != nil {
			problems = append(problems, problemsOf(err, "schedule")...)
		} else {
			var msg string
			if sched, msg = monitor.ParseSchedule(spec, a.MonitorMinInterval); msg != "" {
				path, _, _ := strings.Cut(msg, " ")
				problems = append(problems, fieldError(strings.TrimSuffix(path, ":"), "%s", msg))
			}
			def.Schedule = monitor.ScheduleSpec{Cron: sched.Cron, Timezone: sched.Timezone}
		}
	}
	switch {
	case req.Targets == nil:
		problems = append(problems, fieldError("targets", "targets is required: at least one {\"type\": \"scrape\", \"urls\": [...]} or {\"type\": \"crawl\", \"url\": ...}"))
	case len(req.Targets) == 0 || len(req.Targets) > maxMonitorTargets:
		problems = append(problems, fieldError("targets", "targets must hold 1 to %d targets", maxMonitorTargets))
	default:
		ids := map[string]bool{}
		for i, raw := range req.Targets {
			t, ps, err := a.monitorTargetOf(c, raw, fmt.Sprintf("targets[%d]", i), team)
			if err != nil {
				return "", def, sched, err
			}
			problems = append(problems, ps...)
			if ids[t.ID] {
				problems = append(problems, fieldError(fmt.Sprintf("targets[%d].id", i), "targets[%d].id %q is another target's", i, t.ID))
			}
			ids[t.ID] = true
			def.Targets = append(def.Targets, t)
		}
	}
	if !isNull(req.Webhook) {
		def.Webhook = a.monitorWebhook(c, req.Webhook, &problems)
	}
	if !isNull(req.Notification) {
		problems = append(problems, notificationProblems(req.Notification)...)
	}
	def.RetentionDays = intRange(&problems, "retentionDays", req.RetentionDays, 1, 365, 30)
	if !isNull(req.Goal) {
		if err := json.Unmarshal(req.Goal, &def.Goal); err != nil {
			problems = append(problems, fieldError("goal", "goal must be a string or null"))
		} else if len(def.Goal) > 2000 {
			problems = append(problems, fieldError("goal", "goal must be at most 2000 characters"))
		}
	}
	def.Goal = strings.TrimSpace(def.Goal)
	def.JudgeEnabled = def.Goal != ""
	if req.JudgeEnabled != nil {
		def.JudgeEnabled = *req.JudgeEnabled
		if def.JudgeEnabled && def.Goal == "" {
			problems = append(problems, fieldError("judgeEnabled", "judgeEnabled needs a goal to judge changed pages against"))
		}
	}
	if len(problems) > 0 {
		return "", def, sched, badRequest(problems...)
	}
	if def.JudgeEnabled && a.Model == nil {
		return "", def, sched, modelNotConfigured("goal", "goal")
	}
	return name, def, sched, nil
}

// problemsOf is the field problems of a decoding error, or one naming
// field.
func problemsOf(err error, field string) []FieldProblem {
	var e *Error
	if errors.As(err, &e) {
		if ps, ok := e.Details.([]FieldProblem); ok {
			return ps
		}
	}
	return []FieldProblem{fieldError(field, "%s: %v", field, err)}
}

// notificationProblems refuses email notification: Trawler has no mail
// server to send through, and a monitor that seemed to notify by email
// but never did would lose every change it found.
func notificationProblems(raw json.RawMessage) []FieldProblem {
	var n struct {
		Email json.RawMessage `json:"email"`
	}
	if err := decodeJSON(raw, &n, "notification."); err != nil {
		return problemsOf(err, "notification")
	}
	if isNull(n.Email) {
		return nil
	}
	var email struct {
		Enabled      *bool    `json:"enabled"`
		Recipients   []string `json:"recipients"`
		IncludeDiffs *bool    `json:"includeDiffs"`
	}
	if err := decodeJSON(n.Email, &email, "notification.email."); err != nil {
		return problemsOf(err, "notification.email")
	}
	if email.Enabled != nil && !*email.Enabled && len(email.Recipients) == 0 {
		return nil
	}
	return []FieldProblem{fieldError("notification.email", "notification.email is not supported: Trawler sends no email (it has no mail server to send through); use webhook, whose monitor.page and monitor.check.completed events carry the changes")}
}

// monitorWebhook decodes a monitor's webhook: a job webhook's members,
// with the monitor's events.
func (a *API) monitorWebhook(c *fiber.Ctx, raw json.RawMessage, problems *[]FieldProblem) *webhook.Spec {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		*problems = append(*problems, fieldError("webhook", "webhook must be an object {\"url\": ..., \"events\": [...]}"))
		return nil
	}
	var events []string
	if ev, ok := obj["events"]; ok {
		delete(obj, "events")
		if !isNull(ev) {
			if err := json.Unmarshal(ev, &events); err != nil {
				*problems = append(*problems, fieldError("webhook.events", "webhook.events must be an array of strings"))
			}
		}
		for i, e := range events {
			if !slices.Contains(monitorEvents, e) {
				*problems = append(*problems, fieldError(fmt.Sprintf("webhook.events[%d]", i),
					"webhook.events[%d] must be one of %s, got %q", i, strings.Join(monitorEvents, ", "), e))
			}
		}
	}
	rest, _ := json.Marshal(obj)
	spec := decodeWebhook(rest, problems)
	if spec == nil {
		return nil
	}
	spec.Events = events
	js := &crawl.Spec{Webhook: spec}
	a.checkWebhook(requestContext(c), js, problems)
	return spec
}

// monitorTargetOf validates one target at path into its definition and
// the job that takes its pages.
func (a *API) monitorTargetOf(c *fiber.Ctx, raw json.RawMessage, path string, team teams.Team) (monitor.Target, []FieldProblem, error) {
	var problems []FieldProblem
	var req monitorTarget
	var t monitor.Target
	if err := decodeJSON(raw, &req, path+"."); err != nil {
		return t, problemsOf(err, path), nil
	}
	t.ID = uuid.NewString()
	if req.ID != nil {
		if *req.ID == "" || len(*req.ID) > 64 {
			problems = append(problems, fieldError(path+".id", "%s.id must be 1 to 64 characters", path))
		}
		t.ID = *req.ID
	}
	typ := ""
	if req.Type != nil {
		typ = *req.Type
	}
	t.Type = typ
	scrapeOpts := func(prefix string) crawl.Spec {
		spec := crawl.Spec{Scrape: a.jobScrapeOptions(req.ScrapeOptions, prefix, team, &problems)}
		if !isNull(req.ScrapeOptions) {
			t.ScrapeOptions, spec.ScrapeOptions = req.ScrapeOptions, req.ScrapeOptions
		}
		// Every check takes the live page, whatever maxAge says: the
		// point is what changed since the last check.
		spec.Scrape.MaxAge = 0
		if !spec.Scrape.Has("markdown") {
			md, _ := checkFormatName("markdown")
			spec.Scrape.Formats = append(spec.Scrape.Formats, md)
		}
		return spec
	}
	switch typ {
	case "scrape":
		for _, m := range []struct {
			raw  json.RawMessage
			name string
		}{{req.CrawlOptions, "crawlOptions"}} {
			if !isNull(m.raw) {
				problems = append(problems, fieldError(path+"."+m.name, "%s.%s is a crawl target's", path, m.name))
			}
		}
		if req.URL != nil {
			problems = append(problems, fieldError(path+".url", "%s.url is a crawl target's; a scrape target has urls", path))
		}
		switch {
		case len(req.URLs) == 0:
			problems = append(problems, fieldError(path+".urls", "%s.urls must hold at least one URL", path))
		case len(req.URLs) > maxMonitorURLs:
			problems = append(problems, fieldError(path+".urls", "%s.urls holds %d URLs; a target may hold at most %d", path, len(req.URLs), maxMonitorURLs))
		}
		spec := scrapeOpts(path + ".scrapeOptions.")
		spec.Kind = crawl.KindBatch
		for i, u := range req.URLs {
			v, p := checkURL(fmt.Sprintf("%s.urls[%d]", path, i), u)
			if p != nil {
				problems = append(problems, *p)
				continue
			}
			spec.URLs = append(spec.URLs, v)
		}
		t.URLs, t.Job = spec.URLs, &spec
	case "crawl":
		if len(req.URLs) > 0 {
			problems = append(problems, fieldError(path+".urls", "%s.urls is a scrape target's; a crawl target has url", path))
		}
		var co crawlOptions
		if !isNull(req.CrawlOptions) {
			if err := decodeJSON(req.CrawlOptions, &co, path+".crawlOptions."); err != nil {
				problems = append(problems, problemsOf(err, path+".crawlOptions")...)
			}
			t.CrawlOptions = req.CrawlOptions
		}
		if co.Limit == nil {
			def := 100
			co.Limit = &def
		}
		cr := crawlRequest{URL: req.URL, crawlOptions: co}
		spec, ps := a.crawlSpec(requestContext(c), &cr, team)
		for _, p := range ps {
			if p.Path[0] != "url" {
				p.Path = append([]string{"crawlOptions"}, p.Path...)
			}
			p.Path[0] = path + "." + p.Path[0]
			problems = append(problems, p)
		}
		if spec.Crawl.Limit > maxMonitorCrawl {
			problems = append(problems, fieldError(path+".crawlOptions.limit", "%s.crawlOptions.limit must be at most %d", path, maxMonitorCrawl))
		}
		sc := scrapeOpts(path + ".scrapeOptions.")
		spec.Scrape, spec.ScrapeOptions = sc.Scrape, sc.ScrapeOptions
		if (spec.Crawl.IgnoreRobotsTxt || spec.Crawl.RobotsUserAgent != "") && !team.Features.IgnoreRobotsTxt {
			return t, nil, featureError(path + ".crawlOptions.ignoreRobotsTxt")
		}
		t.URL, t.Job = spec.URL, spec
	case "search":
		problems = append(problems, fieldError(path+".type", "%s.type search is not supported: Trawler's monitors watch scrape and crawl targets (a search target needs a web search provider's recency filter, which the configured providers do not give)", path))
		return t, problems, nil
	case "":
		problems = append(problems, fieldError(path+".type", "%s.type is required: scrape or crawl", path))
		return t, problems, nil
	default:
		problems = append(problems, fieldError(path+".type", "%s.type must be scrape or crawl, got %q", path, typ))
		return t, problems, nil
	}
	for _, m := range []struct {
		raw  json.RawMessage
		name string
	}{{req.Queries, "queries"}, {req.SearchWindow, "searchWindow"}, {req.MaxResults, "maxResults"},
		{req.IncludeDomains, "includeDomains"}, {req.ExcludeDomains, "excludeDomains"}} {
		if !isNull(m.raw) {
			problems = append(problems, fieldError(path+"."+m.name, "%s.%s is a search target's", path, m.name))
		}
	}
	if len(problems) == 0 {
		if t.Job.Scrape.ZeroDataRetention {
			return t, nil, monitorZDR(path + ".scrapeOptions.lockdown")
		}
		if err := a.modelGate(&t.Job.Scrape, path+".scrapeOptions."); err != nil {
			return t, nil, err
		}
	}
	return t, problems, nil
}

// monitorZDR refuses zero data retention: a monitor keeps every page's
// last version to compare the next check with.
func monitorZDR(field string) *Error {
	return &Error{Status: fiber.StatusForbidden, Code: "ZERO_DATA_RETENTION",
		Message: field + ": monitors are not available under zero data retention: a monitor keeps each page's last version to compare the next check with",
		Details: []FieldProblem{fieldError(field, "not available for monitors")}}
}

func (a *API) createMonitor(c *fiber.Ctx) error {
	var req monitorRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	team := teamOf(c)
	if req.ZeroDataRetention != nil && *req.ZeroDataRetention {
		return monitorZDR("zeroDataRetention")
	}
	if req.Status != nil {
		return badRequest(fieldError("status", "status is set with PATCH /v2/monitor/{id}; a new monitor is active"))
	}
	name, def, sched, err := a.monitorDefinition(c, &req, team)
	if err != nil {
		return err
	}
	spec, err := json.Marshal(def)
	if err != nil {
		return err
	}
	now := time.Now()
	m := store.Monitor{ID: uuid.Must(uuid.NewV7()).String(), Team: team.ID, Name: name, Status: "active", Spec: spec,
		NextRunAt: sched.Next(now), CreatedAt: now, UpdatedAt: now}
	if err := a.Store.PutMonitor(requestContext(c), m); err != nil {
		return err
	}
	a.Monitors.Wake()
	a.recordActivity(team.ID, m.ID, "monitor", targetOf(def))
	return a.sendMonitor(c, m)
}

func targetOf(def monitor.Definition) string {
	if len(def.Targets) == 0 {
		return ""
	}
	if t := def.Targets[0]; t.Type == "crawl" {
		return t.URL
	} else if len(t.URLs) > 0 {
		return t.URLs[0]
	}
	return ""
}

func (a *API) updateMonitor(c *fiber.Ctx) error {
	var req monitorRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	team := teamOf(c)
	m, err := a.monitorOf(c)
	if err != nil {
		return err
	}
	if req.ZeroDataRetention != nil && *req.ZeroDataRetention {
		return monitorZDR("zeroDataRetention")
	}
	old, _, err := monitor.Decode(m)
	if err != nil {
		return err
	}
	// What the request leaves out stays as it was: the merged request is
	// validated as a new one would be.
	scheduleChanged := !isNull(req.Schedule)
	if req.Name == nil {
		req.Name = &m.Name
	}
	if req.Schedule == nil {
		req.Schedule, _ = json.Marshal(old.Schedule)
	}
	if req.Targets == nil {
		for _, t := range old.Targets {
			t.Job = nil
			raw, _ := json.Marshal(t)
			var obj map[string]json.RawMessage
			json.Unmarshal(raw, &obj)
			delete(obj, "job")
			raw, _ = json.Marshal(obj)
			req.Targets = append(req.Targets, raw)
		}
	}
	if req.Webhook == nil && old.Webhook != nil {
		req.Webhook, _ = json.Marshal(old.Webhook)
	}
	if req.RetentionDays == nil {
		req.RetentionDays = &old.RetentionDays
	}
	if req.Goal == nil {
		req.Goal, _ = json.Marshal(old.Goal)
		if req.JudgeEnabled == nil {
			req.JudgeEnabled = &old.JudgeEnabled
		}
	}
	status := m.Status
	if req.Status != nil {
		if *req.Status != "active" && *req.Status != "paused" {
			return badRequest(fieldError("status", "status must be active or paused, got %q", *req.Status))
		}
		status = *req.Status
	}
	req.Status = nil
	name, def, sched, err := a.monitorDefinition(c, &req, team)
	if err != nil {
		return err
	}
	spec, err := json.Marshal(def)
	if err != nil {
		return err
	}
	now := time.Now()
	switch {
	case status == "paused":
		m.NextRunAt = time.Time{}
	case scheduleChanged || m.Status != status || m.NextRunAt.IsZero():
		m.NextRunAt, m.Failures = sched.Next(now), 0
	}
	m.Name, m.Status, m.Spec, m.UpdatedAt = name, status, spec, now
	if err := a.Store.UpdateMonitorSpec(requestContext(c), m); err != nil {
		return err
	}
	a.Monitors.Wake()
	return a.sendMonitor(c, m)
}

// monitorOf reads the monitor of the route's id for the caller's team.
func (a *API) monitorOf(c *fiber.Ctx) (store.Monitor, error) {
	m, err := a.Store.MonitorByID(requestContext(c), teamOf(c).ID, c.Params("id"))
	if errors.Is(err, store.ErrNotFound) {
		return m, &Error{Status: fiber.StatusNotFound, Code: "NOT_FOUND", Message: "monitor not found"}
	}
	return m, err
}

func (a *API) getMonitor(c *fiber.Ctx) error {
	m, err := a.monitorOf(c)
	if err != nil {
		return err
	}
	return a.sendMonitor(c, m)
}

func (a *API) sendMonitor(c *fiber.Ctx, m store.Monitor) error {
	v, err := monitorView(m)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"success": true, "data": v})
}

func (a *API) listMonitors(c *fiber.Ctx) error {
	var problems []FieldProblem
	limit := queryInt(c, "limit", 25, 1, 100, &problems)
	offset := queryInt(c, "offset", 0, 0, 1<<30, &problems)
	if len(problems) > 0 {
		return badRequest(problems...)
	}
	ms, err := a.Store.Monitors(requestContext(c), teamOf(c).ID, offset, limit)
	if err != nil {
		return err
	}
	out := make([]fiber.Map, 0, len(ms))
	for _, m := range ms {
		v, err := monitorView(m)
		if err != nil {
			return err
		}
		out = append(out, v)
	}
	return c.JSON(fiber.Map{"success": true, "data": out})
}

func (a *API) deleteMonitor(c *fiber.Ctx) error {
	err := a.Store.DeleteMonitor(requestContext(c), teamOf(c).ID, c.Params("id"))
	if errors.Is(err, store.ErrNotFound) {
		return &Error{Status: fiber.StatusNotFound, Code: "NOT_FOUND", Message: "monitor not found"}
	}
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"success": true})
}

func (a *API) runMonitor(c *fiber.Ctx) error {
	m, err := a.monitorOf(c)
	if err != nil {
		return err
	}
	if err := a.creditsExhausted(requestContext(c), teamOf(c)); err != nil {
		return err
	}
	check, ok, err := a.Monitors.RunNow(requestContext(c), m)
	if err != nil {
		return err
	}
	if !ok {
		return &Error{Status: fiber.StatusConflict, Code: "CHECK_RUNNING",
			Message: "a check of this monitor is already queued or running (" + m.CurrentCheck + "); run it again once it has finished"}
	}
	return c.JSON(fiber.Map{"success": true, "id": check.ID, "data": checkView(check)})
}

var checkStatuses = []string{monitor.CheckQueued, monitor.CheckRunning, monitor.CheckCompleted, monitor.CheckFailed,
	monitor.CheckPartial, monitor.CheckOverlap, monitor.CheckNoCredits}

var pageStatuses = []string{monitor.PageSame, monitor.PageNew, monitor.PageChanged, monitor.PageRemoved, monitor.PageError}

func statusQuery(c *fiber.Ctx, allowed []string, problems *[]FieldProblem) string {
	s := c.Query("status")
	if s != "" && !slices.Contains(allowed, s) {
		*problems = append(*problems, fieldError("status", "status must be one of %s, got %q", strings.Join(allowed, ", "), s))
	}
	return s
}

func (a *API) listMonitorChecks(c *fiber.Ctx) error {
	m, err := a.monitorOf(c)
	if err != nil {
		return err
	}
	var problems []FieldProblem
	limit := queryInt(c, "limit", 25, 1, 100, &problems)
	offset := queryInt(c, "offset", 0, 0, 1<<30, &problems)
	status := statusQuery(c, checkStatuses, &problems)
	if len(problems) > 0 {
		return badRequest(problems...)
	}
	checks, err := a.Store.MonitorChecks(requestContext(c), m.Team, m.ID, status, offset, limit)
	if err != nil {
		return err
	}
	out := make([]fiber.Map, 0, len(checks))
	for _, ch := range checks {
		out = append(out, checkView(ch))
	}
	return c.JSON(fiber.Map{"success": true, "data": out})
}

func (a *API) getMonitorCheck(c *fiber.Ctx) error {
	m, err := a.monitorOf(c)
	if err != nil {
		return err
	}
	var problems []FieldProblem
	limit := queryInt(c, "limit", 25, 1, 100, &problems)
	skip := queryInt(c, "skip", 0, 0, 1<<30, &problems)
	status := statusQuery(c, pageStatuses, &problems)
	if len(problems) > 0 {
		return badRequest(problems...)
	}
	ch, err := a.Store.MonitorCheckByID(requestContext(c), m.Team, m.ID, c.Params("checkId"))
	if errors.Is(err, store.ErrNotFound) {
		return &Error{Status: fiber.StatusNotFound, Code: "NOT_FOUND", Message: "monitor check not found"}
	}
	if err != nil {
		return err
	}
	rows, err := a.Store.MonitorPages(requestContext(c), ch.ID, status, skip, limit+1)
	if err != nil {
		return err
	}
	v := checkView(ch)
	pages := make([]json.RawMessage, 0, len(rows))
	for i, p := range rows {
		if i == limit {
			break
		}
		pages = append(pages, p.Body)
	}
	v["pages"] = pages
	var next any
	if len(rows) > limit {
		u := fmt.Sprintf("%s/v2/monitor/%s/checks/%s?skip=%d&limit=%d", a.baseURL(c), m.ID, ch.ID, skip+limit, limit)
		if status != "" {
			u += "&status=" + status
		}
		next = u
	}
	v["next"] = next
	return c.JSON(fiber.Map{"success": true, "data": v, "next": next})
}

func optTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return isoTime(t)
}

// monitorView is a monitor as the API shows it.
func monitorView(m store.Monitor) (fiber.Map, error) {
	def, sched, err := monitor.Decode(m)
	if err != nil {
		return nil, err
	}
	targets := make([]json.RawMessage, 0, len(def.Targets))
	perRun := 0
	for _, t := range def.Targets {
		t.Job, perRun = nil, perRun+monitorPages(t)
		raw, _ := json.Marshal(t)
		var obj map[string]json.RawMessage
		json.Unmarshal(raw, &obj)
		delete(obj, "job")
		raw, _ = json.Marshal(obj)
		targets = append(targets, raw)
	}
	var summary any
	if len(m.Summary) > 0 {
		summary = json.RawMessage(m.Summary)
	}
	var goal, current, webhook any
	if def.Goal != "" {
		goal = def.Goal
	}
	if m.CurrentCheck != "" {
		current = m.CurrentCheck
	}
	if def.Webhook != nil {
		webhook = def.Webhook
	}
	runs := 0
	if iv := sched.Interval(); iv > 0 {
		runs = int((30 * 24 * time.Hour) / iv)
	}
	// An upper bound: a credit per page of each run (its pages' own
	// formats may cost more, as in any scrape), and a judgment of each.
	perPage := 1
	if def.JudgeEnabled {
		perPage += 4
	}
	v := fiber.Map{"id": m.ID, "name": m.Name, "status": m.Status,
		"schedule":  fiber.Map{"cron": sched.Cron, "timezone": sched.Timezone},
		"nextRunAt": optTime(m.NextRunAt), "lastRunAt": optTime(m.LastRunAt), "currentCheckId": current,
		"targets": targets, "webhook": webhook, "notification": nil, "retentionDays": def.RetentionDays,
		"estimatedCreditsPerMonth": runs * perRun * perPage, "lastCheckSummary": summary, "goal": goal,
		"judgeEnabled": def.JudgeEnabled, "createdAt": isoTime(m.CreatedAt), "updatedAt": isoTime(m.UpdatedAt),
		"consecutiveFailures": m.Failures}
	if m.Failures >= 2 && !m.NextRunAt.IsZero() {
		v["warning"] = fmt.Sprintf("the last %d checks failed: the next run is put off to %s (it doubles with each failure, up to a day; a successful check or a schedule change resets it)",
			m.Failures, isoTime(m.NextRunAt))
	}
	return v, nil
}

// monitorPages is at most how many pages a target checks per run.
func monitorPages(t monitor.Target) int {
	if t.Type == "crawl" && t.Job != nil {
		return t.Job.Crawl.Limit
	}
	return len(t.URLs)
}

// checkView is a check as the API shows it.
func checkView(ch store.MonitorCheck) fiber.Map {
	var detail struct {
		TargetResults []json.RawMessage `json:"targetResults"`
		Credits       int               `json:"actualCredits"`
		Error         string            `json:"error"`
	}
	if len(ch.Detail) > 0 {
		json.Unmarshal(ch.Detail, &detail)
	}
	var summary any = monitor.Summary{}
	if len(ch.Summary) > 0 {
		summary = json.RawMessage(ch.Summary)
	}
	var errMsg any
	if detail.Error != "" {
		errMsg = detail.Error
	}
	billing := "not_applicable"
	var credits any
	switch ch.Status {
	case monitor.CheckCompleted, monitor.CheckPartial, monitor.CheckFailed:
		billing, credits = "confirmed", detail.Credits
	}
	if detail.TargetResults == nil {
		detail.TargetResults = []json.RawMessage{}
	}
	return fiber.Map{"id": ch.ID, "monitorId": ch.Monitor, "status": ch.Status, "trigger": ch.Trigger,
		"scheduledFor": optTime(ch.ScheduledFor), "late": ch.Late, "startedAt": optTime(ch.StartedAt),
		"finishedAt": optTime(ch.FinishedAt), "estimatedCredits": nil, "reservedCredits": nil,
		"actualCredits": credits, "billingStatus": billing, "summary": summary, "targetResults": detail.TargetResults,
		"notificationStatus": nil, "error": errMsg, "createdAt": isoTime(ch.CreatedAt), "updatedAt": isoTime(ch.UpdatedAt)}
}
