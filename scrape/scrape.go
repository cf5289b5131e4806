// Package scrape owns one URL (or bytes) → one Document: the browser tab on
// a leased browser, navigation, the smart wait, actions, capture, the
// choice between taking a server-rendered page from the network and
// rendering it, the cache policy, and the transform into the requested
// formats (through package content; documents through package parse).
package scrape

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/content"
	"github.com/trawler-dev/trawler/discover"
	"github.com/trawler-dev/trawler/egress"
	"github.com/trawler-dev/trawler/index"
	"github.com/trawler-dev/trawler/model"
	"github.com/trawler-dev/trawler/netguard"
	"github.com/trawler-dev/trawler/parse"
	"github.com/trawler-dev/trawler/profiles"
	"github.com/trawler-dev/trawler/scrape/branding"
	"github.com/trawler-dev/trawler/scrape/detect"
	"github.com/trawler-dev/trawler/scrape/media"
	"github.com/trawler-dev/trawler/scrape/tabs"
	"github.com/trawler-dev/trawler/store"
)

// Errors callers branch on.
var (
	// ErrTimeout: the scrape ran past its timeout.
	ErrTimeout = errors.New("scrape timed out")
	// ErrNoCachedData: minAge was set and the cache has nothing old enough.
	ErrNoCachedData = errors.New("no cached data for this URL satisfies minAge")
	// ErrLockdownMiss: lockdown was set and the cache has no entry.
	ErrLockdownMiss = errors.New("lockdown: the cache has no entry for this URL")
	// ErrPageCrashed: the page crashed its tab.
	ErrPageCrashed = tabs.ErrPageCrashed
)

// Service scrapes pages on browsers leased from the pool.
type Service struct {
	Pool  *browsers.Pool
	Store *store.Store
	Guard *netguard.Guard
	Log   *slog.Logger
	// Egress is the egress proxy: each browser context a scrape or job
	// makes gets a route of its own, bound to its team, request and proxy
	// tier. Nil: contexts use their browser's route.
	Egress *egress.Proxy
	// UA, when set, is the browsers' user agent, assumed from their
	// Chromium's version at start or learnt from the first browser (else
	// the first scrape asks its browser).
	UA *UserAgent
	// Renders counts the pages rendered and the time they took.
	Renders RenderStats
	// Retention is how long a scrape's result stays retrievable by id.
	Retention time.Duration
	// Profiles opens the browser profiles that requests name.
	Profiles *profiles.Opener
	// SharedCache lets a team's scrape be answered by a page another team
	// fetched, when that page came from public addresses only
	// (TRAWLER_SHARED_CACHE). Off, each team reads only its own entries.
	SharedCache bool
	// ReuseTabs lets a team's single scrapes reuse a tab, cleared, that an
	// earlier one of the team's used (recycle.go).
	ReuseTabs bool
	// SpareTabs is how many blank tabs, each in a fresh browser context,
	// are kept ready in all for one-off scrapes, on browsers only jobs use
	// (spare.go); 0 keeps none.
	SpareTabs int
	// OnCached, when set, is called after a page is written to the cache
	// (the search index follows the cache), with the cache log's row and,
	// when the scrape's own transform is the index's document, that
	// document (else nil: the index converts the page itself).
	OnCached func(seq int64, d *index.Doc)
	// Model answers the model-backed formats (json, summary, question,
	// onlyCleanContent); nil when no model is configured.
	Model *model.Client
	// Media is where the audio and video formats keep their files, and
	// the base of their links (package media).
	Media media.Options

	tabsOnce sync.Once
	tabs     *tabs.Pool // tabPool
}

