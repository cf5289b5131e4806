package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/trawler-dev/trawler/parse"
	"github.com/trawler-dev/trawler/scrape"
	"github.com/trawler-dev/trawler/teams"
)

// POST /v2/parse is served by net/http rather than Fiber: Fiber's adaptor
// reads a whole body into memory before the handler runs, and an upload
// must be refused as soon as it passes the limit, while it streams.

const (
	// maxOptionsPart caps the options part of an upload.
	maxOptionsPart = 1 << 20
	// maxDiscard is how much of a refused upload is read (and dropped) so
	// that the client, still sending, reads the answer rather than a reset
	// connection; beyond it the connection is closed.
	maxDiscard = 2 * parse.MaxUpload
)

// isParse reports whether r is for /v2/parse.
func isParse(r *http.Request) bool {
	return r.URL.Path == "/v2/parse"
}

// parseRequest is the options part of an upload: the scrape options that
// make sense for bytes, plus those the service refuses by name.
type parseRequest struct {
	scrapeOptionsRequest
	ZeroDataRetention *bool `json:"zeroDataRetention"`
	clientTags
}

// serveParse serves POST /v2/parse: a multipart upload with a file part and an
// optional options part (JSON text), answered with the document a scrape of
// the file would give.
func (a *API) serveParse(w http.ResponseWriter, r *http.Request) {
	doc, err := a.parseUpload(w, r)
	if err != nil {
		e := a.toError(err)
		// Let a client that is still sending finish, within reason, so
		// that it reads this answer rather than a reset connection.
		io.CopyN(io.Discard, r.Body, maxDiscard)
		if e.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
		}
		e.body().Write(w, e.Status)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "data": doc})
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

func (a *API) parseUpload(w http.ResponseWriter, r *http.Request) (*scrape.Document, error) {
	if r.Method != http.MethodPost {
		return nil, &Error{Status: http.StatusMethodNotAllowed, Code: "METHOD_NOT_ALLOWED", Message: "method not allowed on this endpoint"}
	}
	team, err := a.teamFor(r.Header.Get("Authorization"))
	if err != nil {
		return nil, err
	}
	if problems := queryProblems(r.URL.RawQuery); len(problems) > 0 {
		return nil, badRequest(problems...)
	}
	if err := a.creditsExhausted(r.Context(), team); err != nil {
		return nil, err
	}
	if r.ContentLength > parse.MaxUpload+maxOptionsPart {
		return nil, fileTooLarge()
	}
	// Wait for a slot before reading the body, so that uploads waiting
	// their turn hold no memory.
	select {
	case a.parseSlots <- struct{}{}:
		defer func() { <-a.parseSlots }()
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "multipart/form-data" {
		return nil, badRequest(fieldError("Content-Type", "Content-Type must be multipart/form-data with a file part (and an optional options part), got %q", mt))
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, badRequest(fieldError("Content-Type", "the multipart body cannot be read: %v", err))
	}
	up, release, req, err := readParts(mr, r.ContentLength)
	if err != nil {
		return nil, err
	}
	// The document returned holds copies of what it keeps, so the upload
	// can go once parsing is done.
	defer release()
	opts, err := a.parseOptions(&req, team)
	if err != nil {
		return nil, err
	}
	// up is not used past this call, so that the upload can go as soon as
	// the parser is done with it.
	name := up.Name
	doc, err := a.Scraper.Parse(r.Context(), team.ID, *up, opts)
	if err != nil {
		return nil, err
	}
	if !opts.ZeroDataRetention {
		a.recordActivity(team.ID, doc.Metadata["scrapeId"].(string), "parse", name)
	}
	return doc, nil
}

// readParts reads an upload's parts: a file part, required, and an
// optional options part, each at most once. The upload's bytes are valid
// until release is called; on an error, what was read is released.
func readParts(mr *multipart.Reader, declared int64) (up *scrape.Upload, release func(), req parseRequest, err error) {
	fail := func(err error) (*scrape.Upload, func(), parseRequest, error) {
		if release != nil {
			release()
		}
		return nil, nil, parseRequest{}, err
	}
	sawOpts := false
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fail(badRequest(fieldError("body", "the multipart body is malformed: %v", err)))
		}
		switch name := part.FormName(); name {
		case "options":
			if sawOpts {
				return fail(badRequest(fieldError("options", "options must be sent once")))
			}
			sawOpts = true
			raw, err := io.ReadAll(io.LimitReader(part, maxOptionsPart+1))
			if err != nil {
				return fail(badRequest(fieldError("options", "the options part cannot be read: %v", err)))
			}
			if len(raw) > maxOptionsPart {
				return fail(badRequest(fieldError("options", "options must be at most 1 MB of JSON")))
			}
			if err := decodeJSON(raw, &req, "options."); err != nil {
				return fail(err)
			}
		case "file":
			if up != nil {
				return fail(badRequest(fieldError("file", "file must be sent once")))
			}
			if up, release, err = readUpload(part, declared); err != nil {
				return fail(err)
			}
		default:
			return fail(badRequest(fieldError(name, "unknown part %q: parse takes a file part and an options part", name)))
		}
	}
	if up == nil {
		return fail(badRequest(fieldError("file", "file is required: send the document as a multipart part named file, with a file name")))
	}
	return up, release, req, nil
}

