package browsers_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/trawler-dev/trawler/browsers"
)

// TRAWLER_CHROMIUM_FLAGS' --disable-features adds to Trawler's own list
// rather than replace it (Chromium reads the last such flag only).
func TestExtraFlagsKeepDisabledFeatures(t *testing.T) {
	t.Parallel()
	own, rest := browsers.WithExtra([]string{"--lang=fr", "--disable-features=Foo,Bar", "--window-size=800,600"})
	assert.Equal(t, []string{"--lang=fr", "--window-size=800,600"}, rest)
	var disabled []string
	for _, f := range own {
		if v, ok := strings.CutPrefix(f, "--disable-features="); ok {
			disabled = append(disabled, v)
		}
	}
	if assert.Len(t, disabled, 1, "one --disable-features flag") {
		assert.Contains(t, disabled[0], "WebUIOmniboxPopup")
		assert.True(t, strings.HasSuffix(disabled[0], ",Foo,Bar"), "%s", disabled[0])
	}
	own2, _ := browsers.WithExtra(nil)
	assert.Equal(t, browsers.ChromiumFlags, own2)
}

// VersionIn reads the version out of what chromium --version and Chrome
// print, and out of an image tag; nothing else passes for one.
func TestVersionIn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"Chromium 156.0.8078.114 built on Debian GNU/Linux 12 (bookworm)\n", "156.0.8078.114"},
		{"Google Chrome 131.0.6778.85 \n", "131.0.6778.85"},
		{"156.0.8078.114", "156.0.8078.114"},
		{"latest", ""},
		{"Chromium 156.0.8078", ""},
		{"v1.2.3.4", ""},
		{"1.2.3.x", ""},
		{"", ""},
	} {
		assert.Equal(t, tc.want, browsers.VersionIn(tc.in), "VersionIn(%q)", tc.in)
	}
}
