package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mediaBase is the TRAWLER_PUBLIC_URL of the media tests: the links of a
// document start with it, and the test sends their path to the service.
const mediaBase = "https://trawler.example.test"

// requireFFmpeg skips the test when ffmpeg is missing, except in CI (CI
// set), where it must be there.
func requireFFmpeg(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"ffmpeg", "ffprobe"} {
		if _, err := exec.LookPath(tool); err == nil {
			continue
		}
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed (apt-get install ffmpeg; scripts/install-deps.sh test)", tool)
		}
		t.Skipf("%s is not installed (apt-get install ffmpeg)", tool)
	}
}

// ffmpegFile makes dir/name with ffmpeg from lavfi sources: a 2-second
// 440 Hz tone, or 2 seconds of colour bars with the tone.
func ffmpegFile(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	cmd := exec.Command("ffmpeg", append(append([]string{"-nostdin", "-hide_banner", "-loglevel", "error", "-y"}, args...), out)...)
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "ffmpeg making %s: %s", name, msg)
	return out
}

var (
	tone = []string{"-f", "lavfi", "-i", "sine=frequency=440:duration=2"}
	bars = []string{"-f", "lavfi", "-i", "testsrc=duration=2:size=320x240:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:duration=2", "-shortest"}
)

// mediaSite serves pages that embed media files made by ffmpeg, and
// records every request for a file with its headers.
type mediaSite struct {
	*httptest.Server
	mu    sync.Mutex
	takes []*http.Request
}

// requests returns the recorded requests for path.
func (s *mediaSite) requests(path string) []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*http.Request
	for _, r := range s.takes {
		if r.URL.Path == path {
			out = append(out, r)
		}
	}
	return out
}

func newMediaSite(t *testing.T) *mediaSite {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"tone.wav":  ffmpegFile(t, dir, "tone.wav", append(tone, "-ac", "1", "-c:a", "pcm_s16le")...),
		"tone.ogg":  ffmpegFile(t, dir, "tone.ogg", append(tone, "-c:a", "libopus", "-b:a", "48k")...),
		"bars.webm": ffmpegFile(t, dir, "bars.webm", append(bars, "-c:v", "libvpx", "-b:v", "400k", "-c:a", "libopus")...),
		"bars.mp4": ffmpegFile(t, dir, "bars.mp4", append(bars, "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
			"-c:a", "aac", "-movflags", "+faststart")...),
	}
	s := &mediaSite{}
	page := func(head, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, `<!doctype html><html><head><title>Media</title>%s</head><body><main><h1>Listen and watch</h1>
<p>A page with its media, for the audio and video formats.</p>%s</main></body></html>`, head, body)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/audio-wav", page("", `<audio controls src="/media/tone.wav"></audio>`))
	mux.HandleFunc("/audio-ogg", page("", `<audio controls preload="none"><source src="/media/tone.ogg" type="audio/ogg; codecs=opus"></audio>`))
	mux.HandleFunc("/video-webm", page("", `<video controls width="320" height="240"><source src="/media/bars.webm" type="video/webm"></video>
<video width="32" height="24" src="/media/bars.mp4"></video>`))
	mux.HandleFunc("/video-og", page(`<meta property="og:video" content="/media/bars.mp4"><meta property="og:video:type" content="video/mp4">`, ""))
	mux.HandleFunc("/chunked", page("", `<audio controls src="/media/chunked.wav"></audio>`))
	mux.HandleFunc("/none", page("", "<p>Nothing to hear or see here.</p>"))
	mux.HandleFunc("/mse", page("", `<video width="320" height="240"></video>
<script>document.querySelector('video').src = URL.createObjectURL(new MediaSource());</script>`))
	mux.HandleFunc("/hls", page("", `<video width="320" height="240" src="/media/stream.m3u8"></video>`))
	mux.HandleFunc("/ad", page("", `<video width="320" height="240" src="http://doubleclick.net/ad.mp4"></video>`))
	mux.HandleFunc("/media/", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.takes = append(s.takes, r.Clone(context.Background()))
		s.mu.Unlock()
		name := strings.TrimPrefix(r.URL.Path, "/media/")
		if name == "stream.m3u8" {
			w.Header().Set("Content-Type", "application/vnd.apple.mpegurl")
			fmt.Fprint(w, "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n/media/tone.wav\n#EXT-X-ENDLIST\n")
			return
		}
		if name == "chunked.wav" {
			// No Content-Length: the cap is met while the body streams.
			w.Header().Set("Content-Type", "audio/wav")
			f, err := os.Open(files["tone.wav"])
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			defer f.Close()
			buf := make([]byte, 16<<10)
			for {
				n, err := f.Read(buf)
				if n > 0 {
					w.Write(buf[:n])
					w.(http.Flusher).Flush()
				}
				if err != nil {
					return
				}
			}
		}
		path, ok := files[name]
		if !ok {
			http.NotFound(w, r)
			return
		}
		http.ServeFile(w, r, path)
	})
	mux.HandleFunc("/", page("", fmt.Sprintf(`<video width="320" height="240" src="%s"></video>`, r404)))
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// r404 is a media URL the site does not have.
const r404 = "/media/missing.mp4"

