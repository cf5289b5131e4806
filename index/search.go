package index

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
)

// The sources of a search (spec 4.6).
const (
	SourceWeb    = "web"
	SourceImages = "images"
	SourceNews   = "news"
)

// Field weights of the text query, tuned on the python3.11-doc query table
// (make bench): BM25 already favours a word in a short field, so the title
// and the URL weigh less than the body and still count for more per word.
const (
	boostTitle       = 0.25
	boostURL         = 0.25
	boostDescription = 0.5
	boostBody        = 1.0
	boostAlt         = 3.0
	// boostPair scores two of the query's words side by side in the page
	// (a term of the pairs fields).
	boostPair = 0.75
)

// Request is one search of the index, for one source.
type Request struct {
	Team   string
	Query  Query
	Source string // SourceWeb (the default), SourceImages or SourceNews
	Limit  int
	// IncludeHosts and ExcludeHosts restrict results by host (subdomains
	// count).
	IncludeHosts, ExcludeHosts []string
	// Categories keeps pages of any of these categories; empty: all.
	Categories []string
	// After (exclusive) and Before (inclusive) bound the page's date: its
	// published date when it has one, else when it was fetched.
	After, Before time.Time
	SortByDate    bool
	// PublicOnly leaves out pages fetched from non-public addresses.
	PublicOnly bool
	// OwnDescriptions describes each hit by the page's own description
	// (or the start of its text) rather than by the passage around the
	// query's words (search's highlights: false).
	OwnDescriptions bool
}

// Hit is one result.
type Hit struct {
	URL, Title string
	// Description is a snippet of the page around the query's words, or the
	// page's own description when no word is in its text (or the request
	// asks for OwnDescriptions).
	Description string
	// Category is the first of the request's categories the page is in.
	Category           string
	Fetched, Published time.Time
	// ImageURL, ImageWidth and ImageHeight: the image of an image result.
	ImageURL                string
	ImageWidth, ImageHeight int
}

// bm25B is BM25's length normalisation. Bleve's default (0.75, from
// Elasticsearch) lets a short page that names a word once outrank the long
// page that explains it; on the python3.11-doc table, 0.15 raised MRR@10
// from 0.51 to 0.61. Bleve keeps it in a package variable: Trawler's index
// is the only bleve index of the process.
const bm25B = 0.15

func init() { search.BM25_b = bm25B }

// Search runs r and returns at most r.Limit hits, best first.
func (ix *Index) Search(ctx context.Context, r Request) ([]Hit, error) {
	q, pairs, err := ix.build(ctx, r)
	if err != nil {
		return nil, err
	}
	size := r.Limit
	if r.Source == SourceImages {
		// The same image (a logo) is on many pages: ask for more, keep each
		// image once.
		size = r.Limit * 4
	}
	sortBy := []string{"-_score", "-" + fFetched} // recent documents win ties
	switch {
	case r.Source == SourceNews:
		sortBy = []string{"-" + fPublished, "-_score"}
	case r.SortByDate:
		sortBy = []string{"-" + fDate, "-_score"}
	}
	if len(pairs) > 0 && sortBy[0] == "-_score" {
		if q, err = ix.rerank(ctx, q, pairs, max(size, rerankDepth)); err != nil {
			return nil, err
		}
	}
	req := bleve.NewSearchRequestOptions(q, size, 0, false)
	req.Fields = []string{fURL, fTitle, fDescription, fBody, fCategory, fFetched, fPublished, fImageURL, fAlt,
		fWidth, fHeight}
	req.SortBy(sortBy)
	res, err := ix.b.SearchInContext(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("searching the index: %w", err)
	}
	needles := r.needles()
	hits := make([]Hit, 0, len(res.Hits))
	for _, m := range res.Hits {
		hits = append(hits, hitOf(m, r.Categories, needles))
	}
	return keepHits(r, hits), nil
}

// keepHits returns the first r.Limit of hits, best first, each image once.
func keepHits(r Request, hits []Hit) []Hit {
	var out []Hit
	seen := map[string]bool{}
	for _, h := range hits {
		if r.Source == SourceImages {
			if seen[h.ImageURL] {
				continue
			}
			seen[h.ImageURL] = true
		}
		out = append(out, h)
		if len(out) == r.Limit {
			break
		}
	}
	return out
}

