package scrape

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/netguard"
)

// A one-off scrape whose options need no rendering first asks for its page
// with Go's HTTP client, through an egress route of its own like a browser
// context's (the same guard, upstream proxy, accounting and headers a
// browser's navigation carries), with a cookie jar of its own that lives
// for the scrape. A server-rendered HTML page or a document (PDF, office)
// is then taken as it came, with no browser context at all: opening one
// (a renderer process) costs most of a static scrape's CPU, and under
// concurrency sets the pace for every scrape. Anything else (a page that
// needs rendering, another charset, a refusal that looks like a bot check)
// goes to the browser as before; an HTML page that needs rendering is
// handed to the tab, which renders that very response without asking the
// site again. engine says which way a page was taken: "fetch" here.

// directMaxBody bounds the body taken directly; a larger one goes to the
// browser (which streams documents to the parser).
const directMaxBody = 32 << 20

// chromeAccept is what Chromium's navigations send as Accept.
const chromeAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"

// directEligible says whether req may be fetched directly: nothing of the
// browser is asked for (rendering, actions, screenshots, the live page, a
// profile, a device), and the browsers' user agent is known.
func (s *Service) directEligible(req *Request) bool {
	o := &req.Options
	return s.Egress != nil && !o.needsRender() && o.Profile == nil && s.knownUA() != ""
}

// fetchDirect takes req's page without a browser when it can. It returns
// the page when taken; a prefetched HTML response that needs rendering;
// or neither, and the browser fetches the page itself.
func (s *Service) fetchDirect(ctx context.Context, req Request, guard *netguard.Cache) (*page, *prefetched, error) {
	route, err := s.Egress.LocalRoute()
	if err != nil {
		return nil, nil, nil
	}
	defer route.Close()
	requestID := req.RequestID
	if requestID == "" {
		requestID = req.id
	}
	choice := route.Bind(req.binding(requestID))
	proxyURL, _ := url.Parse(route.URL())
	jar, _ := cookiejar.New(nil)
	o := &req.Options
	tr := &http.Transport{Proxy: http.ProxyURL(proxyURL), TLSHandshakeTimeout: 15 * time.Second,
		ForceAttemptHTTP2: true, DisableKeepAlives: true}
	if o.SkipTLSVerification {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the request's own choice, as the browser's
	}
	defer tr.CloseIdleConnections()
	var blocked error
	check := func(u *url.URL) error {
		switch u.Scheme {
		case "http", "https":
		default:
			return fmt.Errorf("scheme %s is not fetched", u.Scheme)
		}
		if o.BlockAds && isAdHost(u.Hostname()) {
			blocked = errAdBlocked
			return blocked
		}
		if err := guard.CheckHost(ctx, u.Hostname()); err != nil {
			blocked = err
			return err
		}
		return nil
	}
	client := &http.Client{Transport: tr, Jar: jar, CheckRedirect: func(r *http.Request, via []*http.Request) error {
		if len(via) >= 20 {
			return errors.New("too many redirects")
		}
		return check(r.URL)
	}}
	u, err := url.Parse(req.URL)
	if err != nil || check(u) != nil {
		return nil, nil, blocked
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, req.URL, nil)
	if err != nil {
		return nil, nil, nil
	}
	ua := s.knownUA()
	hr.Header.Set("Accept", chromeAccept)
	hr.Header.Set("Upgrade-Insecure-Requests", "1")
	hr.Header.Set("Sec-Fetch-Site", "none")
	hr.Header.Set("Sec-Fetch-Mode", "navigate")
	hr.Header.Set("Sec-Fetch-User", "?1")
	hr.Header.Set("Sec-Fetch-Dest", "document")
	hr.Header.Set("Accept-Language", "en-US,en;q=0.9")
	if loc := o.Location; loc != nil {
		langs := loc.Languages
		if len(langs) == 0 {
			langs = defaultLanguages(loc.Country)
		}
		hr.Header.Set("Accept-Language", acceptLanguage(langs))
	}
	for k, v := range o.Headers {
		if strings.EqualFold(k, "User-Agent") {
			ua = v
			continue
		}
		hr.Header.Set(k, v)
	}
	hr.Header.Set("User-Agent", ua)
	resp, err := client.Do(hr)
	if blocked != nil {
		return nil, nil, blocked
	}
	if err != nil {
		// The browser tells a network failure properly (and a refusal of
		// the egress proxy comes back as the proxy's 403 page, below).
		return nil, nil, nil
	}
	defer resp.Body.Close()
	if resp.Header.Get("X-Trawler-Egress-Error") != "" {
		return nil, nil, nil // the browser meets the same refusal and reports it
	}
	ct := resp.Header.Get("Content-Type")
	final := resp.Request.URL.String()
	kind := documentKind(ct, final)
	if kind == "" && !isHTML(ct) {
		return nil, nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, directMaxBody+1))
	if err != nil || len(body) > directMaxBody {
		return nil, nil, nil
	}
	pg := &page{engine: "fetch", status: resp.StatusCode, finalURL: final, contentType: ct, body: body, proxyUsed: proxyBasic}
	if up := route.Upstream(); up != nil {
		pg.proxyUsed = up.Tier
	}
	pg.egressIn, pg.egressOut = route.Bytes()
	pg.warning = proxyWarning(choice)
	switch {
	case kind != "":
	case blockedByBot(pg):
		// Possibly a check of Go's client rather than of the page: the
		// browser asks again, as a browser.
		return nil, nil, nil
	case !looksServerRendered(body, ct):
		return nil, &prefetched{url: final, status: resp.StatusCode, contentType: ct, body: body}, nil
	}
	return pg, nil, nil
}

// knownUA is the browsers' user agent once a browser was asked; "" before.
func (s *Service) knownUA() string {
	if s.UA != nil {
		if ua := s.UA.get(); ua != "" {
			return ua
		}
	}
	s.spares.mu.Lock()
	defer s.spares.mu.Unlock()
	return s.spares.ua
}

// UserAgent is the browsers' user agent, learnt from the first browser
// that starts (Learn), so that scrapes taken without a browser send it
// from the first one on.
type UserAgent struct {
	mu sync.Mutex
	v  string
}

func (u *UserAgent) get() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.v
}

// Learn asks b for its user agent unless it is known.
func (u *UserAgent) Learn(b browsers.Browser) {
	if u.get() != "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	conn, err := b.CDP().Dial(ctx)
	if err != nil {
		return
	}
	defer conn.Close()
	if ua, err := browserUserAgent(ctx, conn); err == nil {
		u.mu.Lock()
		u.v = ua
		u.mu.Unlock()
	}
}
