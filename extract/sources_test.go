package extract

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSourcesByField(t *testing.T) {
	pages := []page{
		{url: "https://shop.test/rope", markdown: "# Tarred   rope\n\nA rope, 18.5 euros."},
		{url: "https://shop.test/lantern", markdown: "# Storm lantern\n\nCosts 64 euros."},
	}
	data := json.RawMessage(`{"products":[{"name":"tarred rope","price":18.5,"inStock":true},
		{"name":"Storm Lantern","price":64.0}],"summary":"Two things a sailor needs","none":null}`)
	got := sourcesOf(data, pages)
	both := []string{"https://shop.test/rope", "https://shop.test/lantern"}
	assert.Equal(t, Sources{
		"products[0].name":    {"https://shop.test/rope"},
		"products[0].price":   {"https://shop.test/rope"},
		"products[0].inStock": both, // no text to find: every page read
		"products[1].name":    {"https://shop.test/lantern"},
		"products[1].price":   {"https://shop.test/lantern"},
		"summary":             both, // the model's own words
		"none":                both,
	}, got)

	// An extract stored as the list of pages it read answers by field too.
	legacy, ok := legacySources([]byte(`["https://shop.test/rope"]`), json.RawMessage(`{"a":"x","b":[1]}`))
	assert.True(t, ok)
	assert.Equal(t, Sources{"a": {"https://shop.test/rope"}, "b[0]": {"https://shop.test/rope"}}, legacy)
}
