package crawl

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/trawler-dev/trawler/discover"
	"github.com/trawler-dev/trawler/scrape"
)

// ErrMapTimeout is a map that ran past its timeout.
var ErrMapTimeout = errors.New("map timed out")

// MapRequest is POST /v2/map, validated.
type MapRequest struct {
	URL                   string
	Search                string
	Sitemap               string // skip, include or only
	IncludeSubdomains     bool
	IgnoreQueryParameters bool
	Limit                 int
	Timeout               time.Duration // 0: none
	Location              *scrape.Location
}

// Link is one URL a map found.
type Link struct {
	URL         string `json:"url"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
}

// mapFollow is how many pages one hop from the start page a map reads for
// more links (over plain HTTP: a map never renders them).
const mapFollow = 24

// Map finds a site's URLs fast: its sitemaps, the links of its start page
// (scraped like any page, so a client-rendered start page works) and the
// links of the pages one hop away, without scraping them. A start URL the
// network guard blocks is refused with a *netguard.BlockedError.
func (s *Service) Map(ctx context.Context, team string, teamLimit int, req MapRequest) ([]Link, error) {
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	if err := s.checkStart(ctx, req.URL); err != nil {
		return nil, err
	}
	rules, err := discover.NewRules(discover.RulesOptions{Start: req.URL, CrawlEntireDomain: true,
		AllowSubdomains: req.IncludeSubdomains, IgnoreQueryParameters: req.IgnoreQueryParameters, DeduplicateSimilarURLs: true})
	if err != nil {
		return nil, err
	}
	start, err := url.Parse(req.URL)
	if err != nil {
		return nil, err
	}
	found := &mapLinks{rules: rules, ignoreQuery: req.IgnoreQueryParameters, seen: map[string]int{}}

	robots := discover.FetchRobots(ctx, s.client, start, robotsAgent)
	var wg sync.WaitGroup
	if req.Sitemap != "skip" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sitemap, _ := discover.Sitemaps(ctx, s.client, start, robots.Sitemaps(), robots, robotsAgent, min(req.Limit*2, 200000))
			for _, f := range sitemap {
				found.add(f.URL, "", "")
			}
		}()
	}
	var pageErr error
	if req.Sitemap != "only" {
		pageErr = s.mapFromStart(ctx, team, teamLimit, req, robots, found)
	}
	wg.Wait()
	links := found.links
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && len(links) == 0 {
		return nil, ErrMapTimeout
	}
	if len(links) == 0 && pageErr != nil {
		if errors.Is(pageErr, scrape.ErrTimeout) {
			return nil, ErrMapTimeout
		}
		return nil, pageErr
	}
	if req.Search != "" {
		rank(links, req.Search)
	}
	if len(links) > req.Limit {
		links = links[:req.Limit]
	}
	if links == nil {
		links = []Link{}
	}
	return links, nil
}

// mapLinks are the links a map found, one per URL as its rules identify
// it, in the order found; the sitemaps and the pages add to them at once.
type mapLinks struct {
	rules       *discover.Rules
	ignoreQuery bool

	mu    sync.Mutex
	seen  map[string]int // key → index in links
	links []Link
}

// add adds the link raw when the rules allow it, and reports whether it
// is new. A title (and description) fills in those of a link found
// without.
func (m *mapLinks) add(raw, title, desc string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	if ok, _ := m.rules.Allowed(u); !ok {
		return false
	}
	if m.ignoreQuery {
		u.RawQuery = ""
	}
	key := m.rules.Key(u)
	m.mu.Lock()
	defer m.mu.Unlock()
	if i, ok := m.seen[key]; ok {
		if title != "" && m.links[i].Title == "" {
			m.links[i].Title, m.links[i].Description = title, desc
		}
		return false
	}
	m.seen[key] = len(m.links)
	m.links = append(m.links, Link{URL: u.String(), Title: title, Description: desc})
	return true
}

// mapFromStart adds the start page and its links to found, then the links
// of the first mapFollow pages it links to that robots.txt allows. It
// returns the error of the start page's scrape.
func (s *Service) mapFromStart(ctx context.Context, team string, teamLimit int, req MapRequest, robots *discover.Robots, found *mapLinks) error {
	o := scrape.DefaultOptions()
	o.Formats = []scrape.Format{{Type: "links"}}
	o.Location = req.Location
	if d, ok := ctx.Deadline(); ok {
		o.Timeout = max(time.Second, time.Until(d))
	} else {
		o.Timeout = 30 * time.Second
	}
	doc, err := s.Scrape.Scrape(ctx, scrape.Request{Team: team, TeamLimit: teamLimit, URL: req.URL, Options: o, Job: true})
	if err != nil {
		return err
	}
	title, _ := doc.Metadata["title"].(string)
	desc, _ := doc.Metadata["description"].(string)
	found.add(req.URL, title, desc)
	var next []string
	for _, l := range doc.Links {
		// A page robots.txt disallows is listed, never fetched.
		if found.add(l, "", "") && len(next) < mapFollow {
			if u, err := url.Parse(l); err == nil && robots.Allowed(u) {
				next = append(next, l)
			}
		}
	}
	s.mapHop(ctx, next, found.add)
	return nil
}

// mapHop reads the links of pages (HTML over plain HTTP, four at a time).
func (s *Service) mapHop(ctx context.Context, pages []string, add func(raw, title, desc string) bool) {
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for _, p := range pages {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r, err := http.NewRequestWithContext(ctx, http.MethodGet, p, nil)
			if err != nil {
				return
			}
			resp, err := s.client.Do(r)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), "html") {
				return
			}
			body, err := io.ReadAll(io.LimitReader(resp.Body, 5<<20))
			if err != nil {
				return
			}
			base := resp.Request.URL
			for _, l := range discover.Links(base, body) {
				add(l.String(), "", "")
			}
		}()
	}
	wg.Wait()
}

// rank orders links by how many of the search terms their URL and title
// hold, keeping the found order among equals.
func rank(links []Link, search string) {
	terms := strings.Fields(strings.ToLower(search))
	score := func(l Link) int {
		hay := strings.ToLower(l.URL + " " + l.Title + " " + l.Description)
		n := 0
		for _, t := range terms {
			if strings.Contains(hay, t) {
				n++
			}
		}
		return n
	}
	scores := make(map[string]int, len(links))
	for _, l := range links {
		scores[l.URL] = score(l)
	}
	sort.SliceStable(links, func(a, b int) bool { return scores[links[a].URL] > scores[links[b].URL] })
}
