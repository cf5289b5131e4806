package media

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/cdproto/fetch"
	cdpio "github.com/chromedp/cdproto/io"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/security"
	"github.com/chromedp/cdproto/target"

	"github.com/trawler-dev/trawler/cdp"
)

// readChunk is how much of the body one IO.read asks for: larger reads
// were no faster, and hold more in memory.
const readChunk = 1 << 20

// pausedWait bounds the answer to one paused request.
const pausedWait = 30 * time.Second

// download takes u into a file of sp. A data: URL is decoded here; an
// http(s) URL is fetched as the page would fetch it, through the browser's
// network stack (the egress proxy and its guard) in a helper tab of the
// page's browser context (its cookies) with the page's user agent, headers
// and referrer, every request of it (redirects too) passing the tab's
// guard and ad blocker. The body streams from the browser (IO.read) to the
// file; a body past the cap is cut off there, and one that says it is
// larger is not read at all.
func download(ctx context.Context, tab Tab, u, referrer string, sp spool) (*file, error) {
	pu, err := url.Parse(u)
	if err != nil {
		return nil, err
	}
	switch pu.Scheme {
	case "data":
		return takeDataURL(u, sp)
	case "http", "https":
	default:
		return nil, fmt.Errorf("%s: URLs are not taken", pu.Scheme)
	}
	if err := tab.CheckRequest(ctx, u); err != nil {
		return nil, fmt.Errorf("refused: %w", err)
	}
	h, err := openHelper(ctx, tab)
	if err != nil {
		return nil, fmt.Errorf("opening a tab to take it: %w", err)
	}
	defer h.close()
	return h.take(ctx, u, referrer, sp)
}

// helperTab is a tab of the page's browser context, driven on its own
// session of the tab's connection, that takes one media file.
type helperTab struct {
	tab Tab
	s   cdp.Session
	// responses are the document responses paused at the response stage;
	// refused, the requests the guard refused.
	responses chan *fetch.EventRequestPaused
	refused   chan error
	// unshare gives the connection's events back to the tab alone.
	unshare func()
}

func openHelper(ctx context.Context, tab Tab) (*helperTab, error) {
	background := true
	s, err := cdp.OpenTarget(ctx, tab.Session().Conn, target.CreateTargetParams{BrowserContextID: tab.BrowserContext(),
		Background: &background})
	if err != nil {
		return nil, err
	}
	h := &helperTab{tab: tab, s: s, responses: make(chan *fetch.EventRequestPaused, 1), refused: make(chan error, 1)}
	h.unshare = tab.Share(s.ID, h.onEvent)
	if err := h.prepare(ctx); err != nil {
		h.close()
		return nil, err
	}
	return h, nil
}

// prepare makes the helper's requests the page's: interception, user
// agent, language, headers, certificate policy.
func (h *helperTab) prepare(ctx context.Context) error {
	var ua string
	if err := h.tab.Evaluate(ctx, "navigator.userAgent", &ua); err != nil {
		return err
	}
	rq := h.tab.Requests(ua)
	err := cdp.Intercept(ctx, h.s, cdp.RequestsAndDocuments...)
	if err == nil {
		err = cdp.Run(ctx, h.s, security.SetIgnoreCertificateErrors,
			security.SetIgnoreCertificateErrorsParams{Ignore: rq.IgnoreCertificateErrors})
	}
	if err == nil {
		err = h.s.OverrideUserAgent(ctx, rq.UserAgent)
	}
	if err != nil || len(rq.Headers) == 0 {
		return err
	}
	if err := cdp.EnableNetwork(ctx, h.s); err != nil {
		return err
	}
	headers := network.Headers{}
	for k, v := range rq.Headers {
		headers[k] = v
	}
	return cdp.Run(ctx, h.s, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: headers})
}

// onEvent runs on the connection's reader: it never blocks.
func (h *helperTab) onEvent(ev cdp.Event) {
	if e, ok, err := cdp.Decode(ev, fetch.RequestPaused); ok && err == nil {
		go h.onPaused(&e)
	}
}

func (h *helperTab) onPaused(e *fetch.EventRequestPaused) {
	ctx, cancel := context.WithTimeout(context.Background(), pausedWait)
	defer cancel()
	p := cdp.PausedOf(h.s, e)
	cont := func() { p.Continue(ctx) }
	switch {
	case e.ResponseStatusCode == 0 && e.ResponseErrorReason == "":
		if err := h.tab.CheckRequest(ctx, requestURL(e)); err != nil {
			select {
			case h.refused <- fmt.Errorf("refused: %w", err):
			default:
			}
			p.Fail(ctx, network.ErrorReasonBlockedByClient)
			return
		}
		cont()
	case e.ResourceType != network.ResourceTypeDocument || string(e.FrameID) != string(h.s.TargetID) ||
		e.ResponseErrorReason != "" || (e.ResponseStatusCode >= 300 && e.ResponseStatusCode < 400):
		cont()
	default:
		select {
		case h.responses <- e:
		default:
			cont()
		}
	}
}

