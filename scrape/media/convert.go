package media

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// ffmpegTimeout bounds one run of ffmpeg (or ffprobe), within what is left
// of the scrape's own timeout.
const ffmpegTimeout = 5 * time.Minute

// ffmpegInput are the options before every input: ffmpeg reads the file
// it is given and nothing else. A playlist (HLS, DASH, concat) would have
// it fetch URLs itself, around the browser, the egress proxy and the
// network guard, or read the host's files: only the container formats of
// single media files are read, from the file protocol only.
var ffmpegInput = []string{"-protocol_whitelist", "file",
	"-format_whitelist", "mov,matroska,ogg,wav,mp3,aac,flac,flv,mpegts,avi,asf,mpeg,aiff,w64,caf,ac3,eac3,amr"}

// mp4Video and mp4Audio are the codecs an MP4 holds as they are, for
// players everywhere: a video of these is remuxed, not re-encoded.
var (
	mp4Video = []string{"h264", "hevc", "av1", "mpeg4"}
	mp4Audio = []string{"aac", "mp3", "ac3", "eac3", "alac"}
)

// converted is a media file as converted, in the spool.
type converted struct {
	path        string
	ext         string
	contentType string
	size        int64
	// warning says what was re-encoded, if anything.
	warning string
}

// probed is what ffprobe says of a file.
type probed struct {
	Streams []struct {
		Index       int    `json:"index"`
		CodecType   string `json:"codec_type"`
		CodecName   string `json:"codec_name"`
		Disposition struct {
			AttachedPic int `json:"attached_pic"`
		} `json:"disposition"`
	} `json:"streams"`
}

// stream returns the first stream of kind (audio or video; a cover
// picture is no video), or -1 and "".
func (p *probed) stream(kind string) (int, string) {
	for _, s := range p.Streams {
		if s.CodecType == kind && (kind != "video" || s.Disposition.AttachedPic == 0) {
			return s.Index, s.CodecName
		}
	}
	return -1, ""
}

// convert converts the taken file m for the format kind: audio to MP3
// (kept as is when it is MP3 already), video to MP4, remuxed when its
// codecs fit MP4, else re-encoded (H.264, AAC) with a warning that says so.
// The result is a file in dir. Its errors are sentences for a warning.
func convert(ctx context.Context, kind string, m *file, dir string) (*converted, error) {
	ffmpeg, err := exec.LookPath("ffmpeg")
	if err != nil {
		return nil, errors.New("ffmpeg is not installed on the server (the audio and video formats convert with it; on Debian: apt-get install ffmpeg)")
	}
	ffprobe, err := exec.LookPath("ffprobe")
	if err != nil {
		return nil, errors.New("ffprobe, which comes with ffmpeg, is not installed on the server (on Debian: apt-get install ffmpeg)")
	}
	d, ok := ctx.Deadline()
	scrapeBound := ok && time.Until(d) < ffmpegTimeout
	ctx, cancel := context.WithTimeout(ctx, ffmpegTimeout)
	defer cancel()
	out, err := runFFmpeg(ctx, ffprobe, slices.Concat([]string{"-v", "error"}, ffmpegInput, []string{"-print_format", "json",
		"-show_entries", "stream=index,codec_type,codec_name:stream_disposition=attached_pic", m.path}))
	var p probed
	if err == nil {
		err = json.Unmarshal(out, &p)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, timeoutError(scrapeBound)
		}
		return nil, fmt.Errorf("%s (%s) is not audio or video ffmpeg reads: %v", truncateURL(m.url), m.contentType, err)
	}
	f, err := os.CreateTemp(dir, "conv-*")
	if err != nil {
		return nil, err
	}
	f.Close()
	c := &converted{path: f.Name()}
	args := slices.Concat([]string{"-nostdin", "-hide_banner", "-loglevel", "error", "-y"}, ffmpegInput, []string{"-i", m.path})
	if kind == "audio" {
		args, err = c.audio(args, &p)
	} else {
		args, err = c.video(args, &p)
	}
	if err != nil {
		os.Remove(c.path)
		return nil, fmt.Errorf("%s %v", truncateURL(m.url), err)
	}
	if _, err := runFFmpeg(ctx, ffmpeg, args); err != nil {
		os.Remove(c.path)
		if ctx.Err() != nil {
			return nil, timeoutError(scrapeBound)
		}
		return nil, fmt.Errorf("ffmpeg could not convert %s: %v", truncateURL(m.url), err)
	}
	info, err := os.Stat(c.path)
	if err != nil {
		os.Remove(c.path)
		return nil, err
	}
	c.size = info.Size()
	return c, nil
}

