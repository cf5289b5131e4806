package discover

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/html/charset"
)

const (
	// maxSitemapBytes caps one sitemap body after decompression. The
	// sitemap protocol allows 50 MB; the cap is what stops a gzip bomb.
	maxSitemapBytes = 50 << 20
	// maxSitemapDepth is how deep sitemap indexes are followed: a sitemap
	// named by robots.txt or guessed at /sitemap.xml is at depth 1, the
	// sitemaps its index names at depth 2, and so on.
	maxSitemapDepth = 4
	// maxSitemapFetches bounds the work one call does on a site whose
	// indexes name sitemaps without end.
	maxSitemapFetches = 1000
	// maxTextLine is the longest line read from a plain-text sitemap; no
	// real URL comes near it, and longer lines are skipped.
	maxTextLine = 64 << 10
)

// SitemapURL is one page URL found in a sitemap.
type SitemapURL struct {
	// URL is absolute and normalised by Resolve.
	URL string
	// LastMod is the sitemap's <lastmod>, zero when absent or unreadable.
	LastMod time.Time
}

// Sitemaps finds page URLs in the sitemaps of start's host: /sitemap.xml
// and the sitemaps in extra (normally Robots.Sitemaps).
//
// Sitemap indexes are followed up to 4 levels deep and every sitemap is
// fetched once, so index loops end. Bodies may be gzipped (recognised by
// their magic bytes, whatever the name or headers say), XML with or without
// namespaces, or plain text with one URL per line. Each body is cut off at
// 50 MiB after decompression. robots, which may be nil, is honoured for the
// sitemap fetches on its host. At most limit URLs are returned (limit <= 0
// means no limit), each once, in the order found.
//
// A sitemap that cannot be fetched or read is skipped and reported in
// warnings, such as "sitemap https://x/sitemap.xml: HTTP 500"; the rest are
// still read. The guessed /sitemap.xml is exempt when it simply does not
// exist or is not a sitemap, since most sites have none. Only URLs are
// returned: scoping them is the caller's job (Rules.Allowed).
func Sitemaps(ctx context.Context, client *http.Client, start *url.URL, extra []string, robots *Robots, userAgent string, limit int) (urls []SitemapURL, warnings []string) {
	s := &sitemapReader{
		client:    client,
		robots:    robots,
		userAgent: userAgent,
		limit:     limit,
		queued:    map[string]bool{},
		found:     map[string]bool{},
	}
	if guessed, ok := Resolve(start, "/sitemap.xml"); ok {
		s.guessed = guessed.String()
		s.robotsHost = guessed.Host
		s.enqueue(guessed.String(), 1)
	}
	for _, e := range extra {
		if u, ok := Resolve(start, e); ok {
			if u.String() == s.guessed {
				s.guessed = "" // named after all, so its absence is news
			}
			s.enqueue(u.String(), 1)
		} else {
			s.warn(e, "not an http or https URL")
		}
	}

	fetches := 0
	for len(s.queue) > 0 && !s.full() {
		if err := ctx.Err(); err != nil {
			s.warnings = append(s.warnings, fmt.Sprintf("sitemaps: stopped: %v", err))
			break
		}
		if fetches == maxSitemapFetches {
			s.warnings = append(s.warnings, fmt.Sprintf("sitemaps: stopped after %d sitemaps", maxSitemapFetches))
			break
		}
		next := s.queue[0]
		s.queue = s.queue[1:]
		fetches++
		s.read(ctx, next)
	}
	return s.urls, s.warnings
}

// sitemapReader is the state of one Sitemaps call.
type sitemapReader struct {
	client     *http.Client
	robots     *Robots
	robotsHost string // the host robots describes
	userAgent  string
	limit      int
	guessed    string // the /sitemap.xml nobody named

	queue    []queuedSitemap
	queued   map[string]bool // every sitemap URL ever queued, so each is fetched once
	found    map[string]bool // page URLs returned so far
	urls     []SitemapURL
	warnings []string
}

