package api

import (
	"errors"
	"net/url"

	"github.com/gofiber/fiber/v2"

	"github.com/trawler-dev/trawler/recording"
)

// replayURL is the page that replays a recorded session, opened with the
// session's view token as its live view is.
func replayURL(base, id, token string) string {
	return base + "/replay/" + id + "?token=" + url.QueryEscape(token)
}

// getReplay serves GET /v2/browser/{id}/replay and
// /v2/browser/{id}/replay/{pageId}: the recording's tabs and, a page at a
// time (next), their events.
func (a *API) getReplay(c *fiber.Ctx) error {
	team := teamOf(c)
	id := c.Params("id")
	rec, err := a.Sessions.Get(requestContext(c), team.ID, id)
	if err != nil {
		return err
	}
	if !rec.Recording || a.Recordings == nil {
		return &Error{Status: fiber.StatusNotFound, Code: "NOT_FOUND",
			Message: "browser session " + id + " was not recorded: create a session with \"recording\": true to record it"}
	}
	page := c.Params("pageId")
	r, err := a.Recordings.Read(requestContext(c), team.ID, id, page, c.Query("cursor"))
	switch {
	case errors.Is(err, recording.ErrPageNotFound):
		return &Error{Status: fiber.StatusNotFound, Code: "NOT_FOUND", Message: "the recording of browser session " + id + " has no page " + page}
	case errors.Is(err, recording.ErrBadCursor):
		return badRequest(fieldError("cursor", "cursor must be the value of a next link this endpoint returned"))
	case err != nil:
		return err
	}
	base := a.baseURL(c)
	self := base + "/v2/browser/" + id + "/replay"
	if page != "" {
		self += "/" + url.PathEscape(page)
	}
	status := "recording"
	if rec.Status != "active" {
		status = "completed"
	}
	out := fiber.Map{"success": true, "id": id, "status": status, "replayUrl": replayURL(base, id, rec.ViewToken),
		"pages": r.Pages, "events": r.Events, "next": nil}
	if r.Next != "" {
		out["next"] = self + "?cursor=" + url.QueryEscape(r.Next)
	}
	a.recordActivity(team.ID, id, "browser", self)
	return c.JSON(out)
}