// Request is one scrape.
type Request struct {
	Team      string
	TeamLimit int
	URL       string
	Options   Options
	// Job marks a page of a crawl or batch scrape: its document is kept by
	// the job, not under its own id.
	Job bool
	// Discover asks for every link of the page in Document.Discovered,
	// whatever the formats (a crawl follows them).
	Discover bool
	// RequestID is the request the page's model calls are counted under
	// (a job, a search); empty: the scrape's own id.
	RequestID string

	// proxyTier is the upstream tier of this attempt (run sets enhanced
	// for proxy auto's retry); empty: what Options.Proxy asks.
	proxyTier string
	// id is the scrape's own id, set by run.
	id string
}

// fetcher takes a page from its target: Service.fetch for a one-off scrape
// on a fresh tab, Worker.fetch for a job's page on the job's tab.
type fetcher func(ctx context.Context, req Request) (*page, error)

// page is what a scrape took from the target, before any transform.
type page struct {
	status      int
	finalURL    string
	contentType string
	body        []byte
	screenshot  string
	engine      string // browser-fetch or browser-render
	actions     *ActionResults
	warning     string
	// private: a request of the page went to a non-public address (known
	// only while private networks are allowed; otherwise none can).
	private bool
	// branding is what the rendered page says of its brand, when asked.
	branding *branding.Branding
	// teamWait is how long the scrape waited for its browser because its
	// team was at its concurrency limit.
	teamWait time.Duration
	// media is the page's main audio or video, taken through the browser,
	// when asked.
	media *media.Taken
	// proxyUsed is the tier of upstream the page left through: basic
	// when it went direct.
	proxyUsed string
	// egressIn and egressOut are the bytes the page's browser context
	// received and sent through the egress proxy.
	egressIn, egressOut int64
}

// Scrape runs one scrape and returns its document.
func (s *Service) Scrape(ctx context.Context, req Request) (*Document, error) {
	guard := s.hostGuard()
	return s.run(ctx, req, guard, func(ctx context.Context, req Request) (*page, error) {
		return s.fetch(ctx, req, guard)
	})
}

// hostGuard is the network guard with a short memory, for one scrape or
// one job.
func (s *Service) hostGuard() *netguard.Cache {
	return &netguard.Cache{Guard: s.Guard, TTL: time.Minute}
}

// run is a scrape, whichever way its page is fetched: guard, cache, fetch,
// transform, metadata, result. guard is the one fetch applies; nil for
// bytes that were uploaded, not fetched.
func (s *Service) run(ctx context.Context, req Request, guard *netguard.Cache, fetch fetcher) (*Document, error) {
	f, err := s.begin(ctx, req, guard, fetch)
	if err != nil {
		return nil, err
	}
	return f.Finish()
}

// Fetched is a scrape whose page is in hand (fetched, or read from the
// cache): what is left, Finish, is the work of this process (transform,
// model passes, storing the result), which needs neither the site nor
// the browser. A job's lane hands it on and fetches its next page.
type Fetched struct {
	s          *Service
	ctx        context.Context
	cancel     context.CancelFunc
	req        Request
	guard      *netguard.Cache
	id         string
	start      time.Time
	seq        int64 // the cache log's row of a page this scrape cached
	cached     store.CachedPage
	cacheState string
	cachedAt   time.Time
	pg         *page
}

