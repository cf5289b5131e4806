// Package docsearch finds the parts of Trawler's own documentation that
// answer a question (POST /v2/support/docs-search). It cuts the Markdown
// files into sections by heading (long ones into pieces of about 1,500
// characters), indexes them once, at start, in an in-memory bleve index
// (BM25, the English analyzer, the heading path weighing more than the
// text), and ranks sections by every analysed word of a question, with a
// small glossary of the documentation's words for what users call
// otherwise (glossary.go). It also holds what an answer is made of: the
// prompt that gives a language model the sections to answer from, and,
// without a model, the sentences of the best section that hold the
// question's words.
//
// Bleve keeps BM25's length normalisation (search.BM25_b) in a package
// variable, which package index sets to 0.15 for the whole process, so
// that is what the service ranks with; the test and make bench measure
// with it, and the test logs the figures with bleve's default (0.75) too,
// which ranks a little worse here.
package docsearch

import (
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
)

// fText is the one text field of the index: a piece's heading path, its
// text and the words of its identifiers.
const fText = "text"

// headingWeight is how many times a piece's heading path is indexed with
// its text. A heading names what its section is about, where the text also
// names what it refers to; repeating the headings in the one field
// (BM25F's way of weighting a field) gives their words more weight while
// they share the text's document frequencies. A heading field of its own
// would not: nearly every word is rare among headings, so a question word
// that happens to be in one heading ("run" in "Run it") would outweigh
// sections holding every other word of the question.
const headingWeight = 2

// otherPieces weighs, in a section's score, its pieces other than the
// best one. A section is found by its best piece; what its other pieces
// say on the question is evidence too (a section whose every piece speaks
// of lockdown is about lockdown), but less, so that a long section does
// not win by length alone. On the test's questions, ranking sections by
// their best piece alone put an answering one first far less often than
// adding half of the other pieces does.
const otherPieces = 0.5

// introduction weighs the score of a document's introduction (the text
// under its title, before its first section). An introduction surveys
// what the sections below explain (the README's names every feature in a
// clause), so it shares words with most questions while it answers few:
// found first for "how do I attach puppeteer to a session", it says only
// that Puppeteer attaches. Weighed in full, it cost the test's table a few
// of its questions.
const introduction = 0.5

// Index is the searchable documentation. It is safe for concurrent use.
type Index struct {
	b        bleve.Index
	analyzer analysis.Analyzer
	sections []Section
	// terms holds each piece's analysed words: to tell which of a
	// question's words a hit holds, and how many pieces hold a word.
	terms []map[string]bool
	// BuildTime is how long New took: reading, cutting and indexing.
	BuildTime time.Duration
}

// Hit is a section that matched a question: the best of its pieces.
type Hit struct {
	Section
	Score float64
	// Matched are the question's words found in the piece, as the question
	// wrote them, in its order, and the glossary's words for them.
	Matched []string
}

// New indexes every Markdown file (*.md) of fsys; their paths in fsys are
// the paths of the sections.
func New(fsys fs.FS) (*Index, error) {
	start := time.Now()
	var sections []Section
	err := fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".md") {
			return err
		}
		raw, err := fs.ReadFile(fsys, path)
		if err != nil {
			return err
		}
		sections = append(sections, split(path, string(raw))...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the documentation: %w", err)
	}
	if len(sections) == 0 {
		return nil, fmt.Errorf("the documentation has no Markdown sections")
	}
	// scorch without a path keeps the index in memory; bleve.NewMemOnly's
	// upside-down index keeps no field lengths, and so scores TF-IDF
	// whatever the mapping asks.
	b, err := bleve.NewUsing("", newMapping(), scorch.Name, scorch.Name, nil)
	if err != nil {
		return nil, fmt.Errorf("creating the documentation index: %w", err)
	}
	ix := &Index{b: b, sections: sections, terms: make([]map[string]bool, len(sections))}
	if ix.analyzer = b.Mapping().AnalyzerNamed(en.AnalyzerName); ix.analyzer == nil {
		b.Close()
		return nil, fmt.Errorf("the English analyzer is not registered")
	}
	batch := b.NewBatch()
	for i, s := range sections {
		text := strings.Repeat(strings.Join(s.Headings, "\n")+"\n", headingWeight) + s.Text + "\n" + identifierWords(s.Text)
		if err := batch.Index(strconv.Itoa(i), map[string]any{fText: text}); err != nil {
			b.Close()
			return nil, fmt.Errorf("indexing %s: %w", s.Ref(), err)
		}
		ix.terms[i] = map[string]bool{}
		for _, w := range ix.words(text) {
			ix.terms[i][w.term] = true
		}
	}
	if err := b.Batch(batch); err != nil {
		b.Close()
		return nil, fmt.Errorf("indexing the documentation: %w", err)
	}
	ix.BuildTime = time.Since(start)
	return ix, nil
}

