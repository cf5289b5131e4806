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

	cdproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/egress"
	"github.com/trawler-dev/trawler/netguard"
	"github.com/trawler-dev/trawler/scrape/detect"
	"github.com/trawler-dev/trawler/scrape/tabs"
)

// A one-off scrape whose options need no rendering first asks for its page
// with Go's HTTP client, through an egress route of its own like a browser
// context's (the same guard, upstream proxy, accounting and headers a
// browser's navigation carries), with a cookie jar of its own that lives
// for the scrape. A server-rendered HTML page, a text body (JSON, XML,
// plain text) or a document (PDF, office) is then taken as it came, with no
// browser context at all: opening one (a renderer process) costs most of a
// static scrape's CPU, and under concurrency sets the pace for every
// scrape. Anything else (a page that needs rendering, a body whose charset
// Go cannot tell, a refusal that looks like a bot check) goes to the
// browser as before; an HTML page that needs rendering is handed to the
// tab, decoded, which renders that very response without asking the site
// again. engine says which way a page was taken: "fetch" here.

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
func (s *Service) fetchDirect(ctx context.Context, req Request, guard *netguard.Cache) (*page, *tabs.Response, error) {
	requestID := req.RequestID
	if requestID == "" {
		requestID = req.id
	}
	d := s.newDirect(&req, requestID, false)
	if d == nil {
		return nil, nil, nil
	}
	defer d.close()
	return d.get(ctx, req, guard)
}

// direct is Go's HTTP client on an egress route of its own, bound like a
// browser context's, with a cookie jar that lives as long as it does: one
// scrape's, or one job's pages on one worker (as a job's browser context
// lives for its pages on that worker).
type direct struct {
	s       *Service
	route   *egress.Route
	binding egress.Binding
	warning string // the route's, for each page
	jar     *recordingJar
	tr      *http.Transport
	client  *http.Client
}

// newDirect returns a client bound for req, keeping its connections open
// between pages if keepAlive says so; nil when no route can be had.
func (s *Service) newDirect(req *Request, requestID string, keepAlive bool) *direct {
	route, err := s.Egress.LocalRoute()
	if err != nil {
		return nil
	}
	d := &direct{s: s, route: route, binding: req.binding(requestID), jar: newRecordingJar()}
	d.warning = tabs.Bind(route, d.binding)
	proxyURL, _ := url.Parse(route.URL())
	d.tr = &http.Transport{Proxy: http.ProxyURL(proxyURL), TLSHandshakeTimeout: 15 * time.Second,
		ForceAttemptHTTP2: true, DisableKeepAlives: !keepAlive, MaxIdleConnsPerHost: 4}
	if req.Options.SkipTLSVerification {
		d.tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the request's own choice, as the browser's
	}
	d.client = &http.Client{Transport: d.tr, Jar: d.jar, CheckRedirect: func(r *http.Request, via []*http.Request) error {
		if len(via) >= 20 {
			return errors.New("too many redirects")
		}
		return r.Context().Value(directCheckKey{}).(*directCheck).check(r.URL)
	}}
	return d
}

// close ends the client's connections and its route (which reports the
// bytes it carried).
func (d *direct) close() {
	d.tr.CloseIdleConnections()
	d.route.Close()
}

// directCheck is what every hop of one request is checked by: the scheme,
// the ad-host rule and the network guard. blocked is the refusal, if any.
type directCheck struct {
	ctx      context.Context
	blockAds bool
	guard    *netguard.Cache
	blocked  error
}

type directCheckKey struct{}

func (c *directCheck) check(u *url.URL) error {
	switch u.Scheme {
	case "http", "https":
	default:
		return fmt.Errorf("scheme %s is not fetched", u.Scheme)
	}
	if c.blockAds && tabs.IsAdHost(u.Hostname()) {
		c.blocked = tabs.ErrAdBlocked
		return c.blocked
	}
	if err := c.guard.CheckHost(c.ctx, u.Hostname()); err != nil {
		c.blocked = err
		return err
	}
	return nil
}

// get takes req's page as fetchDirect says.
func (d *direct) get(ctx context.Context, req Request, guard *netguard.Cache) (*page, *tabs.Response, error) {
	o := &req.Options
	chk := &directCheck{ctx: ctx, blockAds: o.BlockAds, guard: guard}
	u, err := url.Parse(req.URL)
	if err != nil || chk.check(u) != nil {
		return nil, nil, chk.blocked
	}
	hr, err := http.NewRequestWithContext(context.WithValue(ctx, directCheckKey{}, chk), http.MethodGet, req.URL, nil)
	if err != nil {
		return nil, nil, nil
	}
	ua := d.s.knownUA()
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
			langs = tabs.DefaultLanguages(loc.Country)
		}
		hr.Header.Set("Accept-Language", tabs.AcceptLanguage(langs))
	}
	for k, v := range o.Headers {
		if strings.EqualFold(k, "User-Agent") {
			ua = v
			continue
		}
		hr.Header.Set(k, v)
	}
	hr.Header.Set("User-Agent", ua)
	in0, out0 := d.route.Bytes()
	resp, err := d.client.Do(hr)
	if chk.blocked != nil {
		return nil, nil, chk.blocked
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
	kind := detect.DocumentKind(ct, final)
	text := kind == "" && detect.TextType(ct) != ""
	if kind == "" && !detect.IsHTML(ct) && !text {
		return nil, nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, directMaxBody+1))
	if err != nil || len(body) > directMaxBody {
		return nil, nil, nil
	}
	if kind == "" {
		var ok bool
		if body, ok = detect.Decode(body, ct); !ok {
			return nil, nil, nil // the browser's decoder says what it shows
		}
	}
	pg := &page{engine: "fetch", status: resp.StatusCode, finalURL: final, contentType: ct, body: body, proxyUsed: proxyBasic}
	if up := d.route.Upstream(); up != nil {
		pg.proxyUsed = up.Tier
	}
	in, out := d.route.Bytes()
	pg.egressIn, pg.egressOut = in-in0, out-out0
	pg.warning = d.warning
	switch {
	case kind != "":
	case blockedByBot(pg):
		// Possibly a check of Go's client rather than of the page: the
		// browser asks again, as a browser.
		return nil, nil, nil
	case text:
	case !detect.ServerRendered(body, ct):
		return nil, &tabs.Response{URL: final, Status: resp.StatusCode, ContentType: ct, Body: body}, nil
	}
	return pg, nil, nil
}

