package scrape

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestCacheKey(t *testing.T) {
	t.Parallel()
	o := DefaultOptions()
	base := cacheKey("http://Example.com/a?b=2&a=1#frag", &o)
	assert.Equal(t, base, cacheKey("http://example.com/a?a=1&b=2", &o), "host case, query order and fragments must not change the key")
	m := o
	m.Mobile = true
	assert.NotEqual(t, base, cacheKey("http://example.com/a?a=1&b=2", &m), "mobile must change the key")
	w := o
	w.WaitFor = time.Second
	assert.NotEqual(t, base, cacheKey("http://example.com/a?a=1&b=2", &w), "waitFor must change the key")
	f := o
	f.Formats = []Format{{Type: "links"}}
	assert.Equal(t, base, cacheKey("http://example.com/a?a=1&b=2", &f), "formats other than screenshot must not change the key: one entry serves them all")
}