type queuedSitemap struct {
	url   string
	depth int
}

func (s *sitemapReader) enqueue(u string, depth int) {
	if s.queued[u] {
		return
	}
	s.queued[u] = true
	s.queue = append(s.queue, queuedSitemap{u, depth})
}

func (s *sitemapReader) warn(sitemap, format string, args ...any) {
	s.warnings = append(s.warnings, "sitemap "+sitemap+": "+fmt.Sprintf(format, args...))
}

func (s *sitemapReader) full() bool {
	return s.limit > 0 && len(s.urls) >= s.limit
}

// addPage records a page URL; it reports false once the limit is reached.
func (s *sitemapReader) addPage(sitemap *url.URL, loc, lastmod string) bool {
	u, ok := Resolve(sitemap, loc)
	if !ok {
		return !s.full()
	}
	key := u.String()
	if !s.found[key] {
		s.found[key] = true
		s.urls = append(s.urls, SitemapURL{URL: key, LastMod: parseLastMod(lastmod)})
	}
	return !s.full()
}

func (s *sitemapReader) addChild(parent *url.URL, loc string, depth int) {
	u, ok := Resolve(parent, loc)
	if !ok {
		return
	}
	if depth > maxSitemapDepth {
		s.warn(u.String(), "nested more than %d levels deep, not followed", maxSitemapDepth)
		return
	}
	s.enqueue(u.String(), depth)
}

// read fetches one sitemap and adds what it names.
func (s *sitemapReader) read(ctx context.Context, q queuedSitemap) {
	su, err := url.Parse(q.url)
	if err != nil {
		s.warn(q.url, "%v", err)
		return
	}
	guessed := q.url == s.guessed
	if su.Host == s.robotsHost && !s.robots.Allowed(su) {
		if !guessed {
			s.warn(q.url, "disallowed by robots.txt")
		}
		return
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, q.url, nil)
	if err != nil {
		s.warn(q.url, "%v", err)
		return
	}
	req.Header.Set("User-Agent", s.userAgent)
	req.Header.Set("Accept", "application/xml, text/xml, text/plain;q=0.9, */*;q=0.5")
	resp, err := s.client.Do(req)
	if err != nil {
		s.warn(q.url, "%v", unwrapURLError(err))
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		if !(guessed && (resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone)) {
			s.warn(q.url, "HTTP %d", resp.StatusCode)
		}
		return
	}

	body, err := openSitemapBody(resp.Body)
	if err != nil {
		s.warn(q.url, "%v", err)
		return
	}
	if isXML(body) {
		err = s.readXML(body, su, q.depth, guessed)
	} else {
		err = s.readText(body, su, guessed)
	}
	// A cancelled crawl is reported once by Sitemaps, not as a broken
	// sitemap.
	if err != nil && ctx.Err() == nil {
		s.warn(q.url, "%v", err)
	}
}

// errTooLarge is reported for a sitemap cut off at maxSitemapBytes; what
// was read before the cut is kept.
var errTooLarge = fmt.Errorf("larger than %d MiB, read only that much", maxSitemapBytes>>20)

// cappedReader is an io.Reader that fails with errTooLarge once more than
// its allowance has been read, so that a parser consuming it stops there
// instead of taking a truncated stream for a complete one.
type cappedReader struct {
	r    io.Reader
	left int64
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		// One byte more tells "exactly at the cap" from "over it".
		var one [1]byte
		if n, _ := io.ReadFull(c.r, one[:]); n > 0 {
			return 0, errTooLarge
		}
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// openSitemapBody returns a buffered reader over the sitemap's content,
// decompressed when the body starts with the gzip magic bytes (servers
// label .xml.gz files every which way, so the name and headers are not
// trusted), and capped at maxSitemapBytes.
func openSitemapBody(raw io.Reader) (*bufio.Reader, error) {
	br := bufio.NewReader(raw)
	var r io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("gzip: %v", unwrapURLError(err))
		}
		r = zr
	}
	return bufio.NewReader(&cappedReader{r: r, left: maxSitemapBytes}), nil
}

