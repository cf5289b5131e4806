package browsers_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/browsers/browserstest"
	"github.com/trawler-dev/trawler/test/polltest"
)

func newPool(t *testing.T, o browsers.PoolOptions) (*browsers.Pool, *browsers.ProcessRuntime) {
	return browserstest.NewPool(t, o)
}

func newRuntime(t *testing.T, dir string) *browsers.ProcessRuntime {
	return browserstest.Runtime(t, dir)
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
	polltest.UntilState(t, 20*time.Second, what, func() bool { return cond(p.Stats()) },
		func() string { return fmt.Sprintf("stats %+v", p.Stats()) })
}

func TestLeaseReuseAndDestroy(t *testing.T) {
	t.Parallel()
	p, rt := newPool(t, browsers.PoolOptions{Size: 2, Warm: 1, QueueWait: time.Second, MaxUses: 2})
	waitStats(t, p, "a warm browser", func(s browsers.Stats) bool { return s.Idle == 1 })
	ctx := context.Background()

	l1, err := p.Acquire(ctx, browsers.LeaseRequest{Team: "a", Reusable: true})
	require.NoError(t, err)
	b1 := l1.Browser()
	l1.Release(browsers.Reuse) // a short job: the browser goes back warm
	require.ErrorIs(t, l1.Cause(), browsers.ErrReleased, "cause after release")
	// An interactive session never gets a browser a job used.
	waitStats(t, p, "the warm browser to be replaced", func(s browsers.Stats) bool { return s.Idle == 2 })
	s1, err := p.Acquire(ctx, browsers.LeaseRequest{Team: "a"})
	require.NoError(t, err)
	require.True(t, s1.Browser() != b1, "an interactive lease got a browser a job had used")
	s1.Release(browsers.Destroy)
	l2, err := p.Acquire(ctx, browsers.LeaseRequest{Team: "a", Reusable: true})
	require.NoError(t, err)
	require.True(t, l2.Browser() == b1, "a released reusable browser was not reused")
	l2.Release(browsers.Reuse) // second use reaches MaxUses: recycled
	waitStats(t, p, "the recycled browser to exit", func(browsers.Stats) bool { return !alive(b1) })

	l3, err := p.Acquire(ctx, browsers.LeaseRequest{Team: "a", Reusable: true})
	require.NoError(t, err)
	b3 := l3.Browser()
	l3.Release(browsers.Destroy) // an interactive session: never reused
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
	require.NoError(t, err)
	d := time.Until(l.Deadline())
	require.True(t, d > 0 && d <= 500*time.Millisecond, "deadline in %s", d)
	select {
	case <-l.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("lease outlived its deadline")
	}
	require.ErrorIs(t, l.Cause(), browsers.ErrLeaseExpired, "cause")
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
	require.NoError(t, err)
	_, err = p.Acquire(ctx, browsers.LeaseRequest{Team: "a", TeamLimit: 1})
	var busy *browsers.BusyError
	require.ErrorAs(t, err, &busy, "over the team limit")
	require.Positive(t, busy.RetryAfter, "over the team limit: RetryAfter")
	// A caller that gives up stops waiting at once.
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = p.Acquire(cctx, browsers.LeaseRequest{Team: "a", TeamLimit: 1})
	require.ErrorIs(t, err, context.DeadlineExceeded, "cancelled wait")
	require.Zero(t, p.Stats().Waiters, "waiters left")
	require.Zero(t, l.TeamWait(), "a lease the team's limit never held back")
	require.Equal(t, 1, p.TeamLeases("a"), "team a's leases")
	require.Zero(t, p.TeamLeases("b"), "team b's leases")
	// A request held back by the limit is given the browser released
	// meanwhile, and knows how long the limit held it.
	go func() {
		time.Sleep(100 * time.Millisecond) // a wait long enough to measure
		l.Release(browsers.Destroy)
	}()
	l2, err := p.Acquire(ctx, browsers.LeaseRequest{Team: "a", TeamLimit: 1})
	require.NoError(t, err, "after release")
	require.GreaterOrEqual(t, l2.TeamWait(), 90*time.Millisecond, "the wait the team's limit caused")
	l2.Release(browsers.Destroy)
}

