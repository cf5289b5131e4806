package profiles

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/binary"
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

	"github.com/klauspost/compress/gzip"
	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/cdp/rawjson"
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
	// answers its own requests, with a page of ours that runs state.js and with the storage that
	// page asks for.
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

// snapshot is a state as Use and the helper tabs handle it: the cookies decoded, and each origin's
// storage kept as the JSON text of its OriginState, which goes from the page to the blob and from
// the blob to the page without being decoded and encoded again on the way.
type snapshot struct {
	cookies []Cookie
	origins []rawOrigin
}

// rawOrigin is the storage of one origin as the JSON text of an OriginState.
type rawOrigin struct {
	origin string // scheme://host[:port], as the OriginState names it
	json   []byte
	// spans are the parts of json a save compressed as they came, in order (see segments.go).
	spans []span
}

// originList returns the origins the snapshot holds storage for, sorted.
func (s *snapshot) originList() []string {
	out := make([]string, 0, len(s.origins))
	for _, o := range s.origins {
		out = append(out, o.origin)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// snapshot encodes the state's origins.
func (s *State) snapshot() (*snapshot, error) {
	snap := &snapshot{cookies: s.Cookies, origins: make([]rawOrigin, len(s.Origins))}
	for i := range s.Origins {
		b, err := json.Marshal(&s.Origins[i])
		if err != nil {
			return nil, fmt.Errorf("encoding the storage of %s: %w", s.Origins[i].Origin, err)
		}
		snap.origins[i] = rawOrigin{origin: s.Origins[i].Origin, json: b}
	}
	return snap, nil
}

// check checks that the storage of each origin is valid JSON, as a capture's is unless the page
// or our reading of its answer went wrong.
func (s *snapshot) check() error {
	for _, o := range s.origins {
		if !json.Valid(o.json) {
			return fmt.Errorf("the storage read from %s is not valid JSON", o.origin)
		}
	}
	return nil
}

// state decodes the snapshot's origins.
func (s *snapshot) state() (*State, error) {
	st := &State{Version: StateVersion, Cookies: s.cookies, Origins: make([]OriginState, len(s.origins))}
	for i, o := range s.origins {
		if err := json.Unmarshal(o.json, &st.Origins[i]); err != nil {
			return nil, fmt.Errorf("decoding the storage of %s: %w", o.origin, err)
		}
	}
	return st, nil
}

// Encode returns the state as gzip'd JSON.
func (s *State) Encode() ([]byte, error) {
	snap, err := s.snapshot()
	if err != nil {
		return nil, fmt.Errorf("encoding profile state: %w", err)
	}
	return snap.encode()
}

// encode returns the snapshot as gzip'd JSON, the State's encoding: the origins' JSON is written
// as it is, and its parts that a save compressed already (rawOrigin.spans) are not compressed
// again (see segments.go).
func (s *snapshot) encode() ([]byte, error) {
	cookies, err := json.Marshal(s.cookies)
	if err != nil {
		return nil, fmt.Errorf("encoding profile state: %w", err)
	}
	size := len(cookies)
	for _, o := range s.origins {
		size += len(o.json)
	}
	// compress/flate compresses: klauspost's is faster (34 ms against 50 for the bench's 5 MB
	// profile), but its blobs of that profile are 20-30% larger. Its reader (inflate) reads either:
	// DecodeState of that profile takes 50 ms with it, 60 with compress/gzip's.
	g := newGzipWriter(size/2 + 4096)
	g.write(fmt.Appendf(nil, `{"version":%d,"cookies":`, StateVersion))
	g.write(cookies)
	g.write([]byte(`,"origins":[`))
	for i, o := range s.origins {
		if i > 0 {
			g.write([]byte(","))
		}
		at := 0
		for _, sp := range o.spans {
			g.write(o.json[at:sp.off])
			g.writeSegment(o.json[sp.off:sp.end], sp.seg)
			at = sp.end
		}
		g.write(o.json[at:])
	}
	g.write([]byte("]}\n"))
	return g.close(), nil
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
	snap, err := decodeSnapshot(b)
	if err != nil {
		return nil, err
	}
	st, err := snap.state()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidState, err)
	}
	return st, nil
}

// decodeSnapshot reads a state written by Encode, decoding its cookies and checking its origins,
// whose storage stays JSON text. Every error wraps ErrInvalidState.
func decodeSnapshot(b []byte) (*snapshot, error) {
	data, err := inflateAll(b)
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: no data", ErrInvalidState)
	}
	snap, version := splitState(data)
	if snap == nil {
		// Not the layout Encode writes: encoding/json decides, as it always did, what the
		// blob holds or why it is refused.
		st, err := decodeJSON(data)
		if err != nil {
			return nil, err
		}
		if st.Version == StateVersion {
			if snap, err = st.snapshot(); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrInvalidState, err)
			}
		}
		version = st.Version
	}
	if version != StateVersion {
		return nil, fmt.Errorf("%w: version %d, this build reads version %d", ErrInvalidState, version, StateVersion)
	}
	for _, o := range snap.origins {
		if _, err := parseOrigin(o.origin); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidState, err)
		}
	}
	return snap, nil
}

