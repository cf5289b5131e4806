package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/trawler-dev/trawler/cmd/bench/transform"
	"github.com/trawler-dev/trawler/index"
	"github.com/trawler-dev/trawler/scrape"
	"github.com/trawler-dev/trawler/store"
)

const (
	// searchBatch is the documents per Put: the syncer's batch (logBatch).
	searchBatch = 200
	// searchRounds is how many times each query of the table is timed, after
	// one untimed round.
	searchRounds = 5
	// searchBigDocs is the size of the synthetic index.
	searchBigDocs = 20000
	// searchTeam is the team every document of the bench's indexes is of.
	searchTeam = "bench"
	// searchBase is the URL the python-doc pages are indexed under; the
	// synthetic index's copies go under mirrorNN subdomains of it.
	searchBase = "http://docs.python.test/"
	// crawlPairBudget: the crawl comparison runs a second pair of crawls
	// (off, then on) only when the first pair took less than this, to keep
	// the comparison under some three minutes on a 2-core machine.
	crawlPairBudget = 80 * time.Second
)

// searchPerformance measures the embedded search index on Python's HTML
// documentation (python3.11-doc):
//
//   - indexing: every page read into memory, then converted with
//     scrape.IndexDoc (as the service's syncer does) and Put in batches of
//     200 into a fresh index, docs/s of the whole; then the pre-converted
//     documents Put alone into another fresh index;
//   - relevance: index.Measure over index/testdata/python-queries.tsv on the
//     first index (MRR@10, recall@10);
//   - latency: every query of the table, one untimed round then 5 timed
//     ones, parse and search (limit 10), on that index and on a synthetic
//     index of 20,000 documents built from its pages;
//   - the synthetic index's size on disk per 1,000 documents, and this
//     process's RSS with it open;
//   - a crawl of the site served locally with the index on against one with
//     TRAWLER_SEARCH_INDEX=false, pages/s, and a search through POST
//     /v2/search of the indexed instance for the pages it crawled.
func (b *bench) searchPerformance(ctx context.Context, _ *instance) error {
	if _, err := os.Stat(filepath.Join(transform.PythonDocs, "index.html")); err != nil {
		return fmt.Errorf("the search phase indexes %s: install python3.11-doc (make bench does): %w", transform.PythonDocs, err)
	}
	judged, err := loadJudged()
	if err != nil {
		return err
	}
	pages, err := readPythonDocs()
	if err != nil {
		return err
	}
	dir := filepath.Join(b.tmp, "search")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}

	ix, docs, err := indexConverted(ctx, filepath.Join(dir, "convert"), pages)
	if err != nil {
		return err
	}
	defer ix.close()
	if err := indexOnly(filepath.Join(dir, "put"), docs); err != nil {
		return err
	}

	rel := index.Measure(ctx, ix.Index, searchTeam, judged, searchBase)
	for _, m := range rel.Misses {
		logf("search: miss %s", m)
	}
	absent := 0
	for _, m := range rel.Misses {
		if strings.Contains(m, " at rank 0;") {
			absent++
		}
	}
	logf("search: %d judged queries on %d documents: MRR@10 %.3f, recall@10 %.3f; misses: %d not first, %d of them not in the top 10 (goal MRR >= 0.8, recall >= 0.9)",
		len(judged), len(docs), rel.MRR, rel.Recall, len(rel.Misses), absent)
	figure("search_mrr_at_10", rel.MRR, "x")
	figure("search_recall_at_10", rel.Recall, "x")

	small, err := timeQueries(ctx, ix.Index, judged)
	if err != nil {
		return err
	}
	logf("search: %d queries on %d documents: p50 %.2f p90 %.2f p99 %.2f max %.2f ms (1-minute load average %s)",
		len(small), len(docs), ms(median(small)), ms(pct(small, 0.9)), ms(pct(small, 0.99)), ms(slices.Max(small)), loadAvg())
	figure("search_query_p50_ms", ms(median(small)), "ms")
	figure("search_query_p99_ms", ms(pct(small, 0.99)), "ms")
	if err := ix.close(); err != nil {
		return err
	}
	if err := searchPostgres(ctx, docs, judged, rel); err != nil {
		return err
	}

	if err := b.searchBigIndex(ctx, filepath.Join(dir, "big"), docs, judged); err != nil {
		return err
	}
	return b.crawlWithIndex(ctx, judged, rel.Recall)
}

