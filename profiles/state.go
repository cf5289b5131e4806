package profiles

import (
	"bytes"
	"compress/gzip"
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/trawler-dev/trawler/cdp"
)

// This file is the browser side of profiles: reading a browser's cookies, localStorage and IndexedDB
// into a State, and writing a State back into a fresh browser, over the DevTools protocol. Caches,
// files, history and service workers are never saved.

// StateVersion is the version of the encoding that Encode writes and DecodeState reads.
const StateVersion = 1

const (
	// maxStateSize bounds a decoded state, so that a corrupt or hostile blob cannot exhaust memory.
	maxStateSize = 512 << 20
	// helperPath is the path the helper tab visits on each origin. Nothing is fetched: the tab
	// answers its own requests with an empty page.
	helperPath = "/__trawler_profile__"
	// originTimeout bounds the visit of one origin: navigating there and reading or writing its
	// storage.
	originTimeout = 30 * time.Second
	// closeTimeout bounds the clean-up calls made after the caller's context may have ended.
	closeTimeout = 5 * time.Second
)

// ErrInvalidState reports a profile state blob that DecodeState cannot read: not gzip'd JSON,
// truncated, too large, or of an unknown version.
var ErrInvalidState = errors.New("invalid profile state")

//go:embed state.js
var stateJS string

// State is a browser's saved storage: its cookies and the localStorage and IndexedDB of the origins
// that hold some.
type State struct {
	Version int           `json:"version"`
	Cookies []Cookie      `json:"cookies"`
	Origins []OriginState `json:"origins"`
}

// Cookie is one cookie, with every attribute needed to set it back as it was.
type Cookie struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	// Domain is the cookie's domain: with a leading '.' for a domain cookie (sent to subdomains
	// too), without for a host-only cookie.
	Domain string `json:"domain"`
	Path   string `json:"path"`
	// Expires is the expiry in seconds since the Unix epoch; 0 for a session cookie.
	Expires  float64 `json:"expires,omitempty"`
	HTTPOnly bool    `json:"httpOnly,omitempty"`
	Secure   bool    `json:"secure,omitempty"`
	// SameSite is "Strict", "Lax", "None", or "" when the cookie did not say.
	SameSite string `json:"sameSite,omitempty"`
	// Priority is "Low", "Medium" or "High".
	Priority string `json:"priority,omitempty"`
	// SourceScheme is "Unset", "NonSecure" or "Secure": the scheme of the page that set it.
	SourceScheme string `json:"sourceScheme,omitempty"`
	// SourcePort is the port of the page that set it; -1 when unspecified.
	SourcePort int `json:"sourcePort,omitempty"`
	// PartitionKey is set for a partitioned (CHIPS) cookie.
	PartitionKey *CookiePartitionKey `json:"partitionKey,omitempty"`
}

// CookiePartitionKey is the partition of a partitioned cookie, as in CDP's Network.CookiePartitionKey.
type CookiePartitionKey struct {
	TopLevelSite         string `json:"topLevelSite"`
	HasCrossSiteAncestor bool   `json:"hasCrossSiteAncestor"`
}

// HostOnly reports whether the cookie is sent to its exact host only.
func (c *Cookie) HostOnly() bool { return !strings.HasPrefix(c.Domain, ".") }

// Session reports whether the cookie lasts until the browser closes.
func (c *Cookie) Session() bool { return c.Expires == 0 }

// OriginState is the storage of one origin.
type OriginState struct {
	// Origin is scheme://host[:port], as the browser spells it.
	Origin       string            `json:"origin"`
	LocalStorage map[string]string `json:"localStorage,omitempty"`
	IndexedDB    []Database        `json:"indexedDB,omitempty"`
	// Skipped describes the IndexedDB records that were left out because a value could not be
	// saved (a non-extractable CryptoKey, say), one line per object store.
	Skipped []string `json:"skipped,omitempty"`
}

// Database is one IndexedDB database.
type Database struct {
	Name    string        `json:"name"`
	Version int64         `json:"version"`
	Stores  []ObjectStore `json:"stores"`
}

