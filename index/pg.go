package index

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trawler-dev/trawler/store"
)

// PG is the search index in PostgreSQL, for services whose store is there
// (TRAWLER_DATABASE_URL): every node sharing the database searches one
// index, and each page is indexed once, by whichever node applies its log
// row first. Its tables are the store's (search_docs, search_state).
//
// A row holds what the bleve index's fields hold, and two tsvectors of the
// index's own English analysis (the analyzer bleve uses, so that both
// backends make the same terms of a text), each lexeme prefixed with its
// field's letter (A-D): terms, the words, and pairs, the pairs of words
// (phrases match through them), with each word's count per field in
// term_counts. GIN indexes find the candidates; the score is BM25 per
// field, with the
// same field boosts, the same coordination over the query's words and the
// same re-ranking of the best pages by the query's pairs of words as the
// bleve index, computed here from each candidate's term counts and the
// team's statistics (PostgreSQL's own ts_rank knows neither document
// frequencies nor field lengths). Written here: no served library ranks
// PostgreSQL full-text matches by BM25.
type PG struct {
	db *sql.DB
}

// OpenPG returns the index in db, a store's PostgreSQL database (migrated).
func OpenPG(db *sql.DB) *PG { return &PG{db: db} }

// Close releases nothing: the database is the store's.
func (p *PG) Close() error { return nil }

// Count returns how many documents (pages and images) the index holds.
func (p *PG) Count() (uint64, error) {
	var n uint64
	err := p.db.QueryRow(`SELECT count(*) FROM search_docs`).Scan(&n)
	return n, err
}

func (p *PG) marker() (int64, error) {
	var seq int64
	err := p.db.QueryRow(`SELECT applied FROM search_state WHERE id = 1`).Scan(&seq)
	return seq, err
}

// shared: several nodes apply the one log to this index.
func (p *PG) shared() bool { return true }

// lockApply takes a session advisory lock on a connection of its own,
// given back (unlocked) by unlock.
func (p *PG) lockApply(ctx context.Context) (func(), error) {
	conn, err := p.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the search index: %w", err)
	}
	const key = `SELECT pg_advisory_lock(hashtext('trawler.search.apply'))`
	if _, err := conn.ExecContext(ctx, key); err != nil {
		conn.Close()
		return nil, fmt.Errorf("reading the search index: %w", err)
	}
	return func() {
		// Unlocked whatever ctx became; a connection that cannot say so
		// is closed by the pool, which ends its session and its lock.
		if _, err := conn.ExecContext(context.Background(),
			`SELECT pg_advisory_unlock(hashtext('trawler.search.apply'))`); err != nil {
			conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		conn.Close()
	}, nil
}

func (p *PG) indexed(ctx context.Context, rows []store.IndexEntry) (map[int64]bool, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	var teams, urls []string
	var seqs []int64
	for _, r := range rows {
		teams, urls, seqs = append(teams, pgText(r.Team)), append(urls, pgText(r.FinalURL)), append(seqs, r.Seq)
	}
	q, err := p.db.QueryContext(ctx, `SELECT r.seq FROM unnest($1::text[], $2::text[], $3::bigint[]) AS r(team, url, seq)
		JOIN search_docs d ON d.team_id = r.team AND d.page_url = r.url AND d.kind = 'page' AND d.src_seq >= r.seq`,
		pgArray(teams), pgArray(urls), pgInts(seqs))
	if err != nil {
		return nil, fmt.Errorf("reading the search index: %w", err)
	}
	defer q.Close()
	out := map[int64]bool{}
	for q.Next() {
		var seq int64
		if err := q.Scan(&seq); err != nil {
			return nil, err
		}
		out[seq] = true
	}
	return out, q.Err()
}

// The weights of the text fields in terms and pairs, by kind of document.
// Boosts follow them, in the order A, B, C, D.
var (
	pageFields  = [4]string{fTitle, fURLWords, fDescription, fBody}
	pageBoosts  = [4]float64{boostTitle, boostURL, boostDescription, boostBody}
	imageFields = [4]string{fAlt, fTitle, fURLWords, fDescription}
	imageBoosts = [4]float64{boostAlt, boostTitle / 2, 1, 1}
	weights     = "ABCD"
)

