package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/trawler-dev/trawler/scrape/changetracking"
)

const (
	// changePageBytes is the size of the page whose versions are diffed.
	changePageBytes = 100 << 10
	// changeShare is the share of the page's lines the second version
	// edits, inserts or deletes.
	changeShare = 0.03
	// changeRounds is how many times the diff is timed; the figure is the
	// median.
	changeRounds = 31
)

// changeTrackingDiff times the git-diff mode of change tracking: the diff
// (text and parse-diff structure, through changetracking.DiffMarkdown, the
// function trackChanges calls) of two versions of a 100 KB page whose
// second version changes a few percent of its lines. Goal: a median under
// 10 ms.
func (b *bench) changeTrackingDiff(ctx context.Context, _ *instance) error {
	previous, current, changed := changeVersions()
	logf("changetracking: a %d KB page of %d lines, %d of them changed; %d rounds", len(previous)>>10,
		strings.Count(previous, "\n"), changed, changeRounds)
	var times []time.Duration
	var diff *changetracking.Diff
	for range changeRounds {
		if err := ctx.Err(); err != nil {
			return err
		}
		start := time.Now()
		diff = changetracking.DiffMarkdown(previous, current)
		times = append(times, time.Since(start))
	}
	if diff == nil || len(diff.JSON.Files) != 1 {
		return errors.New("changetracking: the two versions gave no diff")
	}
	f := diff.JSON.Files[0]
	logf("changetracking: %d hunks, +%d -%d lines, %d KB of diff text", len(f.Chunks), f.Additions, f.Deletions,
		len(diff.Text)>>10)
	figure("changetracking_diff_ms_p50", float64(median(times).Microseconds())/1000, "ms")
	return nil
}

// changeVersions makes a page of Markdown (headings, paragraphs, lists and
// table rows, like a converted article) and a second version of it with
// changeShare of its lines edited, inserted or deleted; it returns both
// and how many lines changed. The same seed gives the same pages on every
// run.
func changeVersions() (previous, current string, changed int) {
	r := rand.New(rand.NewPCG(7, 11))
	words := strings.Fields(`trawler net haul harbour tide catch crew deck winch cod hake plaice skipper quota ` +
		`engine hull keel bow stern sonar chart course knot fathom bait ice market auction license season ` +
		`weather gale swell buoy beacon port starboard galley cabin mast rope cable reel drum otter beam`)
	sentence := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = words[r.IntN(len(words))]
		}
		return strings.ToUpper(s[0][:1]) + strings.Join(s, " ")[1:] + "."
	}
	var lines []string
	size := 0
	add := func(l string) {
		lines = append(lines, l)
		size += len(l) + 1
	}
	for section := 1; size < changePageBytes; section++ {
		add(fmt.Sprintf("## Section %d: %s", section, sentence(3)))
		add("")
		for range 2 + r.IntN(3) {
			add(sentence(25 + r.IntN(40)))
			add("")
		}
		for range 3 + r.IntN(4) {
			add("- " + sentence(6+r.IntN(8)))
		}
		add("")
		add("| Vessel | Catch | Port |")
		add("| --- | --- | --- |")
		for range 4 + r.IntN(6) {
			add(fmt.Sprintf("| %s | %d t | %s |", words[r.IntN(len(words))], r.IntN(900), words[r.IntN(len(words))]))
		}
		add("")
	}
	previous = strings.Join(lines, "\n")
	edited := make([]string, 0, len(lines))
	for _, l := range lines {
		if l == "" || r.Float64() >= changeShare {
			edited = append(edited, l)
			continue
		}
		changed++
		switch r.IntN(4) {
		case 0: // inserted after
			edited = append(edited, l, sentence(12))
		case 1: // deleted
		default: // a word changed
			f := strings.Fields(l)
			f[r.IntN(len(f))] = "updated"
			edited = append(edited, strings.Join(f, " "))
		}
	}
	return previous, strings.Join(edited, "\n"), changed
}
