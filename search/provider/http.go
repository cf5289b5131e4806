package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// HTTP asks any JSON search endpoint, addressed by a URL template, and
// reads hits at configured paths (see the package comment).
type HTTP struct {
	tmpl   string
	paths  Paths
	client *http.Client
	name   string
	// uses records which optional placeholders the template has.
	uses map[string]bool
}

var _ Provider = (*HTTP)(nil)

// NewHTTP returns the provider for an http Spec; client carries its
// requests. Paths left empty in spec.Paths take the documented defaults.
func NewHTTP(spec Spec, client *http.Client) (*HTTP, error) {
	tmpl, fragPaths, err := parseTemplate(spec.URL)
	if err != nil {
		return nil, fmt.Errorf("http provider %s: %w", redactTemplate(spec.URL), err)
	}
	paths := fragPaths
	if spec.Paths != (Paths{}) {
		paths = spec.Paths
		paths.Results = firstNonEmpty(paths.Results, defaultPaths.Results)
		paths.URL = firstNonEmpty(paths.URL, defaultPaths.URL)
		paths.Title = firstNonEmpty(paths.Title, defaultPaths.Title)
		paths.Description = firstNonEmpty(paths.Description, defaultPaths.Description)
	}
	if client == nil {
		client = &http.Client{}
	}
	uses := make(map[string]bool)
	for _, m := range placeholderRE.FindAllStringSubmatch(tmpl, -1) {
		uses[m[1]] = true
	}
	base, _, _ := strings.Cut(tmpl, "?")
	return &HTTP{
		tmpl:   tmpl,
		paths:  paths,
		client: client,
		name:   "http(" + redactTemplate(base) + ")",
		uses:   uses,
	}, nil
}

// Name returns "http(<template without its query>)": the query part is
// left out because it often holds an API key.
func (h *HTTP) Name() string { return h.name }

// Search requests the template filled in from q and reads the hits. A
// template without {source} serves the web source only: other sources fail
// with ErrUnsupportedSource.
func (h *HTTP) Search(ctx context.Context, q Query) (Answer, error) {
	if err := q.validate(); err != nil {
		return Answer{}, fmt.Errorf("%s: %w", h.name, err)
	}
	if q.Source != SourceWeb && !h.uses["source"] {
		return Answer{}, fmt.Errorf("%s: %w: %s (the template has no {source})", h.name, ErrUnsupportedSource, q.Source)
	}
	var ans Answer
	ignored := func(what string) {
		ans.Warnings = append(ans.Warnings, "http: "+what+" is not supported by this provider, ignored")
	}
	if q.TimeRange != "" {
		ignored("time range")
	}
	if q.Safe {
		ignored("safe")
	}
	if q.Language != "" && !h.uses["lang"] {
		ignored("language")
	}
	if q.Country != "" && !h.uses["country"] {
		ignored("country")
	}
	if strings.TrimSpace(q.Location) != "" {
		ignored("location")
	}

	u, err := url.Parse(expand(h.tmpl, q))
	if err != nil {
		return Answer{}, fmt.Errorf("%s: expanding the template: %w", h.name, err)
	}
	var doc any
	if err := getJSON(ctx, h.client, h.name, u, nil, &doc, nil); err != nil {
		return Answer{}, err
	}
	hits, err := h.hits(doc)
	if err != nil {
		return Answer{}, fmt.Errorf("%s: %w: %w", h.name, ErrBadAnswer, err)
	}

	seen := make(map[string]bool)
	skipped := 0
	for _, hit := range hits {
		r, ok := h.result(hit, q.Source, u)
		if !ok {
			skipped++
			continue
		}
		if ans.addNew(r, q.Source, seen) && len(ans.Results) == q.Limit {
			break
		}
	}
	if skipped > 0 {
		need := "an http(s) URL at " + h.paths.URL
		if q.Source == SourceImages {
			need += " and an image at " + h.paths.Image
		}
		hits := "hits were"
		if skipped == 1 {
			hits = "hit was"
		}
		ans.Warnings = append(ans.Warnings, fmt.Sprintf("http: %d %s skipped for want of %s", skipped, hits, need))
	}
	return ans, nil
}