// splitState reads data as a State written by Encode: it decodes the version and the cookies,
// and cuts out each origin's JSON and reads its origin member, but leaves that JSON unchecked,
// which the page that parses it does. It returns nil for what it cannot read and for anything that
// encoding/json might read otherwise: member names in another case (encoding/json matches them
// regardless of case) or escaped, values of other types, origins that are not objects.
func splitState(data []byte) (*snapshot, int) {
	var (
		version          = -1
		cookies, origins []byte
		odd              bool
	)
	end, err := rawjson.EachMember(data, func(k, v []byte) bool {
		switch string(k) {
		case "version":
			if json.Unmarshal(v, &version) != nil {
				odd = true
			}
		case "cookies":
			cookies = v
		case "origins":
			origins = v
		default:
			odd = bytes.IndexByte(k, '\\') >= 0 || foldsTo(k, "version", "cookies", "origins")
		}
		return !odd
	})
	if err != nil || odd || version < 0 || rawjson.SkipSpace(data, end) != len(data) {
		return nil, 0
	}
	snap := &snapshot{}
	if cookies != nil && json.Unmarshal(cookies, &snap.cookies) != nil {
		return nil, 0
	}
	if origins == nil || string(origins) == "null" {
		return snap, version
	}
	err = rawjson.EachElement(origins, func(o []byte) error {
		if o[0] != '{' {
			return rawjson.ErrSyntax
		}
		var name []byte
		_, err := rawjson.EachMember(o, func(k, v []byte) bool {
			switch {
			case string(k) == "origin":
				name = v
			case bytes.IndexByte(k, '\\') >= 0 || foldsTo(k, "origin", "localStorage", "indexedDB", "skipped"):
				odd = true
			}
			return !odd
		})
		ro := rawOrigin{json: o}
		if err != nil || odd || (name != nil && json.Unmarshal(name, &ro.origin) != nil) {
			return rawjson.ErrSyntax
		}
		snap.origins = append(snap.origins, ro)
		return nil
	})
	if err != nil {
		return nil, 0
	}
	return snap, version
}

// foldsTo reports whether k is one of names in another case.
func foldsTo(k []byte, names ...string) bool {
	for _, n := range names {
		if string(k) != n && strings.EqualFold(string(k), n) {
			return true
		}
	}
	return false
}

// decodeJSON decodes data with encoding/json, refusing trailing data.
func decodeJSON(data []byte) (*State, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var st State
	if err := dec.Decode(&st); err != nil {
		return nil, decodeError(err)
	}
	rest, _ := io.ReadAll(dec.Buffered())
	if len(bytes.TrimSpace(rest)) > 0 || dec.More() {
		return nil, fmt.Errorf("%w: trailing data after the state", ErrInvalidState)
	}
	return &st, nil
}

// heldBeforeCounting is how much of a decompressed state inflateAll holds before it checks, without
// holding any more of it, that the whole is within maxStateSize.
const heldBeforeCounting = 64 << 20

// inflateAll decompresses the one gzip member of b, checking its checksum, and refuses more than
// maxStateSize bytes or trailing data. A state larger than heldBeforeCounting is decompressed twice,
// first only to count its bytes, so that a blob that inflates past the limit is refused without
// holding it all in memory.
func inflateAll(b []byte) ([]byte, error) {
	var text bytes.Buffer
	if len(b) >= 18 {
		// The gzip trailer gives the size (mod 4 GiB), which a corrupt or hostile blob may
		// overstate: the buffer grows past a modest guess only as the data comes.
		text.Grow(int(min(int64(binary.LittleEndian.Uint32(b[len(b)-4:])), 32*int64(len(b)), heldBeforeCounting)) + bytes.MinRead)
	}
	_, err := inflate(b, &text, heldBeforeCounting)
	if errors.Is(err, errTooLarge) {
		text = bytes.Buffer{}
		if _, err = inflate(b, io.Discard, maxStateSize); err == nil {
			_, err = inflate(b, &text, maxStateSize)
		}
	}
	return text.Bytes(), err
}

