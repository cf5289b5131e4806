package profiles

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/trawler-dev/trawler/cdp/rawjson"
)

// This file is a State's blob: gzip'd JSON, written by Encode and read by DecodeState, within limits
// that keep a corrupt or hostile blob from exhausting memory.

// maxStateSize bounds a decoded state, so that a corrupt or hostile blob cannot exhaust memory.
const maxStateSize = 512 << 20

// ErrInvalidState reports a profile state blob that DecodeState cannot read: not gzip'd JSON,
// truncated, too large, or of an unknown version.
var ErrInvalidState = errors.New("invalid profile state")

// Encode returns the state as gzip'd JSON.
func (s *State) Encode() ([]byte, error) {
	snap, err := s.snapshot()
	if err != nil {
		return nil, fmt.Errorf("encoding profile state: %w", err)
	}
	return snap.encode()
}

// encode returns the snapshot as gzip'd JSON, the State's encoding: the origins' JSON is written
// as it is, and its parts that a save compressed already (rawOrigin.spans) are not compressed
// again (see segments.go).
func (s *snapshot) encode() ([]byte, error) {
	cookies, err := json.Marshal(s.cookies)
	if err != nil {
		return nil, fmt.Errorf("encoding profile state: %w", err)
	}
	size := len(cookies)
	for _, o := range s.origins {
		size += len(o.json)
	}
	// compress/flate compresses: klauspost's is faster, but its blobs of a large profile are
	// markedly larger. klauspost's reader (inflate) reads either, and faster than compress/gzip's.
	g := newGzipWriter(size/2 + 4096)
	g.write(fmt.Appendf(nil, `{"version":%d,"cookies":`, StateVersion))
	g.write(cookies)
	g.write([]byte(`,"origins":[`))
	for i, o := range s.origins {
		if i > 0 {
			g.write([]byte(","))
		}
		at := 0
		for _, sp := range o.spans {
			g.write(o.json[at:sp.off])
			g.writeSegment(o.json[sp.off:sp.end], sp.seg)
			at = sp.end
		}
		g.write(o.json[at:])
	}
	g.write([]byte("]}\n"))
	return g.close(), nil
}

// errTooLarge is what limitedReader returns past the limit.
var errTooLarge = fmt.Errorf("%w: larger than %d MiB once decompressed", ErrInvalidState, maxStateSize>>20)

// limitedReader fails, rather than ending, once more than n bytes were read.
type limitedReader struct {
	r io.Reader
	n int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n < 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > l.n+1 {
		p = p[:l.n+1]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	if l.n < 0 {
		return n, errTooLarge
	}
	return n, err
}

// DecodeState reads a state written by Encode. Every error wraps ErrInvalidState.
func DecodeState(b []byte) (*State, error) {
	snap, err := decodeSnapshot(b)
	if err != nil {
		return nil, err
	}
	st, err := snap.state()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidState, err)
	}
	return st, nil
}

// decodeSnapshot reads a state written by Encode, decoding its cookies and checking its origins,
// whose storage stays JSON text. Every error wraps ErrInvalidState.
func decodeSnapshot(b []byte) (*snapshot, error) {
	data, err := inflateAll(b)
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: no data", ErrInvalidState)
	}
	snap, version := splitState(data)
	if snap == nil {
		// Not the layout Encode writes: encoding/json decides, as it always did, what the
		// blob holds or why it is refused.
		st, err := decodeJSON(data)
		if err != nil {
			return nil, err
		}
		if st.Version == StateVersion {
			if snap, err = st.snapshot(); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrInvalidState, err)
			}
		}
		version = st.Version
	}
	if version != StateVersion {
		return nil, fmt.Errorf("%w: version %d, this build reads version %d", ErrInvalidState, version, StateVersion)
	}
	for _, o := range snap.origins {
		if _, err := parseOrigin(o.origin); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidState, err)
		}
	}
	return snap, nil
}

