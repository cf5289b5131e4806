package service_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/model/modeltest"
)

const docsPath = "/v2/support/docs-search"

// evidenceOf returns a docs answer's evidence as pathOrUrl → reason, and
// the paths in order.
func evidenceOf(t *testing.T, r response) (map[string]string, []string) {
	t.Helper()
	list, ok := r.Body["evidence"].([]any)
	require.True(t, ok, "evidence is an array: %s", r.Raw)
	reasons := map[string]string{}
	var paths []string
	for _, e := range list {
		m := e.(map[string]any)
		p, _ := m["pathOrUrl"].(string)
		reasons[p], _ = m["reason"].(string)
		paths = append(paths, p)
	}
	return reasons, paths
}

// Without a language model, a question is answered with the sentences of
// the best section that hold its words, the three best sections as
// evidence, and no tokens. It is not a job: the activity log stays empty.
func TestDocsSearchWithoutModel(t *testing.T) {
	t.Parallel()
	ts := start(t, nil)
	r := ts.do("POST", docsPath, keyAcme, map[string]any{"question": "  What does lockdown do?  "})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	assert.Equal(t, true, r.Body["success"])
	_, err := uuid.Parse(r.str("requestId"))
	assert.NoError(t, err, "requestId is a UUID")
	assert.Contains(t, r.str("answer"), "`lockdown` answers from the cache only and never contacts the target",
		"the answer quotes the documentation")
	reasons, paths := evidenceOf(t, r)
	require.Len(t, paths, 3)
	assert.Equal(t, "docs/api.md#scrape", paths[0])
	assert.Equal(t, `The section docs/api.md › Scrape, which mentions "lockdown".`, reasons["docs/api.md#scrape"])
	assert.Equal(t, map[string]any{"inputTokens": 0.0, "outputTokens": 0.0, "totalTokens": 0.0}, r.Body["usage"])
	assert.GreaterOrEqual(t, r.Body["durationMs"], 0.0)

	act := ts.do("GET", "/v2/team/activity", keyAcme, nil)
	require.Equal(t, 200, act.Status, "%s", act.Raw)
	assert.Empty(t, act.Body["data"], "docs search writes no activity entry")

	nothing := ts.do("POST", docsPath, keyAcme, map[string]any{"question": "how do I do it?"})
	require.Equal(t, 200, nothing.Status, "%s", nothing.Raw)
	assert.Equal(t, "The documentation has nothing on this question.", nothing.str("answer"))
	_, paths = evidenceOf(t, nothing)
	assert.Empty(t, paths)

	unauth := ts.do("POST", docsPath, "", map[string]any{"question": "what does lockdown do"})
	assert.Equal(t, 401, unauth.Status, "the API key is required")
}

// With a language model, the model answers from the four best sections,
// which the prompt holds with their references; the evidence is the
// sections it cites, the usage its tokens, recorded for the team. A model
// that fails is a 502.
func TestDocsSearchWithModel(t *testing.T) {
	t.Parallel()
	llm := modeltest.Start(t)
	ts := startWithModel(t, llm, nil)
	answer := "Lockdown answers a scrape from the cache only and never contacts the site; a miss is 404 SCRAPE_LOCKDOWN_CACHE_MISS.\nSources: docs/api.md#scrape"
	llm.Enqueue(modeltest.Reply{Content: answer, PromptTokens: 1200, CompletionTokens: 40})
	r := ts.do("POST", docsPath, keyAcme, map[string]any{"question": "what does lockdown do"})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	assert.Equal(t, answer, r.str("answer"))
	assert.Equal(t, map[string]any{"inputTokens": 1200.0, "outputTokens": 40.0, "totalTokens": 1240.0}, r.Body["usage"])
	reasons, paths := evidenceOf(t, r)
	assert.Equal(t, []string{"docs/api.md#scrape"}, paths, "the evidence is the sections the answer cites")
	assert.Contains(t, reasons["docs/api.md#scrape"], "docs/api.md › Scrape")

	reqs := llm.Requests()
	require.Len(t, reqs, 1)
	user, system := reqs[0].User(), reqs[0].System()
	assert.Contains(t, system, "Answer only from the documentation sections")
	assert.Contains(t, user, "Question: what does lockdown do")
	assert.Contains(t, user, "[1] docs/api.md#scrape (docs/api.md › Scrape)")
	assert.Contains(t, strings.Join(strings.Fields(user), " "), "`lockdown` answers from the cache only and never contacts the target")
	assert.Contains(t, user, "\n[4] ", "four sections")
	assert.NotContains(t, user, "\n[5] ")
	assert.NotContains(t, user, "# Trawler\n", "sections, not whole documents")

	usage := ts.do("GET", "/v2/team/token-usage", keyAcme, nil)
	require.Equal(t, 200, usage.Status, "%s", usage.Raw)
	assert.EqualValues(t, 1240, usage.Body["data"].(map[string]any)["usedTokens"], "the call's tokens count for the team")

	llm.Enqueue(modeltest.Reply{Status: 400, Content: "the prompt is not acceptable"})
	failed := ts.do("POST", docsPath, keyAcme, map[string]any{"question": "how are webhooks signed"})
	assert.Equal(t, 502, failed.Status, "%s", failed.Raw)
	assert.Equal(t, "UPSTREAM_ERROR", failed.str("code"))
	assert.Contains(t, failed.str("error"), "the prompt is not acceptable")
}

// A question is required, a string, and 1 to 2000 characters once
// trimmed; each mistake is a 400 naming question.
func TestDocsSearchRefusesBadQuestions(t *testing.T) {
	t.Parallel()
	ts := start(t, nil)
	long := strings.Repeat("cookies ", 250)
	for _, tc := range []struct {
		name string
		body any
		want string
	}{
		{"missing", map[string]any{}, "question is required"},
		{"null", `{"question": null}`, "question is required"},
		{"empty", map[string]any{"question": ""}, "question must not be empty"},
		{"blank", map[string]any{"question": " \n\t "}, "question must not be empty"},
		{"too long", map[string]any{"question": long[:2000] + "x"}, "question must be at most 2000 characters, got 2001"},
		{"number", `{"question": 42}`, "question must be a string"},
		{"array", `{"question": ["a"]}`, "question must be a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.do("POST", docsPath, keyAcme, tc.body)
			require.Equal(t, 400, r.Status, "%s", r.Raw)
			assert.Equal(t, "BAD_REQUEST", r.str("code"))
			assert.Contains(t, r.str("error"), tc.want)
			details, _ := r.Body["details"].([]any)
			require.Len(t, details, 1, "%s", r.Raw)
			assert.Equal(t, []any{"question"}, details[0].(map[string]any)["path"])
		})
	}
	unknown := ts.do("POST", docsPath, keyAcme, map[string]any{"question": "what is lockdown", "topic": "cache"})
	assert.Equal(t, 400, unknown.Status)
	assert.Contains(t, unknown.str("error"), `"topic"`)
	tagged := ts.do("POST", docsPath, keyAcme, map[string]any{"question": "what is lockdown", "origin": "js-sdk"})
	assert.Equal(t, 200, tagged.Status, "origin is accepted: %s", tagged.Raw)
	edge := ts.do("POST", docsPath, keyAcme, map[string]any{"question": "  " + strings.Repeat("cookies ", 249) + "cookies!  "})
	assert.Equal(t, 200, edge.Status, "2000 characters after trimming: %s", edge.Raw)
	query := ts.do("POST", docsPath+"?question=x", keyAcme, map[string]any{"question": "what is lockdown"})
	assert.Equal(t, 400, query.Status, "no query parameters")
}
