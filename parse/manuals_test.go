package parse

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// requireTool skips the test when a command it needs is missing, except in
// CI (CI set), where it must be there.
func requireTool(t *testing.T, name, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(name); err == nil {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not installed (apt-get install %s)", name, pkg)
	}
	t.Skipf("%s is not installed (apt-get install %s)", name, pkg)
}

// TestManuals parses real manuals that nobody here wrote (Manuals: Texinfo
// through pdfTeX, groff through Ghostscript, DocBook through dblatex and
// xdvipdfmx and through Apache FOP) and holds them against poppler: the
// page count against pdfinfo's, the words against pdftotext -layout's
// (WordF1, at least 0.95 each; what costs the rest is mostly running
// headers and footers, which PDF drops on purpose, and words hyphenated at
// line ends, which it joins and pdftotext does not), and some section
// titles must come out as Markdown headings.
func TestManuals(t *testing.T) {
	t.Parallel()
	requireTool(t, "pdftotext", "poppler-utils")
	requireTool(t, "pdfinfo", "poppler-utils")
	for _, m := range Manuals {
		t.Run(m.Package+"/"+m.Path[strings.LastIndexByte(m.Path, '/')+1:], func(t *testing.T) {
			t.Parallel()
			data, err := ReadManual(m)
			if os.IsNotExist(err) {
				if os.Getenv("CI") != "" {
					t.Fatalf("%s is missing: apt-get install %s", m.Path, m.Package)
				}
				t.Skipf("%s is missing (apt-get install %s)", m.Path, m.Package)
			}
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			doc, err := PDF(ctx, data)
			if err != nil {
				t.Fatalf("PDF: %v", err)
			}
			info := poppler(t, data, "pdfinfo", "-")
			pm := regexp.MustCompile(`(?m)^Pages:\s+(\d+)`).FindStringSubmatch(info)
			if pm == nil {
				t.Fatalf("pdfinfo printed no page count:\n%s", info)
			}
			if want, _ := strconv.Atoi(pm[1]); doc.Pages != want {
				t.Errorf("%d pages, pdfinfo says %d", doc.Pages, want)
			}
			want := poppler(t, data, "pdftotext", "-layout", "-", "-")
			f1 := WordF1(doc.Markdown, want)
			t.Logf("%s: %d pages, word F1 against pdftotext -layout %.4f, %d warnings", m.Name, doc.Pages, f1, len(doc.Warnings))
			if f1 < 0.95 {
				t.Errorf("word F1 %.4f, want at least 0.95", f1)
			}
			for _, h := range m.Headings {
				re := regexp.MustCompile(`(?m)^#{1,6} (.*\s)?` + regexp.QuoteMeta(h) + `$`)
				if !re.MatchString(doc.Markdown) {
					t.Errorf("no Markdown heading ends with %q", h)
				}
			}
		})
	}
}

// poppler runs a poppler tool with the PDF on its standard input.
func poppler(t *testing.T, data []byte, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdin = bytes.NewReader(data)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v: %s", name, err, stderr.String())
	}
	return string(out)
}

func TestWordF1(t *testing.T) {
	t.Parallel()
	tests := []struct {
		got, want string
		f1        float64
	}{
		{"", "", 1},
		{"a b", "", 0},
		{"The cat sat.", "the  CAT\nsat", 1},
		// Markup, punctuation and link targets are not words; ligatures are
		// spelled out.
		{"## The [ﬁne](https://example.org/x) *cat*", "the fine cat", 1},
		// got has 4 words, 3 of them wanted; want has 3: P 3/4, R 1.
		{"one two two three", "one two three", 2 * 0.75 / 1.75},
		// Multisets: a word counts as often as it occurs.
		{"a a a a", "a b c d", 2 * 0.25 * 0.25 / 0.5},
	}
	for _, tc := range tests {
		if got := WordF1(tc.got, tc.want); got < tc.f1-1e-9 || got > tc.f1+1e-9 {
			t.Errorf("WordF1(%q, %q) = %v, want %v", tc.got, tc.want, got, tc.f1)
		}
	}
}