// parseOptions checks an upload's options and returns them as a scrape's.
func (a *API) parseOptions(req *parseRequest, team teams.Team) (scrape.Options, error) {
	var problems []FieldProblem
	opts := req.options("options.", team, &problems)
	// A refused option is named once, with the reason parse refuses it.
	refused := notForParse(req)
	problems = slices.DeleteFunc(problems, func(p FieldProblem) bool {
		return slices.ContainsFunc(refused, func(q FieldProblem) bool { return slices.Equal(p.Path, q.Path) })
	})
	problems = append(problems, refused...)
	if len(problems) > 0 {
		return opts, badRequest(problems...)
	}
	if _, err := zeroDataRetention(req.ZeroDataRetention, team, &opts); err != nil {
		return opts, err
	}
	if err := a.modelGate(&opts, "options."); err != nil {
		return opts, err
	}
	return opts, nil
}

func fileTooLarge() *Error {
	return &Error{Status: http.StatusRequestEntityTooLarge, Code: "FILE_TOO_LARGE",
		Message: fmt.Sprintf("file is larger than %d MB, the most parse accepts", parse.MaxUpload>>20)}
}

// readUpload reads the file part, refusing it as soon as it passes
// parse.MaxUpload, and checks that its content is what its extension says.
// The upload's bytes are valid until release is called.
func readUpload(part *multipart.Part, declared int64) (up *scrape.Upload, release func(), err error) {
	name := strings.TrimSpace(part.FileName())
	if name == "" {
		return nil, nil, badRequest(fieldError("file", "file must carry a file name (filename in its Content-Disposition): its extension names its type"))
	}
	if parse.FormatOfName(name) == "" {
		// Refused before a byte of it is read.
		_, err := parse.Identify(name, nil)
		return nil, nil, err
	}
	// An HTML upload goes to the content package, which is not read here
	// for what it keeps of its input, so it is held in memory; a document
	// goes to the parse package, which keeps only copies.
	data, release, err := spoolUpload(part, declared, parse.FormatOfName(name) != "html")
	if err != nil {
		return nil, nil, err
	}
	format, err := parse.Identify(name, data)
	if err != nil {
		release()
		return nil, nil, err
	}
	return &scrape.Upload{Name: name, Format: format, Data: data}, release, nil
}

// spoolUpload reads an upload of at most parse.MaxUpload bytes. With
// mapped, it writes it to an unlinked temporary file and maps that into
// memory, so that the upload is no part of the heap (nor of the garbage
// collector's headroom, which would double it) and only the pages the
// parser reads are resident: a DOCX's images, most of its bytes, never are.
// Without mapped, or when no temporary file can be had or written, it reads
// it into memory. The bytes are valid until release is called.
func spoolUpload(part io.Reader, declared int64, mapped bool) (data []byte, release func(), err error) {
	src := &partReader{r: io.LimitReader(part, parse.MaxUpload+1)}
	if !mapped {
		return readUploadInMemory(src, src, declared)
	}
	f, err := os.CreateTemp("", "trawler-upload-*")
	if err != nil {
		return readUploadInMemory(src, src, declared)
	}
	// Gone from the directory at once: the file lives while it is open or
	// mapped, and a crash leaves nothing behind.
	os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 64<<10)
	var n int64
	for {
		k, rerr := src.Read(buf)
		if k > 0 {
			if _, werr := f.Write(buf[:k]); werr != nil {
				// The disk is full or failing: go on in memory, from
				// what the file holds and the chunk it did not take.
				head := make([]byte, n)
				if _, err := f.ReadAt(head, 0); err != nil {
					return nil, nil, fmt.Errorf("reading back the spooled upload: %w", err)
				}
				return readUploadInMemory(io.MultiReader(bytes.NewReader(head), bytes.NewReader(buf[:k]), src), src, declared)
			}
			n += int64(k)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return nil, nil, uploadError(n, rerr, src)
		}
	}
	if err := uploadError(n, nil, src); err != nil {
		return nil, nil, err
	}
	// Private, so that a parser that wrote to its input (none should)
	// would write to a copy of the page rather than fault.
	data, err = syscall.Mmap(int(f.Fd()), 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE)
	if err != nil {
		data = make([]byte, n)
		if _, err := f.ReadAt(data, 0); err != nil {
			return nil, nil, fmt.Errorf("reading back the spooled upload: %w", err)
		}
		return data, func() {}, nil
	}
	var once sync.Once
	return data, func() { once.Do(func() { syscall.Munmap(data) }) }, nil
}

