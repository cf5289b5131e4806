package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/trawler-dev/trawler/browsers"
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

// browserProcs returns the live processes of the browsers of data
// directory dir, grouped by process group (the runtime starts each browser
// as the leader of its own group): the groups of processes whose command
// line holds dir (an unconfined Chromium's --user-data-dir) or the marker
// of dir's browsers (a confined browser's bubblewrap, whose Chromium runs
// in the same group with only its sandbox's paths on its command line).
func browserProcs(dir string) map[int][]proc {
	marker := markerPrefix(filepath.Join(dir, "browsers"))
	all := listProcs()
	pgids := map[int]bool{}
	for _, p := range all {
		if j := p.joined(); strings.Contains(j, dir) || strings.Contains(j, marker) {
			pgids[p.pgid] = true
		}
	}
	groups := map[int][]proc{}
	for _, p := range all {
		if p.state != "Z" && pgids[p.pgid] {
			groups[p.pgid] = append(groups[p.pgid], p)
		}
	}
	return groups
}

// markerPrefix is the part of browsers.Marker common to every browser of
// the browsers' directory root.
func markerPrefix(root string) string { return strings.TrimSuffix(browsers.Marker(root, ""), "/") }

// groupDir is the directory Trawler keeps for the browser whose processes
// ps are: named by its bubblewrap's marker, or its Chromium's
// --user-data-dir (unconfined).
func groupDir(ps []proc, browsersDir string) string {
	marker := markerPrefix(browsersDir) + "/"
	for _, p := range ps {
		if _, id, ok := strings.Cut(p.joined(), marker); ok {
			id, _, _ = strings.Cut(id, " ")
			return filepath.Join(browsersDir, id)
		}
	}
	for _, p := range ps {
		if d := p.userDataDir(); d != "" {
			return d
		}
	}
	return ""
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
	// The pid, then its start time.
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return 0, "", fmt.Errorf("empty pid file in %s", dir)
	}
	pid, err = strconv.Atoi(f[0])
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
// directory before any service starts. The service processes the bench
// starts inherit it; browsers do not (Trawler gives them a minimal
// environment), so they are told by their command line instead.
const markerEnv = "TRAWLER_BENCH_RUN"

// markedProcs returns the live processes, other than this one, that this
// run started: those that carry markerEnv=tmp in their environment, whose
// command line holds tmp (an unconfined Chromium's user-data directory is
// under it), or the marker of a browsers' directory under it (a confined
// browser's bubblewrap), and every process in the process group of one of
// those (a confined browser's Chromium).
func markedProcs(tmp string) []proc {
	want := []byte(markerEnv + "=" + tmp + "\x00")
	var markers []string
	entries, _ := os.ReadDir(tmp)
	for _, e := range entries {
		if e.IsDir() {
			d := filepath.Join(tmp, e.Name())
			markers = append(markers, markerPrefix(d), markerPrefix(filepath.Join(d, "browsers")))
		}
	}
	all := listProcs()
	pgids := map[int]bool{}
	var out []proc
	for _, p := range all {
		if p.pid == os.Getpid() || p.state == "Z" {
			continue
		}
		j := p.joined()
		marked := strings.Contains(j, tmp)
		for _, m := range markers {
			marked = marked || strings.Contains(j, m)
		}
		if !marked {
			env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.pid))
			marked = err == nil && bytes.Contains(env, want)
		}
		if marked {
			out = append(out, p)
			if p.pgid != os.Getpid() && p.pgid != syscall.Getpgrp() {
				pgids[p.pgid] = true
			}
		}
	}
	seen := map[int]bool{}
	for _, p := range out {
		seen[p.pid] = true
	}
	for _, p := range all {
		if !seen[p.pid] && p.state != "Z" && pgids[p.pgid] {
			out = append(out, p)
		}
	}
	return out
}