func newMapping() mapping.IndexMapping {
	f := bleve.NewTextFieldMapping()
	f.Analyzer = en.AnalyzerName
	f.Store = false
	f.IncludeTermVectors = false
	f.IncludeInAll = false
	f.DocValues = false
	dm := bleve.NewDocumentStaticMapping()
	dm.AddFieldMappingsAt(fText, f)
	im := bleve.NewIndexMapping()
	im.DefaultMapping = dm
	im.DefaultAnalyzer = en.AnalyzerName
	im.ScoringModel = "bm25"
	im.StoreDynamic = false
	im.IndexDynamic = false
	return im
}

// Sections returns every piece of every section, in document order.
func (ix *Index) Sections() []Section { return slices.Clone(ix.sections) }

// Close releases the index.
func (ix *Index) Close() error { return ix.b.Close() }

// word is one analysed word of a text: its term and the text it came from.
type word struct{ term, surface string }

// words analyses text as the index does (English: lower case, stop words
// out, Porter stems), each term once, in the text's order.
func (ix *Index) words(text string) []word {
	var out []word
	seen := map[string]bool{}
	for _, t := range ix.analyzer.Analyze([]byte(text)) {
		term := string(t.Term)
		if seen[term] {
			continue
		}
		seen[term] = true
		out = append(out, word{term: term, surface: text[t.Start:t.End]})
	}
	return out
}

// questionWords are the words of a question to search for: its analysed
// words and those of its identifiers, without the word after "how" that
// asks for a quantity (see quantities).
func (ix *Index) questionWords(question string) []word {
	fields := strings.Fields(question)
	kept := fields[:0:0]
	for i, f := range fields {
		if i > 0 && strings.EqualFold(fields[i-1], "how") && quantities[strings.ToLower(strings.Trim(f, "?!.,;:"))] {
			continue
		}
		kept = append(kept, f)
	}
	q := strings.Join(kept, " ")
	return ix.words(q + "\n" + identifierWords(q))
}

// quantities are the words that, after "how", ask for an amount: "how
// long can a session stay idle" asks for a number of seconds, which the
// answer gives without the word "long"; searched for, such a word finds
// the sections that happen to use it.
var quantities = map[string]bool{
	"much": true, "many": true, "long": true, "big": true, "large": true, "small": true,
	"often": true, "far": true, "fast": true, "old": true, "soon": true,
}

