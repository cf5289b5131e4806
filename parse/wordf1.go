package parse

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"regexp"
	"strings"
	"unicode"
)

// Measuring text extraction: the manuals test (manuals_test.go) and the
// benchmark (cmd/bench/parsebench.go) compare what PDF extracts from real
// manuals with what poppler's pdftotext does, by WordF1 over the same
// corpus, Manuals.

// Manual is a PDF manual that a Debian package installs.
type Manual struct {
	Name    string // what made it, for reports
	Package string // the Debian package that installs it
	Path    string // where; a .gz is gzipped
	// Headings are some of its section titles, which PDF should turn into
	// Markdown headings.
	Headings []string
}

// Manuals are PDFs that nobody here wrote, from four producers, 431 pages
// in all (apt-get install bash-doc debian-faq xorg-docs).
var Manuals = []Manual{
	{
		Name: "bashref (Texinfo, pdfTeX)", Package: "bash-doc", Path: "/usr/share/doc/bash/bashref.pdf",
		Headings: []string{"Introduction", "Shell Builtin Commands", "Bash Features", "Job Control", "Indexes"},
	},
	{
		Name: "bash (groff, Ghostscript)", Package: "bash-doc", Path: "/usr/share/doc/bash/bash.pdf",
		Headings: []string{"NAME", "SYNOPSIS", "DESCRIPTION", "PARAMETERS", "EXPANSION", "SEE ALSO"},
	},
	{
		Name: "debian-faq (DocBook, dblatex, xdvipdfmx)", Package: "debian-faq", Path: "/usr/share/doc/debian/FAQ/debian-faq.en.pdf.gz",
		Headings: []string{"Definitions and overview", "Compatibility issues", "The Debian package management tools", "1.1 What is this FAQ?"},
	},
	{
		Name: "icccm (DocBook, Apache FOP)", Package: "xorg-docs", Path: "/usr/share/doc/xorg-docs/icccm/icccm.pdf.gz",
		Headings: []string{"Chapter 1. Introduction", "Chapter 2. Peer-to-Peer Communication by Means of Selections", "Client Support for Session Management"},
	},
}

// ReadManual returns the PDF bytes of a manual, gunzipped if need be.
func ReadManual(m Manual) ([]byte, error) {
	data, err := os.ReadFile(m.Path)
	if err != nil || !strings.HasSuffix(m.Path, ".gz") {
		return data, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(zr, MaxInputBytes))
}

// linkTarget matches the destination of a Markdown link or image.
var linkTarget = regexp.MustCompile(`\]\((<[^>\n]*>|[^)\s]*)\)`)

// Words cuts text into its words: runs of letters and digits, lower-cased,
// with ligatures spelled out (as PDF spells them out, pdffont.go). Markdown link destinations ("](url)") are not
// words of the text.
func Words(text string) []string {
	text = linkTarget.ReplaceAllString(text, "]")
	text = ligatures.Replace(strings.ToLower(text))
	return strings.FieldsFunc(text, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// WordF1 scores got (Markdown or plain text) against want by their words
// (Words) taken as multisets: the harmonic mean of the share of got's words
// that want has (precision) and the share of want's words that got has
// (recall). Order is ignored. Two empty texts score 1.
func WordF1(got, want string) float64 {
	g, w := Words(got), Words(want)
	if len(g) == 0 && len(w) == 0 {
		return 1
	}
	count := make(map[string]int, len(w))
	for _, x := range w {
		count[x]++
	}
	common := 0
	for _, x := range g {
		if count[x] > 0 {
			count[x]--
			common++
		}
	}
	if common == 0 {
		return 0
	}
	p := float64(common) / float64(len(g))
	r := float64(common) / float64(len(w))
	return 2 * p * r / (p + r)
}