// searchPostgres indexes docs into the index in PostgreSQL (that of a
// store on TRAWLER_DATABASE_URL, where nodes share it) on a database of
// its own, and measures it on the judged queries as the embedded index
// was (embedded): relevance within 0.05 of it is the goal. Skipped
// without a test server (make bench runs under scripts/pgtest.sh).
func searchPostgres(ctx context.Context, docs []index.Doc, judged []index.Judged, embedded index.Relevance) error {
	admin := os.Getenv(testDatabaseEnv)
	if admin == "" {
		logf("search: the index in PostgreSQL is not measured: %s is not set (make bench sets it)", testDatabaseEnv)
		return nil
	}
	pg, err := openPGAdmin(ctx, admin)
	if err != nil {
		return err
	}
	defer pg.close()
	dbURL, err := pg.create(ctx)
	if err != nil {
		return err
	}
	st, err := store.OpenURL(ctx, dbURL)
	if err != nil {
		return err
	}
	defer st.Close()
	ix := index.OpenPG(st.Postgres())
	cpu0 := pg.cpu()
	t := time.Now()
	for i := 0; i < len(docs); i += 100 {
		if err := ix.Put(docs[i:min(i+100, len(docs))], nil, 0); err != nil {
			return fmt.Errorf("indexing in PostgreSQL: %w", err)
		}
	}
	wall, cpu := time.Since(t), pg.cpu().since(cpu0)
	logf("search: PostgreSQL %s indexed %d documents in %s (this process %.1f s of CPU, the server %.1f s)", pg.version,
		len(docs), wall.Round(time.Millisecond), cpu.self.Seconds(), cpu.postgres.Seconds())
	rel := index.Measure(ctx, ix, searchTeam, judged, searchBase)
	queries, err := timeQueries(ctx, ix, judged)
	if err != nil {
		return fmt.Errorf("the index in PostgreSQL: %w", err)
	}
	logf("search: in PostgreSQL: MRR@10 %.3f (embedded %.3f), recall@10 %.3f (embedded %.3f); %d queries: p50 %.2f p90 %.2f p99 %.2f ms",
		rel.MRR, embedded.MRR, rel.Recall, embedded.Recall, len(queries), ms(median(queries)), ms(pct(queries, 0.9)),
		ms(pct(queries, 0.99)))
	figure("search_pg_index_docs_per_s", rate(len(docs), wall), "docs/s")
	figure("search_pg_mrr_at_10", rel.MRR, "x")
	figure("search_pg_mrr_minus_embedded", rel.MRR-embedded.MRR, "x")
	figure("search_pg_query_p50_ms", ms(median(queries)), "ms")
	figure("search_pg_query_p99_ms", ms(pct(queries, 0.99)), "ms")
	return nil
}

// loadJudged reads index/testdata/python-queries.tsv: a query, a tab, and
// the paths (under the corpus root) of the pages that answer it, separated
// by '|'.
func loadJudged() ([]index.Judged, error) {
	_, file, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(file), "..", "..", "index", "testdata", "python-queries.tsv")
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("the query table: %w", err)
	}
	defer f.Close()
	var out []index.Judged
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		q, want, ok := strings.Cut(line, "\t")
		if !ok {
			return nil, fmt.Errorf("%s: line %q has no tab", path, line)
		}
		out = append(out, index.Judged{Query: q, Want: strings.Split(want, "|")})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no queries", path)
	}
	return out, nil
}

// docPage is one HTML file of the corpus, read into memory: what the
// syncer reads from the cache.
type docPage struct {
	rel  string // path under the corpus root
	body []byte
}

func readPythonDocs() ([]docPage, error) {
	var pages []docPage
	err := filepath.WalkDir(transform.PythonDocs, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".html") {
			return err
		}
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(transform.PythonDocs, p)
		pages = append(pages, docPage{filepath.ToSlash(rel), body})
		return err
	})
	return pages, err
}

