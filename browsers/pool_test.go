package browsers_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/browsers/browserstest"
)

func newPool(t *testing.T, o browsers.PoolOptions) (*browsers.Pool, *browsers.ProcessRuntime) {
	return browserstest.NewPool(t, o)
}

func newRuntime(t *testing.T, dir string) *browsers.ProcessRuntime {
	return &browsers.ProcessRuntime{Chromium: browserstest.Chromium(t), Dir: dir, StartTimeout: 30 * time.Second}
}

func alive(b browsers.Browser) bool {
	select {
	case <-b.Done():
		return false
	default:
		return true
	}
}

func waitStats(t *testing.T, p *browsers.Pool, what string, cond func(browsers.Stats) bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond(p.Stats()) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; stats %+v", what, p.Stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestLeaseReuseAndDestroy(t *testing.T) {
	t.Parallel()
	p, rt := newPool(t, browsers.PoolOptions{Size: 2, Warm: 1, QueueWait: time.Second, MaxUses: 2})
	waitStats(t, p, "a warm browser", func(s browsers.Stats) bool { return s.Idle == 1 })
	ctx := context.Background()

	l1, err := p.Acquire(ctx, browsers.LeaseRequest{Team: "a", Reusable: true})
	if err != nil {
		t.Fatal(err)
	}
	b1 := l1.Browser()
	l1.Release(true) // a short job: the browser goes back warm
	if !errors.Is(l1.Cause(), browsers.ErrReleased) {
		t.Fatalf("cause after release: %v", l1.Cause())
	}
	// An interactive session never gets a browser a job used.
	waitStats(t, p, "the warm browser to be replaced", func(s browsers.Stats) bool { return s.Idle == 2 })
	s1, err := p.Acquire(ctx, browsers.LeaseRequest{Team: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if s1.Browser() == b1 {
		t.Fatal("an interactive lease got a browser a job had used")
	}
	s1.Release(false)
	l2, err := p.Acquire(ctx, browsers.LeaseRequest{Team: "a", Reusable: true})
	if err != nil {
		t.Fatal(err)
	}
	if l2.Browser() != b1 {
		t.Fatal("a released reusable browser was not reused")
	}
	l2.Release(true) // second use reaches MaxUses: recycled
	waitStats(t, p, "the recycled browser to exit", func(browsers.Stats) bool { return !alive(b1) })

	l3, err := p.Acquire(ctx, browsers.LeaseRequest{Team: "a", Reusable: true})
	if err != nil {
		t.Fatal(err)
	}
	b3 := l3.Browser()
	l3.Release(false) // an interactive session: never reused
	waitStats(t, p, "the destroyed browser's user-data directory to go", func(browsers.Stats) bool {
		_, err := os.Stat(filepath.Join(rt.Dir, b3.ID()))
		return !alive(b3) && os.IsNotExist(err)
	})
	waitStats(t, p, "the pool to refill", func(s browsers.Stats) bool { return s.Idle == 1 && s.Leased == 0 && s.Total == 1 })
}

func TestLeaseDeadline(t *testing.T) {
	t.Parallel()
	p, _ := newPool(t, browsers.PoolOptions{Size: 2, Warm: 0, QueueWait: time.Second})
	l, err := p.Acquire(context.Background(), browsers.LeaseRequest{Team: "a", Lifetime: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Until(l.Deadline()); d <= 0 || d > 500*time.Millisecond {
		t.Fatalf("deadline in %s", d)
	}
	select {
	case <-l.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("lease outlived its deadline")
	}
	if !errors.Is(l.Cause(), browsers.ErrLeaseExpired) {
		t.Fatalf("cause %v, want browsers.ErrLeaseExpired", l.Cause())
	}
	select {
	case <-l.Browser().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the expired lease's browser still runs")
	}
}

func TestTeamLimitWaitsThenRefuses(t *testing.T) {
	t.Parallel()
	p, _ := newPool(t, browsers.PoolOptions{Size: 3, Warm: 0, QueueWait: 300 * time.Millisecond})
	ctx := context.Background()
	l, err := p.Acquire(ctx, browsers.LeaseRequest{Team: "a", TeamLimit: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Acquire(ctx, browsers.LeaseRequest{Team: "a", TeamLimit: 1})
	var busy *browsers.BusyError
	if !errors.As(err, &busy) || busy.RetryAfter <= 0 {
		t.Fatalf("over the team limit: %v, want a browsers.BusyError with RetryAfter", err)
	}
	// A caller that gives up stops waiting at once.
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := p.Acquire(cctx, browsers.LeaseRequest{Team: "a", TeamLimit: 1}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled wait: %v", err)
	}
	if s := p.Stats(); s.Waiters != 0 {
		t.Fatalf("%d waiters left", s.Waiters)
	}
	l.Release(false)
	l2, err := p.Acquire(ctx, browsers.LeaseRequest{Team: "a", TeamLimit: 1})
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	l2.Release(false)
}

func TestCrashEndsLeaseAndRefills(t *testing.T) {
	t.Parallel()
	p, rt := newPool(t, browsers.PoolOptions{Size: 2, Warm: 1, QueueWait: time.Second})
	waitStats(t, p, "a warm browser", func(s browsers.Stats) bool { return s.Idle == 1 })
	l, err := p.Acquire(context.Background(), browsers.LeaseRequest{Team: "a"})
	if err != nil {
		t.Fatal(err)
	}
	pid := browserstest.PID(t, rt, l.Browser())
	syscall.Kill(pid, syscall.SIGKILL)
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the lease did not end when its browser died")
	}
	if !errors.Is(l.Cause(), browsers.ErrBrowserExited) {
		t.Fatalf("cause %v, want browsers.ErrBrowserExited", l.Cause())
	}
	waitStats(t, p, "a warm browser again", func(s browsers.Stats) bool { return s.Idle == 1 && s.Leased == 0 && s.Total == 1 })
}

func TestCloseStopsEverything(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, t.TempDir())
	p := browsers.NewPool(rt, browsers.PoolOptions{Size: 3, Warm: 2, QueueWait: time.Second})
	waitStats(t, p, "warm browsers", func(s browsers.Stats) bool { return s.Idle == 2 })
	l, err := p.Acquire(context.Background(), browsers.LeaseRequest{Team: "a"})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	if !errors.Is(l.Cause(), browsers.ErrPoolClosed) {
		t.Fatalf("lease cause after Close: %v", l.Cause())
	}
	if alive(l.Browser()) {
		t.Fatal("a leased browser outlived Close")
	}
	if s := p.Stats(); s.Total != 0 {
		t.Fatalf("stats after Close: %+v", s)
	}
	if _, err := p.Acquire(context.Background(), browsers.LeaseRequest{Team: "a"}); !errors.Is(err, browsers.ErrPoolClosed) {
		t.Fatalf("Acquire after Close: %v", err)
	}
	if entries, _ := os.ReadDir(rt.Dir); len(entries) != 0 {
		t.Fatalf("%d user-data directories left", len(entries))
	}
}

func TestReapKillsBrowsersOfAnEarlierRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	earlier := newRuntime(t, dir)
	b, err := earlier.Start(context.Background(), "left-behind")
	if err != nil {
		t.Fatal(err)
	}
	// The earlier run dies without closing b; a new run reaps it.
	n, err := newRuntime(t, dir).Reap(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("Reap = %d, %v; want 1", n, err)
	}
	select {
	case <-b.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the reaped browser still runs")
	}
	if _, err := os.Stat(filepath.Join(dir, "left-behind")); !os.IsNotExist(err) {
		t.Fatal("the reaped browser's directory is still there")
	}
}

func TestStartFailsClearly(t *testing.T) {
	t.Parallel()
	rt := &browsers.ProcessRuntime{Chromium: "/bin/false", Dir: t.TempDir(), StartTimeout: 5 * time.Second}
	p := browsers.NewPool(rt, browsers.PoolOptions{Size: 1, Warm: 0, QueueWait: time.Second})
	defer p.Close()
	_, err := p.Acquire(context.Background(), browsers.LeaseRequest{Team: "a"})
	var se *browsers.StartError
	if !errors.As(err, &se) {
		t.Fatalf("Acquire with a broken browser: %v, want a browsers.StartError", err)
	}
	if s := p.Stats(); s.Total != 0 {
		t.Fatalf("a failed start still counts: %+v", s)
	}
}

func TestFullPoolEvictsUsedBrowsersForSessions(t *testing.T) {
	t.Parallel()
	p, _ := newPool(t, browsers.PoolOptions{Size: 1, Warm: 0, QueueWait: 10 * time.Second})
	ctx := context.Background()
	job, err := p.Acquire(ctx, browsers.LeaseRequest{Team: "a", Reusable: true})
	if err != nil {
		t.Fatal(err)
	}
	used := job.Browser()
	job.Release(true)
	// The pool is full of a used browser: a session gets a new one.
	s, err := p.Acquire(ctx, browsers.LeaseRequest{Team: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Browser() == used || alive(used) {
		t.Fatal("the used browser was not replaced for the session")
	}
	s.Release(false)
}
