package parse

import (
	"archive/zip"
	"bytes"
	"strings"
)

// Sniff names the format of data from its leading bytes: "pdf", "docx",
// "xlsx", "pptx", "odt", "ods", "odp", "doc", "xls", "ppt", "rtf" or "html",
// and "" when it does not recognise it. It reads only data and never panics.
func Sniff(data []byte) string {
	head := data
	if len(head) > 1024 {
		head = head[:1024]
	}
	switch {
	case bytes.HasPrefix(bytes.TrimLeft(head, " \t\r\n\x00"), []byte("%PDF-")):
		return "pdf"
	case bytes.HasPrefix(data, []byte("PK\x03\x04")):
		return sniffZip(data)
	case bytes.HasPrefix(data, []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}):
		return sniffOLE(data)
	case bytes.HasPrefix(data, []byte(`{\rtf`)):
		return "rtf"
	}
	if looksLikeHTML(head) {
		return "html"
	}
	if bytes.Contains(head, []byte("%PDF-")) {
		// Readers accept junk before the header within the first KiB.
		return "pdf"
	}
	return ""
}

// sniffZip tells the Office Open XML and OpenDocument formats apart by the
// files inside the archive.
func sniffZip(data []byte) (kind string) {
	defer func() {
		if recover() != nil {
			kind = ""
		}
	}()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return ""
	}
	for _, f := range zr.File {
		switch {
		case strings.HasPrefix(f.Name, "word/"):
			return "docx"
		case strings.HasPrefix(f.Name, "xl/"):
			return "xlsx"
		case strings.HasPrefix(f.Name, "ppt/"):
			return "pptx"
		case f.Name == "mimetype" && f.UncompressedSize64 < 256:
			rc, err := f.Open()
			if err != nil {
				return ""
			}
			var b [256]byte
			n, _ := rc.Read(b[:])
			rc.Close()
			switch strings.TrimSpace(string(b[:n])) {
			case "application/vnd.oasis.opendocument.text":
				return "odt"
			case "application/vnd.oasis.opendocument.spreadsheet":
				return "ods"
			case "application/vnd.oasis.opendocument.presentation":
				return "odp"
			}
		}
	}
	return ""
}

// sniffOLE tells the legacy Office formats apart by the UTF-16 name of their
// main stream in the compound file's directory.
func sniffOLE(data []byte) string {
	utf16 := func(s string) []byte {
		b := make([]byte, 0, 2*len(s))
		for i := 0; i < len(s); i++ {
			b = append(b, s[i], 0)
		}
		return b
	}
	switch {
	case bytes.Contains(data, utf16("WordDocument")):
		return "doc"
	case bytes.Contains(data, utf16("Workbook")), bytes.Contains(data, utf16("Book")):
		return "xls"
	case bytes.Contains(data, utf16("PowerPoint Document")):
		return "ppt"
	}
	return ""
}

func looksLikeHTML(head []byte) bool {
	s := bytes.TrimPrefix(head, []byte("\xEF\xBB\xBF"))
	s = bytes.ToLower(bytes.TrimSpace(s))
	for _, p := range []string{"<!doctype html", "<html", "<head", "<body"} {
		if bytes.HasPrefix(s, []byte(p)) {
			return true
		}
	}
	// Comments or an XML declaration may come first.
	if bytes.HasPrefix(s, []byte("<")) && (bytes.Contains(s, []byte("<html")) || bytes.Contains(s, []byte("<!doctype html"))) {
		return true
	}
	return false
}
