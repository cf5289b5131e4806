package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// proc is one process as /proc shows it.
type proc struct {
	pid, ppid, pgid int
	state           string // R, S, Z...
	comm            string
	cmdline         []string
}

// listProcs reads every process of the machine. Processes that vanish while
// they are read are skipped.
func listProcs() []proc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
		open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(string(stat[end+1:]))
		if len(f) < 3 {
			continue
		}
		p := proc{pid: pid, state: f[0], comm: string(stat[open+1 : end])}
		p.ppid, _ = strconv.Atoi(f[1])
		p.pgid, _ = strconv.Atoi(f[2])
		if raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil {
			p.cmdline = strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		}
		out = append(out, p)
	}
	return out
}

func (p proc) joined() string { return strings.Join(p.cmdline, " ") }

// userDataDir is the --user-data-dir of a Chromium process, or "".
// Chromium's child processes rewrite their command line into one
// space-separated string, so the flag is looked for in the joined form.
func (p proc) userDataDir() string {
	_, v, ok := strings.Cut(p.joined(), "--user-data-dir=")
	if !ok {
		return ""
	}
	v, _, _ = strings.Cut(v, " ")
	return v
}

// isChromium reports whether p is a Chromium process (any type), crashpad
// handlers included.
func (p proc) isChromium() bool {
	return strings.Contains(p.joined(), "chromium") || strings.HasPrefix(p.comm, "chrom")
}

// browserProcs returns the live Chromium processes whose command line holds
// dir (a service's data directory), grouped by process group: the runtime
// starts each browser as the leader of its own group.
func browserProcs(dir string) map[int][]proc {
	groups := map[int][]proc{}
	for _, p := range listProcs() {
		if p.state == "Z" || !strings.Contains(p.joined(), dir) {
			continue
		}
		groups[p.pgid] = append(groups[p.pgid], p)
	}
	return groups
}

// statusKB reads a "Name:   123 kB" field of /proc/<pid>/<file>.
func statusKB(pid int, file, field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/%s", pid, file))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			fs := strings.Fields(v)
			if len(fs) == 0 {
				break
			}
			return strconv.ParseInt(fs[0], 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/%s", field, pid, file)
}

// pssKB is the proportional set size of pid: shared pages are divided among
// the processes sharing them, so sums over processes do not double count.
func pssKB(pid int) (int64, error) { return statusKB(pid, "smaps_rollup", "Pss") }

func rssKB(pid int) (int64, error) { return statusKB(pid, "status", "VmRSS") }

// browserPID returns the pid of browser id's main process (the leader of
// its process group), which the process runtime records in trawler.pid in
// the browser's user-data directory, and that directory.
func browserPID(browsersDir, id string) (pid int, dir string, err error) {
	dir = filepath.Join(browsersDir, id)
	raw, err := os.ReadFile(filepath.Join(dir, "trawler.pid"))
	if err != nil {
		return 0, "", err
	}
	pid, err = strconv.Atoi(strings.TrimSpace(string(raw)))
	return pid, dir, err
}

// procType is a Chromium process's --type (with its utility sub-type), or
// "browser" for the main process.
func (p proc) procType() string {
	j := p.joined()
	_, t, ok := strings.Cut(j, "--type=")
	if !ok {
		return "browser"
	}
	t, _, _ = strings.Cut(t, " ")
	if _, sub, ok := strings.Cut(j, "--utility-sub-type="); ok {
		sub, _, _ = strings.Cut(sub, " ")
		t += ":" + strings.TrimSuffix(sub, "Service")
	}
	if strings.Contains(j, "--top-chrome-webui") {
		t += ":top-chrome-webui"
	}
	return t
}

// groupMemory sums PSS and RSS over the live processes of process group
// pgid; parts is the PSS of each process, by type.
func groupMemory(pgid int) (pss, rss int64, parts []string, err error) {
	for _, p := range listProcs() {
		if p.pgid != pgid || p.state == "Z" {
			continue
		}
		ps, err1 := pssKB(p.pid)
		rs, err2 := rssKB(p.pid)
		if err1 != nil || err2 != nil {
			continue // exited meanwhile
		}
		pss += ps
		rss += rs
		parts = append(parts, fmt.Sprintf("%s=%.1f", p.procType(), float64(ps)/1024))
	}
	if len(parts) == 0 {
		return 0, 0, nil, fmt.Errorf("no process in process group %d", pgid)
	}
	return pss, rss, parts, nil
}

// markerEnv is set in this process's environment to the run's temporary
// directory before any service starts. Chromium inherits it, and so does
// every process Chromium starts, crashpad handlers included (which leave the
// browser's process group), so /proc/<pid>/environ tells which processes
// this run started, whatever their command line or process group.
const markerEnv = "TRAWLER_BENCH_RUN"

// markedProcs returns the live processes, other than this one, that carry
// marker=value in their environment.
func markedProcs(value string) []proc {
	want := []byte(markerEnv + "=" + value + "\x00")
	var out []proc
	for _, p := range listProcs() {
		if p.pid == os.Getpid() || p.state == "Z" {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.pid))
		if err != nil || !bytes.Contains(env, want) {
			continue
		}
		out = append(out, p)
	}
	return out
}
