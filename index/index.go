// Package index is Trawler's embedded search index: every page a team's
// requests fetched and cached, searchable offline with the query operators
// of POST /v2/search. It is a bleve index on disk (BM25 scoring) that
// follows the store's cache through its index log (Syncer), so the store
// stays the one source of truth: an index that is lost or behind is
// rebuilt or caught up from it.
//
// One index holds every team's documents, each carrying its team; every
// search is filtered by team before it is scored.
package index

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
	"github.com/blevesearch/bleve/v2/analysis/token/shingle"
	unicodetok "github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/mapping"
	bindex "github.com/blevesearch/bleve_index_api"
	bolt "go.etcd.io/bbolt"
)

// Doc is one fetched page as the index takes it.
type Doc struct {
	Team        string
	URL         string // the final URL: one document per team and URL
	Title       string
	Description string
	Markdown    string // main content
	ContentType string
	Language    string
	Fetched     time.Time
	Published   time.Time // zero when the page does not say
	Images      []Image
	// LinkHosts are the hosts the page links to (for related:).
	LinkHosts []string
	// Private: fetched from a non-public address; hidden while the network
	// guard is on.
	Private bool
	// seq is the index log row the document was made for (0 when none: a
	// rebuild's); the index in PostgreSQL keeps each page's newest.
	seq int64
}

// Image is one image of a page.
type Image struct {
	URL, Alt      string
	Width, Height int
}

// maxImages bounds the images indexed per page.
const maxImages = 50

// maxBody bounds the Markdown indexed per page, in bytes.
const maxBody = 512 << 10

// The document kinds of the index: a page, or one image of a page.
const (
	kindPage  = "page"
	kindImage = "image"
)

// Field names of the index.
const (
	fTeam        = "team"
	fKind        = "kind"
	fURL         = "url"
	fHost        = "host"
	fURLWords    = "urlwords"
	fTitle       = "title"
	fDescription = "description"
	fBody        = "body"
	fBodyPairs   = "bodypairs"  // the body's words two by two
	fTitlePairs  = "titlepairs" // the title's words two by two
	fExt         = "ext"
	fType        = "contenttype"
	fLanguage    = "language"
	fCategory    = "category"
	fFetched     = "fetched"
	fPublished   = "published"
	fDate        = "date" // published when known, else fetched: what tbs filters
	fPrivate     = "private"
	fLinkHosts   = "linkhosts"
	fImages      = "images" // on a page: how many image documents it has
	fImageURL    = "imageurl"
	fAlt         = "alt"
	fWidth       = "width"
	fHeight      = "height"
)

// pairsAnalyzer names the analyzer of the pairs fields.
const pairsAnalyzer = "trawler_en_pairs"

// markerKey is the internal key under which the index keeps the last index
// log row it applied (8 bytes, big endian).
var markerKey = []byte("trawler.log.seq")

// Index is the on-disk index.
type Index struct {
	b   bleve.Index
	dir string
	mu  sync.Mutex // serialises writers
}

// Open opens the index in dir, creating it when missing. An index that
// cannot be opened (damaged, or of an older layout) is moved aside and
// created anew: the syncer rebuilds it from the store.
func Open(dir string) (*Index, error) {
	b, err := bleve.OpenUsing(dir, map[string]any{"bolt_timeout": "2s"})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("opening the search index %s: another Trawler process holds it (is a server running on this data directory?)", dir)
	}
	if errors.Is(err, bleve.ErrorIndexPathDoesNotExist) {
		b, err = bleve.New(dir, newMapping())
	} else if err != nil {
		aside := dir + ".damaged-" + time.Now().UTC().Format("20060102T150405")
		if rerr := os.Rename(dir, aside); rerr != nil {
			return nil, fmt.Errorf("opening the search index %s: %w (and moving it aside: %v)", dir, err, rerr)
		}
		b, err = bleve.New(dir, newMapping())
	}
	if err != nil {
		return nil, fmt.Errorf("opening the search index %s: %w", dir, err)
	}
	return &Index{b: b, dir: dir}, nil
}

// Close closes the index.
func (ix *Index) Close() error { return ix.b.Close() }

// Count returns how many documents (pages and images) the index holds.
func (ix *Index) Count() (uint64, error) { return ix.b.DocCount() }