// indexConverted converts every page with scrape.IndexDoc and Puts the
// documents in batches into a fresh index in dir, timing the whole, and
// returns the index, open, and the documents.
func indexConverted(ctx context.Context, dir string, pages []docPage) (*openIndex, []index.Doc, error) {
	ix, err := openIx(dir)
	if err != nil {
		return nil, nil, err
	}
	runtime.GC()
	fetched := time.Now()
	var docs []index.Doc
	var skipped int
	var convert, put time.Duration
	t := time.Now()
	for i := 0; i < len(pages); i += searchBatch {
		tc := time.Now()
		var batch []index.Doc
		for _, p := range pages[i:min(i+searchBatch, len(pages))] {
			u := searchBase + p.rel
			d, ok, err := scrape.IndexDoc(ctx, store.CachedPage{Team: searchTeam, URL: u, FinalURL: u, StatusCode: 200,
				ContentType: "text/html; charset=utf-8", Body: p.body, CreatedAt: fetched})
			if err != nil {
				ix.close()
				return nil, nil, fmt.Errorf("converting %s: %w", p.rel, err)
			}
			if !ok {
				skipped++
				continue
			}
			batch = append(batch, d)
		}
		tp := time.Now()
		convert += tp.Sub(tc)
		if err := ix.Put(batch, nil, 0); err != nil {
			ix.close()
			return nil, nil, err
		}
		put += time.Since(tp)
		docs = append(docs, batch...)
	}
	wall := time.Since(t)
	var md, images int
	for _, d := range docs {
		md += len(d.Markdown)
		images += len(d.Images)
	}
	logf("search: %d HTML files, %d documents (%d not indexable), %.1f MB of Markdown (%.1f kB each), %d images; converted and indexed in %s (convert %s, Put %s)",
		len(pages), len(docs), skipped, float64(md)/(1<<20), float64(md)/1024/float64(max(1, len(docs))), images,
		wall.Round(time.Millisecond), convert.Round(time.Millisecond), put.Round(time.Millisecond))
	figure("search_index_docs_per_s", rate(len(docs), wall), "docs/s")
	return ix, docs, nil
}

// indexOnly Puts docs, already converted, in batches into a fresh index in
// dir and closes it.
func indexOnly(dir string, docs []index.Doc) error {
	ix, err := openIx(dir)
	if err != nil {
		return err
	}
	defer ix.close()
	runtime.GC()
	t := time.Now()
	for i := 0; i < len(docs); i += searchBatch {
		if err := ix.Put(docs[i:min(i+searchBatch, len(docs))], nil, 0); err != nil {
			return err
		}
	}
	wall := time.Since(t)
	logf("search: %d pre-converted documents indexed in %s", len(docs), wall.Round(time.Millisecond))
	figure("search_index_only_docs_per_s", rate(len(docs), wall), "docs/s")
	return ix.close()
}

// timeQueries runs every query of judged as a web search of limit 10 (the
// parse included, as a request pays it), one untimed round and then
// searchRounds timed ones, and returns the times.
func timeQueries(ctx context.Context, ix index.Backend, judged []index.Judged) ([]time.Duration, error) {
	var out []time.Duration
	each := make([][]time.Duration, len(judged))
	for round := 0; round <= searchRounds; round++ {
		for i, j := range judged {
			t := time.Now()
			q, err := index.ParseQuery(j.Query)
			if err != nil {
				return nil, fmt.Errorf("query %q: %w", j.Query, err)
			}
			hits, err := ix.Search(ctx, index.Request{Team: searchTeam, Query: q, Limit: 10})
			d := time.Since(t)
			if err != nil {
				return nil, fmt.Errorf("query %q: %w", j.Query, err)
			}
			if len(hits) == 0 {
				return nil, fmt.Errorf("query %q: no hits", j.Query)
			}
			if round > 0 {
				out = append(out, d)
				each[i] = append(each[i], d)
			}
		}
	}
	// The slowest queries, by their median: what to look at first.
	order := make([]int, len(judged))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(median(each[b]), median(each[a])) })
	var slow []string
	for _, i := range order[:min(5, len(order))] {
		slow = append(slow, fmt.Sprintf("%q %.1f ms", judged[i].Query, ms(median(each[i]))))
	}
	logf("search: the slowest queries (median of %d): %s", searchRounds, strings.Join(slow, ", "))
	return out, nil
}

