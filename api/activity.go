package api

import (
	"errors"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/trawler-dev/trawler/store"
)

var activityEndpoints = map[string]bool{
	"scrape": true, "crawl": true, "batch_scrape": true, "search": true, "extract": true, "llmstxt": true,
	"deep_research": true, "map": true, "agent": true, "browser": true, "interact": true,
}

// ActivityWindow is how far back the activity log reaches.
const ActivityWindow = 24 * time.Hour

func (a *API) listActivity(c *fiber.Ctx) error {
	var problems []FieldProblem
	endpoint := c.Query("endpoint")
	if endpoint != "" && !activityEndpoints[endpoint] {
		problems = append(problems, fieldError("endpoint", "endpoint must be one of scrape, crawl, batch_scrape, search, extract, llmstxt, deep_research, map, agent, browser, interact"))
	}
	limit := 50
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			problems = append(problems, fieldError("limit", "limit must be an integer between 1 and 100"))
		}
		limit = n
	}
	if len(problems) > 0 {
		return badRequest(problems...)
	}
	entries, next, err := a.Store.ListActivity(requestContext(c), store.ActivityQuery{
		Team: teamOf(c).ID, Endpoint: endpoint, Since: time.Now().Add(-ActivityWindow),
		Cursor: c.Query("cursor"), Limit: limit,
	})
	if errors.Is(err, store.ErrBadCursor) {
		return badRequest(fieldError("cursor", "cursor must be a value returned by a previous call"))
	}
	if err != nil {
		return err
	}
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.ID
	}
	calls, err := a.Store.RequestModelUsage(requestContext(c), teamOf(c).ID, ids)
	if err != nil {
		return err
	}
	egressed, err := a.Store.RequestEgress(requestContext(c), teamOf(c).ID, ids)
	if err != nil {
		return err
	}
	data := make([]fiber.Map, 0, len(entries))
	for _, e := range entries {
		entry := fiber.Map{"id": e.ID, "endpoint": e.Endpoint, "api_version": e.APIVersion,
			"created_at": isoTime(e.CreatedAt), "target": e.Target}
		if uses := calls[e.ID]; len(uses) > 0 {
			entry["modelCalls"] = modelCalls(uses)
		}
		if u, ok := egressed[e.ID]; ok {
			entry["egressBytes"] = fiber.Map{"in": u.In, "out": u.Out}
		}
		data = append(data, entry)
	}
	var cursor any
	if next != "" {
		cursor = next
	}
	return c.JSON(fiber.Map{"success": true, "data": data, "cursor": cursor, "has_more": next != ""})
}

// modelCalls lists a request's language-model calls for its activity
// entry.
func modelCalls(uses []store.ModelUsage) []fiber.Map {
	out := make([]fiber.Map, len(uses))
	for i, u := range uses {
		m := fiber.Map{"purpose": u.Purpose, "model": u.Model, "inputTokens": u.InputTokens,
			"outputTokens": u.OutputTokens, "attempts": u.Attempts, "durationMs": u.Duration.Milliseconds(),
			"at": isoTime(u.At)}
		if u.Error != "" {
			m["error"] = u.Error
		}
		out[i] = m
	}
	return out
}

// tokenUsage is GET /v2/team/token-usage: the team's model tokens in the
// current billing period. Trawler limits no team's tokens: planTokens is
// the figure credit usage reports for a team without a limit (clients
// read remainingTokens as a number, as they do remainingCredits), and
// unlimited says so.
func (a *API) tokenUsage(c *fiber.Ctx) error {
	from, to := billingPeriod(time.Now())
	t, err := a.Store.TokenUsage(requestContext(c), teamOf(c).ID, from, to)
	if err != nil {
		return err
	}
	used := t.InputTokens + t.OutputTokens
	return c.JSON(fiber.Map{"success": true, "data": fiber.Map{
		"remainingTokens": max(0, unlimitedCredits-used), "planTokens": unlimitedCredits, "unlimited": true,
		"billingPeriodStart": isoTime(from), "billingPeriodEnd": isoTime(to.Add(-time.Second)),
		"usedTokens": used, "inputTokens": t.InputTokens, "outputTokens": t.OutputTokens,
		"calls": t.Calls, "failedCalls": t.Failed,
	}})
}