// ObjectStore is one object store with its indexes and records.
type ObjectStore struct {
	Name string `json:"name"`
	// KeyPath is the store's key path as JSON: null (out-of-line keys), a string or an array of
	// strings.
	KeyPath       json.RawMessage `json:"keyPath"`
	AutoIncrement bool            `json:"autoIncrement,omitempty"`
	Indexes       []Index         `json:"indexes,omitempty"`
	Records       []Record        `json:"records,omitempty"`
}

// Index is one index of an object store.
type Index struct {
	Name string `json:"name"`
	// KeyPath is a string or an array of strings, as JSON.
	KeyPath    json.RawMessage `json:"keyPath"`
	Unique     bool            `json:"unique,omitempty"`
	MultiEntry bool            `json:"multiEntry,omitempty"`
}

// Record is one record of an object store. Keys and values are in the tagged JSON form described
// in state.js: JSON null, booleans, finite numbers, strings and arrays stand for themselves; other
// values are objects whose "$" member names their type.
type Record struct {
	// Key is the record's key, present only in stores with out-of-line keys (in-line keys are part
	// of the value).
	Key   json.RawMessage `json:"k,omitempty"`
	Value json.RawMessage `json:"v"`
}

// Encode returns the state as gzip'd JSON.
func (s *State) Encode() ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	out := *s
	out.Version = StateVersion
	if err := json.NewEncoder(zw).Encode(&out); err != nil {
		return nil, fmt.Errorf("encoding profile state: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compressing profile state: %w", err)
	}
	return buf.Bytes(), nil
}

// errTooLarge is what limitedReader returns past the limit.
var errTooLarge = fmt.Errorf("%w: larger than %d MiB once decompressed", ErrInvalidState, maxStateSize>>20)

// limitedReader fails, rather than ending, once more than n bytes were read.
type limitedReader struct {
	r io.Reader
	n int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n < 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > l.n+1 {
		p = p[:l.n+1]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	if l.n < 0 {
		return n, errTooLarge
	}
	return n, err
}

// DecodeState reads a state written by Encode. Every error wraps ErrInvalidState.
func DecodeState(b []byte) (*State, error) {
	// A first pass only counts and checks the decompressed bytes, so that a blob that inflates past
	// the limit is refused without holding any of it in memory.
	n, err := inflate(b, io.Discard)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: no data", ErrInvalidState)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, decodeError(err)
	}
	zr.Multistream(false)
	dec := json.NewDecoder(zr)
	var st State
	if err := dec.Decode(&st); err != nil {
		return nil, decodeError(err)
	}
	rest, err := io.ReadAll(io.MultiReader(dec.Buffered(), zr))
	if err != nil {
		return nil, decodeError(err)
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return nil, fmt.Errorf("%w: trailing data after the state", ErrInvalidState)
	}
	if st.Version != StateVersion {
		return nil, fmt.Errorf("%w: version %d, this build reads version %d", ErrInvalidState, st.Version, StateVersion)
	}
	for _, o := range st.Origins {
		if _, err := parseOrigin(o.Origin); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidState, err)
		}
	}
	return &st, nil
}

// inflate decompresses one gzip member of b into w, checking its checksum, and refuses more than
// maxStateSize bytes or trailing data.
func inflate(b []byte, w io.Writer) (int64, error) {
	br := bytes.NewReader(b)
	zr, err := gzip.NewReader(br)
	if err != nil {
		return 0, decodeError(err)
	}
	zr.Multistream(false)
	n, err := io.Copy(w, &limitedReader{r: zr, n: maxStateSize})
	if err != nil {
		return n, decodeError(err)
	}
	if br.Len() > 0 {
		return n, fmt.Errorf("%w: trailing data after the gzip stream", ErrInvalidState)
	}
	return n, nil
}

func decodeError(err error) error {
	switch {
	case errors.Is(err, ErrInvalidState):
		return err
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: empty or truncated data", ErrInvalidState)
	case errors.Is(err, gzip.ErrHeader):
		return fmt.Errorf("%w: not gzip data", ErrInvalidState)
	case errors.Is(err, gzip.ErrChecksum):
		return fmt.Errorf("%w: corrupt data (gzip checksum mismatch)", ErrInvalidState)
	}
	return fmt.Errorf("%w: %v", ErrInvalidState, err)
}

