package parse

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// requireTesseract skips the test when Tesseract is not installed, except
// in CI (CI set), where it must be: Debian's tesseract-ocr and
// tesseract-ocr-eng.
func requireTesseract(t *testing.T) {
	t.Helper()
	if tesseractPath() != "" {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("tesseract is not installed (apt-get install tesseract-ocr tesseract-ocr-eng)")
	}
	t.Skip("tesseract is not installed (apt-get install tesseract-ocr tesseract-ocr-eng); skipping the OCR test")
}

// TestOCRScannedPages reads ocr.pdf, whose pages 2 and 3 are images of text
// (a JPEG and a greyscale PNG, see testdata/src/ocr.fodt), with Tesseract.
func TestOCRScannedPages(t *testing.T) {
	t.Parallel()
	requireTesseract(t)
	data, err := os.ReadFile("testdata/ocr.pdf")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := PDF(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"page 2 has no text layer; its text was read by OCR",
		"page 3 has no text layer; its text was read by OCR",
	}
	if strings.Join(doc.Warnings, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings = %q, want %q", doc.Warnings, want)
	}
	// Each page's words in its own section, in page order.
	sections := strings.Split(doc.HTML, "<section data-page=")
	if len(sections) != 4 {
		t.Fatalf("HTML has %d page sections, want 3:\n%s", len(sections)-1, doc.HTML)
	}
	for i, words := range [][]string{
		{"inspection form and the weather log follow"},
		{"Harbour Inspection Form", "Northern Star", "fourteenth of March", "lifebuoys", "Marta Quinn"},
		{"Weather log", "westerly", "Wednesday", "Friday", "bridge logbook"},
	} {
		for _, w := range words {
			if !strings.Contains(sections[i+1], w) {
				t.Errorf("page %d lacks %q:\n%s", i+1, w, sections[i+1])
			}
		}
	}
	// Blank lines split paragraphs; the lines of one are joined.
	if !strings.Contains(doc.Markdown, "\n\nVessel: Northern Star. The hull was inspected on the fourteenth of March and found sound.") {
		t.Errorf("paragraphs not joined as expected:\n%s", doc.Markdown)
	}
}

// TestOCRBlankImage: the scanned fixture's image holds no text.
func TestOCRBlankImage(t *testing.T) {
	t.Parallel()
	requireTesseract(t)
	data, err := os.ReadFile("testdata/scanned.pdf")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := PDF(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	if want := "page 2 has no text layer; OCR found no text in its image"; strings.Join(doc.Warnings, "|") != want {
		t.Errorf("warnings = %q, want %q", doc.Warnings, want)
	}
}

// imagePages builds a PDF of n pages, each showing only an image XObject.
func imagePages(n int, image string) []byte {
	objs := []string{"<< /Type /Catalog /Pages 2 0 R >>", ""}
	var kids []string
	objs = append(objs, image) // object 3
	for i := 0; i < n; i++ {
		page := len(objs) + 1
		kids = append(kids, fmt.Sprintf("%d 0 R", page))
		objs = append(objs,
			fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents %d 0 R /Resources << /XObject << /Im 3 0 R >> >> >>", page+1),
			stream("", "q 100 0 0 100 50 50 cm /Im Do Q"))
	}
	objs[1] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), n)
	return buildPDF(objs...)
}

// grayImage is a 4×2 8-bit grey image, Flate-compressed.
var grayImage = deflated("/Type /XObject /Subtype /Image /Width 4 /Height 2 /ColorSpace /DeviceGray /BitsPerComponent 8",
	[]byte{0, 64, 128, 255, 255, 128, 64, 0})

// TestOCRLimit: at most maxOCRPages pages of a document go to OCR.
func TestOCRLimit(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	fake := func(ctx context.Context, img []byte) (string, error) {
		calls.Add(1)
		if _, err := png.Decode(bytes.NewReader(img)); err != nil {
			return "", err
		}
		return "Scanned words\nand more words.\n\n\fSecond paragraph\n", nil
	}
	doc, err := readPDF(context.Background(), imagePages(maxOCRPages+2, grayImage), fake)
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != maxOCRPages {
		t.Errorf("%d pages went to OCR, want %d", calls.Load(), maxOCRPages)
	}
	if n := strings.Count(doc.Markdown, "Scanned words and more words.\n\nSecond paragraph"); n != maxOCRPages {
		t.Errorf("%d pages of OCR text in the Markdown, want %d", n, maxOCRPages)
	}
	last := doc.Warnings[len(doc.Warnings)-2:]
	want := []string{
		fmt.Sprintf("page %d has no text layer (it holds only images; OCR stops after %d pages)", maxOCRPages+1, maxOCRPages),
		fmt.Sprintf("page %d has no text layer (it holds only images; OCR stops after %d pages)", maxOCRPages+2, maxOCRPages),
	}
	if strings.Join(last, "\n") != strings.Join(want, "\n") || len(doc.Warnings) != maxOCRPages+2 {
		t.Errorf("warnings end with %q (%d in all), want %q", last, len(doc.Warnings), want)
	}
}

