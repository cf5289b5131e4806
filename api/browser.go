package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/trawler-dev/trawler/cdpproxy"
	"github.com/trawler-dev/trawler/profiles"
	"github.com/trawler-dev/trawler/sessions"
	"github.com/trawler-dev/trawler/store"
)

type createBrowserRequest struct {
	TTL           *int            `json:"ttl"`
	ActivityTTL   *int            `json:"activityTtl"`
	StreamWebView *bool           `json:"streamWebView"`
	Profile       *profileRequest `json:"profile"`
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
	if len(problems) > 0 {
		return badRequest(problems...)
	}
	stream := true
	if req.StreamWebView != nil {
		stream = *req.StreamWebView
	}
	opts := sessions.CreateOptions{
		Team: team.ID, TeamLimit: team.Concurrency,
		TTL: time.Duration(ttl) * time.Second, ActivityTTL: time.Duration(idle) * time.Second,
		StreamWebView: stream,
	}
	if profile != nil {
		use, err := a.Profiles.Open(context.Background(), team.ID, profile.Name, profiles.AccessFor(profile.SaveChanges))
		if err != nil {
			return err
		}
		opts.Profile = use
	}
	s, err := a.Sessions.Create(context.Background(), opts)
	if err != nil {
		return err
	}
	rec := s.Record()
	base := a.baseURL(c)
	a.recordActivity(team.ID, rec.ID, "browser", base+"/v2/browser/"+rec.ID)
	return c.JSON(fiber.Map{
		"success":                true,
		"id":                     rec.ID,
		"cdpUrl":                 cdpproxy.CDPURL(base, rec.ID, rec.CDPToken),
		"liveViewUrl":            liveURL(base, rec.ID, rec.ViewToken),
		"interactiveLiveViewUrl": liveURL(base, rec.ID, rec.InteractToken),
		"expiresAt":              isoTime(rec.ExpiresAt),
	})
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
	recs, err := a.Sessions.List(context.Background(), teamOf(c).ID, status)
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
	r, err := a.Sessions.Get(context.Background(), teamOf(c).ID, c.Params("id"))
	if err != nil {
		return err
	}
	m := a.sessionJSON(a.baseURL(c), r)
	m["success"] = true
	return c.JSON(m)
}

func (a *API) deleteBrowser(c *fiber.Ctx) error {
	d, err := a.Sessions.Delete(context.Background(), teamOf(c).ID, c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"success": true, "status": "destroyed", "sessionDurationMs": d.Milliseconds()})
}

type executeRequest struct {
	Code     *string `json:"code"`
	Language *string `json:"language"`
	Timeout  *int    `json:"timeout"`
	clientTags
}

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
	if req.Language != nil {
		switch *req.Language {
		case "js", "javascript", "node":
		default:
			problems = append(problems, fieldError("language", "language must be js (node is accepted as a synonym): code runs as JavaScript in the session's active page, and %q is not supported", *req.Language))
		}
	}
	timeout := intRange(&problems, "timeout", req.Timeout, 1, 300, 30)
	if len(problems) > 0 {
		return badRequest(problems...)
	}
	team := teamOf(c)
	id := c.Params("id")
	res, err := a.Sessions.Execute(context.Background(), team.ID, id, *req.Code, time.Duration(timeout)*time.Second)
	if errors.Is(err, sessions.ErrExecTimeout) {
		return c.JSON(fiber.Map{"success": false, "error": "execution timed out after " + time.Duration(timeout*int(time.Second)).String(), "killed": true})
	}
	if err != nil {
		return err
	}
	a.recordActivity(team.ID, id, "interact", a.baseURL(c)+"/v2/browser/"+id)
	if res.Exception != "" {
		return c.JSON(fiber.Map{"success": false, "error": res.Exception})
	}
	return c.JSON(fiber.Map{"success": true, "result": json.RawMessage(res.Value)})
}
