package main

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/trawler-dev/trawler/parse"
)

// officeThroughput measures the DOCX and XLSX readers on generated files:
// docx_mb_per_s against a bare XML token scan of the same document.xml
// (the least any reader must do), xlsx_cells_per_s against excelize's own
// GetRows of the same workbook (the library the reader is built on).
func (b *bench) officeThroughput(ctx context.Context, _ *instance) error {
	docx := generateDOCX(4000, 0)
	best := func(rounds int, f func() error) (time.Duration, error) {
		var min time.Duration
		for i := 0; i < rounds; i++ {
			t := time.Now()
			if err := f(); err != nil {
				return 0, err
			}
			if d := time.Since(t); min == 0 || d < min {
				min = d
			}
		}
		return min, nil
	}
	dDocx, err := best(5, func() error {
		doc, err := parse.Parse(ctx, "docx", docx)
		if err == nil && !strings.Contains(doc.Markdown, "| Station 3999 |") {
			err = fmt.Errorf("the generated DOCX lost its last table row")
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("docx: %w", err)
	}
	dScan, err := best(5, func() error { return scanDocumentXML(docx) })
	if err != nil {
		return err
	}
	mb := float64(len(docx)) / (1 << 20)
	xmlMB := float64(documentXMLSize(docx)) / (1 << 20)
	logf("docx: %.2f MB file, %.1f MB of document.xml, %d ms (XML scan %d ms)", mb, xmlMB, dDocx.Milliseconds(), dScan.Milliseconds())
	figure("docx_mb_per_s", mb/dDocx.Seconds(), "MB/s")
	figure("docx_xml_mb_per_s", xmlMB/dDocx.Seconds(), "MB/s")
	figure("docx_over_xml_scan", dScan.Seconds()/dDocx.Seconds(), "x")

	const rows, cols = 50000, 10
	xlsx, err := generateXLSX(rows, cols)
	if err != nil {
		return err
	}
	dXlsx, err := best(3, func() error {
		doc, err := parse.Parse(ctx, "xlsx", xlsx)
		if err == nil && !strings.Contains(doc.Markdown, "| r49999c0 |") {
			err = fmt.Errorf("the generated XLSX lost its last row")
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("xlsx: %w", err)
	}
	dRows, err := best(3, func() error {
		f, err := excelize.OpenReader(bytes.NewReader(xlsx))
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.GetRows("Sheet1")
		return err
	})
	if err != nil {
		return err
	}
	cells := float64(rows * cols)
	logf("xlsx: %d cells, %.1f MB, %d ms (excelize GetRows %d ms)", rows*cols, float64(len(xlsx))/(1<<20), dXlsx.Milliseconds(), dRows.Milliseconds())
	figure("xlsx_cells_per_s", cells/dXlsx.Seconds(), "cells/s")
	figure("xlsx_over_excelize_getrows", dRows.Seconds()/dXlsx.Seconds(), "x")
	return nil
}

// generateDOCX writes a DOCX with n sections (a heading, a paragraph with
// bold and a link, a three-item list and a table row each) and, when
// padMB > 0, incompressible images that bring the file to that size.
func generateDOCX(n, padMB int) []byte {
	var body strings.Builder
	body.WriteString(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><w:body>`)
	body.WriteString(`<w:tbl>`)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&body, `<w:tr><w:tc><w:p><w:r><w:t>Station %d</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>%d cm</w:t></w:r></w:p></w:tc></w:tr>`, i, i%300)
	}
	body.WriteString(`</w:tbl>`)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&body, `<w:p><w:pPr><w:pStyle w:val="Heading2"/></w:pPr><w:r><w:t>Section %d</w:t></w:r></w:p>`, i)
		fmt.Fprintf(&body, `<w:p><w:r><w:t xml:space="preserve">Samples from the north basin were taken at low tide and </w:t></w:r><w:r><w:rPr><w:b/></w:rPr><w:t>checked twice</w:t></w:r><w:r><w:t xml:space="preserve"> against the reference gauge; see </w:t></w:r><w:hyperlink r:id="rIdLink"><w:r><w:t>the method</w:t></w:r></w:hyperlink><w:r><w:t xml:space="preserve"> for the details of section %d.</w:t></w:r></w:p>`, i)
		for k := 0; k < 3; k++ {
			fmt.Fprintf(&body, `<w:p><w:pPr><w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr></w:pPr><w:r><w:t>Item %d of section %d</w:t></w:r></w:p>`, k, i)
		}
	}
	var rels strings.Builder
	rels.WriteString(`<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rIdLink" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink" Target="https://example.org/method" TargetMode="External"/>`)
	images := padMB // one 1 MB image per MB of padding
	for i := 0; i < images; i++ {
		fmt.Fprintf(&rels, `<Relationship Id="rIdImg%d" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="media/image%d.png"/>`, i, i)
		fmt.Fprintf(&body, `<w:p><w:r><w:drawing><wp:inline xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"><wp:docPr id="%d" name="Picture %d" descr="Photo %d"/><a:graphic xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><a:graphicData><pic:pic xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:blipFill><a:blip r:embed="rIdImg%d"/></pic:blipFill></pic:pic></a:graphicData></a:graphic></wp:inline></w:drawing></w:r></w:p>`, i+1, i, i, i)
	}
	body.WriteString(`</w:body></w:document>`)
	rels.WriteString(`</Relationships>`)
	numbering := `<?xml version="1.0" encoding="UTF-8"?><w:numbering xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:abstractNum w:abstractNumId="0"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="bullet"/></w:lvl></w:abstractNum><w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num></w:numbering>`
	styles := `<?xml version="1.0" encoding="UTF-8"?><w:styles xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:style w:type="paragraph" w:styleId="Heading2"><w:name w:val="heading 2"/><w:pPr><w:outlineLvl w:val="1"/></w:pPr></w:style></w:styles>`
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	add := func(name string, data []byte, method uint16) {
		w, _ := zw.CreateHeader(&zip.FileHeader{Name: name, Method: method})
		w.Write(data)
	}
	add("[Content_Types].xml", []byte(`<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Default Extension="png" ContentType="image/png"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`), zip.Deflate)
	add("_rels/.rels", []byte(`<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`), zip.Deflate)
	add("word/document.xml", []byte(body.String()), zip.Deflate)
	add("word/_rels/document.xml.rels", []byte(rels.String()), zip.Deflate)
	add("word/numbering.xml", []byte(numbering), zip.Deflate)
	add("word/styles.xml", []byte(styles), zip.Deflate)
	img := make([]byte, 1<<20)
	for i := 0; i < images; i++ {
		rand.Read(img)
		add(fmt.Sprintf("word/media/image%d.png", i), img, zip.Store)
	}
	zw.Close()
	return out.Bytes()
}

// documentXMLSize is the inflated size of word/document.xml.
func documentXMLSize(docx []byte) uint64 {
	zr, err := zip.NewReader(bytes.NewReader(docx), int64(len(docx)))
	if err != nil {
		return 0
	}
	for _, f := range zr.File {
		if f.Name == "word/document.xml" {
			return f.UncompressedSize64
		}
	}
	return 0
}

// scanDocumentXML inflates word/document.xml and reads every XML token.
func scanDocumentXML(docx []byte) error {
	zr, err := zip.NewReader(bytes.NewReader(docx), int64(len(docx)))
	if err != nil {
		return err
	}
	for _, f := range zr.File {
		if f.Name != "word/document.xml" {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return err
		}
		defer rc.Close()
		dec := xml.NewDecoder(rc)
		for {
			if _, err := dec.Token(); err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
		}
	}
	return fmt.Errorf("no word/document.xml")
}

// generateXLSX writes one sheet of rows × cols cells with excelize's stream
// writer: a text column, then numbers with a thousands format.
func generateXLSX(rows, cols int) ([]byte, error) {
	f := excelize.NewFile()
	defer f.Close()
	sw, err := f.NewStreamWriter("Sheet1")
	if err != nil {
		return nil, err
	}
	style, err := f.NewStyle(&excelize.Style{NumFmt: 3}) // #,##0
	if err != nil {
		return nil, err
	}
	for r := 0; r < rows; r++ {
		row := make([]any, cols)
		row[0] = fmt.Sprintf("r%dc0", r)
		for c := 1; c < cols; c++ {
			row[c] = excelize.Cell{StyleID: style, Value: r*cols + c}
		}
		cell, _ := excelize.CoordinatesToCellName(1, r+1)
		if err := sw.SetRow(cell, row); err != nil {
			return nil, err
		}
	}
	if err := sw.Flush(); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := f.Write(&out); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// generatePDF writes a PDF of pages pages of text, each also drawing an
// incompressible image of imageKB (which the parser does not decode on a
// page that has text), so that the file reaches a chosen size.
func generatePDF(pages, imageKB int) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.7\n")
	var offsets []int
	obj := func(s string) int {
		offsets = append(offsets, b.Len())
		n := len(offsets)
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", n, s)
		return n
	}
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	kids := make([]string, pages)
	// Objects 1 catalog, 2 pages, 3 font, then per page: content, image, page.
	for i := range kids {
		kids[i] = fmt.Sprintf("%d 0 R", 4+3*i+2)
	}
	obj(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), pages))
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	img := make([]byte, imageKB<<10)
	for p := 0; p < pages; p++ {
		var c strings.Builder
		c.WriteString("BT /F1 11 Tf 14 TL 72 770 Td\n")
		fmt.Fprintf(&c, "(Section %d of the survey) Tj T*\n", p)
		for l := 0; l < 40; l++ {
			fmt.Fprintf(&c, "(Line %d: samples from station %d were taken at low tide and checked twice.) Tj T*\n", l, p)
		}
		c.WriteString("ET\nq 100 0 0 100 400 50 cm /Im0 Do Q\n")
		obj(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", c.Len(), c.String()))
		rand.Read(img)
		offsets = append(offsets, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n<< /Type /XObject /Subtype /Image /Width 256 /Height 256 /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /DCTDecode /Length %d >>\nstream\n", len(offsets), len(img))
		b.Write(img)
		b.WriteString("\nendstream\nendobj\n")
		obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R /Resources << /Font << /F1 3 0 R >> /XObject << /Im0 %d 0 R >> >> >>", len(offsets)-1, len(offsets)))
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	return b.Bytes()
}

// uploadMemory uploads a 50 MB PDF, a 50 MB DOCX, an XLSX of 600,000
// cells (near the most parse's default memory budget takes) and one of
// three million (which the budget refuses before reading it) to a fresh
// trawler serve process each and reports how far its peak resident memory
// (VmHWM) rose above where it stood before, as a multiple of the file's
// size for the documents that are not spreadsheets.
func (b *bench) uploadMemory(ctx context.Context, _ *instance) error {
	bin := filepath.Join(b.tmp, "trawler")
	if err := buildTrawler(ctx, bin); err != nil {
		return err
	}
	for _, tc := range []struct {
		name, file string
		data       []byte
		status     int
		figure     string // in MB, when not over the file's size
	}{
		{"pdf", "big.pdf", generatePDF(640, 76), 200, ""},
		{"docx", "big.docx", generateDOCX(20000, 46), 200, ""},
		{"xlsx", "big.xlsx", mustXLSX(60000, 10), 200, "parse_peak_mem_mb_xlsx_600k_cells"},
		{"xlsx bomb", "bomb.xlsx", mustXLSX(300000, 10), 422, "parse_peak_mem_mb_xlsx_3m_cells_refused"},
	} {
		rise, err := b.peakOfUpload(ctx, bin, tc.file, tc.data, tc.status)
		if err != nil {
			return fmt.Errorf("%s: %w", tc.name, err)
		}
		logf("upload of a %.1f MB %s: peak RSS rose by %.1f MB", float64(len(tc.data))/(1<<20), tc.name, float64(rise)/(1<<20))
		if tc.figure != "" {
			figure(tc.figure, float64(rise)/(1<<20), "MB")
			continue
		}
		figure("parse_peak_mem_over_file_"+tc.name, float64(rise)/float64(len(tc.data)), "x")
	}
	return nil
}

func mustXLSX(rows, cols int) []byte {
	x, err := generateXLSX(rows, cols)
	if err != nil {
		panic(err)
	}
	return x
}

func (b *bench) peakOfUpload(ctx context.Context, bin, name string, data []byte, status int) (int64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	addr := ln.Addr().String()
	ln.Close()
	dir, err := os.MkdirTemp(b.tmp, "upload-")
	if err != nil {
		return 0, err
	}
	cmd := exec.CommandContext(ctx, bin, "serve")
	cmd.Env = append(os.Environ(), "TRAWLER_ADDR="+addr, "TRAWLER_DATA_DIR="+dir, "TRAWLER_WARM_BROWSERS=0",
		"TRAWLER_API_KEYS=", "TRAWLER_LOG_LEVEL=warn")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
	base := "http://" + addr
	for i := 0; ; i++ {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if i > 300 {
			return 0, fmt.Errorf("trawler serve did not answer: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second)
	before, err := statusKB(cmd.Process.Pid, "status", "VmRSS")
	if err != nil {
		return 0, err
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	opts, _ := json.Marshal(map[string]any{"formats": []string{"markdown"}, "timeout": 300000})
	mw.WriteField("options", string(opts))
	w, _ := mw.CreateFormFile("file", name)
	w.Write(data)
	mw.Close()
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v2/parse", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != status {
		return 0, fmt.Errorf("parse answered %d, want %d: %.300s", resp.StatusCode, status, raw)
	}
	peak, err := statusKB(cmd.Process.Pid, "status", "VmHWM")
	if err != nil {
		return 0, err
	}
	return (peak - before) << 10, nil
}
