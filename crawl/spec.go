// Package crawl owns crawl and batch-scrape jobs: the frontier, URL
// filters, robots.txt, sitemaps, depth, concurrency and delay, job status,
// live progress and webhooks. Every page goes through package scrape on
// browsers of the one pool; crawl schedules, it never renders. Jobs, their
// frontier and their results live in the store, so a job survives a
// restart of the service and resumes where it stopped.
package crawl

import (
	"encoding/json"
	"time"

	"github.com/trawler-dev/trawler/scrape"
	"github.com/trawler-dev/trawler/webhook"
)

// Job kinds.
const (
	KindCrawl = "crawl"
	KindBatch = "batch"
)

// Job statuses.
const (
	StatusScraping  = "scraping"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// Spec is a job as requested and validated (by package api); it is stored
// with the job so that a resumed job runs exactly as asked.
type Spec struct {
	// ID, when set, is the id the job is created with (a crawl whose
	// prompt already cost model calls under it); else a new one.
	ID   string `json:"-"`
	Kind string `json:"kind"`
	// URL is a crawl's start URL.
	URL string `json:"url,omitempty"`
	// URLs are a batch's pages.
	URLs  []string     `json:"urls,omitempty"`
	Crawl CrawlOptions `json:"crawl"`
	// Scrape are the options every page is scraped with.
	Scrape scrape.Options `json:"scrape"`
	// ScrapeOptions is the request's scrapeOptions as sent, for
	// GET /v2/crawl/active.
	ScrapeOptions json.RawMessage `json:"scrapeOptions,omitempty"`
	// MaxConcurrency caps the job's pages in flight (0: the team's limit).
	MaxConcurrency    int           `json:"maxConcurrency,omitempty"`
	Webhook           *webhook.Spec `json:"webhook,omitempty"`
	ZeroDataRetention bool          `json:"zeroDataRetention,omitempty"`
}

// CrawlOptions are the fields of spec 4.2 that decide what a crawl visits.
type CrawlOptions struct {
	IncludePaths           []string      `json:"includePaths,omitempty"`
	ExcludePaths           []string      `json:"excludePaths,omitempty"`
	MaxDiscoveryDepth      *int          `json:"maxDiscoveryDepth,omitempty"`
	Sitemap                string        `json:"sitemap"` // skip, include or only
	IgnoreQueryParameters  bool          `json:"ignoreQueryParameters,omitempty"`
	RegexOnFullURL         bool          `json:"regexOnFullURL,omitempty"`
	Limit                  int           `json:"limit"`
	CrawlEntireDomain      bool          `json:"crawlEntireDomain,omitempty"`
	AllowExternalLinks     bool          `json:"allowExternalLinks,omitempty"`
	AllowSubdomains        bool          `json:"allowSubdomains,omitempty"`
	IgnoreRobotsTxt        bool          `json:"ignoreRobotsTxt,omitempty"`
	RobotsUserAgent        string        `json:"robotsUserAgent,omitempty"`
	DeduplicateSimilarURLs bool          `json:"deduplicateSimilarURLs"`
	Delay                  time.Duration `json:"delay,omitempty"`
}

// DefaultCrawlOptions are the spec's defaults.
func DefaultCrawlOptions() CrawlOptions {
	return CrawlOptions{Sitemap: "include", Limit: 10000, DeduplicateSimilarURLs: true}
}

// Status is what GET /v2/crawl/{id} reports.
type Status struct {
	Status      string
	Total       int
	Completed   int
	CreditsUsed int
	CreatedAt   time.Time
	ExpiresAt   time.Time
	CompletedAt time.Time // zero while scraping
	// Data is one page of the documents, in the order they were scraped;
	// More says whether more follow.
	Data    []json.RawMessage
	More    bool
	Warning string
}

// PageError is a page of a job that produced no document.
type PageError struct {
	ID        string    `json:"id"`
	Timestamp time.Time `json:"timestamp"`
	URL       string    `json:"url"`
	Code      string    `json:"code"`
	Error     string    `json:"error"`
}

// Errors is GET /v2/crawl/{id}/errors.
type Errors struct {
	Errors        []PageError `json:"errors"`
	RobotsBlocked []string    `json:"robotsBlocked"`
}

// Active is one entry of GET /v2/crawl/active.
type Active struct {
	ID        string        `json:"id"`
	TeamID    string        `json:"teamId"`
	URL       string        `json:"url"`
	Options   ActiveOptions `json:"options"`
	CreatedAt time.Time     `json:"created_at"`
}

// ActiveOptions are an active crawl's options.
type ActiveOptions struct {
	ScrapeOptions json.RawMessage `json:"scrapeOptions"`
}