// searchBigIndex builds an index of searchBigDocs documents from docs,
// times the table's queries on it, and takes its size on disk and the
// process's RSS with it open.
//
// Each page is copied some 38 times, copy k under its own host
// (mirrorNN.docs.python.test) with its paragraphs shuffled and about one
// in eight of them left out (a seeded choice per copy), so that no two
// documents are the same bag of words and the posting lists hold 38 times
// as many distinct entries as the 530-page index's. Every copy is of the
// one team searched: the service in local mode has a single team, and it
// is the heaviest case for a search, whose team filter then leaves every
// document a candidate.
func (b *bench) searchBigIndex(ctx context.Context, dir string, docs []index.Doc, judged []index.Judged) error {
	ix, err := openIx(dir)
	if err != nil {
		return err
	}
	defer func() { ix.close() }()
	copies := (searchBigDocs + len(docs) - 1) / len(docs)
	fetched := time.Now().Add(-time.Duration(copies) * time.Hour)
	t := time.Now()
	batch := make([]index.Doc, 0, searchBatch)
	var n, md int
	for k := 0; k < copies && n < searchBigDocs; k++ {
		for i := 0; i < len(docs) && n < searchBigDocs; i++ {
			d := variant(docs[i], k, i, fetched)
			md += len(d.Markdown)
			batch = append(batch, d)
			n++
			if len(batch) == searchBatch || n == searchBigDocs {
				if err := ix.Put(batch, nil, 0); err != nil {
					return err
				}
				batch = batch[:0]
			}
		}
	}
	built := time.Since(t)
	count, err := ix.Count()
	if err != nil {
		return err
	}
	logf("search: %d documents (%d copies of each page, %.1f MB of Markdown; %d index entries with the image documents) indexed in %s (%.0f docs/s)",
		n, copies, float64(md)/(1<<20), count, built.Round(time.Millisecond), rate(n, built))
	// The index merges its segments in the background: the size on disk is
	// taken once that has settled and the index is closed.
	settled, files, err := waitSettledDir(ctx, dir, 3*time.Second, 2*time.Minute)
	if err != nil {
		return err
	}
	if err := ix.close(); err != nil {
		return err
	}
	size, files2, err := dirSize(dir)
	if err != nil {
		return err
	}
	logf("search: merges settled in %s (%d files); closed, the index takes %.1f MB in %d files",
		settled.Round(100*time.Millisecond), files, float64(size)/(1<<20), files2)
	figure("search_index_mb_per_1000_docs", float64(size)/(1<<20)/(float64(n)/1000), "MB")

	runtime.GC()
	debug.FreeOSMemory()
	before, err := rssKB(os.Getpid())
	if err != nil {
		return err
	}
	if ix, err = openIx(dir); err != nil {
		return err
	}
	big, err := timeQueries(ctx, ix.Index, judged)
	if err != nil {
		return err
	}
	logf("search: %d queries on %d documents: p50 %.2f p90 %.2f p99 %.2f max %.2f ms (goal p50 < 15, p99 < 60; 1-minute load average %s)",
		len(big), n, ms(median(big)), ms(pct(big, 0.9)), ms(pct(big, 0.99)), ms(slices.Max(big)), loadAvg())
	figure("search_query_20k_p50_ms", ms(median(big)), "ms")
	figure("search_query_20k_p99_ms", ms(pct(big, 0.99)), "ms")
	runtime.GC()
	debug.FreeOSMemory()
	after, err := rssKB(os.Getpid())
	if err != nil {
		return err
	}
	anon, _ := statusKB(os.Getpid(), "status", "RssAnon")
	file, _ := statusKB(os.Getpid(), "status", "RssFile")
	logf("search: this process's RSS %.1f MB before opening the 20k index, %.1f MB with it open after the queries (anonymous %.1f MB, file-backed %.1f MB; the process also holds the warm service)",
		kbMB(before), kbMB(after), kbMB(anon), kbMB(file))
	figure("search_rss_mb_20k", kbMB(after), "MB")
	return nil
}

// openIndex is an index that may be closed more than once (bleve's Close
// panics the second time): by the phase's step that is done with it, and
// by a deferred close on the way out.
type openIndex struct {
	*index.Index
	closed bool
}

func openIx(dir string) (*openIndex, error) {
	ix, err := index.Open(dir)
	if err != nil {
		return nil, err
	}
	return &openIndex{Index: ix}, nil
}

func (ix *openIndex) close() error {
	if ix == nil || ix.closed {
		return nil
	}
	ix.closed = true
	return ix.Index.Close()
}

