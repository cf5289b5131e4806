package extract

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trawler-dev/trawler/content"
	"github.com/trawler-dev/trawler/crawl"
	"github.com/trawler-dev/trawler/model"
	"github.com/trawler-dev/trawler/store"
)

// extractCredits is what the extraction adds to the pages' credits once
// the model answered (what a json format adds to a page).
const extractCredits = 4

// pollInterval is how often a job looks at its batch.
const pollInterval = 250 * time.Millisecond

// mapTimeout bounds the map of one wildcard.
const mapTimeout = time.Minute

// mapLimit bounds the links one wildcard's map returns, before they are
// filtered by its path.
const mapLimit = 5000

// job is a running extract.
type job struct {
	id, team string
	rec      record
	batchID  string
	warnings []string
	// Set as the job goes.
	credits int
	read    int // pages the model read
	sources Sources
	data    json.RawMessage
}

// run takes a job from where the store says it is to its end. A job the
// service stops is left processing, for the next start.
func (s *Service) run(ctx context.Context, row store.Extract) {
	j := &job{id: row.ID, team: row.Team, batchID: row.BatchID}
	if row.Warning != "" {
		j.warnings = strings.Split(row.Warning, "; ")
	}
	err := json.Unmarshal(row.Request, &j.rec)
	if err == nil {
		err = s.work(ctx, j)
	}
	if err != nil && ctx.Err() != nil {
		return
	}
	var sources json.RawMessage
	if j.sources != nil {
		sources, _ = json.Marshal(j.sources)
	}
	e := store.Extract{ID: j.id, Status: StatusCompleted, Result: j.data, Sources: sources,
		Warning: strings.Join(j.warnings, "; "), Credits: j.credits, ExpiresAt: time.Now().Add(s.Retention)}
	if err != nil {
		e.Status, e.Error, e.Result = StatusFailed, err.Error(), nil
	} else {
		// The model answered: the extraction's own credits are billed with
		// its result (its pages were, as its batch's).
		e.Charged = extractCredits
	}
	fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Store.FinishExtract(fctx, e); err != nil && !errors.Is(err, store.ErrNotFound) {
		s.Log.Error("ending an extract", "extract", j.id, "err", err)
		return
	}
	s.Log.Info("extract ended", "extract", j.id, "status", e.Status, "pages", j.read)
}

// work scrapes the job's pages, unless its batch did already, and asks
// the model.
func (s *Service) work(ctx context.Context, j *job) error {
	if s.Model == nil {
		return errors.New("no language model is configured (TRAWLER_LLM_BASE_URL): the extract cannot run")
	}
	if err := s.startBatch(ctx, j); err != nil {
		return err
	}
	batch, err := s.waitBatch(ctx, j)
	if err != nil {
		return err
	}
	pages, err := s.readPages(ctx, j, batch)
	if err != nil {
		return err
	}
	return s.ask(ctx, j, pages)
}

// startBatch finds the job's pages and starts the batch that scrapes
// them. A job whose batch exists has nothing to start; one that chose a
// batch id but stopped before the batch was made finds its pages again
// and makes it under that id.
func (s *Service) startBatch(ctx context.Context, j *job) error {
	if j.batchID != "" {
		_, err := s.Store.Job(ctx, j.team, crawl.KindBatch, j.batchID)
		if !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	pages, warnings := s.expand(ctx, j)
	if err := ctx.Err(); err != nil {
		return err
	}
	j.warnings = warnings
	if len(pages) == 0 {
		return errors.New("no page to read: " + strings.Join(warnings, "; "))
	}
	if j.batchID == "" {
		j.batchID = uuid.NewString()
	}
	if err := s.Store.SetExtractBatch(ctx, j.id, j.batchID, strings.Join(j.warnings, "; ")); err != nil {
		return err
	}
	spec := &crawl.Spec{Kind: crawl.KindBatch, ID: j.batchID, URLs: pages, Scrape: j.rec.Scrape}
	if _, err := s.Crawler.Create(ctx, j.team, spec, ""); err != nil {
		return fmt.Errorf("starting the scrape of the pages: %w", err)
	}
	return nil
}

// expand turns the job's URLs into its pages: a plain URL is one page, a
// wildcard the pages its map finds under its path; at most MaxPages in
// all, each once.
func (s *Service) expand(ctx context.Context, j *job) (pages, warnings []string) {
	seen := map[string]bool{}
	found := 0
	add := func(u string) {
		if seen[u] {
			return
		}
		seen[u] = true
		found++
		if len(pages) < MaxPages {
			pages = append(pages, u)
		}
	}
	for _, raw := range j.rec.URLs {
		prefix, wild := strings.CutSuffix(raw, "*")
		if !wild {
			add(raw)
			continue
		}
		links, err := s.mapWildcard(ctx, j, prefix)
		if ctx.Err() != nil {
			return nil, nil
		}
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("%s could not be mapped: %v", raw, err))
			continue
		}
		if len(links) == 0 {
			warnings = append(warnings, fmt.Sprintf("%s matched no page", raw))
		}
		for _, l := range links {
			add(l)
		}
	}
	if found > len(pages) {
		warnings = append(warnings, fmt.Sprintf("%d pages were found; an extract reads at most %d, so the first %d were read",
			found, MaxPages, MaxPages))
	}
	return pages, warnings
}