// begin is run up to the page in hand. The Fetched it returns holds the
// scrape's timeout: Finish (or Cancel) must be called.
func (s *Service) begin(ctx context.Context, req Request, guard *netguard.Cache, fetch fetcher) (_ *Fetched, err error) {
	o := &req.Options
	id := uuid.NewString()
	req.id = id
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer func() {
		if err != nil {
			cancel()
		}
	}()

	// The guard answers before the cache does: a page cached while private
	// networks were allowed must not answer once they are not.
	cacheOnly := o.Lockdown || o.MinAge != nil
	if guard != nil {
		if err := s.checkTarget(ctx, guard, req.URL, cacheOnly); err != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, ErrTimeout
			}
			return nil, err
		}
	}
	key := cacheKey(req.URL, o)
	var seq int64 // the cache log's row of a page this scrape cached
	var cached store.CachedPage
	cacheState := "miss"
	var cachedAt time.Time
	var pg *page
	// Branding and media are read from the rendered page: a cached copy
	// cannot answer them.
	if cacheOnly || (o.MaxAge > 0 && !o.needsLivePage()) {
		c, err := s.Store.Page(ctx, s.cacheLookup(req.Team, key, o))
		switch {
		case err == nil:
			pg = &page{status: c.StatusCode, finalURL: c.FinalURL, contentType: c.ContentType, body: c.Body,
				screenshot: c.Screenshot, engine: c.Engine}
			cacheState, cachedAt = "hit", c.CreatedAt
		case !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
	}
	switch {
	case pg == nil && o.Lockdown:
		if err := s.bill(charge(req, guard == nil, id, LockdownMissCredits)); err != nil {
			return nil, err
		}
		return nil, ErrLockdownMiss
	case pg == nil && o.MinAge != nil:
		return nil, ErrNoCachedData
	case pg == nil:
		var err error
		pg, err = s.fetchWithProxy(ctx, req, fetch)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, ErrTimeout
			}
			return nil, err
		}
		if o.StoreInCache && !o.ZeroDataRetention && pg.status < 500 {
			private := pg.private || s.Guard.AllowPrivate && nonPublic(ctx, s.Guard.Resolver, req.URL, pg.finalURL)
			cached = store.CachedPage{Team: req.Team, Key: key, URL: req.URL, CreatedAt: time.Now(),
				StatusCode: pg.status, FinalURL: pg.finalURL, ContentType: pg.contentType, Body: pg.body,
				Screenshot: pg.screenshot, Engine: pg.engine, Private: private}
			seq, err = s.Store.PutPage(context.Background(), cached)
			if err != nil {
				s.Log.Error("writing the cache", "err", err)
			}
		}
	}

	if pg.media != nil && pg.media.TooLarge != nil {
		pg.media.Remove()
		return nil, pg.media.TooLarge
	}
	return &Fetched{s: s, ctx: ctx, cancel: cancel, req: req, guard: guard, id: id, start: start, seq: seq,
		cached: cached, cacheState: cacheState, cachedAt: cachedAt, pg: pg}, nil
}

// Cancel drops a fetched page without finishing it (its job was
// cancelled).
func (f *Fetched) Cancel() {
	if f.pg.media != nil {
		f.pg.media.Remove()
	}
	f.cancel()
}

// Finish makes the scrape's document from its page.
func (f *Fetched) Finish() (*Document, error) {
	defer f.cancel()
	s, ctx, req, id, seq, pg := f.s, f.ctx, f.req, f.id, f.seq, f.pg
	o := &req.Options
	doc, err := s.transform(ctx, req, pg, seq > 0 && s.OnCached != nil)
	if seq > 0 && s.OnCached != nil {
		s.OnCached(seq, doc.indexDoc(f.cached))
	}
	if err != nil {
		return nil, err
	}
	f.describe(doc)
	credits := pageCredits(doc, pg, o)
	requestID := req.RequestID
	if requestID == "" {
		requestID = id
	}
	if o.NeedsModel() || s.Model != nil && o.Has("question") {
		credits += s.modelPass(ctx, req, requestID, doc)
	} else if q, ok := o.Format("question"); ok {
		// Without a model the answer is the page's own words.
		if doc.Answer = bestPassage(doc.modelInput, q.Question); doc.Answer != "" {
			doc.Warning = joinWarning(doc.Warning, "question: no language model is configured, so the answer is the passage of the page that best matches the question")
		} else {
			doc.Warning = joinWarning(doc.Warning, "question: no language model is configured, and no passage of the page has a word of the question")
		}
	}
	if h, ok := o.Format("highlights"); ok {
		if doc.Highlights = highlights(doc.modelInput, h.Query); doc.Highlights == "" {
			doc.Warning = joinWarning(doc.Warning, "highlights: no passage of the page has a word of the query")
		}
	}
	if ct, ok := o.Format("changeTracking"); ok {
		credits += s.trackChanges(ctx, req, requestID, doc, pg, ct)
	}
	if o.needsLivePage() {
		if f.cacheState == "hit" {
			doc.Warning = joinWarning(doc.Warning, "branding, audio and video are read from the rendered page, and this answer came from the cache (lockdown or minAge)")
		} else {
			doc.Branding = pg.branding
			s.brandPersonality(ctx, req, requestID, doc)
			s.finishMedia(ctx, req, doc, pg)
		}
	}
	doc.Metadata["creditsUsed"] = credits
	doc.Metadata["timeTaken"] = time.Since(f.start).Milliseconds()
	doc.Warning = joinWarning(joinWarning(pg.warning, doc.Warning), o.Unserved)

	if err := f.keep(doc, credits); err != nil {
		return nil, err
	}
	return doc, nil
}

