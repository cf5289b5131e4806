package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestParseCommand converts local files the way a user at a shell would.
func TestParseCommand(t *testing.T) {
	t.Parallel()
	run := func(args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		err := parseCmd(args, &out, &errOut)
		return out.String(), errOut.String(), err
	}
	out, _, err := run("../../parse/testdata/report.pdf")
	if err != nil || !strings.HasPrefix(out, "# Harbour Water Quality Report\n") || !strings.Contains(out, "\n- Dissolved oxygen") {
		t.Errorf("markdown: %v\n%s", err, out)
	}
	out, _, err = run("--format", "html", "../../parse/testdata/table.pdf")
	if err != nil || !strings.Contains(out, "<th>Region</th>") {
		t.Errorf("html: %v\n%s", err, out)
	}
	out, stderr, err := run("../../parse/testdata/scanned.pdf", "--format", "json")
	var doc struct {
		Markdown string
		Warning  string
		Metadata map[string]any
	}
	if err != nil || json.Unmarshal([]byte(out), &doc) != nil || doc.Metadata["title"] != "Scanned Appendix" ||
		doc.Metadata["numPages"] != float64(2) || doc.Metadata["sourceURL"] != "scanned.pdf" || !strings.Contains(doc.Warning, "page 2") {
		t.Errorf("json: %v %s\n%s", err, stderr, out)
	}

	dir := t.TempDir()
	exe := filepath.Join(dir, "setup.exe")
	os.WriteFile(exe, []byte("MZ"), 0o644)
	fake := filepath.Join(dir, "fake.docx")
	os.WriteFile(fake, []byte("%PDF-1.7\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "a file is required"},
		{[]string{filepath.Join(dir, "missing.pdf")}, "no such file"},
		{[]string{exe}, "extension parse does not read"},
		{[]string{fake}, "named a DOCX file but its content is PDF"},
		{[]string{"--format", "yaml", exe}, "--format must be markdown, html or json"},
	} {
		_, _, err := run(tc.args...)
		assert.ErrorContains(t, err, tc.want, "%v", tc.args)
	}
}
