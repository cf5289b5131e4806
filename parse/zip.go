package parse

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
)

// The OOXML and OpenDocument formats are zip archives of XML. A zip bomb
// (a small member that inflates to gigabytes) must cost a bounded amount of
// memory, so members are read through archive, which caps each member and
// the whole document.
const (
	// maxMemberBytes caps one inflated member.
	maxMemberBytes = 128 << 20
	// maxArchiveBytes caps everything inflated from one archive.
	maxArchiveBytes = 512 << 20
)

// archive reads members of a zip archive within the caps above.
type archive struct {
	files  map[string]*zip.File
	budget int64
}

// openArchive opens data as a zip archive; a file that is not one is
// ErrMalformed.
func openArchive(data []byte) (*archive, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("%w: not a zip archive: %v", ErrMalformed, err)
	}
	a := &archive{files: make(map[string]*zip.File, len(zr.File)), budget: maxArchiveBytes}
	for _, f := range zr.File {
		a.files[f.Name] = f
	}
	return a, nil
}

// has reports whether the archive holds a member called name.
func (a *archive) has(name string) bool { return a.files[name] != nil }

// read returns the inflated member called name, or nil and no error when
// there is none. A member that inflates past the caps is ErrTooLarge and a
// damaged one ErrMalformed.
func (a *archive) read(name string) ([]byte, error) {
	m, err := a.open(name)
	if m == nil || err != nil {
		return nil, err
	}
	defer m.Close()
	// The declared size is only a hint (bombs lie about it), so it sizes the
	// buffer but the limit is enforced on what actually inflates.
	var buf bytes.Buffer
	if n := a.files[name].UncompressedSize64; n > 0 && n <= uint64(m.limit) {
		buf.Grow(int(n))
	}
	if _, err := io.Copy(&buf, m); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// open returns the member called name as a stream, or nil and no error
// when there is none, for a part that is read once from start to end: the
// largest parts (a DOCX's document.xml) then never sit in memory whole.
// The caps hold as for read; a stream that passes them, or is damaged,
// fails its Read with the error read would have returned, which Err keeps.
func (a *archive) open(name string) (*member, error) {
	f := a.files[name]
	if f == nil {
		return nil, nil
	}
	limit := min(int64(maxMemberBytes), a.budget)
	if f.UncompressedSize64 > uint64(limit) {
		return nil, fmt.Errorf("%w: %s inflates to more than %d MB", ErrTooLarge, name, limit>>20)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrMalformed, name, err)
	}
	return &member{a: a, name: name, rc: rc, limit: limit}, nil
}

// member is a member of an archive being inflated as it is read.
type member struct {
	a     *archive
	name  string
	rc    io.ReadCloser
	limit int64 // how much it may inflate to
	n     int64 // how much it has
	err   error
}

func (m *member) Read(p []byte) (int, error) {
	if m.err != nil {
		return 0, m.err
	}
	// Reading one byte past the limit tells a member that ends there from
	// one that goes on.
	if rest := m.limit + 1 - m.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := m.rc.Read(p)
	m.n += int64(n)
	m.a.budget -= int64(n)
	switch {
	case m.n > m.limit:
		m.err = fmt.Errorf("%w: %s inflates to more than %d MB", ErrTooLarge, m.name, m.limit>>20)
		return 0, m.err
	case err != nil && err != io.EOF:
		m.err = fmt.Errorf("%w: %s: %v", ErrMalformed, m.name, err)
		return n, m.err
	}
	return n, err
}

// Err is what made the stream fail, or nil.
func (m *member) Err() error { return m.err }

// Close releases the inflater.
func (m *member) Close() error { return m.rc.Close() }
