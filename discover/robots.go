package discover

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/temoto/robotstxt"
)

// maxRobotsBytes is where a robots.txt body is cut off. Google reads the
// first 500 KiB and ignores the rest; so do we.
const maxRobotsBytes = 500 << 10

// Robots is a site's robots.txt as it applies to one user agent. A nil
// *Robots allows everything, as does one whose robots.txt could not be read.
type Robots struct {
	// Err, when not empty, says why robots.txt could not be read (a 5xx
	// or 429 answer, a network error, an unparsable file), for the caller
	// to show as a warning; everything is allowed in that case. It is the
	// problem alone, such as "HTTP 500", without the URL, so that the
	// caller can phrase the warning around the host.
	Err string

	group    *robotstxt.Group // nil: allow all
	sitemaps []string
}

// FetchRobots fetches scheme://host/robots.txt of site with client, sending
// userAgent as the User-Agent, and selects the group for userAgent. A 4xx
// answer (404 included) means there are no restrictions. A 5xx answer, a
// network error or an unparsable file also allows everything, but the
// problem is recorded in Err. Bodies over 500 KiB are truncated.
func FetchRobots(ctx context.Context, client *http.Client, site *url.URL, userAgent string) *Robots {
	robotsURL := (&url.URL{Scheme: site.Scheme, Host: site.Host, Path: "/robots.txt"}).String()
	fail := func(format string, args ...any) *Robots {
		return &Robots{Err: fmt.Sprintf(format, args...)}
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, robotsURL, nil)
	if err != nil {
		return fail("%v", err)
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "text/plain, */*;q=0.5")
	resp, err := client.Do(req)
	if err != nil {
		return fail("%v", unwrapURLError(err))
	}
	defer resp.Body.Close()

	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
	case resp.StatusCode == http.StatusTooManyRequests:
		// Allowed like any 4xx, but worth a warning: the site is pushing
		// back and its real rules are unknown.
		return fail("HTTP %d", resp.StatusCode)
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return &Robots{}
	default:
		// Google treats 5xx as "disallow all" for a while and retries; a
		// single crawl cannot wait, so it proceeds and says so.
		return fail("HTTP %d", resp.StatusCode)
	}

	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRobotsBytes))
	if err != nil {
		return fail("reading: %v", unwrapURLError(err))
	}
	return parseRobots(body, robotsURL, userAgent)
}

// ParseRobots reads a robots.txt body as fetched from robotsURL (relative
// Sitemap lines are resolved against it) and selects the group for
// userAgent. It is FetchRobots without the fetch, for callers that already
// have the file.
func ParseRobots(body []byte, robotsURL, userAgent string) *Robots {
	if len(body) > maxRobotsBytes {
		body = body[:maxRobotsBytes]
	}
	return parseRobots(body, robotsURL, userAgent)
}

func parseRobots(body []byte, robotsURL, userAgent string) *Robots {
	data, err := robotstxt.FromBytes(sanitizeRobots(body))
	if err != nil {
		return &Robots{Err: "unparsable: " + strings.Join(strings.Fields(err.Error()), " ")}
	}
	r := &Robots{group: selectGroup(data, userAgent)}
	base, _ := url.Parse(robotsURL)
	seen := map[string]bool{}
	for _, s := range data.Sitemaps {
		u, ok := Resolve(base, s)
		if !ok || seen[u.String()] {
			continue
		}
		seen[u.String()] = true
		r.sitemaps = append(r.sitemaps, u.String())
	}
	return r
}