func TestCrashEndsLeaseAndRefills(t *testing.T) {
	t.Parallel()
	p, rt := newPool(t, browsers.PoolOptions{Size: 2, Warm: 1, QueueWait: time.Second})
	waitStats(t, p, "a warm browser", func(s browsers.Stats) bool { return s.Idle == 1 })
	l, err := p.Acquire(context.Background(), browsers.LeaseRequest{Team: "a"})
	require.NoError(t, err)
	pid := browserstest.PID(t, rt, l.Browser())
	syscall.Kill(pid, syscall.SIGKILL)
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the lease did not end when its browser died")
	}
	require.ErrorIs(t, l.Cause(), browsers.ErrBrowserExited, "cause")
	waitStats(t, p, "a warm browser again", func(s browsers.Stats) bool { return s.Idle == 1 && s.Leased == 0 && s.Total == 1 })
}

func TestCloseStopsEverything(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, t.TempDir())
	p := browsers.NewPool(rt, browsers.PoolOptions{Size: 3, Warm: 2, QueueWait: time.Second})
	waitStats(t, p, "warm browsers", func(s browsers.Stats) bool { return s.Idle == 2 })
	l, err := p.Acquire(context.Background(), browsers.LeaseRequest{Team: "a"})
	require.NoError(t, err)
	p.Close()
	require.ErrorIs(t, l.Cause(), browsers.ErrPoolClosed, "lease cause after Close")
	require.False(t, alive(l.Browser()), "a leased browser outlived Close")
	s := p.Stats()
	require.Zero(t, s.Total, "stats after Close: %+v", s)
	_, err = p.Acquire(context.Background(), browsers.LeaseRequest{Team: "a"})
	require.ErrorIs(t, err, browsers.ErrPoolClosed, "Acquire after Close")
	entries, _ := os.ReadDir(rt.Dir)
	require.Empty(t, entries, "user-data directories left")
}

func TestReapKillsBrowsersOfAnEarlierRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	earlier := newRuntime(t, dir)
	b, err := earlier.Start(context.Background(), "left-behind")
	require.NoError(t, err)
	// The earlier run dies without closing b; a new run reaps it.
	n, err := newRuntime(t, dir).Reap(context.Background())
	require.NoError(t, err, "Reap")
	require.Equal(t, 1, n, "browsers Reap killed")
	select {
	case <-b.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the reaped browser still runs")
	}
	require.NoDirExists(t, filepath.Join(dir, "left-behind"), "the reaped browser's directory is still there")
}

func TestStartFailsClearly(t *testing.T) {
	t.Parallel()
	rt := &browsers.ProcessRuntime{Chromium: "/bin/false", Dir: t.TempDir(), StartTimeout: 5 * time.Second}
	p := browsers.NewPool(rt, browsers.PoolOptions{Size: 1, Warm: 0, QueueWait: time.Second})
	defer p.Close()
	_, err := p.Acquire(context.Background(), browsers.LeaseRequest{Team: "a"})
	var se *browsers.StartError
	require.ErrorAs(t, err, &se, "Acquire with a broken browser")
	s := p.Stats()
	require.Zero(t, s.Total, "a failed start still counts: %+v", s)
}

func TestFullPoolEvictsUsedBrowsersForSessions(t *testing.T) {
	t.Parallel()
	p, _ := newPool(t, browsers.PoolOptions{Size: 1, Warm: 0, QueueWait: 10 * time.Second})
	ctx := context.Background()
	job, err := p.Acquire(ctx, browsers.LeaseRequest{Team: "a", Reusable: true})
	require.NoError(t, err)
	used := job.Browser()
	job.Release(browsers.Reuse)
	// The pool is full of a used browser: a session gets a new one.
	s, err := p.Acquire(ctx, browsers.LeaseRequest{Team: "a"})
	require.NoError(t, err)
	require.True(t, s.Browser() != used && !alive(used), "the used browser was not replaced for the session")
	s.Release(browsers.Destroy)
}

