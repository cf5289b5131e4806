package scrape

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestAdHosts(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"doubleclick.net": true, "stats.g.doubleclick.net": true, "www.google-analytics.com": true,
		"example.com": false, "notdoubleclick.net": false, "net": false,
	} {
		assert.Equal(t, want, isAdHost(host), "isAdHost(%q)", host)
	}
}

func TestLocale(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "de-DE,de;q=0.9,en;q=0.8", acceptLanguage([]string{"de-DE", "de", "en"}), "acceptLanguage")
	assert.Equal(t, "Asia/Tokyo", countryTimezone("jp"), "countryTimezone")
	assert.Empty(t, countryTimezone("ZZ"), "countryTimezone")
	l := defaultLanguages("ZZ")
	assert.Equal(t, "en-US", l[0], "default languages %v", l)
}

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
