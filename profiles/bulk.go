package profiles

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	cdproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/cdp/rawjson"
)

// This file carries the helper's few large messages (an origin's storage, megabytes of it) past
// cdp.Conn, which would encode or decode each of them in full two or three times over: a bulk
// channel is the transport under the helper's cdp.Conn, and also sends commands whose message it
// is given whole and hands back their replies undecoded, for the caller to pick the one member it
// needs.

// rawIDBase is the first id of the bulk channel's own commands: far above the ids cdp.Conn counts up from
// 1, and within the 32-bit range the browser accepts.
const rawIDBase = 1 << 30

// bulk is a channel of the browser's Mux, as the transport of a cdp.Conn, that also sends commands
// of its own (send) and takes their replies out of the stream before the Conn reads it.
type bulk struct {
	ch *cdp.Channel

	mu      sync.Mutex
	next    int64
	waiting map[int64]chan []byte
	err     error
	done    chan struct{}
}

// dialBulk opens a browser-level connection whose transport is a bulk channel.
func dialBulk(ctx context.Context, browser *cdp.Mux) (*cdp.Conn, *bulk, error) {
	ch, err := browser.Open(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	b := &bulk{ch: ch, next: rawIDBase, waiting: map[int64]chan []byte{}, done: make(chan struct{})}
	return cdp.NewConn(b), b, nil
}

// ReadMessage returns the next message for the Conn, having delivered the replies to the bulk
// channel's own commands on the way.
func (b *bulk) ReadMessage() ([]byte, error) {
	for {
		msg, err := b.ch.ReadMessage()
		if err != nil {
			b.fail(err)
			return nil, err
		}
		if id, ok := replyID(msg); ok && id >= rawIDBase {
			b.mu.Lock()
			c := b.waiting[id]
			delete(b.waiting, id)
			b.mu.Unlock()
			if c != nil {
				c <- msg
			}
			continue
		}
		return msg, nil
	}
}

func (b *bulk) WriteMessage(msg []byte) error { return b.ch.WriteMessage(msg) }

func (b *bulk) Close() error {
	err := b.ch.Close()
	b.fail(cdp.ErrChannelClosed)
	return err
}

func (b *bulk) fail(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err == nil {
		b.err = err
		close(b.done)
	}
}

// rawCommand is a command for start to write whole: its method, for errors, and what makes its
// message for an id.
type rawCommand struct {
	method string
	build  func(id int64) []byte
	err    error // why the command could not be made, which start returns
}

// start writes the command, a whole CDP message, and returns a function that waits for the
// browser's reply and returns it undecoded, so that several commands can be written before the
// first reply comes. The replies are read by the Conn's reader: they come as long as the Conn is
// open.
func (b *bulk) start(cmd rawCommand) (func(context.Context) ([]byte, error), error) {
	method := cmd.method
	if cmd.err != nil {
		return nil, fmt.Errorf("%s: %w", method, cmd.err)
	}
	c := make(chan []byte, 1)
	b.mu.Lock()
	if b.err != nil {
		b.mu.Unlock()
		return nil, fmt.Errorf("%s: connection closed: %w", method, b.err)
	}
	b.next++
	id := b.next
	b.waiting[id] = c
	b.mu.Unlock()
	forget := func() {
		b.mu.Lock()
		delete(b.waiting, id)
		b.mu.Unlock()
	}
	if err := b.ch.WriteMessage(cmd.build(id)); err != nil {
		forget()
		return nil, fmt.Errorf("sending %s: %w", method, err)
	}
	return func(ctx context.Context) ([]byte, error) {
		select {
		case msg := <-c:
			if e := rawjson.Member(msg, "error"); e != nil {
				var ce cdp.Error
				if err := json.Unmarshal(e, &ce); err != nil {
					return nil, fmt.Errorf("%s: undecodable error %.200s", method, e)
				}
				return nil, fmt.Errorf("%s: %w", method, &ce)
			}
			return msg, nil
		case <-b.done:
			forget()
			return nil, fmt.Errorf("%s: connection closed: %w", method, b.err)
		case <-ctx.Done():
			forget()
			return nil, ctx.Err()
		}
	}, nil
}

// call makes cdproto's command c with params on session, for start. The params are encoded as
// cdp.Do encodes them, with cdproto's JSON layer.
func call[P, R any](session string, c cdproto.Command[P, R], params P) rawCommand {
	p, err := jsonv2.Marshal(params)
	if err != nil {
		return rawCommand{method: c.Method, err: fmt.Errorf("encoding the params: %w", err)}
	}
	return rawCommand{method: c.Method, build: func(id int64) []byte {
		buf := command(nil, session, c.Method)
		buf = append(buf, p[1:len(p)-1]...) // the members, without the braces
		return endCommand(buf, id)
	}}
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
	v := rawjson.Member(msg, "id")
	if v == nil {
		return 0, false
	}
	id, err := strconv.ParseInt(string(v), 10, 64)
	return id, err == nil
}