// Put indexes docs and removes the pages of gone (team, URL), replacing
// each page's earlier entry and images, and records seq as the last log
// row applied, in one transaction. A seq another node applied already
// (the index's marker is at or past it) changes nothing.
func (p *PG) Put(docs []Doc, gone [][2]string, seq int64) error {
	ctx := context.Background()
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("writing the search index: %w", err)
	}
	defer tx.Rollback()
	if seq > 0 {
		var applied int64
		if err := tx.QueryRowContext(ctx, `SELECT applied FROM search_state WHERE id = 1 FOR UPDATE`).Scan(&applied); err != nil {
			return fmt.Errorf("writing the search index: %w", err)
		}
		if applied >= seq {
			return nil
		}
	}
	// A page's writers (this batch, another node's, a node writing the
	// page it just cached) take its lock, all of a batch's in one order;
	// the newest row's document stays.
	var pages []string
	for _, g := range gone {
		pages = append(pages, pgText(g[0])+" "+pgText(g[1]))
	}
	for _, d := range docs {
		pages = append(pages, pgText(d.Team)+" "+pgText(d.URL))
	}
	for _, k := range slices.Compact(slices.Sorted(slices.Values(pages))) {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext('trawler.search ' || $1))`, k); err != nil {
			return fmt.Errorf("writing the search index: %w", err)
		}
	}
	for _, g := range gone {
		team, url := pgText(g[0]), pgText(g[1])
		// Only what rows up to this batch's made: a page cached again
		// since (written by the node that cached it) stays.
		if _, err := tx.ExecContext(ctx, `DELETE FROM search_docs WHERE team_id = $1 AND page_url = $2
			AND ($3 = 0 OR src_seq <= $3)`, team, url, seq); err != nil {
			return fmt.Errorf("writing the search index: %w", err)
		}
	}
	for i := range docs {
		d := &docs[i]
		team, url := pgText(d.Team), pgText(d.URL)
		var have sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT src_seq FROM search_docs WHERE team_id = $1 AND page_url = $2 AND kind = 'page'`,
			team, url).Scan(&have)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("writing the search index: %w", err)
		}
		if have.Valid && (have.Int64 > d.seq || have.Int64 == d.seq && d.seq > 0) {
			continue // a newer document of the page, or this one, is there
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM search_docs WHERE team_id = $1 AND page_url = $2`, team, url); err != nil {
			return fmt.Errorf("writing the search index: %w", err)
		}
		id := docID(d.Team, d.URL)
		if err := insertRow(ctx, tx, d.Team, id, d.URL, kindPage, d.seq, d.fields(), pageFields); err != nil {
			return fmt.Errorf("indexing %s: %w", d.URL, err)
		}
		for n, img := range d.Images {
			if n == maxImages {
				break
			}
			if err := insertRow(ctx, tx, d.Team, imageID(id, n), d.URL, kindImage, d.seq, d.imageFields(img), imageFields); err != nil {
				return fmt.Errorf("indexing %s: %w", img.URL, err)
			}
		}
	}
	if seq > 0 {
		if _, err := tx.ExecContext(ctx, `UPDATE search_state SET applied = $1 WHERE id = 1`, seq); err != nil {
			return fmt.Errorf("writing the search index: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("writing the search index: %w", err)
	}
	return nil
}

// insertRow writes one document, f its fields as bleve takes them, text
// its text fields in weight order.
func insertRow(ctx context.Context, tx *sql.Tx, team, id, page, kind string, seq int64, f map[string]any, text [4]string) error {
	str := func(k string) string { s, _ := f[k].(string); return pgText(s) }
	strs := func(k string) []string {
		s, _ := f[k].([]string)
		out := make([]string, len(s))
		for i, v := range s {
			out[i] = pgText(v)
		}
		return out
	}
	num := func(k string) int64 { v, _ := f[k].(float64); return int64(v) }
	when := func(k string) *int64 {
		t, ok := f[k].(time.Time)
		if !ok || t.IsZero() {
			return nil
		}
		ms := t.UnixMilli()
		return &ms
	}
	var terms, pairs vectorBuilder
	lengths := make([]int64, 4)
	for i, field := range text {
		lengths[i] = addField(&terms, &pairs, str(field), weights[i])
	}
	fetched, date := when(fFetched), when(fDate)
	if fetched == nil {
		fetched = new(int64)
	}
	if date == nil {
		date = fetched
	}
	private, _ := f[fPrivate].(bool)
	_, err := tx.ExecContext(ctx, `INSERT INTO search_docs (team_id, id, kind, page_url, url, hosts, ext, categories,
		link_hosts, title, description, body, image_url, alt, width, height, fetched, published, date, private, lengths,
		terms, pairs, term_counts, src_seq) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
		$17, $18, $19, $20, $21, $22::tsvector, $23::tsvector, $24::jsonb, $25)`,
		pgText(team), pgText(id), kind, pgText(page), str(fURL), pgArray(strs(fHost)), pgArray(strs(fExt)), pgArray(strs(fCategory)),
		pgArray(strs(fLinkHosts)), str(fTitle), str(fDescription), str(fBody), str(fImageURL), str(fAlt),
		num(fWidth), num(fHeight), *fetched, when(fPublished), *date, private, pgInts(lengths),
		terms.String(), pairs.String(), terms.counts(), seq)
	return err
}

// pgText is s as PostgreSQL's text takes it: valid UTF-8 without NUL (a
// document's id separates its team and URL with one; a page's text may
// hold one).
func pgText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\x1f")
}

// vectorBuilder makes the text form of a tsvector of a document's terms
// (or pairs of words), each prefixed with the weight letter of its field
// ("D:coroutin"): a word is looked up in one field, or in any, through
// the GIN index, with no positions to store (a phrase is matched through
// its pairs of words, as bleve matches the body's). It counts each one,
// for the term counts scoring reads.
type vectorBuilder struct {
	order []string
	n     map[string]int
}

func (v *vectorBuilder) put(lexeme string, w byte) {
	if v.n == nil {
		v.n = map[string]int{}
	}
	k := fieldKey(w, lexeme)
	if v.n[k] == 0 {
		v.order = append(v.order, k)
	}
	v.n[k]++
}

// fieldKey is lexeme as the index holds it for the field of weight w.
func fieldKey(w byte, lexeme string) string { return string(w) + ":" + lexeme }

// counts is the JSON of each key's count.
func (v *vectorBuilder) counts() string {
	raw, _ := json.Marshal(v.n)
	return string(raw)
}

// addField puts text's terms in terms and its pairs of words in pairs,
// with weight w, from one analysis, and returns how many terms there are:
// the field's length. The pairs are pairTerms(text) (the pairs analyzer
// is the English one with two-word shingles after it, a stop word left
// out standing as "_"), made from the terms' positions instead of a second
// analysis; TestPairsFromOneAnalysis holds them equal.
func addField(terms, pairs *vectorBuilder, text string, w byte) int64 {
	n := int64(0)
	prev, pos := "", 0
	for _, t := range english.Analyze([]byte(text)) {
		term := string(t.Term)
		terms.put(term, w)
		n++
		for ; t.Position-pos > 1; pos++ {
			if prev != "" && prev != "_" {
				pairs.put(prev+" _", w)
			}
			prev = "_"
		}
		if prev != "" {
			pairs.put(prev+" "+term, w)
		}
		prev, pos = term, t.Position
	}
	return n
}

func (v *vectorBuilder) String() string {
	var b strings.Builder
	for i, k := range v.order {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(quoteLexeme(k))
	}
	return b.String()
}

var lexemeEscapes = strings.NewReplacer(`\`, `\\`, `'`, `''`)