// variant is copy k of page i: its own host, its paragraphs shuffled and
// about one in eight left out.
func variant(d index.Doc, k, i int, fetched time.Time) index.Doc {
	rnd := rand.New(rand.NewPCG(uint64(k), uint64(i)))
	paras := strings.Split(d.Markdown, "\n\n")
	kept := paras[:0:0]
	for _, p := range paras {
		if rnd.IntN(8) != 0 {
			kept = append(kept, p)
		}
	}
	if len(kept) == 0 {
		kept = paras
	}
	rnd.Shuffle(len(kept), func(a, b int) { kept[a], kept[b] = kept[b], kept[a] })
	d.Markdown = strings.Join(kept, "\n\n")
	d.URL = strings.Replace(d.URL, "://", fmt.Sprintf("://mirror%02d.", k), 1)
	d.Fetched = fetched.Add(time.Duration(k) * time.Hour)
	return d
}

// waitSettledDir waits until the files in dir (count and bytes) have not
// changed for quiet, or fails after limit.
func waitSettledDir(ctx context.Context, dir string, quiet, limit time.Duration) (time.Duration, int, error) {
	start := time.Now()
	var last int64 = -1
	var lastFiles int
	since := time.Now()
	for {
		size, files, err := dirSize(dir)
		if err != nil {
			return 0, 0, err
		}
		if size != last || files != lastFiles {
			last, lastFiles, since = size, files, time.Now()
		} else if time.Since(since) >= quiet {
			return since.Sub(start), files, nil
		}
		if time.Since(start) > limit {
			return 0, 0, fmt.Errorf("the index in %s still changes after %s", dir, limit)
		}
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// dirSize is the bytes and the number of regular files under dir.
func dirSize(dir string) (int64, int, error) {
	var size int64
	var files int
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if errors.Is(err, os.ErrNotExist) { // removed by a merge meanwhile
			return nil
		}
		if err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			size += info.Size()
			files++
		}
		return nil
	})
	return size, files, err
}

// indexMode is a crawl run of the comparison: with the search index on or
// off.
type indexMode struct {
	name string
	on   bool
}

// crawlWithIndex crawls the python-doc site on fresh services with the
// search index on (the default) and with TRAWLER_SEARCH_INDEX=false, in the
// order on, off, off, on (the second pair only while the comparison stays
// within its budget), and reports the ratio of pages/s, each side's pages
// and wall times summed. After the first crawl with the index on, the
// table's queries are asked through that service's POST /v2/search: the
// crawled pages must be found about as often as in the index built here
// (recall, index.Measure's).
func (b *bench) crawlWithIndex(ctx context.Context, judged []index.Judged, recall float64) error {
	site := &countingSite{h: http.FileServer(http.Dir(transform.PythonDocs))}
	srv := httptest.NewServer(site)
	defer srv.Close()
	root := srv.URL + "/"
	type total struct {
		pages int
		wall  time.Duration
	}
	totals := map[bool]*total{true: {}, false: {}}
	on, off := indexMode{"crawl-indexed", true}, indexMode{"crawl-unindexed", false}
	order := []indexMode{on, off, off, on}
	start := time.Now()
	for i, m := range order {
		if i == 2 && time.Since(start) > crawlPairBudget {
			logf("search: the first pair of crawls took %s: no second pair", time.Since(start).Round(time.Second))
			break
		}
		name := fmt.Sprintf("%s-%d", m.name, i/2+1)
		var check []index.Judged // the first crawl with the index is searched
		if i == 0 {
			check = judged
		}
		pages, wall, err := b.crawlIndexed(ctx, name, root, m.on, check, recall)
		if err != nil {
			return err
		}
		totals[m.on].pages += pages
		totals[m.on].wall += wall
	}
	with, without := rate(totals[true].pages, totals[true].wall), rate(totals[false].pages, totals[false].wall)
	logf("search: crawls with the index %.2f pages/s, without %.2f pages/s (the comparison took %s)",
		with, without, time.Since(start).Round(time.Second))
	figure("crawl_with_index_over_without", with/without, "x")
	return nil
}