// TestOCRCancelled: a context that ends during OCR ends the parse; an
// engine that fails or times out costs only its page.
func TestOCRCancelled(t *testing.T) {
	t.Parallel()
	data := imagePages(3, grayImage)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	block := func(ctx context.Context, img []byte) (string, error) {
		cancel()
		<-ctx.Done()
		return "", ctx.Err()
	}
	if doc, err := readPDF(ctx, data, block); !errors.Is(err, context.Canceled) || doc != nil {
		t.Errorf("err = %v (doc %v), want context.Canceled", err, doc != nil)
	}
	failing := func(ctx context.Context, img []byte) (string, error) { return "", errOCRTimeout }
	doc, err := readPDF(context.Background(), data, failing)
	if err != nil {
		t.Fatal(err)
	}
	if want := "page 1 has no text layer; OCR failed: timed out"; len(doc.Warnings) != 3 || doc.Warnings[0] != want {
		t.Errorf("warnings = %q, want three like %q", doc.Warnings, want)
	}
}

// TestScanImage checks which images go to OCR and how.
func TestScanImage(t *testing.T) {
	t.Parallel()
	rgb := deflated("/Type /XObject /Subtype /Image /Width 2 /Height 1 /ColorSpace /DeviceRGB /BitsPerComponent 8",
		[]byte{255, 0, 0, 0, 0, 255})
	iccGray := deflated("/Type /XObject /Subtype /Image /Width 2 /Height 1 /ColorSpace [/ICCBased << /N 1 >>] /BitsPerComponent 8",
		[]byte{10, 200})
	tests := []struct {
		name  string
		image string
		ok    bool
	}{
		{"grey", grayImage, true},
		{"RGB", rgb, true},
		{"ICC-based grey", iccGray, true},
		{"CMYK", deflated("/Type /XObject /Subtype /Image /Width 1 /Height 1 /ColorSpace /DeviceCMYK /BitsPerComponent 8", []byte{1, 2, 3, 4}), false},
		{"1 bit", deflated("/Type /XObject /Subtype /Image /Width 8 /Height 1 /ColorSpace /DeviceGray /BitsPerComponent 1", []byte{0x55}), false},
		{"CCITT", stream("/Type /XObject /Subtype /Image /Width 8 /Height 1 /ColorSpace /DeviceGray /BitsPerComponent 1 /Filter /CCITTFaxDecode", "x"), false},
		{"short data", deflated("/Type /XObject /Subtype /Image /Width 100 /Height 100 /ColorSpace /DeviceGray /BitsPerComponent 8", []byte{1, 2, 3}), false},
		{"absurd size", deflated("/Type /XObject /Subtype /Image /Width 100000 /Height 100000 /ColorSpace /DeviceGray /BitsPerComponent 8", []byte{1}), false},
		{"bad JPEG", stream("/Type /XObject /Subtype /Image /Width 1 /Height 1 /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /DCTDecode", "not a jpeg"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []byte
			fake := func(ctx context.Context, img []byte) (string, error) {
				got = img
				return "words", nil
			}
			doc, err := readPDF(context.Background(), imagePages(1, tc.image), fake)
			if err != nil {
				t.Fatal(err)
			}
			if (got != nil) != tc.ok {
				t.Fatalf("sent to OCR: %v, want %v (warnings %q)", got != nil, tc.ok, doc.Warnings)
			}
			if !tc.ok {
				if want := "page 1 has no text layer (it holds only images; OCR is not supported)"; strings.Join(doc.Warnings, "|") != want {
					t.Errorf("warnings = %q, want %q", doc.Warnings, want)
				}
				return
			}
			m, err := png.Decode(bytes.NewReader(got))
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "RGB" {
				// Red and blue, as grey (luma).
				g0, g1 := color.GrayModel.Convert(m.At(0, 0)).(color.Gray), color.GrayModel.Convert(m.At(1, 0)).(color.Gray)
				if g0.Y != 76 || g1.Y != 29 {
					t.Errorf("pixels %v %v, want grey 76 and 29", g0, g1)
				}
			}
		})
	}

	// A JPEG goes as stored: the library decodes none, so ocr.go reads the
	// stored bytes by itself.
	data, err := os.ReadFile("testdata/ocr.pdf")
	if err != nil {
		t.Fatal(err)
	}
	var jpegs, pngs int
	fake := func(ctx context.Context, img []byte) (string, error) {
		if m, err := jpeg.Decode(bytes.NewReader(img)); err == nil && m.Bounds().Dx() == 1240 {
			jpegs++
		} else if _, err := png.Decode(bytes.NewReader(img)); err == nil {
			pngs++
		}
		return "words", nil
	}
	if _, err := readPDF(context.Background(), data, fake); err != nil {
		t.Fatal(err)
	}
	if jpegs != 1 || pngs != 1 {
		t.Errorf("sent %d JPEGs and %d PNGs, want one of each", jpegs, pngs)
	}
}

// TestOCRParagraphs checks how OCR output is split and cleaned.
func TestOCRParagraphs(t *testing.T) {
	t.Parallel()
	got := ocrParagraphs("First line of a para-\ngraph and its  end.\n \nSecond\x07 one\n\n\n\f")
	want := []string{"First line of a paragraph and its end.", "Second one"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("ocrParagraphs = %q, want %q", got, want)
	}
}

// TestTesseractDeadline: Tesseract stops with the context and reports
// what it cannot read.
func TestTesseractDeadline(t *testing.T) {
	t.Parallel()
	requireTesseract(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	<-ctx.Done()
	if _, err := tesseract(ctx, []byte("not an image")); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the context's", err)
	}
	if _, err := tesseract(context.Background(), []byte("not an image")); err == nil {
		t.Error("tesseract read garbage without an error")
	}
}