// rerankDepth is how many of the best pages by their words alone the
// pairs of words may reorder: a pair lifts a page among those that answer
// the query, not one that only shares two of its words.
const rerankDepth = 50

// rerank returns q limited to its depth best documents, with the pairs
// adding to their scores.
func (ix *Index) rerank(ctx context.Context, q query.Query, pairs []query.Query, depth int) (query.Query, error) {
	res, err := ix.b.SearchInContext(ctx, bleve.NewSearchRequestOptions(q, depth, 0, false))
	if err != nil {
		return nil, fmt.Errorf("searching the index: %w", err)
	}
	ids := make([]string, 0, len(res.Hits))
	for _, m := range res.Hits {
		ids = append(ids, m.ID)
	}
	only := func() query.Query {
		d := bleve.NewDocIDQuery(ids)
		d.SetBoost(0.0001)
		return d
	}
	b := bleve.NewBooleanQuery()
	b.AddMust(only(), q)
	for _, p := range pairs {
		b.AddShould(bleve.NewConjunctionQuery(only(), p))
	}
	return b, nil
}

// build turns r into a bleve query: the text query scores, everything else
// filters.
func (ix *Index) build(ctx context.Context, r Request) (query.Query, []query.Query, error) {
	kind := kindPage
	if r.Source == SourceImages {
		kind = kindImage
	}
	q := r.Query
	filters := []query.Query{term(fTeam, r.Team), term(fKind, kind)}
	var must, mustNot []query.Query

	text, pairs := textQuery(q.Terms, kind)
	if text != nil {
		must = append(must, text)
	}
	for _, t := range q.Not {
		mustNot = append(mustNot, textMatch(t, []string{fTitle, fDescription, fBody, fAlt}))
	}
	filters = appendAny(filters, fHost, lower(q.Sites))
	filters = appendAny(filters, fHost, lower(r.IncludeHosts))
	mustNot = appendEach(mustNot, fHost, lower(q.NotSites))
	mustNot = appendEach(mustNot, fHost, lower(r.ExcludeHosts))
	filters = appendAny(filters, fExt, lower(q.FileTypes))
	mustNot = appendEach(mustNot, fExt, lower(q.NotFileTypes))
	filters = appendAny(filters, fCategory, r.Categories)
	for _, w := range q.InURL {
		must = append(must, fieldMatch(fURLWords, w, boostURL, true))
	}
	for _, w := range q.NotInURL {
		mustNot = append(mustNot, fieldMatch(fURLWords, w, 1, true))
	}
	for _, w := range q.InTitle {
		must = append(must, phrase(fTitle, w, boostTitle))
	}
	for _, w := range q.NotInTitle {
		mustNot = append(mustNot, phrase(fTitle, w, 1))
	}
	if len(q.Related) > 0 {
		rel, err := ix.related(ctx, r.Team, lower(q.Related))
		if err != nil {
			return nil, nil, err
		}
		filters = append(filters, rel)
		mustNot = appendEach(mustNot, fHost, lower(q.Related))
	}
	if kind == kindImage {
		filters = appendSize(filters, q.ImageSize, true)
		filters = appendSize(filters, q.Larger, false)
	}
	if r.Source == SourceNews {
		filters = append(filters, dateRange(fPublished, time.Time{}, time.Time{}))
	}
	if !r.After.IsZero() || !r.Before.IsZero() {
		filters = append(filters, dateRange(fDate, r.After, r.Before))
	}
	if r.PublicOnly {
		f := bleve.NewBoolFieldQuery(true)
		f.SetField(fPrivate)
		mustNot = append(mustNot, f)
	}
	if len(must) == 0 {
		must = append(must, bleve.NewMatchAllQuery())
	}
	b := bleve.NewBooleanQuery()
	b.AddMust(must...)
	b.AddMustNot(mustNot...)
	b.AddFilter(bleve.NewConjunctionQuery(filters...))
	return b, pairs, nil
}