// Search returns the k sections that best answer question, best first.
// Every analysed word of the question counts: the query is a disjunction
// of one term query per word (or per word and its glossary alternatives),
// so a piece that holds more of the words scores higher (bleve multiplies
// a disjunction's score by the share of its clauses that matched). A
// section scores its best piece plus half of its other pieces
// (otherPieces) and comes back as its best piece. A question of stop
// words only finds nothing.
func (ix *Index) Search(question string, k int) ([]Hit, error) {
	words := ix.questionWords(question)
	if len(words) == 0 || k <= 0 {
		return nil, nil
	}
	expand := ix.expansions(question)
	clauses := make([]query.Query, len(words))
	for i, w := range words {
		alts := []query.Query{ix.termQuery(w.term)}
		for _, e := range expand[w.term] {
			alts = append(alts, ix.termQuery(e.term))
		}
		clauses[i] = alts[0]
		if len(alts) > 1 {
			clauses[i] = bleve.NewDisjunctionQuery(alts...)
		}
	}
	req := bleve.NewSearchRequestOptions(bleve.NewDisjunctionQuery(clauses...), len(ix.sections), 0, false)
	res, err := ix.b.Search(req)
	if err != nil {
		return nil, fmt.Errorf("searching the documentation: %w", err)
	}
	type section struct {
		best           int
		bestScore, sum float64
	}
	bySection := map[string]*section{}
	for _, m := range res.Hits {
		i, err := strconv.Atoi(m.ID)
		if err != nil || i < 0 || i >= len(ix.sections) {
			continue
		}
		ref := ix.sections[i].Ref()
		s := bySection[ref]
		if s == nil {
			s = &section{best: i}
			bySection[ref] = s
		}
		score := m.Score
		if len(ix.sections[i].Headings) == 0 {
			score *= introduction
		}
		s.sum += score
		if score > s.bestScore {
			s.best, s.bestScore = i, score
		}
	}
	hits := make([]Hit, 0, len(bySection))
	for _, s := range bySection {
		h := Hit{Section: ix.sections[s.best], Score: s.bestScore + otherPieces*(s.sum-s.bestScore)}
		terms := ix.terms[s.best]
		for _, w := range words {
			if terms[w.term] {
				h.Matched = append(h.Matched, w.surface)
			}
			for _, e := range expand[w.term] {
				if terms[e.term] && !slices.Contains(h.Matched, e.surface) {
					h.Matched = append(h.Matched, e.surface)
				}
			}
		}
		hits = append(hits, h)
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Ref(), b.Ref()) // the same order every time
	})
	return hits[:min(k, len(hits))], nil
}

// termQuery looks for term in the pieces. Bleve's BM25 multiplies a
// term's score, which holds its IDF, by the query weight, which holds it
// again; a boost of 1/IDF makes the score BM25's own. With the IDF
// squared, a rare word that a question happens to use ("recent", "big")
// outweighs the words that say what it is about.
func (ix *Index) termQuery(term string) query.Query {
	t := bleve.NewTermQuery(term)
	t.SetField(fText)
	t.SetBoost(1 / ix.idf(term))
	return t
}

// idf is BM25's inverse document frequency of term over the pieces, as
// bleve computes it.
func (ix *Index) idf(term string) float64 {
	df := 0
	for _, ts := range ix.terms {
		if ts[term] {
			df++
		}
	}
	n := float64(len(ix.terms))
	return math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
}

// identifierWords returns the words inside the text's identifiers, so that
// a question in plain words finds the names the documentation uses:
// zeroDataRetention gives "zero Data Retention", TRAWLER_POOL_SIZE gives
// "TRAWLER POOL SIZE", scrape.Classify "scrape Classify".
func identifierWords(text string) string {
	var b strings.Builder
	for _, f := range strings.FieldsFunc(text, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '.'
	}) {
		parts := identifierParts(strings.Trim(f, "._"))
		if len(parts) > 1 {
			b.WriteString(strings.Join(parts, " "))
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// identifierParts cuts an identifier at '_', '.' and lower-to-upper case
// changes; a word that is not an identifier comes back alone.
func identifierParts(id string) []string {
	var parts []string
	for _, seg := range strings.FieldsFunc(id, func(r rune) bool { return r == '_' || r == '.' }) {
		rs := []rune(seg)
		start := 0
		for i := 1; i < len(rs); i++ {
			if unicode.IsUpper(rs[i]) && unicode.IsLower(rs[i-1]) {
				parts = append(parts, string(rs[start:i]))
				start = i
			}
		}
		parts = append(parts, string(rs[start:]))
	}
	return parts
}
