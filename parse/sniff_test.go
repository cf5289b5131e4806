package parse

import (
	"archive/zip"
	"bytes"
	"os"
	"testing"
)

func TestSniff(t *testing.T) {
	t.Parallel()
	report, err := os.ReadFile("testdata/report.pdf")
	if err != nil {
		t.Fatal(err)
	}
	zipWith := func(files ...string) []byte {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for i := 0; i+1 < len(files); i += 2 {
			w, _ := zw.Create(files[i])
			w.Write([]byte(files[i+1]))
		}
		zw.Close()
		return buf.Bytes()
	}
	ole := func(stream string) []byte {
		b := []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}
		b = append(b, make([]byte, 504)...)
		for _, c := range stream {
			b = append(b, byte(c), 0)
		}
		return b
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"pdf", report, "pdf"},
		{"pdf after whitespace", append([]byte("\r\n\r\n"), report[:100]...), "pdf"},
		{"pdf after junk", append([]byte("HTTP/1.1 200 OK\r\n\r\n"), report[:100]...), "pdf"},
		{"html mentioning %PDF-", []byte("<html><body>A PDF starts with %PDF-1.7</body></html>"), "html"},
		{"docx", zipWith("[Content_Types].xml", "<Types/>", "word/document.xml", "<w:document/>"), "docx"},
		{"xlsx", zipWith("[Content_Types].xml", "<Types/>", "xl/workbook.xml", "<workbook/>"), "xlsx"},
		{"odt", zipWith("mimetype", "application/vnd.oasis.opendocument.text", "content.xml", "<x/>"), "odt"},
		{"plain zip", zipWith("a.txt", "hello"), ""},
		{"doc", ole("WordDocument"), "doc"},
		{"xls", ole("Workbook"), "xls"},
		{"rtf", []byte(`{\rtf1\ansi hello}`), "rtf"},
		{"html", []byte("\xEF\xBB\xBF  <!DOCTYPE html><html><p>hi</p>"), "html"},
		{"html after comment", []byte("<!-- generated --><html lang=en>"), "html"},
		{"text", []byte("just some text"), ""},
		{"empty", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Sniff(tc.data); got != tc.want {
				t.Errorf("Sniff = %q, want %q", got, tc.want)
			}
		})
	}
}
