package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/trawler-dev/trawler/parse"
)

// parseRounds is how many times the parse phase times each side; it
// reports medians.
const parseRounds = 5

// parseMeasure is one measurement of the parse phase; it prints its own
// figures.
type parseMeasure struct {
	name string
	run  func(context.Context) error
}

// parseMeasures are the parse phase's measurements, run in order: PDFs
// against pdftotext, DOCX and XLSX throughput (docbench.go), and the peak
// memory of 50 MB uploads to a trawler serve process.
func (b *bench) parseMeasures() []parseMeasure {
	return []parseMeasure{
		{"pdf", measurePDF},
		{"office", func(ctx context.Context) error { return b.officeThroughput(ctx, nil) }},
		{"upload", func(ctx context.Context) error { return b.uploadMemory(ctx, nil) }},
	}
}

// parseThroughput is the parse phase: document parsing, in this process,
// without the service.
func (b *bench) parseThroughput(ctx context.Context, _ *instance) error {
	for _, m := range b.parseMeasures() {
		if err := m.run(ctx); err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
	}
	return nil
}

// manual is one PDF of the corpus, read into memory.
type manual struct {
	parse.Manual
	data []byte
}

// pdfCorpus reads parse.Manuals, the manuals the parse tests check too.
func pdfCorpus() ([]manual, error) {
	var out []manual
	var missing []string
	for _, m := range parse.Manuals {
		data, err := parse.ReadManual(m)
		if os.IsNotExist(err) {
			missing = append(missing, m.Package)
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, manual{m, data})
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, fmt.Errorf("the PDF corpus is missing: apt-get install %s", strings.Join(slices.Compact(missing), " "))
	}
	return out, nil
}

// timeRound times one round, after a collection so that the garbage of
// what ran before is not its cost.
func timeRound(ctx context.Context, round func() error) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	runtime.GC()
	start := time.Now()
	err := round()
	return time.Since(start), err
}

// pdftotext runs poppler's pdftotext -layout on data, as a reader of the
// same bytes in memory would (standard input to standard output).
func pdftotext(ctx context.Context, data []byte) (string, error) {
	cmd := exec.CommandContext(ctx, "pdftotext", "-layout", "-", "-")
	cmd.Stdin = bytes.NewReader(data)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("pdftotext: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// measurePDF parses the manuals with parse.PDF and with pdftotext -layout,
// alternately, parseRounds times each, and reports pages per second of
// each (total pages over the median round's time), their ratio, and the
// word F1 of parse.PDF's Markdown against pdftotext's text over the whole
// corpus (parse.WordF1, a fraction, printed with the ratio unit for its
// three decimals).
func measurePDF(ctx context.Context) error {
	if _, err := exec.LookPath("pdftotext"); err != nil {
		return fmt.Errorf("pdftotext is missing: apt-get install poppler-utils")
	}
	corpus, err := pdfCorpus()
	if err != nil {
		return err
	}
	// One untimed pass of each side: the outputs for F1, page counts, and
	// warm caches.
	pages := 0
	var got, want strings.Builder
	for _, m := range corpus {
		doc, err := parse.PDF(ctx, m.data)
		if err != nil {
			return fmt.Errorf("%s: %w", m.Path, err)
		}
		text, err := pdftotext(ctx, m.data)
		if err != nil {
			return fmt.Errorf("%s: %w", m.Path, err)
		}
		pages += doc.Pages
		logf("parse: %s: %d pages, word F1 %.4f against pdftotext -layout, %d warnings", m.Name, doc.Pages, parse.WordF1(doc.Markdown, text), len(doc.Warnings))
		got.WriteString(doc.Markdown + "\n")
		want.WriteString(text + "\n")
	}
	ourRound := func() error {
		for _, m := range corpus {
			if _, err := parse.PDF(ctx, m.data); err != nil {
				return err
			}
		}
		return nil
	}
	theirRound := func() error {
		for _, m := range corpus {
			if _, err := pdftotext(ctx, m.data); err != nil {
				return err
			}
		}
		return nil
	}
	var ours, theirs []time.Duration
	for i := range parseRounds {
		// Alternate which side goes first.
		for k := range 2 {
			round, times := ourRound, &ours
			if (i+k)%2 == 1 {
				round, times = theirRound, &theirs
			}
			d, err := timeRound(ctx, round)
			if err != nil {
				return err
			}
			*times = append(*times, d)
		}
	}
	o, t := median(ours), median(theirs)
	logf("parse: %d manuals, %d pages; per round parse.PDF %s (min %s), pdftotext %s (min %s)",
		len(corpus), pages, o.Round(time.Millisecond), ours[0].Round(time.Millisecond), t.Round(time.Millisecond), theirs[0].Round(time.Millisecond))
	op := float64(pages) / o.Seconds()
	tp := float64(pages) / t.Seconds()
	figure("pdf_pages_per_s", op, "pages/s")
	figure("pdftotext_pages_per_s", tp, "pages/s")
	figure("pdf_over_pdftotext", op/tp, "x")
	figure("pdf_word_f1_vs_pdftotext", parse.WordF1(got.String(), want.String()), "x")
	return nil
}