// describe fills the document's metadata with what the fetch knows of the
// page: its URLs, status and type, the scrape's id, engine, proxy and
// cache state, and the wait for the team's concurrency.
func (f *Fetched) describe(doc *Document) {
	pg, md := f.pg, doc.Metadata
	md["sourceURL"] = f.req.URL
	md["url"] = pg.finalURL
	md["statusCode"] = pg.status
	md["contentType"] = pg.contentType
	md["scrapeId"] = f.id
	md["proxyUsed"] = proxyBasic
	if pg.proxyUsed != "" {
		md["proxyUsed"] = pg.proxyUsed
	}
	md["cacheState"] = f.cacheState
	md["engine"] = pg.engine
	if !f.cachedAt.IsZero() {
		md["cachedAt"] = f.cachedAt.UTC().Format(time.RFC3339Nano)
	}
	md["concurrencyLimited"] = pg.teamWait > 0
	if pg.teamWait > 0 {
		md["concurrencyQueueDurationMs"] = pg.teamWait.Milliseconds()
	}
	if pg.status >= 400 {
		md["error"] = http.StatusText(pg.status)
		if md["error"] == "" {
			md["error"] = fmt.Sprintf("HTTP %d", pg.status)
		}
		doc.Warning = joinWarning(doc.Warning, fmt.Sprintf("the page answered HTTP %d", pg.status))
	}
}

// pageCredits is what taking the page costs, before the model's formats:
// one, or a PDF's pages; five in lockdown; at least enhancedCredits for a
// page that an enhanced upstream served.
func pageCredits(doc *Document, pg *page, o *Options) int {
	credits := 1
	if doc.pdfPages > 1 {
		credits = doc.pdfPages
	}
	if o.Lockdown {
		credits = 5
	}
	if pg.proxyUsed == proxyEnhanced && pg.status < 400 && credits < enhancedCredits {
		credits = enhancedCredits
	}
	return credits
}

// keep writes the scrape's charge with its stored result, or alone when
// the result is not stored. A result the store could not take (or a
// charge it could not record) is not answered: the caller would hold an
// id that finds nothing, or a page nobody paid for.
func (f *Fetched) keep(doc *Document, credits int) error {
	s, req, o := f.s, f.req, &f.req.Options
	due := charge(req, f.guard == nil, f.id, credits)
	if o.ZeroDataRetention || o.Lockdown || req.Job {
		return s.bill(due)
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encoding the scrape: %w", err)
	}
	retention := s.Retention
	if retention == 0 {
		retention = 24 * time.Hour
	}
	now := time.Now()
	// Not the request's context: a result whose charge was counted is
	// stored even when the client has gone.
	if err := s.Store.PutScrape(context.Background(), f.id, req.Team, now, now.Add(retention), raw, due); err != nil {
		return fmt.Errorf("storing the scrape: %w", err)
	}
	return nil
}