// marker returns the last log row applied.
func (ix *Index) marker() (int64, error) {
	v, err := ix.b.GetInternal(markerKey)
	if err != nil || len(v) != 8 {
		return 0, err
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

func newMapping() mapping.IndexMapping {
	text := func(store bool) *mapping.FieldMapping {
		f := bleve.NewTextFieldMapping()
		f.Analyzer = en.AnalyzerName
		f.Store = store
		// Positions: phrases match on them (the body's through its pairs
		// instead, see bodyPhrase).
		f.IncludeTermVectors = true
		f.IncludeInAll = false
		f.DocValues = false
		return f
	}
	keyword := func(store bool) *mapping.FieldMapping {
		f := bleve.NewKeywordFieldMapping()
		f.Store = store
		f.IncludeTermVectors = false
		f.IncludeInAll = false
		return f
	}
	number := func() *mapping.FieldMapping {
		f := bleve.NewNumericFieldMapping()
		f.IncludeInAll = false
		return f
	}
	date := func() *mapping.FieldMapping {
		f := bleve.NewDateTimeFieldMapping()
		f.IncludeInAll = false
		return f
	}
	body := func() *mapping.FieldMapping {
		f := text(true)
		f.IncludeTermVectors = false
		return f
	}
	pairs := func() *mapping.FieldMapping {
		f := text(false)
		f.Analyzer = pairsAnalyzer
		f.IncludeTermVectors = false
		return f
	}
	dm := bleve.NewDocumentStaticMapping()
	for name, f := range map[string]*mapping.FieldMapping{
		fTeam: keyword(false), fKind: keyword(false), fURL: keyword(true), fHost: keyword(false),
		fURLWords: text(false), fTitle: text(true), fDescription: text(true), fBody: body(),
		fExt: keyword(false), fType: keyword(true), fLanguage: keyword(false), fCategory: keyword(true),
		fFetched: date(), fPublished: date(), fDate: date(), fPrivate: bleve.NewBooleanFieldMapping(),
		fBodyPairs: pairs(), fTitlePairs: pairs(), fLinkHosts: keyword(false), fImages: number(), fImageURL: keyword(true), fAlt: text(true),
		fWidth: number(), fHeight: number(),
	} {
		dm.AddFieldMappingsAt(name, f)
	}
	im := bleve.NewIndexMapping()
	// The pairs analyzer is the English one with two-word shingles after
	// it: a pair of the query's words is then one term to look up, where a
	// phrase query would read the positions of every page with both words.
	err := im.AddCustomTokenFilter("trawler_pairs", map[string]any{"type": shingle.Name, "min": 2.0, "max": 2.0,
		"output_original": false, "separator": " "})
	if err == nil {
		err = im.AddCustomAnalyzer(pairsAnalyzer, map[string]any{"type": custom.Name, "tokenizer": unicodetok.Name,
			"token_filters": []any{en.PossessiveName, lowercase.Name, en.StopName, porter.Name, "trawler_pairs"}})
	}
	if err != nil {
		panic("the search index's pairs analyzer: " + err.Error())
	}
	im.DefaultMapping = dm
	im.DefaultAnalyzer = en.AnalyzerName
	im.ScoringModel = "bm25"
	im.StoreDynamic = false
	im.IndexDynamic = false
	return im
}

// docID is the identity of a team's page: fetched again, it replaces its
// entry.
func docID(team, u string) string { return team + "\x00" + u }

func imageID(page string, n int) string { return fmt.Sprintf("%s\x00img%d", page, n) }

// fields is a page as bleve indexes it.
func (d *Doc) fields() map[string]any {
	u, _ := url.Parse(d.URL)
	host := ""
	if u != nil {
		host = strings.ToLower(u.Hostname())
	}
	body := d.Markdown
	if len(body) > maxBody {
		body = body[:maxBody]
	}
	// The text is indexed, not its markup: link targets and escapes would
	// be words of the page.
	body = plainText(body)
	date := d.Fetched
	if !d.Published.IsZero() {
		date = d.Published
	}
	f := map[string]any{
		fTeam: d.Team, fKind: kindPage, fURL: d.URL, fHost: hostSuffixes(host), fURLWords: urlWords(u),
		fTitle: d.Title, fDescription: d.Description, fBody: body, fBodyPairs: body, fTitlePairs: d.Title, fExt: extensions(u, d.ContentType),
		fType: d.ContentType, fLanguage: strings.ToLower(d.Language), fCategory: categories(u, d.ContentType),
		fFetched: d.Fetched, fDate: date, fPrivate: d.Private, fLinkHosts: linkHosts(d.LinkHosts),
		fImages: float64(min(len(d.Images), maxImages)),
	}
	if !d.Published.IsZero() {
		f[fPublished] = d.Published
	}
	return f
}

// imageFields is image n of the page as bleve indexes it.
func (d *Doc) imageFields(img Image) map[string]any {
	u, _ := url.Parse(d.URL)
	host := ""
	if u != nil {
		host = strings.ToLower(u.Hostname())
	}
	return map[string]any{
		fTeam: d.Team, fKind: kindImage, fURL: d.URL, fHost: hostSuffixes(host), fURLWords: urlWords(u),
		fTitle: d.Title, fDescription: d.Description, fImageURL: img.URL, fAlt: img.Alt,
		fWidth: float64(img.Width), fHeight: float64(img.Height), fFetched: d.Fetched, fDate: d.Fetched,
		fPrivate: d.Private,
	}
}

// hostSuffixes returns host and each of its parent domains, so that
// site:python.org matches docs.python.org.
func hostSuffixes(host string) []string {
	host = strings.TrimSuffix(host, ".")
	if host == "" {
		return nil
	}
	out := []string{host}
	for i := 0; i < len(host); i++ {
		if host[i] == '.' {
			out = append(out, host[i+1:])
		}
	}
	return out
}

// linkHosts are the hosts a page links to with their parent domains, but
// not top-level domains alone: a page linking to docs.python.org links to
// python.org, not to all of org (a one-label host, localhost, is kept).
func linkHosts(hosts []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, h := range hosts {
		for i, s := range hostSuffixes(strings.ToLower(h)) {
			if (i == 0 || strings.Contains(s, ".")) && !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// urlWords is the text of a URL that inurl: and the URL boost match: its
// host labels, path segments and query values, split at punctuation.
func urlWords(u *url.URL) string {
	if u == nil {
		return ""
	}
	s := u.Hostname() + " " + u.Path + " " + u.RawQuery
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}), " ")
}

// extensions are what filetype: matches: the URL's extension and the one
// the content type implies (a PDF served from /download is a pdf).
func extensions(u *url.URL, contentType string) []string {
	var out []string
	if u != nil {
		if ext := strings.TrimPrefix(strings.ToLower(path.Ext(u.Path)), "."); ext != "" && len(ext) <= 10 {
			out = append(out, ext)
		}
	}
	mt, _, _ := strings.Cut(strings.ToLower(contentType), ";")
	if ext, ok := typeExtensions[strings.TrimSpace(mt)]; ok {
		out = append(out, ext...)
	}
	return out
}

var typeExtensions = map[string][]string{
	"text/html":             {"html", "htm"},
	"application/xhtml+xml": {"html", "xhtml"},
	"application/pdf":       {"pdf"},
	"text/plain":            {"txt"},
	"application/vnd.openxmlformats-officedocument.wordprocessingml.document": {"docx"},
	"application/msword": {"doc"},
	"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": {"xlsx"},
	"application/vnd.ms-excel":                {"xls"},
	"application/vnd.oasis.opendocument.text": {"odt"},
	"application/rtf":                         {"rtf"},
	"text/rtf":                                {"rtf"},
}

// Put indexes docs (replacing each one's earlier entry) and records seq as
// the last log row applied, in one batch: a crash loses both or neither.
func (ix *Index) Put(docs []Doc, gone [][2]string, seq int64) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	batch := ix.b.NewBatch()
	for _, g := range gone {
		if err := ix.deleteInto(batch, docID(g[0], g[1])); err != nil {
			return err
		}
	}
	for i := range docs {
		d := &docs[i]
		id := docID(d.Team, d.URL)
		if err := ix.deleteInto(batch, id); err != nil {
			return err
		}
		if err := batch.Index(id, d.fields()); err != nil {
			return fmt.Errorf("indexing %s: %w", d.URL, err)
		}
		for n, img := range d.Images {
			if n == maxImages {
				break
			}
			if err := batch.Index(imageID(id, n), d.imageFields(img)); err != nil {
				return fmt.Errorf("indexing %s: %w", img.URL, err)
			}
		}
	}
	if seq > 0 {
		v := make([]byte, 8)
		binary.BigEndian.PutUint64(v, uint64(seq))
		batch.SetInternal(markerKey, v)
	}
	if err := ix.b.Batch(batch); err != nil {
		return fmt.Errorf("writing the search index: %w", err)
	}
	return nil
}

// deleteInto deletes the page id and its image documents in batch.
func (ix *Index) deleteInto(batch *bleve.Batch, id string) error {
	batch.Delete(id)
	doc, err := ix.b.Document(id)
	if err != nil || doc == nil {
		return err
	}
	n := 0
	doc.VisitFields(func(f bindex.Field) {
		if f.Name() == fImages {
			if nf, ok := f.(bindex.NumericField); ok {
				if v, err := nf.Number(); err == nil {
					n = int(v)
				}
			}
		}
	})
	for i := 0; i < n; i++ {
		batch.Delete(imageID(id, i))
	}
	return nil
}
