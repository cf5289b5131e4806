package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	cdproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/egress"
	"github.com/trawler-dev/trawler/netguard"
)

const (
	egressPages    = 200 // pages per run
	egressTabs     = 4   // tabs loading them in parallel
	egressRounds   = 4   // runs of each kind, after the warm-up
	egressWarmup   = 24  // pages per browser, not timed
	egressRequests = 500 // sequential GETs per side in the latency part
	egressBlock    = 50  // GETs per side before switching sides
)

// egressOverhead measures what Trawler's egress proxy costs the browsers
// that go through it, and a client that goes through it.
//
// Throughput: the same 200 pages of a local site (about 40 kB of HTML, a
// stylesheet and two images each, none cacheable, so every page is four
// requests) are loaded by 4 tabs at once in one Chromium started by
// browsers.ProcessRuntime: once with the browser behind the egress proxy
// (its own route, and each tab in a browser context with a route of its
// own and no bypass, as Trawler's scrapes open them), once by a Chromium
// of a runtime without a proxy. Runs alternate (which goes first
// alternates too) after a warm-up of each; the best run of each counts,
// the others being the same work slowed by whatever else the 2-core
// machine was doing. As that noise can still outweigh the proxy's cost,
// pages per CPU-second (the browser's processes and this one, which runs
// the proxy) are compared too: they hardly move with other programs' load.
//
// Latency: 500 sequential GETs of a small page by a Go http.Client,
// directly and through a route of the proxy, over kept-alive connections,
// for http (absolute-form requests, which the proxy forwards) and https (a
// CONNECT tunnel, kept open); then https with a new connection per request,
// so a new tunnel each time. The figure is the difference of the p50s.
func (b *bench) egressOverhead(ctx context.Context, in *instance) error {
	site := startEgressSite()
	defer site.Close()
	proxy := egress.New(egress.Config{Guard: &netguard.Guard{AllowPrivate: true}, Log: b.log})
	defer proxy.Close()
	logf("egress: site at %s", site.URL)

	if err := b.egressThroughput(ctx, in.svc.Config.ChromiumPath, site, proxy); err != nil {
		return err
	}
	return egressLatency(ctx, proxy)
}

