package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An answer over the limit comes back within it, still JSON, its cuts
// marked and a note on top; one within it comes back as it was.
func TestFitKeepsAnswersJSON(t *testing.T) {
	small := []byte(`{"success":true,"data":{"markdown":"short"}}`)
	assert.Equal(t, small, fit(small, 1000))

	page := map[string]any{"markdown": strings.Repeat("ä long line of Markdown. ", 4000), "metadata": map[string]any{"title": "T"}}
	var pages []any
	for range 30 {
		pages = append(pages, page)
	}
	raw, _ := json.Marshal(map[string]any{"success": true, "status": "completed", "data": pages})
	for _, limit := range []int{100_000, 10_000, 2_000} {
		out := fit(raw, limit)
		assert.LessOrEqual(t, len(out), limit)
		var doc map[string]any
		require.NoError(t, json.Unmarshal(out, &doc), "limit %d: not JSON", limit)
		assert.Equal(t, "completed", doc["status"], "limit %d", limit)
		assert.Contains(t, doc["truncated"], "page job results with skip and limit")
		assert.Contains(t, string(out), "more characters cut")
	}
	// So small a limit that only lists cut short fit.
	out := fit(raw, 1_000)
	assert.LessOrEqual(t, len(out), 1_000)
	assert.Contains(t, string(out), "more items cut")
}
