// Package extract owns extract jobs (POST /v2/extract): the pages a
// request names, a wildcard's pages found through a map, scraped as one
// internal batch job of package crawl, then read together by the language
// model in one call whose JSON answer is the job's data. Jobs live in the
// store, so a restarted service resumes those still processing: it waits
// for their batch (which package crawl resumes itself) or, when none was
// started, starts from the pages again.
package extract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/trawler-dev/trawler/crawl"
	"github.com/trawler-dev/trawler/model"
	"github.com/trawler-dev/trawler/scrape"
	"github.com/trawler-dev/trawler/store"
)

// Job statuses.
const (
	StatusProcessing = "processing"
	StatusCompleted  = "completed"
	StatusFailed     = "failed"
	StatusCancelled  = "cancelled"
)

// MaxPages bounds the pages one extract reads, all its URLs together.
const MaxPages = 50

// Errors callers branch on.
var (
	// ErrNotFound is an unknown extract, another team's, or an expired one.
	ErrNotFound = errors.New("extract job not found")
	// ErrClosed is a job asked of a service that is shutting down.
	ErrClosed = errors.New("the extract service is shutting down")
)

// Spec is an extract as requested and validated (by package api); it is
// stored with the job so that a resumed job runs exactly as asked.
type Spec struct {
	// URLs are absolute http(s) URLs; one that ends in /* stands for the
	// pages under its path (a wildcard).
	URLs []string `json:"urls"`
	// Prompt says what to extract; Schema is the answer's JSON schema as
	// the user sent it (normalised when it is used). At least one is set.
	Prompt string          `json:"prompt,omitempty"`
	Schema json.RawMessage `json:"schema,omitempty"`
	// SystemPrompt replaces the default instructions when set.
	SystemPrompt string `json:"systemPrompt,omitempty"`
	// AllowExternalLinks is accepted as Firecrawl's clients send it; the
	// pages read are always the URLs given and those under a wildcard's
	// path, so it changes nothing.
	AllowExternalLinks bool `json:"allowExternalLinks,omitempty"`
	// ShowSources reports the URLs of the pages read.
	ShowSources bool `json:"showSources,omitempty"`
	// IncludeSubdomains lets a wildcard take pages of the host's
	// subdomains under the same path.
	IncludeSubdomains bool `json:"includeSubdomains"`
	// IgnoreSitemap maps a wildcard without the site's sitemaps.
	IgnoreSitemap bool `json:"ignoreSitemap,omitempty"`
	// Scrape are the options every page is scraped with (Markdown only).
	Scrape scrape.Options `json:"scrape"`
}

// record is what the store keeps of a job's request.
type record struct {
	Spec
	// TeamLimit is the team's concurrency limit when the job was made,
	// for the map of a wildcard.
	TeamLimit int `json:"teamLimit"`
}

// Status is what GET /v2/extract/{id} reports.
type Status struct {
	ID     string
	Status string
	// Data is the model's answer, nil until completed.
	Data json.RawMessage
	// ShowSources says whether Sources are reported: the pages each field
	// of Data was read from.
	ShowSources bool
	Sources     Sources
	Warning     string
	Error       string
	CreatedAt   time.Time
	ExpiresAt   time.Time
	// TokensUsed sums the job's model calls, input and output.
	TokensUsed int
	// CreditsUsed is the batch's credits, plus the extraction's once the
	// model answered.
	CreditsUsed int
}

// Service runs extract jobs.
type Service struct {
	Crawler *crawl.Service
	Store   *store.Store
	// Model is the language model; nil fails every job (the API refuses
	// extracts without one, so only a job stored before the model was
	// removed meets it).
	Model *model.Client
	Log   *slog.Logger
	// Retention is how long results stay after a job ends.
	Retention time.Duration
	// Lease is how long this node holds an extract without renewing it
	// (the store's, store.SetNode); zero: leases are neither renewed nor
	// taken over, as with one node.
	Lease time.Duration

	mu      sync.Mutex
	closed  bool
	base    context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup
	running map[string]*running // by extract id
}

// running is an extract this node works on.
type running struct {
	cancel context.CancelFunc
	leased time.Time // when this node created or claimed it
}

// Start resumes the jobs a previous run left processing. The crawl service
// must have started: it resumes their batches.
func (s *Service) Start(ctx context.Context) error {
	s.base, s.stop = context.WithCancel(context.Background())
	if s.Retention <= 0 {
		s.Retention = 24 * time.Hour
	}
	s.running = map[string]*running{}
	// Its own, left by its previous run, and those of nodes whose lease
	// ran out.
	now := time.Now()
	rows, err := s.Store.ClaimExtracts(ctx, true, now, now.Add(s.Lease))
	if err != nil {
		return err
	}
	for _, row := range rows {
		s.Log.Info("resuming extract", "extract", row.ID, "batch", row.BatchID)
		if err := s.launch(row); err != nil {
			return err
		}
	}
	if s.Lease > 0 {
		s.wg.Add(1)
		go s.keepLeases()
	}
	return nil
}

