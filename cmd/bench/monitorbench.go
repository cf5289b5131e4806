package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

const (
	monitorCount  = 1000             // idle monitors created
	monitorWindow = 20 * time.Second // each measured window
	// monitorCron is due once a year (00:00 UTC on January 1st): no
	// monitor runs during the bench.
	monitorCron = "0 0 1 1 *"
)

// monitorOverhead measures what idle monitors cost a service: a trawler
// serve process (built from this tree; its own process, so that its CPU
// time is its own) with no warm browser, idle for monitorWindow with no
// monitor, then again after monitorCount monitors were created through
// POST /v2/monitor, each a scrape target on a loopback page, on a yearly
// schedule, so none is due. The scheduler (package monitor's Run) asks
// the store for due runs and checks every Poll (2 s) meanwhile.
//   - monitor_scheduler_cpu_percent: the process's CPU per second of the
//     second window less that of the first, in percent of one core.
//   - monitor_scheduler_overhead: the CPU of the second window over the
//     first's (per second of each).
//   - monitor_scheduler_rss_mb: the process's VmRSS at the end of the
//     second window less its VmRSS at the end of the first.
//   - monitor_create_ms: the median of the creates, made one at a time.
//
// The CPU is the sum of the process's threads' run time
// (/proc/PID/task/*/schedstat, in nanoseconds; /proc/PID/stat counts in
// 10 ms ticks, too coarse for an idle process, and is logged beside it).
// The loopback page counts its requests: a check would fetch it, and the
// phase fails if one did.
func (b *bench) monitorOverhead(ctx context.Context, _ *instance) error {
	var hits atomic.Int64
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintf(w, "<html><body><p>page %s</p></body></html>", r.URL.Path)
	}))
	defer site.Close()
	bin := filepath.Join(b.tmp, "trawler-monitor")
	if err := buildTrawler(ctx, bin); err != nil {
		return err
	}
	sp, err := startServe(ctx, b.tmp, bin, "monitor", &http.Transport{MaxIdleConnsPerHost: 4},
		"TRAWLER_API_KEYS=", "TRAWLER_WARM_BROWSERS=0")
	if err != nil {
		return err
	}
	defer sp.stop()
	if err := sp.settle(ctx, 20*time.Second); err != nil {
		return err
	}
	if g := browserProcs(sp.api.dataDir); len(g) > 0 {
		logf("monitor: note: the service runs %d browsers, which the figures leave out", len(g))
	}

	base, err := sp.window(ctx, monitorWindow)
	if err != nil {
		return err
	}
	logf("monitor: no monitor: %s", base)

	creates := make([]time.Duration, 0, monitorCount)
	var ids []string
	t0 := time.Now()
	for i := 0; i < monitorCount; i++ {
		body := fmt.Sprintf(`{"name":"bench monitor %d","schedule":{"cron":%q},"targets":[{"type":"scrape","urls":["%s/page/%d"]}]}`,
			i, monitorCron, site.URL, i)
		var out struct {
			Data struct {
				ID        string `json:"id"`
				NextRunAt string `json:"nextRunAt"`
			} `json:"data"`
		}
		t := time.Now()
		if err := sp.api.do(ctx, http.MethodPost, "/v2/monitor", []byte(body), &out); err != nil {
			return fmt.Errorf("monitor %d: %w", i, err)
		}
		creates = append(creates, time.Since(t))
		if out.Data.ID == "" {
			return fmt.Errorf("monitor %d: POST /v2/monitor answered without an id", i)
		}
		if i == 0 {
			logf("monitor: the first monitor's next run is at %s", out.Data.NextRunAt)
		}
		ids = append(ids, out.Data.ID)
	}
	logf("monitor: %d monitors created in %s (p50 %.2f ms, p90 %.2f ms, p99 %.2f ms)", monitorCount,
		time.Since(t0).Round(time.Millisecond), ms(median(creates)), ms(pct(creates, 0.9)), ms(pct(creates, 0.99)))
	if err := sp.settle(ctx, 20*time.Second); err != nil {
		return err
	}

	with, err := sp.window(ctx, monitorWindow)
	if err != nil {
		return err
	}
	logf("monitor: %d idle monitors: %s", monitorCount, with)

	// None ran: no check of the first and last monitors, no request to
	// the loopback pages.
	for _, id := range []string{ids[0], ids[len(ids)-1]} {
		var checks struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if err := sp.api.do(ctx, http.MethodGet, "/v2/monitor/"+id+"/checks", nil, &checks); err != nil {
			return err
		}
		if len(checks.Data) > 0 {
			return fmt.Errorf("monitor %s has %d checks: a monitor ran during the bench", id, len(checks.Data))
		}
	}
	if n := hits.Load(); n > 0 {
		return fmt.Errorf("the monitors' pages were fetched %d times: a monitor ran during the bench", n)
	}
	if st, err := os.Stat(filepath.Join(sp.api.dataDir, "trawler.db")); err == nil {
		logf("monitor: the store (trawler.db) holds %.1f MB", float64(st.Size())/(1<<20))
	}

	// VmRSS may fall: the Go runtime returns the creates' garbage to the
	// system. The peak's rise bounds what they took at any time.
	logf("monitor: VmRSS %+.1f MB, RssAnon %+.1f MB, VmHWM %+.1f MB with the monitors", kbMB(with.rss-base.rss),
		kbMB(with.anon-base.anon), kbMB(with.hwm-base.hwm))
	extra := with.perCore() - base.perCore()
	figure("monitor_scheduler_cpu_percent", 100*extra, "%")
	figure("monitor_scheduler_rss_mb", kbMB(with.rss-base.rss), "MB")
	// A baseline that used no CPU the clock saw is counted as 1 ms.
	figure("monitor_scheduler_overhead", with.perCore()/max(base.perCore(), float64(time.Millisecond)/float64(base.took)), "x")
	figure("monitor_create_ms", ms(median(creates)), "ms")
	if extra > 0.01 || kbMB(with.rss-base.rss) > 50 {
		logf("monitor: OVER BUDGET: %d idle monitors cost %.2f%% of a core and %.1f MB (budget: 1%%, 50 MB)",
			monitorCount, 100*extra, kbMB(with.rss-base.rss))
	}
	return nil
}

