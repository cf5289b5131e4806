package trawler_test

import (
	"bufio"
	"errors"
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// codeMap is the page whose table lists every package with the Trawler
// packages it imports.
const codeMap = "docs/design.md"

// codeMapHeader opens the table (or tables) of the code map.
const codeMapHeader = "| package | owns | imports |"

// mapRow is one row of the code map: a package and the packages its
// imports cell names.
type mapRow struct {
	line    int
	pkg     string
	imports []string
}

// backquoted finds the names a cell writes in backquotes.
var backquoted = regexp.MustCompile("`([^`]+)`")

// readCodeMap reads the rows of every table in path that opens with
// codeMapHeader.
func readCodeMap(t *testing.T, path string) []mapRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []mapRow
	inTable := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == codeMapHeader:
			inTable = true
			continue
		case !strings.HasPrefix(line, "|"):
			inTable = false
			continue
		case !inTable || strings.HasPrefix(line, "|---"):
			continue
		}
		cells := splitRow(line)
		if len(cells) != 3 {
			t.Errorf("%s:%d: a row of the code map has 3 cells (package, owns, imports), this one %d: %s", path, n, len(cells), line)
			continue
		}
		names := backquoted.FindAllStringSubmatch(cells[0], -1)
		if len(names) != 1 {
			t.Errorf("%s:%d: the package cell names one package in backquotes: %s", path, n, cells[0])
			continue
		}
		row := mapRow{line: n, pkg: names[0][1]}
		for _, m := range backquoted.FindAllStringSubmatch(cells[2], -1) {
			row.imports = append(row.imports, m[1])
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// splitRow cuts a Markdown table row into its cells; a '|' inside
// backquotes is text.
func splitRow(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var cells []string
	var cell strings.Builder
	code := false
	for _, r := range line {
		switch {
		case r == '`':
			code = !code
		case r == '|' && !code:
			cells = append(cells, strings.TrimSpace(cell.String()))
			cell.Reset()
			continue
		}
		cell.WriteRune(r)
	}
	return append(cells, strings.TrimSpace(cell.String()))
}

// modulePath reads the module's path from go.mod.
func modulePath(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(raw)) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.TrimSpace(p)
		}
	}
	t.Fatal("go.mod names no module")
	return ""
}

// packageImports lists the module's packages as the code map names them
// (their path under the module; the root is "trawler"), each with the
// module's packages its non-test files import, as go list ./... sees them
// on this platform.
func packageImports(t *testing.T) map[string][]string {
	t.Helper()
	mod := modulePath(t)
	name := func(importPath string) string {
		if importPath == mod {
			return "trawler"
		}
		return strings.TrimPrefix(importPath, mod+"/")
	}
	out := map[string][]string{}
	err := filepath.WalkDir(".", func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		base := d.Name()
		if dir != "." && (base == "testdata" || base == "node_modules" || strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_")) {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); dir != "." && err == nil {
			return filepath.SkipDir // another module
		}
		p, err := build.Default.ImportDir(dir, 0)
		var noGo *build.NoGoError
		if errors.As(err, &noGo) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the package in %s: %w", dir, err)
		}
		var deps []string
		for _, imp := range p.Imports {
			if imp == mod || strings.HasPrefix(imp, mod+"/") {
				deps = append(deps, name(imp))
			}
		}
		slices.Sort(deps)
		out[name(filepath.ToSlash(filepath.Join(mod, dir)))] = deps
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// quoted writes names as the code map's cells do: `a`, `b`; — for none.
func quoted(names []string) string {
	if len(names) == 0 {
		return "—"
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "`" + n + "`"
	}
	return strings.Join(q, ", ")
}

// The code map in docs/design.md lists every package of the module once,
// and each row's imports cell names exactly the module's packages that the
// package's non-test files import: a package added, removed or split, or
// an import added or dropped, fails here with the row to write.
func TestCodeMapMatchesImports(t *testing.T) {
	actual := packageImports(t)
	if len(actual) < 10 {
		t.Fatalf("found %d packages; the test must run from the module's root", len(actual))
	}
	rows := readCodeMap(t, codeMap)
	if len(rows) == 0 {
		t.Fatalf("%s has no code map: a table headed %q", codeMap, codeMapHeader)
	}
	seen := map[string]int{}
	for _, r := range rows {
		if first, dup := seen[r.pkg]; dup {
			t.Errorf("%s:%d: `%s` has a row already (line %d): remove this one", codeMap, r.line, r.pkg, first)
			continue
		}
		seen[r.pkg] = r.line
		want, ok := actual[r.pkg]
		if !ok {
			t.Errorf("%s:%d: there is no package `%s`: remove its row, or rename it to the package it became", codeMap, r.line, r.pkg)
			continue
		}
		got := slices.Clone(r.imports)
		slices.Sort(got)
		got = slices.Compact(got)
		if !slices.Equal(got, want) {
			var missing, extra []string
			for _, w := range want {
				if !slices.Contains(got, w) {
					missing = append(missing, w)
				}
			}
			for _, g := range got {
				if !slices.Contains(want, g) {
					extra = append(extra, g)
				}
			}
			var why []string
			if len(missing) > 0 {
				why = append(why, "it also imports "+quoted(missing))
			}
			if len(extra) > 0 {
				why = append(why, "it does not import "+quoted(extra))
			}
			t.Errorf("%s:%d: the row of `%s` is wrong (%s): write its imports cell as\n%s",
				codeMap, r.line, r.pkg, strings.Join(why, "; "), quoted(want))
		}
	}
	var absent []string
	for pkg := range actual {
		if _, ok := seen[pkg]; !ok {
			absent = append(absent, pkg)
		}
	}
	slices.Sort(absent)
	for _, pkg := range absent {
		t.Errorf("%s: `%s` has no row in the code map: add\n| `%s` | WHAT IT OWNS | %s |", codeMap, pkg, pkg, quoted(actual[pkg]))
	}
}