// keepLeases renews the leases of the extracts this node works on, every
// third of the lease, stops those another node holds now (or that ended
// there), and claims those whose lease ran out: a dead node's. Their
// batches move with the crawl service's leases.
func (s *Service) keepLeases() {
	defer s.wg.Done()
	t := time.NewTicker(s.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-s.base.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(s.base, s.Lease/3)
		asked := time.Now()
		held, err := s.Store.RenewExtracts(ctx, asked.Add(s.Lease))
		if err != nil {
			s.Log.Error("renewing extract leases", "err", err)
			cancel()
			continue
		}
		s.mu.Lock()
		for id, r := range s.running {
			if !held[id] && r.leased.Before(asked) {
				s.Log.Warn("stopped working on an extract another node holds now", "extract", id)
				r.cancel()
			}
		}
		s.mu.Unlock()
		now := time.Now()
		claimed, err := s.Store.ClaimExtracts(ctx, false, now, now.Add(s.Lease))
		cancel()
		if err != nil {
			s.Log.Error("claiming extracts whose lease ran out", "err", err)
			continue
		}
		for _, row := range claimed {
			s.mu.Lock()
			mine := s.running[row.ID] != nil
			s.mu.Unlock()
			if mine {
				continue // its own, whose renewal was late
			}
			s.Log.Warn("taking over an extract whose node stopped renewing its lease", "extract", row.ID)
			s.launch(row)
		}
	}
}

// Close stops every job and waits for them. A job stopped so stays
// processing in the store: the next start resumes it.
func (s *Service) Close() {
	s.mu.Lock()
	if s.closed || s.stop == nil {
		s.closed = true
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	s.stop()
	s.wg.Wait()
}

// Create starts an extract for team (whose concurrency limit is
// teamLimit) and returns its id at once; the job runs in the background.
// The caller has validated spec and applied the network guard to its URLs.
func (s *Service) Create(ctx context.Context, team string, teamLimit int, spec Spec) (string, error) {
	raw, err := json.Marshal(record{Spec: spec, TeamLimit: teamLimit})
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	closed := s.closed || s.base == nil
	s.mu.Unlock()
	if closed {
		return "", ErrClosed
	}
	now := time.Now()
	row := store.Extract{ID: uuid.NewString(), Team: team, Status: StatusProcessing, Request: raw, CreatedAt: now,
		ExpiresAt: now.Add(s.Retention)}
	if err := s.Store.CreateExtract(ctx, row); err != nil {
		return "", err
	}
	if err := s.launch(row); err != nil {
		// Stored: the next start runs it.
		s.Log.Warn("an extract was stored as the service stopped", "extract", row.ID)
	}
	return row.ID, nil
}

// launch runs a job in the background, owned by the service.
func (s *Service) launch(row store.Extract) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	ctx, cancel := context.WithCancel(s.base)
	r := &running{cancel: cancel, leased: time.Now()}
	s.running[row.ID] = r
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() {
			cancel()
			s.mu.Lock()
			if s.running[row.ID] == r {
				delete(s.running, row.ID)
			}
			s.mu.Unlock()
		}()
		s.run(ctx, row)
	}()
	return nil
}

// Get returns team's extract id.
func (s *Service) Get(ctx context.Context, team, id string) (*Status, error) {
	row, err := s.Store.Extract(ctx, team, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	var rec record
	if err := json.Unmarshal(row.Request, &rec); err != nil {
		return nil, fmt.Errorf("reading extract %s: %w", id, err)
	}
	st := &Status{ID: row.ID, Status: row.Status, ShowSources: rec.ShowSources, Sources: Sources{},
		Warning: row.Warning, Error: row.Error, CreatedAt: row.CreatedAt, ExpiresAt: row.ExpiresAt,
		CreditsUsed: row.Credits}
	if row.Status == StatusCompleted && row.Result != nil {
		st.Data = row.Result
		if err := json.Unmarshal(row.Sources, &st.Sources); err != nil {
			legacy, ok := legacySources(row.Sources, row.Result)
			if !ok {
				return nil, fmt.Errorf("reading extract %s's sources: %w", id, err)
			}
			st.Sources = legacy
		}
	}
	requests := []string{row.ID}
	if row.BatchID != "" {
		// Model calls of the pages themselves (onlyCleanContent) count too.
		requests = append(requests, row.BatchID)
		if row.Status == StatusProcessing {
			if b, err := s.Store.Job(ctx, team, crawl.KindBatch, row.BatchID); err == nil {
				st.CreditsUsed = b.Credits
			}
		}
	}
	calls, err := s.Store.RequestModelUsage(ctx, team, requests)
	if err != nil {
		return nil, err
	}
	for _, uses := range calls {
		for _, u := range uses {
			st.TokensUsed += u.InputTokens + u.OutputTokens
		}
	}
	return st, nil
}
