//go:build race

package index_test

// raceEnabled: the race detector slows the corpus conversion of the
// relevance test tenfold; make bench measures relevance instead.
const raceEnabled = true
