package media

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"

	cdproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"

	"github.com/trawler-dev/trawler/cdp"
)

// mediaTries bounds the sources tried for one format: the page's main
// media is among its first few candidates or nowhere.
const mediaTries = 3

// Tab is the tab of the page whose media is taken (scrape's tab): a helper
// tab opens beside it, in its browser context, and its requests go out as
// the page's do.
type Tab interface {
	// Session is the tab's session; the helper's is one more on its
	// connection.
	Session() cdp.Session
	// BrowserContext is the tab's browser context (its cookies).
	BrowserContext() cdproto.BrowserContextID
	// Evaluate runs expr in the page, awaiting a promise, and decodes its
	// value into v.
	Evaluate(ctx context.Context, expr string, v any) error
	// CheckRequest applies the tab's network guard and ad blocker to a
	// URL: every request of the helper passes them too.
	CheckRequest(ctx context.Context, url string) error
	// Requests is how the page's requests present themselves, for the
	// page's user agent ua.
	Requests(ua string) Requests
	// Share has the connection's events of session id go to h, and the
	// others to the tab, until stop is called: a connection has one event
	// handler, the tab's.
	Share(id string, h func(cdp.Event)) (stop func())
}

// Requests is how a tab's requests present themselves.
type Requests struct {
	// UserAgent are the parameters of Network.setUserAgentOverride (the
	// user agent, the languages).
	UserAgent emulation.SetUserAgentOverrideParams
	// Headers are the extra headers every request carries.
	Headers map[string]string
	// IgnoreCertificateErrors: the scrape skips TLS verification.
	IgnoreCertificateErrors bool
}

// Take takes the page's main media for the formats kinds ("audio",
// "video") through the tab's browser: the bytes stream to files of o's
// spool, up to its cap. It never fails the scrape: what cannot be taken
// is a warning; log gets what the server's operator must know.
func Take(ctx context.Context, tab Tab, kinds []string, o Options, log *slog.Logger) *Taken {
	sp := o.spool()
	pm := &Taken{}
	warn := func(msg string) {
		for _, k := range kinds {
			pm.warnings = append(pm.warnings, k+": "+msg)
		}
	}
	if sp.dir == "" {
		warn("media is not configured on this server")
		return pm
	}
	if err := os.MkdirAll(sp.dir, 0o700); err != nil {
		log.Error("creating the media spool", "err", err)
		warn("the media could not be taken (see the server log)")
		return pm
	}
	var found mediaFound
	if err := tab.Evaluate(ctx, findMediaScript, &found); err != nil {
		warn("the page's media could not be read: " + err.Error())
		return pm
	}
	taken := map[string]taking{} // by URL: one source serves both formats
	for _, kind := range kinds {
		m, warning, big := takeKind(ctx, tab, kind, &found, sp, taken)
		if big != nil {
			pm.TooLarge = &TooLargeError{Format: kind, Source: big.from + " " + truncateURL(big.url), Err: big.err}
		}
		if warning != "" {
			pm.warnings = append(pm.warnings, kind+": "+warning)
		}
		if kind == "audio" {
			pm.audio = m
		} else {
			pm.video = m
		}
	}
	return pm
}

// taking is what came of taking one URL: a file or why not.
type taking struct {
	m   *file
	err error
}

// tooBig is a source over the cap.
type tooBig struct {
	from, url string
	err       error
}

// takeKind takes the first of kind's candidates that can be taken; taken
// holds what came of the URLs tried so far, for both formats. A main
// media over the cap is returned as big.
func takeKind(ctx context.Context, tab Tab, kind string, found *mediaFound, sp spool, taken map[string]taking) (*file, string, *tooBig) {
	sources := found.sources(kind)
	if len(sources) == 0 {
		if kind == "audio" {
			return nil, "the page has no audio or video (no <audio>, <video>, og:audio or og:video)", nil
		}
		return nil, "the page has no video (no <video> or og:video)", nil
	}
	var why []string
	tries := 0
	for _, src := range sources {
		switch {
		case src.url == "mediastream:":
			why = append(why, "its "+src.from+" plays a live stream (a camera or a call), which cannot be taken")
			continue
		case strings.HasPrefix(src.url, "blob:"):
			why = append(why, "its "+src.from+" plays a MediaSource stream or an in-page blob ("+truncateURL(src.url)+"), which cannot be taken")
			continue
		}
		if tries == mediaTries {
			break
		}
		tries++
		got, ok := taken[src.url]
		if !ok {
			got.m, got.err = download(ctx, tab, src.url, found.Page, sp)
			taken[src.url] = got
		}
		m, err := got.m, got.err
		var big *errTooLarge
		switch {
		case err == nil:
			return m, "", nil
		case errors.As(err, &big):
			// The page's main media is too large: a smaller one further
			// down would not be what was asked for.
			return nil, "", &tooBig{from: src.from, url: src.url, err: err}
		case ctx.Err() != nil:
			return nil, "the scrape's timeout ran out while the media was taken", nil
		}
		why = append(why, fmt.Sprintf("%s %s: %s", src.from, truncateURL(src.url), err))
	}
	return nil, "the page's media could not be taken: " + strings.Join(why, "; "), nil
}

// truncateURL cuts a URL for a message.
func truncateURL(u string) string {
	if len(u) > 200 {
		return u[:200] + "…"
	}
	return u
}

// TooLargeError is a scrape whose page's main media, asked for by the
// audio or video format, is over the cap: the scrape is refused (413
// MEDIA_TOO_LARGE), not answered without it.
type TooLargeError struct {
	Format, Source string
	Err            error
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: the page's %s is %v, so the scrape is refused", e.Format, e.Source, e.Err)
}

func (e *TooLargeError) Unwrap() error { return e.Err }

// errTooLarge is a media file over the cap.
type errTooLarge struct{ max int64 }

func (e *errTooLarge) Error() string {
	return fmt.Sprintf("larger than the %s cap on a media file", sizeText(e.max))
}

// sizeText writes n bytes in MB or KB (2^20, 2^10) when it is a whole
// number of them.
func sizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%d-byte", n)
}

// takeDataURL decodes a data: URL into a file of sp.
func takeDataURL(u string, sp spool) (*file, error) {
	meta, payload, ok := strings.Cut(strings.TrimPrefix(u, "data:"), ",")
	if !ok {
		return nil, errors.New("is a malformed data: URL")
	}
	var raw []byte
	var err error
	if strings.HasSuffix(strings.ToLower(meta), ";base64") {
		meta = meta[:len(meta)-len(";base64")]
		raw, err = base64.StdEncoding.DecodeString(strings.Map(func(r rune) rune {
			if r == ' ' || r == '\n' || r == '\r' || r == '\t' {
				return -1
			}
			return r
		}, payload))
		if err != nil {
			if p, uerr := url.PathUnescape(payload); uerr == nil {
				raw, err = base64.StdEncoding.DecodeString(p)
			}
		}
	} else {
		var s string
		s, err = url.PathUnescape(payload)
		raw = []byte(s)
	}
	if err != nil {
		return nil, fmt.Errorf("is a malformed data: URL: %w", err)
	}
	if int64(len(raw)) > sp.max {
		return nil, &errTooLarge{max: sp.max}
	}
	f, err := os.CreateTemp(sp.dir, "take-*")
	if err != nil {
		return nil, err
	}
	_, err = f.Write(raw)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return nil, err
	}
	return &file{path: f.Name(), url: "data:", contentType: meta}, nil
}
