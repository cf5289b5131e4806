package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	trawler "github.com/trawler-dev/trawler"
	"github.com/trawler-dev/trawler/docsearch"
)

// docsBuilds is how many times the documentation index is built and timed,
// after one untimed build.
const docsBuilds = 9

// docsSearch measures POST /v2/support/docs-search's retrieval: the time
// to build the documentation index (as the service does at start: cut
// the README and the searched pages of docs/ into sections and index
// them in memory),
// median of 9 builds after one untimed; and, over the judged questions of
// docsearch/testdata/questions.tsv, the share whose best section answers
// them (top-1) and whose best three hold one that does (top-3), as
// docsearch.Measure scores them. The misses and the latency of a search go
// to stderr.
func (b *bench) docsSearch(ctx context.Context, _ *instance) error {
	judged, err := loadDocsQuestions()
	if err != nil {
		return err
	}
	var ix *docsearch.Index
	var builds []time.Duration
	for i := range docsBuilds + 1 {
		if err := ctx.Err(); err != nil {
			return err
		}
		next, err := docsearch.New(trawler.Docs)
		if err != nil {
			return err
		}
		if i > 0 {
			builds = append(builds, next.BuildTime)
		}
		if ix != nil {
			ix.Close()
		}
		ix = next
	}
	defer ix.Close()
	slices.Sort(builds)
	build := builds[len(builds)/2]
	logf("docs index: %d pieces, built in %s (median of %d; fastest %s, slowest %s)", len(ix.Sections()), build,
		len(builds), builds[0], builds[len(builds)-1])
	figure("docs_index_build_ms", float64(build.Microseconds())/1000, "ms")

	start := time.Now()
	acc := docsearch.Measure(ix, judged)
	logf("docs search: %d questions in %s (%s each)", len(judged), time.Since(start).Round(time.Millisecond),
		(time.Since(start) / time.Duration(len(judged))).Round(time.Microsecond))
	for _, m := range acc.Misses {
		logf("docs search miss: %s", m)
	}
	figure("docs_search_top1", acc.Top1, "x")
	figure("docs_search_top3", acc.Top3, "x")
	return nil
}

// loadDocsQuestions reads docsearch/testdata/questions.tsv, the table the
// docsearch test measures.
func loadDocsQuestions() ([]docsearch.Judged, error) {
	_, file, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(file), "..", "..", "docsearch", "testdata", "questions.tsv")
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("the docs question table: %w", err)
	}
	defer f.Close()
	judged, err := docsearch.ReadJudged(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(judged) == 0 {
		return nil, fmt.Errorf("%s: no questions", path)
	}
	return judged, nil
}