// hits finds the array of hits in doc.
func (h *HTTP) hits(doc any) ([]any, error) {
	v, ok := lookupAlt(doc, h.paths.Results)
	if !ok {
		msg := fmt.Sprintf("results path %q is not in the answer", h.paths.Results)
		if m, isObj := doc.(map[string]any); isObj {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if len(keys) > 10 {
				keys = append(keys[:10], "…")
			}
			msg += fmt.Sprintf(" (its top-level keys: %s)", strings.Join(keys, ", "))
		}
		return nil, errors.New(msg)
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("results path %q holds %s, not an array", h.paths.Results, jsonKind(v))
	}
	return arr, nil
}

// result converts one hit; it reports false for a hit without an http(s)
// URL or, for the images source, without an image.
func (h *HTTP) result(hit any, source string, answerURL *url.URL) (Result, bool) {
	str := func(path string) string {
		v, _ := lookupAlt(hit, path)
		return strings.TrimSpace(scalarText(v))
	}
	r := Result{
		URL:         httpURL(str(h.paths.URL)),
		Title:       str(h.paths.Title),
		Description: str(h.paths.Description),
		Engine:      KindHTTP,
	}
	if t, ok := parseTime(str(h.paths.Published)); ok {
		r.Published = t
	}
	r.ImageURL = absolute(answerURL, str(h.paths.Image))
	r.ImageWidth = dimension(str(h.paths.Width), 0)
	r.ImageHeight = dimension(str(h.paths.Height), 1)
	if source == SourceImages {
		if r.ImageURL == "" {
			return Result{}, false
		}
		if r.URL == "" {
			r.URL = r.ImageURL
		}
	}
	return r, r.URL != ""
}

// dimension reads a width (i=0) or height (i=1) from "640", "640.0" or a
// "640x480" resolution.
func dimension(s string, i int) int {
	if s == "" {
		return 0
	}
	if w, h, ok := parseResolution(s); ok {
		return [2]int{w, h}[i]
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 || f > 1e6 {
		return 0
	}
	return int(f)
}

// expand fills the template's placeholders from q, path-escaping those
// before the '?' and query-escaping those after it.
func expand(tmpl string, q Query) string {
	values := map[string]string{
		"query":   q.Text,
		"limit":   strconv.Itoa(q.Limit),
		"source":  q.Source,
		"lang":    q.Language,
		"country": q.Country,
	}
	queryAt := strings.Index(tmpl, "?")
	var b strings.Builder
	last := 0
	for _, m := range placeholderRE.FindAllStringSubmatchIndex(tmpl, -1) {
		v, ok := values[tmpl[m[2]:m[3]]]
		if !ok {
			continue // parseTemplate rejects unknown names; leave them as written
		}
		b.WriteString(tmpl[last:m[0]])
		if queryAt >= 0 && m[0] > queryAt {
			b.WriteString(url.QueryEscape(v))
		} else {
			b.WriteString(url.PathEscape(v))
		}
		last = m[1]
	}
	b.WriteString(tmpl[last:])
	return b.String()
}

// lookupAlt resolves "a|b": the first alternative that is present, a null
// or an empty string counting as absent.
func lookupAlt(doc any, paths string) (any, bool) {
	if paths == "" {
		return nil, false
	}
	for _, p := range strings.Split(paths, "|") {
		if v, ok := lookup(doc, p); ok {
			if s, isStr := v.(string); !isStr || strings.TrimSpace(s) != "" {
				return v, true
			}
		}
	}
	return nil, false
}

// lookup resolves one dot-separated path; "." is doc itself.
func lookup(doc any, path string) (any, bool) {
	if path == "." {
		return doc, doc != nil
	}
	cur := doc
	for _, key := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[key]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(key)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, cur != nil
}

// scalarText renders a JSON string or number as text; other kinds give "".
func scalarText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case json.Number:
		return v.String()
	}
	return ""
}

func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "null"
}