// quoteLexeme quotes a lexeme for a tsvector or tsquery's text form.
func quoteLexeme(l string) string {
	if strings.ContainsAny(l, `\'`) {
		l = lexemeEscapes.Replace(l)
	}
	return "'" + l + "'"
}

var arrayEscapes = strings.NewReplacer(`\`, `\\`, `"`, `\"`)

// pgArray is the text form of a PostgreSQL text[].
func pgArray(ss []string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, s := range ss {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + arrayEscapes.Replace(s) + `"`)
	}
	b.WriteByte('}')
	return b.String()
}

func pgInts(ns []int64) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.FormatInt(n, 10)
	}
	return "{" + strings.Join(s, ",") + "}"
}

// sqlWhere gathers the conditions and arguments of a query.
type sqlWhere struct {
	conds []string
	args  []any
}

// arg adds an argument and returns its placeholder.
func (w *sqlWhere) arg(v any) string {
	w.args = append(w.args, v)
	return "$" + strconv.Itoa(len(w.args))
}

func (w *sqlWhere) add(format string, vs ...any) {
	ph := make([]any, len(vs))
	for i, v := range vs {
		ph[i] = w.arg(v)
	}
	w.conds = append(w.conds, fmt.Sprintf(format, ph...))
}

// tsAny is a tsquery matching any of lexemes in any of the fields of
// weights ws.
func tsAny(lexemes []string, ws string) string {
	var parts []string
	for _, l := range lexemes {
		for _, w := range []byte(ws) {
			parts = append(parts, quoteLexeme(fieldKey(w, l)))
		}
	}
	return strings.Join(parts, " | ")
}

