package api

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trawler-dev/trawler/parse"
	"github.com/trawler-dev/trawler/scrape"
)

// TestParseBudgetErrors: a document over parse's memory budget is a 422
// PARSE_ERROR naming the budget, as a document too large in any other way
// is, and a parse that could not get its share of the shared budget a 429
// with Retry-After, the document being fine.
func TestParseBudgetErrors(t *testing.T) {
	a := &API{}
	over := &parse.BudgetError{Kind: "spreadsheet", Unit: "cells", Found: 3_000_000, Max: 1_000_000, Estimate: 600 << 20, Budget: 256 << 20}
	e := a.toError(&scrape.ParseError{Err: over})
	if e.Status != http.StatusUnprocessableEntity || e.Code != "PARSE_ERROR" || e.RetryAfter != 0 ||
		!strings.Contains(e.Message, "3000000 cells") || !strings.Contains(e.Message, "memory budget of 256 MB") {
		t.Errorf("over the budget: %+v", e)
	}
	busy := &parse.BusyError{Need: 100 << 20, Budget: 512 << 20, RetryAfter: 10 * time.Second}
	e = a.toError(busy)
	if e.Status != http.StatusTooManyRequests || e.Code != "RATE_LIMITED" || e.RetryAfter != 10 ||
		!strings.Contains(e.Message, "512 MB") || !strings.Contains(e.Message, "retry later") {
		t.Errorf("budget busy: %+v", e)
	}
}
