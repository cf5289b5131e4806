package index

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Judged is a query with the pages that answer it (paths under a base URL).
type Judged struct {
	Query string
	Want  []string
}

// Relevance is how well the index answered a table of judged queries.
type Relevance struct {
	// MRR is the mean reciprocal rank of the first right page in the top
	// 10; Recall the share of queries with a right page in the top 10.
	MRR, Recall float64
	// Misses describe the queries whose right page was not first.
	Misses []string
}

// Measure runs every judged query as team's web search and scores the
// answers; the relevance test and make bench share it.
func Measure(ctx context.Context, ix Backend, team string, judged []Judged, base string) Relevance {
	var r Relevance
	for _, j := range judged {
		q, err := ParseQuery(j.Query)
		if err != nil {
			r.Misses = append(r.Misses, fmt.Sprintf("%q: %v", j.Query, err))
			continue
		}
		hits, err := ix.Search(ctx, Request{Team: team, Query: q, Limit: 10})
		if err != nil {
			r.Misses = append(r.Misses, fmt.Sprintf("%q: %v", j.Query, err))
			continue
		}
		rank := 0
		var got []string
		for i, h := range hits {
			path := strings.TrimPrefix(h.URL, base)
			got = append(got, path)
			if rank == 0 && slices.Contains(j.Want, path) {
				rank = i + 1
			}
		}
		if rank > 0 {
			r.MRR += 1 / float64(rank)
			r.Recall++
		}
		if rank != 1 {
			r.Misses = append(r.Misses, fmt.Sprintf("%q: want %s at rank %d; top 3 %v", j.Query,
				strings.Join(j.Want, "|"), rank, got[:min(3, len(got))]))
		}
	}
	if n := float64(len(judged)); n > 0 {
		r.MRR /= n
		r.Recall /= n
	}
	return r
}