// tsAll is a tsquery matching all of lexemes in the field of weight w.
func tsAll(lexemes []string, w byte) string {
	parts := make([]string, len(lexemes))
	for i, l := range lexemes {
		parts[i] = quoteLexeme(fieldKey(w, l))
	}
	return strings.Join(parts, " & ")
}

// fieldKeys are the keys of lexemes in each field of weights ws, lexeme
// by lexeme.
func fieldKeys(lexemes []string, ws string) []string {
	var out []string
	for _, l := range lexemes {
		for _, w := range []byte(ws) {
			out = append(out, fieldKey(w, l))
		}
	}
	return out
}

// textCond is the condition that a word or phrase is in one of the text
// fields of weights ws: a word's terms all in one field, a phrase's
// pairs of words all in one field (the body's phrases match through their
// pairs in bleve too; here every field's do), a one-term phrase as the
// term.
func (w *sqlWhere) textCond(t Term, ws string) string {
	stems := analyzeList(t.Text)
	pairs := pairTerms(t.Text)
	if len(stems) == 0 {
		return "TRUE"
	}
	var any []string
	for _, f := range []byte(ws) {
		if t.Phrase && len(stems) > 1 && len(pairs) > 0 {
			any = append(any, "pairs @@ "+w.arg(tsAll(pairs, f))+"::tsquery")
		} else {
			any = append(any, "terms @@ "+w.arg(tsAll(stems, f))+"::tsquery")
		}
	}
	return "(" + strings.Join(any, " OR ") + ")"
}

// pgKind is what differs between the documents of a source: their kind,
// the boosts of their fields, and which fields (weights) an operator looks
// in.
type pgKind struct {
	kind                      string
	boosts                    [4]float64
	not, inURL, inTitle, text string
}

var (
	pgPages  = pgKind{kind: kindPage, boosts: pageBoosts, not: "ACD", inURL: "B", inTitle: "A", text: "ABCD"}
	pgImages = pgKind{kind: kindImage, boosts: imageBoosts, not: "ABD", inURL: "C", inTitle: "B", text: "ABCD"}
)

