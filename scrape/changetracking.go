package scrape

import (
	"context"
	"fmt"
	"slices"

	"github.com/trawler-dev/trawler/content"
	"github.com/trawler-dev/trawler/discover"
	"github.com/trawler-dev/trawler/model"
	"github.com/trawler-dev/trawler/scrape/changetracking"
	"github.com/trawler-dev/trawler/store"
)

// trackChanges compares the page's Markdown with the previous version of
// its URL in the team's history for f's tag, sets doc.ChangeTracking, and
// records this version. It returns the credits the json mode's model calls
// add (see compareExtractions).
func (s *Service) trackChanges(ctx context.Context, req Request, requestID string, doc *Document, pg *page, f Format) int {
	ct := changetracking.NewResult(pg.status)
	doc.ChangeTracking = ct
	warn := func(format string, args ...any) {
		doc.Warning = joinWarning(doc.Warning, "changeTracking: "+fmt.Sprintf(format, args...))
	}
	if req.Options.ZeroDataRetention {
		warn("with zero data retention no history of the page is read or kept, so it is compared with nothing")
		return 0
	}
	if doc.Metadata["cacheState"] == "hit" {
		warn("the page came from the cache, as fetched at %v; set maxAge to 0 to compare the live page", doc.Metadata["cachedAt"])
	}
	current := changetracking.Version(req.Team, discover.PageKey(req.URL), f.Tag, pg.status, doc.Markdown)
	prev, err := changetracking.Compare(ctx, s.Store, ct, &current, slices.Contains(f.Modes, "git-diff"))
	if err != nil {
		s.Log.Error("reading a page's change history", "url", current.URLKey, "err", err)
		warn("the page's history could not be read, so it is compared with nothing")
	}
	credits := 0
	if slices.Contains(f.Modes, "json") {
		credits = s.compareExtractions(ctx, req, requestID, doc, f, prev, &current, warn)
	}
	// A server error is taken as passing (the cache does not keep one
	// either): the next scrape is compared with the last version the
	// server answered properly.
	if pg.status >= 500 {
		warn("the page answered HTTP %d, which is not kept in its history", pg.status)
		return credits
	}
	if err := changetracking.Keep(ctx, s.Store, current); err != nil {
		s.Log.Error("recording a page's version", "url", current.URLKey, "err", err)
		warn("this version of the page could not be recorded")
	}
	return credits
}

// compareExtractions is the json mode (changetracking.Extraction.Compare)
// with the json format's extraction: f's schema and prompt, asked of the
// model as the json format asks them.
//
// It returns the credits the calls add: modelCredits when the model
// answered, as for the model-backed formats, and once a page: nothing when
// the page's json, summary or question already billed them.
func (s *Service) compareExtractions(ctx context.Context, req Request, requestID string, doc *Document, f Format,
	prev, current *store.PageVersion, warn func(string, ...any)) int {
	if s.Model == nil {
		// The API refuses the json mode without a model; a job stored
		// before the model was removed gets this.
		warn("the json mode was skipped: no language model is configured (TRAWLER_LLM_BASE_URL)")
		return 0
	}
	c, extra, err := jsonExtraction(model.Call{Team: req.Team, Request: requestID, Purpose: "changeTracking", System: jsonSystem}, f)
	if err != nil {
		warn("the json mode's schema %v", err)
		return 0
	}
	pageURL, _ := doc.Metadata["url"].(string)
	if pageURL == "" {
		pageURL = req.URL
	}
	e := changetracking.Extraction{Schema: c.Schema, Prompt: f.Prompt,
		Extract: func(ctx context.Context, markdown string) (any, bool, error) {
			ans, cut, err := s.extractVersion(ctx, c, markdown, pageURL, extra)
			if err != nil {
				return nil, cut, err
			}
			return ans.JSON, cut, nil
		}}
	answered, trimmed := e.Compare(ctx, doc.ChangeTracking, prev, current, warn)
	if trimmed {
		warn("the page's Markdown was trimmed to fit the model's context of %d tokens", s.Model.Config().ContextTokens)
	}
	if !answered || doc.JSON != nil || doc.Summary != "" || doc.Answer != "" {
		return 0
	}
	return modelCredits
}

// extractVersion asks the model for c's extraction from one version of the
// page, as the json format asks it: the Markdown without what costs
// tokens and says nothing, fitted into the model's context (it reports
// whether it was cut).
func (s *Service) extractVersion(ctx context.Context, c model.Call, markdown, pageURL, extra string) (*model.Answer, bool, error) {
	about := "URL: " + pageURL + "\n"
	if origin := content.Origin(pageURL); origin != "" {
		about += "Links written from the root (/path) are on " + origin + "; write URLs in your answer in full.\n"
	}
	text, cut := model.Fit(content.ForModel(markdown, pageURL),
		s.Model.InputBudget(model.EstimateTokens(c.System+extra+about)+64))
	c.User = extra + about + "\nPage content (Markdown):\n\n" + text
	ans, err := s.Model.Complete(ctx, c)
	return ans, cut, err
}
