// Package provider owns the live-web search providers behind POST /v2/search
// and the parsing of TRAWLER_SEARCH_PROVIDERS, the ordered list of them.
//
// # TRAWLER_SEARCH_PROVIDERS
//
// Entries are separated by ';' or newlines (not commas: URL templates
// contain commas). Blank entries are skipped; an empty value means "index",
// the embedded index alone. Each entry is one of:
//
//	index
//	searxng:<base URL>
//	http:<URL template>#<result paths>
//
// For example:
//
//	TRAWLER_SEARCH_PROVIDERS='index; searxng:http://127.0.0.1:8888'
//
// # searxng:<base URL>
//
// The SearXNG search API (https://docs.searxng.org/dev/search_api.html):
// the adapter requests {base}/search?format=json, so the instance must list
// json in search.formats of its settings.yml. SearXNG answers 10 to 20
// results a page; the adapter reads up to 5 pages to reach the limit.
//
// # http:<URL template>#<result paths>
//
// Any JSON search endpoint answering GET. The template may use these
// placeholders, replaced for each request:
//
//	{query}    the query as typed, URL-escaped (path or query escaping, by position)
//	{limit}    results wanted, 1 to 100
//	{source}   web, images or news; without it the endpoint serves web only
//	{lang}     language code such as "en", or empty
//	{country}  country code such as "US", or empty
//
// {query} is required. The fragment (after '#') is never sent: it says
// where the results are in the answer, as key=path pairs joined by '&':
//
//	results      the array of hits (default "results"; "." for an answer that is the array)
//	url          the hit's URL (default "url")
//	title        (default "title")
//	description  (default "description|content|snippet")
//	published    a date: RFC 3339, ISO 8601 with or without zone, or Unix seconds or milliseconds
//	image        an image URL: the image for the images source, a thumbnail otherwise
//	width        the image's width in pixels (a number or "1920x1080")
//	height       the image's height in pixels
//
// A path is dot-separated keys, with numeric indexes into arrays
// ("items.0.link"); paths of url and the fields after it are relative to one
// hit. "a|b" takes the first of a and b that is present. For an endpoint
// answering {"data": {"items": [{"link": ..., "name": ..., "snippet": ...,
// "date": ..., "thumb": {"src": ...}}]}}:
//
//	http:https://search.example/api?q={query}&n={limit}#results=data.items&url=link&title=name&description=snippet&published=date&image=thumb.src
//
// Keys containing dots cannot be addressed.
package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Sources a Query can ask for.
const (
	SourceWeb    = "web"
	SourceImages = "images"
	SourceNews   = "news"
)

// Query is what one provider is asked for one source of one search.
type Query struct {
	// Text is the user's query as typed, operators included (SearXNG passes
	// site: and the like on to its engines).
	Text string
	// Source is SourceWeb, SourceImages or SourceNews.
	Source string
	// Limit is how many results are wanted, 1 to 100.
	Limit int
	// TimeRange is "", "hour", "day", "week", "month" or "year".
	TimeRange string
	// Language is a language code such as "en" or "en-GB", or empty for the
	// provider's default.
	Language string
	// Country is an ISO 3166 country code such as "US", or empty. Leave it
	// empty when the user did not set one: providers that cannot apply it
	// say so in a warning.
	Country string
	// Location is a free-text place such as "Berlin, Germany", or empty.
	Location string
	// Safe asks for explicit content to be filtered out (SafeSearch).
	Safe bool
}

// Result is one hit.
type Result struct {
	URL         string
	Title       string
	Description string
	// Published is the publication time, zero when unknown.
	Published time.Time
	// ImageURL is the image itself for the images source, a thumbnail (if
	// any) for web and news.
	ImageURL    string
	ImageWidth  int
	ImageHeight int
	// Engine is the engine that found the hit (SearXNG's engine field) or
	// the provider's kind.
	Engine string
}

// Answer is one provider's answer to one Query.
type Answer struct {
	Results []Result
	// Warnings say what the provider could not honour or what went partly
	// wrong, for example "searxng: location is not supported, ignored".
	// They are meant for API clients and never name the provider's address.
	Warnings []string
}

// addNew appends r unless a result of the same key is in seen, and reports
// whether it did. One page can show several images, so image results are
// told apart by the image, the others by the page.
func (a *Answer) addNew(r Result, source string, seen map[string]bool) bool {
	key := r.URL
	if source == SourceImages {
		key = r.ImageURL
	}
	if seen[key] {
		return false
	}
	seen[key] = true
	a.Results = append(a.Results, r)
	return true
}

// Provider answers search queries from one source of results.
type Provider interface {
	// Name identifies the provider in logs and errors, for example
	// "searxng(http://127.0.0.1:8888)". It carries no credentials.
	Name() string
	// Search asks the provider for one source of one search. Cancelling ctx
	// abandons the request.
	Search(ctx context.Context, q Query) (Answer, error)
}

var (
	// ErrInvalidQuery is wrapped by errors about a Query that breaks its
	// documented ranges: a bug in the caller, not in the provider.
	ErrInvalidQuery = errors.New("invalid search query")
	// ErrUnsupportedSource is wrapped when a provider cannot serve the
	// Query's source at all; callers can move on to the next provider.
	ErrUnsupportedSource = errors.New("source not supported by this provider")
	// ErrBadAnswer is wrapped when a provider answered 2xx with a body that
	// is not the JSON it should be.
	ErrBadAnswer = errors.New("provider answer not understood")
)

// HTTPError is a provider answering with a status other than 2xx.
type HTTPError struct {
	// Provider is the provider's Name.
	Provider   string
	StatusCode int
	// Body is the start of the answer's body as text (an HTML page's title,
	// a JSON answer's error member), for the log.
	Body string
	// RetryAfter is the Retry-After header, if any.
	RetryAfter string
	// Hint says how to fix the cause when it is known, or is empty.
	Hint string
}

