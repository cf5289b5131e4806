// Package rawjson reads the few members it is asked for out of JSON text and skips the rest
// without decoding it. It serves the CDP multiplexer, which routes each message by its id, method
// and sessionId, and the profile helper, which takes one string out of a reply: the messages may
// carry strings of many megabytes (a screenshot, an origin's storage) beside those members.
//
// It is written here rather than taken from a library because none is as fast on such strings and
// as strict. It looks for a string's closing quote with bytes.IndexByte and copies the runs between
// escapes whole, where encoding/json's Decoder decodes (and allocates) every value it passes and
// gjson (v1.20) steps through a string byte by byte, some twenty times slower on the megabytes of
// a profile capture's answer; and it reports JSON it cannot read, which gjson leaves unsaid.
package rawjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrSyntax is the error for JSON text that cannot be read.
var ErrSyntax = errors.New("malformed JSON")

// Member returns the raw value of the member key of the JSON object obj, or nil when obj has no
// such member or is no object. Values are skipped, not decoded: only their strings' quotes and the
// brackets outside strings are looked at, so a member after a string of megabytes costs a search
// for its closing quote. Malformed JSON is not always noticed: obj must come from the browser or be
// checked by its reader.
func Member(obj []byte, key string) []byte {
	var found []byte
	EachMember(obj, func(k, v []byte) bool {
		if string(k) == key || (bytes.IndexByte(k, '\\') >= 0 && unquoteKey(k) == key) {
			found = v
			return false
		}
		return true
	})
	return found
}

// EachMember calls fn with the raw key (without its quotes, escapes left as they are) and the raw
// value of each member of the JSON object obj, until fn returns false. It returns the index just
// past the object, or where it stopped.
func EachMember(obj []byte, fn func(key, val []byte) bool) (int, error) {
	i := SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return 0, ErrSyntax
	}
	i = SkipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return i + 1, nil
	}
	for {
		end, err := SkipString(obj, i)
		if err != nil {
			return 0, err
		}
		key := obj[i+1 : end-1]
		i = SkipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return 0, ErrSyntax
		}
		i = SkipSpace(obj, i+1)
		from := i
		if i, err = SkipValue(obj, i); err != nil {
			return 0, err
		}
		if !fn(key, obj[from:i]) {
			return i, nil
		}
		i = SkipSpace(obj, i)
		if i >= len(obj) {
			return 0, ErrSyntax
		}
		switch obj[i] {
		case ',':
			i = SkipSpace(obj, i+1)
		case '}':
			return i + 1, nil
		default:
			return 0, ErrSyntax
		}
	}
}

// EachElement calls fn with the raw value of each element of the JSON array arr, until fn returns
// an error, which it returns.
func EachElement(arr []byte, fn func(val []byte) error) error {
	i := SkipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return ErrSyntax
	}
	i = SkipSpace(arr, i+1)
	if i < len(arr) && arr[i] == ']' {
		return nil
	}
	for {
		from := i
		var err error
		if i, err = SkipValue(arr, i); err != nil {
			return err
		}
		if err := fn(arr[from:i]); err != nil {
			return err
		}
		i = SkipSpace(arr, i)
		if i >= len(arr) {
			return ErrSyntax
		}
		switch arr[i] {
		case ',':
			i = SkipSpace(arr, i+1)
		case ']':
			return nil
		default:
			return ErrSyntax
		}
	}
}

func unquoteKey(k []byte) string {
	var s string
	json.Unmarshal(append(append([]byte{'"'}, k...), '"'), &s)
	return s
}

// SkipSpace returns the index of the first byte from b[i] on that is not white space.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// SkipString returns the index just past the string that starts at b[i]. It looks for quotes
// alone and counts the backslashes before each, which is much faster on long strings than stepping
// through escapes (or looking for quotes and backslashes both).
func SkipString(b []byte, i int) (int, error) {
	if i >= len(b) || b[i] != '"' {
		return 0, ErrSyntax
	}
	for j := i + 1; ; {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, ErrSyntax
		}
		j += k
		n := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return j + 1, nil
		}
		j++
	}
}

// SkipValue returns the index just past the JSON value that starts at b[i]. Nested objects and
// arrays are skipped by counting brackets outside strings, of whichever kind: a malformed value
// is not always noticed.
func SkipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, ErrSyntax
	}
	switch b[i] {
	case '"':
		return SkipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				end, err := SkipString(b, i)
				if err != nil {
					return 0, err
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return 0, ErrSyntax
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\r' && b[j] != '\t' {
		j++
	}
	if j == i {
		return 0, ErrSyntax
	}
	return j, nil
}

// Unquote decodes the JSON string raw (with its quotes) into UTF-8, as encoding/json would (an
// unpaired surrogate becomes U+FFFD), copying the runs between escapes whole.
func Unquote(raw []byte) ([]byte, error) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil, ErrSyntax
	}
	s := raw[1 : len(raw)-1]
	out := make([]byte, 0, len(s))
	for {
		k := bytes.IndexByte(s, '\\')
		if k < 0 {
			return append(out, s...), nil
		}
		out = append(out, s[:k]...)
		s = s[k:]
		if len(s) < 2 {
			return nil, ErrSyntax
		}
		switch c := s[1]; c {
		case '"', '\\', '/':
			out = append(out, c)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(s[2:])
			if !ok {
				return nil, ErrSyntax
			}
			s = s[6:]
			if utf16.IsSurrogate(r) {
				r2, ok2 := rune(-1), false
				if len(s) >= 6 && s[0] == '\\' && s[1] == 'u' {
					r2, ok2 = hex4(s[2:])
				}
				if dec := utf16.DecodeRune(r, r2); ok2 && dec != utf8.RuneError {
					r = dec
					s = s[6:]
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return nil, ErrSyntax
		}
		s = s[2:]
	}
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
