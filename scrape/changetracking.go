package scrape

import "context"

// ChangeTracking is the changeTracking member of a document (spec 2.2).
type ChangeTracking struct {
	PreviousScrapeAt *string `json:"previousScrapeAt"`
	ChangeStatus     string  `json:"changeStatus"`
	Visibility       string  `json:"visibility"`
	Diff             any     `json:"diff,omitempty"`
	JSON             any     `json:"json,omitempty"`
}

// trackChanges compares the page with its previous scrape (being built).
func (s *Service) trackChanges(ctx context.Context, req Request, requestID string, doc *Document, pg *page, f Format) {
	doc.Warning = joinWarning(doc.Warning, "changeTracking is being built")
}