// OriginList returns the origins the state holds storage for, sorted.
func (s *State) OriginList() []string {
	out := make([]string, 0, len(s.Origins))
	for _, o := range s.Origins {
		out = append(out, o.Origin)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// parseOrigin checks that o is an http(s) origin and returns it as scheme://host[:port].
func parseOrigin(o string) (string, error) {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("not an http(s) origin: %q", o)
	}
	return u.Scheme + "://" + strings.ToLower(u.Host), nil
}

// Capture reads the state of browser context browserContextID ("" for the browser's default
// context) of browser: all its cookies, and the
// localStorage and IndexedDB of origins (http(s) origins, as a Tracker lists them). Origins that
// hold nothing are left out of the state.
//
// Storage is read from a helper tab of its own that never reaches the network (and bypasses the
// sites' service workers): the user's tabs are left as they are. Each origin gets 30 seconds; an
// origin that fails, say because another page keeps one of its databases in an upgrade, fails the
// capture with an error naming it. IndexedDB records holding a value that cannot be saved (a
// non-extractable CryptoKey) are left out and listed in OriginState.Skipped.
func Capture(ctx context.Context, browser *cdp.Mux, browserContextID string, origins []string) (*State, error) {
	want := make([]string, 0, len(origins))
	for _, o := range origins {
		p, err := parseOrigin(o)
		if err != nil {
			return nil, err
		}
		want = append(want, p)
	}
	slices.Sort(want)
	want = slices.Compact(want)

	conn, err := browser.Dial(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()

	// The cookies are read while the helper tab visits the origins.
	var cookies []Cookie
	cookiesRead := make(chan error, 1)
	go func() {
		var err error
		cookies, err = getCookies(ctx, conn, browserContextID)
		cookiesRead <- err
	}()
	stored, err := captureStorage(ctx, conn, browserContextID, want)
	if cerr := <-cookiesRead; cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, err
	}
	return &State{Version: StateVersion, Cookies: cookies, Origins: stored}, nil
}

func captureStorage(ctx context.Context, conn *cdp.Conn, browserContextID string, origins []string) ([]OriginState, error) {
	got := make([]OriginState, len(origins))
	err := eachOrigin(ctx, conn, browserContextID, len(origins), func(ctx context.Context, t *tab, i int) error {
		if err := t.run(ctx, origins[i], "capture", nil, &got[i]); err != nil {
			return fmt.Errorf("reading the storage of %s: %w", origins[i], err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := []OriginState{}
	for _, o := range got {
		if len(o.LocalStorage) == 0 && len(o.IndexedDB) == 0 {
			continue
		}
		if slices.ContainsFunc(out, func(x OriginState) bool { return x.Origin == o.Origin }) {
			continue // two spellings of one origin
		}
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b OriginState) int { return strings.Compare(a.Origin, b.Origin) })
	return out, nil
}

// Restore writes st into browser context browserContextID ("" for the default context) of the
// browser. Cookies are added, replacing cookies of the same name, domain and path;
// cookies that have expired since the capture are dropped. For each origin in st, its localStorage
// and IndexedDB replace what the browser holds for that origin (a database that another page keeps
// open for more than 5 seconds after being asked to close fails the restore); other origins are
// left alone. A cookie the browser refuses fails the restore after all the others are set, with an
// error naming it.
func Restore(ctx context.Context, browser *cdp.Mux, browserContextID string, st *State) error {
	if st == nil {
		return errors.New("restoring a nil profile state")
	}
	for _, o := range st.Origins {
		if _, err := parseOrigin(o.Origin); err != nil {
			return err
		}
	}
	conn, err := browser.Dial(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()

	// The cookies are written while the helper tab visits the origins.
	cookiesSet := make(chan error, 1)
	go func() { cookiesSet <- setCookies(ctx, conn, browserContextID, st.Cookies) }()
	err = restoreStorage(ctx, conn, browserContextID, st.Origins)
	return errors.Join(<-cookiesSet, err)
}

func restoreStorage(ctx context.Context, conn *cdp.Conn, browserContextID string, origins []OriginState) error {
	return eachOrigin(ctx, conn, browserContextID, len(origins), func(ctx context.Context, t *tab, i int) error {
		o := origins[i]
		o.Skipped = nil
		if o.LocalStorage == nil {
			o.LocalStorage = map[string]string{}
		}
		if err := t.run(ctx, o.Origin, "restore", &o, nil); err != nil {
			return fmt.Errorf("writing the storage of %s: %w", o.Origin, err)
		}
		return nil
	})
}

// networkCookie is the part of CDP's Network.Cookie that a Cookie keeps.
type networkCookie struct {
	Name               string          `json:"name"`
	Value              string          `json:"value"`
	Domain             string          `json:"domain"`
	Path               string          `json:"path"`
	Expires            *float64        `json:"expires"` // null for ±Inf
	HTTPOnly           bool            `json:"httpOnly"`
	Secure             bool            `json:"secure"`
	Session            bool            `json:"session"`
	SameSite           string          `json:"sameSite"`
	Priority           string          `json:"priority"`
	SourceScheme       string          `json:"sourceScheme"`
	SourcePort         int             `json:"sourcePort"`
	PartitionKey       json.RawMessage `json:"partitionKey"` // an object; a string in older browsers
	PartitionKeyOpaque bool            `json:"partitionKeyOpaque"`
}

// maxCookieAge is the longest lifetime Chromium grants a cookie; a cookie that says "never expires"
// gets it.
const maxCookieAge = 400 * 24 * time.Hour

func getCookies(ctx context.Context, conn *cdp.Conn, browserContextID string) ([]Cookie, error) {
	params := map[string]any{}
	if browserContextID != "" {
		params["browserContextId"] = browserContextID
	}
	var res struct {
		Cookies []networkCookie `json:"cookies"`
	}
	if err := conn.Call(ctx, "", "Storage.getCookies", params, &res); err != nil {
		return nil, fmt.Errorf("reading cookies: %w", err)
	}
	out := make([]Cookie, 0, len(res.Cookies))
	for _, nc := range res.Cookies {
		c := Cookie{
			Name: nc.Name, Value: nc.Value, Domain: nc.Domain, Path: nc.Path,
			HTTPOnly: nc.HTTPOnly, Secure: nc.Secure, SameSite: nc.SameSite, Priority: nc.Priority,
			SourceScheme: nc.SourceScheme, SourcePort: nc.SourcePort,
		}
		if !nc.Session {
			switch {
			case nc.Expires == nil || math.IsInf(*nc.Expires, 1):
				c.Expires = float64(time.Now().Add(maxCookieAge).Unix())
			case *nc.Expires > 0:
				c.Expires = *nc.Expires
			}
		}
		if len(nc.PartitionKey) > 0 && string(nc.PartitionKey) != "null" {
			if nc.PartitionKeyOpaque {
				continue // an opaque partition cannot be named, so the cookie cannot be set back
			}
			var pk CookiePartitionKey
			if err := json.Unmarshal(nc.PartitionKey, &pk); err != nil {
				var site string
				if json.Unmarshal(nc.PartitionKey, &site) != nil {
					return nil, fmt.Errorf("reading cookie %s of %s: unknown partition key %s", nc.Name, nc.Domain, nc.PartitionKey)
				}
				pk = CookiePartitionKey{TopLevelSite: site}
			}
			c.PartitionKey = &pk
		}
		out = append(out, c)
	}
	return out, nil
}

// cookieParam is CDP's Network.CookieParam.
type cookieParam struct {
	Name         string              `json:"name"`
	Value        string              `json:"value"`
	URL          string              `json:"url,omitempty"`
	Domain       string              `json:"domain,omitempty"`
	Path         string              `json:"path,omitempty"`
	Secure       bool                `json:"secure,omitempty"`
	HTTPOnly     bool                `json:"httpOnly,omitempty"`
	SameSite     string              `json:"sameSite,omitempty"`
	Expires      float64             `json:"expires,omitempty"`
	Priority     string              `json:"priority,omitempty"`
	SourceScheme string              `json:"sourceScheme,omitempty"`
	SourcePort   int                 `json:"sourcePort,omitempty"`
	PartitionKey *CookiePartitionKey `json:"partitionKey,omitempty"`
}

// param turns a saved cookie into the parameter that sets it back. A host-only cookie is set by URL
// and without a domain, which is what keeps it host-only.
func (c *Cookie) param() cookieParam {
	p := cookieParam{
		Name: c.Name, Value: c.Value, Path: c.Path, Secure: c.Secure, HTTPOnly: c.HTTPOnly,
		SameSite: c.SameSite, Expires: c.Expires, Priority: c.Priority,
		SourceScheme: c.SourceScheme, SourcePort: c.SourcePort, PartitionKey: c.PartitionKey,
	}
	if !c.HostOnly() {
		p.Domain = c.Domain
		return p
	}
	scheme := "http"
	if c.Secure || c.SourceScheme == "Secure" {
		scheme = "https"
	}
	host := c.Domain
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		host = "[" + host + "]" // an IPv6 address
	}
	path := c.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	p.URL = scheme + "://" + host + path
	return p
}

func setCookies(ctx context.Context, conn *cdp.Conn, browserContextID string, cookies []Cookie) error {
	now := float64(time.Now().Unix())
	params := make([]cookieParam, 0, len(cookies))
	var names []string // for errors, by param
	for i := range cookies {
		c := &cookies[i]
		if !c.Session() && c.Expires <= now {
			continue
		}
		params = append(params, c.param())
		names = append(names, fmt.Sprintf("%s (domain %s, path %s)", c.Name, c.Domain, c.Path))
	}
	if len(params) == 0 {
		return nil
	}
	call := func(ps []cookieParam) error {
		args := map[string]any{"cookies": ps}
		if browserContextID != "" {
			args["browserContextId"] = browserContextID
		}
		return conn.Call(ctx, "", "Storage.setCookies", args, nil)
	}
	err := call(params)
	if err == nil {
		return nil
	}
	var cdpErr *cdp.Error
	if !errors.As(err, &cdpErr) {
		return fmt.Errorf("writing cookies: %w", err)
	}
	// The browser refuses the whole batch for one cookie it finds invalid: set the others one by
	// one and name those it refuses.
	var bad []string
	for i, p := range params {
		if err := call([]cookieParam{p}); err != nil {
			if !errors.As(err, &cdpErr) {
				return fmt.Errorf("writing cookies: %w", err)
			}
			bad = append(bad, names[i])
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("writing cookies: the browser refused %d of %d: %s", len(bad), len(params), strings.Join(bad, ", "))
	}
	return nil
}

// maxTabs is how many helper tabs visit origins at once: one per two CPUs, up to four. A visit is
// mostly the browser starting a renderer, so parallel tabs help where there are cores to spare and
// only add contention where there are not (two tabs on two cores measured slower than one).
var maxTabs = min(max(runtime.NumCPU()/2, 1), 4)

// helper owns the helper tabs of one Capture or Restore and the connection's event handler, which
// routes each tab's events to it.
type helper struct {
	conn      *cdp.Conn
	contextID string
	// answering counts the calls answering requests in flight.
	answering sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	targets []string        // every tab opened, to close
	tabs    map[string]*tab // the attached ones, by session id
}

// tab is a tab of our own that visits origins to read or write their storage. Its Fetch domain
// answers every request the tab makes with an empty page, so that any origin can be visited
// without reaching the network or the site's service worker.
type tab struct {
	h       *helper
	session string
	// gzip tells whether the page has CompressionStream and DecompressionStream.
	gzip bool
	// notify gets a token after each load.
	notify chan struct{}

	// Guarded by h.mu:
	scheme string          // of the origin being visited
	loaded map[string]bool // loader ids whose document has loaded
}

// eachOrigin calls fn for the indexes 0..n-1 on up to maxTabs helper tabs at once, and returns the
// first error, which stops the other calls.
func eachOrigin(ctx context.Context, conn *cdp.Conn, browserContextID string, n int, fn func(ctx context.Context, t *tab, i int) error) error {
	if n == 0 {
		return nil
	}
	h := &helper{conn: conn, contextID: browserContextID, tabs: map[string]*tab{}}
	conn.OnEvent(h.event)
	defer h.close(ctx)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	var (
		wg       sync.WaitGroup
		failOnce sync.Once
		failed   error
	)
	fail := func(err error) {
		failOnce.Do(func() {
			failed = err
			cancel()
		})
	}
	for range min(n, maxTabs) {
		wg.Go(func() {
			t, err := h.open(ctx)
			if err != nil {
				fail(err)
				return
			}
			for i := range next {
				if ctx.Err() != nil {
					return
				}
				if err := fn(ctx, t, i); err != nil {
					fail(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if failed == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return failed
}

// createAttempts are the Target.createTarget options tried in turn: a hidden tab (a target of type
// "other", in no tab strip, closed with our connection) where the browser supports it, else a
// background tab.
var createAttempts = []map[string]any{
	{"hidden": true, "background": true},
	{"background": true},
	{},
}

// open opens and prepares a helper tab.
func (h *helper) open(ctx context.Context) (*tab, error) {
	var created struct {
		TargetID string `json:"targetId"`
	}
	var err error
	for _, opts := range createAttempts {
		params := map[string]any{"url": "about:blank"}
		for k, v := range opts {
			params[k] = v
		}
		if h.contextID != "" {
			params["browserContextId"] = h.contextID
		}
		if err = h.conn.Call(ctx, "", "Target.createTarget", params, &created); err == nil {
			break
		}
		var cdpErr *cdp.Error
		if !errors.As(err, &cdpErr) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("opening a helper tab: %w", err)
	}
	h.mu.Lock()
	h.targets = append(h.targets, created.TargetID)
	h.mu.Unlock()

	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := h.conn.Call(ctx, "", "Target.attachToTarget",
		map[string]any{"targetId": created.TargetID, "flatten": true}, &attached); err != nil {
		return nil, fmt.Errorf("attaching to a helper tab: %w", err)
	}
	t := &tab{h: h, session: attached.SessionID, loaded: map[string]bool{}, notify: make(chan struct{}, 1)}
	h.mu.Lock()
	h.tabs[t.session] = t
	h.mu.Unlock()

	steps := []struct {
		method string
		params any
	}{
		{"Fetch.enable", map[string]any{"patterns": []map[string]any{{"urlPattern": "*"}}}},
		{"Network.enable", map[string]any{"maxTotalBufferSize": 0, "maxResourceBufferSize": 0}},
		{"Network.setBypassServiceWorker", map[string]any{"bypass": true}},
		{"Page.enable", nil},
		{"Page.setLifecycleEventsEnabled", map[string]any{"enabled": true}},
	}
	for _, s := range steps {
		if err := h.conn.Call(ctx, t.session, s.method, s.params, nil); err != nil {
			return nil, fmt.Errorf("preparing a helper tab: %w", err)
		}
	}
	var probe cdp.EvalResult
	if err := h.conn.Call(ctx, t.session, "Runtime.evaluate", map[string]any{
		"expression":    "typeof CompressionStream === 'function' && typeof DecompressionStream === 'function'",
		"returnByValue": true,
	}, &probe); err != nil {
		return nil, fmt.Errorf("preparing a helper tab: %w", err)
	}
	t.gzip = string(probe.Result.Value) == "true"
	return t, nil
}

// event runs on the connection's reader: it records loads and hands requests to goroutines.
func (h *helper) event(e cdp.Event) {
	switch e.Method {
	case "Fetch.requestPaused":
		var p struct {
			RequestID    string `json:"requestId"`
			ResourceType string `json:"resourceType"`
			Request      struct {
				URL string `json:"url"`
			} `json:"request"`
		}
		if json.Unmarshal(e.Params, &p) != nil {
			return
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		t := h.tabs[e.SessionID]
		if h.closed || t == nil {
			return
		}
		h.answering.Add(1)
		go h.answer(t.session, p.RequestID, p.ResourceType, p.Request.URL, t.scheme)
	case "Page.lifecycleEvent":
		var p struct {
			LoaderID string `json:"loaderId"`
			Name     string `json:"name"`
		}
		if json.Unmarshal(e.Params, &p) != nil || p.Name != "load" {
			return
		}
		h.mu.Lock()
		t := h.tabs[e.SessionID]
		if t != nil {
			t.loaded[p.LoaderID] = true
		}
		h.mu.Unlock()
		if t != nil {
			select {
			case t.notify <- struct{}{}:
			default:
			}
		}
	}
}

// answer fulfils a helper page's own request with an empty document and fails every other
// request, among them the browser's automatic upgrade of an http visit to https: a refused
// connection makes the browser fall back to the http origin being visited (a request blocked by the
// client would not).
func (h *helper) answer(session, requestID, resourceType, rawURL, scheme string) {
	defer h.answering.Done()
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	u, err := url.Parse(rawURL)
	if err == nil && resourceType == "Document" && u.Path == helperPath && u.Scheme == scheme {
		h.conn.Call(ctx, session, "Fetch.fulfillRequest", map[string]any{
			"requestId":    requestID,
			"responseCode": 200,
			"responseHeaders": []map[string]string{
				{"name": "Content-Type", "value": "text/html; charset=utf-8"},
				{"name": "Cache-Control", "value": "no-store"},
			},
			"body": "",
		}, nil)
		return
	}
	h.conn.Call(ctx, session, "Fetch.failRequest",
		map[string]any{"requestId": requestID, "errorReason": "ConnectionRefused"}, nil)
}

// close closes the helper tabs and waits for the request answers in flight.
func (h *helper) close(ctx context.Context) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
	defer cancel()
	h.mu.Lock()
	h.closed = true
	targets := h.targets
	h.mu.Unlock()
	for _, id := range targets {
		h.conn.Call(cctx, "", "Target.closeTarget", map[string]any{"targetId": id}, nil)
	}
	h.answering.Wait()
	h.conn.OnEvent(nil)
}

// run visits origin and calls state.js in mode with data, decoding its answer into result.
func (t *tab) run(ctx context.Context, origin, mode string, data, result any) error {
	ctx, cancel := context.WithTimeout(ctx, originTimeout)
	defer cancel()
	// The data is packed while the tab travels.
	var arg string
	packed := make(chan error, 1)
	go func() {
		var err error
		if data != nil {
			arg, err = pack(data, t.gzip)
		}
		packed <- err
	}()
	err := t.visit(ctx, origin)
	if perr := <-packed; perr != nil {
		return perr
	}
	if err != nil {
		return err
	}
	var global cdp.EvalResult
	if err := t.h.conn.Call(ctx, t.session, "Runtime.evaluate",
		map[string]any{"expression": "globalThis", "objectGroup": "trawler"}, &global); err != nil {
		return err
	}
	if global.Result.ObjectID == "" {
		return errors.New("the helper page has no global object")
	}
	var res cdp.EvalResult
	err = t.h.conn.Call(ctx, t.session, "Runtime.callFunctionOn", map[string]any{
		"functionDeclaration": stateJS,
		"objectId":            global.Result.ObjectID,
		"arguments":           []map[string]any{{"value": mode}, {"value": origin}, {"value": arg}, {"value": t.gzip}},
		"awaitPromise":        true,
		"returnByValue":       true,
	}, &res)
	if err != nil {
		return fmt.Errorf("the page did not answer: %w", err)
	}
	if exc := res.Exception(); exc != "" {
		return errors.New(exc)
	}
	if result == nil {
		return nil
	}
	var answer string
	if err := json.Unmarshal(res.Result.Value, &answer); err != nil {
		return fmt.Errorf("decoding the page's answer: %w", err)
	}
	if err := unpack(answer, result); err != nil {
		return fmt.Errorf("decoding the page's answer: %w", err)
	}
	return nil
}

// packThreshold is the size of JSON above which pack gzips it, when the page can gunzip: below it,
// compressing saves less time than it costs.
const packThreshold = 64 << 10

// pack turns v into the data state.js reads: "json:" and its JSON when that is all ASCII, else
// "b64:" and base64 of its JSON, or "gzip:" and base64 of gzip'd JSON. The page parses the JSON
// itself because the protocol's own conversion of an object argument drops members named
// "__proto__". ASCII JSON text crosses the protocol as it is, which costs less than base64 and
// gzip on either side; other JSON would cross it with every non-ASCII character escaped as six.
func pack(v any, gz bool) (string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	if isASCII(raw) {
		return "json:" + string(raw), nil
	}
	if !gz || len(raw) <= packThreshold {
		return "b64:" + base64.StdEncoding.EncodeToString(raw), nil
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	zw.Write(raw)
	if err := zw.Close(); err != nil {
		return "", err
	}
	return "gzip:" + base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

// isASCII reports whether b holds ASCII only.
func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// unpack reads an answer of state.js into v.
func unpack(s string, v any) error {
	kind, b64, _ := strings.Cut(s, ":")
	if kind == "json" {
		return json.Unmarshal([]byte(b64), v)
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return err
	}
	switch kind {
	case "b64":
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return err
		}
		if raw, err = io.ReadAll(&limitedReader{r: zr, n: maxStateSize}); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown packing %.10q", kind)
	}
	return json.Unmarshal(raw, v)
}

// visit navigates the tab to origin's helper page and waits for it to load.
func (t *tab) visit(ctx context.Context, origin string) error {
	u, err := url.Parse(origin)
	if err != nil {
		return err
	}
	t.h.mu.Lock()
	t.scheme = u.Scheme
	t.h.mu.Unlock()

	var nav struct {
		LoaderID  string `json:"loaderId"`
		ErrorText string `json:"errorText"`
	}
	if err := t.h.conn.Call(ctx, t.session, "Page.navigate",
		map[string]any{"url": origin + helperPath}, &nav); err != nil {
		return fmt.Errorf("visiting: %w", err)
	}
	if nav.ErrorText != "" {
		return fmt.Errorf("visiting: %s", nav.ErrorText)
	}
	for {
		t.h.mu.Lock()
		ok := t.loaded[nav.LoaderID]
		t.h.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-t.notify:
		case <-t.h.conn.Done():
			return errors.New("visiting: the browser connection closed")
		case <-ctx.Done():
			return fmt.Errorf("visiting: the helper page did not load: %w", ctx.Err())
		}
	}
}

// Tracker records the http(s) origins of the page and iframe targets of a browser, or of one of
// its browser contexts, so that a capture knows which origins to read. A frame has a target of its
// own only when the browser runs it out of process (a cross-site frame, with site isolation on), so
// same-site frames of another origin go unrecorded. It holds a DevTools connection of its own until
// Close.
type Tracker struct {
	conn      *cdp.Conn
	contextID string

	mu      sync.Mutex
	origins map[string]bool
}

// Track starts recording origins in browser context browserContextID ("" for every context) of the
// browser; the targets already open count too. ctx bounds the setup only.
func Track(ctx context.Context, browser *cdp.Mux, browserContextID string) (*Tracker, error) {
	conn, err := browser.Dial(ctx)
	if err != nil {
		return nil, err
	}
	t := &Tracker{conn: conn, contextID: browserContextID, origins: map[string]bool{}}
	conn.OnEvent(t.event)
	if err := conn.Call(ctx, "", "Target.setDiscoverTargets", map[string]any{"discover": true}, nil); err != nil {
		conn.Close()
		return nil, fmt.Errorf("watching targets: %w", err)
	}
	return t, nil
}

func (t *Tracker) event(e cdp.Event) {
	if e.Method != "Target.targetCreated" && e.Method != "Target.targetInfoChanged" {
		return
	}
	var p struct {
		TargetInfo struct {
			Type             string `json:"type"`
			URL              string `json:"url"`
			BrowserContextID string `json:"browserContextId"`
		} `json:"targetInfo"`
	}
	if json.Unmarshal(e.Params, &p) != nil {
		return
	}
	ti := p.TargetInfo
	if ti.Type != "page" && ti.Type != "iframe" {
		return
	}
	if t.contextID != "" && ti.BrowserContextID != t.contextID {
		return
	}
	u, err := url.Parse(ti.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return
	}
	t.mu.Lock()
	t.origins[u.Scheme+"://"+u.Host] = true
	t.mu.Unlock()
}

// Origins returns the origins seen so far, sorted.
func (t *Tracker) Origins() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.origins))
	for o := range t.origins {
		out = append(out, o)
	}
	slices.Sort(out)
	return out
}

// Close stops tracking.
func (t *Tracker) Close() error { return t.conn.Close() }
