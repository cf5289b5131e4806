package content_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/trawler-dev/trawler/content"
)

func TestForModel(t *testing.T) {
	t.Parallel()
	page := "https://docs.example/library/asyncio.html"
	for _, tc := range []struct{ in, want string }{
		{`## [Coroutines](#id1)`, `## Coroutines`},
		{`see [the heading](https://docs.example/library/asyncio.html#tasks "Permalink")`, `see the heading`},
		{"[`asyncio.run()`](https://docs.example/library/runner.html#asyncio.run \"asyncio.run\")", "[`asyncio.run()`](/library/runner.html#asyncio.run)"},
		{`![A boat](https://docs.example/img/boat.png "boat")`, `![A boat](/img/boat.png)`},
		{`[elsewhere](https://other.example/x "t")`, `[elsewhere](https://other.example/x)`},
		{`[port differs](https://docs.example:8443/x)`, `[port differs](https://docs.example:8443/x)`},
		{"```\n[kept](https://docs.example/x \"t\")\n```\nafter [x](#y)", "```\n[kept](https://docs.example/x \"t\")\n```\nafter x"},
		{`[escaped "quote"](https://docs.example/a "say \"hi\"")`, `[escaped "quote"](/a)`},
	} {
		assert.Equal(t, tc.want, content.ForModel(tc.in, page), tc.in)
	}
	assert.Equal(t, "[a](https://docs.example/x)", content.ForModel("[a](https://docs.example/x)", ""), "no page URL: unchanged")
	assert.Equal(t, "https://docs.example", content.Origin(page))
}
