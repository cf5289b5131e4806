package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/trawler-dev/trawler/cdpproxy"
	"github.com/trawler-dev/trawler/execute"
	"github.com/trawler-dev/trawler/profiles"
	"github.com/trawler-dev/trawler/sessions"
	"github.com/trawler-dev/trawler/store"
)

type createBrowserRequest struct {
	TTL           *int            `json:"ttl"`
	ActivityTTL   *int            `json:"activityTtl"`
	StreamWebView *bool           `json:"streamWebView"`
	Profile       *profileRequest `json:"profile"`
	// Recording records the session for replay; a team with the
	// recordSessions feature records every session unless it is false.
	Recording         *bool `json:"recording"`
	ZeroDataRetention *bool `json:"zeroDataRetention"`
	clientTags
}

func (a *API) createBrowser(c *fiber.Ctx) error {
	team := teamOf(c)
	var req createBrowserRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	var problems []FieldProblem
	ttl := intRange(&problems, "ttl", req.TTL, 30, 3600, 300)
	idle := intRange(&problems, "activityTtl", req.ActivityTTL, 10, 3600, 300)
	profile := profileOption(&problems, "profile", req.Profile)
	zdr := req.ZeroDataRetention != nil && *req.ZeroDataRetention
	record := team.Features.RecordSessions && !zdr
	if req.Recording != nil {
		record = *req.Recording
	}
	if record && zdr {
		problems = append(problems, fieldError("recording", "recording keeps the session's pages and cannot be combined with zeroDataRetention"))
	}
	if len(problems) > 0 {
		return badRequest(problems...)
	}
	if zdr && !team.Features.ZeroDataRetention {
		return featureError("zeroDataRetention")
	}
	stream := true
	if req.StreamWebView != nil {
		stream = *req.StreamWebView
	}
	opts := sessions.CreateOptions{
		Team: team.ID, TeamLimit: team.Concurrency,
		TTL: time.Duration(ttl) * time.Second, ActivityTTL: time.Duration(idle) * time.Second,
		StreamWebView: stream, Record: record,
	}
	if profile != nil {
		use, err := a.Profiles.Open(requestContext(c), team.ID, profile.Name, profiles.AccessFor(profile.SaveChanges))
		if err != nil {
			return err
		}
		opts.Profile = use
	}
	s, err := a.Sessions.Create(requestContext(c), opts)
	if err != nil {
		return err
	}
	rec := s.Record()
	base := a.baseURL(c)
	if !zdr {
		a.recordActivity(team.ID, rec.ID, "browser", base+"/v2/browser/"+rec.ID)
	}
	out := fiber.Map{
		"success":                true,
		"id":                     rec.ID,
		"cdpUrl":                 cdpproxy.CDPURL(base, rec.ID, rec.CDPToken),
		"liveViewUrl":            liveURL(base, rec.ID, rec.ViewToken),
		"interactiveLiveViewUrl": liveURL(base, rec.ID, rec.InteractToken),
		"expiresAt":              isoTime(rec.ExpiresAt),
		"recording":              rec.Recording,
	}
	if rec.Recording {
		out["replayUrl"] = replayURL(base, rec.ID, rec.ViewToken)
	}
	return c.JSON(out)
}

func liveURL(base, id, token string) string {
	return base + "/live/" + id + "?token=" + url.QueryEscape(token)
}

func (a *API) sessionJSON(base string, r store.Session) fiber.Map {
	m := fiber.Map{
		"id":                     r.ID,
		"status":                 r.Status,
		"cdpUrl":                 cdpproxy.CDPURL(base, r.ID, r.CDPToken),
		"liveViewUrl":            liveURL(base, r.ID, r.ViewToken),
		"interactiveLiveViewUrl": liveURL(base, r.ID, r.InteractToken),
		"streamWebView":          r.StreamWebView,
		"ttl":                    int(r.TTL / time.Second),
		"activityTtl":            int(r.ActivityTTL / time.Second),
		"createdAt":              isoTime(r.CreatedAt),
		"lastActivity":           isoTime(r.LastActivity),
		"expiresAt":              isoTime(r.ExpiresAt),
		"recording":              r.Recording,
	}
	if r.Recording {
		m["replayUrl"] = replayURL(base, r.ID, r.ViewToken)
	}
	if !r.DestroyedAt.IsZero() {
		m["destroyedAt"] = isoTime(r.DestroyedAt)
		m["endReason"] = r.EndReason
	}
	return m
}

func (a *API) listBrowsers(c *fiber.Ctx) error {
	status := c.Query("status")
	if status != "" && status != "active" && status != "destroyed" {
		return badRequest(fieldError("status", "status must be active or destroyed"))
	}
	recs, err := a.Sessions.List(requestContext(c), teamOf(c).ID, status)
	if err != nil {
		return err
	}
	base := a.baseURL(c)
	out := make([]fiber.Map, 0, len(recs))
	for _, r := range recs {
		out = append(out, a.sessionJSON(base, r))
	}
	return c.JSON(fiber.Map{"success": true, "sessions": out})
}