// threadsCPU is the run time of the live threads of pid, summed.
func threadsCPU(pid int) time.Duration {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var total int64
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(dir, e.Name(), "schedstat"))
		if err != nil {
			continue // exited meanwhile
		}
		if f := strings.Fields(string(raw)); len(f) > 0 {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			total += n
		}
	}
	return time.Duration(total)
}

// settle waits, up to d, until the process has used under 5 ms of CPU in
// each of two seconds in a row: its start-up work (the documentation's
// index, the store's migrations) or the creates' aftermath done.
func (sp *node) settle(ctx context.Context, d time.Duration) error {
	pid := sp.cmd.Process.Pid
	t0, quiet := time.Now(), 0
	last := threadsCPU(pid)
	for quiet < 2 {
		if time.Since(t0) > d {
			logf("%s: not quiet after %s (last second: %s of CPU); measuring anyway", sp.name, d, (threadsCPU(pid) - last).Round(time.Microsecond))
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		cur := threadsCPU(pid)
		if cur-last < 5*time.Millisecond {
			quiet++
		} else {
			quiet = 0
		}
		last = cur
	}
	logf("%s: quiet after %s", sp.name, time.Since(t0).Round(100*time.Millisecond))
	return nil
}

// serveWindow is what a serve process used over a window.
type serveWindow struct {
	cpu   time.Duration // threads' run time
	ticks int64         // /proc/PID/stat utime+stime, 10 ms ticks
	took  time.Duration
	rss   int64 // kB, VmRSS at the end
	anon  int64 // kB, RssAnon at the end
	hwm   int64 // kB, VmHWM at the end
	thr   int   // threads at the end
}

func (w serveWindow) perCore() float64 { return float64(w.cpu) / float64(w.took) }

func (w serveWindow) String() string {
	return fmt.Sprintf("%s of CPU in %s (%.3f%% of a core; /proc/PID/stat: %d ticks), %d threads, VmRSS %.1f MB (RssAnon %.1f MB), VmHWM %.1f MB",
		w.cpu.Round(time.Microsecond), w.took.Round(time.Millisecond), 100*w.perCore(), w.ticks, w.thr,
		kbMB(w.rss), kbMB(w.anon), kbMB(w.hwm))
}

// window measures the process's CPU over d, and its memory at the end.
func (sp *node) window(ctx context.Context, d time.Duration) (serveWindow, error) {
	pid := sp.cmd.Process.Pid
	var w serveWindow
	cpu0, ticks0, t0 := threadsCPU(pid), statTicks(pid, false), time.Now()
	select {
	case <-ctx.Done():
		return w, ctx.Err()
	case <-time.After(d):
	}
	w.cpu, w.ticks, w.took = threadsCPU(pid)-cpu0, statTicks(pid, false)-ticks0, time.Since(t0)
	var err error
	if w.rss, err = rssKB(pid); err != nil {
		return w, fmt.Errorf("%s: %w", sp.name, err)
	}
	w.anon, _ = statusKB(pid, "status", "RssAnon")
	w.hwm, _ = statusKB(pid, "status", "VmHWM")
	if entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid)); err == nil {
		w.thr = len(entries)
	}
	return w, nil
}