// A reservation holds a place of the pool without a browser: the pool's
// other requests see it as full, an idle browser is closed to make room
// for one, and Lease turns it into a lease of a browser.
func TestReservationsHoldPlacesWithoutBrowsers(t *testing.T) {
	t.Parallel()
	p, _ := newPool(t, browsers.PoolOptions{Size: 2, Warm: 1, QueueWait: 500 * time.Millisecond})
	waitStats(t, p, "a warm browser", func(s browsers.Stats) bool { return s.Idle == 1 })
	ctx := context.Background()

	r1, err := p.Reserve(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, p.Stats().Total, "a reservation started a browser")
	// The pool is full (the warm browser and the reservation): a second
	// reservation closes the idle browser to make room.
	warm := p.Stats()
	r2, err := p.Reserve(ctx)
	require.NoError(t, err)
	waitStats(t, p, "the idle browser to go", func(s browsers.Stats) bool { return s.Total == 0 && s.Reserved == 2 })
	_, err = p.Acquire(ctx, browsers.LeaseRequest{Team: "a"})
	var busy *browsers.BusyError
	require.ErrorAs(t, err, &busy, "a lease while reservations fill the pool (stats before: %+v)", warm)
	_, err = p.Reserve(ctx)
	require.ErrorAs(t, err, &busy, "a third reservation of a pool of two")

	before := p.Stats()
	l, err := r1.Lease(ctx, browsers.LeaseRequest{Team: "a", Reusable: true})
	require.NoError(t, err, "stats before %+v, after %+v", before, p.Stats())
	require.True(t, alive(l.Browser()))
	s := p.Stats()
	require.Equal(t, 1, s.Reserved, "stats %+v", s)
	require.Equal(t, 1, s.Leased, "stats %+v", s)
	r2.Release()
	r2.Release() // twice is once
	l.Release(browsers.Destroy)
	waitStats(t, p, "the pool to refill", func(s browsers.Stats) bool { return s.Reserved == 0 && s.Leased == 0 && s.Idle == 1 })
}

// Shareable leases share a browser when the pool is full, up to MaxShare;
// one released with Destroy retires the browser, which goes when the last
// lease on it ends, and takes no new lease meanwhile.
func TestShareableLeases(t *testing.T) {
	t.Parallel()
	p, _ := newPool(t, browsers.PoolOptions{Size: 1, Warm: 1, QueueWait: 300 * time.Millisecond, MaxShare: 2})
	waitStats(t, p, "a warm browser", func(s browsers.Stats) bool { return s.Idle == 1 })
	ctx := context.Background()
	share := browsers.LeaseRequest{Team: "a", Reusable: true, Shareable: true}

	l1, err := p.Acquire(ctx, share)
	require.NoError(t, err)
	l2, err := p.Acquire(ctx, share)
	require.NoError(t, err)
	require.True(t, l1.Browser() == l2.Browser(), "the second shareable lease did not share the full pool's browser")
	_, err = p.Acquire(ctx, share)
	require.ErrorAs(t, err, new(*browsers.BusyError), "a third lease on a browser of MaxShare 2")
	// Neither a session nor a job that is not shareable joins it.
	_, err = p.Acquire(ctx, browsers.LeaseRequest{Team: "a", Reusable: true})
	require.ErrorAs(t, err, new(*browsers.BusyError), "a reusable lease that is not shareable")

	b := l1.Browser()
	l1.Release(browsers.Destroy) // it failed: the browser retires
	require.True(t, alive(b), "a retiring browser was destroyed under another lease")
	_, err = p.Acquire(ctx, share)
	require.ErrorAs(t, err, new(*browsers.BusyError), "a lease joined a retiring browser")
	l2.Release(browsers.Reuse)
	polltest.Until(t, 20*time.Second, "the retired browser to go", func() bool { return !alive(b) })
	l3, err := p.Acquire(ctx, browsers.LeaseRequest{Team: "a", Reusable: true, Shareable: true})
	if err != nil {
		// The pool refills after the browser has gone.
		waitStats(t, p, "a new warm browser", func(s browsers.Stats) bool { return s.Idle == 1 })
		l3, err = p.Acquire(ctx, share)
	}
	require.NoError(t, err)
	require.True(t, l3.Browser() != b, "a lease got the destroyed browser")
	l3.Release(browsers.Reuse)
}