// audio makes c an MP3 of p's first sound: it returns ffmpeg's arguments,
// after args, that write it.
func (c *converted) audio(args []string, p *probed) ([]string, error) {
	audio, audioCodec := p.stream("audio")
	if audio < 0 {
		return nil, errors.New("has no sound")
	}
	c.ext, c.contentType = ".mp3", "audio/mpeg"
	codec := []string{"-codec:a", "libmp3lame", "-q:a", "4"}
	if audioCodec == "mp3" {
		codec = []string{"-codec:a", "copy"}
	}
	return slices.Concat(args, []string{"-map", fmt.Sprintf("0:%d", audio), "-vn", "-sn", "-dn"}, codec,
		[]string{"-f", "mp3", c.path}), nil
}

// video makes c an MP4 of p's first picture and sound, re-encoding what
// MP4 does not hold (c.warning says what): it returns ffmpeg's arguments,
// after args, that write it.
func (c *converted) video(args []string, p *probed) ([]string, error) {
	audio, audioCodec := p.stream("audio")
	video, videoCodec := p.stream("video")
	if video < 0 {
		return nil, errors.New("has no picture, only sound")
	}
	c.ext, c.contentType = ".mp4", "video/mp4"
	args = append(args, "-map", fmt.Sprintf("0:%d", video))
	var redone []string
	if slices.Contains(mp4Video, videoCodec) {
		args = append(args, "-c:v", "copy")
	} else {
		// Even dimensions: 4:2:0 H.264 needs them.
		args = append(args, "-c:v", "libx264", "-preset", "veryfast", "-crf", "23", "-pix_fmt", "yuv420p",
			"-vf", "scale=trunc(iw/2)*2:trunc(ih/2)*2")
		redone = append(redone, fmt.Sprintf("its %s picture to H.264", videoCodec))
	}
	if audio >= 0 {
		args = append(args, "-map", fmt.Sprintf("0:%d", audio))
		if slices.Contains(mp4Audio, audioCodec) {
			args = append(args, "-c:a", "copy")
		} else {
			args = append(args, "-c:a", "aac", "-b:a", "128k")
			redone = append(redone, fmt.Sprintf("its %s sound to AAC", audioCodec))
		}
	}
	args = append(args, "-sn", "-dn", "-movflags", "+faststart", "-f", "mp4", c.path)
	if len(redone) > 0 {
		c.warning = "video: the page's video does not fit MP4 as it is: re-encoded " + strings.Join(redone, " and ")
	}
	return args, nil
}

// runFFmpeg runs ffmpeg or ffprobe and returns its output; its error
// carries the end of what it wrote on stderr.
func runFFmpeg(ctx context.Context, bin string, args []string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 300 {
			msg = "…" + msg[len(msg)-300:]
		}
		if msg == "" {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s", err, msg)
	}
	return stdout.Bytes(), nil
}

// timeoutError says which timeout cut a conversion short: the scrape's
// own, or ffmpegTimeout.
func timeoutError(scrapeBound bool) error {
	if scrapeBound {
		return errors.New("converting the media did not finish within the scrape's timeout (raise timeout, up to 300000 ms)")
	}
	return fmt.Errorf("converting the media took longer than %s", ffmpegTimeout)
}
