package crawl

import (
	"context"
	"net/url"
	"time"

	"github.com/trawler-dev/trawler/discover"
	"github.com/trawler-dev/trawler/store"
)

// robotsAgent is the user agent robots.txt rules are read for unless the
// job names another (robotsUserAgent).
const robotsAgent = "TrawlerBot"

// discover reads the start host's robots.txt and, unless the crawl skips
// them, its sitemaps, adding their URLs at depth 0.
func (s *Service) discover(j *job) {
	defer s.wg.Done()
	defer func() {
		j.mu.Lock()
		j.discovering = false
		j.mu.Unlock()
		s.maybeEnd(j)
		s.broadcast()
	}()
	start, err := url.Parse(j.spec.URL)
	if err != nil {
		return
	}
	robots := s.robotsFor(j.ctx, j, start)
	c := j.spec.Crawl
	if !c.IgnoreRobotsTxt {
		// A crawl-delay beyond a minute is a site asking not to be crawled
		// at all; it is capped rather than taken as days between pages.
		if d := min(robots.CrawlDelay(), time.Minute); d > 0 {
			j.mu.Lock()
			j.delay, j.concurrency = max(j.delay, d), 1
			j.mu.Unlock()
		}
	}
	if c.Sitemap == "skip" {
		return
	}
	var r *discover.Robots
	if !c.IgnoreRobotsTxt {
		r = robots
	}
	found, warnings := discover.Sitemaps(j.ctx, s.client, start, robots.Sitemaps(), r, s.robotsAgent(j), min(100000, c.Limit*4+100))
	j.mu.Lock()
	j.warnings = append(j.warnings, warnings...)
	var add []store.JobURL
	for _, f := range found {
		u, err := url.Parse(f.URL)
		if err != nil {
			continue
		}
		if nu, ok := s.admitLocked(j, u, 0); ok {
			add = append(add, nu)
		}
	}
	j.mu.Unlock()
	if len(add) == 0 {
		return
	}
	if err := s.Store.AddJobURLs(context.Background(), j.id, add); err != nil {
		if s.lostLease(j, err) {
			return
		}
		s.Log.Error("storing sitemap URLs", "job", j.id, "err", err)
		return
	}
	j.mu.Lock()
	for i := range add {
		if add[i].State == store.URLQueued {
			j.queue = append(j.queue, &add[i])
		}
	}
	j.mu.Unlock()
	s.broadcast()
}

func (s *Service) robotsAgent(j *job) string {
	if a := j.spec.Crawl.RobotsUserAgent; a != "" {
		return a
	}
	return robotsAgent
}

// robotsFor returns the robots.txt of u's host for job j, fetching it the
// first time.
func (s *Service) robotsFor(ctx context.Context, j *job, u *url.URL) *discover.Robots {
	key := u.Scheme + "://" + u.Host
	j.mu.Lock()
	r := j.robotsTxt[key]
	j.mu.Unlock()
	if r != nil {
		return r
	}
	r = discover.FetchRobots(ctx, s.client, u, s.robotsAgent(j))
	j.mu.Lock()
	if have := j.robotsTxt[key]; have != nil {
		r = have
	} else {
		j.robotsTxt[key] = r
		if r.Err != "" {
			j.warnings = append(j.warnings, "robots.txt of "+u.Host+": "+r.Err)
		}
	}
	j.mu.Unlock()
	return r
}

// admitLocked decides whether a crawl takes u at depth, marking it seen.
// A URL robots.txt blocks is returned with state robots (it is reported,
// not counted against the limit).
func (s *Service) admitLocked(j *job, u *url.URL, depth int) (store.JobURL, bool) {
	c := j.spec.Crawl
	if c.MaxDiscoveryDepth != nil && depth > *c.MaxDiscoveryDepth {
		return store.JobURL{}, false
	}
	if ok, _ := j.rules.Allowed(u); !ok {
		return store.JobURL{}, false
	}
	key := j.rules.Key(u)
	if j.keys[key] {
		return store.JobURL{}, false
	}
	if !c.IgnoreRobotsTxt {
		if r := j.robotsTxt[u.Scheme+"://"+u.Host]; r != nil && !r.Allowed(u) {
			j.keys[key] = true
			j.robots++
			return store.JobURL{Key: key, URL: u.String(), Depth: depth, Seq: -1, State: store.URLRobots}, true
		}
	}
	if j.admitted >= c.Limit {
		return store.JobURL{}, false
	}
	j.keys[key] = true
	j.admitted++
	seq := j.nextSeq
	j.nextSeq++
	return store.JobURL{Key: key, URL: u.String(), Depth: depth, Seq: seq, State: store.URLQueued}, true
}