// filters adds to f the conditions of r other than its words: those that
// leave the statistics (document frequencies) alone, which are the
// team's, over every document with the words.
func (f *sqlWhere) filters(r Request, k pgKind) {
	q := r.Query
	for _, t := range q.Terms {
		if t.Phrase {
			f.conds = append(f.conds, f.textCond(t, k.text))
		}
	}
	for _, t := range q.Not {
		f.conds = append(f.conds, "NOT "+f.textCond(t, k.not))
	}
	anyOf := func(col string, vals []string, neg bool) {
		if len(vals) == 0 {
			return
		}
		c := col + " && " + f.arg(pgArray(vals)) + "::text[]"
		if neg {
			c = "NOT " + c
		}
		f.conds = append(f.conds, c)
	}
	anyOf("hosts", lower(q.Sites), false)
	anyOf("hosts", lower(r.IncludeHosts), false)
	for _, h := range append(lower(q.NotSites), lower(r.ExcludeHosts)...) {
		anyOf("hosts", []string{h}, true)
	}
	anyOf("ext", lower(q.FileTypes), false)
	for _, e := range lower(q.NotFileTypes) {
		anyOf("ext", []string{e}, true)
	}
	anyOf("categories", r.Categories, false)
	for _, u := range q.InURL {
		f.conds = append(f.conds, f.textCond(Term{Text: u}, k.inURL))
	}
	for _, u := range q.NotInURL {
		f.conds = append(f.conds, "NOT "+f.textCond(Term{Text: u}, k.inURL))
	}
	for _, t := range q.InTitle {
		f.conds = append(f.conds, f.textCond(Term{Text: t, Phrase: true}, k.inTitle))
	}
	for _, t := range q.NotInTitle {
		f.conds = append(f.conds, "NOT "+f.textCond(Term{Text: t, Phrase: true}, k.inTitle))
	}
	if len(q.Related) > 0 {
		// The pages that link to the domains, and the pages of the hosts
		// the domains' pages link to; not the domains' own. ($1 is the
		// team.)
		related := f.arg(pgArray(lower(q.Related)))
		f.conds = append(f.conds, fmt.Sprintf(`(link_hosts && %[1]s::text[] OR hosts && ARRAY(
			SELECT h FROM search_docs s, unnest(s.link_hosts) h WHERE s.team_id = $1 AND s.kind = 'page'
			AND s.hosts && %[1]s::text[] GROUP BY h ORDER BY count(*) DESC LIMIT 100)) AND NOT hosts && %[1]s::text[]`, related))
	}
	if k.kind == kindImage {
		if s := q.ImageSize; s != nil {
			f.conds = append(f.conds, fmt.Sprintf("width = %s AND height = %s", f.arg(s.Width), f.arg(s.Height)))
		}
		if s := q.Larger; s != nil {
			f.conds = append(f.conds, fmt.Sprintf("width >= %s AND height >= %s", f.arg(s.Width), f.arg(s.Height)))
		}
	}
	if r.Source == SourceNews {
		f.conds = append(f.conds, "published IS NOT NULL")
	}
	if !r.After.IsZero() {
		f.conds = append(f.conds, "date > "+f.arg(r.After.UnixMilli()))
	}
	if !r.Before.IsZero() {
		f.conds = append(f.conds, "date <= "+f.arg(r.Before.UnixMilli()))
	}
	if r.PublicOnly {
		f.conds = append(f.conds, "NOT private")
	}
}

// Search runs r and returns at most r.Limit hits, best first.
func (p *PG) Search(ctx context.Context, r Request) ([]Hit, error) {
	k := pgPages
	if r.Source == SourceImages {
		k = pgImages
	}
	var words []string
	for _, t := range r.Query.Terms {
		words = append(words, t.Text)
	}
	analyzed := analyzeList(strings.Join(words, " "))
	stems := slices.Compact(slices.Sorted(slices.Values(analyzed)))
	kept, err := p.scored(ctx, r, k, stems)
	if err != nil {
		return nil, err
	}
	byScore := func(a, b pgCandidate) int {
		return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(b.fetched, a.fetched), strings.Compare(a.id, b.id))
	}
	sortBy := byScore
	switch {
	case r.Source == SourceNews:
		sortBy = func(a, b pgCandidate) int { return cmp.Or(cmp.Compare(b.published, a.published), byScore(a, b)) }
	case r.SortByDate:
		sortBy = func(a, b pgCandidate) int { return cmp.Or(cmp.Compare(b.date, a.date), byScore(a, b)) }
	}
	slices.SortFunc(kept, byScore)
	if k.kind == kindPage && len(analyzed) > 1 && len(kept) > 0 && !r.SortByDate && r.Source != SourceNews {
		top := kept[:min(len(kept), max(r.Limit, rerankDepth))]
		st, err := p.stats(ctx, pgText(r.Team), k.kind)
		if err != nil {
			return nil, err
		}
		if err := p.rerank(ctx, pgText(r.Team), top, analyzed, st); err != nil {
			return nil, err
		}
		slices.SortFunc(top, byScore)
		kept = top
	}
	slices.SortFunc(kept, sortBy)
	size := r.Limit
	if k.kind == kindImage {
		size = r.Limit * 4
	}
	return p.hits(ctx, r, kept[:min(len(kept), size)])
}

