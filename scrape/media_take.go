package scrape

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/trawler-dev/trawler/cdp"
)

// mediaTries bounds the sources tried for one format: the page's main
// media is among its first few candidates or nowhere.
const mediaTries = 3

// mediaReadChunk is how much of the body one IO.read asks for: larger
// reads were no faster (about 25 MB/s either way), and hold more in memory.
const mediaReadChunk = 1 << 20

// findMediaScript reports the page's media: its <video> elements, the
// largest shown first; its <audio> elements, the shown and longest first;
// and its og:video and og:audio. Each element's URL is the one it plays,
// else its src, else its first <source> it can play; all absolute.
const findMediaScript = `(() => {
  const abs = u => { try { return u ? new URL(u, document.baseURI).href : ""; } catch (e) { return ""; } };
  const area = el => { const r = el.getBoundingClientRect(); return Math.max(0, r.width) * Math.max(0, r.height); };
  const shown = el => { const s = getComputedStyle(el); return area(el) > 0 && s.visibility !== "hidden" && s.display !== "none"; };
  const source = el => {
    if (el.srcObject) return {stream: true};
    let u = el.currentSrc || (el.getAttribute("src") ? el.src : "");
    if (!u) {
      const all = [...el.querySelectorAll("source[src]")];
      u = (all.find(s => !s.type || el.canPlayType(s.type) !== "") || all[0] || {}).src || "";
    }
    return {url: abs(u)};
  };
  const elements = sel => [...document.querySelectorAll(sel)].map((el, i) => ({...source(el),
    shown: shown(el), area: area(el), duration: isFinite(el.duration) ? el.duration : 0, order: i}))
    .filter(m => m.url || m.stream);
  const meta = names => names.flatMap(n => [...document.querySelectorAll('meta[property="' + n + '"], meta[name="' + n + '"]')])
    .map(m => abs(m.getAttribute("content"))).filter(Boolean);
  return {
    page: location.href,
    videos: elements("video").sort((a, b) => (b.shown - a.shown) || (b.area - a.area) || (a.order - b.order)),
    audios: elements("audio").sort((a, b) => (b.shown - a.shown) || (b.duration - a.duration) || (a.order - b.order)),
    ogVideo: meta(["og:video:secure_url", "og:video:url", "og:video"]),
    ogAudio: meta(["og:audio:secure_url", "og:audio:url", "og:audio"]),
  };
})()`

// mediaFound is what findMediaScript reports.
type mediaFound struct {
	Page    string         `json:"page"`
	Videos  []mediaElement `json:"videos"`
	Audios  []mediaElement `json:"audios"`
	OGVideo []string       `json:"ogVideo"`
	OGAudio []string       `json:"ogAudio"`
}

type mediaElement struct {
	URL string `json:"url"`
	// Stream: the element plays a MediaStream (a camera, WebRTC).
	Stream bool `json:"stream"`
}

// mediaSource is one candidate for a format: a URL and what names it.
type mediaSource struct {
	url  string
	from string // <video>, og:audio, ...
}

// sources lists the candidates for kind, best first: for video the page's
// <video> elements, then og:video; for audio its <audio> elements and
// og:audio, then the sound of its video.
func (f *mediaFound) sources(kind string) []mediaSource {
	var out []mediaSource
	seen := map[string]bool{}
	elems := func(tag string, els []mediaElement) {
		for _, e := range els {
			u := e.URL
			if e.Stream {
				u = "mediastream:"
			}
			if !seen[u] {
				seen[u] = true
				out = append(out, mediaSource{url: u, from: tag})
			}
		}
	}
	metas := func(name string, urls []string) {
		for _, u := range urls {
			if !seen[u] {
				seen[u] = true
				out = append(out, mediaSource{url: u, from: name})
			}
		}
	}
	if kind == "audio" {
		elems("<audio>", f.Audios)
		metas("og:audio", f.OGAudio)
	}
	elems("<video>", f.Videos)
	metas("og:video", f.OGVideo)
	return out
}

// MediaTooLargeError is a scrape whose page's main media, asked for by the
// audio or video format, is over the cap: the scrape is refused (413
// MEDIA_TOO_LARGE), not answered without it.
type MediaTooLargeError struct {
	Format, Source string
	Err            error
}

func (e *MediaTooLargeError) Error() string {
	return fmt.Sprintf("%s: the page's %s is %v, so the scrape is refused", e.Format, e.Source, e.Err)
}

func (e *MediaTooLargeError) Unwrap() error { return e.Err }

// errMediaTooLarge is a media file over the cap.
type errMediaTooLarge struct{ max int64 }

