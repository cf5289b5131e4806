package docsearch

import "slices"

// glossary holds the words Trawler's documentation uses for things that
// users call otherwise: general vocabulary (abbreviations, networking and
// HTTP terms) and the few coined names the documents define, each with the
// definition it rests on. A question that uses a user's word is searched
// for the documentation's word too, as an alternative of the same weight.
// Matching is on analysed words (stems, stop words out), so a phrase must
// keep a word that is not a stop word ("logged in" would be "log").
//
// The entries were written after reading the retrieval's misses on the
// first questions of testdata/questions.tsv; the questions written after
// the list was settled are its check.
var glossary = []struct {
	users []string
	docs  string
}{
	// Requests are billed in credits (spec 8, conventions "Credits").
	{[]string{"cost", "price", "pay", "charge", "billed", "expensive"}, "credits"},
	// ttl is a session's "total session lifetime" (spec 4.7).
	{[]string{"time to live", "lifetime"}, "ttl"},
	// activityTtl is "idle seconds before the session is destroyed" (spec 4.7).
	{[]string{"idle", "inactive", "inactivity"}, "activityTtl"},
	// Networking: localhost is the loopback address; an internal network
	// is a private one.
	{[]string{"localhost"}, "loopback"},
	{[]string{"internal", "intranet"}, "private"},
	// A profile is "a team's named browser state: cookies ..., localStorage
	// and IndexedDB" (docs/api.md, Profiles): what keeps a login.
	{[]string{"cookies", "login"}, "profile"},
	// fullPage is a screenshot of the whole page.
	{[]string{"whole", "entire"}, "full"},
	// A signed webhook carries a signature (an HMAC).
	{[]string{"signed", "sign", "hmac"}, "signature"},
	{[]string{"id", "ids"}, "identifier"},
	// HTTP 429's reason phrase is "Too Many Requests".
	{[]string{"too many requests", "throttled"}, "RATE_LIMITED"},
	{[]string{"callback"}, "webhook"},
	// The team's activity log is its history of jobs.
	{[]string{"history"}, "activity"},
}

// expansions maps a term of the question to the documentation's words for
// the glossary entry it starts (a phrase's first term carries them).
func (ix *Index) expansions(question string) map[string][]word {
	seq := ix.sequence(question)
	out := map[string][]word{}
	for _, g := range glossary {
		docs := ix.words(g.docs + "\n" + identifierWords(g.docs))
		for _, u := range g.users {
			phrase := ix.sequence(u)
			if len(phrase) == 0 {
				continue
			}
			for i := 0; i+len(phrase) <= len(seq); i++ {
				if slices.Equal(seq[i:i+len(phrase)], phrase) {
					out[phrase[0]] = append(out[phrase[0]], docs...)
					break
				}
			}
		}
	}
	return out
}

// sequence is text's analysed terms in order, repeats kept.
func (ix *Index) sequence(text string) []string {
	var out []string
	for _, t := range ix.analyzer.Analyze([]byte(text)) {
		out = append(out, string(t.Term))
	}
	return out
}
