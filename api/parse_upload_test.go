package api

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/trawler-dev/trawler/parse"
)

// failingReader gives its bytes, then an error.
type failingReader struct {
	r   io.Reader
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, f.err
	}
	return n, err
}

func TestSpoolUpload(t *testing.T) {
	data := make([]byte, 3<<20+12345)
	rand.Read(data)
	for _, tc := range []struct {
		name   string
		mapped bool
		tmp    string // TMPDIR, when set
	}{
		{"mapped", true, ""},
		{"in memory", false, ""},
		{"no temporary file", true, filepath.Join(t.TempDir(), "missing")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.tmp != "" {
				t.Setenv("TMPDIR", tc.tmp)
			}
			got, release, err := spoolUpload(bytes.NewReader(data), int64(len(data)), tc.mapped)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data) {
				t.Fatal("the spooled upload differs from what was sent")
			}
			release()
			release() // twice is harmless
		})
	}

	status := func(err error) int {
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("want an *Error, got %v", err)
		}
		return e.Status
	}
	for _, mapped := range []bool{true, false} {
		if _, _, err := spoolUpload(bytes.NewReader(nil), 0, mapped); err == nil || status(err) != http.StatusBadRequest {
			t.Errorf("mapped %v: an empty upload gave %v", mapped, err)
		}
		big := io.LimitReader(neverEnding('x'), parse.MaxUpload+10)
		if _, _, err := spoolUpload(big, 0, mapped); err == nil || status(err) != http.StatusRequestEntityTooLarge {
			t.Errorf("mapped %v: a too large upload gave %v", mapped, err)
		}
		broken := &failingReader{r: bytes.NewReader(data[:100<<10]), err: io.ErrUnexpectedEOF}
		if _, _, err := spoolUpload(broken, 0, mapped); err == nil || status(err) != http.StatusBadRequest {
			t.Errorf("mapped %v: a broken part gave %v", mapped, err)
		}
	}
}

type neverEnding byte

func (b neverEnding) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}
