package profiles

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/trawler-dev/trawler/cdp"
)

// This file carries the helper's few large messages (an origin's storage, megabytes of it) past
// cdp.Conn, which would encode or decode each of them in full two or three times over: a wire is
// the transport under the helper's cdp.Conn, and also sends commands whose message it is given
// whole and hands back their replies undecoded, for the caller to pick the one member it needs.

// rawIDBase is the first id of the wire's own commands: far above the ids cdp.Conn counts up from
// 1, and within the 32-bit range the browser accepts.
const rawIDBase = 1 << 30

// wire is a channel of the browser's Mux, as the transport of a cdp.Conn, that also sends commands
// of its own (send) and takes their replies out of the stream before the Conn reads it.
type wire struct {
	ch *cdp.Channel

	mu      sync.Mutex
	next    int64
	waiting map[int64]chan []byte
	err     error
	done    chan struct{}
}

// dialWire opens a browser-level connection whose transport is a wire.
func dialWire(ctx context.Context, browser *cdp.Mux) (*cdp.Conn, *wire, error) {
	ch, err := browser.Open(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	w := &wire{ch: ch, next: rawIDBase, waiting: map[int64]chan []byte{}, done: make(chan struct{})}
	return cdp.NewConn(w), w, nil
}

// ReadMessage returns the next message for the Conn, having delivered the replies to the wire's
// own commands on the way.
func (w *wire) ReadMessage() ([]byte, error) {
	for {
		msg, err := w.ch.ReadMessage()
		if err != nil {
			w.fail(err)
			return nil, err
		}
		if id, ok := replyID(msg); ok && id >= rawIDBase {
			w.mu.Lock()
			c := w.waiting[id]
			delete(w.waiting, id)
			w.mu.Unlock()
			if c != nil {
				c <- msg
			}
			continue
		}
		return msg, nil
	}
}

func (w *wire) WriteMessage(msg []byte) error { return w.ch.WriteMessage(msg) }

func (w *wire) Close() error {
	err := w.ch.Close()
	w.fail(cdp.ErrChannelClosed)
	return err
}

func (w *wire) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
		close(w.done)
	}
}

// send writes the command that build makes for id, a whole CDP message, and returns the browser's
// reply undecoded. The wire's reader is the Conn's: it runs as long as the Conn is open.
func (w *wire) send(ctx context.Context, method string, build func(id int64) []byte) ([]byte, error) {
	wait, err := w.start(method, build)
	if err != nil {
		return nil, err
	}
	return wait(ctx)
}

// start writes the command that build makes for id and returns a function that waits for its
// reply, so that several commands can be written before the first reply comes.
func (w *wire) start(method string, build func(id int64) []byte) (func(context.Context) ([]byte, error), error) {
	c := make(chan []byte, 1)
	w.mu.Lock()
	if w.err != nil {
		w.mu.Unlock()
		return nil, fmt.Errorf("%s: connection closed: %w", method, w.err)
	}
	w.next++
	id := w.next
	w.waiting[id] = c
	w.mu.Unlock()
	forget := func() {
		w.mu.Lock()
		delete(w.waiting, id)
		w.mu.Unlock()
	}
	if err := w.ch.WriteMessage(build(id)); err != nil {
		forget()
		return nil, fmt.Errorf("sending %s: %w", method, err)
	}
	return func(ctx context.Context) ([]byte, error) {
		select {
		case msg := <-c:
			if e := jsonMember(msg, "error"); e != nil {
				var ce cdp.Error
				if err := json.Unmarshal(e, &ce); err != nil {
					return nil, fmt.Errorf("%s: undecodable error %.200s", method, e)
				}
				return nil, fmt.Errorf("%s: %w", method, &ce)
			}
			return msg, nil
		case <-w.done:
			forget()
			return nil, fmt.Errorf("%s: connection closed: %w", method, w.err)
		case <-ctx.Done():
			forget()
			return nil, ctx.Err()
		}
	}, nil
}

// call makes the command method with params (a map or struct, or nil) on session, for send or
// start.
func call(session, method string, params any) func(id int64) []byte {
	return func(id int64) []byte {
		buf := command(nil, session, method)
		if params != nil {
			p := appendJSON(nil, params)
			buf = append(buf, p[1:len(p)-1]...) // the members, without the braces
		}
		return endCommand(buf, id)
	}
}

// command is the start of a CDP message for method on session, up to and including the opening
// brace of its params; the caller appends the params' members, closes them, and ends the message
// with endCommand.
func command(buf []byte, session, method string) []byte {
	buf = append(buf, `{"method":`...)
	buf = appendJSON(buf, method)
	if session != "" {
		buf = append(buf, `,"sessionId":`...)
		buf = appendJSON(buf, session)
	}
	return append(buf, `,"params":{`...)
}