func joinWarning(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// checkTarget applies the network guard to the host of u. A host name
// that does not resolve refuses a fetch, but not a request answered from
// the cache only (lockdown, minAge): that one can only get a page fetched
// from public addresses while the guard is on (see cacheLookup).
func (s *Service) checkTarget(ctx context.Context, guard *netguard.Cache, u string, cacheOnly bool) error {
	pu, err := url.Parse(u)
	if err != nil {
		return err
	}
	err = guard.CheckHost(ctx, pu.Hostname())
	var unresolved *netguard.ResolveError
	if cacheOnly && errors.As(err, &unresolved) {
		return nil
	}
	return err
}

// cacheLookup is which cache entries may answer team's scrape: the team's
// own, and with a shared cache other teams' pages fetched from public
// addresses; young enough for maxAge (or old enough for minAge) and with a
// screenshot when one is asked for. While the guard is on, no page fetched
// from a non-public address answers, whoever fetched it.
func (s *Service) cacheLookup(team, key string, o *Options) store.PageLookup {
	q := store.PageLookup{Team: team, Key: key, Shared: s.SharedCache, PublicOnly: !s.Guard.AllowPrivate}
	now := time.Now()
	if o.MinAge != nil {
		q.Before = now.Add(-*o.MinAge)
	} else {
		q.After = now.Add(-o.MaxAge)
	}
	_, q.Screenshot = o.Screenshot()
	return q
}

// nonPublic reports whether any of urls has a host that does not resolve
// to public addresses only, whatever the operator allows: such a page is
// never shared, nor served once the guard is on. A host that does not
// resolve here (a name only the browsers' --host-resolver-rules know)
// counts as non-public.
func nonPublic(ctx context.Context, r *net.Resolver, urls ...string) bool {
	strict := &netguard.Guard{Resolver: r}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			return true
		}
		if u.Hostname() == "" {
			continue // about:, data:
		}
		if strict.CheckHost(ctx, u.Hostname()) != nil {
			return true
		}
	}
	return false
}

