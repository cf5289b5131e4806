// Package discover decides which URLs a crawl (and the map endpoint) may
// visit and finds URLs to visit: links in a fetched page, robots.txt and
// sitemaps. It owns crawl scope (Rules), page identity for de-duplication
// (Rules.Key), robots.txt policy (Robots) and sitemap reading (Sitemaps). It
// never renders a page; the caller hands it the HTML it already has.
package discover

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"regexp"
	"regexp/syntax"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// RulesOptions are the crawl request fields that decide scope, with
// Firecrawl v2 /v2/crawl semantics.
type RulesOptions struct {
	// Start is the crawl's start URL (absolute http or https).
	Start string
	// IncludePaths are regular expressions; when any are given, only URLs
	// matching one of them are crawled, the start URL included.
	IncludePaths []string
	// ExcludePaths are regular expressions; matching URLs are skipped.
	// Excludes are checked before includes.
	ExcludePaths []string
	// RegexOnFullURL matches the patterns against the full URL (with the
	// query) instead of the pathname.
	RegexOnFullURL bool
	// CrawlEntireDomain, when false, keeps the crawl at or below the start
	// URL's path; when true, siblings and parents are crawled too.
	CrawlEntireDomain bool
	// AllowSubdomains follows hosts that share the start host's registrable
	// domain (public-suffix aware, so a.example.co.uk and b.example.co.uk
	// are related but other.co.uk is not).
	AllowSubdomains bool
	// AllowExternalLinks follows links to any host.
	AllowExternalLinks bool
	// IgnoreQueryParameters says the query string is not part of a page's
	// identity (see Rules.Key).
	IgnoreQueryParameters bool
	// DeduplicateSimilarURLs treats URLs that nearly always serve the same
	// page as one (see Rules.Key). Callers default it to true.
	DeduplicateSimilarURLs bool
}

// ErrInvalidStart is wrapped by the error NewRules returns when the start
// URL is not an absolute http or https URL.
var ErrInvalidStart = errors.New("start URL must be an absolute http or https URL")

// PatternError is an include or exclude pattern that is not a valid
// regular expression (Go RE2 syntax: no look-around or back-references).
type PatternError struct {
	// Field names the pattern as the request does, e.g. "includePaths[1]".
	Field string
	// Pattern is the pattern as given.
	Pattern string
	// Err is the compiler's complaint.
	Err error
}

// Error reads like "includePaths[1] is not a valid regular expression: ...".
func (e *PatternError) Error() string {
	return fmt.Sprintf("%s is not a valid regular expression: %v", e.Field, e.Err)
}

// Unwrap returns the compiler's error.
func (e *PatternError) Unwrap() error { return e.Err }

// Limits on a job's patterns. Each compiled pattern is held for the job's
// life and run against every link it finds, and a short pattern can
// compile to a large program ("(?i)(abc|def){999}" is 18 bytes and some
// nine thousand instructions, about 40 bytes each), so the budget is on the
// compiled size, not only on the count.
const (
	// MaxPatterns is the most patterns includePaths, or excludePaths, may
	// hold.
	MaxPatterns = 1000
	// MaxPatternBytes is the longest a pattern may be.
	MaxPatternBytes = 2048
	// MaxPatternInsts is the most instructions a job's patterns, include
	// and exclude together, may compile to.
	MaxPatternInsts = 50_000
)

// LimitError is a request whose patterns are past one of the limits
// above; it is checked before any pattern is compiled for the job.
type LimitError struct {
	// Field names what is too large, e.g. "includePaths" or
	// "excludePaths[3]".
	Field string
	// Message says by how much and what the limit is.
	Message string
}

func (e *LimitError) Error() string { return e.Message }

// Rules is the scope of one crawl: which URLs it may visit and when two
// URLs are the same page. It is immutable and safe for concurrent use.
type Rules struct {
	opts  RulesOptions
	start *url.URL

	// startHost is the start URL's host without "www.", startPort its
	// explicit non-default port, and startDomain its registrable domain
	// ("" when it has none, as for an IP address).
	startHost, startPort, startDomain string
	// scopeDir is the directory the crawl stays in without
	// CrawlEntireDomain, without its trailing slash ("" for the root).
	scopeDir string

	include, exclude []*regexp.Regexp
}

// NewRules checks and compiles o. It returns a *PatternError for an invalid
// include or exclude pattern and an error wrapping ErrInvalidStart for a
// start URL that is not absolute http or https.
func NewRules(o RulesOptions) (*Rules, error) {
	start, ok := Resolve(nil, o.Start)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrInvalidStart, o.Start)
	}
	r := &Rules{opts: o, start: start, scopeDir: scopeDir(start.Path)}
	r.startHost, r.startPort = hostParts(start)
	r.startDomain = registrableDomain(r.startHost)
	insts := 0
	var err error
	if r.include, err = compilePatterns("includePaths", o.IncludePaths, &insts); err != nil {
		return nil, err
	}
	if r.exclude, err = compilePatterns("excludePaths", o.ExcludePaths, &insts); err != nil {
		return nil, err
	}
	return r, nil
}

