package crawl

import (
	"context"
	"errors"
	"net/url"
	"sync"

	"github.com/trawler-dev/trawler/netguard"
	"github.com/trawler-dev/trawler/webhook"
)

// checkStart refuses a job's or a map's start URL when the network guard
// blocks its host, so that a request that cannot fetch a single page is
// refused when it is made rather than accepted and failed page by page.
// A host that does not resolve is not refused here: DNS may come back, and
// the page reports it.
func (s *Service) checkStart(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	return blockedOnly(s.Guard.CheckHost(ctx, u.Hostname()))
}

// blockedOnly keeps the guard's refusals and drops its resolution errors.
func blockedOnly(err error) error {
	var blocked *netguard.BlockedError
	if errors.As(err, &blocked) {
		return blocked
	}
	return nil
}

// checkConcurrency is how many hosts Blocked resolves at once.
const checkConcurrency = 16

// Blocked applies the network guard to each of urls (a batch's) and
// returns, at the index of each URL it blocks, why; nil where it lets the
// URL through (hosts that do not resolve included, as for checkStart).
// Each host is resolved once.
func (s *Service) Blocked(ctx context.Context, urls []string) []*netguard.BlockedError {
	out := make([]*netguard.BlockedError, len(urls))
	if s.Guard.AllowPrivate {
		return out
	}
	byHost := map[string][]int{}
	for i, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			continue // the caller validated the URLs; the page reports it
		}
		byHost[u.Hostname()] = append(byHost[u.Hostname()], i)
	}
	sem := make(chan struct{}, checkConcurrency)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for host, at := range byHost {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var blocked *netguard.BlockedError
			if !errors.As(s.Guard.CheckHost(ctx, host), &blocked) {
				return
			}
			mu.Lock()
			for _, i := range at {
				out[i] = blocked
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// CheckWebhook returns why the network guard refuses w's target, or nil
// (also when w is nil or its host does not resolve now: delivery retries).
// A webhook the guard refuses would never be delivered, so a job that asks
// for one is refused when it is made.
func (s *Service) CheckWebhook(ctx context.Context, w *webhook.Spec) *netguard.BlockedError {
	if w == nil {
		return nil
	}
	u, err := url.Parse(w.URL)
	if err != nil {
		return nil // webhook.Decode validated it
	}
	var blocked *netguard.BlockedError
	if errors.As(s.Guard.CheckHost(ctx, u.Hostname()), &blocked) {
		return blocked
	}
	return nil
}