// egressThroughput is the throughput part of egressOverhead.
func (b *bench) egressThroughput(ctx context.Context, chromium string, site *egressSite, proxy *egress.Proxy) error {
	dir := filepath.Join(b.tmp, "egress-browsers")
	proxied, err := startEgressBrowser(ctx, &browsers.ProcessRuntime{Chromium: chromium, Dir: dir, Log: b.log,
		ProxyFor: proxy.ProxyFor}, "egress-proxied", proxy)
	if err != nil {
		return fmt.Errorf("the proxied browser: %w", err)
	}
	defer proxied.Close()
	direct, err := startEgressBrowser(ctx, &browsers.ProcessRuntime{Chromium: chromium, Dir: dir, Log: b.log},
		"egress-direct", nil)
	if err != nil {
		return fmt.Errorf("the direct browser: %w", err)
	}
	defer direct.Close()

	for _, eb := range []*egressBrowser{direct, proxied} {
		if _, _, _, err := eb.run(ctx, site, egressWarmup); err != nil {
			return fmt.Errorf("warm-up of the %s browser: %w", eb.name, err)
		}
	}
	rates := map[*egressBrowser][]float64{}
	cpus := map[*egressBrowser][]time.Duration{} // this process's, per page
	perCPU := map[*egressBrowser][]float64{}     // pages per CPU-second of the browser and this process
	for i := 0; i < egressRounds; i++ {
		order := []*egressBrowser{direct, proxied}
		if i%2 == 1 {
			order = []*egressBrowser{proxied, direct}
		}
		for _, eb := range order {
			time.Sleep(200 * time.Millisecond) // let the last run's stragglers settle
			d, c, ticks, err := eb.run(ctx, site, egressPages)
			if err != nil {
				return fmt.Errorf("%s run %d: %w", eb.name, i+1, err)
			}
			rates[eb] = append(rates[eb], egressPages/d.Seconds())
			cpus[eb] = append(cpus[eb], c/egressPages)
			browserCPU := time.Duration(ticks) * time.Second / clockTicks
			perCPU[eb] = append(perCPU[eb], egressPages/(c+browserCPU).Seconds())
		}
	}
	list := func(rs []float64) string {
		parts := make([]string, len(rs))
		for i, r := range rs {
			parts[i] = fmt.Sprintf("%.1f", r)
		}
		return strings.Join(parts, " ")
	}
	dBest, pBest := slices.Max(rates[direct]), slices.Max(rates[proxied])
	logf("egress: pages/s per run (%d pages, %d tabs): direct %s; proxied %s", egressPages, egressTabs,
		list(rates[direct]), list(rates[proxied]))
	var paired []float64 // the runs of a round are next to each other in time
	for i := range rates[direct] {
		paired = append(paired, rates[proxied][i]/rates[direct][i])
	}
	logf("egress: median pages/s: direct %.1f, proxied %.1f, ratio %.3f; median of the rounds' ratios %.3f",
		median(rates[direct]), median(rates[proxied]), median(rates[proxied])/median(rates[direct]), median(paired))
	// What the proxy costs in CPU, which on a busy machine is what it
	// takes from the browsers: the difference of this process's CPU per
	// page (the site and the CDP clients cost both kinds alike).
	logf("egress: this process's CPU per page, p50: direct %.2f ms, proxied %.2f ms",
		ms(median(cpus[direct])), ms(median(cpus[proxied])))
	// Pages per CPU-second (the browser's processes and this one) hardly
	// move with the load of other programs, which the wall time does: on a
	// machine that the pages keep busy, their ratio is the throughput ratio
	// to expect.
	logf("egress: pages per CPU-second, p50: direct %.1f, proxied %.1f, ratio %.3f",
		median(perCPU[direct]), median(perCPU[proxied]), median(perCPU[proxied])/median(perCPU[direct]))
	figure("egress_proxy_pages_per_s", pBest, "pages/s")
	figure("direct_pages_per_s", dBest, "pages/s")
	// The ratio is the median of the rounds' own ratios: each round runs
	// both browsers back to back, so a change in the machine's load
	// between rounds cancels out (the best of each, a noisier estimate,
	// is printed too).
	figure("egress_proxy_throughput_over_direct", median(paired), "x")
	figure("egress_proxy_throughput_over_direct_best", pBest/dBest, "x")
	return nil
}

// clockTicks is the unit of /proc/PID/stat's CPU times (USER_HZ), 100 on
// Linux.
const clockTicks = 100

// selfCPU is the CPU time this process has used, user and system.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// egressBrowser is a Chromium with its tabs open, each in a browser
// context of its own.
type egressBrowser struct {
	name    string
	browser browsers.Browser
	pgid    int             // its process group
	proxy   *egress.Proxy   // nil for the direct browser
	routes  []*egress.Route // the contexts' routes, when proxied
	tabs    []*egressTab
}

// startEgressBrowser starts a browser of rt and opens its tabs; when proxy
// is set, each tab's context gets a route of its own.
func startEgressBrowser(ctx context.Context, rt *browsers.ProcessRuntime, id string, proxy *egress.Proxy) (eb *egressBrowser, err error) {
	br, err := rt.Start(ctx, id)
	if err != nil {
		return nil, err
	}
	eb = &egressBrowser{name: strings.TrimPrefix(id, "egress-"), browser: br, proxy: proxy}
	defer func() {
		if err != nil {
			eb.Close()
		}
	}()
	if eb.pgid, _, err = browserPID(rt.Dir, id); err != nil {
		return nil, err
	}
	for i := 0; i < egressTabs; i++ {
		var route *egress.Route
		if proxy != nil {
			if route, err = proxy.ContextRoute(id); err != nil {
				return nil, err
			}
			route.Bind(egress.Binding{Team: "bench", Request: fmt.Sprintf("%s-tab-%d", id, i)})
			eb.routes = append(eb.routes, route)
		}
		t, err := openEgressTab(ctx, br.CDP(), route)
		if err != nil {
			return nil, fmt.Errorf("tab %d: %w", i, err)
		}
		eb.tabs = append(eb.tabs, t)
	}
	return eb, nil
}