// compilePatterns compiles one field's patterns, adding their compiled
// size to *insts and refusing, before compiling it for good, the pattern
// that takes the job past MaxPatternInsts.
func compilePatterns(field string, patterns []string, insts *int) ([]*regexp.Regexp, error) {
	if len(patterns) > MaxPatterns {
		return nil, &LimitError{Field: field, Message: fmt.Sprintf("%s has %d patterns; at most %d are allowed", field, len(patterns), MaxPatterns)}
	}
	res := make([]*regexp.Regexp, 0, len(patterns))
	for i, p := range patterns {
		name := fmt.Sprintf("%s[%d]", field, i)
		if len(p) > MaxPatternBytes {
			return nil, &LimitError{Field: name, Message: fmt.Sprintf("%s is %d bytes long; a pattern may be at most %d", name, len(p), MaxPatternBytes)}
		}
		// The size is read from regexp/syntax's program, which is what
		// regexp.Compile builds too.
		parsed, err := syntax.Parse(p, syntax.Perl)
		if err != nil {
			return nil, &PatternError{Field: name, Pattern: p, Err: err}
		}
		prog, err := syntax.Compile(parsed.Simplify())
		if err != nil {
			return nil, &PatternError{Field: name, Pattern: p, Err: err}
		}
		if *insts += len(prog.Inst); *insts > MaxPatternInsts {
			return nil, &LimitError{Field: name, Message: fmt.Sprintf("includePaths and excludePaths compile to more than %d instructions together, the most a job may hold (%s alone is %d); use fewer or simpler patterns",
				MaxPatternInsts, name, len(prog.Inst))}
		}
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, &PatternError{Field: name, Pattern: p, Err: err}
		}
		res = append(res, re)
	}
	return res, nil
}

// scopeDir works out the directory a crawl without CrawlEntireDomain stays
// in: "/docs/" and "/docs" both mean /docs, while "/docs/intro.html" names
// a file, so its directory /docs is meant rather than the file itself.
func scopeDir(p string) string {
	if strings.HasSuffix(p, "/") {
		return strings.TrimSuffix(p, "/")
	}
	dir, file := path.Split(p)
	if path.Ext(file) != "" {
		return strings.TrimSuffix(dir, "/")
	}
	return p
}

// Start returns the crawl's start URL as Resolve normalised it. The caller
// must not modify it.
func (r *Rules) Start() *url.URL { return r.start }

// Allowed says whether the crawl may visit u and, if not, why, in a short
// English reason such as "outside the start path", "external host",
// "excluded by excludePaths[0]", "not matched by includePaths" or
// "not a page (.png)".
//
// The checks run in this order: scheme; credentials (a URL with
// user:pass@ is refused); host (the start host, where "www."
// and the bare name count as one host and a non-default port makes another
// host; its registrable domain with AllowSubdomains; any host with
// AllowExternalLinks); path (unless CrawlEntireDomain, or the URL is on
// another host that AllowExternalLinks admitted, the path must be at or
// below the start directory, on a subdomain too); file extension (images, styles, scripts, fonts, media,
// archives and binaries are not pages; PDF and word-processor and
// spreadsheet documents are); excludePaths (the first match wins);
// includePaths (when any are given, one must match).
//
// Patterns are matched against the pathname or, with RegexOnFullURL,
// against the full URL.
func (r *Rules) Allowed(u *url.URL) (ok bool, reason string) {
	if ok, reason := r.InScope(u); !ok {
		return false, reason
	}
	return r.matchesPatterns(u)
}

// InScope is Allowed without excludePaths and includePaths: whether u is
// a page of the crawl's site and path at all. A crawl's start page that
// is in scope is fetched for its links even when the patterns leave it
// out of the results.
func (r *Rules) InScope(u *url.URL) (ok bool, reason string) {
	if u == nil {
		return false, "no URL"
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		if scheme == "" {
			return false, "not an absolute URL"
		}
		return false, fmt.Sprintf("unsupported scheme (%s)", scheme)
	}
	// Resolve strips credentials; a URL that still has them came from
	// elsewhere and is neither fetched (the browser would send them) nor
	// listed (they would be echoed back).
	if u.User != nil {
		return false, "carries credentials (user:pass@)"
	}

	host, port := hostParts(u)
	sameHost := host == r.startHost && port == r.startPort
	if !sameHost && !r.opts.AllowExternalLinks {
		if !r.opts.AllowSubdomains || !r.sameDomain(host) {
			return false, "external host"
		}
	}

	// A subdomain admitted by AllowSubdomains stays within the start path
	// too: the option widens the hosts, not the paths. A host admitted only
	// by AllowExternalLinks has no relation to the start path at all.
	if !r.opts.CrawlEntireDomain && (sameHost || !r.opts.AllowExternalLinks) {
		if !underDir(u.Path, r.scopeDir) {
			return false, "outside the start path"
		}
	}

	if ext := strings.ToLower(path.Ext(u.Path)); ext != "" && assetExtensions[ext] {
		return false, fmt.Sprintf("not a page (%s)", ext)
	}
	return true, ""
}