// mapWildcard returns the pages the map of prefix (a URL ending in /)
// finds under it.
func (s *Service) mapWildcard(ctx context.Context, j *job, prefix string) ([]string, error) {
	base, err := url.Parse(prefix)
	if err != nil {
		return nil, err
	}
	sitemap := "include"
	if j.rec.IgnoreSitemap {
		sitemap = "skip"
	}
	// The prefix's own page need not exist (/products/ may be a 404 whose
	// pages the home page links to): the site's root is mapped too.
	starts := []string{prefix}
	if root := (&url.URL{Scheme: base.Scheme, Host: base.Host, Path: "/"}).String(); root != prefix {
		starts = append(starts, root)
	}
	var out []string
	seen := map[string]bool{}
	var firstErr error
	for _, start := range starts {
		links, err := s.Crawler.Map(ctx, j.team, j.rec.TeamLimit, crawl.MapRequest{URL: start, Sitemap: sitemap,
			IncludeSubdomains: j.rec.IncludeSubdomains, IgnoreQueryParameters: true, Limit: mapLimit, Timeout: mapTimeout})
		if err != nil {
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		for _, l := range links {
			if under(l.URL, base, j.rec.IncludeSubdomains) && !seen[l.URL] {
				seen[l.URL] = true
				out = append(out, l.URL)
			}
		}
	}
	if len(out) == 0 && firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}

// under reports whether link is under base's path on base's scheme and
// host (or, with subdomains, one of its subdomains on the same port).
func under(link string, base *url.URL, subdomains bool) bool {
	u, err := url.Parse(link)
	if err != nil || !strings.EqualFold(u.Scheme, base.Scheme) {
		return false
	}
	host, want := strings.ToLower(u.Hostname()), strings.ToLower(base.Hostname())
	sameHost := host == want || subdomains && strings.HasSuffix(host, "."+want)
	if !sameHost || u.Port() != base.Port() {
		return false
	}
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	return strings.HasPrefix(p, base.EscapedPath())
}

// waitBatch waits for the job's batch to end and returns it.
func (s *Service) waitBatch(ctx context.Context, j *job) (store.Job, error) {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		b, err := s.Store.Job(ctx, j.team, crawl.KindBatch, j.batchID)
		if err != nil {
			return b, fmt.Errorf("reading the scrape of the pages: %w", err)
		}
		if b.Status != crawl.StatusScraping {
			return b, nil
		}
		select {
		case <-ctx.Done():
			return b, ctx.Err()
		case <-t.C:
		}
	}
}

// page is one scraped page as the model reads it.
type page struct {
	url, markdown string
}

// readPages reads the batch's documents; a page that failed, or answered
// an HTTP error, is left out and named in a warning.
func (s *Service) readPages(ctx context.Context, j *job, batch store.Job) ([]page, error) {
	j.credits = batch.Credits
	docs, _, err := s.Store.JobDocuments(ctx, j.batchID, 0, MaxPages, 1<<30)
	if err != nil {
		return nil, err
	}
	urls, err := s.Store.JobURLs(ctx, j.batchID)
	if err != nil {
		return nil, err
	}
	var failed []string
	for _, u := range urls {
		if u.State == store.URLFailed {
			failed = append(failed, fmt.Sprintf("%s (%s)", u.URL, u.Error))
		}
	}
	var pages []page
	for _, raw := range docs {
		var d struct {
			Markdown string         `json:"markdown"`
			Metadata map[string]any `json:"metadata"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			return nil, fmt.Errorf("reading a scraped page: %w", err)
		}
		u, _ := d.Metadata["sourceURL"].(string)
		if u == "" {
			u, _ = d.Metadata["url"].(string)
		}
		if code, _ := d.Metadata["statusCode"].(float64); code >= 400 {
			failed = append(failed, fmt.Sprintf("%s (HTTP %d)", u, int(code)))
			continue
		}
		final, _ := d.Metadata["url"].(string)
		pages = append(pages, page{url: u, markdown: content.ForModel(d.Markdown, cmp.Or(final, u))})
	}
	if len(failed) > 0 {
		j.warnings = append(j.warnings, fmt.Sprintf("%d of the pages could not be read and were left out: %s",
			len(failed), strings.Join(failed, ", ")))
	}
	if len(pages) == 0 {
		if batch.Error != "" {
			return nil, errors.New(batch.Error)
		}
		return nil, errors.New("no page could be read: " + strings.Join(failed, ", "))
	}
	return pages, nil
}

// ask makes the job's one model call over its pages.
func (s *Service) ask(ctx context.Context, j *job, pages []page) error {
	call := model.Call{Team: j.team, Request: j.id, Purpose: "extract", System: j.rec.SystemPrompt}
	if call.System == "" {
		call.System = defaultSystem
	}
	if len(j.rec.Schema) > 0 {
		schema, err := model.NormalizeSchema(j.rec.Schema)
		if err != nil {
			return fmt.Errorf("the schema %v", err)
		}
		call.Schema = schema
	} else {
		call.JSON = true
	}
	user, trimmed := prompt(call.System, j.rec.Prompt, call.Schema, pages, s.Model.InputBudget)
	call.User = user
	if trimmed {
		j.warnings = append(j.warnings, fmt.Sprintf("the pages' Markdown was trimmed to fit the model's context of %d tokens",
			s.Model.Config().ContextTokens))
	}
	ans, err := s.Model.Complete(ctx, call)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("the language model failed: %w", err)
	}
	data, err := json.Marshal(ans.JSON)
	if err != nil {
		return err
	}
	j.data = data
	j.credits += extractCredits
	j.read, j.sources = len(pages), sourcesOf(data, pages)
	return nil
}
