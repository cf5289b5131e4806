package profiles

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// This file is the saved state's model: a browser's cookies, and the localStorage and IndexedDB of
// its origins, as a State, and the snapshot in which Use and the helper tabs carry it. Caches,
// files, history and service workers are never saved. Capture reads a State from a browser
// (capture.go), Restore writes one back (restore.go), and Encode and DecodeState make it a
// profile's blob (encoding.go).

// StateVersion is the version of the encoding that Encode writes and DecodeState reads.
const StateVersion = 1

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