// Close closes the tabs, the browser and its routes.
func (eb *egressBrowser) Close() {
	for _, t := range eb.tabs {
		t.Close()
	}
	eb.browser.Close()
	for _, r := range eb.routes {
		r.Close()
	}
	if eb.proxy != nil {
		eb.proxy.ForgetBrowser(eb.browser.ID())
	}
}

// routeBytes are the bytes the contexts' routes received from the site.
func (eb *egressBrowser) routeBytes() int64 {
	var n int64
	for _, r := range eb.routes {
		in, _ := r.Bytes()
		n += in
	}
	return n
}

// run loads pages 0..n-1 of the site, the tabs taking the next page as
// they finish one, and returns the wall time, the CPU time this process
// (the site, the bench's CDP clients and, for the proxied browser, the
// proxy) spent meanwhile and the clock ticks of the browser's processes
// (those alive at the end). It checks that the site
// served each page's four requests, and that the proxied browser's
// traffic went through its routes.
func (eb *egressBrowser) run(ctx context.Context, site *egressSite, n int) (wall, cpu time.Duration, browserTicks int64, err error) {
	site.reset()
	before := eb.routeBytes()
	var next atomic.Int64
	errs := make([]error, len(eb.tabs))
	var wg sync.WaitGroup
	ticks0 := cpuTicks(groupMembers(eb.pgid)...)
	cpu0, start := selfCPU(), time.Now()
	for i, t := range eb.tabs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				p := int(next.Add(1)) - 1
				if p >= n {
					return
				}
				if err := t.load(ctx, fmt.Sprintf("%s/p/%d", site.URL, p)); err != nil {
					errs[i] = fmt.Errorf("page %d: %w", p, err)
					next.Store(int64(n)) // stop the others
					return
				}
			}
		}()
	}
	wg.Wait()
	el, cpu := time.Since(start), selfCPU()-cpu0
	ticks := cpuTicks(groupMembers(eb.pgid)...) - ticks0
	if err := errors.Join(errs...); err != nil {
		return 0, 0, 0, err
	}
	pages, css, imgs, other := site.counts()
	if pages != n || css != n || imgs != 2*n {
		return 0, 0, 0, fmt.Errorf("the site served %d pages, %d stylesheets and %d images for %d pages (want one, one and two each)", pages, css, imgs, n)
	}
	if other > 0 {
		site.mu.Lock()
		logf("egress: %s run: %d other requests (not counted): %s", eb.name, other, strings.Join(site.otherPaths, " "))
		site.otherPaths = nil
		site.mu.Unlock()
	}
	if eb.proxy != nil {
		got, want := eb.routeBytes()-before, int64(n)*site.pageBytes
		if got < want {
			return 0, 0, 0, fmt.Errorf("the proxied browser's routes received %d bytes for %d pages, %d or more expected: its traffic did not go through them", got, n, want)
		}
	}
	return el, cpu, ticks, nil
}

// egressTab is a tab in a browser context of its own, on a browser-level
// connection of its own, so that its events need no sorting.
type egressTab struct {
	conn      *cdp.Conn
	contextID cdproto.BrowserContextID
	tab       cdp.Session

	mu     sync.Mutex
	loaded map[cdproto.LoaderID]bool // loader ids whose document fired load
	wake   chan struct{}
}