// takeMedia GETs a document's media link with key, checks its headers and
// writes the body to a file.
func (ts *testService) takeMedia(t *testing.T, link, key, wantType string) string {
	t.Helper()
	require.True(t, strings.HasPrefix(link, mediaBase+"/v2/media/"), "a media link of the public base: %q", link)
	path := strings.TrimPrefix(link, mediaBase)
	req, _ := http.NewRequest("GET", ts.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode, "GET %s", path)
	assert.Equal(t, wantType, resp.Header.Get("Content-Type"))
	assert.Contains(t, resp.Header.Get("Content-Disposition"), "inline; filename=")
	out := filepath.Join(t.TempDir(), filepath.Base(path))
	f, err := os.Create(out)
	require.NoError(t, err)
	n, err := io.Copy(f, resp.Body)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	assert.Equal(t, strconv.FormatInt(n, 10), resp.Header.Get("Content-Length"), "Content-Length")
	return out
}

// probe is what ffprobe says of a file: its container, duration and the
// codec of each stream by type.
type probe struct {
	format   string
	duration float64
	codecs   map[string]string
}

func ffprobe(t *testing.T, path string) probe {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-print_format", "json", "-show_entries",
		"stream=codec_type,codec_name:format=format_name,duration", path).Output()
	require.NoError(t, err, "ffprobe %s", path)
	var p struct {
		Streams []struct {
			CodecType string `json:"codec_type"`
			CodecName string `json:"codec_name"`
		} `json:"streams"`
		Format struct {
			FormatName string `json:"format_name"`
			Duration   string `json:"duration"`
		} `json:"format"`
	}
	require.NoError(t, json.Unmarshal(out, &p))
	pr := probe{format: p.Format.FormatName, codecs: map[string]string{}}
	pr.duration, _ = strconv.ParseFloat(p.Format.Duration, 64)
	for _, s := range p.Streams {
		pr.codecs[s.CodecType] = s.CodecName
	}
	return pr
}

