package crawl

// Queue is a team's share of the job queue: pages of its running crawls
// and batch scrapes.
type Queue struct {
	// Active pages are being scraped now.
	Active int
	// Waiting pages are queued for a lane.
	Waiting int
}

// TeamQueue returns team's pages in flight and queued, across its running
// jobs.
func (s *Service) TeamQueue(team string) Queue {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := Queue{Active: s.teamInflight[team]}
	for _, j := range s.jobs {
		if j.team != team {
			continue
		}
		j.mu.Lock()
		if j.status == StatusScraping {
			q.Waiting += len(j.queue)
		}
		j.mu.Unlock()
	}
	return q
}