func (e *errMediaTooLarge) Error() string {
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

// takeMedia takes the page's main media for the audio and video formats o
// asks for, through the browser: the bytes stream to a file of sp, up to
// its cap. Nothing is taken with zero data retention (finishMedia says
// why). It never fails the scrape: what cannot be taken is a warning.
func (t *tab) takeMedia(ctx context.Context, o *Options, sp spool) *pageMedia {
	kinds := mediaKinds(o)
	if len(kinds) == 0 || o.ZeroDataRetention {
		return nil
	}
	pm := &pageMedia{}
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
		t.log.Error("creating the media spool", "err", err)
		warn("the media could not be taken (see the server log)")
		return pm
	}
	var found mediaFound
	if err := t.evaluate(ctx, findMediaScript, &found); err != nil {
		warn("the page's media could not be read: " + err.Error())
		return pm
	}
	taken := map[string]taking{} // by URL: one source serves both formats
	for _, kind := range kinds {
		m, warning, big := t.takeKind(ctx, kind, &found, sp, taken)
		if big != nil {
			pm.tooLarge = &MediaTooLargeError{Format: kind, Source: big.from + " " + truncateURL(big.url), Err: big.err}
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
	m   *takenMedia
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
func (t *tab) takeKind(ctx context.Context, kind string, found *mediaFound, sp spool, taken map[string]taking) (*takenMedia, string, *tooBig) {
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
			got.m, got.err = t.download(ctx, src.url, found.Page, sp)
			taken[src.url] = got
		}
		m, err := got.m, got.err
		var big *errMediaTooLarge
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

func truncateURL(u string) string {
	if len(u) > 200 {
		return u[:200] + "…"
	}
	return u
}

// download takes u into a file of sp. A data: URL is decoded here; an
// http(s) URL is fetched as the page would fetch it, through the browser's
// network stack (the egress proxy and its guard) in a helper tab of the
// page's browser context (its cookies) with the page's user agent, headers
// and referrer, every request of it (redirects too) passing the tab's
// guard and ad blocker. The body streams from the browser (IO.read) to the
// file; a body past the cap is cut off there, and one that says it is
// larger is not read at all.
func (t *tab) download(ctx context.Context, u, referrer string, sp spool) (*takenMedia, error) {
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
	if err := t.checkRequest(ctx, u); err != nil {
		return nil, fmt.Errorf("refused: %w", err)
	}
	h, err := t.helperTab(ctx)
	if err != nil {
		return nil, fmt.Errorf("opening a tab to take it: %w", err)
	}
	defer h.close()
	return h.take(ctx, u, referrer, sp)
}

// helperTab is a tab of the page's browser context, driven on its own
// session of the tab's connection, that takes one media file.
type helperTab struct {
	t        *tab
	targetID string
	sid      string
	// responses are the document responses paused at the response stage;
	// refused, the requests the guard refused.
	responses chan fetchPaused
	refused   chan error
}

func (t *tab) helperTab(ctx context.Context) (*helperTab, error) {
	var tg struct {
		TargetID string `json:"targetId"`
	}
	if err := t.conn.Call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank",
		"browserContextId": t.contextID, "background": true}, &tg); err != nil {
		return nil, err
	}
	h := &helperTab{t: t, targetID: tg.TargetID, responses: make(chan fetchPaused, 1), refused: make(chan error, 1)}
	var at struct {
		SessionID string `json:"sessionId"`
	}
	if err := t.conn.Call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": tg.TargetID, "flatten": true}, &at); err != nil {
		h.close()
		return nil, err
	}
	h.sid = at.SessionID
	// The connection has one event handler, the tab's: the helper's
	// events are taken out of its stream until close.
	t.conn.OnEvent(func(ev cdp.Event) {
		if ev.SessionID == h.sid {
			h.onEvent(ev)
			return
		}
		t.onEvent(ev)
	})
	if err := h.prepare(ctx); err != nil {
		h.close()
		return nil, err
	}
	return h, nil
}

// prepare makes the helper's requests the page's: interception, user
// agent, language, headers, certificate policy.
func (h *helperTab) prepare(ctx context.Context) error {
	t := h.t
	var ua string
	if err := t.evaluate(ctx, "navigator.userAgent", &ua); err != nil {
		return err
	}
	steps := []step{
		{"Fetch.enable", map[string]any{"patterns": []map[string]any{{"urlPattern": "*", "requestStage": "Request"},
			{"urlPattern": "*", "resourceType": "Document", "requestStage": "Response"}}}},
		{"Security.setIgnoreCertificateErrors", map[string]any{"ignore": t.opts.SkipTLSVerification}},
		{"Network.setUserAgentOverride", t.userAgentOverride(ua)},
	}
	if extra := t.extraHeaders(); len(extra) > 0 {
		steps = append(steps, step{"Network.enable", networkParams}, step{"Network.setExtraHTTPHeaders", map[string]any{"headers": extra}})
	}
	for _, s := range steps {
		if err := t.conn.Call(ctx, h.sid, s.method, s.params, nil); err != nil {
			return err
		}
	}
	return nil
}

// onEvent runs on the connection's reader: it never blocks.
func (h *helperTab) onEvent(ev cdp.Event) {
	if ev.Method != "Fetch.requestPaused" {
		return
	}
	var e fetchPaused
	if json.Unmarshal(ev.Params, &e) != nil {
		return
	}
	go h.onPaused(&e)
}