// inflate decompresses one gzip member of b into w, checking its checksum, and refuses more than
// limit bytes (errTooLarge) or trailing data.
func inflate(b []byte, w io.Writer, limit int64) (int64, error) {
	br := bytes.NewReader(b)
	zr, err := gzip.NewReader(br)
	if err != nil {
		return 0, decodeError(err)
	}
	zr.Multistream(false)
	n, err := io.Copy(w, &limitedReader{r: zr, n: limit})
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
	snap, err := capture(ctx, browser, browserContextID, origins, false)
	if err != nil {
		return nil, err
	}
	return snap.state()
}

// capture is Capture, keeping each origin's storage as the page's JSON text, unchecked (see
// snapshot.check); with precompress, for a save, its large parts are compressed as they come.
func capture(ctx context.Context, browser *cdp.Mux, browserContextID string, origins []string, precompress bool) (*snapshot, error) {
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

	conn, w, err := dialWire(ctx, browser)
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
	stored, err := captureStorage(ctx, conn, w, browserContextID, want, precompress)
	if cerr := <-cookiesRead; cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, err
	}
	return &snapshot{cookies: cookies, origins: stored}, nil
}

// captureStorage reads the storage of origins. An origin that a page of the browser context shows
// is read from that page, in a script world of our own (see borrow), which saves opening a helper
// tab and visiting the origin; the others, and any that its page fails to answer, on helper tabs.
func captureStorage(ctx context.Context, conn *cdp.Conn, w *wire, browserContextID string, origins []string, precompress bool) ([]rawOrigin, error) {
	got := make([]rawOrigin, len(origins))
	held := make([]bool, len(origins))
	h := newHelper(conn, w, browserContextID)
	h.precompress = precompress
	defer h.close(ctx)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pages := h.pagesShowing(ctx, origins)
	var (
		rest, missed []int
		mu           sync.Mutex
		borrowed     sync.WaitGroup
	)
	for i, o := range origins {
		target, ok := pages[o]
		if !ok {
			rest = append(rest, i)
			continue
		}
		borrowed.Go(func() {
			var err error
			if got[i], held[i], err = h.captureIn(ctx, target, o); err != nil {
				mu.Lock()
				missed = append(missed, i)
				mu.Unlock()
			}
		})
	}
	onHelpers := func(indexes []int) error {
		return h.eachOrigin(ctx, len(indexes), nil, func(ctx context.Context, t *tab, k int) error {
			i := indexes[k]
			var err error
			if got[i], held[i], err = t.capture(ctx, origins[i]); err != nil {
				return fmt.Errorf("reading the storage of %s: %w", origins[i], err)
			}
			return nil
		})
	}
	err := onHelpers(rest)
	if err != nil {
		cancel() // the capture fails: stop reading the pages
	}
	borrowed.Wait()
	if err == nil && len(missed) > 0 {
		slices.Sort(missed)
		err = onHelpers(missed)
	}
	if err != nil {
		return nil, err
	}
	out := []rawOrigin{}
	for i, o := range got {
		if !held[i] {
			continue
		}
		if slices.ContainsFunc(out, func(x rawOrigin) bool { return x.origin == o.origin }) {
			continue // two spellings of one origin
		}
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b rawOrigin) int { return strings.Compare(a.origin, b.origin) })
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
	snap, err := st.snapshot()
	if err != nil {
		return err
	}
	return restore(ctx, browser, browserContextID, func(context.Context) (*snapshot, error) { return snap, nil }, false)
}

// restore is Restore of the snapshot that load returns, which may still be being decoded. With
// speculate, a helper tab opens meanwhile, in case the snapshot holds storage.
func restore(ctx context.Context, browser *cdp.Mux, browserContextID string, load func(context.Context) (*snapshot, error), speculate bool) error {
	var snap *snapshot
	if !speculate {
		var err error
		if snap, err = load(ctx); err != nil {
			return err
		}
		if len(snap.cookies) == 0 && len(snap.origins) == 0 {
			return nil
		}
	}
	conn, w, err := dialWire(ctx, browser)
	if err != nil {
		return err
	}
	defer conn.Close()
	h := newHelper(conn, w, browserContextID)
	defer h.close(ctx)
	var first chan openedTab
	if speculate {
		opening := make(chan openedTab, 1)
		go func() {
			t, err := h.open(ctx)
			opening <- openedTab{t, err}
		}()
		first = opening
		// Once the tab is open, unless eachOrigin took it, it is closed with the others.
		defer func() {
			if first != nil {
				<-first
			}
		}()
	}
	if snap == nil {
		if snap, err = load(ctx); err != nil {
			return err
		}
	}
	for _, o := range snap.origins {
		if _, err := parseOrigin(o.origin); err != nil {
			return err
		}
	}

	// The cookies are written while the helper tab visits the origins.
	cookiesSet := make(chan error, 1)
	go func() { cookiesSet <- setCookies(ctx, conn, browserContextID, snap.cookies) }()
	if len(snap.origins) > 0 {
		opened := first
		first = nil
		err = h.eachOrigin(ctx, len(snap.origins), opened, func(ctx context.Context, t *tab, i int) error {
			o := snap.origins[i]
			if err := t.restore(ctx, o); err != nil {
				return fmt.Errorf("writing the storage of %s: %w", o.origin, err)
			}
			return nil
		})
	}
	return errors.Join(<-cookiesSet, err)
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
	// precompress has a capture compress each large part of the storage as it comes, for a save.
	precompress bool
	conn        *cdp.Conn
	w           *wire // conn's transport, for the messages that carry storage
	contextID   string
	// answering counts the calls answering requests in flight.
	answering sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	targets []string        // every tab opened, to close
	tabs    map[string]*tab // the attached ones, by session id
}