// The audio and video formats: the page's media, taken through the
// browser, converted (MP3; MP4 remuxed, or re-encoded when its codecs do
// not fit) and served to the team that scraped it, by ranges too.
func TestMediaFormats(t *testing.T) {
	t.Parallel()
	requireFFmpeg(t)
	web := newMediaSite(t)
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true", "TRAWLER_PUBLIC_URL": mediaBase})

	for _, tc := range []struct {
		name, page string
		formats    []any
		// audio and video are the wanted codecs, "" for none.
		audio, video string
		warning      string // a part of the document's warning, "" for none
	}{
		{name: "WAV in <audio src>", page: "/audio-wav", formats: []any{"audio"}, audio: "mp3"},
		{name: "Ogg Opus in <audio><source>", page: "/audio-ogg", formats: []any{"audio"}, audio: "mp3"},
		{name: "WebM VP8 in <video><source>, re-encoded", page: "/video-webm", formats: []any{"markdown", "video", "audio"},
			audio: "mp3", video: "h264", warning: "re-encoded its vp8 picture to H.264 and its opus sound to AAC"},
		{name: "MP4 H.264 in og:video, remuxed", page: "/video-og", formats: []any{"video"}, video: "h264"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.scrape(map[string]any{"url": web.URL + tc.page, "formats": tc.formats})
			require.Equal(t, 200, r.Status, "%s", r.Raw)
			d := data(r)
			warning, _ := d["warning"].(string)
			if tc.warning == "" {
				assert.Empty(t, warning, "warning")
			} else {
				assert.Contains(t, warning, tc.warning, "warning")
			}
			for _, want := range []struct{ kind, codec, mime, format string }{
				{"audio", tc.audio, "audio/mpeg", "mp3"}, {"video", tc.video, "video/mp4", "mov,mp4,m4a,3gp,3g2,mj2"},
			} {
				link, _ := d[want.kind].(string)
				if want.codec == "" {
					assert.Empty(t, link, want.kind)
					continue
				}
				file := ts.takeMedia(t, link, keyAcme, want.mime)
				p := ffprobe(t, file)
				assert.Equal(t, want.format, p.format, "%s container", want.kind)
				assert.InDelta(t, 2.0, p.duration, 0.25, "%s duration", want.kind)
				assert.Equal(t, want.codec, p.codecs[want.kind], "%s codec", want.kind)
				if want.kind == "audio" {
					assert.Empty(t, p.codecs["video"], "an MP3 has no picture")
				} else {
					assert.Equal(t, "aac", p.codecs["audio"], "the video's sound")
				}
			}
			if tc.page == "/video-webm" {
				require.Contains(t, d["markdown"], "Listen and watch", "the other formats stand")
			}
		})
	}

	// The bytes are taken by the browser, as the page would take them: its
	// user agent (without "Headless"), the page as referrer, a document
	// request of the browser's own (not the <audio> element's).
	var taken *http.Request
	for _, r := range web.requests("/media/tone.wav") {
		if r.Header.Get("Sec-Fetch-Dest") == "document" {
			taken = r
		}
	}
	require.NotNil(t, taken, "the browser's request for the WAV")
	assert.Contains(t, taken.UserAgent(), "Chrome/")
	assert.NotContains(t, taken.UserAgent(), "Headless")
	assert.Equal(t, web.URL+"/audio-wav", taken.Referer())

	// The link is the team's: another team, an unknown id and no key are
	// refused in the API's error shape; ranges are answered.
	r := ts.scrape(map[string]any{"url": web.URL + "/audio-wav", "formats": []any{"audio"}})
	link, _ := data(r)["audio"].(string)
	require.NotEmpty(t, link, "%s", r.Raw)
	path := strings.TrimPrefix(link, mediaBase)
	g := ts.do("GET", path, keyGlobex, nil)
	assert.Equal(t, 404, g.Status)
	assert.Equal(t, "NOT_FOUND", g.str("code"), "another team: %s", g.Raw)
	g = ts.do("GET", "/v2/media/00000000-0000-0000-0000-000000000000", keyAcme, nil)
	assert.Equal(t, "NOT_FOUND", g.str("code"), "an unknown id: %s", g.Raw)
	g = ts.do("GET", path, "", nil)
	assert.Equal(t, "UNAUTHORIZED", g.str("code"), "no key: %s", g.Raw)
	g = ts.do("DELETE", path, keyAcme, nil)
	assert.Equal(t, "METHOD_NOT_ALLOWED", g.str("code"), "DELETE: %s", g.Raw)
	g = ts.do("GET", path+"?x=1", keyAcme, nil)
	assert.Equal(t, "BAD_REQUEST", g.str("code"), "a query parameter: %s", g.Raw)

	req, _ := http.NewRequest("GET", ts.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+keyAcme)
	req.Header.Set("Range", "bytes=100-199")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, 206, resp.StatusCode)
	assert.Len(t, body, 100)
	assert.Regexp(t, `^bytes 100-199/\d+$`, resp.Header.Get("Content-Range"))
	req.Header.Set("Range", "bytes=900000000-")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, 416, resp.StatusCode)
	assert.Contains(t, string(body), `"code":"RANGE_NOT_SATISFIABLE"`)

	// GET /v2/scrape/{id} has the same link.
	id, _ := meta(r)["scrapeId"].(string)
	stored := ts.do("GET", "/v2/scrape/"+id, keyAcme, nil)
	assert.Equal(t, link, data(stored)["audio"], "the stored document's link")

	// The pages of a batch (on the job's tab, which goes on to its next
	// page) get theirs too.
	_, st, docs := ts.runJob("/v2/batch/scrape", keyAcme, map[string]any{"formats": []any{"audio", "video"},
		"urls": []string{web.URL + "/video-og", web.URL + "/audio-wav", web.URL + "/none"}})
	require.Equal(t, "completed", st["status"])
	require.Len(t, docs, 3)
	got := map[string][2]bool{}
	for _, d := range docs {
		u, _ := d["metadata"].(map[string]any)["sourceURL"].(string)
		a, _ := d["audio"].(string)
		v, _ := d["video"].(string)
		got[strings.TrimPrefix(u, web.URL)] = [2]bool{a != "", v != ""}
		for _, l := range []string{a, v} {
			if l != "" {
				ts.takeMedia(t, l, keyAcme, map[bool]string{true: "audio/mpeg", false: "video/mp4"}[l == a])
			}
		}
	}
	assert.Equal(t, map[string][2]bool{"/video-og": {true, true}, "/audio-wav": {true, false}, "/none": {false, false}}, got,
		"audio and video links of the batch's pages")
}