// sanitizeRobots prepares a robots.txt body for the robotstxt parser.
//
// It drops the lines that make that parser reject a whole file (rules
// before any User-agent line, unreadable Crawl-delay values): real files
// have such slips, and one bad line should cost that line, not every rule in
// the file. And it percent-encodes non-ASCII characters in Allow and
// Disallow paths, because rules are often written the way a person reads
// them ("Disallow: /café/") while Robots.Allowed sees URLs percent-encoded,
// as Google does.
func sanitizeRobots(body []byte) []byte {
	body = bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n"))
	body = bytes.ReplaceAll(body, []byte("\r"), []byte("\n"))
	var out bytes.Buffer
	out.Grow(len(body))
	seenAgent := false
	for line := range bytes.Lines(body) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		content, _, _ := bytes.Cut(line, []byte("#"))
		key, value := robotsField(string(content))
		switch key {
		case "user-agent", "useragent":
			if value != "" {
				seenAgent = true
			}
		case "allow", "disallow":
			if !seenAgent {
				continue
			}
			if !isASCII(value) {
				line = []byte(key + ": " + escapeNonASCII(value))
			}
		case "crawl-delay", "crawldelay":
			if !seenAgent || !validDelay(value) {
				continue
			}
		}
		out.Write(line)
		out.WriteByte('\n')
	}
	return out.Bytes()
}

// escapeNonASCII percent-encodes the bytes of s above 0x7F in the upper-case
// form url.URL.EscapedPath produces.
func escapeNonASCII(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x80 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0xF])
	}
	return b.String()
}

// robotsField splits a line the way the robotstxt scanner does: the key
// ends at the first colon or blank, and the value is the next word.
func robotsField(line string) (key, value string) {
	line = strings.TrimLeft(line, " \t\v")
	end := strings.IndexAny(line, ": \t\v")
	if end < 0 {
		return strings.ToLower(line), ""
	}
	key = strings.ToLower(line[:end])
	rest := strings.TrimLeft(line[end:], " \t\v")
	rest = strings.TrimPrefix(rest, ":")
	fields := strings.Fields(rest)
	if len(fields) > 0 {
		value = fields[0]
	}
	return key, value
}

func validDelay(v string) bool {
	f, err := strconv.ParseFloat(v, 64)
	return err == nil && f >= 0 && !math.IsInf(f, 0) && !math.IsNaN(f)
}

// genericAgentWords are words of browser-like User-Agent strings that name
// no crawler, so they must not select a robots.txt group: a robots.txt
// naming "Mozilla" means the old Mozilla-branded bots, not every client.
var genericAgentWords = map[string]bool{
	"mozilla": true, "compatible": true, "applewebkit": true, "khtml": true, "like": true,
	"gecko": true, "chrome": true, "safari": true, "windows": true, "nt": true, "linux": true,
	"x11": true, "macintosh": true, "intel": true, "mac": true, "os": true, "win64": true,
	"x64": true, "x86_64": true, "https": true, "http": true, "www": true,
}

// selectGroup picks the group that applies to userAgent. robotstxt matches
// a group name against the start of the agent string, which fails for a
// browser-like User-Agent such as "Mozilla/5.0 (compatible; TrawlerBot/1.0)",
// so each product word is tried in turn; the first with a group of its own
// wins, and otherwise the "*" group applies.
func selectGroup(data *robotstxt.RobotsData, userAgent string) *robotstxt.Group {
	// No group name is a prefix of NUL, so this yields the "*" group (or an
	// empty one): the answer for an agent robots.txt does not name.
	fallback := data.FindGroup("\x00")
	words := strings.FieldsFunc(strings.ToLower(userAgent), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	})
	for _, w := range words {
		if len(w) < 2 || genericAgentWords[w] || strings.Trim(w, "0123456789") == "" {
			continue
		}
		if g := data.FindGroup(w); g != fallback {
			return g
		}
	}
	return fallback
}

// Allowed reports whether robots.txt lets the user agent fetch u. Only u's
// path and query are consulted: a Robots describes one host, and the
// caller keeps one per host.
func (r *Robots) Allowed(u *url.URL) bool {
	if r == nil || r.group == nil {
		return true
	}
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	return r.group.Test(p)
}

// CrawlDelay is the Crawl-delay robots.txt asks of the user agent, 0 when
// it asks none.
func (r *Robots) CrawlDelay() time.Duration {
	if r == nil || r.group == nil {
		return 0
	}
	return r.group.CrawlDelay
}

// Sitemaps returns the absolute URLs of the sitemaps robots.txt names, in
// file order and without duplicates.
func (r *Robots) Sitemaps() []string {
	if r == nil {
		return nil
	}
	return r.sitemaps
}

// unwrapURLError drops the "Get "https://...":" prefix net/http puts on
// errors, since the messages built here name the URL already.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