// recordingJar is a cookie jar that also keeps every cookie it was given,
// in order, so that a job whose pages move from Go's client to a browser
// context can hand its cookies over with all their attributes.
type recordingJar struct {
	*cookiejar.Jar
	mu  sync.Mutex
	set []jarCookie
}

type jarCookie struct {
	u *url.URL
	c *http.Cookie
}

func newRecordingJar() *recordingJar {
	j, _ := cookiejar.New(nil)
	return &recordingJar{Jar: j}
}

func (j *recordingJar) SetCookies(u *url.URL, cookies []*http.Cookie) {
	j.Jar.SetCookies(u, cookies)
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, c := range cookies {
		j.set = append(j.set, jarCookie{u: u, c: c})
	}
}

// cdpCookies are the jar's cookies as Storage.setCookies takes them, in
// the order they were set (a later one replaces an earlier one of the same
// name, domain and path, as in the jar).
func (j *recordingJar) cdpCookies() []*network.CookieParam {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]*network.CookieParam, 0, len(j.set))
	for _, jc := range j.set {
		c := jc.c
		p := &network.CookieParam{Name: c.Name, Value: c.Value, Secure: c.Secure, HTTPOnly: c.HttpOnly,
			Domain: c.Domain, Path: c.Path, SameSite: sameSites[c.SameSite]}
		if c.Domain == "" {
			p.URL = (&url.URL{Scheme: jc.u.Scheme, Host: jc.u.Host, Path: "/"}).String()
		}
		if c.Path == "" {
			p.Path = defaultCookiePath(jc.u.Path)
		}
		switch {
		case c.MaxAge < 0:
			p.Expires = 1 // gone: the jar dropped it too
		case c.MaxAge > 0:
			p.Expires = cdproto.TimeSinceEpoch(time.Now().Unix() + int64(c.MaxAge))
		case !c.Expires.IsZero():
			p.Expires = cdproto.TimeSinceEpoch(c.Expires.Unix())
		}
		out = append(out, p)
	}
	return out
}

// sameSites are the browser's names of net/http's SameSite modes; the
// default mode sends none.
var sameSites = map[http.SameSite]network.CookieSameSite{http.SameSiteStrictMode: network.CookieSameSiteStrict,
	http.SameSiteLaxMode: network.CookieSameSiteLax, http.SameSiteNoneMode: network.CookieSameSiteNone}

// defaultCookiePath is RFC 6265's default-path of a cookie set by a
// response to a request for path.
func defaultCookiePath(path string) string {
	if path == "" || path[0] != '/' {
		return "/"
	}
	i := strings.LastIndex(path, "/")
	if i == 0 {
		return "/"
	}
	return path[:i]
}

// knownUA is the browsers' user agent, assumed from their Chromium's
// version or said by a browser; "" while neither is known.
func (s *Service) knownUA() string {
	if s.UA != nil {
		if ua := s.UA.get(); ua != "" {
			return ua
		}
	}
	return s.tabPool().KnownUserAgent()
}

// UserAgent is the browsers' user agent, so that scrapes taken without a
// browser send it from the first one on: assumed at start from their
// Chromium's version (Assume), else learnt from the first browser that
// starts (Learn). What that browser says wins over what was assumed.
type UserAgent struct {
	mu     sync.Mutex
	v      string
	learnt bool // a browser said it
}

func (u *UserAgent) get() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.v
}

// Assume takes the user agent that a Chromium of version reports until a
// browser says its own; it reports whether version names one.
func (u *UserAgent) Assume(version string) bool {
	ua, ok := browsers.ReducedUserAgent(version)
	if ok {
		u.mu.Lock()
		if !u.learnt {
			u.v = ua
		}
		u.mu.Unlock()
	}
	return ok
}

// Learn asks b for its user agent unless a browser said it already.
func (u *UserAgent) Learn(b browsers.Browser) {
	u.mu.Lock()
	learnt := u.learnt
	u.mu.Unlock()
	if learnt {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	conn, err := b.CDP().Dial(ctx)
	if err != nil {
		return
	}
	defer conn.Close()
	if ua, err := tabs.BrowserUserAgent(ctx, conn); err == nil {
		u.mu.Lock()
		u.v, u.learnt = ua, true
		u.mu.Unlock()
	}
}