// cacheKey identifies what was fetched: the URL and every option that
// changes what may be fetched, how, or what the page shows. A page taken
// without checking its certificate never answers a scrape that asks for
// the check, nor one taken through one proxy tier a scrape that asks for
// another (auto, which may end on enhanced, is a class of its own).
// Headers, actions and profiles change it too: such scrapes are never
// cached (api.scrapeOptionsRequest.options).
func cacheKey(u string, o *Options) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00mobile=%v\x00ads=%v\x00wait=%d\x00", discover.PageKey(u), o.Mobile, o.BlockAds, o.WaitFor.Milliseconds())
	fmt.Fprintf(h, "tls=%v\x00proxy=%s\x00", !o.SkipTLSVerification, proxyClass(o.Proxy))
	if o.Location != nil {
		fmt.Fprintf(h, "country=%s\x00langs=%s\x00", strings.ToUpper(o.Location.Country), strings.Join(o.Location.Languages, ","))
	}
	if f, ok := o.Screenshot(); ok {
		fmt.Fprintf(h, "shot=%v,%d,%v\x00", f.FullPage, f.Quality, f.Viewport)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// fetch takes the page from the target: directly when the page needs no
// browser, else on a tab of a leased browser; run has applied guard to its
// host.
func (s *Service) fetch(ctx context.Context, req Request, guard *netguard.Cache) (*page, error) {
	pg, pre, err := s.fetchFirstDirect(ctx, req, guard)
	if err != nil || pg != nil {
		return pg, err
	}
	// The profile is opened first: a writer that finds it locked is
	// refused before it takes a browser.
	use, err := s.openProfile(ctx, req.Team, req.Options.Profile)
	if err != nil {
		return nil, err
	}
	// A one-off scrape works in a context of its own: it may share a
	// browser with other scrapes when the pool is full.
	lease, err := s.Pool.Acquire(ctx, browsers.LeaseRequest{Team: req.Team, TeamLimit: req.TeamLimit,
		Lifetime: req.Options.Timeout + 10*time.Second, Reusable: true, Shareable: true})
	if err != nil {
		if use != nil {
			use.Close(context.Background(), profiles.Discard)
		}
		return nil, err
	}
	t, ctx, done, err := s.tabPool().Get(ctx, lease, tabRequest(&req, guard, use, pre, s.Log))
	if err != nil {
		return nil, err
	}
	out := tabs.Outcome{Err: errors.New("the scrape did not end")}
	defer func() { done(out) }()
	if pre != nil {
		req.URL = pre.URL // the tab renders what was fetched, redirects followed
	}
	pg, err = s.drive(ctx, t, req)
	out = tabs.Outcome{Err: err, Drove: true}
	if pg != nil {
		notePage(t, pg)
		pg.teamWait = lease.TeamWait()
	}
	if cause := context.Cause(ctx); err != nil && cause != nil && !errors.Is(cause, context.DeadlineExceeded) && !errors.Is(cause, context.Canceled) {
		return nil, &LoadError{URL: req.URL, Reason: cause.Error()}
	}
	return pg, err
}

// fetchFirstDirect takes the page with the Go client when it is eligible,
// on a place of the team's in the pool: the page itself when it needed no
// browser, or its response to render (pre), or neither.
func (s *Service) fetchFirstDirect(ctx context.Context, req Request, guard *netguard.Cache) (pg *page, pre *tabs.Response, err error) {
	if !s.directEligible(&req) {
		return nil, nil, nil
	}
	release, waited, err := s.Pool.AcquireSlot(ctx, req.Team, req.TeamLimit)
	if err != nil {
		return nil, nil, err
	}
	pg, pre, err = s.fetchDirect(ctx, req, guard)
	release()
	if pg != nil {
		pg.teamWait = waited
	}
	return pg, pre, err
}

// openProfile starts the use of p for team; nil without a profile.
func (s *Service) openProfile(ctx context.Context, team string, p *Profile) (*profiles.Use, error) {
	if p == nil {
		return nil, nil
	}
	if s.Profiles == nil {
		return nil, errors.New("browser profiles are not configured on this server")
	}
	return s.Profiles.Open(ctx, team, p.Name, profiles.AccessFor(p.SaveChanges))
}

// drive navigates, waits, runs the actions and captures.
func (s *Service) drive(ctx context.Context, t *tabs.Tab, req Request) (*page, error) {
	o := &req.Options
	// Leave a share of the timeout for actions and capture.
	navBudget := time.Duration(float64(o.Timeout) * 0.8)
	navCtx, cancelNav := context.WithTimeout(ctx, navBudget)
	defer cancelNav()
	if err := t.Navigate(navCtx, req.URL); err != nil {
		select {
		case tb := <-t.Taken(): // a document taken at the network layer
			return takenPage(t, tb), nil
		default:
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, ErrTimeout
		}
		return nil, err
	}
	select {
	case tb := <-t.Taken():
		return takenPage(t, tb), nil
	case <-time.After(20 * time.Millisecond):
		// A taken body is handed over before the tab is fulfilled, so by
		// the time navigation commits it is there; this is a margin.
	}
	pg := &page{engine: "browser-render"}
	remaining := time.Until(deadlineOf(navCtx))
	began := time.Now()
	settled := t.Settle(ctx, min(remaining, 10*time.Second))
	defer func() { s.Renders.add(time.Since(began), settled) }()
	select {
	case <-t.Crashed():
		return nil, ErrPageCrashed
	default:
	}
	if o.WaitFor > 0 {
		select {
		case <-time.After(o.WaitFor):
		case <-ctx.Done():
			return nil, ErrTimeout
		}
	}
	if len(o.Actions) > 0 {
		res, err := t.RunActions(ctx, o.Actions)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return nil, ErrTimeout
			}
			return nil, err
		}
		pg.actions = res
	}
	if err := read(ctx, t, pg); err != nil {
		return nil, err
	}
	if err := s.capture(ctx, t, o, pg); err != nil {
		return nil, err
	}
	return pg, nil
}