// A shareable lease joins a browser other shareable leases are working in
// before the pool starts another for it, though the pool has room; when
// that browser is full it waits ShareWait for a place there before it takes
// the warm browser. A reusable lease that is not shareable never joins one.
func TestShareableLeasesJoinBeforeStarting(t *testing.T) {
	t.Parallel()
	const shareWait = 400 * time.Millisecond
	p, _ := newPool(t, browsers.PoolOptions{Size: 3, Warm: 1, QueueWait: 5 * time.Second, MaxShare: 2, ShareWait: shareWait})
	waitStats(t, p, "a warm browser", func(s browsers.Stats) bool { return s.Idle == 1 })
	ctx := context.Background()
	share := browsers.LeaseRequest{Team: "a", Reusable: true, Shareable: true}

	l1, err := p.Acquire(ctx, share)
	require.NoError(t, err)
	// The pool starts a warm browser in the taken one's stead, for sessions.
	waitStats(t, p, "the warm browser replaced", func(s browsers.Stats) bool { return s.Idle == 1 && s.Total == 2 })
	l2, err := p.Acquire(ctx, share)
	require.NoError(t, err)
	require.True(t, l2.Browser() == l1.Browser(), "the second shareable lease took another browser rather than joining the first")
	require.EqualValues(t, 1, p.Stats().Joined)
	// The browser is full (MaxShare 2): the third waits for a place there,
	// and gets the one given back meanwhile.
	go func() {
		time.Sleep(shareWait / 4) // given back while the third waits, well within ShareWait
		l2.Release(browsers.Reuse)
	}()
	l2b, err := p.Acquire(ctx, share)
	require.NoError(t, err)
	require.True(t, l2b.Browser() == l1.Browser(), "a lease that found the shared browser full did not wait for its place there")
	require.Equal(t, 1, p.Stats().Idle, "the warm browser was taken")
	// With no place given back, the next takes the warm browser after
	// ShareWait.
	start := time.Now()
	l3, err := p.Acquire(ctx, share)
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(start), shareWait, "a lease took the warm browser without waiting for a place in the full one")
	require.True(t, l3.Browser() != l1.Browser(), "a third lease joined a browser of MaxShare 2")
	// A job lease that is not shareable gets a browser of its own.
	l4, err := p.Acquire(ctx, browsers.LeaseRequest{Team: "a", Reusable: true})
	require.NoError(t, err)
	require.True(t, l4.Browser() != l1.Browser() && l4.Browser() != l3.Browser(), "a lease that is not shareable joined a shared browser")
	for _, l := range []*browsers.Lease{l1, l2b, l3, l4} {
		l.Release(browsers.Reuse)
	}
	require.EqualValues(t, 2, p.Stats().Joined)
}

// The wait for a place in a full shared browser is half the queue wait at
// most: with a short queue wait, a render still gets the warm browser
// rather than a refusal.
func TestShareWaitFitsTheQueueWait(t *testing.T) {
	t.Parallel()
	p, _ := newPool(t, browsers.PoolOptions{Size: 2, Warm: 1, QueueWait: 400 * time.Millisecond, MaxShare: 1})
	waitStats(t, p, "a warm browser", func(s browsers.Stats) bool { return s.Idle == 1 })
	share := browsers.LeaseRequest{Team: "a", Reusable: true, Shareable: true}
	l1, err := p.Acquire(context.Background(), share)
	require.NoError(t, err)
	waitStats(t, p, "the warm browser replaced", func(s browsers.Stats) bool { return s.Idle == 1 && s.Total == 2 })
	l2, err := p.Acquire(context.Background(), share)
	require.NoError(t, err, "a render found the shared browser full and was refused though a warm browser was idle")
	require.True(t, l2.Browser() != l1.Browser())
	l1.Release(browsers.Reuse)
	l2.Release(browsers.Reuse)
}

// A team's places without a browser (AcquireSlot) are counted apart from
// its browsers: a team whose renders hold all its browsers still takes
// pages that need none, up to the same limit.
func TestSlotsAreCountedApartFromBrowsers(t *testing.T) {
	t.Parallel()
	p, _ := newPool(t, browsers.PoolOptions{Size: 2, Warm: 0, QueueWait: 200 * time.Millisecond})
	ctx := context.Background()
	l, err := p.Acquire(ctx, browsers.LeaseRequest{Team: "a", TeamLimit: 1})
	require.NoError(t, err)
	defer l.Release(browsers.Destroy)
	release, waited, err := p.AcquireSlot(ctx, "a", 1)
	require.NoError(t, err, "a slot while the team's one browser is leased")
	require.Zero(t, waited)
	_, _, err = p.AcquireSlot(ctx, "a", 1)
	require.ErrorAs(t, err, new(*browsers.BusyError), "a second slot over the team's limit of 1")
	require.Equal(t, 1, p.TeamLeases("a"), "the team's browsers")
	release()
	release2, _, err := p.AcquireSlot(ctx, "a", 1)
	require.NoError(t, err, "a slot once the first is given back")
	release2()
}