// isXML tells an XML sitemap from a plain-text one by its first
// non-blank character, after any byte order mark.
func isXML(br *bufio.Reader) bool {
	head, _ := br.Peek(1024)
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	head = bytes.TrimLeft(head, " \t\r\n")
	return len(head) > 0 && head[0] == '<'
}

// sitemapEntry is a <url> of a urlset or a <sitemap> of a sitemapindex.
// The tags carry no namespace so that sitemaps with, without or with a
// wrong namespace are all read.
type sitemapEntry struct {
	Loc     string `xml:"loc"`
	LastMod string `xml:"lastmod"`
}

// readXML streams through an XML sitemap, so that a 50 MiB file is never
// held whole; it keeps what it found before an error.
func (s *sitemapReader) readXML(r io.Reader, sitemap *url.URL, depth int, guessed bool) error {
	d := xml.NewDecoder(r)
	// Hand-made sitemaps often carry bare "&" in URLs and undeclared HTML
	// entities; a lenient decoder reads them as a browser would.
	d.Strict = false
	d.Entity = xml.HTMLEntity
	d.CharsetReader = charset.NewReaderLabel

	root := ""
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			if errors.Is(err, errTooLarge) {
				return errTooLarge
			}
			return fmt.Errorf("malformed XML: %v", err)
		}
		start, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if root == "" {
			root = start.Name.Local
			if root != "urlset" && root != "sitemapindex" {
				if guessed {
					return nil
				}
				return fmt.Errorf("not a sitemap (root element <%s>)", root)
			}
			continue
		}
		// Both kinds of entry are accepted under either root: some
		// generators mix them, and the entry says what it is.
		switch start.Name.Local {
		case "url":
			var e sitemapEntry
			if err := d.DecodeElement(&e, &start); err != nil {
				if errors.Is(err, errTooLarge) {
					return errTooLarge
				}
				return fmt.Errorf("malformed XML: %v", err)
			}
			if !s.addPage(sitemap, strings.TrimSpace(e.Loc), strings.TrimSpace(e.LastMod)) {
				return nil
			}
		case "sitemap":
			var e sitemapEntry
			if err := d.DecodeElement(&e, &start); err != nil {
				if errors.Is(err, errTooLarge) {
					return errTooLarge
				}
				return fmt.Errorf("malformed XML: %v", err)
			}
			s.addChild(sitemap, strings.TrimSpace(e.Loc), depth+1)
		}
	}
	if root == "" && !guessed {
		return errors.New("not a sitemap (no XML element)")
	}
	return nil
}

// readText reads a plain-text sitemap: one absolute URL per line. Lines that
// are not http or https URLs are ignored, as the protocol asks.
func (s *sitemapReader) readText(br *bufio.Reader, sitemap *url.URL, guessed bool) error {
	found := 0
	for {
		line, err := readLine(br)
		if line = strings.TrimSpace(strings.TrimPrefix(line, "\ufeff")); line != "" {
			if _, ok := Resolve(nil, line); ok {
				found++
				if !s.addPage(sitemap, line, "") {
					return nil
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if found == 0 && !guessed {
		return errors.New("not a sitemap (no URLs)")
	}
	return nil
}

// readLine returns the next line of br without its newline. A line longer
// than maxTextLine is returned empty and its bytes are skipped without
// being kept, so a line-less body costs no memory.
func readLine(br *bufio.Reader) (string, error) {
	var buf []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > maxTextLine {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if tooLong {
			return "", err
		}
		return string(bytes.TrimRight(buf, "\r\n")), err
	}
}

// lastModLayouts are the W3C Datetime forms the sitemap protocol allows,
// most specific first, plus a few common deviations.
var lastModLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04:05",
	"2006-01-02 15:04:05",
	"2006-01-02",
	"2006-01",
	"2006",
	time.RFC1123Z,
	time.RFC1123,
}

func parseLastMod(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	for _, layout := range lastModLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	return time.Time{}
}