// capture takes what the formats read from the rendered page: a
// screenshot, the branding, the main audio or video.
func (s *Service) capture(ctx context.Context, t *tabs.Tab, o *Options, pg *page) error {
	if f, ok := o.Screenshot(); ok {
		shot, err := t.Screenshot(ctx, f.FullPage, f.Quality, f.Viewport)
		if err != nil {
			return err
		}
		pg.screenshot = shot
	}
	if o.Has("branding") {
		b, err := branding.Read(ctx, t.Session(), s.Log)
		if err != nil {
			pg.warning = joinWarning(pg.warning, "branding: "+err.Error())
		}
		pg.branding = b
	}
	if o.Has("audio") || o.Has("video") {
		pg.media = s.takeMedia(ctx, t, o)
	}
	return nil
}

func deadlineOf(ctx context.Context) time.Time {
	d, ok := ctx.Deadline()
	if !ok {
		return time.Now().Add(time.Minute)
	}
	return d
}

// transform turns the page into the requested formats; forIndex asks it
// to keep the search index's document of a web page when its transform
// is the index's (servesIndex).
func (s *Service) transform(ctx context.Context, req Request, pg *page, forIndex bool) (*Document, error) {
	o := &req.Options
	doc := &Document{Metadata: map[string]any{}}
	if pg.actions != nil {
		doc.Actions = pg.actions
	}
	if o.Has("screenshot") {
		doc.Screenshot = pg.screenshot
	}
	if kind := pageDocumentKind(pg); kind != "" {
		return s.transformDocument(ctx, req, pg, kind, doc)
	}
	// A text body (JSON, XML, plain text) is its own rawHtml, and a
	// Markdown body its own Markdown; the other formats are made from a
	// code block of it, whose language tags the Markdown fence. The index
	// reads text as it is (IndexDoc).
	body, text := pg.body, detect.TextType(pg.contentType)
	if text != "" {
		body, forIndex = textDocument(string(pg.body), text), false
	}
	forIndex = forIndex && servesIndex(o) && pg.status >= 200 && pg.status <= 299
	res, err := content.Transform(body, pg.finalURL, content.Options{
		OnlyMainContent: o.OnlyMainContent, IncludeTags: o.IncludeTags, ExcludeTags: o.ExcludeTags,
		RemoveBase64Images: o.RemoveBase64Images,
		Want: content.Want{Markdown: o.Has("markdown") || o.NeedsModel() || o.Has("highlights") || o.Has("question") ||
			o.Has("branding") && s.Model != nil,
			HTML:  o.Has("html"),
			Links: o.Has("links") || req.Discover || forIndex, Images: o.Has("images"), ImageDetails: forIndex},
	})
	if err != nil {
		return nil, err
	}
	if forIndex {
		doc.forIndex = &index.Doc{}
		if !fillIndexDoc(doc.forIndex, res) {
			doc.forIndex = nil
		}
	}
	if text == "markdown" {
		res.Markdown = string(pg.body)
	}
	doc.Markdown, doc.HTML, doc.Images = res.Markdown, res.HTML, res.Images
	doc.modelInput = res.Markdown
	if !o.Has("markdown") {
		doc.Markdown = ""
	}
	doc.Warning = res.Warning
	if req.Discover {
		doc.Discovered = res.Links
	}
	if o.Has("links") {
		doc.Links = res.Links
	}
	if o.Has("links") && doc.Links == nil {
		doc.Links = []string{}
	}
	if o.Has("images") && doc.Images == nil {
		doc.Images = []string{}
	}
	if o.Has("rawHtml") {
		doc.RawHTML = string(pg.body)
	}
	for k, v := range res.Metadata {
		doc.Metadata[k] = v
	}
	return doc, nil
}

