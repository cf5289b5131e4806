package profiles

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"hash/crc32"
)

// A save compresses the large parts of a capture, an origin's localStorage and its databases, each
// as it arrives from the page, while the page still reads or sends the next: what is left to
// compress once the capture ends is little. Each part is a segment, compressed on its own; the
// blob is still one gzip member, which every build reads, as klauspost/pgzip writes it: deflate
// blocks that end in a sync flush can follow one another in one stream. pgzip itself compresses
// with klauspost's deflate, whose fast levels store this kind of data (random base64, as tokens
// and encrypted values are) uncompressed, markedly larger than compress/flate's; and it cannot
// begin a part before the parts before it are known. Hence these few lines of our own.

// segment is a part of a state's JSON, compressed on its own by a goroutine: deflate blocks ending
// in a sync flush, so that no block is final and the next segment may follow.
type segment struct {
	done chan struct{}
	z    []byte
}

// compressSegment starts compressing b, which must not change until the segment is done.
func compressSegment(b []byte) *segment {
	s := &segment{done: make(chan struct{})}
	go func() {
		defer close(s.done)
		var buf bytes.Buffer
		buf.Grow(len(b)/2 + 64)
		fw, _ := flate.NewWriter(&buf, flate.BestSpeed) // a valid level: no error
		fw.Write(b)                                     // a bytes.Buffer: no error
		fw.Flush()
		s.z = buf.Bytes()
	}()
	return s
}

// span says that bytes [off, end) of an origin's JSON were compressed as seg.
type span struct {
	off, end int
	seg      *segment
}

// gzipWriter writes one gzip member from raw bytes, which it compresses, and segments, compressed
// already, in order.
type gzipWriter struct {
	out  bytes.Buffer
	fw   *flate.Writer
	raw  bool // fw has bytes not flushed yet
	crc  uint32
	size uint32
}

func newGzipWriter(sizeHint int) *gzipWriter {
	g := &gzipWriter{}
	g.out.Grow(sizeHint)
	// The header compress/gzip writes at BestSpeed: no name, no time, extra flags 4, OS unknown.
	g.out.Write([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 255})
	g.fw, _ = flate.NewWriter(&g.out, flate.BestSpeed)
	return g
}

func (g *gzipWriter) count(b []byte) {
	g.crc = crc32.Update(g.crc, crc32.IEEETable, b)
	g.size += uint32(len(b))
}

// write compresses b.
func (g *gzipWriter) write(b []byte) {
	if len(b) == 0 {
		return
	}
	g.count(b)
	g.fw.Write(b)
	g.raw = true
}

// writeSegment adds seg, the compression of b, once it is done.
func (g *gzipWriter) writeSegment(b []byte, seg *segment) {
	if g.raw {
		g.fw.Flush()
		g.fw.Reset(&g.out)
		g.raw = false
	}
	<-seg.done
	g.count(b)
	g.out.Write(seg.z)
}

// close ends the deflate stream and the member, and returns the blob.
func (g *gzipWriter) close() []byte {
	g.fw.Close()
	g.out.Write(binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, g.crc), g.size))
	return g.out.Bytes()
}
