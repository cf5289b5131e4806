package discover

import (
	"net"
	"net/url"
	"path"
	"slices"
	"strings"

	"golang.org/x/net/idna"

	"github.com/trawler-dev/trawler/netguard"
)

// Resolve turns an href found on the page at base into an absolute URL fit
// to crawl. It resolves relative references, drops the fragment and any
// credentials (user:pass@: they are never sent, listed or echoed), keeps only
// http and https, lowercases scheme and host, writes an IPv4 address given
// in another notation (0x7f.1) the way browsers read it (127.0.0.1), drops
// the default port (:80 for http, :443 for https) and turns an empty path
// into "/". base may be nil,
// in which case href must be absolute. ok is false for mailto:, javascript:,
// data:, tel: and other schemes, for an empty href and for anything that
// does not parse.
func Resolve(base *url.URL, href string) (u *url.URL, ok bool) {
	href = cleanHref(href)
	if href == "" {
		return nil, false
	}
	ref, err := url.Parse(href)
	if err != nil {
		return nil, false
	}
	if base != nil {
		ref = base.ResolveReference(ref)
	}
	return normalize(ref)
}

// cleanHref strips what browsers strip from an href before parsing it:
// surrounding whitespace, and tabs and newlines anywhere (attribute values
// are often wrapped across lines in hand-written HTML).
func cleanHref(href string) string {
	href = strings.TrimSpace(href)
	if strings.ContainsAny(href, "\t\n\r") {
		href = strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' {
				return -1
			}
			return r
		}, href)
	}
	return href
}

// normalize puts an absolute URL into the form Resolve promises, returning
// a copy so that the caller's URL (often a page's base) is never changed.
func normalize(in *url.URL) (*url.URL, bool) {
	u := *in
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, false
	}
	// "http:foo" parses as an opaque URL with no host: nothing to fetch.
	if u.Opaque != "" || u.Host == "" {
		return nil, false
	}
	host, ok := canonicalHost(u.Scheme, u.Host)
	if !ok {
		return nil, false
	}
	u.Host = host
	u.User = nil
	u.Fragment, u.RawFragment = "", ""
	if u.Path == "" {
		u.Path, u.RawPath = "/", ""
	}
	return &u, true
}

// canonicalHost lowercases a URL's host, converts an internationalised name
// to its ASCII (punycode) form so that both spellings of one host compare
// equal, and drops the scheme's default port.
func canonicalHost(scheme, hostport string) (string, bool) {
	host, port := hostport, ""
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 && !strings.Contains(hostport[i:], "]") {
		host, port = hostport[:i], hostport[i+1:]
	}
	host = strings.ToLower(host)
	if host == "" {
		return "", false
	}
	if a, ok := netguard.ParseIPv4(host); ok {
		host = a.String()
	}
	if !isASCII(host) {
		ascii, err := idna.Lookup.ToASCII(host)
		if err != nil {
			return "", false
		}
		host = ascii
	}
	if port == defaultPort(scheme) {
		port = ""
	}
	if port == "" {
		return host, true
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), port), true
}

func defaultPort(scheme string) string {
	switch scheme {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// indexPages are the file names that servers conventionally answer for a
// bare directory, so "/docs/index.html" and "/docs/" are one page.
var indexPages = map[string]bool{
	"index.html":   true,
	"index.htm":    true,
	"index.php":    true,
	"index.asp":    true,
	"index.aspx":   true,
	"default.asp":  true,
	"default.aspx": true,
}

// Key is the identity of a page for de-duplication within one crawl: two
// URLs with the same key are fetched once.
//
// The fragment is never part of the key, the host is compared in lower
// case, the default port is ignored and query parameters are compared in
// sorted order (by name; repeated names keep their relative order, since
// "a=1&a=2" and "a=2&a=1" can mean different things to a server). With
// IgnoreQueryParameters the query is dropped altogether; that option says
// the query is not part of a page's identity, so it applies whether or not
// DeduplicateSimilarURLs is set.
//
// With DeduplicateSimilarURLs, URLs that real sites nearly always serve the
// same page for also share a key: http and https, a leading "www.", a
// trailing slash, and an index page (index.html, index.htm, index.php,
// index.asp, index.aspx, default.asp, default.aspx) and its directory.
func (r *Rules) Key(u *url.URL) string {
	host, _ := canonicalHost(strings.ToLower(u.Scheme), u.Host)
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	query := ""
	if !r.opts.IgnoreQueryParameters {
		query = sortedQuery(u.RawQuery)
	}

	var b strings.Builder
	if r.opts.DeduplicateSimilarURLs {
		host = strings.TrimPrefix(host, "www.")
		dir, file := path.Split(p)
		if indexPages[strings.ToLower(file)] {
			p = dir
		}
		p = strings.TrimRight(p, "/")
		// No scheme: http and https are one page.
		b.WriteString("//")
	} else {
		b.WriteString(strings.ToLower(u.Scheme))
		b.WriteString("://")
	}
	b.WriteString(host)
	b.WriteString(p)
	if query != "" {
		b.WriteByte('?')
		b.WriteString(query)
	}
	return b.String()
}

// PageKey is the identity of the page at raw outside any crawl (a cached
// page, a page's change-tracking history): Key with no crawl's options.
// A URL that does not parse is its own key.
func PageKey(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	return (&Rules{}).Key(u)
}

// sortedQuery orders a raw query by parameter name without decoding it, so
// that differently escaped but equal values are not merged by accident and
// the key stays a faithful copy of what is sent.
func sortedQuery(raw string) string {
	if raw == "" {
		return ""
	}
	params := strings.Split(raw, "&")
	params = slices.DeleteFunc(params, func(p string) bool { return p == "" })
	slices.SortStableFunc(params, func(a, b string) int {
		return strings.Compare(paramName(a), paramName(b))
	})
	return strings.Join(params, "&")
}

func paramName(param string) string {
	name, _, _ := strings.Cut(param, "=")
	return name
}
