package cdp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/trawler-dev/trawler/cdp/rawjson"
)

// Command is one command of a session's client, as the proxy understood
// it. What reaches the browser is Command.encode's re-encoding of it, never
// the client's bytes: the browser can only run what the policy judged.
type Command struct {
	ID     int64
	Method string
	// SessionID is the flat session the command is addressed to; "" for
	// the channel's own.
	SessionID string
	// Params holds the decoded parameters: nil, bool, json.Number, string,
	// []any and map[string]any values. It is nil when the command has none.
	Params map[string]any

	target string // the target of the session it goes to ("" for the browser)
}

// maxDepth bounds the nesting of a client's message: Chromium's own JSON
// reader refuses anything deeper than 300 levels (crdtp's kStackLimit), so
// no command a browser runs needs more.
const maxDepth = 300

// errMalformed is the cause of every message ParseCommand refuses; the
// message says why.
var errMalformed = errors.New("malformed CDP message")

// ParseCommand decodes one client frame strictly: valid UTF-8 JSON, one
// object with id (a 32-bit integer), method (a string), and optionally
// sessionId (a string) and params (an object), nothing else. Anywhere in
// it, an object's keys are written without escapes and no two of them are
// the same or differ only in case. Chromium's reader would decode escaped
// keys and take one of two duplicates, and Go's matches keys without case:
// a frame on which readers could disagree is refused rather than guessed
// at. On error the Command holds the id and sessionId when they could be
// read, so that the refusal can answer them.
func ParseCommand(frame []byte) (*Command, error) {
	c, err := parseCommand(frame)
	if err != nil {
		// What the refusal answers, read leniently: a client waits for the
		// reply to its id, in the session it sent the command to.
		c = &Command{ID: idOf(frame)}
		json.Unmarshal(rawjson.Member(frame, "sessionId"), &c.SessionID)
	}
	return c, err
}

