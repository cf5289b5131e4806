package cdp

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// header is what the multiplexer reads of a message: its top-level id,
// method and sessionId, and where the sessionId member lies so that it can
// be cut out. Everything else is skipped without being decoded: a message
// may carry a screenshot of tens of megabytes, and only these few keys
// decide where it goes. Written here rather than with encoding/json's
// Decoder because that decodes (and allocates) every value it passes.
type header struct {
	hasID     bool
	id        int64
	method    string
	sessionID string
	// sidFrom..sidTo is the sessionId member with one of its neighbouring
	// commas, so that cutting it leaves valid JSON.
	sidFrom, sidTo int
}

var errNotObject = errors.New("message must be a JSON object")

// scanHeader reads msg's top-level members.
func scanHeader(msg []byte) (header, error) {
	var h header
	i := skipSpace(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return h, errNotObject
	}
	i++
	prevComma := -1 // the comma before the current member, if any
	for {
		i = skipSpace(msg, i)
		if i >= len(msg) {
			return h, errNotObject
		}
		if msg[i] == '}' {
			if skipSpace(msg, i+1) != len(msg) {
				return h, errNotObject
			}
			return h, nil
		}
		memberFrom := i
		keyEnd, err := skipString(msg, i)
		if err != nil {
			return h, err
		}
		key := msg[i+1 : keyEnd-1]
		i = skipSpace(msg, keyEnd)
		if i >= len(msg) || msg[i] != ':' {
			return h, errNotObject
		}
		i = skipSpace(msg, i+1)
		valFrom := i
		if i, err = skipValue(msg, i); err != nil {
			return h, err
		}
		val := msg[valFrom:i]
		switch string(key) {
		case "id":
			n, err := strconv.ParseInt(string(val), 10, 64)
			if err == nil {
				h.hasID, h.id = true, n
			}
		case "method":
			h.method = unquote(val)
		case "sessionId":
			h.sessionID = unquote(val)
			h.sidFrom, h.sidTo = memberFrom, i
		}
		i = skipSpace(msg, i)
		if i >= len(msg) {
			return h, errNotObject
		}
		switch msg[i] {
		case ',':
			if string(key) == "sessionId" {
				if prevComma >= 0 {
					h.sidFrom = prevComma
				} else {
					h.sidTo = i + 1
				}
			}
			prevComma = i
			i++
		case '}':
			if string(key) == "sessionId" && prevComma >= 0 {
				h.sidFrom = prevComma
			}
		default:
			return h, errNotObject
		}
	}
}

// withoutSession returns msg with its sessionId member cut out.
func withoutSession(msg []byte, h header) []byte {
	if h.sessionID == "" {
		return msg
	}
	out := make([]byte, 0, len(msg)-(h.sidTo-h.sidFrom))
	out = append(out, msg[:h.sidFrom]...)
	return append(out, msg[h.sidTo:]...)
}

// withSession returns msg, a JSON object without a sessionId, with one.
func withSession(msg []byte, sessionID string) []byte {
	i := bytes.IndexByte(msg, '{')
	sid, _ := json.Marshal(sessionID)
	out := make([]byte, 0, len(msg)+len(sid)+14)
	out = append(out, msg[:i+1]...)
	out = append(out, `"sessionId":`...)
	out = append(out, sid...)
	rest := msg[i+1:]
	if j := skipSpace(rest, 0); j < len(rest) && rest[j] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}

func unquote(v []byte) string {
	if len(v) < 2 || v[0] != '"' {
		return ""
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1])
	}
	var s string
	json.Unmarshal(v, &s)
	return s
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string that starts at b[i].
func skipString(b []byte, i int) (int, error) {
	if i >= len(b) || b[i] != '"' {
		return 0, errNotObject
	}
	i++
	for {
		j := bytes.IndexAny(b[i:], "\"\\")
		if j < 0 {
			return 0, errNotObject
		}
		i += j
		if b[i] == '"' {
			return i + 1, nil
		}
		i += 2 // a backslash and the character it escapes
	}
}

// skipValue returns the index just past the JSON value that starts at b[i].
// Nested objects and arrays are skipped by counting brackets outside
// strings; the browser's and the validated client's messages are
// well-formed, and a malformed one only ends up refused or misrouted to no
// one.
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errNotObject
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			j := bytes.IndexAny(b[i:], "\"{}[]")
			if j < 0 {
				return 0, errNotObject
			}
			i += j
			switch b[i] {
			case '"':
				end, err := skipString(b, i)
				if err != nil {
					return 0, err
				}
				i = end
				continue
			case '{', '[':
				depth++
			default:
				depth--
			}
			i++
			if depth == 0 {
				return i, nil
			}
		}
		return 0, errNotObject
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\r' && b[j] != '\t' {
		j++
	}
	if j == i {
		return 0, errNotObject
	}
	return j, nil
}
