package scrape

import (
	"context"
	"fmt"
	"time"

	"github.com/trawler-dev/trawler/store"
)

// LockdownMissCredits is what a lockdown scrape costs when the cache has
// no entry (spec 2.1: 5 on a hit, 1 on a miss).
const LockdownMissCredits = 1

// charge is the credit ledger's entry of a scrape that is billed on its
// own, a single scrape or a parse (an upload, fetched by no guard), under
// its scrapeId. A scrape that is part of a larger request is billed by
// that request, so charge is nil for it: a crawl's or batch's page (Job,
// billed with the page by store.FinishJobURL) and a search's result
// (RequestID, billed with the search).
func charge(req Request, upload bool, id string, credits int) *store.Charge {
	if req.Job || req.RequestID != "" {
		return nil
	}
	kind := store.CreditScrape
	if upload {
		kind = store.CreditParse
	}
	return &store.Charge{Team: req.Team, Request: id, Kind: kind, Credits: credits, At: time.Now()}
}

// bill writes c alone, for a scrape whose result is not stored; nil does
// nothing, and so does a service without a store (the command line's
// parse, which bills nobody). A charge that could not be recorded fails
// the scrape, which is then not answered.
func (s *Service) bill(c *store.Charge) error {
	if c == nil || s.Store == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Store.AddCharge(ctx, *c); err != nil {
		return fmt.Errorf("recording the scrape's credits: %w", err)
	}
	return nil
}