func parseCommand(frame []byte) (*Command, error) {
	c := &Command{ID: -1}
	if !utf8.Valid(frame) {
		return c, malformed("the message is not valid UTF-8")
	}
	if !json.Valid(frame) {
		// A frame with two objects, or cut short, may still show its id.
		if i := rawjson.SkipSpace(frame, 0); i < len(frame) && frame[i] == '{' {
			if end, err := rawjson.SkipValue(frame, i); err == nil && json.Valid(frame[:end]) {
				return c, malformed("the message must be one JSON object")
			}
		}
		return c, malformed("the message is not valid JSON")
	}
	if frame[rawjson.SkipSpace(frame, 0)] != '{' {
		return c, malformed("the message must be a JSON object")
	}
	c.ID = idOf(frame)
	// The keys, everywhere, before anything is decoded: json.Valid has
	// checked the syntax, so the raw walk may skip values unchecked.
	if err := checkKeys(frame[rawjson.SkipSpace(frame, 0):], 1); err != nil {
		return c, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(frame, &top); err != nil {
		return c, malformed(err.Error())
	}
	for key, raw := range top {
		switch key {
		case "id":
			id, err := strconv.ParseInt(string(raw), 10, 32)
			if err != nil || id < 0 {
				return c, malformed("id must be a non-negative 32-bit integer")
			}
		case "method", "sessionId":
			var str string
			if json.Unmarshal(raw, &str) != nil {
				return c, malformed(key + " must be a string")
			}
			if key == "method" {
				c.Method = str
			} else {
				c.SessionID = str
			}
		case "params":
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			var v any
			if err := dec.Decode(&v); err != nil {
				return c, malformed(err.Error())
			}
			m, ok := v.(map[string]any)
			if !ok {
				return c, malformed("params must be an object")
			}
			c.Params = m
		default:
			return c, malformed(fmt.Sprintf("unknown member %q: a command has id, method, sessionId and params", key))
		}
	}
	if _, ok := top["id"]; !ok {
		return c, malformed("the message has no id")
	}
	if _, ok := top["method"]; !ok {
		return c, malformed("the message has no method")
	}
	return c, nil
}

func malformed(why string) error { return fmt.Errorf("%w: %s", errMalformed, why) }

// idOf is the top-level id of a message, for a refusal to answer, or -1.
func idOf(frame []byte) int64 {
	raw := rawjson.Member(frame, "id")
	id, err := strconv.ParseInt(string(raw), 10, 32)
	if raw == nil || err != nil || id < 0 {
		return -1
	}
	return id
}

// checkKeys walks the JSON value v, depth levels deep, and refuses a key
// written with an escape, one that appears twice in an object or differs
// from another of it only in case, a number no double holds, and nesting
// deeper than maxDepth. v must be valid JSON (json.Valid), which lets
// rawjson skip what it does not need to read.
func checkKeys(v []byte, depth int) error {
	if depth > maxDepth {
		return malformed(fmt.Sprintf("the message nests deeper than %d levels", maxDepth))
	}
	switch v[0] {
	case '{':
		var seen keySet
		var bad error
		_, err := rawjson.EachMember(v, func(key, val []byte) bool {
			k := string(key)
			if bytes.IndexByte(key, '\\') >= 0 {
				bad = malformed(fmt.Sprintf("the key %q is written with an escape", k))
			} else if other, dup := seen.add(k); dup && other == k {
				bad = malformed(fmt.Sprintf("the key %q appears twice in one object", k))
			} else if dup {
				bad = malformed(fmt.Sprintf("the keys %q and %q differ only in case", other, k))
			} else {
				bad = checkKeys(val, depth+1)
			}
			return bad == nil
		})
		if bad != nil {
			return bad
		}
		return err
	case '[':
		return rawjson.EachElement(v, func(val []byte) error { return checkKeys(val, depth+1) })
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		// A number no double holds would be read differently by every
		// reader.
		if f, err := strconv.ParseFloat(string(v), 64); err != nil || math.IsInf(f, 0) {
			return malformed("the number " + string(v) + " is out of range")
		}
	}
	return nil
}

// keySet holds the keys of one object: few objects of a command have many
// keys, so a list (compared with strings.EqualFold, which folds as fold
// does) serves until it grows.
type keySet struct {
	list []string
	big  map[string]string // by fold
}

// add records k and reports a key already there that equals it without
// case.
func (s *keySet) add(k string) (string, bool) {
	if s.big == nil && len(s.list) < 16 {
		for _, o := range s.list {
			if strings.EqualFold(o, k) {
				return o, true
			}
		}
		s.list = append(s.list, k)
		return "", false
	}
	if s.big == nil {
		s.big = make(map[string]string, 2*len(s.list))
		for _, o := range s.list {
			s.big[fold(o)] = o
		}
	}
	f := fold(k)
	if o, ok := s.big[f]; ok {
		return o, true
	}
	s.big[f] = k
	return "", false
}

// fold maps every rune of s to one rune of its simple case-folding orbit
// (K, k and the Kelvin sign alike), so that keys equal without case fold to
// the same string.
func fold(s string) string {
	b := make([]rune, 0, len(s))
	for _, r := range s {
		f := r
		for o := unicode.SimpleFold(r); o != r; o = unicode.SimpleFold(o) {
			f = min(f, o)
		}
		b = append(b, f)
	}
	return string(b)
}

// encode is the message the browser gets for c, addressed to sessionID.
func (c *Command) encode(sessionID string) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(64 + len(c.Method) + len(sessionID))
	buf.WriteString(`{"id":`)
	buf.WriteString(strconv.FormatInt(c.ID, 10))
	buf.WriteString(`,"method":`)
	writeString(&buf, c.Method)
	if sessionID != "" {
		buf.WriteString(`,"sessionId":`)
		writeString(&buf, sessionID)
	}
	if c.Params != nil {
		buf.WriteString(`,"params":`)
		enc := json.NewEncoder(&buf)
		// The browser reads < > & as they are; escaping them only grows
		// large scripts.
		enc.SetEscapeHTML(false)
		if err := enc.Encode(c.Params); err != nil {
			return nil, fmt.Errorf("encoding %s: %w", c.Method, err)
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

func writeString(buf *bytes.Buffer, s string) {
	b, _ := json.Marshal(s)
	buf.Write(b)
}
