package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

// Static is a page served from embedded files: index.html, whose links to
// its assets ("static/NAME") are versioned by content so that a browser
// never runs an old script against a newer server, and the assets, served
// with ETags. The live view and the replay page are served this way.
type Static struct {
	assets  map[string]staticAsset
	page    []byte
	headers func(http.ResponseWriter)
}

type staticAsset struct {
	body []byte
	etag string
}

var contentTypes = map[string]string{
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".html": "text/html; charset=utf-8",
	".svg":  "image/svg+xml",
}

// PageHeaders sets the headers of a page Trawler serves to a browser and
// of its assets: policy as its Content-Security-Policy, no referrer (the
// page's URL carries a token), no sniffing, no framing, its own browsing
// context group, its resources for its own origin only.
func PageHeaders(w http.ResponseWriter, policy string) {
	h := w.Header()
	h.Set("Content-Security-Policy", policy)
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// NewStatic reads the files under dir of fsys; headers sets the security
// headers of every answer.
func NewStatic(fsys fs.FS, dir string, headers func(http.ResponseWriter)) *Static {
	s := &Static{assets: map[string]staticAsset{}, headers: headers}
	fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := fs.ReadFile(fsys, p)
		sum := sha256.Sum256(b)
		s.assets[strings.TrimPrefix(p, dir+"/")] = staticAsset{body: b, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	s.page = s.assets["index.html"].body
	for name := range s.assets {
		s.page = bytes.ReplaceAll(s.page, []byte(`"static/`+name+`"`), []byte(`"`+s.Path(name)+`"`))
	}
	return s
}

// Path is the versioned link to asset name, relative to the page.
func (s *Static) Path(name string) string {
	return "static/" + name + "?v=" + strings.Trim(s.assets[name].etag, `"`)
}

// Page is index.html with its links versioned.
func (s *Static) Page() []byte { return s.page }

// ServeAsset answers with asset name; index.html is served only as the
// page.
func (s *Static) ServeAsset(w http.ResponseWriter, r *http.Request, name string) {
	a, ok := s.assets[name]
	if !ok || name == "index.html" {
		http.NotFound(w, r)
		return
	}
	s.headers(w)
	w.Header().Set("Content-Type", contentTypes[path.Ext(name)])
	w.Header().Set("ETag", a.etag)
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}

// ServePage answers with the page.
func (s *Static) ServePage(w http.ResponseWriter, r *http.Request) {
	s.headers(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if r.Method == http.MethodHead {
		return
	}
	w.Write(s.page)
}
