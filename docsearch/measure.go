package docsearch

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Judged is a question with the sections that answer it (Refs:
// "docs/api.md#profiles").
type Judged struct {
	Question string
	Want     []string
}

// ReadJudged reads a table of judged questions: one a line, the question,
// a tab, and the sections that answer it separated by '|'; blank lines
// and lines starting with '#' are skipped.
func ReadJudged(r io.Reader) ([]Judged, error) {
	var out []Judged
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		q, want, ok := strings.Cut(line, "\t")
		if !ok || strings.TrimSpace(q) == "" || strings.TrimSpace(want) == "" {
			return nil, fmt.Errorf("line %d: want a question, a tab and the sections that answer it", n)
		}
		out = append(out, Judged{Question: strings.TrimSpace(q), Want: strings.Split(strings.TrimSpace(want), "|")})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Accuracy is how well the index answered a table of judged questions.
type Accuracy struct {
	// Top1 is the share of questions whose best section answers them;
	// Top3 the share with an answering section among the best three.
	Top1, Top3 float64
	// Misses describe the questions whose best section does not answer
	// them.
	Misses []string
}

// Measure searches every judged question and scores the answers; the test
// and make bench share it.
func Measure(ix *Index, judged []Judged) Accuracy {
	var a Accuracy
	for _, j := range judged {
		hits, err := ix.Search(j.Question, 3)
		if err != nil {
			a.Misses = append(a.Misses, fmt.Sprintf("%q: %v", j.Question, err))
			continue
		}
		rank := 0
		var got []string
		for i, h := range hits {
			got = append(got, h.Ref())
			if rank == 0 && slices.Contains(j.Want, h.Ref()) {
				rank = i + 1
			}
		}
		switch rank {
		case 1:
			a.Top1++
			a.Top3++
			continue
		case 2, 3:
			a.Top3++
		}
		a.Misses = append(a.Misses, fmt.Sprintf("%q: want %s, got %s", j.Question, strings.Join(j.Want, "|"),
			strings.Join(got, ", ")))
	}
	if n := float64(len(judged)); n > 0 {
		a.Top1 /= n
		a.Top3 /= n
	}
	return a
}
