package api

import (
	"strings"
	"testing"
)

func TestExtractURLs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string // want: the normalised URL, or a fragment of the problem
		ok       bool
	}{
		{"https://example.com/a", "https://example.com/a", true},
		{"https://example.com/*", "https://example.com/*", true},
		{"https://Example.com/blog/*", "https://example.com/blog/*", true},
		{"example.com/docs/*", "http://example.com/docs/*", true},
		{"https://example.com/blog*", "may hold * only as a final /*", false},
		{"https://example.com/*/a", "may hold * only as a final /*", false},
		{"https://example.com/a?q=/*", "must end its path with /*", false},
		{"https://example.com/a#x/*", "must end its path with /*", false},
		{"ftp://example.com/*", "absolute http or https URL", false},
		{"/*", "absolute http or https URL", false},
	} {
		got, p := checkExtractURL("urls[0]", tc.in)
		switch {
		case tc.ok && p != nil:
			t.Errorf("checkExtractURL(%q): %s, want %s", tc.in, p.Message, tc.want)
		case tc.ok && got != tc.want:
			t.Errorf("checkExtractURL(%q) = %q, want %q", tc.in, got, tc.want)
		case !tc.ok && p == nil:
			t.Errorf("checkExtractURL(%q) = %q, want a problem with %q", tc.in, got, tc.want)
		case !tc.ok && !strings.Contains(p.Message, tc.want):
			t.Errorf("checkExtractURL(%q): %q, want %q", tc.in, p.Message, tc.want)
		}
	}
}
