package parse

import (
	"bytes"
	"fmt"
	"mime"
	"path"
	"strings"
)

// format is one document format: the name Sniff and Parse use, the media
// types servers label it with and the file extensions it is saved under.
type format struct {
	name       string
	mediaTypes []string
	extensions []string
}

// formats are the formats uploads and document URLs may have. HTML is one
// of them for uploads, though web pages go through the content package.
var formats = []format{
	{"pdf", []string{"application/pdf", "application/x-pdf"}, []string{".pdf"}},
	{"docx", []string{"application/vnd.openxmlformats-officedocument.wordprocessingml.document"}, []string{".docx"}},
	{"doc", []string{"application/msword"}, []string{".doc"}},
	{"odt", []string{"application/vnd.oasis.opendocument.text"}, []string{".odt"}},
	{"rtf", []string{"application/rtf", "text/rtf", "application/x-rtf"}, []string{".rtf"}},
	{"xlsx", []string{"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"}, []string{".xlsx"}},
	{"xls", []string{"application/vnd.ms-excel"}, []string{".xls"}},
	{"html", []string{"text/html", "application/xhtml+xml"}, []string{".html", ".htm"}},
}

// FormatOfName names the format a file name's extension says, or "".
func FormatOfName(name string) string {
	ext := strings.ToLower(path.Ext(name))
	for _, f := range formats {
		for _, e := range f.extensions {
			if e == ext {
				return f.name
			}
		}
	}
	return ""
}

// FormatOfMediaType names the format of a Content-Type header, or "".
func FormatOfMediaType(contentType string) string {
	mt, _, _ := mime.ParseMediaType(contentType)
	for _, f := range formats {
		for _, t := range f.mediaTypes {
			if t == mt {
				return f.name
			}
		}
	}
	return ""
}

// MediaTypeOf is the usual media type of a format.
func MediaTypeOf(name string) string {
	for _, f := range formats {
		if f.name == name {
			return f.mediaTypes[0]
		}
	}
	return "application/octet-stream"
}

// Extensions lists the file extensions of the formats, e.g. for a message
// naming what is accepted.
func Extensions() []string {
	var out []string
	for _, f := range formats {
		out = append(out, f.extensions...)
	}
	return out
}

// MediaTypes lists the media types of the formats Parse reads (not HTML).
func MediaTypes() []string {
	var out []string
	for _, f := range formats {
		if f.name != "html" {
			out = append(out, f.mediaTypes...)
		}
	}
	return out
}

// DocumentExtensions lists the extensions of the formats Parse reads (not
// HTML).
func DocumentExtensions() []string {
	var out []string
	for _, f := range formats {
		if f.name != "html" {
			out = append(out, f.extensions...)
		}
	}
	return out
}

// TypeError is a file whose type is not one of the formats, or whose
// content is not what its name says.
type TypeError struct{ msg string }

func (e *TypeError) Error() string { return e.msg }

// Identify names the format of a file from its name's extension, checked
// against its content: a file named .pdf must hold a PDF, one named .html
// must not hold a binary format. Anything else is a *TypeError.
func Identify(name string, data []byte) (string, error) {
	format := FormatOfName(name)
	if format == "" {
		return "", &TypeError{fmt.Sprintf("%q has an extension parse does not read; it reads %s", name, strings.Join(Extensions(), ", "))}
	}
	sniffed := Sniff(data)
	switch {
	case format == "html" && (sniffed == "" || sniffed == "html") && !bytes.Contains(data[:min(len(data), 8192)], []byte{0}):
	case sniffed == format:
	case sniffed == "":
		return "", &TypeError{fmt.Sprintf("%q is named a %s file but its content is not one", name, strings.ToUpper(format))}
	default:
		return "", &TypeError{fmt.Sprintf("%q is named a %s file but its content is %s", name, strings.ToUpper(format), strings.ToUpper(sniffed))}
	}
	return format, nil
}
