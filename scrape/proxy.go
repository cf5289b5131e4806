package scrape

import (
	"bytes"
	"context"
	"strings"

	"github.com/trawler-dev/trawler/egress"
)

// Proxy tiers, as metadata.proxyUsed names them.
const (
	proxyBasic    = egress.TierBasic
	proxyEnhanced = egress.TierEnhanced
)

// enhancedCredits is what a page fetched through an enhanced upstream
// costs, at least (the spec: up to 5 credits).
const enhancedCredits = 5

// tier is the upstream tier req's page is fetched through: the one run
// chose for this attempt, else the one the options ask for (auto starts
// on basic).
func (req *Request) tier() string {
	if req.proxyTier != "" {
		return req.proxyTier
	}
	if req.Options.Proxy == proxyEnhanced || req.Options.Proxy == "stealth" {
		return proxyEnhanced
	}
	return proxyBasic
}

// proxyClass is the cache's name for the upstream a proxy option fetches
// through: stealth is enhanced; auto, which starts on basic and may retry
// on enhanced, is neither.
func proxyClass(option string) string {
	switch option {
	case "", proxyBasic:
		return proxyBasic
	case "stealth":
		return proxyEnhanced
	}
	return option
}

// binding is what a tab's egress route is bound to for req.
func (req *Request) binding(requestID string) egress.Binding {
	b := egress.Binding{Team: req.Team, Request: requestID, Tier: req.tier()}
	if l := req.Options.Location; l != nil {
		b.Country = strings.ToUpper(l.Country)
	}
	return b
}

// newRoute is a route of the egress proxy for a new browser context of
// browser id; nil when the service runs without the proxy (some tests of
// the package), and the context then inherits the browser's own.
func (s *Service) newRoute(id string) (*egress.Route, error) {
	if s.Egress == nil {
		return nil, nil
	}
	return s.Egress.ContextRoute(id)
}

// blockedByBot says whether a page looks like an anti-bot refusal: 403,
// 429, or a challenge page of the common bot managers. proxy auto retries
// such a page once through an enhanced upstream.
func blockedByBot(pg *page) bool {
	if pg.status == 403 || pg.status == 429 {
		return true
	}
	if pg.status != 200 && pg.status != 503 || len(pg.body) > 512<<10 {
		return false
	}
	head := pg.body
	if len(head) > 64<<10 {
		head = head[:64<<10]
	}
	for _, m := range challengeMarkers {
		if bytes.Contains(head, []byte(m)) {
			return true
		}
	}
	return false
}

// challengeMarkers are strings only the challenge pages of bot managers
// carry (Cloudflare, DataDome, PerimeterX, Imperva).
var challengeMarkers = []string{
	"<title>Just a moment...</title>",
	"cf-chl-", "/cdn-cgi/challenge-platform/",
	"Attention Required! | Cloudflare",
	"captcha-delivery.com",
	"px-captcha",
	"_Incapsula_Resource",
}

// retryEnhanced says whether run should fetch pg's page again through an
// enhanced upstream: proxy auto, the first try went out basic and was
// blocked, and an enhanced upstream for the request's country exists.
func (s *Service) retryEnhanced(req *Request, pg *page) bool {
	if req.Options.Proxy != "auto" || req.tier() != proxyBasic || s.Egress == nil || !blockedByBot(pg) {
		return false
	}
	country := ""
	if l := req.Options.Location; l != nil {
		country = strings.ToUpper(l.Country)
	}
	for _, u := range s.Egress.Upstreams() {
		if u.Tier == proxyEnhanced && (country == "" || u.Country == country) {
			return true
		}
	}
	return false
}

// fetchWithProxy runs fetch, and once more through an enhanced upstream
// when retryEnhanced says so. The first answer stands if the retry fails.
func (s *Service) fetchWithProxy(ctx context.Context, req Request, fetch fetcher) (*page, error) {
	pg, err := fetch(ctx, req)
	if err != nil || !s.retryEnhanced(&req, pg) {
		return pg, err
	}
	retry := req
	retry.proxyTier = proxyEnhanced
	pg2, err2 := fetch(ctx, retry)
	if err2 != nil {
		pg.warning = joinWarning(pg.warning, "proxy auto: the page looked blocked on basic, and the retry through an enhanced upstream failed: "+err2.Error())
		return pg, nil
	}
	pg2.warning = joinWarning(pg2.warning, "proxy auto: the page looked blocked on basic, so it was fetched again through an enhanced upstream")
	pg2.egressIn += pg.egressIn
	pg2.egressOut += pg.egressOut
	return pg2, nil
}