// requestURL is the URL e's request asks for.
func requestURL(e *fetch.EventRequestPaused) string {
	if e.Request == nil {
		return ""
	}
	return e.Request.URL
}

// take navigates the helper to u and streams the response's body to a
// file of sp.
func (h *helperTab) take(ctx context.Context, u, referrer string, sp spool) (*file, error) {
	type navigated struct {
		errorText string
		err       error
	}
	done := make(chan navigated, 1)
	go func() {
		nav, err := cdp.Do(ctx, h.s, page.Navigate, page.NavigateParams{URL: u, Referrer: referrer})
		done <- navigated{nav.ErrorText, err}
	}()
	var e *fetch.EventRequestPaused
	select {
	case e = <-h.responses:
	case err := <-h.refused:
		return nil, err
	case n := <-done:
		select {
		case err := <-h.refused:
			return nil, err
		case e = <-h.responses: // answered as the navigation failed
		default:
			switch {
			case n.err != nil:
				return nil, n.err
			case n.errorText != "":
				return nil, errors.New("could not be loaded: " + n.errorText)
			}
			return nil, errors.New("the browser answered it without a response")
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return h.body(ctx, e, sp)
}

// body streams the paused response e to a file of sp, or refuses it.
func (h *helperTab) body(ctx context.Context, e *fetch.EventRequestPaused, sp spool) (*file, error) {
	// The navigation ends here whatever is done with its body: it must
	// not commit (and start a renderer) nor turn into a download.
	defer cdp.PausedOf(h.s, e).Fail(context.WithoutCancel(ctx), network.ErrorReasonAborted)
	if e.ResponseStatusCode < 200 || e.ResponseStatusCode > 299 {
		return nil, fmt.Errorf("answered HTTP %d", e.ResponseStatusCode)
	}
	ct := cdp.ResponseHeader(e, "Content-Type")
	if err := refuseType(ct, requestURL(e)); err != nil {
		return nil, err
	}
	if n, err := strconv.ParseInt(cdp.ResponseHeader(e, "Content-Length"), 10, 64); err == nil && n > sp.max {
		return nil, &errTooLarge{max: sp.max}
	}
	st, err := cdp.Do(ctx, h.s, fetch.TakeResponseBodyAsStream, fetch.TakeResponseBodyAsStreamParams{RequestID: e.RequestID})
	if err != nil {
		return nil, err
	}
	defer cdp.Run(context.WithoutCancel(ctx), h.s, cdpio.Close, cdpio.CloseParams{Handle: st.Stream})
	path, err := h.stream(ctx, st.Stream, sp)
	if err != nil {
		return nil, err
	}
	return &file{path: path, url: requestURL(e), contentType: ct}, nil
}

// refuseType refuses a response that is not a single media file, by its
// content type ct and the path of its URL u.
func refuseType(ct, u string) error {
	mt, _, _ := mime.ParseMediaType(ct)
	ext := ""
	if pu, err := url.Parse(u); err == nil {
		ext = strings.ToLower(path.Ext(pu.Path))
	}
	switch {
	case strings.Contains(mt, "mpegurl") || mt == "application/dash+xml" || ext == ".m3u8" || ext == ".mpd":
		return errors.New("is an HLS or DASH playlist (a stream cut into many files), which is not taken")
	case strings.HasPrefix(mt, "text/") || strings.Contains(mt, "html") || strings.Contains(mt, "json") || strings.Contains(mt, "xml"):
		return fmt.Errorf("is %s, not audio or video", mt)
	}
	return nil
}

// stream reads the stream to its end into a new file of sp and returns
// the file's path; past sp's cap it stops, and the file is removed.
func (h *helperTab) stream(ctx context.Context, handle cdpio.StreamHandle, sp spool) (string, error) {
	f, err := os.CreateTemp(sp.dir, "take-*")
	if err != nil {
		return "", err
	}
	keep := false
	defer func() {
		f.Close()
		if !keep {
			os.Remove(f.Name())
		}
	}()
	var written int64
	for {
		rd, err := cdp.Do(ctx, h.s, cdpio.Read, cdpio.ReadParams{Handle: handle, Size: readChunk})
		if err != nil {
			return "", fmt.Errorf("reading it: %w", err)
		}
		if written += int64(len(rd.Data)); written > sp.max {
			return "", &errTooLarge{max: sp.max}
		}
		if _, err := f.Write(rd.Data); err != nil {
			return "", err
		}
		if rd.EOF {
			break
		}
	}
	if written == 0 {
		return "", errors.New("answered with an empty body")
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	keep = true
	return f.Name(), nil
}

// close closes the helper's tab and gives the connection's events back to
// the tab alone.
func (h *helperTab) close() {
	h.unshare()
	h.s.CloseTarget()
}