// textQuery scores the query's words: each field matched on its own with
// its boost (BM25 sums the words), any word in any field qualifies. A
// quoted phrase must be in the page as written. It also returns the pairs
// of the query's words, which Search lets reorder the best pages.
func textQuery(terms []Term, kind string) (query.Query, []query.Query) {
	fields := map[string]float64{fTitle: boostTitle, fURLWords: boostURL, fDescription: boostDescription,
		fBody: boostBody}
	if kind == kindImage {
		fields = map[string]float64{fAlt: boostAlt, fTitle: boostTitle / 2, fURLWords: 1, fDescription: 1}
	}
	var words []string
	var must []query.Query
	for _, t := range terms {
		if t.Phrase {
			must = append(must, textMatch(t, keys(fields)))
		}
		words = append(words, t.Text)
	}
	if len(words) == 0 {
		return nil, nil
	}
	analyzed := analyzeList(strings.Join(words, " "))
	// Each term once: a word the query repeats, or two words of one stem,
	// count once.
	stems := slices.Compact(slices.Sorted(slices.Values(analyzed)))
	var per []query.Query
	for _, f := range keys(fields) {
		for _, st := range stems {
			t := bleve.NewTermQuery(st)
			t.SetField(f)
			t.SetBoost(fields[f])
			per = append(per, t)
		}
	}
	if len(per) == 0 {
		return nil, nil
	}
	matched := bleve.NewDisjunctionQuery(per...)
	var pairs []query.Query
	// Words that stand together in the query and in the page say more than
	// the same words apart.
	if kind == kindPage {
		for i := 0; i+1 < len(analyzed); i++ {
			for _, f := range []string{fBodyPairs, fTitlePairs} {
				pair := bleve.NewTermQuery(analyzed[i] + " " + analyzed[i+1])
				pair.SetField(f)
				pair.SetBoost(boostPair)
				pairs = append(pairs, pair)
			}
		}
	}
	if len(must) == 0 {
		return matched, pairs
	}
	return bleve.NewConjunctionQuery(append(must, matched)...), pairs
}

// textMatch matches a word or a phrase in any of fields.
func textMatch(t Term, fields []string) query.Query {
	var qs []query.Query
	for _, f := range fields {
		if t.Phrase {
			qs = append(qs, phrase(f, t.Text, 1))
		} else {
			qs = append(qs, fieldMatch(f, t.Text, 1, true))
		}
	}
	return bleve.NewDisjunctionQuery(qs...)
}

func fieldMatch(field, text string, boost float64, all bool) query.Query {
	m := bleve.NewMatchQuery(text)
	m.SetField(field)
	m.SetBoost(boost)
	if all {
		m.SetOperator(query.MatchQueryOperatorAnd)
	}
	return m
}

func phrase(field, text string, boost float64) query.Query {
	if field == fBody {
		return bodyPhrase(text, boost)
	}
	m := bleve.NewMatchPhraseQuery(text)
	m.SetField(field)
	m.SetBoost(boost)
	return m
}

// bodyPhrase matches a phrase in the body through its pairs of words, all
// present: the body keeps no positions (they would double its share of the
// index), and a phrase's pairs, stop-word gaps included, are as good as
// its positions but for a pair repeated apart. A one-word phrase is the
// word.
func bodyPhrase(text string, boost float64) query.Query {
	pairs := pairTerms(text)
	if len(pairs) == 0 {
		return fieldMatch(fBody, text, boost, true)
	}
	var qs []query.Query
	for _, p := range pairs {
		t := bleve.NewTermQuery(p)
		t.SetField(fBodyPairs)
		t.SetBoost(boost)
		qs = append(qs, t)
	}
	return bleve.NewConjunctionQuery(qs...)
}

func term(field, value string) query.Query {
	t := bleve.NewTermQuery(value)
	t.SetField(field)
	return t
}

// appendAny appends a filter that one of values must match, if any.
func appendAny(qs []query.Query, field string, values []string) []query.Query {
	if len(values) == 0 {
		return qs
	}
	var any []query.Query
	for _, v := range values {
		any = append(any, term(field, v))
	}
	return append(qs, bleve.NewDisjunctionQuery(any...))
}

// appendEach appends one query per value.
func appendEach(qs []query.Query, field string, values []string) []query.Query {
	for _, v := range values {
		qs = append(qs, term(field, v))
	}
	return qs
}

