package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/trawler-dev/trawler/teams"
	"github.com/trawler-dev/trawler/wire"
)

// unlimitedCredits is planCredits for a team without a credit limit, the
// figure Firecrawl's self-hosted API reports: clients that read
// remainingCredits as a number (the SDKs turn null into 0) see plenty.
const unlimitedCredits = 99_999_999

// billingPeriod is the calendar month (UTC) around now: credit limits and
// the token and credit usage count within it.
func billingPeriod(now time.Time) (from, to time.Time) {
	now = now.UTC()
	from = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	return from, from.AddDate(0, 1, 0)
}

// creditsExhausted refuses a billable request of a team that has used its
// credit limit in this billing period; nil when it may go ahead (no limit,
// or credits left). Requests already running are not stopped: a job's
// pages and a session's minutes are billed as they finish.
func (a *API) creditsExhausted(ctx context.Context, team teams.Team) error {
	if team.CreditLimit <= 0 {
		return nil
	}
	from, to := billingPeriod(time.Now())
	used, err := a.Store.CreditsUsed(ctx, team.ID, from, to)
	if err != nil {
		return err
	}
	if used < team.CreditLimit {
		return nil
	}
	return &Error{Status: http.StatusPaymentRequired, Code: "CREDITS_EXHAUSTED",
		Message: fmt.Sprintf("the team has used %d credits this month, its limit of %d (TRAWLER_TEAM_CREDITS); the limit renews on %s",
			used, team.CreditLimit, to.Format("2006-01-02")),
		Details: fiber.Map{"usedCredits": used, "planCredits": team.CreditLimit, "billingPeriodEnd": isoTime(to.Add(-time.Second))}}
}

// CreditsLeft says why team id may not start more billable work now
// (its credits are spent), "" when it may: the gate of a monitor's
// scheduled checks.
func (a *API) CreditsLeft(ctx context.Context, id string) string {
	if err := a.creditsExhausted(ctx, a.Teams.ByID(id)); err != nil {
		return err.Error()
	}
	return ""
}

// billable is the middleware of the routes that cost credits: a team
// whose credits are exhausted is answered 402 before anything is done.
func (a *API) billable(c *fiber.Ctx) error {
	if err := a.creditsExhausted(requestContext(c), teamOf(c)); err != nil {
		return err
	}
	return c.Next()
}

// creditUsage is GET /v2/team/credit-usage: the team's credits in the
// current billing period. planCredits is the team's limit
// (TRAWLER_TEAM_CREDITS), or unlimitedCredits without one; either way
// remainingCredits is planCredits less what was used, never below 0.
func (a *API) creditUsage(c *fiber.Ctx) error {
	team := teamOf(c)
	from, to := billingPeriod(time.Now())
	used, err := a.Store.CreditsUsed(requestContext(c), team.ID, from, to)
	if err != nil {
		return err
	}
	plan := team.CreditLimit
	if plan <= 0 {
		plan = unlimitedCredits
	}
	return c.JSON(fiber.Map{"success": true, "data": fiber.Map{
		"remainingCredits": max(0, plan-used), "planCredits": plan,
		"billingPeriodStart": isoTime(from), "billingPeriodEnd": isoTime(to.Add(-time.Second)),
		"usedCredits": used, "unlimited": team.CreditLimit <= 0,
	}})
}

// creditHistory is GET /v2/team/credit-usage/historical: the team's
// credits by billing period (calendar month), oldest first. Trawler's
// keys have no names and usage is counted per team, so byApiKey is
// accepted and every period's apiKey is null.
func (a *API) creditHistory(c *fiber.Ctx) error {
	switch c.Query("byApiKey") {
	case "", "true", "false":
	default:
		return badRequest(fieldError("byApiKey", "byApiKey must be true or false, got %q", wire.Truncate(c.Query("byApiKey"), 100)))
	}
	months, err := a.Store.CreditHistory(requestContext(c), teamOf(c).ID)
	if err != nil {
		return err
	}
	periods := make([]fiber.Map, 0, len(months))
	for _, m := range months {
		periods = append(periods, fiber.Map{"startDate": isoTime(m.Start),
			"endDate": isoTime(m.Start.AddDate(0, 1, 0).Add(-time.Second)), "apiKey": nil, "totalCredits": m.Credits})
	}
	return c.JSON(fiber.Map{"success": true, "periods": periods})
}

// queueStatus is GET /v2/team/queue-status: the pages of the team's
// crawls and batch scrapes in flight and queued, its concurrency limit,
// and when it was last billed for content.
func (a *API) queueStatus(c *fiber.Ctx) error {
	team := teamOf(c)
	q := a.Crawler.TeamQueue(team.ID)
	last, err := a.Store.LastCharge(requestContext(c), team.ID)
	if err != nil {
		return err
	}
	var recent any
	if !last.IsZero() {
		recent = isoTime(last)
	}
	return c.JSON(fiber.Map{"success": true, "jobsInQueue": q.Active + q.Waiting, "activeJobsInQueue": q.Active,
		"waitingJobsInQueue": q.Waiting, "maxConcurrency": team.Concurrency, "mostRecentSuccess": recent})
}

// concurrencyCheck is GET /v2/concurrency-check: the browsers the team
// holds now (its sessions and single scrapes) and how many it may hold.
func (a *API) concurrencyCheck(c *fiber.Ctx) error {
	team := teamOf(c)
	return c.JSON(fiber.Map{"success": true, "concurrency": a.Scraper.Pool.TeamLeases(team.ID),
		"maxConcurrency": team.Concurrency})
}
