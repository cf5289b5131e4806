package recording

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/store"
)

func TestParseBatch(t *testing.T) {
	b, ok := parseBatch(`2 1700000000000 1700000000500 [{"type":4,"timestamp":1700000000000},{"type":2,"data":{"a b":1},"timestamp":1700000000500}]`)
	require.True(t, ok)
	assert.Equal(t, 2, b.n)
	assert.Equal(t, int64(1700000000000), b.first)
	assert.Equal(t, int64(1700000000500), b.last)
	assert.True(t, strings.HasPrefix(b.events, "[{") && strings.HasSuffix(b.events, "}]"))
	for _, bad := range []string{"", "[]", "1 2 [x]", "x 1 2 [{}]", "0 1 2 []", "1 2 3 {}", "1 2 3"} {
		_, ok := parseBatch(bad)
		assert.False(t, ok, "%q", bad)
	}
}

// memObjects is an object store in memory.
type memObjects struct {
	mu      sync.Mutex
	objects map[string][]byte
}

func (m *memObjects) Put(_ context.Context, key string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.objects[key] = data
	return nil
}

func (m *memObjects) Get(_ context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.objects[key]
	if !ok {
		return nil, fmt.Errorf("no object %s", key)
	}
	return b, nil
}

func (m *memObjects) Delete(_ context.Context, keys []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		delete(m.objects, k)
	}
	return nil
}

func chunk(t *testing.T, page string, seq int, events ...string) Chunk {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	io.WriteString(zw, "["+strings.Join(events, ",")+"]")
	require.NoError(t, zw.Close())
	return Chunk{Page: page, Seq: seq, URL: "http://a.test/" + page, Title: page, First: time.UnixMilli(1), Last: time.UnixMilli(2),
		Events: len(events), Data: buf.Bytes()}
}

// A recording pages through its events: a tab's, sorted by time within
// each chunk read, and every tab's with each event naming its tab; the
// recording is its team's; once expired it is gone, objects too.
func TestArchiveReadsPagesAndPrunes(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "db"))
	require.NoError(t, err)
	defer st.Close()
	objects := &memObjects{objects: map[string][]byte{}}
	a := &Archive{Store: st, Objects: objects, Retention: time.Hour, Log: slog.New(slog.DiscardHandler)}
	sink := &sessionSink{a: a, team: "acme", session: "s1", expires: time.Now().Add(time.Hour)}

	// Tab A: five chunks of about 1.5 MB each, which take two answers.
	big := strings.Repeat("x", 1500<<10)
	for seq := 0; seq < 5; seq++ {
		e := fmt.Sprintf(`{"type":3,"timestamp":%d,"data":{"pad":%q}}`, 100+seq*10, big)
		require.NoError(t, sink.Put(ctx, chunk(t, "A", seq, e)))
	}
	// Tab B: one chunk whose events came out of order.
	require.NoError(t, sink.Put(ctx, chunk(t, "B", 0, `{"type":3,"timestamp":900}`, `{"type":4,"timestamp":800}`)))
	assert.Len(t, objects.objects, 6, "one object per chunk")

	r, err := a.Read(ctx, "acme", "s1", "A", "")
	require.NoError(t, err)
	require.Len(t, r.Pages, 2)
	assert.Equal(t, "A", r.Pages[0].ID)
	assert.Equal(t, "http://a.test/A", r.Pages[0].URL)
	assert.Len(t, r.Events, 3, "the first answer stops past 4 MB")
	require.Equal(t, "3", r.Next)
	r, err = a.Read(ctx, "acme", "s1", "A", r.Next)
	require.NoError(t, err)
	assert.Len(t, r.Events, 2)
	assert.Equal(t, "", r.Next, "the end")

	r, err = a.Read(ctx, "acme", "s1", "B", "")
	require.NoError(t, err)
	var first struct{ Type int }
	require.NoError(t, json.Unmarshal(r.Events[0], &first))
	assert.Equal(t, 4, first.Type, "events sorted by time")

	// Every tab: A's events, then B's, each naming its tab.
	var all []json.RawMessage
	cursor := ""
	for {
		r, err := a.Read(ctx, "acme", "s1", "", cursor)
		require.NoError(t, err)
		all = append(all, r.Events...)
		if cursor = r.Next; cursor == "" {
			break
		}
	}
	require.Len(t, all, 7)
	assert.True(t, bytes.HasPrefix(all[0], []byte(`{"pageId":"A",`)), "%.40s", all[0])
	assert.True(t, bytes.HasPrefix(all[6], []byte(`{"pageId":"B",`)), "%.40s", all[6])

	for _, c := range []struct{ page, cursor string }{{"A", "x"}, {"A", "-1"}, {"A", "01"}, {"", "9.0"}, {"", "1"}} {
		_, err := a.Read(ctx, "acme", "s1", c.page, c.cursor)
		assert.ErrorIs(t, err, ErrBadCursor, "page %q cursor %q", c.page, c.cursor)
	}
	_, err = a.Read(ctx, "acme", "s1", "C", "")
	assert.ErrorIs(t, err, ErrPageNotFound)
	r, err = a.Read(ctx, "globex", "s1", "", "")
	require.NoError(t, err)
	assert.Empty(t, r.Pages, "another team's read")

	expired := &sessionSink{a: a, team: "acme", session: "s2", expires: time.Now().Add(-time.Second)}
	require.NoError(t, expired.Put(ctx, chunk(t, "A", 0, `{"type":4,"timestamp":1}`)))
	require.NoError(t, a.Prune(ctx))
	assert.Len(t, objects.objects, 6, "the expired chunk's object is deleted, the others kept")
	pages, err := a.Pages(ctx, "acme", "s2")
	require.NoError(t, err)
	assert.Empty(t, pages)
}
