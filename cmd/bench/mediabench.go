package main

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
	"strings"
	"time"
)

const (
	// mediaClipSeconds is the length of the clip the audio phase extracts.
	mediaClipSeconds = 60
	mediaSamples     = 5
)

// audioExtract times POST /v2/scrape with formats ["audio"] of a page whose
// <video> plays a 60-second clip (640x360 H.264 colour bars with a tone in
// AAC, 25 fps, made by ffmpeg here): the browser renders the page, the
// clip's bytes are taken through it, ffmpeg makes an MP3 of its sound, and
// the MP3 is kept and linked. The figure is the median of 5 scrapes (after
// one warm-up) on a service of its own; each answer's MP3 is fetched and
// checked.
func (b *bench) audioExtract(ctx context.Context, _ *instance) error {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		return fmt.Errorf("the audio phase needs ffmpeg (apt-get install ffmpeg): %w", err)
	}
	dir := filepath.Join(b.tmp, "media-site")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	clip := filepath.Join(dir, "clip.mp4")
	secs := fmt.Sprint(mediaClipSeconds)
	out, err := exec.CommandContext(ctx, "ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y",
		"-f", "lavfi", "-i", "testsrc=duration="+secs+":size=640x360:rate=25",
		"-f", "lavfi", "-i", "sine=frequency=440:duration="+secs, "-shortest",
		"-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "128k",
		"-movflags", "+faststart", clip).CombinedOutput()
	if err != nil {
		return fmt.Errorf("making the clip: %v: %s", err, out)
	}
	info, err := os.Stat(clip)
	if err != nil {
		return err
	}
	logf("audio: a %d-second clip of %.1f MB", mediaClipSeconds, float64(info.Size())/(1<<20))
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/clip.mp4" {
			http.ServeFile(w, r, clip)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><html><head><title>A clip</title></head><body><main><h1>A clip</h1>
<video controls width="640" height="360" src="/clip.mp4"></video><p>Colour bars and a tone.</p></main></body></html>`)
	}))
	defer site.Close()
	in, err := b.startWith(ctx, "media", 1, poolSize, scrapeEnv(poolSize, 30*time.Second))
	if err != nil {
		return err
	}
	defer in.Close()
	var samples []time.Duration
	for i := range mediaSamples + 1 {
		t := time.Now()
		link, err := in.scrapeAudio(ctx, site.URL+"/")
		el := time.Since(t)
		if err != nil {
			return err
		}
		size, err := in.mediaSize(ctx, link)
		if err != nil {
			return err
		}
		if i == 0 {
			logf("audio: warm-up %s, MP3 of %.2f MB", el.Round(time.Millisecond), float64(size)/(1<<20))
			continue
		}
		samples = append(samples, el)
	}
	logf("audio extract ms: %s", msList(samples))
	figure("audio_extract_s", median(samples).Seconds(), "s")
	return nil
}

// scrapeAudio scrapes u for its audio and returns the link, failing on a
// warning.
func (in *instance) scrapeAudio(ctx context.Context, u string) (string, error) {
	body, _ := json.Marshal(map[string]any{"url": u, "formats": []string{"audio"}, "timeout": 120000})
	var a struct {
		Data struct {
			Audio   string `json:"audio"`
			Warning string `json:"warning"`
		} `json:"data"`
	}
	if err := in.do(ctx, http.MethodPost, "/v2/scrape", body, &a); err != nil {
		return "", err
	}
	if a.Data.Audio == "" || a.Data.Warning != "" {
		return "", fmt.Errorf("scrape %s for audio: no MP3 (warning %q)", u, a.Data.Warning)
	}
	return a.Data.Audio, nil
}

// mediaSize GETs a media link of in and returns its length, checking that
// it is an MP3.
func (in *instance) mediaSize(ctx context.Context, link string) (int64, error) {
	if !strings.HasPrefix(link, in.base+"/v2/media/") {
		return 0, fmt.Errorf("the media link %q is not of the service at %s", link, in.base)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, link, nil)
	if err != nil {
		return 0, err
	}
	resp, err := in.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "audio/mpeg" || n == 0 {
		return 0, fmt.Errorf("GET %s: %d %s, %d bytes", link, resp.StatusCode, resp.Header.Get("Content-Type"), n)
	}
	return n, nil
}
