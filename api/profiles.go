package api

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/trawler-dev/trawler/profiles"
	"github.com/trawler-dev/trawler/scrape"
)

type profileRequest struct {
	Name        *string `json:"name"`
	SaveChanges *bool   `json:"saveChanges"`
}

// profileOption validates a request's profile (at path, e.g. "profile" or
// "scrapeOptions.profile") and returns it, saveChanges defaulting to true as
// the spec says; nil when absent or invalid.
func profileOption(problems *[]FieldProblem, path string, p *profileRequest) *scrape.Profile {
	if p == nil {
		return nil
	}
	if p.Name == nil {
		*problems = append(*problems, fieldError(path+".name", "%s.name is required when %s is given", path, path))
		return nil
	}
	if err := profiles.ValidName(*p.Name); err != nil {
		*problems = append(*problems, fieldError(path+".name", "%s.name: %v", path, err))
		return nil
	}
	save := true
	if p.SaveChanges != nil {
		save = *p.SaveChanges
	}
	return &scrape.Profile{Name: *p.Name, SaveChanges: save}
}

// jobProfile applies the rule for crawls and batch scrapes: many pages at
// once cannot take turns writing one profile, so the profile is read-only
// there, and saveChanges:true is refused rather than silently ignored.
func jobProfile(problems *[]FieldProblem, path string, p *profileRequest, o *scrape.Options) {
	if o.Profile == nil {
		return
	}
	if p.SaveChanges != nil && *p.SaveChanges {
		*problems = append(*problems, fieldError(path+".saveChanges",
			"%s.saveChanges must be false in a crawl or batch scrape: its pages run at once and cannot all write one profile (it is loaded read-only, the default here)", path))
	}
	o.Profile.SaveChanges = false
}

func (a *API) listProfiles(c *fiber.Ctx) error {
	infos, err := a.Profiles.Store.List(requestContext(c), teamOf(c).ID)
	if err != nil {
		return err
	}
	out := make([]fiber.Map, 0, len(infos))
	for _, p := range infos {
		out = append(out, fiber.Map{"name": p.Name, "size": p.Size, "savedAt": isoTime(p.SavedAt), "locked": p.Locked})
	}
	return c.JSON(fiber.Map{"success": true, "profiles": out})
}

func (a *API) deleteProfile(c *fiber.Ctx) error {
	name := c.Params("name")
	if err := profiles.ValidName(name); err != nil {
		return badRequest(fieldError("name", "name: %v", err))
	}
	ctx, cancel := context.WithTimeout(requestContext(c), 30*time.Second)
	defer cancel()
	if err := a.Profiles.Store.Delete(ctx, teamOf(c).ID, name); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"success": true})
}