// splitState reads data as a State written by Encode: it decodes the version and the cookies,
// and cuts out each origin's JSON and reads its origin member, but leaves that JSON unchecked,
// which the page that parses it does. It returns nil for what it cannot read and for anything that
// encoding/json might read otherwise: member names in another case (encoding/json matches them
// regardless of case) or escaped, values of other types, origins that are not objects.
func splitState(data []byte) (*snapshot, int) {
	var (
		version          = -1
		cookies, origins []byte
		odd              bool
	)
	end, err := rawjson.EachMember(data, func(k, v []byte) bool {
		switch string(k) {
		case "version":
			if json.Unmarshal(v, &version) != nil {
				odd = true
			}
		case "cookies":
			cookies = v
		case "origins":
			origins = v
		default:
			odd = bytes.IndexByte(k, '\\') >= 0 || foldsTo(k, "version", "cookies", "origins")
		}
		return !odd
	})
	if err != nil || odd || version < 0 || rawjson.SkipSpace(data, end) != len(data) {
		return nil, 0
	}
	snap := &snapshot{}
	if cookies != nil && json.Unmarshal(cookies, &snap.cookies) != nil {
		return nil, 0
	}
	if origins == nil || string(origins) == "null" {
		return snap, version
	}
	err = rawjson.EachElement(origins, func(o []byte) error {
		if o[0] != '{' {
			return rawjson.ErrSyntax
		}
		var name []byte
		_, err := rawjson.EachMember(o, func(k, v []byte) bool {
			switch {
			case string(k) == "origin":
				name = v
			case bytes.IndexByte(k, '\\') >= 0 || foldsTo(k, "origin", "localStorage", "indexedDB", "skipped"):
				odd = true
			}
			return !odd
		})
		ro := rawOrigin{json: o}
		if err != nil || odd || (name != nil && json.Unmarshal(name, &ro.origin) != nil) {
			return rawjson.ErrSyntax
		}
		snap.origins = append(snap.origins, ro)
		return nil
	})
	if err != nil {
		return nil, 0
	}
	return snap, version
}

// foldsTo reports whether k is one of names in another case.
func foldsTo(k []byte, names ...string) bool {
	for _, n := range names {
		if string(k) != n && strings.EqualFold(string(k), n) {
			return true
		}
	}
	return false
}

// decodeJSON decodes data with encoding/json, refusing trailing data.
func decodeJSON(data []byte) (*State, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var st State
	if err := dec.Decode(&st); err != nil {
		return nil, decodeError(err)
	}
	rest, _ := io.ReadAll(dec.Buffered())
	if len(bytes.TrimSpace(rest)) > 0 || dec.More() {
		return nil, fmt.Errorf("%w: trailing data after the state", ErrInvalidState)
	}
	return &st, nil
}

// heldBeforeCounting is how much of a decompressed state inflateAll holds before it checks, without
// holding any more of it, that the whole is within maxStateSize.
const heldBeforeCounting = 64 << 20

// inflateAll decompresses the one gzip member of b, checking its checksum, and refuses more than
// maxStateSize bytes or trailing data. A state larger than heldBeforeCounting is decompressed twice,
// first only to count its bytes, so that a blob that inflates past the limit is refused without
// holding it all in memory.
func inflateAll(b []byte) ([]byte, error) {
	var text bytes.Buffer
	if len(b) >= 18 {
		// The gzip trailer gives the size (mod 4 GiB), which a corrupt or hostile blob may
		// overstate: the buffer grows past a modest guess only as the data comes.
		text.Grow(int(min(int64(binary.LittleEndian.Uint32(b[len(b)-4:])), 32*int64(len(b)), heldBeforeCounting)) + bytes.MinRead)
	}
	_, err := inflate(b, &text, heldBeforeCounting)
	if errors.Is(err, errTooLarge) {
		text = bytes.Buffer{}
		if _, err = inflate(b, io.Discard, maxStateSize); err == nil {
			_, err = inflate(b, &text, maxStateSize)
		}
	}
	return text.Bytes(), err
}

// inflate decompresses one gzip member of b into w, checking its checksum, and refuses more than
// limit bytes (errTooLarge) or trailing data.
func inflate(b []byte, w io.Writer, limit int64) (int64, error) {
	br := bytes.NewReader(b)
	zr, err := gzip.NewReader(br)
	if err != nil {
		return 0, decodeError(err)
	}
	zr.Multistream(false)
	n, err := io.Copy(w, &limitedReader{r: zr, n: limit})
	if err != nil {
		return n, decodeError(err)
	}
	if br.Len() > 0 {
		return n, fmt.Errorf("%w: trailing data after the gzip stream", ErrInvalidState)
	}
	return n, nil
}

func decodeError(err error) error {
	switch {
	case errors.Is(err, ErrInvalidState):
		return err
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: empty or truncated data", ErrInvalidState)
	case errors.Is(err, gzip.ErrHeader):
		return fmt.Errorf("%w: not gzip data", ErrInvalidState)
	case errors.Is(err, gzip.ErrChecksum):
		return fmt.Errorf("%w: corrupt data (gzip checksum mismatch)", ErrInvalidState)
	}
	return fmt.Errorf("%w: %v", ErrInvalidState, err)
}