// readUploadInMemory reads an upload from r (which reads src) into memory,
// sized once by the request's declared length so that a 50 MB upload costs
// 50 MB rather than the doublings of a growing buffer.
func readUploadInMemory(r io.Reader, src *partReader, declared int64) ([]byte, func(), error) {
	var buf bytes.Buffer
	if declared > 0 {
		buf.Grow(int(min(declared, parse.MaxUpload+1)))
	}
	n, err := io.Copy(&buf, r)
	if err := uploadError(n, err, src); err != nil {
		return nil, nil, err
	}
	return buf.Bytes(), func() {}, nil
}

// uploadError turns the outcome of copying an upload of n bytes into the
// error to answer, if any: the client's part that cannot be read, one
// larger than parse.MaxUpload, an empty one, or a failure to store it.
func uploadError(n int64, err error, src *partReader) error {
	switch {
	case src.err != nil:
		return badRequest(fieldError("file", "the file part cannot be read: %v", src.err))
	case err != nil:
		return fmt.Errorf("spooling the upload: %w", err)
	case n > parse.MaxUpload:
		return fileTooLarge()
	case n == 0:
		return badRequest(fieldError("file", "file is empty"))
	}
	return nil
}

// partReader is the file part, keeping the error reading it gave (as
// against one writing it where it is spooled).
type partReader struct {
	r   io.Reader
	err error
}

func (p *partReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if err != nil && err != io.EOF {
		p.err = err
	}
	return n, err
}

// notForParse names the options that make no sense for bytes: nothing is
// loaded, so there is no page to wait for, act on, capture or locate, and no
// cache to consult.
func notForParse(r *parseRequest) []FieldProblem {
	var problems []FieldProblem
	refuse := func(name, why string) {
		problems = append(problems, fieldError("options."+name, "options.%s does not apply to parse: %s", name, why))
	}
	if r.WaitFor != nil {
		refuse("waitFor", "an uploaded file is not a page that loads")
	}
	if r.Mobile != nil {
		refuse("mobile", "an uploaded file is not rendered on a device")
	}
	if r.Actions != nil {
		refuse("actions", "an uploaded file has no page to act on")
	}
	if r.Location != nil {
		refuse("location", "an uploaded file is not fetched from anywhere")
	}
	for _, c := range []struct {
		name string
		set  bool
	}{{"maxAge", r.MaxAge != nil}, {"minAge", r.MinAge != nil}, {"storeInCache", r.StoreInCache != nil}, {"lockdown", r.Lockdown != nil}} {
		if c.set {
			refuse(c.name, "uploads are never cached")
		}
	}
	if r.Profile != nil {
		refuse("profile", "an uploaded file is not opened in a browser")
	}
	if r.Proxy != nil && *r.Proxy != "basic" && *r.Proxy != "auto" {
		refuse("proxy", "an uploaded file is not fetched through a proxy")
	}
	for i, raw := range r.Formats {
		var name string
		if json.Unmarshal(raw, &name) != nil {
			var obj struct {
				Type string `json:"type"`
			}
			json.Unmarshal(raw, &obj)
			name = obj.Type
		}
		switch strings.SplitN(name, "@", 2)[0] {
		case "screenshot":
			refuse(fmt.Sprintf("formats[%d]", i), "screenshot needs a page rendered in a browser")
		case "changeTracking":
			refuse(fmt.Sprintf("formats[%d]", i), "changeTracking compares scrapes of one URL over time")
		case "branding":
			refuse(fmt.Sprintf("formats[%d]", i), "branding is read from a rendered web page")
		case "audio", "video":
			refuse(fmt.Sprintf("formats[%d]", i), name+" is taken from a web page's media")
		}
	}
	return problems
}
