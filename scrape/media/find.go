package media

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