func (e *HTTPError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s answered %d %s", e.Provider, e.StatusCode, http.StatusText(e.StatusCode))
	if e.Body != "" {
		fmt.Fprintf(&b, ": %q", e.Body)
	}
	if e.RetryAfter != "" {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryAfter)
	}
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

// validate checks q against the ranges documented on Query.
func (q Query) validate() error {
	switch {
	case strings.TrimSpace(q.Text) == "":
		return fmt.Errorf("%w: empty text", ErrInvalidQuery)
	case q.Source != SourceWeb && q.Source != SourceImages && q.Source != SourceNews:
		return fmt.Errorf("%w: source %q is not web, images or news", ErrInvalidQuery, q.Source)
	case q.Limit < 1 || q.Limit > 100:
		return fmt.Errorf("%w: limit %d is not between 1 and 100", ErrInvalidQuery, q.Limit)
	}
	switch q.TimeRange {
	case "", "hour", "day", "week", "month", "year":
	default:
		return fmt.Errorf("%w: time range %q is not hour, day, week, month or year", ErrInvalidQuery, q.TimeRange)
	}
	return nil
}

// maxBody bounds what is read of one answer; a search answer is tens of
// kilobytes, so anything near this is not one.
const maxBody = 8 << 20

// getJSON requests u and decodes its JSON body into v. Errors name the
// provider but never the URL, which carries the user's query and may carry
// an API key.
func getJSON(ctx context.Context, client *http.Client, name string, u *url.URL, header http.Header, v any, hint func(status int) string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("%s: building request: %w", name, err)
	}
	req.Header.Set("Accept", "application/json")
	// Go's default User-Agent is on SearXNG's bot list; say who we are.
	req.Header.Set("User-Agent", "Trawler (+https://github.com/trawler-dev/trawler)")
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", name, ctx.Err())
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", name, ctx.Err())
		}
		return fmt.Errorf("%s: reading answer: %w", name, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e := &HTTPError{
			Provider:   name,
			StatusCode: resp.StatusCode,
			Body:       bodyStart(body),
			RetryAfter: resp.Header.Get("Retry-After"),
		}
		if hint != nil {
			e.Hint = hint(resp.StatusCode)
		}
		return e
	}
	if len(body) > maxBody {
		return fmt.Errorf("%s: %w: answer is larger than %d bytes", name, ErrBadAnswer, maxBody)
	}
	if err := json.Unmarshal(body, v); err != nil {
		ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if ct == "" {
			ct = "no content type"
		}
		return fmt.Errorf("%s: %w: answer is not JSON (%s, starting %q): %v", name, ErrBadAnswer, ct, bodyStart(body), err)
	}
	return nil
}

// bodyStart renders the start of an answer for an error message: an HTML
// page's title, a JSON object's "error" or "message" member, or the first
// 200 characters with whitespace collapsed.
func bodyStart(body []byte) string {
	s := string(body)
	lower := strings.ToLower(s)
	if i := strings.Index(lower, "<title>"); i >= 0 {
		rest := s[i+len("<title>"):]
		if j := strings.Index(strings.ToLower(rest), "</title>"); j >= 0 {
			s = rest[:j]
		}
	} else {
		var obj map[string]any
		if json.Unmarshal(body, &obj) == nil {
			for _, k := range []string{"error", "message", "detail"} {
				if m, ok := obj[k].(string); ok && m != "" {
					s = m
					break
				}
			}
		}
	}
	s = strings.Join(strings.Fields(s), " ")
	const max = 200
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// parseTime reads the date forms search engines use: RFC 3339, ISO 8601
// with or without zone and fraction (Python's isoformat, which SearXNG
// emits; no zone is taken as UTC), a bare date, "2006-01-02 15:04:05-0700"
// (SearXNG's older pubdate) and Unix seconds or milliseconds.
func parseTime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, false
	}
	for _, layout := range []string{
		time.RFC3339Nano,
		"2006-01-02T15:04:05.999999999",
		"2006-01-02T15:04:05Z0700",
		"2006-01-02 15:04:05.999999999Z07:00",
		"2006-01-02 15:04:05Z0700",
		"2006-01-02 15:04:05.999999999",
		"2006-01-02T15:04",
		"2006-01-02",
		"2006-01",
		"2006",
		time.RFC1123Z,
		time.RFC1123,
	} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	// Unix time; below 1e8 (1973) a number is more likely a count or an id.
	if n, err := strconv.ParseFloat(s, 64); err == nil && n >= 1e8 {
		if n >= 1e12 { // milliseconds; seconds reach 1e12 only in the year 33658
			return time.UnixMilli(int64(n)).UTC(), true
		}
		return time.Unix(int64(n), 0).UTC(), true
	}
	return time.Time{}, false
}

// parseResolution reads "1920x1080", "1920 x 1080" or "1920×1080".
func parseResolution(s string) (w, h int, ok bool) {
	s = strings.NewReplacer("×", "x", "X", "x", " ", "").Replace(s)
	a, b, found := strings.Cut(s, "x")
	if !found {
		return 0, 0, false
	}
	w, errW := strconv.Atoi(a)
	h, errH := strconv.Atoi(b)
	if errW != nil || errH != nil || w <= 0 || h <= 0 {
		return 0, 0, false
	}
	return w, h, true
}

// absolute resolves a possibly relative link (SearXNG's image proxy, a
// site-relative thumbnail) against the answer's URL; it keeps only http(s).
func absolute(base *url.URL, link string) string {
	link = strings.TrimSpace(link)
	if link == "" {
		return ""
	}
	u, err := base.Parse(link)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return u.String()
}
