package profiles

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"testing"

	kgzip "github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A save's blob, made of segments compressed apart and raw bytes around them, is one gzip member
// that both gzip readers a build may use read whole, with nothing after it; DecodeState reads it
// as the state encoded without segments; and it is no larger than that one by more than a little.
func TestSegmentedBlobIsOneGzipMember(t *testing.T) {
	random := func(n int) string {
		b := make([]byte, n)
		rand.Read(b)
		return base64.StdEncoding.EncodeToString(b)
	}
	var ls, dbs bytes.Buffer
	ls.WriteString("{")
	for i := range 200 {
		fmt.Fprintf(&ls, `"k%d":%q,`, i, random(700))
	}
	ls.WriteString(`"last":"x"}`)
	dbs.WriteString(`[{"name":"d","version":1,"stores":[{"name":"s","keyPath":null,"autoIncrement":false,"indexes":[],"records":[`)
	for i := range 100 {
		if i > 0 {
			dbs.WriteString(",")
		}
		fmt.Fprintf(&dbs, `{"k":%d,"v":%q}`, i, random(3000))
	}
	dbs.WriteString(`]}]}]`)

	whole := func(o string) []byte {
		return fmt.Appendf(nil, `{"origin":%q,"localStorage":%s,"indexedDB":%s,"skipped":[]}`, o, ls.Bytes(), dbs.Bytes())
	}
	spans := func(json []byte) []span {
		l := bytes.Index(json, ls.Bytes())
		d := bytes.Index(json, dbs.Bytes())
		return []span{{l, l + ls.Len(), compressSegment(ls.Bytes())}, {d, d + dbs.Len(), compressSegment(dbs.Bytes())}}
	}
	cookies := []Cookie{{Name: "a", Value: "b", Domain: "shop.test", Path: "/"}}
	plain := &snapshot{cookies: cookies, origins: []rawOrigin{
		{origin: "https://a.test", json: whole("https://a.test")},
		{origin: "https://b.test", json: whole("https://b.test")},
	}}
	segmented := &snapshot{cookies: cookies}
	for _, o := range plain.origins {
		segmented.origins = append(segmented.origins, rawOrigin{origin: o.origin, json: o.json, spans: spans(o.json)})
	}
	want, err := plain.encode()
	require.NoError(t, err)
	got, err := segmented.encode()
	require.NoError(t, err)

	wantJSON := gunzip(t, want)
	assert.Equal(t, wantJSON, gunzip(t, got), "the segmented blob's JSON")
	zr, err := kgzip.NewReader(bytes.NewReader(got))
	require.NoError(t, err)
	zr.Multistream(false)
	kjson, err := io.ReadAll(zr)
	require.NoError(t, err)
	assert.Equal(t, wantJSON, kjson, "klauspost's reader")

	a, err := DecodeState(want)
	require.NoError(t, err)
	b, err := DecodeState(got)
	require.NoError(t, err)
	assert.Equal(t, a, b)
	assert.Less(t, len(got), len(want)+len(want)/50, "segmented %d bytes against %d", len(got), len(want))
	t.Logf("blob: %d bytes segmented, %d not, of %d", len(got), len(want), len(wantJSON))
}

// gunzip reads the one gzip member of b, refusing anything after it.
func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	r := bytes.NewReader(b)
	zr, err := gzip.NewReader(r)
	require.NoError(t, err)
	zr.Multistream(false)
	out, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.Zero(t, r.Len(), "bytes after the gzip member")
	return out
}