// openEgressTab opens a blank tab in a new browser context, whose proxy is
// route's (with no bypass, as Trawler's scrapes set it) when route is set.
func openEgressTab(ctx context.Context, mux *cdp.Mux, route *egress.Route) (*egressTab, error) {
	// DialOwn: a client's connection (Dial) may not set proxyServer.
	conn, err := mux.Dial(ctx)
	if err != nil {
		return nil, err
	}
	t := &egressTab{conn: conn, loaded: map[cdproto.LoaderID]bool{}, wake: make(chan struct{}, 1)}
	conn.OnEvent(t.onEvent)
	p := ownContext()
	if route != nil {
		p.ProxyServer = route.URL()
		p.ProxyBypassList = "<-loopback>"
	}
	if t.tab, t.contextID, err = contextTab(ctx, conn, p); err != nil {
		conn.Close()
		return nil, err
	}
	err = cdp.Run(ctx, t.tab, page.Enable, page.EnableParams{})
	if err == nil {
		err = cdp.Run(ctx, t.tab, page.SetLifecycleEventsEnabled, page.SetLifecycleEventsEnabledParams{Enabled: true})
	}
	if err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// onEvent records the load of a document. The connection has one page
// session, so no event needs telling apart by session.
func (t *egressTab) onEvent(ev cdp.Event) {
	e, ok, err := cdp.Decode(ev, page.LifecycleEvent)
	if !ok || err != nil || e.Name != "load" {
		return
	}
	t.mu.Lock()
	t.loaded[e.LoaderID] = true
	t.mu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// load navigates the tab to u and waits for the document's load event
// (the stylesheet and images loaded).
func (t *egressTab) load(ctx context.Context, u string) error {
	nav, err := cdp.Do(ctx, t.tab, page.Navigate, page.NavigateParams{URL: u})
	if err != nil {
		return err
	}
	if nav.ErrorText != "" {
		return fmt.Errorf("navigating to %s: %s", u, nav.ErrorText)
	}
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for {
		t.mu.Lock()
		done := t.loaded[nav.LoaderID]
		delete(t.loaded, nav.LoaderID)
		t.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-t.wake:
		case <-timeout.C:
			return fmt.Errorf("%s did not fire load within 30 s", u)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close disposes of the tab's browser context and closes its connection.
func (t *egressTab) Close() {
	if t.contextID != "" {
		disposeContext(t.conn, t.contextID)
	}
	t.conn.Close()
}

// egressSite is the throughput part's site on 127.0.0.1: /p/N is a page of
// about 40 kB of HTML that links /s/site.css and two images of its own,
// /i/N-1.png and /i/N-2.png. Nothing may be cached, so that every load of
// a page is four requests through the proxy.
type egressSite struct {
	*httptest.Server
	pageBytes                int64 // the smallest page's size
	pages, css, imgs, others atomic.Int64

	mu         sync.Mutex
	otherPaths []string // the paths of other requests
}

func (s *egressSite) reset() {
	s.pages.Store(0)
	s.css.Store(0)
	s.imgs.Store(0)
	s.others.Store(0)
}

func (s *egressSite) counts() (pages, css, imgs, others int) {
	return int(s.pages.Load()), int(s.css.Load()), int(s.imgs.Load()), int(s.others.Load())
}

func startEgressSite() *egressSite {
	s := &egressSite{}
	imgs := [2][]byte{egressImage(1), egressImage(2)}
	s.pageBytes = int64(len(egressPage(0)))
	noStore := func(w http.ResponseWriter, ct string) {
		w.Header().Set("Content-Type", ct)
		w.Header().Set("Cache-Control", "no-store")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /p/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.PathValue("n"))
		if err != nil || n < 0 {
			s.others.Add(1)
			http.NotFound(w, r)
			return
		}
		s.pages.Add(1)
		noStore(w, "text/html; charset=utf-8")
		w.Write(egressPage(n))
	})
	mux.HandleFunc("GET /s/site.css", func(w http.ResponseWriter, r *http.Request) {
		s.css.Add(1)
		noStore(w, "text/css; charset=utf-8")
		io.WriteString(w, egressCSS)
	})
	mux.HandleFunc("GET /i/{name}", func(w http.ResponseWriter, r *http.Request) {
		s.imgs.Add(1)
		noStore(w, "image/png")
		img := imgs[0]
		if strings.HasSuffix(r.PathValue("name"), "-2.png") {
			img = imgs[1]
		}
		w.Write(img)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.others.Add(1) // a favicon, say
		s.mu.Lock()
		if !slices.Contains(s.otherPaths, r.URL.Path) {
			s.otherPaths = append(s.otherPaths, r.URL.Path)
		}
		s.mu.Unlock()
		http.NotFound(w, r)
	})
	s.Server = httptest.NewServer(mux) // listens on 127.0.0.1
	return s
}

// egressPage is page n: a news article of about 40 kB.
func egressPage(n int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Harbour report %[1]d | The Harbour Gazette</title>
<link rel="stylesheet" href="/s/site.css"></head>
<body><header class="masthead"><a class="logo" href="/">The Harbour Gazette</a></header>
<nav class="sections"><ul><li><a href="/news">News</a></li><li><a href="/harbour">Harbour</a></li><li><a href="/business">Business</a></li><li><a href="/sport">Sport</a></li></ul></nav>
<main><article><h1>Harbour report number %[1]d</h1>
<figure><img src="/i/%[1]d-1.png" alt="The quay" width="320" height="180"><figcaption>The quay at dawn.</figcaption></figure>
`, n)
	for i := 1; i <= 60; i++ {
		if i%10 == 0 {
			fmt.Fprintf(&b, "<h2>Part %d of report %d</h2>\n", i/10, n)
		}
		if i == 30 {
			fmt.Fprintf(&b, `<figure><img src="/i/%d-2.png" alt="The fleet" width="320" height="180"></figure>`+"\n", n)
		}
		fmt.Fprintf(&b, "<p>Paragraph %d of report %d. The harbour authority said on Tuesday that the new quay would open to "+
			"fishing boats in the spring, after two years of works that cost the town more than it had planned. Skippers "+
			"welcomed the news but warned that berths would be scarce in the first months, when the old pier closes for "+
			"repairs and the fleet has to share the space with the ferries, the pilot boats and the odd visiting yacht. "+
			"The council will publish the berth allocation rules in March, after a consultation with the fishermen's "+
			"association, the ferry operator and the marina, and expects the first landings at the new auction hall by May.</p>\n", i, n)
	}
	b.WriteString(`</article></main><footer class="site-footer"><p>&copy; 2024 The Harbour Gazette.</p></footer></body></html>`)
	return b.Bytes()
}

const egressCSS = `body{font-family:Georgia,serif;margin:0;color:#222;line-height:1.5}
.masthead{display:flex;justify-content:space-between;padding:1rem 2rem;background:#0b3d5c;color:#fff}
.masthead a{color:#fff;font-size:1.6rem;text-decoration:none}
nav.sections ul{display:flex;gap:1.5rem;list-style:none;margin:0;padding:.5rem 2rem;background:#e8eef2}
main{max-width:48rem;margin:2rem auto;padding:0 2rem}
article h1{font-size:2.2rem;line-height:1.2}article h2{font-size:1.4rem;margin-top:2rem}
figure{margin:1.5rem 0}figure img{max-width:100%;height:auto;background:#9bb}
.site-footer{padding:2rem;background:#222;color:#ccc}
`

// egressImage is a 96x64 PNG of noise (about 18 kB: noise does not
// compress), different for each seed.
func egressImage(seed int64) []byte {
	rnd := rand.New(rand.NewSource(seed))
	img := image.NewNRGBA(image.Rect(0, 0, 96, 64))
	for y := 0; y < 64; y++ {
		for x := 0; x < 96; x++ {
			img.Set(x, y, color.NRGBA{uint8(rnd.Intn(256)), uint8(rnd.Intn(256)), uint8(rnd.Intn(256)), 255})
		}
	}
	var b bytes.Buffer
	png.Encode(&b, img)
	return b.Bytes()
}

// egressLatency is the latency part of egressOverhead.
func egressLatency(ctx context.Context, proxy *egress.Proxy) error {
	body := []byte(strings.Repeat("ok\n", 100))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write(body)
	})
	plain := httptest.NewServer(h)
	defer plain.Close()
	secure := httptest.NewTLSServer(h)
	defer secure.Close()
	route, err := proxy.ContextRoute("bench-client")
	if err != nil {
		return err
	}
	defer route.Close()
	route.Bind(egress.Binding{Team: "bench", Request: "latency"})
	proxyURL, err := url.Parse(route.URL())
	if err != nil {
		return err
	}
	tlsConf := secure.Client().Transport.(*http.Transport).TLSClientConfig

	cases := []struct {
		name, figure, url string
		tls               *tls.Config
		keepAlive         bool
	}{
		{"http, kept alive", "egress_proxy_added_ms_p50", plain.URL, nil, true},
		{"https, CONNECT tunnel kept open", "egress_proxy_added_ms_p50_https", secure.URL, tlsConf, true},
		{"https, a new CONNECT tunnel per request", "egress_proxy_added_ms_p50_connect", secure.URL, tlsConf, false},
	}
	for _, c := range cases {
		client := func(viaProxy bool) *http.Client {
			t := &http.Transport{DisableKeepAlives: !c.keepAlive, MaxIdleConnsPerHost: 1, DisableCompression: true}
			if c.tls != nil {
				t.TLSClientConfig = c.tls.Clone()
			}
			if viaProxy {
				t.Proxy = http.ProxyURL(proxyURL)
			}
			return &http.Client{Transport: t, Timeout: 10 * time.Second}
		}
		direct, proxied := client(false), client(true)
		d, p, err := latencies(ctx, direct, proxied, c.url+"/small", len(body))
		direct.CloseIdleConnections()
		proxied.CloseIdleConnections()
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		dp, pp := median(d), median(p)
		logf("egress: %s: direct p50 %.3f p90 %.3f ms; proxied p50 %.3f p90 %.3f ms", c.name,
			ms(dp), ms(pct(d, 0.9)), ms(pp), ms(pct(p, 0.9)))
		figureMS3(c.figure, ms(pp-dp))
	}
	return nil
}

// figureMS3 prints a figure in ms with three decimals: what the proxy adds
// to a request is a fraction of a millisecond.
func figureMS3(name string, v float64) {
	fmt.Printf("bench: %s %.3f ms\n", name, v)
}

// latencies times egressRequests sequential GETs of u with each client,
// in alternating blocks (which side goes first alternating too) after a
// warm-up of each, so that drift in the machine's load hits both alike.
func latencies(ctx context.Context, direct, proxied *http.Client, u string, size int) (d, p []time.Duration, err error) {
	get := func(c *http.Client) (time.Duration, error) {
		t := time.Now()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return 0, err
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		el := time.Since(t)
		if err != nil {
			return 0, err
		}
		if resp.StatusCode != http.StatusOK || n != int64(size) {
			return 0, fmt.Errorf("GET %s answered %s with %d bytes", u, resp.Status, n)
		}
		return el, nil
	}
	for i := 0; i < egressBlock; i++ { // warm-up
		for _, c := range []*http.Client{direct, proxied} {
			if _, err := get(c); err != nil {
				return nil, nil, err
			}
		}
	}
	for blk := 0; len(d) < egressRequests || len(p) < egressRequests; blk++ {
		order := []*http.Client{direct, proxied}
		if blk%2 == 1 {
			order = []*http.Client{proxied, direct}
		}
		for _, c := range order {
			into := &d
			if c == proxied {
				into = &p
			}
			for i := 0; i < egressBlock && len(*into) < egressRequests; i++ {
				el, err := get(c)
				if err != nil {
					return nil, nil, err
				}
				*into = append(*into, el)
			}
		}
	}
	return d, p, nil
}
