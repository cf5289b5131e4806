package discover

import "testing"

func TestPageKey(t *testing.T) {
	same := [][2]string{
		{"https://Example.com/a?b=2&a=1#top", "https://example.com/a?a=1&b=2"},
		{"http://example.com:80", "http://example.com/"},
		{"https://例え.jp/x", "https://xn--r8jz45g.jp/x"},
	}
	for _, c := range same {
		if a, b := PageKey(c[0]), PageKey(c[1]); a != b {
			t.Errorf("PageKey(%q) = %q, PageKey(%q) = %q; want one page", c[0], a, c[1], b)
		}
	}
	differ := [][2]string{
		{"https://example.com/a", "https://example.com/a/"},
		{"http://example.com/", "https://example.com/"},
		{"https://example.com/?a=1&a=2", "https://example.com/?a=2&a=1"},
	}
	for _, c := range differ {
		if PageKey(c[0]) == PageKey(c[1]) {
			t.Errorf("PageKey makes %q and %q one page", c[0], c[1])
		}
	}
}