// pageDocumentKind names the parser of a page's document, or "" for a web
// page. The bytes have the last word: a server that labels an HTML error
// page as a PDF gets its page read as HTML, and a PDF labelled as a DOCX is
// read as a PDF.
func pageDocumentKind(pg *page) string {
	kind := detect.DocumentKind(pg.contentType, pg.finalURL)
	if kind == "" {
		return ""
	}
	switch sniffed := parse.Sniff(pg.body); {
	case sniffed == "html":
		return ""
	case parse.Supported(sniffed):
		return sniffed
	}
	return kind
}

// transformDocument turns a document (PDF, DOCX, ...) into the requested
// formats: Markdown and HTML from the parser, links and images from the
// parser's HTML.
func (s *Service) transformDocument(ctx context.Context, req Request, pg *page, kind string, doc *Document) (*Document, error) {
	o := &req.Options
	if kind == "pdf" && !o.PDF {
		// parsers: [] asks for the PDF itself.
		doc.Markdown = base64.StdEncoding.EncodeToString(pg.body)
		doc.Metadata["numPages"] = 1
		return doc, nil
	}
	// The HTML is rendered only for the formats made from it, and the
	// page's bytes are let go once the parser is done with them.
	body := pg.body
	pg.body = nil
	pd, err := parse.ParseOutputs(ctx, kind, body, parse.Outputs{Markdown: true,
		HTML: o.Has("html") || o.Has("rawHtml") || o.Has("links") || o.Has("images") || req.Discover})
	if err != nil {
		var busy *parse.BusyError
		if errors.As(err, &busy) {
			// The parse waited for memory others held until its deadline:
			// the document is fine, and the caller may send it again.
			return nil, err
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, ErrTimeout
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &ParseError{Err: err}
	}
	if o.Has("markdown") {
		doc.Markdown = pd.Markdown
	}
	doc.modelInput = pd.Markdown
	if o.Has("html") {
		doc.HTML = pd.HTML
	}
	if o.Has("rawHtml") {
		doc.RawHTML = pd.HTML
	}
	if o.Has("links") || o.Has("images") || req.Discover {
		res, err := content.Transform([]byte(pd.HTML), pg.finalURL, content.Options{
			RemoveBase64Images: o.RemoveBase64Images,
			Want:               content.Want{Links: o.Has("links") || req.Discover, Images: o.Has("images")},
		})
		if err != nil {
			return nil, err
		}
		if o.Has("links") {
			doc.Links = res.Links
			if doc.Links == nil {
				doc.Links = []string{}
			}
		}
		if req.Discover {
			doc.Discovered = res.Links
		}
		if o.Has("images") {
			doc.Images = res.Images
			if doc.Images == nil {
				doc.Images = []string{}
			}
		}
	}
	if kind == "pdf" {
		// Parsed PDFs are billed by the page.
		doc.pdfPages = pd.Pages
	}
	if pd.Pages > 0 || kind == "pdf" {
		doc.Metadata["numPages"] = pd.Pages
	}
	if pd.Title != "" {
		doc.Metadata["title"] = pd.Title
	}
	if pd.Author != "" {
		doc.Metadata["author"] = pd.Author
	}
	if len(pd.Warnings) > 0 {
		doc.Warning = strings.Join(pd.Warnings, "; ")
	}
	return doc, nil
}

// ParseError is a document that could not be parsed.
type ParseError struct{ Err error }

func (e *ParseError) Error() string { return "parsing the document: " + e.Err.Error() }
func (e *ParseError) Unwrap() error { return e.Err }

// Get returns team's stored scrape id as JSON.
func (s *Service) Get(ctx context.Context, team, id string) (json.RawMessage, error) {
	return s.Store.Scrape(ctx, team, id)
}
