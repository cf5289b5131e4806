package profiles

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/cdp/rawjson"
)

// TestReplyID checks that the replies to the bulk channel's own commands are told by their id,
// wherever it stands, from events.
func TestReplyID(t *testing.T) {
	id, ok := replyID([]byte(`{"id":1073741825,"result":{}}`))
	assert.True(t, ok)
	assert.Equal(t, int64(1073741825), id)
	id, ok = replyID([]byte(`{"error":{"code":1},"id":7,"sessionId":"S"}`))
	assert.True(t, ok, "an id not first")
	assert.Equal(t, int64(7), id)
	_, ok = replyID([]byte(`{"method":"Page.loadEventFired","params":{"id":3}}`))
	assert.False(t, ok, "an event")
}

// TestDecodeSnapshotReadsWhatEncodingJSONReads checks that blobs of every layout decode as
// encoding/json decoded them before: the layout Encode writes, which is cut apart, and others
// (names in another case, unknown members, nulls), which encoding/json reads.
func TestDecodeSnapshotReadsWhatEncodingJSONReads(t *testing.T) {
	gz := func(s string) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write([]byte(s))
		zw.Close()
		return buf.Bytes()
	}
	st := &State{
		Cookies: []Cookie{{Name: "a", Value: "b", Domain: ".x.test", Path: "/", Expires: 1.9e9, HTTPOnly: true, SameSite: "Lax"}},
		Origins: []OriginState{
			{Origin: "https://x.test", LocalStorage: map[string]string{"k": "v", "__proto__": "p", "": "e"}},
			{Origin: "http://y.test:8080", IndexedDB: []Database{{Name: "d", Version: 3, Stores: []ObjectStore{{
				Name: "s", KeyPath: json.RawMessage(`null`), AutoIncrement: true,
				Records: []Record{{Key: json.RawMessage(`{"$":"d","v":5}`), Value: json.RawMessage(`[1,{"$":"u"}]`)}},
			}}}}, Skipped: []string{"d/s: 1 record(s) holding CryptoKey (non-extractable)"}},
		},
	}
	encoded, err := st.Encode()
	require.NoError(t, err)
	var legacy bytes.Buffer // as Encode wrote it before
	zw := gzip.NewWriter(&legacy)
	out := *st
	out.Version = StateVersion
	require.NoError(t, json.NewEncoder(zw).Encode(&out))
	zw.Close()

	for name, blob := range map[string][]byte{
		"encoded":  encoded,
		"legacy":   legacy.Bytes(),
		"folded":   gz(`{"Version":1,"COOKIES":[{"name":"a","value":"b","domain":".x.test","path":"/"}],"origins":[{"Origin":"https://x.test","localstorage":{"k":"v"}}]}`),
		"unknown":  gz(`{"version":1,"future":{"x":[1,"]"]},"origins":[{"origin":"https://x.test","more":1,"localStorage":{"k":"v"}}],"cookies":null}`),
		"escaped":  gz(`{"versio\u006e":1,"origins":[{"origin":"https://x.test"}]}`),
		"nulls":    gz(`{"version":1,"cookies":null,"origins":null}`),
		"no items": gz(`{"version":1}`),
	} {
		t.Run(name, func(t *testing.T) {
			var want State
			require.NoError(t, json.Unmarshal(must(inflateAll(blob)), &want))
			got, err := DecodeState(blob)
			require.NoError(t, err)
			assert.Equal(t, len(want.Cookies), len(got.Cookies))
			for i := range want.Cookies {
				assert.Equal(t, want.Cookies[i], got.Cookies[i])
			}
			require.Equal(t, len(want.Origins), len(got.Origins))
			for i := range want.Origins {
				w, g := must(json.Marshal(want.Origins[i])), must(json.Marshal(got.Origins[i]))
				assert.JSONEq(t, string(w), string(g))
			}
			snap, err := decodeSnapshot(blob)
			require.NoError(t, err)
			for i, o := range snap.origins {
				// What the page is sent reads as encoding/json reads the blob.
				var page map[string]any
				require.NoError(t, json.Unmarshal(o.json, &page))
				assert.Equal(t, want.Origins[i].Origin, o.origin)
				assert.JSONEq(t, string(must(json.Marshal(want.Origins[i].LocalStorage))), orNull(rawjson.Member(o.json, "localStorage")))
				assert.JSONEq(t, string(must(json.Marshal(want.Origins[i].IndexedDB))), orNull(rawjson.Member(o.json, "indexedDB")))
			}
		})
	}

	for name, blob := range map[string][]byte{
		"origin not an object": gz(`{"version":1,"origins":["https://x.test"]}`),
		"wrong types":          gz(`{"version":1,"origins":[{"origin":"https://x.test","localStorage":[1]}]}`),
		"trailing":             gz(`{"version":1,"origins":[]} x`),
		"bad cookie":           gz(`{"version":1,"cookies":[{"name":5}]}`),
		"no origin":            gz(`{"version":1,"origins":[{"localStorage":{}}]}`),
		"version as text":      gz(`{"version":"1"}`),
		"truncated origin":     gz(`{"version":1,"origins":[{"origin":"https://x.test","localStorage":{"k":"v}]}`),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeState(blob)
			assert.ErrorIs(t, err, ErrInvalidState)
		})
	}
}

func orNull(b []byte) string {
	if b == nil {
		return "null"
	}
	return string(b)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestOpenDecodesForApply checks that a version that cannot be read is refused by Apply, before it
// needs the browser, and that a readable one is ready for it.
func TestOpenDecodesForApply(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st := NewFS(t.TempDir())
	l, err := st.Lock(ctx, "team", "corrupt", "test", time.Minute)
	require.NoError(t, err)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(`{"version":1,"cookies":[`))
	zw.Close()
	require.NoError(t, st.Save(ctx, "team", "corrupt", l, buf.Bytes()))
	require.NoError(t, st.Unlock(ctx, l))

	u, err := Open(ctx, st, "team", "corrupt", "test", ReadOnly, time.Minute)
	require.NoError(t, err, "Open leaves the decoding to Apply")
	err = u.Apply(ctx, nil, "")
	assert.ErrorIs(t, err, ErrInvalidState)
	assert.ErrorContains(t, err, `reading profile "corrupt"`)
	assert.NoError(t, u.Close(ctx, Discard))

	u, err = Open(ctx, st, "team", "never-saved", "test", ReadOnly, time.Minute)
	require.NoError(t, err)
	assert.NoError(t, u.Apply(ctx, nil, ""), "an empty state needs no browser")
	snap, err := u.loaded(ctx)
	require.NoError(t, err)
	assert.Empty(t, snap.origins)
	assert.Empty(t, snap.cookies)
}

// TestStateJSFitsAPage checks that state.js can be the text of a script element in the helper
// page: nothing in it ends the element or opens a comment.
func TestStateJSFitsAPage(t *testing.T) {
	for _, s := range []string{"</", "<!--"} {
		assert.NotContains(t, stateJS, s)
	}
}