// tab is a tab of our own that visits origins to read or write their storage. Its Fetch domain
// answers every request the tab makes: the visit of an origin with a page of ours, so that any
// origin can be visited without reaching the network or the site's service worker, and the page's
// requests for the storage to restore with that storage.
type tab struct {
	h       *helper
	session string
	// world, when not 0, is the script world of ours in a page of the user's (see borrow), where
	// the tab's scripts run.
	world int64
	// notify gets a token after each load.
	notify chan struct{}

	// Guarded by h.mu:
	scheme    string          // of the origin being visited
	page      string          // the helper page of the visit, as base64
	loaded    map[string]bool // loader ids whose document has loaded
	restoring *restoreData    // the storage a restore sends the page
	dataErr   error           // why answering the page's request for it failed
}

// newHelper starts routing conn's events to the helper tabs it opens.
func newHelper(conn *cdp.Conn, w *wire, browserContextID string) *helper {
	h := &helper{conn: conn, w: w, contextID: browserContextID, tabs: map[string]*tab{}}
	conn.OnEvent(h.event)
	return h
}

// openedTab is the outcome of helper.open.
type openedTab struct {
	t   *tab
	err error
}

// eachOrigin calls fn for the indexes 0..n-1 on up to maxTabs helper tabs at once, and returns the
// first error, which stops the other calls. first, when not nil, brings the first tab, already
// being opened.
func (h *helper) eachOrigin(ctx context.Context, n int, first <-chan openedTab, fn func(ctx context.Context, t *tab, i int) error) error {
	if n == 0 {
		return nil
	}
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
	for k := range min(n, maxTabs) {
		wg.Go(func() {
			var t *tab
			var err error
			if k == 0 && first != nil {
				o := <-first
				t, err = o.t, o.err
			} else {
				t, err = h.open(ctx)
			}
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

	// The steps are written one after the other, in order, and their replies awaited together.
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
	var waits []func(context.Context) ([]byte, error)
	for _, s := range steps {
		wait, err := h.w.start(s.method, call(t.session, s.method, s.params))
		if err != nil {
			return nil, fmt.Errorf("preparing a helper tab: %w", err)
		}
		waits = append(waits, wait)
	}
	for _, wait := range waits {
		if _, err := wait(ctx); err != nil {
			return nil, fmt.Errorf("preparing a helper tab: %w", err)
		}
	}
	return t, nil
}

// pagesShowing returns, for those of origins that a page of the helper's browser context shows,
// that page's target id. It returns none when the browser cannot say which pages are in the
// context.
func (h *helper) pagesShowing(ctx context.Context, origins []string) map[string]string {
	contextID := h.contextID
	if contextID == "" {
		var contexts struct {
			DefaultBrowserContextID string `json:"defaultBrowserContextId"`
		}
		if h.conn.Call(ctx, "", "Target.getBrowserContexts", nil, &contexts) != nil {
			return nil
		}
		if contextID = contexts.DefaultBrowserContextID; contextID == "" {
			return nil
		}
	}
	var targets struct {
		TargetInfos []cdp.TargetInfo `json:"targetInfos"`
	}
	if h.conn.Call(ctx, "", "Target.getTargets", nil, &targets) != nil {
		return nil
	}
	pages := map[string]string{}
	for _, ti := range targets.TargetInfos {
		if ti.Type != "page" || ti.BrowserContextID != contextID {
			continue
		}
		u, err := url.Parse(ti.URL)
		if err != nil || u.User != nil {
			continue
		}
		if o, err := parseOrigin(u.Scheme + "://" + u.Host); err == nil && slices.Contains(origins, o) {
			pages[o] = ti.TargetID
		}
	}
	return pages
}

// probeTimeout is how long a page of the user's has to answer before its origin is read on a
// helper tab instead: a page that shows a dialog, or runs a long script, answers nothing.
const probeTimeout = 2 * time.Second

// captureIn reads origin's storage from target, a page of the user's that shows it (see borrow).
func (h *helper) captureIn(ctx context.Context, target, origin string) (rawOrigin, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, originTimeout)
	defer cancel()
	t, err := h.borrow(ctx, target)
	if err != nil {
		return rawOrigin{}, false, err
	}
	defer h.giveBack(ctx, t)
	return t.read(ctx, origin)
}

// borrow attaches to target, a page of the user's, and makes a script world of our own in its
// main frame, which runs with the page's origin, and so reaches its storage, but shares no
// JavaScript object with the page's own scripts. The page is left as it was: giveBack detaches.
// A page that does not answer within probeTimeout is given back at once.
func (h *helper) borrow(ctx context.Context, target string) (*tab, error) {
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := h.conn.Call(ctx, "", "Target.attachToTarget",
		map[string]any{"targetId": target, "flatten": true}, &attached); err != nil {
		return nil, fmt.Errorf("attaching to a page: %w", err)
	}
	t := &tab{h: h, session: attached.SessionID}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var world struct {
		ExecutionContextID int64 `json:"executionContextId"`
	}
	err := h.conn.Call(pctx, t.session, "Page.createIsolatedWorld",
		map[string]any{"frameId": target, "worldName": "trawler-profile"}, &world)
	if err == nil {
		t.world = world.ExecutionContextID
		var r cdp.EvalResult
		err = h.conn.Call(pctx, t.session, "Runtime.evaluate",
			map[string]any{"expression": "1", "contextId": t.world, "returnByValue": true}, &r)
	}
	if err != nil {
		h.giveBack(ctx, t)
		return nil, fmt.Errorf("reading a page: %w", err)
	}
	return t, nil
}

// giveBack drops what the tab's scripts kept in the borrowed page and detaches from it.
func (h *helper) giveBack(ctx context.Context, t *tab) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
	defer cancel()
	if t.world != 0 {
		h.conn.Call(cctx, t.session, "Runtime.evaluate",
			map[string]any{"expression": "delete globalThis.trawlerProfile", "contextId": t.world}, nil)
	}
	h.conn.Call(cctx, "", "Target.detachFromTarget", map[string]any{"sessionId": t.session}, nil)
}

// answerKind is how a helper tab's request is answered.
type answerKind int

const (
	answerRefuse answerKind = iota // a refused connection
	answerPage                     // the helper page
	answerData                     // a part of the storage to restore
)

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
		a := answer{t: t, requestID: p.RequestID}
		if u, err := url.Parse(p.Request.URL); err == nil && u.Path == helperPath && u.Scheme == t.scheme {
			switch {
			case p.ResourceType == "Document":
				a.kind, a.page = answerPage, t.page
			case p.ResourceType == "Fetch" || p.ResourceType == "XHR":
				if part, ok := strings.CutPrefix(u.RawQuery, dataQuery); ok && t.restoring != nil {
					a.kind, a.data, a.part = answerData, t.restoring, part
				}
			}
		}
		h.answering.Add(1)
		go h.answer(a)
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

// answer is how to answer one paused request of a tab.
type answer struct {
	t         *tab
	requestID string
	kind      answerKind
	page      string       // answerPage: the document, as base64
	data      *restoreData // answerData: the storage
	part      string       // answerData: the part of it asked for
}

// answer fulfils a helper tab's request for the helper page with that page, its request for a
// part of the storage to restore with that part, and fails every other request, among them the
// browser's automatic upgrade of an http visit to https: a refused connection makes the browser
// fall back to the http origin being visited (a request blocked by the client would not).
func (h *helper) answer(a answer) {
	defer h.answering.Done()
	timeout := closeTimeout
	if a.kind == answerData {
		timeout = originTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	switch a.kind {
	case answerPage:
		h.conn.Call(ctx, a.t.session, "Fetch.fulfillRequest", map[string]any{
			"requestId":    a.requestID,
			"responseCode": 200,
			"responseHeaders": []map[string]string{
				{"name": "Content-Type", "value": "text/html; charset=utf-8"},
				{"name": "Cache-Control", "value": "no-store"},
			},
			"body": a.page,
		}, nil)
		return
	case answerData:
		err := h.answerData(ctx, a)
		if err == nil {
			return
		}
		h.mu.Lock()
		a.t.dataErr = fmt.Errorf("answering the page's request for the storage: %w", err)
		h.mu.Unlock()
	}
	h.conn.Call(ctx, a.t.session, "Fetch.failRequest",
		map[string]any{"requestId": a.requestID, "errorReason": "ConnectionRefused"}, nil)
}

// answerData answers a request for a part of the storage to restore, once it is ready and the
// parts before it are sent: the page writes one part while the next comes. Each part is answered
// once.
func (h *helper) answerData(ctx context.Context, a answer) error {
	i := slices.Index(dataParts, a.part)
	if i < 0 {
		return fmt.Errorf("no part %q to answer", a.part)
	}
	written := func() { a.data.sent[i].Do(func() { close(a.data.written[i]) }) }
	defer written()
	for _, c := range append([]chan struct{}{a.data.ready}, a.data.written[:i]...) {
		select {
		case <-c:
		case <-a.data.done:
			return errors.New("the restore is over")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if a.data.err != nil {
		return a.data.err
	}
	h.mu.Lock()
	msg := a.data.parts[a.part]
	delete(a.data.parts, a.part)
	h.mu.Unlock()
	if msg == nil {
		return fmt.Errorf("part %q asked for twice", a.part)
	}
	wait, err := h.w.start("Fetch.fulfillRequest", func(id int64) []byte {
		msg = append(msg, `,"requestId":`...)
		msg = appendJSON(msg, a.requestID)
		return endCommand(msg, id)
	})
	written() // the next part may follow it on the pipe before the browser replies
	if err != nil {
		return err
	}
	_, err = wait(ctx)
	return err
}

// restoreData is the storage that a restore of one origin sends the page, in parts (dataParts),
// each as the Fetch.fulfillRequest command that answers the page's request for it, but for the
// request's id and the command's own (see fulfilData). It is made ready while the tab travels.
type restoreData struct {
	ready   chan struct{} // closed once parts or err is set
	parts   map[string][]byte
	err     error
	written []chan struct{} // by part, closed once its answer is written to the browser (or failed)
	sent    []sync.Once
	done    chan struct{} // closed when the restore of the origin ends
}

func newRestoreData() *restoreData {
	d := &restoreData{ready: make(chan struct{}), done: make(chan struct{}), sent: make([]sync.Once, len(dataParts))}
	for range dataParts {
		d.written = append(d.written, make(chan struct{}))
	}
	return d
}

// prepare cuts o's storage into parts and makes the commands that send them.
func (d *restoreData) prepare(session string, o rawOrigin) {
	defer close(d.ready)
	parts, err := cutParts(o)
	if err != nil {
		d.err = err
		return
	}
	d.parts = make(map[string][]byte, len(dataParts))
	for _, p := range dataParts {
		d.parts[p] = fulfilData(session, parts[p])
	}
}

// cutParts returns the JSON of each part of o's storage (dataParts), "null" for a part it lacks.
func cutParts(o rawOrigin) (map[string][]byte, error) {
	parts := make(map[string][]byte, len(dataParts))
	_, err := rawjson.EachMember(o.json, func(k, v []byte) bool {
		if slices.Contains(dataParts, string(k)) {
			parts[string(k)] = v
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("%w: the storage of %s is not a JSON object", ErrInvalidState, o.origin)
	}
	for _, p := range dataParts {
		if parts[p] == nil {
			parts[p] = []byte("null")
		}
	}
	return parts, nil
}

// fulfilData returns the start of the Fetch.fulfillRequest command on session that answers with
// body, a JSON document: all of it but for the requestId member and the id, which answerData
// appends. The body goes as base64, which the protocol carries as it is.
func fulfilData(session string, body []byte) []byte {
	const (
		head = `"responseCode":200,"responseHeaders":[{"name":"Content-Type","value":"application/json; charset=utf-8"},` +
			`{"name":"Cache-Control","value":"no-store"}],"body":"`
		tail = 256 // room for what answerData appends
	)
	n := base64.StdEncoding.EncodedLen(len(body))
	buf := make([]byte, 0, 128+len(session)+len(head)+n+tail)
	buf = command(buf, session, "Fetch.fulfillRequest")
	buf = append(buf, head...)
	buf = buf[:len(buf)+n]
	base64.StdEncoding.Encode(buf[len(buf)-n:], body)
	return append(buf, '"')
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

// dataQuery and a part's name are the query of the helper page's requests for the parts of the
// storage to restore.
const dataQuery = "data="

// dataParts are the members of an OriginState that a restore writes, which the page asks for
// apart: it writes the first while the second comes.
var dataParts = []string{"localStorage", "indexedDB"}

// script is the expression that runs state.js in mode on origin: its value is a promise (restore)
// or an object of promises, one per part (capture).
func script(mode, origin string) string {
	args := appendJSON(nil, mode)
	args = append(args, ',')
	args = appendJSON(args, origin)
	args = append(args, ',')
	args = appendJSON(args, helperPath+"?"+dataQuery)
	return "(" + stateJS + "\n)(" + string(args) + ")"
}

// helperPage is the helper page that runs state.js in mode on origin as soon as it is parsed,
// before the page has loaded and the tab's load event has reached us, and keeps what it returns in
// globalThis.trawlerProfile; as base64, for Fetch.fulfillRequest. The script holds no "</" (see
// TestStateJSFitsAPage), so it cannot end its element early. A restore's parts, when given, are in
// the page, as the JSON object of a script element that state.js reads (#trawler-parts), rather
// than asked for: every "<" in them is escaped, which leaves the JSON the same and keeps them from
// ending their element.
func helperPage(mode, origin string, parts map[string][]byte) string {
	var page bytes.Buffer
	page.WriteString("<!doctype html><meta charset=utf-8>")
	if parts != nil {
		page.WriteString(`<script type="application/json" id="trawler-parts">{`)
		for i, p := range dataParts {
			if i > 0 {
				page.WriteByte(',')
			}
			page.Write(appendJSON(nil, p))
			page.WriteByte(':')
			page.Write(bytes.ReplaceAll(parts[p], []byte("<"), []byte(`\u003c`)))
		}
		page.WriteString("}</script>")
	}
	page.WriteString("<script>globalThis.trawlerProfile = " + script(mode, origin) + ";</script>")
	return base64.StdEncoding.EncodeToString(page.Bytes())
}

// inlineSize is the size of an origin's storage up to which a restore puts it in the helper page:
// for little storage, that saves the page's requests for it.
const inlineSize = 256 << 10

// results awaits the promises of the helper page's script, the one it returned (member "") or
// those of the object it returned (the members named), and returns the protocol's result object
// (a Runtime.RemoteObject) of each, undecoded, or the first error the script threw. It asks for
// all of them at once, and reads the replies itself, megabytes of them for a capture, rather than
// cdp.Conn: only the values are decoded, once. Should the page's own script not have run, it runs
// state.js now.
func (t *tab) results(ctx context.Context, mode, origin string, members ...string) ([][]byte, error) {
	return t.resultsEach(ctx, mode, origin, nil, members...)
}

// resultsEach is results, calling arrived, when not nil, with each result as it comes, in order.
func (t *tab) resultsEach(ctx context.Context, mode, origin string, arrived func(i int, result []byte) error, members ...string) ([][]byte, error) {
	expr := func(fallback bool, member string) string {
		e := "globalThis.trawlerProfile"
		if fallback {
			e = "(globalThis.trawlerProfile ??= " + script(mode, origin) + ")"
		}
		switch {
		case member == "":
			return e
		case fallback:
			return e + "." + member
		}
		return e + "?." + member
	}
	evaluate := func(e string) (func(context.Context) ([]byte, error), error) {
		params := map[string]any{"expression": e, "awaitPromise": true, "returnByValue": true}
		if t.world != 0 {
			params["contextId"] = t.world
		}
		return t.h.w.start("Runtime.evaluate", call(t.session, "Runtime.evaluate", params))
	}
	waits := make([]func(context.Context) ([]byte, error), len(members))
	for i, m := range members {
		var err error
		if waits[i], err = evaluate(expr(false, m)); err != nil {
			return nil, fmt.Errorf("the page did not answer: %w", err)
		}
	}
	out := make([][]byte, len(members))
	for i, m := range members {
		for fallback := false; ; fallback = true {
			msg, err := waits[i](ctx)
			if err != nil {
				return nil, fmt.Errorf("the page did not answer: %w", err)
			}
			res := rawjson.Member(msg, "result")
			if rawjson.Member(res, "exceptionDetails") != nil {
				var r cdp.EvalResult
				if err := json.Unmarshal(res, &r); err != nil {
					return nil, fmt.Errorf("decoding the page's answer: %w", err)
				}
				return nil, errors.New(r.Exception())
			}
			out[i] = rawjson.Member(res, "result")
			if string(rawjson.Member(out[i], "type")) != `"undefined"` {
				if arrived != nil {
					if err := arrived(i, out[i]); err != nil {
						return nil, err
					}
				}
				break
			}
			if fallback {
				return nil, errors.New("the page did not run the script")
			}
			if waits[i], err = evaluate(expr(true, m)); err != nil {
				return nil, fmt.Errorf("the page did not answer: %w", err)
			}
		}
	}
	return out, nil
}

// capture visits origin and reads its storage, as the JSON text of an OriginState. held reports
// whether the origin holds any storage; the origin named in o is the page's own spelling of it.
func (t *tab) capture(ctx context.Context, origin string) (o rawOrigin, held bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, originTimeout)
	defer cancel()
	if err := t.visit(ctx, origin, helperPage("capture", origin, nil)); err != nil {
		return o, false, err
	}
	return t.read(ctx, origin)
}

// read reads the storage of origin, where the tab is, as capture returns it. For a save
// (helper.precompress), the origin's localStorage and its databases are each compressed as they
// come (see segments.go).
func (t *tab) read(ctx context.Context, origin string) (o rawOrigin, held bool, err error) {
	// Each answer is "1" when its part holds anything, else "0", then (localStorage only) the
	// origin, a newline, and the packed JSON of the part.
	var heads, texts [2][]byte
	var segs [2]*segment
	var dbs, skipped []byte
	arrived := func(i int, obj []byte) error {
		answer, err := rawjson.Unquote(rawjson.Member(obj, "value"))
		if err != nil {
			return fmt.Errorf("decoding the page's answer: %w", err)
		}
		head, packed, ok := bytes.Cut(answer, []byte{'\n'})
		if !ok || len(head) < 1 {
			return fmt.Errorf("decoding the page's answer: no header in %.40q", answer)
		}
		heads[i] = head
		if texts[i], err = unpack(packed); err != nil {
			return fmt.Errorf("decoding the page's answer: %w", err)
		}
		big := texts[i]
		if i == 1 {
			dbs, skipped = rawjson.Member(texts[1], "indexedDB"), rawjson.Member(texts[1], "skipped")
			if dbs == nil || skipped == nil {
				return errors.New("decoding the page's answer: no databases")
			}
			big = dbs
		}
		if t.h.precompress {
			segs[i] = compressSegment(big)
		}
		return nil
	}
	if _, err := t.resultsEach(ctx, "capture", origin, arrived, "localStorage", "indexedDB"); err != nil {
		return o, false, err
	}
	o.origin, held = string(heads[0][1:]), heads[0][0] == '1' || heads[1][0] == '1'
	buf := make([]byte, 0, len(o.origin)+len(texts[0])+len(dbs)+len(skipped)+64)
	buf = append(buf, `{"origin":`...)
	buf = appendJSON(buf, o.origin)
	buf = append(buf, `,"localStorage":`...)
	ls := len(buf)
	buf = append(buf, texts[0]...)
	buf = append(buf, `,"indexedDB":`...)
	db := len(buf)
	buf = append(buf, dbs...)
	buf = append(append(buf, `,"skipped":`...), skipped...)
	o.json = append(buf, '}')
	if t.h.precompress {
		o.spans = []span{{ls, ls + len(texts[0]), segs[0]}, {db, db + len(dbs), segs[1]}}
	}
	return o, held, nil
}

// restore visits o's origin and writes its storage. The page asks for the storage, in parts
// (dataParts), which the tab's Fetch domain answers: a response body reaches the page without the
// script engine's protocol layer converting it on the way, as an argument would. Little storage
// comes in the page itself.
func (t *tab) restore(ctx context.Context, o rawOrigin) error {
	ctx, cancel := context.WithTimeout(ctx, originTimeout)
	defer cancel()
	var page string
	if len(o.json) <= inlineSize {
		parts, err := cutParts(o)
		if err != nil {
			return err
		}
		page = helperPage("restore", o.origin, parts)
	} else {
		data := newRestoreData()
		go data.prepare(t.session, o)
		t.h.mu.Lock()
		t.restoring, t.dataErr = data, nil
		t.h.mu.Unlock()
		defer func() {
			t.h.mu.Lock()
			t.restoring = nil
			t.h.mu.Unlock()
			close(data.done)
		}()
		page = helperPage("restore", o.origin, nil)
	}
	if err := t.visit(ctx, o.origin, page); err != nil {
		return err
	}
	if _, err := t.results(ctx, "restore", o.origin, ""); err != nil {
		t.h.mu.Lock()
		dataErr := t.dataErr
		t.h.mu.Unlock()
		if dataErr != nil {
			return fmt.Errorf("%w (%v)", dataErr, err)
		}
		return err
	}
	return nil
}

// unpack reads the packed JSON of a page's answer: "json:" and JSON text, "b64:" and base64 of
// JSON, or "gzip:" and base64 of gzip'd JSON.
func unpack(packed []byte) ([]byte, error) {
	kind, b64, _ := bytes.Cut(packed, []byte{':'})
	if string(kind) == "json" {
		return b64, nil
	}
	raw := make([]byte, base64.StdEncoding.DecodedLen(len(b64)))
	n, err := base64.StdEncoding.Decode(raw, b64)
	if err != nil {
		return nil, err
	}
	raw = raw[:n]
	switch string(kind) {
	case "b64":
		return raw, nil
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(&limitedReader{r: zr, n: maxStateSize})
	}
	return nil, fmt.Errorf("unknown packing %.10q", kind)
}

// visit navigates the tab to origin's helper page, which is page (as base64), and waits for it to
// load.
func (t *tab) visit(ctx context.Context, origin, page string) error {
	u, err := url.Parse(origin)
	if err != nil {
		return err
	}
	t.h.mu.Lock()
	t.scheme, t.page = u.Scheme, page
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
