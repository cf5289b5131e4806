package extract

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestExtractShareIsFair(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		sizes  []int
		budget int
		want   []int
	}{
		{"all fit", []int{10, 20, 30}, 100, []int{10, 20, 30}},
		{"small pages leave room to large ones", []int{10, 500, 500}, 310, []int{10, 150, 150}},
		{"even cut", []int{400, 400}, 300, []int{150, 150}},
		{"one page", []int{1000}, 256, []int{256}},
		{"no budget", []int{5, 5}, 0, []int{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, share(tc.sizes, tc.budget))
		})
	}
}

func TestExtractPromptTrimsPagesToTheBudget(t *testing.T) {
	t.Parallel()
	pages := []page{
		{url: "http://a.test/short", markdown: "Short page."},
		{url: "http://a.test/long", markdown: strings.Repeat("A long line of text.\n", 2000)},
	}
	text, trimmed := prompt(defaultSystem, "What?", nil, pages, func(int) int { return 500 })
	assert.True(t, trimmed, "the long page is cut")
	assert.Contains(t, text, "Request: What?")
	assert.Contains(t, text, "# Page 1: http://a.test/short\n\nShort page.")
	assert.Contains(t, text, "# Page 2: http://a.test/long\n\n")
	assert.Less(t, len(text), 500*4+1000, "the pages stay within the budget")

	_, trimmed = prompt(defaultSystem, "What?", nil, pages, func(int) int { return 100000 })
	assert.False(t, trimmed, "nothing is cut when everything fits")
}

func TestExtractWildcardMatchesPagesUnderItsPath(t *testing.T) {
	t.Parallel()
	base, _ := url.Parse("https://shop.test/products/")
	for _, tc := range []struct {
		link       string
		subdomains bool
		want       bool
	}{
		{"https://shop.test/products/", false, true},
		{"https://shop.test/products/alpha", false, true},
		{"https://shop.test/products/a/b?x=1", false, true},
		{"https://shop.test/productsx", false, false},
		{"https://shop.test/about", false, false},
		{"http://shop.test/products/alpha", false, false},
		{"https://shop.test:8443/products/alpha", false, false},
		{"https://eu.shop.test/products/alpha", true, true},
		{"https://eu.shop.test/products/alpha", false, false},
		{"https://evilshop.test/products/alpha", true, false},
		{"https://other.test/products/alpha", true, false},
	} {
		assert.Equal(t, tc.want, under(tc.link, base, tc.subdomains), "%s (subdomains %v)", tc.link, tc.subdomains)
	}
}
