package tabs

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAdHosts(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"doubleclick.net": true, "stats.g.doubleclick.net": true, "www.google-analytics.com": true,
		"example.com": false, "notdoubleclick.net": false, "net": false,
	} {
		assert.Equal(t, want, IsAdHost(host), "IsAdHost(%q)", host)
	}
}

func TestLocale(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "de-DE,de;q=0.9,en;q=0.8", AcceptLanguage([]string{"de-DE", "de", "en"}), "AcceptLanguage")
	assert.Equal(t, "Asia/Tokyo", countryTimezone("jp"), "countryTimezone")
	assert.Empty(t, countryTimezone("ZZ"), "countryTimezone")
	l := DefaultLanguages("ZZ")
	assert.Equal(t, "en-US", l[0], "default languages %v", l)
}