// crawlIndexed crawls root on a fresh service with the search index on or
// off and returns the pages completed and the wall time from the POST to
// the status completed; then it searches that service with the queries of
// check, if any, for the crawled pages.
func (b *bench) crawlIndexed(ctx context.Context, name, root string, indexed bool, check []index.Judged, recall float64) (int, time.Duration, error) {
	env := scrapeEnv(poolSize, 120*time.Second)
	env["TRAWLER_SEARCH_INDEX"] = fmt.Sprint(indexed)
	in, err := b.startWith(ctx, name, 1, poolSize, env)
	if err != nil {
		return 0, 0, err
	}
	defer in.Close()
	if err := in.waitWarm(ctx); err != nil {
		return 0, 0, err
	}
	time.Sleep(time.Second) // let the warm browser finish its start-up work
	runtime.GC()

	ctx, cancel := context.WithTimeout(ctx, crawlTimeout)
	defer cancel()
	body, err := json.Marshal(map[string]any{"url": root, "limit": crawlLimit,
		"scrapeOptions": map[string]any{"formats": []string{"markdown"}}})
	if err != nil {
		return 0, 0, err
	}
	t := time.Now()
	var started struct {
		ID string `json:"id"`
	}
	err = in.do(ctx, http.MethodPost, "/v2/crawl", body, &started)
	if err == nil && started.ID == "" {
		err = errors.New("POST /v2/crawl answered without an id")
	}
	var completed, total int
	if err == nil {
		completed, total, err = in.waitCrawl(ctx, name, started.ID, t)
	}
	wall := time.Since(t)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", name, err)
	}
	size, _, _ := dirSize(filepath.Join(in.dataDir, "search.bleve"))
	logf("%s: %d pages completed of %d in %s (%.2f pages/s); search index on disk %.1f MB",
		name, completed, total, wall.Round(time.Millisecond), rate(completed, wall), float64(size)/(1<<20))
	if completed != total {
		in.logCrawlErrors(ctx, name, started.ID)
	}
	if len(check) > 0 {
		if err := searchCrawled(ctx, in, name, root, check, recall); err != nil {
			return 0, 0, fmt.Errorf("%s: %w", name, err)
		}
	}
	in.Close()
	if err := waitNoBrowsers(in.dataDir, 10*time.Second); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", name, err)
	}
	return completed, wall, nil
}

// searchAnswer is the part of POST /v2/search's answer the bench reads.
type searchAnswer struct {
	Data struct {
		Web []struct {
			URL string `json:"url"`
		} `json:"web"`
	} `json:"data"`
	Warning string `json:"warning"`
}

// searchCrawled asks every query of judged through POST /v2/search of in,
// once the index has caught up with the crawl, and fails unless every
// result is a page of the site and the right page is in the top 10 for
// at least 90% as many queries as in the bench's own index of the same
// pages (want, its recall@10): a crawl whose pages were not indexed
// would find next to none. Ranking quality is the relevance figures' job.
func searchCrawled(ctx context.Context, in *instance, name, root string, judged []index.Judged, want float64) error {
	ask := func(q string) (searchAnswer, error) {
		var a searchAnswer
		body, err := json.Marshal(map[string]any{"query": q, "limit": 10})
		if err != nil {
			return a, err
		}
		return a, in.do(ctx, http.MethodPost, "/v2/search", body, &a)
	}
	// The index follows the cache: a search waits a second for it, then
	// answers with a warning while it is behind.
	t := time.Now()
	for {
		a, err := ask(judged[0].Query)
		if err != nil {
			return err
		}
		if a.Warning == "" {
			break
		}
		if time.Since(t) > time.Minute {
			return fmt.Errorf("the search index has not caught up with the crawl after a minute: %s", a.Warning)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The syncer converts and indexes the cached pages behind the crawl: the
	// work not done by the time the crawl completes is not in its pages/s.
	logf("%s: the search index had caught up %s after the crawl completed", name, time.Since(t).Round(time.Millisecond))
	var found, empty int
	var lat []time.Duration
	for _, j := range judged {
		ts := time.Now()
		a, err := ask(j.Query)
		lat = append(lat, time.Since(ts))
		if err != nil {
			return err
		}
		if len(a.Data.Web) == 0 {
			empty++
		}
		for _, r := range a.Data.Web {
			if !strings.HasPrefix(r.URL, root) {
				return fmt.Errorf("search %q answered %s, not a page of the crawled site %s", j.Query, r.URL, root)
			}
			if slices.Contains(j.Want, strings.TrimPrefix(r.URL, root)) {
				found++
				break
			}
		}
	}
	recall := float64(found) / float64(len(judged))
	logf("%s: POST /v2/search found the right page in the top 10 for %d of %d queries (recall %.3f; %.3f in the bench's index), %d answered nothing; p50 %.1f ms over HTTP",
		name, found, len(judged), recall, want, empty, ms(median(lat)))
	if recall < 0.9*want {
		return fmt.Errorf("the crawled pages are not found: POST /v2/search found the right page for %d of %d queries (recall %.3f, against %.3f in the bench's index of the same pages)",
			found, len(judged), recall, want)
	}
	return nil
}
