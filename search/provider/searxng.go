package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// searxngMaxPages bounds the pages read for one Query: SearXNG fans each
// page out to all its engines, so a page is expensive for the instance.
const searxngMaxPages = 5

// SearXNG asks a SearXNG instance through its JSON search API.
type SearXNG struct {
	base   *url.URL
	client *http.Client
}

var _ Provider = (*SearXNG)(nil)

// NewSearXNG returns the provider for the SearXNG instance at base (its
// root, such as "http://127.0.0.1:8888"); client carries its requests.
func NewSearXNG(base string, client *http.Client) (*SearXNG, error) {
	u, err := parseSearXNGBase(base)
	if err != nil {
		return nil, fmt.Errorf("searxng: %w", err)
	}
	if client == nil {
		client = &http.Client{}
	}
	return &SearXNG{base: u, client: client}, nil
}

// Name returns "searxng(<base URL>)" with any password masked.
func (s *SearXNG) Name() string { return "searxng(" + s.base.Redacted() + ")" }

// Search reads pages of SearXNG results until it has q.Limit distinct ones,
// a page adds none, or it has read searxngMaxPages pages. A failing first
// page is an error; a failing later page ends the search with a warning.
func (s *SearXNG) Search(ctx context.Context, q Query) (Answer, error) {
	if err := q.validate(); err != nil {
		return Answer{}, fmt.Errorf("%s: %w", s.Name(), err)
	}
	params, warnings := searxngParams(q)
	ans := Answer{Warnings: warnings}
	seen := make(map[string]bool)
	var unresponsive []string
	seenEngine := make(map[string]bool)
	for page := 1; page <= searxngMaxPages && len(ans.Results) < q.Limit; page++ {
		params.Set("pageno", strconv.Itoa(page))
		u := s.base.JoinPath("search")
		u.RawQuery = params.Encode()
		var body searxngAnswer
		if err := getJSON(ctx, s.client, s.Name(), u, searxngHeader(q), &body, searxngHint); err != nil {
			if page == 1 || ctx.Err() != nil {
				return Answer{}, err
			}
			ans.Warnings = append(ans.Warnings, fmt.Sprintf("searxng: page %d failed (%s); results come from the pages before it", page, failure(err)))
			break
		}
		if body.Results == nil {
			return Answer{}, fmt.Errorf("%s: %w: the answer has no results member; is this a SearXNG instance?", s.Name(), ErrBadAnswer)
		}
		for _, e := range unresponsiveEngines(body.UnresponsiveEngines) {
			if !seenEngine[e] {
				seenEngine[e] = true
				unresponsive = append(unresponsive, e)
			}
		}
		added := 0
		for _, raw := range *body.Results {
			r, ok := raw.result(q.Source, u)
			if !ok {
				continue
			}
			if !ans.addNew(r, q.Source, seen) {
				continue
			}
			added++
			if len(ans.Results) == q.Limit {
				break
			}
		}
		if added == 0 {
			break
		}
	}
	if len(unresponsive) > 0 {
		ans.Warnings = append(ans.Warnings, "searxng: some engines did not answer: "+strings.Join(unresponsive, ", "))
	}
	return ans, nil
}

// searxngParams maps q to SearXNG's parameters, with warnings for what
// SearXNG cannot apply. pageno is set per page.
func searxngParams(q Query) (url.Values, []string) {
	var warnings []string
	params := url.Values{}
	params.Set("q", q.Text)
	params.Set("format", "json")
	category := "general"
	if q.Source != SourceWeb {
		category = q.Source // SearXNG's "images" and "news" categories
	}
	params.Set("categories", category)

	switch q.TimeRange {
	case "":
	case "hour":
		params.Set("time_range", "day")
		warnings = append(warnings, "searxng: time range hour is not supported, searched the past day instead")
	default:
		params.Set("time_range", q.TimeRange)
	}

	// SearXNG knows regions only as part of a language ("en-US").
	lang := strings.TrimSpace(q.Language)
	country := strings.ToUpper(strings.TrimSpace(q.Country))
	switch {
	case country == "":
	case !isCountryCode(country):
		warnings = append(warnings, fmt.Sprintf("searxng: country %q is not a two-letter code, ignored", q.Country))
	case lang == "":
		warnings = append(warnings, "searxng: country cannot be applied without a language, ignored")
	case strings.EqualFold(lang, "all") || strings.EqualFold(lang, "auto"):
		warnings = append(warnings, fmt.Sprintf("searxng: country cannot be applied to language %q, ignored", lang))
	case strings.Contains(lang, "-"):
		if _, region, _ := strings.Cut(lang, "-"); !strings.EqualFold(region, country) {
			warnings = append(warnings, fmt.Sprintf("searxng: country %s ignored, language %s already names a region", country, lang))
		}
	default:
		lang += "-" + country
	}
	if lang != "" {
		params.Set("language", lang)
	}
	if strings.TrimSpace(q.Location) != "" {
		warnings = append(warnings, "searxng: location is not supported, ignored")
	}
	if q.Safe {
		params.Set("safesearch", "2") // strict, as SafeSearch filtering is
	}
	return params, warnings
}