func (a *API) getBrowser(c *fiber.Ctx) error {
	r, err := a.Sessions.Get(requestContext(c), teamOf(c).ID, c.Params("id"))
	if err != nil {
		return err
	}
	m := a.sessionJSON(a.baseURL(c), r)
	m["success"] = true
	return c.JSON(m)
}

func (a *API) deleteBrowser(c *fiber.Ctx) error {
	d, credits, err := a.Sessions.Delete(requestContext(c), teamOf(c).ID, c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"success": true, "status": "destroyed", "sessionDurationMs": d.Milliseconds(),
		"creditsBilled": credits})
}

type executeRequest struct {
	Code     *string `json:"code"`
	Language *string `json:"language"`
	Timeout  *int    `json:"timeout"`
	clientTags
}

// executeBrowser runs code against a session: language js (the default) is
// evaluated in the session's active page; node and bash run in the execute
// sandbox (package execute) with the session attached. Every answer has
// Firecrawl's shape (stdout, result as a string, stderr, exitCode, killed)
// besides success and error; js adds value, the result as JSON.
func (a *API) executeBrowser(c *fiber.Ctx) error {
	var req executeRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	var problems []FieldProblem
	if req.Code == nil || *req.Code == "" {
		problems = append(problems, fieldError("code", "code is required and must be a non-empty string"))
	} else if len(*req.Code) > 1<<20 {
		problems = append(problems, fieldError("code", "code must be at most 1 MB"))
	}
	language := "js"
	if req.Language != nil {
		language = *req.Language
	}
	switch language {
	case "js", "javascript":
		language = "js"
	case execute.LangNode, execute.LangBash:
	case "python":
		// Python would need Playwright for Python, which Debian does not
		// package (apt-cache policy python3-playwright knows no such
		// package here) and which Trawler does not fetch from PyPI.
		problems = append(problems, fieldError("language", "language python is not supported: the languages are js (evaluated in the session's page), node (Playwright's browser, context and page) and bash (a shell with the browser command)"))
	default:
		problems = append(problems, fieldError("language", "language must be js, node or bash, got %q", language))
	}
	timeout := intRange(&problems, "timeout", req.Timeout, 1, 300, 30)
	if len(problems) > 0 {
		return badRequest(problems...)
	}
	team := teamOf(c)
	id := c.Params("id")
	limit := time.Duration(timeout) * time.Second
	if language == "js" {
		return a.executeJS(c, team.ID, id, *req.Code, limit)
	}
	s, err := a.Sessions.TeamLookup(requestContext(c), team.ID, id)
	if err != nil {
		return err
	}
	if a.Execute == nil || a.Execute.Mode() == execute.Off {
		return badRequest(fieldError("language", "language %s needs the execute sandbox, which is off on this server: its operator enables it with TRAWLER_EXECUTE=docker (a sandbox container per run; the default on the docker runtime) or TRAWLER_EXECUTE=node (a local node process, without a sandbox); language js, evaluated in the session's page, needs neither", language))
	}
	res, err := a.Execute.Run(requestContext(c), s, language, *req.Code, limit)
	if err != nil {
		return err // ErrBusy, UnavailableError, DestroyedError: see toError
	}
	a.recordActivity(team.ID, id, "interact", a.baseURL(c)+"/v2/browser/"+id)
	out := fiber.Map{
		"success": res.ExitCode == 0 && !res.Killed, "stdout": res.Stdout, "result": res.Stdout,
		"stderr": res.Stderr, "exitCode": res.ExitCode, "killed": res.Killed, "truncated": res.Truncated,
	}
	switch {
	case res.Killed:
		out["error"] = "execution timed out after " + limit.String() + " and was killed"
	case res.ExitCode != 0:
		msg := fmt.Sprintf("the code exited with code %d", res.ExitCode)
		for _, line := range strings.Split(res.Stderr, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				msg += ": " + line
				break
			}
		}
		out["error"] = msg
	}
	return c.JSON(out)
}

// executeJS evaluates JavaScript in the session's active page.
func (a *API) executeJS(c *fiber.Ctx, team, id, code string, timeout time.Duration) error {
	res, err := a.Sessions.Execute(requestContext(c), team, id, code, timeout)
	out := fiber.Map{"stdout": "", "result": "", "stderr": "", "exitCode": 0, "killed": false}
	switch {
	case errors.Is(err, sessions.ErrExecTimeout):
		out["success"], out["killed"], out["exitCode"] = false, true, execute.KilledExitCode
		out["error"] = "execution timed out after " + timeout.String()
	case err != nil:
		return err
	case res.Exception != "":
		out["success"], out["exitCode"], out["stderr"], out["error"] = false, 1, res.Exception, res.Exception
	default:
		text := resultText(res.Value)
		out["success"], out["stdout"], out["result"], out["value"] = true, text, text, json.RawMessage(res.Value)
	}
	a.recordActivity(team, id, "interact", a.baseURL(c)+"/v2/browser/"+id)
	return c.JSON(out)
}

// resultText is a js value as the string result carries it: a string as it
// is, null (and undefined) as nothing, anything else as its JSON.
func resultText(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	if string(v) == "null" {
		return ""
	}
	return string(v)
}
