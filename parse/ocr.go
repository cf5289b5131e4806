package parse

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/ledongthuc/pdf"
)

// OCR of pages without a text layer. A page that holds images but no text
// (a scan) is read by Tesseract when it is installed: its largest image is
// piped to `tesseract stdin stdout` and the text comes back on stdout, so
// nothing of the document is written to disk. Without Tesseract such pages
// only get a warning.

const (
	// maxOCRPages caps the pages one document may have read by OCR; each
	// takes seconds of CPU.
	maxOCRPages = 50
	// ocrTimeout bounds the OCR of one page.
	ocrTimeout = 2 * time.Minute
	// maxOCROutput caps the text taken from one page.
	maxOCROutput = 1 << 20
	// maxOCRPixels caps the size of an image decoded for OCR (a page
	// scanned at 600 dpi has about 35 million).
	maxOCRPixels = 40_000_000
)

// ocrFunc returns the text of an image given as PNG or JPEG bytes.
type ocrFunc func(ctx context.Context, img []byte) (string, error)

// tesseractPath is where Tesseract is installed, or "".
var tesseractPath = sync.OnceValue(func() string {
	p, err := exec.LookPath("tesseract")
	if err != nil {
		return ""
	}
	return p
})

// defaultOCR is Tesseract, or nil when it is not installed.
func defaultOCR() ocrFunc {
	if tesseractPath() == "" {
		return nil
	}
	return tesseract
}

// errOCRTimeout reports a page whose OCR took longer than ocrTimeout.
var errOCRTimeout = errors.New("timed out")