// scored returns the documents that answer r, scored by their words: the
// team's documents of the kind with any of stems (every one when there are
// none), of which those that pass r's filters; the others count in the
// words' document frequencies only.
func (p *PG) scored(ctx context.Context, r Request, k pgKind, stems []string) ([]pgCandidate, error) {
	var f sqlWhere
	f.add("team_id = %s", pgText(r.Team))
	f.add("kind = %s", k.kind)
	where := slices.Clone(f.conds)
	if len(stems) > 0 {
		where = append(where, "terms @@ "+f.arg(tsAny(stems, k.text))+"::tsquery")
	}
	f.conds = nil
	f.filters(r, k)
	keep := "TRUE"
	if len(f.conds) > 0 {
		keep = strings.Join(f.conds, " AND ")
	}
	if len(stems) == 0 {
		// No words: no statistics to keep, the filters select.
		where, keep = append(where, keep), "TRUE"
	}
	stemsArg := f.arg(pgArray(fieldKeys(stems, weights)))
	rows, err := p.db.QueryContext(ctx, `SELECT id, fetched, COALESCE(published, 0), date, lengths,
		`+countsOf("term_counts", stemsArg)+`, `+keep+` FROM search_docs WHERE `+strings.Join(where, " AND "), f.args...)
	if err != nil {
		return nil, fmt.Errorf("searching the index: %w", err)
	}
	var cands []pgCandidate
	df := map[string]*[4]int{}
	for rows.Next() {
		var c pgCandidate
		var lengthsRaw, countsRaw string
		if err := rows.Scan(&c.id, &c.fetched, &c.published, &c.date, &lengthsRaw, &countsRaw, &c.keep); err != nil {
			rows.Close()
			return nil, err
		}
		c.lengths = parseLengths(lengthsRaw)
		c.tf = termCounts(stems, parseArray(countsRaw), df)
		cands = append(cands, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("searching the index: %w", err)
	}
	if len(stems) == 0 {
		return cands, nil
	}
	st, err := p.stats(ctx, pgText(r.Team), k.kind)
	if err != nil {
		return nil, err
	}
	kept := cands[:0]
	for _, c := range cands {
		if c.keep {
			c.score = bm25(c.tf, c.lengths, stems, df, st, k.boosts)
			kept = append(kept, c)
		}
	}
	return kept, nil
}

// pgCandidate is a document that has the query's words.
type pgCandidate struct {
	id                       string
	fetched, published, date int64
	lengths                  [4]float64
	tf                       map[string][4]float64
	keep                     bool
	score                    float64
}

// pgStats are the statistics of a team's documents of one kind.
type pgStats struct {
	n   float64
	avg [4]float64
}

func (p *PG) stats(ctx context.Context, team, kind string) (pgStats, error) {
	var s pgStats
	var a, b, c, d sql.NullFloat64
	err := p.db.QueryRowContext(ctx, `SELECT count(*), avg(lengths[1]), avg(lengths[2]), avg(lengths[3]), avg(lengths[4])
		FROM search_docs WHERE team_id = $1 AND kind = $2`, team, kind).Scan(&s.n, &a, &b, &c, &d)
	if err != nil {
		return s, fmt.Errorf("searching the index: %w", err)
	}
	s.avg = [4]float64{max(1, a.Float64), max(1, b.Float64), max(1, c.Float64), max(1, d.Float64)}
	return s, nil
}

// BM25 here: the usual formula (term frequency saturated by k1, lengths
// normalised by b against the field's average over the team's documents of
// the kind, idf from the team's document frequencies per field), each
// field's score times its boost, summed over the query's terms and fields
// and scaled by the share of (term, field) pairs that matched, as bleve's
// disjunction does. Its usual constants: bleve's BM25 takes the square
// root of a term's count and averages field lengths its own way, which
// the bleve index's small b (bm25B) makes up for; with the usual ones,
// MRR@10 on the python3.11-doc table was 0.69 here (b 0.15: 0.60).
const (
	pgK1 = 1.2
	pgB  = 0.75
)

func bm25(tf map[string][4]float64, lengths [4]float64, stems []string, df map[string]*[4]int, st pgStats, boosts [4]float64) float64 {
	score, matched := 0.0, 0
	for _, s := range stems {
		f, ok := tf[s]
		if !ok {
			continue
		}
		for i := range 4 {
			if f[i] == 0 || df[s] == nil {
				continue
			}
			matched++
			score += termScore(f[i], float64(df[s][i]), lengths[i], st.n, st.avg[i], boosts[i])
		}
	}
	return score * float64(matched) / float64(4*len(stems))
}

// termScore is one term's score in one field: freq occurrences in a field
// of length, the term in df of the n documents, whose field averages avg.
func termScore(freq, df, length, n, avg, boost float64) float64 {
	idf := math.Log(1 + (n-df+0.5)/(df+0.5))
	norm := 1 - pgB + pgB*length/avg
	return boost * idf * freq * (pgK1 + 1) / (freq + pgK1*norm)
}

// rerank adds to the scores of top (a team's best pages by their words)
// the score of the query's pairs of words in their title and body, as
// bleve's rerank does.
func (p *PG) rerank(ctx context.Context, team string, top []pgCandidate, analyzed []string, st pgStats) error {
	var pairs []string
	for i := 0; i+1 < len(analyzed); i++ {
		pairs = append(pairs, analyzed[i]+" "+analyzed[i+1])
	}
	pairs = slices.Compact(slices.Sorted(slices.Values(pairs)))
	// Every page of the team with one of the pairs in its title (A) or
	// body (D): the pairs' document frequencies, and the top pages' counts.
	// Whether each page has each pair in its title (A) and its body (D),
	// in that order: scored as a count of one.
	keys := fieldKeys(pairs, "AD")
	quoted := make([]string, len(keys))
	for i, k := range keys {
		quoted[i] = quoteLexeme(k)
	}
	// (One copy of the pairs for all of them, as countsOf.)
	rows, err := p.db.QueryContext(ctx, `SELECT id, lengths, (SELECT array_agg(CASE WHEN v @@ q THEN '1' ELSE '' END ORDER BY i)
		FROM (SELECT pairs || ''::tsvector AS v OFFSET 0) c, unnest($3::tsquery[]) WITH ORDINALITY AS u(q, i)) FROM search_docs
		WHERE team_id = $1 AND kind = $2 AND pairs @@ $4::tsquery`, team, kindPage, pgArray(quoted), tsAny(pairs, "AD"))
	if err != nil {
		return fmt.Errorf("searching the index: %w", err)
	}
	defer rows.Close()
	at := map[string]int{}
	for i, c := range top {
		at[c.id] = i
	}
	type counted struct {
		i       int
		lengths [4]float64
		tf      map[string][4]float64
	}
	var mine []counted
	df := map[string]*[4]int{}
	for rows.Next() {
		var id, lengthsRaw, hasRaw string
		if err := rows.Scan(&id, &lengthsRaw, &hasRaw); err != nil {
			return err
		}
		has := parseArray(hasRaw)
		// The A and D of each pair, as counts in the four fields.
		counts := make([]string, 4*len(pairs))
		for i := range pairs {
			if 2*i+1 < len(has) {
				counts[4*i], counts[4*i+3] = has[2*i], has[2*i+1]
			}
		}
		tf := termCounts(pairs, counts, df)
		if i, ok := at[id]; ok {
			mine = append(mine, counted{i, parseLengths(lengthsRaw), tf})
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("searching the index: %w", err)
	}
	pairBoosts := [4]float64{boostPair, 0, 0, boostPair}
	for _, c := range mine {
		top[c.i].score += bm25Pairs(c.tf, c.lengths, pairs, df, st, pairBoosts)
	}
	return nil
}

// countsOf is the SQL of a document's counts (column) of the keys of the
// text[] argument arg, in their order ("" for a key it lacks). The keys
// are looked up in one copy of the column's value (j): each lookup in the
// stored value would read it out of TOAST again (on python3.11-doc, 65 ms
// of a query's 70 went to that).
func countsOf(column, arg string) string {
	return `COALESCE((SELECT array_agg(COALESCE(j ->> k, '') ORDER BY i) FROM (SELECT ` + column +
		` || '{}'::jsonb AS j OFFSET 0) c, unnest(` + arg + `::text[]) WITH ORDINALITY AS q(k, i)), '{}')`
}

// termCounts reads a document's counts of lexemes in the four fields
// (four per lexeme, in weight order, as countsOf gives them for
// fieldKeys(lexemes, weights)) and counts the document in df for each
// field it has a lexeme in.
func termCounts(lexemes, counts []string, df map[string]*[4]int) map[string][4]float64 {
	tf := map[string][4]float64{}
	for i, lex := range lexemes {
		var f [4]float64
		any := false
		for w := range 4 {
			if k := 4*i + w; k < len(counts) && counts[k] != "" {
				f[w], _ = strconv.ParseFloat(counts[k], 64)
				any = any || f[w] > 0
			}
		}
		if !any {
			continue
		}
		tf[lex] = f
		if df[lex] == nil {
			df[lex] = &[4]int{}
		}
		for w := range 4 {
			if f[w] > 0 {
				df[lex][w]++
			}
		}
	}
	return tf
}

// parseLengths reads the lengths column.
func parseLengths(raw string) [4]float64 {
	var out [4]float64
	for i, l := range parseArray(raw) {
		if i < 4 {
			out[i], _ = strconv.ParseFloat(l, 64)
		}
	}
	return out
}

// bm25Pairs scores pairs like bm25 scores terms, each pair a clause of its
// own (no coordination): bleve adds each pair's score to the page's.
func bm25Pairs(tf map[string][4]float64, lengths [4]float64, pairs []string, df map[string]*[4]int, st pgStats, boosts [4]float64) float64 {
	score := 0.0
	for _, s := range pairs {
		f, ok := tf[s]
		if !ok || df[s] == nil {
			continue
		}
		for i := range 4 {
			if f[i] == 0 || boosts[i] == 0 {
				continue
			}
			score += termScore(f[i], float64(df[s][i]), lengths[i], st.n, st.avg[i], boosts[i])
		}
	}
	return score
}

// hits reads the stored fields of the chosen documents, in their order,
// and makes their hits (images once each).
func (p *PG) hits(ctx context.Context, r Request, chosen []pgCandidate) ([]Hit, error) {
	if len(chosen) == 0 {
		return nil, nil
	}
	ids := make([]string, len(chosen))
	for i, c := range chosen {
		ids[i] = c.id
	}
	rows, err := p.db.QueryContext(ctx, `SELECT id, url, title, description, body, categories, fetched, published,
		image_url, alt, width, height FROM search_docs WHERE team_id = $1 AND id = ANY($2::text[])`, pgText(r.Team), pgArray(ids))
	if err != nil {
		return nil, fmt.Errorf("searching the index: %w", err)
	}
	defer rows.Close()
	needles := r.needles()
	byID := map[string]Hit{}
	for rows.Next() {
		var id, url, title, description, body, categoriesRaw, imageURL, alt string
		var fetched int64
		var published sql.NullInt64
		var width, height int
		if err := rows.Scan(&id, &url, &title, &description, &body, &categoriesRaw, &fetched, &published, &imageURL,
			&alt, &width, &height); err != nil {
			return nil, err
		}
		h := Hit{URL: url, Title: title, Fetched: time.UnixMilli(fetched).UTC(), ImageURL: imageURL, ImageWidth: width,
			ImageHeight: height}
		if published.Valid {
			h.Published = time.UnixMilli(published.Int64).UTC()
		}
		h.describe(alt, description, body, needles)
		h.Category = firstOf(r.Categories, parseArray(categoriesRaw))
		byID[id] = h
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	ordered := make([]Hit, 0, len(ids))
	for _, id := range ids {
		if h, ok := byID[id]; ok {
			ordered = append(ordered, h)
		}
	}
	return keepHits(r, ordered), nil
}

// parseArray reads the text form of a one-dimensional PostgreSQL array of
// text or numbers: {a,"b c",...}.
func parseArray(s string) []string {
	s = strings.TrimSpace(s)
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return nil
	}
	s = s[1 : len(s)-1]
	var out []string
	for len(s) > 0 {
		if s[0] == '"' {
			var b strings.Builder
			i := 1
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				b.WriteByte(s[i])
			}
			out = append(out, b.String())
			s = strings.TrimPrefix(s[min(i+1, len(s)):], ",")
			continue
		}
		item, rest, _ := strings.Cut(s, ",")
		out = append(out, item)
		s = rest
	}
	return out
}
