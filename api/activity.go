package api

import (
	"context"
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
	entries, next, err := a.Store.ListActivity(context.Background(), store.ActivityQuery{
		Team: teamOf(c).ID, Endpoint: endpoint, Since: time.Now().Add(-ActivityWindow),
		Cursor: c.Query("cursor"), Limit: limit,
	})
	if errors.Is(err, store.ErrBadCursor) {
		return badRequest(fieldError("cursor", "cursor must be a value returned by a previous call"))
	}
	if err != nil {
		return err
	}
	data := make([]fiber.Map, 0, len(entries))
	for _, e := range entries {
		data = append(data, fiber.Map{"id": e.ID, "endpoint": e.Endpoint, "api_version": e.APIVersion,
			"created_at": isoTime(e.CreatedAt), "target": e.Target})
	}
	var cursor any
	if next != "" {
		cursor = next
	}
	return c.JSON(fiber.Map{"success": true, "data": data, "cursor": cursor, "has_more": next != ""})
}
