package main

import (
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// memorySampling says whether a run samples memory as it goes. A run that
// does is not the one timed: on a 2-core machine the sampler holds a core
// for much of it.
type memorySampling int

const (
	withoutMemory memorySampling = iota
	withMemory
)

// memPeak is the highest sample of a memSampler, and its parts.
type memPeak struct {
	total, self, chromium int64 // kB
	procs, browsers       int
	at                    int           // which sample (1-based)
	samples               int           // how many were taken
	cost                  time.Duration // mean time a sample took
}

type memSampler struct {
	quit chan struct{}
	done chan memPeak
}

// startMemSampler samples, every period (or as soon as the last sample is
// done, when it took longer) until stop, this process's VmRSS plus the PSS
// of the Chromium processes of dataDir, and keeps the highest sum. The
// sampler runs on its own thread at a raised priority (nice -10, when the
// bench may: as root) so that it keeps its pace on a machine the scrapes
// saturate; it takes its CPU from the scrapes it samples.
func startMemSampler(dataDir string, period time.Duration) *memSampler {
	m := &memSampler{quit: make(chan struct{}), done: make(chan memPeak, 1)}
	go func() {
		runtime.LockOSThread() // the thread ends with the goroutine
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), -10); err != nil {
			logf("memory sampler at normal priority: %v", err)
		}
		var peak memPeak
		var n int
		var spent time.Duration
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			t := time.Now()
			cur := sampleMemory(dataDir)
			spent += time.Since(t)
			n++
			if cur.total > peak.total {
				cur.at = n
				peak = cur
			}
			select {
			case <-m.quit:
				peak.samples, peak.cost = n, spent/time.Duration(n)
				m.done <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return m
}

func (m *memSampler) stop() memPeak {
	close(m.quit)
	return <-m.done
}

// sampleMemory reads this process's VmRSS and the PSS of every Chromium
// process of dataDir: those whose command line names it, and every process
// of their process groups (each browser leads its own group). PSS rather
// than RSS because Chromium's processes share most of their pages: summed,
// the RSS of four busy browsers' processes is about four times their PSS.
func sampleMemory(dataDir string) memPeak {
	var s memPeak
	s.self, _ = rssKB(os.Getpid())
	procs := listProcs()
	groups := map[int]bool{}
	for _, p := range procs {
		if p.state != "Z" && strings.Contains(p.joined(), dataDir) {
			groups[p.pgid] = true
		}
	}
	delete(groups, 0)
	for _, p := range procs {
		if p.state == "Z" || p.pid == os.Getpid() || !(groups[p.pgid] || strings.Contains(p.joined(), dataDir)) {
			continue
		}
		if kb, err := pssKB(p.pid); err == nil {
			s.chromium += kb
			s.procs++
		}
	}
	s.browsers = len(groups)
	s.total = s.self + s.chromium
	return s
}
