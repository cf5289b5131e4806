package cdp

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/trawler-dev/trawler/cdp/rawjson"
)

// header is what the multiplexer reads of a message: its top-level id,
// method and sessionId, and where the sessionId member lies so that it can
// be cut out. Everything else is skipped by rawjson, without being decoded:
// a message may carry a screenshot of tens of megabytes, and only these few
// keys decide where it goes.
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
	i := rawjson.SkipSpace(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return h, errNotObject
	}
	i++
	prevComma := -1 // the comma before the current member, if any
	for {
		i = rawjson.SkipSpace(msg, i)
		if i >= len(msg) {
			return h, errNotObject
		}
		if msg[i] == '}' {
			if rawjson.SkipSpace(msg, i+1) != len(msg) {
				return h, errNotObject
			}
			return h, nil
		}
		memberFrom := i
		keyEnd, err := rawjson.SkipString(msg, i)
		if err != nil {
			return h, errNotObject
		}
		key := msg[i+1 : keyEnd-1]
		i = rawjson.SkipSpace(msg, keyEnd)
		if i >= len(msg) || msg[i] != ':' {
			return h, errNotObject
		}
		i = rawjson.SkipSpace(msg, i+1)
		valFrom := i
		if i, err = rawjson.SkipValue(msg, i); err != nil {
			return h, errNotObject
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
		i = rawjson.SkipSpace(msg, i)
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
	if j := rawjson.SkipSpace(rest, 0); j < len(rest) && rest[j] != '}' {
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
