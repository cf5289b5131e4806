package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A printedFigure is one figure the run printed, with the phase that printed it.
type printedFigure struct {
	phase, name, value, unit string
}

// printed are the run's figures in the order printed, for the page.
var printed struct {
	sync.Mutex
	phase string // the phase running now
	all   []printedFigure
}

// record keeps a printed figure for the page.
func record(name, value, unit string) {
	printed.Lock()
	defer printed.Unlock()
	printed.all = append(printed.all, printedFigure{printed.phase, name, value, unit})
}

// setPhase names the phase whose figures come next.
func setPhase(name string) {
	printed.Lock()
	defer printed.Unlock()
	printed.phase = name
}

// machine describes what the run ran on, for the page.
type machine struct {
	cpu, memory, os, goVersion, chromium string
	cores                                int
}

// describeMachine reads the machine's CPU, memory and OS from /proc and
// /etc/os-release, and asks the Chromium at chromium its version.
func describeMachine(chromium string) machine {
	m := machine{cpu: "?", memory: "?", os: "?", goVersion: runtime.Version(), chromium: "?", cores: runtime.NumCPU()}
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(raw)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	if raw, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.Lines(string(raw)) {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					m.memory = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
				}
			}
		}
	}
	if raw, err := os.ReadFile("/etc/os-release"); err == nil {
		for line := range strings.Lines(string(raw)) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "PRETTY_NAME="); ok {
				m.os = strings.Trim(v, `"`)
			}
		}
	}
	if raw, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.os += ", Linux " + strings.TrimSpace(string(raw))
	}
	if chromium != "" {
		// Debian's chromium wrapper script may complain on stderr; the
		// version is the first line of stdout.
		if out, err := exec.Command(chromium, "--version").Output(); err == nil {
			if line, _, _ := strings.Cut(string(out), "\n"); strings.TrimSpace(line) != "" {
				m.chromium = strings.TrimSpace(line)
			}
		}
	}
	return m
}

// writePage writes the performance page to path: the machine, the run's
// start and length, the phases it ran, why it failed when it did, and
// every figure of the run, phase by phase, as its stdout line printed it.
func writePage(path string, m machine, start time.Time, took time.Duration, load, phases string, failed error) error {
	printed.Lock()
	all := append([]printedFigure(nil), printed.all...)
	printed.Unlock()
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	fmt.Fprintf(w, "# Performance\n\n")
	fmt.Fprintf(w, "<!-- Written by `make bench` (cmd/bench -page); do not edit by hand: run `make bench` again. -->\n")
	// The table's figure names would outrank, in the docs search, the
	// pages that explain what they measure.
	fmt.Fprintf(w, "<!-- docs-search: skip -->\n\n")
	fmt.Fprintf(w, "The figures of the last run of `make bench`, as its `bench: NAME VALUE UNIT` lines printed them.\n")
	fmt.Fprintf(w, "Every ratio (unit `x`) is taken against a baseline measured in the same run; MB are MiB.\n")
	fmt.Fprintf(w, "What each phase measures, and how, is the package doc of cmd/bench (`go doc ./cmd/bench`).\n")
	fmt.Fprintf(w, "The machine may have been shared with other work: the 1-minute load average at the start is given.\n\n")
	if failed != nil {
		// One line: the error may hold a command's output.
		fmt.Fprintf(w, "**This run did not complete**: %s. The figures below are those it printed before.\n\n",
			strings.Join(strings.Fields(failed.Error()), " "))
	}
	fmt.Fprintf(w, "## Machine\n\n")
	fmt.Fprintf(w, "| | |\n|---|---|\n")
	fmt.Fprintf(w, "| CPU | %s, %d cores |\n", m.cpu, m.cores)
	fmt.Fprintf(w, "| Memory | %s |\n", m.memory)
	fmt.Fprintf(w, "| OS | %s |\n", m.os)
	fmt.Fprintf(w, "| Go | %s |\n", m.goVersion)
	fmt.Fprintf(w, "| Chromium | %s |\n", m.chromium)
	fmt.Fprintf(w, "| Date | %s (UTC), %s |\n", start.UTC().Format("2006-01-02 15:04"), took.Round(time.Second))
	fmt.Fprintf(w, "| Load average at the start | %s |\n", load)
	fmt.Fprintf(w, "| Phases | %s |\n\n", phases)
	fmt.Fprintf(w, "## Figures\n\n")
	fmt.Fprintf(w, "| phase | figure | value | unit |\n|---|---|--:|---|\n")
	for _, r := range all {
		fmt.Fprintf(w, "| %s | `%s` | %s | %s |\n", r.phase, r.name, r.value, r.unit)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}
