package wire

import "unicode/utf8"

// Truncate shortens s, something a client or a log line sent back, to at
// most n bytes and an ellipsis, cutting between characters; a string of n
// bytes or fewer is returned as it is.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n-- // not in the middle of a character
	}
	return s[:n] + "…"
}