// appendSize filters images by size: exactly s, or at least s.
func appendSize(qs []query.Query, s *Size, exact bool) []query.Query {
	if s == nil {
		return qs
	}
	for _, d := range []struct {
		field string
		v     int
	}{{fWidth, s.Width}, {fHeight, s.Height}} {
		v := float64(d.v)
		in := true
		var max *float64
		if exact {
			max = &v
		}
		qs = append(qs, numRange(d.field, &v, max, &in))
	}
	return qs
}

func numRange(field string, lo, hi *float64, inclusive *bool) query.Query {
	q := bleve.NewNumericRangeInclusiveQuery(lo, hi, inclusive, inclusive)
	q.SetField(field)
	return q
}

// Bleve's dates are nanoseconds since 1970 in an int64: these are the
// bounds it takes.
var (
	earliestDate = time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC)
	latestDate   = time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)
)

// dateRange matches documents whose field lies in (after, before]; zero
// bounds are open, and a document without the field never matches.
func dateRange(field string, after, before time.Time) query.Query {
	if after.Before(earliestDate) {
		after = earliestDate
	}
	if before.IsZero() || before.After(latestDate) {
		before = latestDate
	}
	no, yes := false, true
	q := bleve.NewDateRangeInclusiveQuery(after, before, &no, &yes)
	q.SetField(field)
	return q
}

// related selects the pages that link to a domain and the pages of the
// hosts its pages link to.
func (ix *Index) related(ctx context.Context, team string, domains []string) (query.Query, error) {
	var any []query.Query
	for _, d := range domains {
		any = append(any, term(fLinkHosts, d))
	}
	src := bleve.NewConjunctionQuery(term(fTeam, team), term(fKind, kindPage))
	var hosts []query.Query
	for _, d := range domains {
		hosts = append(hosts, term(fHost, d))
	}
	src.AddQuery(bleve.NewDisjunctionQuery(hosts...))
	req := bleve.NewSearchRequestOptions(src, 0, 0, false)
	req.AddFacet("out", bleve.NewFacetRequest(fLinkHosts, 100))
	res, err := ix.b.SearchInContext(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("searching the index: %w", err)
	}
	if f := res.Facets["out"]; f != nil && f.Terms != nil {
		for _, t := range f.Terms.Terms() {
			any = append(any, term(fHost, t.Term))
		}
	}
	return bleve.NewDisjunctionQuery(any...), nil
}

// hitOf reads a hit's stored fields.
func hitOf(m *search.DocumentMatch, categories []string, needles []string) Hit {
	str := func(f string) string { s, _ := m.Fields[f].(string); return s }
	num := func(f string) int { v, _ := m.Fields[f].(float64); return int(v) }
	when := func(f string) time.Time { t, _ := time.Parse(time.RFC3339, str(f)); return t }
	h := Hit{URL: str(fURL), Title: str(fTitle), Fetched: when(fFetched), Published: when(fPublished),
		ImageURL: str(fImageURL), ImageWidth: num(fWidth), ImageHeight: num(fHeight)}
	h.describe(str(fAlt), str(fDescription), str(fBody), needles)
	var have []string
	switch c := m.Fields[fCategory].(type) {
	case string:
		have = []string{c}
	case []any:
		for _, v := range c {
			if s, ok := v.(string); ok {
				have = append(have, s)
			}
		}
	}
	h.Category = firstOf(categories, have)
	return h
}

// needles are what a hit's description is cut around: none when r wants
// the pages' own descriptions.
func (r Request) needles() []string {
	if r.OwnDescriptions {
		return nil
	}
	return snippetNeedles(r.Query.Words())
}

// describe sets an image hit's title to its alt text, when it has one,
// and a hit's description to a snippet of body around needles, else to
// the page's description or the start of its text.
func (h *Hit) describe(alt, description, body string, needles []string) {
	if h.ImageURL != "" {
		h.Title = firstNonEmpty(alt, h.Title)
	}
	h.Description = snippet(body, needles)
	if h.Description == "" {
		h.Description = firstNonEmpty(description, lead(body))
	}
}

// firstOf returns the first of wanted that have holds, or "".
func firstOf(wanted, have []string) string {
	for _, c := range wanted {
		if slices.Contains(have, c) {
			return c
		}
	}
	return ""
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func keys(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func lower(ss []string) []string {
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		out = append(out, strings.TrimSuffix(strings.ToLower(s), "."))
	}
	return out
}
