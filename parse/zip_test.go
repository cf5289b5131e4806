package parse

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"errors"
	"hash/crc32"
	"testing"
)

// TestArchiveLyingHeader: a member whose header claims a few bytes but
// inflates to more is refused as malformed (archive/zip stops at the
// declared size), and one whose header honestly says it is over the cap is
// refused as too large without being inflated.
func TestArchiveLyingHeader(t *testing.T) {
	t.Parallel()
	plain := make([]byte, 4<<20)
	var deflated bytes.Buffer
	fw, _ := flate.NewWriter(&deflated, flate.BestCompression)
	fw.Write(plain)
	fw.Close()
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	w, err := zw.CreateRaw(&zip.FileHeader{Name: "liar.xml", Method: zip.Deflate, CRC32: crc32.ChecksumIEEE(plain),
		CompressedSize64: uint64(deflated.Len()), UncompressedSize64: 10})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(deflated.Bytes())
	honest, _ := zw.Create("honest.xml")
	honest.Write(plain)
	zw.Close()

	a, err := openArchive(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	a.budget = 1 << 20 // a 1 MB cap for this test
	for name, want := range map[string]error{"liar.xml": ErrMalformed, "honest.xml": ErrTooLarge} {
		if b, err := a.read(name); !errors.Is(err, want) || b != nil {
			t.Errorf("%s: %d bytes, %v; want %v", name, len(b), err, want)
		}
	}
	if b, err := a.read("absent.xml"); err != nil || b != nil {
		t.Errorf("absent member: %v %v", b, err)
	}
}