// tesseract runs `tesseract stdin stdout` on img under ctx.
func tesseract(ctx context.Context, img []byte) (string, error) {
	tctx, cancel := context.WithTimeout(ctx, ocrTimeout)
	defer cancel()
	cmd := exec.CommandContext(tctx, tesseractPath(), "stdin", "stdout")
	cmd.Stdin = bytes.NewReader(img)
	stdout := &cappedBuffer{max: maxOCROutput}
	stderr := &cappedBuffer{max: 4 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// One thread: the service parses documents side by side already, and
	// Tesseract's OpenMP threads only contend with each other on few cores.
	cmd.Env = append(os.Environ(), "OMP_THREAD_LIMIT=1")
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if tctx.Err() != nil {
		return "", errOCRTimeout
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		if msg != "" {
			return "", fmt.Errorf("%v: %s", err, msg)
		}
		return "", err
	}
	return stdout.String(), nil
}

// cappedBuffer keeps the first max bytes written to it and drops the rest.
type cappedBuffer struct {
	bytes.Buffer
	max int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// ocrState is the OCR of one document.
type ocrState struct {
	run   ocrFunc // nil: no OCR engine
	file  []byte  // the bytes the reader reads, for images stored as JPEG
	pages int     // pages read so far
}

// readScan reads page p's scan image by OCR into p.ocr and returns the
// page's warning. It panics with errStop when ctx ends.
func (o *ocrState) readScan(ctx context.Context, p *page) string {
	n := p.n
	if o.run == nil {
		return fmt.Sprintf("page %d has no text layer (it holds only images; OCR is not supported)", n)
	}
	if o.pages >= maxOCRPages {
		return fmt.Sprintf("page %d has no text layer (it holds only images; OCR stops after %d pages)", n, maxOCRPages)
	}
	img, ok := scanImage(p.scan, o.file)
	if !ok {
		return fmt.Sprintf("page %d has no text layer (it holds only images; OCR is not supported)", n)
	}
	o.pages++
	text, err := o.run(ctx, img)
	if ctx.Err() != nil {
		panic(errStop{ctx.Err()})
	}
	if err != nil {
		return fmt.Sprintf("page %d has no text layer; OCR failed: %v", n, err)
	}
	p.ocr = ocrParagraphs(text)
	if len(p.ocr) == 0 {
		return fmt.Sprintf("page %d has no text layer; OCR found no text in its image", n)
	}
	return fmt.Sprintf("page %d has no text layer; its text was read by OCR", n)
}

// ocrParagraphs splits OCR output on blank lines and joins the lines of each
// paragraph, undoing hyphenation.
func ocrParagraphs(text string) []string {
	text = strings.ToValidUTF8(text, "")
	var paras []string
	var lines []string
	flush := func() {
		if len(lines) > 0 {
			paras = append(paras, joinLines(lines))
			lines = nil
		}
	}
	for _, l := range strings.Split(text, "\n") {
		l = strings.Join(strings.Fields(strings.Map(dropControl, l)), " ")
		if l == "" {
			flush()
			continue
		}
		lines = append(lines, l)
	}
	flush()
	return paras
}

// addOCRBlocks puts the paragraphs OCR read into the blocks, each page's
// where that page's content would be.
func addOCRBlocks(blocks []*block, pages []*page) []*block {
	var out []*block
	i := 0
	for _, p := range pages {
		for i < len(blocks) && blocks[i].page <= p.n {
			out = append(out, blocks[i])
			i++
		}
		for _, t := range p.ocr {
			out = append(out, &block{kind: paragraph, page: p.n, text: t})
		}
	}
	return append(out, blocks[i:]...)
}

// scanImage returns an image XObject in a form Tesseract reads: a JPEG
// (DCTDecode) as it is stored, 8-bit grey or RGB samples (FlateDecode or
// unfiltered) encoded as a grey PNG, as Tesseract reads in grey anyway.
// ok is false for any other image.
func scanImage(v pdf.Value, file []byte) (img []byte, ok bool) {
	defer func() {
		if recover() != nil {
			img, ok = nil, false
		}
	}()
	if v.Kind() != pdf.Stream || v.Key("ImageMask").Bool() {
		return nil, false
	}
	w, h := int(v.Key("Width").Int64()), int(v.Key("Height").Int64())
	if w <= 0 || h <= 0 || w > 30_000 || h > 30_000 || w*h > maxOCRPixels {
		return nil, false
	}
	filter := v.Key("Filter")
	if filter.Kind() == pdf.Array && filter.Len() == 1 {
		filter = filter.Index(0)
	}
	switch filter.Name() {
	case "DCTDecode":
		data := rawStream(v, file)
		if len(data) < 4 || data[0] != 0xFF || data[1] != 0xD8 {
			return nil, false
		}
		return data, true
	case "FlateDecode", "":
		if filter.Kind() != pdf.Name && filter.Kind() != pdf.Null {
			return nil, false
		}
	default:
		return nil, false
	}
	if v.Key("BitsPerComponent").Int64() != 8 {
		return nil, false
	}
	comps := colorComponents(v.Key("ColorSpace"))
	if comps != 1 && comps != 3 {
		return nil, false
	}
	need := w * h * comps
	if need > maxStreamBytes {
		return nil, false
	}
	buf := bytes.NewBuffer(make([]byte, 0, need+1))
	if _, err := readStreamTo(buf, v, int64(need)+int64(need/8)+1024); err != nil || buf.Len() < need {
		return nil, false
	}
	data := buf.Bytes()[:need]
	gray := &image.Gray{Pix: data, Stride: w, Rect: image.Rect(0, 0, w, h)}
	if comps == 3 {
		// Luma in place: pixel i's grey overwrites bytes the loop has read.
		for i, j := 0, 0; i < need; i, j = i+3, j+1 {
			data[j] = byte((299*int(data[i]) + 587*int(data[i+1]) + 114*int(data[i+2]) + 500) / 1000)
		}
		gray.Pix = data[:w*h]
	}
	var b bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&b, gray); err != nil {
		return nil, false
	}
	return b.Bytes(), true
}

// colorComponents returns the components per pixel of a grey or RGB colour
// space, or 0 for any other.
func colorComponents(cs pdf.Value) int {
	switch cs.Kind() {
	case pdf.Name:
		switch cs.Name() {
		case "DeviceGray", "CalGray", "G":
			return 1
		case "DeviceRGB", "CalRGB", "RGB":
			return 3
		}
	case pdf.Array:
		switch cs.Index(0).Name() {
		case "ICCBased":
			if n := cs.Index(1).Key("N").Int64(); n == 1 || n == 3 {
				return int(n)
			}
		case "CalGray":
			return 1
		case "CalRGB":
			return 3
		}
	}
	return 0
}