func (h *helperTab) onPaused(e *fetchPaused) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cont := func() {
		h.t.conn.Call(ctx, h.sid, "Fetch.continueRequest", map[string]any{"requestId": e.RequestID}, nil)
	}
	switch {
	case e.ResponseStatusCode == 0 && e.ResponseErrorReason == "":
		if err := h.t.checkRequest(ctx, e.Request.URL); err != nil {
			select {
			case h.refused <- fmt.Errorf("refused: %w", err):
			default:
			}
			h.t.conn.Call(ctx, h.sid, "Fetch.failRequest", map[string]any{"requestId": e.RequestID, "errorReason": "BlockedByClient"}, nil)
			return
		}
		cont()
	case e.ResourceType != "Document" || e.FrameID != h.targetID || e.ResponseErrorReason != "" ||
		(e.ResponseStatusCode >= 300 && e.ResponseStatusCode < 400):
		cont()
	default:
		select {
		case h.responses <- *e:
		default:
			cont()
		}
	}
}

// take navigates the helper to u and streams the response's body to a
// file of sp.
func (h *helperTab) take(ctx context.Context, u, referrer string, sp spool) (*takenMedia, error) {
	type navigated struct {
		errorText string
		err       error
	}
	done := make(chan navigated, 1)
	go func() {
		var nav struct {
			ErrorText string `json:"errorText"`
		}
		err := h.t.conn.Call(ctx, h.sid, "Page.navigate", map[string]any{"url": u, "referrer": referrer}, &nav)
		done <- navigated{nav.ErrorText, err}
	}()
	var e fetchPaused
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
	return h.body(ctx, &e, sp)
}

// body streams the paused response e to a file of sp, or refuses it.
func (h *helperTab) body(ctx context.Context, e *fetchPaused, sp spool) (*takenMedia, error) {
	call := func(method string, params, result any) error {
		return h.t.conn.Call(ctx, h.sid, method, params, result)
	}
	// The navigation ends here whatever is done with its body: it must
	// not commit (and start a renderer) nor turn into a download.
	defer h.t.conn.Call(context.WithoutCancel(ctx), h.sid, "Fetch.failRequest", map[string]any{"requestId": e.RequestID, "errorReason": "Aborted"}, nil)
	if e.ResponseStatusCode < 200 || e.ResponseStatusCode > 299 {
		return nil, fmt.Errorf("answered HTTP %d", e.ResponseStatusCode)
	}
	ct := h.t.header(e, "Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	ext := ""
	if pu, err := url.Parse(e.Request.URL); err == nil {
		ext = strings.ToLower(path.Ext(pu.Path))
	}
	switch {
	case strings.Contains(mt, "mpegurl") || mt == "application/dash+xml" || ext == ".m3u8" || ext == ".mpd":
		return nil, errors.New("is an HLS or DASH playlist (a stream cut into many files), which is not taken")
	case strings.HasPrefix(mt, "text/") || strings.Contains(mt, "html") || strings.Contains(mt, "json") || strings.Contains(mt, "xml"):
		return nil, fmt.Errorf("is %s, not audio or video", mt)
	}
	if n, err := strconv.ParseInt(h.t.header(e, "Content-Length"), 10, 64); err == nil && n > sp.max {
		return nil, &errMediaTooLarge{max: sp.max}
	}
	var st struct {
		Stream string `json:"stream"`
	}
	if err := call("Fetch.takeResponseBodyAsStream", map[string]any{"requestId": e.RequestID}, &st); err != nil {
		return nil, err
	}
	defer h.t.conn.Call(context.WithoutCancel(ctx), h.sid, "IO.close", map[string]any{"handle": st.Stream}, nil)
	f, err := os.CreateTemp(sp.dir, "take-*")
	if err != nil {
		return nil, err
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
		var rd struct {
			Data          string `json:"data"`
			Base64Encoded bool   `json:"base64Encoded"`
			EOF           bool   `json:"eof"`
		}
		if err := call("IO.read", map[string]any{"handle": st.Stream, "size": mediaReadChunk}, &rd); err != nil {
			return nil, fmt.Errorf("reading it: %w", err)
		}
		chunk := []byte(rd.Data)
		if rd.Base64Encoded {
			if chunk, err = base64.StdEncoding.DecodeString(rd.Data); err != nil {
				return nil, fmt.Errorf("reading it: %w", err)
			}
		}
		if written += int64(len(chunk)); written > sp.max {
			return nil, &errMediaTooLarge{max: sp.max}
		}
		if _, err := f.Write(chunk); err != nil {
			return nil, err
		}
		if rd.EOF {
			break
		}
	}
	if written == 0 {
		return nil, errors.New("answered with an empty body")
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	keep = true
	return &takenMedia{path: f.Name(), url: e.Request.URL, contentType: ct}, nil
}

// close closes the helper's tab and gives the connection's events back to
// the tab alone.
func (h *helperTab) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h.t.conn.OnEvent(h.t.onEvent)
	h.t.conn.Call(ctx, "", "Target.closeTarget", map[string]any{"targetId": h.targetID}, nil)
}

// takeDataURL decodes a data: URL into a file of sp.
func takeDataURL(u string, sp spool) (*takenMedia, error) {
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
		return nil, &errMediaTooLarge{max: sp.max}
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
	return &takenMedia{path: f.Name(), url: "data:", contentType: meta}, nil
}