// matchesPatterns applies excludePaths, then includePaths, to u.
func (r *Rules) matchesPatterns(u *url.URL) (ok bool, reason string) {
	subjects := r.subjects(u)
	for i, re := range r.exclude {
		if matchAny(re, subjects) {
			return false, fmt.Sprintf("excluded by excludePaths[%d]", i)
		}
	}
	if len(r.include) > 0 {
		matched := false
		for _, re := range r.include {
			if matchAny(re, subjects) {
				matched = true
				break
			}
		}
		if !matched {
			return false, "not matched by includePaths"
		}
	}
	return true, ""
}

// subjects are the strings the patterns are matched against. The pathname
// is tried both percent-encoded (as Firecrawl, which reads a JavaScript
// URL's pathname, sees it) and decoded (as a user writing "/café/" expects),
// so that a pattern works whichever spelling its author had in mind.
func (r *Rules) subjects(u *url.URL) []string {
	if r.opts.RegexOnFullURL {
		return []string{u.String()}
	}
	escaped := u.EscapedPath()
	if escaped == "" {
		escaped = "/"
	}
	if u.Path == "" || u.Path == escaped {
		return []string{escaped}
	}
	return []string{escaped, u.Path}
}

func matchAny(re *regexp.Regexp, subjects []string) bool {
	for _, s := range subjects {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// sameDomain reports whether host shares the start host's registrable
// domain. Hosts without one (IP addresses, single-label names such as
// localhost) only relate to their own subdomains.
func (r *Rules) sameDomain(host string) bool {
	if r.startDomain == "" {
		return host == r.startHost || strings.HasSuffix(host, "."+r.startHost)
	}
	return registrableDomain(host) == r.startDomain
}

// registrableDomain is host's public suffix plus one label, such as
// example.co.uk for a.example.co.uk, or "" when host has none. IP addresses
// have none: the public-suffix rules would make 10.0.0.1 and 127.0.0.1 both
// "0.1" and so one domain.
func registrableDomain(host string) string {
	if net.ParseIP(host) != nil {
		return ""
	}
	d, err := publicsuffix.EffectiveTLDPlusOne(host)
	if err != nil {
		return ""
	}
	return d
}

// hostParts returns u's host in lower case without a leading "www." and its
// port when that is not the scheme's default. The port is compared so that
// two services on one machine are separate sites; the default port is
// dropped so that http and https on the same name are one.
func hostParts(u *url.URL) (host, port string) {
	host = strings.TrimPrefix(strings.ToLower(u.Hostname()), "www.")
	port = u.Port()
	if port == defaultPort(strings.ToLower(u.Scheme)) {
		port = ""
	}
	return host, port
}

// underDir reports whether p is dir itself or inside it, comparing whole
// segments so that /docsearch is not under /docs.
func underDir(p, dir string) bool {
	if dir == "" {
		return true
	}
	if !strings.HasPrefix(p, dir) {
		return false
	}
	rest := p[len(dir):]
	return rest == "" || rest[0] == '/'
}

// assetExtensions are file extensions whose URLs are never pages: fetching
// them would only waste a browser. Documents the scraper can turn into
// Markdown (.pdf, .doc, .docx, .odt, .rtf, .xls, .xlsx) are deliberately
// absent.
var assetExtensions = map[string]bool{
	// images
	".png": true, ".jpg": true, ".jpeg": true, ".gif": true, ".webp": true, ".avif": true,
	".svg": true, ".ico": true, ".bmp": true, ".tif": true, ".tiff": true, ".heic": true,
	".heif": true, ".psd": true, ".eps": true, ".raw": true, ".cr2": true, ".nef": true,
	// styles and scripts
	".css": true, ".js": true, ".mjs": true, ".cjs": true, ".map": true, ".wasm": true,
	// fonts
	".woff": true, ".woff2": true, ".ttf": true, ".otf": true, ".eot": true,
	// audio and video
	".mp3": true, ".mp4": true, ".m4a": true, ".m4v": true, ".wav": true, ".ogg": true,
	".oga": true, ".ogv": true, ".opus": true, ".webm": true, ".avi": true, ".mov": true,
	".mkv": true, ".flv": true, ".wmv": true, ".wma": true, ".aac": true, ".flac": true,
	".mpg": true, ".mpeg": true, ".3gp": true, ".m3u8": true, ".ts": true, ".swf": true,
	// archives
	".zip": true, ".tar": true, ".gz": true, ".tgz": true, ".bz2": true, ".xz": true,
	".7z": true, ".rar": true, ".zst": true, ".lz": true, ".cab": true,
	// binaries and installers
	".exe": true, ".dmg": true, ".msi": true, ".pkg": true, ".deb": true, ".rpm": true,
	".apk": true, ".ipa": true, ".iso": true, ".img": true, ".bin": true, ".dll": true,
	".so": true, ".jar": true, ".appimage": true,
	// presentations and other office formats the scraper does not convert
	".ppt": true, ".pptx": true, ".pps": true, ".ppsx": true, ".odp": true, ".ods": true,
	".key": true, ".numbers": true, ".pages": true,
}