// endCommand closes the params and gives the message its id.
func endCommand(buf []byte, id int64) []byte {
	buf = append(buf, `},"id":`...)
	buf = strconv.AppendInt(buf, id, 10)
	return append(buf, '}')
}

// appendJSON appends v, a small value, as JSON.
func appendJSON(buf []byte, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only strings and plain values are given
	}
	return append(buf, b...)
}

// replyID returns the top-level id of a message, if it has one.
func replyID(msg []byte) (int64, bool) {
	// The browser writes a reply's id first, and an event's method; anything else is scanned.
	if bytes.HasPrefix(msg, []byte(`{"method":`)) {
		return 0, false
	}
	if rest, ok := bytes.CutPrefix(msg, []byte(`{"id":`)); ok {
		n := 0
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n > 0 && n < len(rest) && (rest[n] == ',' || rest[n] == '}') {
			id, err := strconv.ParseInt(string(rest[:n]), 10, 64)
			return id, err == nil
		}
	}
	v := jsonMember(msg, "id")
	if v == nil {
		return 0, false
	}
	id, err := strconv.ParseInt(string(v), 10, 64)
	return id, err == nil
}

var errJSON = errors.New("malformed JSON")

// jsonMember returns the raw value of the member key of the JSON object obj, or nil when obj has
// no such member or is no object. Values are skipped, not decoded: only their strings' quotes and
// the brackets outside strings are looked at, so a member after a string of megabytes costs a
// search for its closing quote. Malformed JSON is not always noticed: obj must come from the
// browser or be checked by its reader.
func jsonMember(obj []byte, key string) []byte {
	var found []byte
	eachMember(obj, func(k, v []byte) bool {
		if string(k) == key || (bytes.IndexByte(k, '\\') >= 0 && unquoteKey(k) == key) {
			found = v
			return false
		}
		return true
	})
	return found
}

// eachMember calls fn with the raw key (without its quotes, escapes left as they are) and the raw
// value of each member of the JSON object obj, until fn returns false. It returns the index just
// past the object, or where it stopped.
func eachMember(obj []byte, fn func(key, val []byte) bool) (int, error) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return 0, errJSON
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return i + 1, nil
	}
	for {
		end, err := skipString(obj, i)
		if err != nil {
			return 0, err
		}
		key := obj[i+1 : end-1]
		i = skipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return 0, errJSON
		}
		i = skipSpace(obj, i+1)
		from := i
		if i, err = skipValue(obj, i); err != nil {
			return 0, err
		}
		if !fn(key, obj[from:i]) {
			return i, nil
		}
		i = skipSpace(obj, i)
		if i >= len(obj) {
			return 0, errJSON
		}
		switch obj[i] {
		case ',':
			i = skipSpace(obj, i+1)
		case '}':
			return i + 1, nil
		default:
			return 0, errJSON
		}
	}
}

// eachElement calls fn with the raw value of each element of the JSON array arr.
func eachElement(arr []byte, fn func(val []byte) error) error {
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return errJSON
	}
	i = skipSpace(arr, i+1)
	if i < len(arr) && arr[i] == ']' {
		return nil
	}
	for {
		from := i
		var err error
		if i, err = skipValue(arr, i); err != nil {
			return err
		}
		if err := fn(arr[from:i]); err != nil {
			return err
		}
		i = skipSpace(arr, i)
		if i >= len(arr) {
			return errJSON
		}
		switch arr[i] {
		case ',':
			i = skipSpace(arr, i+1)
		case ']':
			return nil
		default:
			return errJSON
		}
	}
}

func unquoteKey(k []byte) string {
	var s string
	json.Unmarshal(append(append([]byte{'"'}, k...), '"'), &s)
	return s
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string that starts at b[i]. It looks for quotes
// alone and counts the backslashes before each, which is much faster on long strings than stepping
// through escapes.
func skipString(b []byte, i int) (int, error) {
	if i >= len(b) || b[i] != '"' {
		return 0, errJSON
	}
	for j := i + 1; ; {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, errJSON
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

// skipValue returns the index just past the JSON value that starts at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errJSON
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
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
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return 0, errJSON
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\r' && b[j] != '\t' {
		j++
	}
	if j == i {
		return 0, errJSON
	}
	return j, nil
}

// jsonString decodes the JSON string raw (with its quotes) into UTF-8, as encoding/json would
// (an unpaired surrogate becomes U+FFFD), copying the runs between escapes whole.
func jsonString(raw []byte) ([]byte, error) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil, errJSON
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
			return nil, errJSON
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
				return nil, errJSON
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
			return nil, errJSON
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