// What cannot be taken is a warning on a document that stands: no media,
// a MediaSource stream, a refused or missing source, zero data retention.
// A file over the cap (said by its Content-Length, or met while it
// streams) refuses the scrape with 413 MEDIA_TOO_LARGE. An expired file
// is pruned from the disk.
func TestMediaRefusals(t *testing.T) {
	t.Parallel()
	requireFFmpeg(t)
	web := newMediaSite(t)
	ts := start(t, map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true", "TRAWLER_PUBLIC_URL": mediaBase,
		"TRAWLER_TEAM_FEATURES": "acme:zeroDataRetention"})
	// Trawler's own API is refused to every browser, whatever the guard
	// allows: so is a page's media there.
	trawler := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><html><body><main><p>Media at Trawler's own address.</p>
<video width="320" height="240" src="%s/v2/media/probe"></video></main></body></html>`, ts.URL)
	}))
	t.Cleanup(trawler.Close)

	for _, tc := range []struct {
		name, url string
		extra     map[string]any
		warning   string
	}{
		{"no media", web.URL + "/none", nil, "audio: the page has no audio or video (no <audio>, <video>, og:audio or og:video)"},
		{"a MediaSource stream", web.URL + "/mse", nil, "which cannot be taken"},
		{"a source that is not there", web.URL + "/", nil, "answered HTTP 404"},
		{"an ad host", web.URL + "/ad", nil, "blocked as an ad or tracker"},
		{"an HLS playlist", web.URL + "/hls", nil, "is an HLS or DASH playlist (a stream cut into many files), which is not taken"},
		{"Trawler's own address", trawler.URL, nil, "answered HTTP 403"},
		{"zero data retention", web.URL + "/audio-wav", map[string]any{"zeroDataRetention": true},
			"the audio format is not available with zero data retention"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := map[string]any{"url": tc.url, "formats": []any{"markdown", "audio"}}
			for k, v := range tc.extra {
				body[k] = v
			}
			r := ts.scrape(body)
			require.Equal(t, 200, r.Status, "%s", r.Raw)
			assert.Contains(t, data(r)["warning"], tc.warning)
			assert.Empty(t, data(r)["audio"])
			assert.NotEmpty(t, data(r)["markdown"], "the other formats stand")
		})
	}
	assert.Empty(t, ts.requests.containing("/v2/media/probe"), "a page's media request reached Trawler's API")

	// The cap, low for the test: a 2-second WAV (88 KB) is over it, whether
	// its size is said up front or met while it streams.
	ts.Crawler.Scrape.Media.MaxBytes = 64 << 10
	for _, page := range []string{"/audio-wav", "/chunked"} {
		r := ts.scrape(map[string]any{"url": web.URL + page, "formats": []any{"markdown", "audio"}})
		require.Equal(t, 413, r.Status, "%s: %s", page, r.Raw)
		assert.Equal(t, "MEDIA_TOO_LARGE", r.str("code"), page)
		assert.Contains(t, r.str("error"), "is larger than the 64 KB cap on a media file, so the scrape is refused", page)
	}
	ts.Crawler.Scrape.Media.MaxBytes = 0

	// Media expires with the scrape's result, and its file goes.
	ts.Crawler.Scrape.Retention = 1
	r := ts.scrape(map[string]any{"url": web.URL + "/audio-wav", "formats": []any{"audio"}})
	link, _ := data(r)["audio"].(string)
	require.NotEmpty(t, link, "%s", r.Raw)
	g := ts.do("GET", strings.TrimPrefix(link, mediaBase), keyAcme, nil)
	assert.Equal(t, "NOT_FOUND", g.str("code"), "expired media: %s", g.Raw)
	dir := filepath.Join(ts.Config.DataDir, "media")
	kept, _ := filepath.Glob(filepath.Join(dir, "*.mp3"))
	require.Len(t, kept, 1, "the expired file, before the janitor's prune")
	require.NoError(t, ts.Crawler.Scrape.PruneMedia(context.Background()))
	kept, _ = filepath.Glob(filepath.Join(dir, "*.mp3"))
	assert.Empty(t, kept, "the expired file after the prune")
	spooled, _ := os.ReadDir(filepath.Join(dir, "spool"))
	assert.Empty(t, spooled, "bytes left in the spool")
}