// searxngHeader mirrors the language in Accept-Language, which SearXNG
// consults when its language preference is "auto".
func searxngHeader(q Query) http.Header {
	if q.Language == "" {
		return nil
	}
	return http.Header{"Accept-Language": {q.Language}}
}

func searxngHint(status int) string {
	switch status {
	case http.StatusForbidden:
		return "SearXNG refuses format=json unless it is enabled: add json to search.formats in its settings.yml"
	case http.StatusTooManyRequests:
		return "SearXNG's limiter refused the request: on a private instance set server.limiter to false in settings.yml, or add Trawler's address to botdetection.ip_lists.pass_ip in limiter.toml"
	case http.StatusNotFound:
		return "the adapter requests <base URL>/search: give the instance's root as the base URL"
	}
	return ""
}

// failure says briefly why a request failed, without the provider's
// address, for a warning.
func failure(err error) string {
	var he *HTTPError
	if errors.As(err, &he) {
		return fmt.Sprintf("%d %s", he.StatusCode, http.StatusText(he.StatusCode))
	}
	if errors.Is(err, ErrBadAnswer) {
		return "answer not understood"
	}
	return "request failed"
}

// searxngAnswer is the part of SearXNG's JSON answer the adapter reads.
type searxngAnswer struct {
	Results *[]searxngResult `json:"results"`
	// UnresponsiveEngines holds [engine, error message] pairs.
	UnresponsiveEngines []json.RawMessage `json:"unresponsive_engines"`
}

// searxngResult is one SearXNG result. Engines fill results in their own
// ways, so every field tolerates null and odd types.
type searxngResult struct {
	URL           looseString `json:"url"`
	Title         looseString `json:"title"`
	Content       looseString `json:"content"`
	PublishedDate looseString `json:"publishedDate"`
	// Pubdate is what SearXNG versions before 2023 put the machine-readable
	// date in, "publishedDate" being humanized there.
	Pubdate      looseString `json:"pubdate"`
	ImgSrc       looseString `json:"img_src"`
	ThumbnailSrc looseString `json:"thumbnail_src"`
	Thumbnail    looseString `json:"thumbnail"`
	Resolution   looseString `json:"resolution"`
	Engine       looseString `json:"engine"`
}

// result converts r; it reports false for a hit unusable as source's
// entry: no http(s) URL, or for images no image.
func (r searxngResult) result(source string, answerURL *url.URL) (Result, bool) {
	res := Result{
		URL:         httpURL(string(r.URL)),
		Title:       strings.TrimSpace(string(r.Title)),
		Description: strings.TrimSpace(string(r.Content)),
		Engine:      string(r.Engine),
	}
	if res.Engine == "" {
		res.Engine = KindSearXNG
	}
	if t, ok := parseTime(string(r.PublishedDate)); ok {
		res.Published = t
	} else if t, ok := parseTime(string(r.Pubdate)); ok {
		res.Published = t
	}
	if source == SourceImages {
		res.ImageURL = firstNonEmpty(absolute(answerURL, string(r.ImgSrc)), absolute(answerURL, string(r.ThumbnailSrc)))
		if res.ImageURL == "" {
			return Result{}, false
		}
		if res.URL == "" {
			res.URL = res.ImageURL
		}
		res.ImageWidth, res.ImageHeight, _ = parseResolution(string(r.Resolution))
		return res, true
	}
	if res.URL == "" {
		return Result{}, false
	}
	res.ImageURL = firstNonEmpty(
		absolute(answerURL, string(r.Thumbnail)),
		absolute(answerURL, string(r.ImgSrc)),
		absolute(answerURL, string(r.ThumbnailSrc)),
	)
	return res, true
}

// unresponsiveEngines renders SearXNG's [engine, message] pairs as
// "engine (message)".
func unresponsiveEngines(raw []json.RawMessage) []string {
	var out []string
	for _, r := range raw {
		var pair []looseString
		if json.Unmarshal(r, &pair) != nil || len(pair) == 0 || pair[0] == "" {
			continue
		}
		e := string(pair[0])
		if len(pair) > 1 && pair[1] != "" {
			e += " (" + string(pair[1]) + ")"
		}
		out = append(out, e)
	}
	return out
}

// looseString decodes a JSON string, reads a number as its text, and
// anything else (null, objects, arrays, booleans) as "".
type looseString string

func (s *looseString) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch v := v.(type) {
	case string:
		*s = looseString(v)
	case float64:
		*s = looseString(strings.TrimSpace(string(b)))
	default:
		*s = ""
	}
	return nil
}

func isCountryCode(s string) bool {
	return len(s) == 2 && s[0] >= 'A' && s[0] <= 'Z' && s[1] >= 'A' && s[1] <= 'Z'
}

// httpURL returns s if it is an absolute http(s) URL, or "".
func httpURL(s string) string {
	s = strings.TrimSpace(s)
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return s
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
