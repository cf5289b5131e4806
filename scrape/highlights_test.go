package scrape

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHighlights(t *testing.T) {
	t.Parallel()
	md := "# Nets\n\nTrawlers drag nets along the sea floor. Beam trawls reach 200 m.\n\n" +
		"The harbour opens at dawn. Boats leave in the morning and come back at night.\n\n" +
		"- Otter trawls use doors to keep the net open.\n- Pair trawling uses two boats.\n\n" +
		"```go\nfmt.Println(\"nets\")\n```\n\n" +
		"Fishing quotas limit how much cod a boat may land. Cod stocks recovered after 2010.\n"
	got := highlights(md, "how deep do beam trawls go?")
	assert.Contains(t, got, "Beam trawls reach 200 m.", "the passage that answers")
	for _, p := range strings.Split(got, "\n\n") {
		assert.Contains(t, md, p, "each passage verbatim")
	}
	assert.Equal(t, "Fishing quotas limit how much cod a boat may land. Cod stocks recovered after 2010.",
		highlights(md, "cod stocks"))
	assert.Contains(t, highlights(md, "pair trawling"), "- Pair trawling uses two boats.")
	assert.Empty(t, highlights(md, "volcanoes"), "no word of the query: no passage")
	assert.Empty(t, highlights(md, "the of"), "stop words only")
	assert.LessOrEqual(t, strings.Count(highlights(md, "trawls nets boats cod"), "\n\n"), highlightPassages-1)
}
