// Package transform measures the scrape content pipeline (content.Transform:
// the main-content filter and the Markdown) against the bare
// html-to-markdown conversion of the same pages, for the bench command.
package transform

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"github.com/trawler-dev/trawler/content"
)

// PythonDocs is where Debian's python3.11-doc package puts its HTML.
const PythonDocs = "/usr/share/doc/python3.11/html"

// MaxPages caps the corpus Corpus loads.
const MaxPages = 200

// Rounds is how many times Measure times each side; it reports medians.
const Rounds = 5

// pageURL is the URL every page is converted as (both sides resolve
// relative URLs against it).
const pageURL = "https://docs.python.org/3.11/library/index.html"

// Corpus loads up to MaxPages *.html pages from PythonDocs, spread evenly
// over the sorted file list, or, when that is absent, every page of
// content/testdata.
func Corpus() ([][]byte, error) {
	paths, err := htmlFiles(PythonDocs)
	if err != nil || len(paths) == 0 {
		_, file, _, _ := runtime.Caller(0)
		dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "content", "testdata")
		if paths, err = htmlFiles(dir); err != nil {
			return nil, fmt.Errorf("loading corpus: %w", err)
		}
	}
	if len(paths) == 0 {
		return nil, errors.New("loading corpus: no html pages found")
	}
	if len(paths) > MaxPages {
		step := float64(len(paths)) / MaxPages
		sample := make([]string, 0, MaxPages)
		for i := range MaxPages {
			sample = append(sample, paths[int(float64(i)*step)])
		}
		paths = sample
	}
	pages := make([][]byte, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("loading corpus: %w", err)
		}
		pages = append(pages, b)
	}
	return pages, nil
}

func htmlFiles(dir string) ([]string, error) {
	var paths []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".html") {
			paths = append(paths, path)
		}
		return nil
	})
	slices.Sort(paths)
	return paths, err
}

// Measure converts every page Rounds times with content.Transform
// (OnlyMainContent, Markdown only) and with the bare html-to-markdown
// conversion (ConvertString with the CommonMark and table plugins). The
// two sides alternate page by page, so that a busy machine slows both
// alike. It returns the Transform throughput in MiB of HTML per second
// (from the median round) and the median over rounds of the ratio of the
// Transform time to the bare time (lower is better; 1 means the filter and
// the extra outputs cost nothing, below 1 the main-content filter saves
// more than it costs).
func Measure(pages [][]byte) (transformMBps, ratio float64, err error) {
	if len(pages) == 0 {
		return 0, 0, errors.New("measure: no pages")
	}
	bare := converter.NewConverter(converter.WithPlugins(
		base.NewBasePlugin(),
		commonmark.NewCommonmarkPlugin(),
		table.NewTablePlugin(),
	))
	strs := make([]string, len(pages))
	total := 0
	for i, p := range pages {
		strs[i] = string(p)
		total += len(p)
	}
	opts := content.Options{OnlyMainContent: true, RemoveBase64Images: true, Want: content.Want{Markdown: true}}

	transformOne := func(i int) (time.Duration, error) {
		start := time.Now()
		if _, err := content.Transform(pages[i], pageURL, opts); err != nil {
			return 0, fmt.Errorf("transform: %w", err)
		}
		return time.Since(start), nil
	}
	bareOne := func(i int) (time.Duration, error) {
		start := time.Now()
		if _, err := bare.ConvertString(strs[i], converter.WithDomain(pageURL)); err != nil {
			return 0, fmt.Errorf("bare conversion: %w", err)
		}
		return time.Since(start), nil
	}

	var tt []time.Duration
	var ratios []float64
	for round := range Rounds + 1 { // round 0 warms up
		runtime.GC()
		var t, b time.Duration
		for i := range pages {
			first, second := transformOne, bareOne
			if (i+round)%2 == 1 {
				first, second = bareOne, transformOne
			}
			d1, err := first(i)
			if err != nil {
				return 0, 0, err
			}
			d2, err := second(i)
			if err != nil {
				return 0, 0, err
			}
			if (i+round)%2 == 1 {
				d1, d2 = d2, d1
			}
			t, b = t+d1, b+d2
		}
		if round > 0 {
			tt = append(tt, t)
			ratios = append(ratios, t.Seconds()/b.Seconds())
		}
	}
	slices.Sort(tt)
	slices.Sort(ratios)
	return float64(total) / (1 << 20) / tt[len(tt)/2].Seconds(), ratios[len(ratios)/2], nil
}
