package sessions

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/browsers/browserstest"
	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/store"
)

// fakeProfile records what the manager does with a session's profile.
type fakeProfile struct {
	applyErr      error
	applied       atomic.Int32
	closed, saved atomic.Int32
}

func (p *fakeProfile) Apply(ctx context.Context, browser *cdp.Mux, browserContextID string) error {
	p.applied.Add(1)
	return p.applyErr
}

func (p *fakeProfile) Close(ctx context.Context, save bool) error {
	p.closed.Add(1)
	if save {
		p.saved.Add(1)
	}
	return nil
}

func newManager(t *testing.T, o browsers.PoolOptions) (*Manager, *browsers.Pool) {
	t.Helper()
	pool, _ := browserstest.NewPool(t, o)
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "trawler.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	m, err := NewManager(context.Background(), pool, st, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m, pool
}

// A session's profile is saved when the session ends with its browser
// running, and released (never saved, never leaked with its lock) on every
// way Create can fail.
func TestSessionProfileSavedOrReleased(t *testing.T) {
	m, _ := newManager(t, browsers.PoolOptions{Size: 1, QueueWait: 100 * time.Millisecond})
	opts := func(p Profile) CreateOptions {
		return CreateOptions{Team: "t", TeamLimit: 1, TTL: time.Minute, ActivityTTL: time.Minute, Profile: p}
	}

	ok := &fakeProfile{}
	s, err := m.Create(context.Background(), opts(ok))
	if err != nil {
		t.Fatal(err)
	}
	// The pool is full: the next Create fails and must release its profile.
	busy := &fakeProfile{}
	if _, err := m.Create(context.Background(), opts(busy)); err == nil {
		t.Fatal("a second session on a pool of one was created")
	}
	if busy.closed.Load() != 1 || busy.saved.Load() != 0 {
		t.Fatalf("profile of a refused session: closed %d, saved %d", busy.closed.Load(), busy.saved.Load())
	}
	s.End(ReasonDeleted)
	if ok.applied.Load() != 1 || ok.closed.Load() != 1 || ok.saved.Load() != 1 {
		t.Fatalf("profile of an ended session: applied %d, closed %d, saved %d", ok.applied.Load(), ok.closed.Load(), ok.saved.Load())
	}

	bad := &fakeProfile{applyErr: errors.New("restore failed")}
	if _, err := m.Create(context.Background(), opts(bad)); err == nil || bad.closed.Load() != 1 || bad.saved.Load() != 0 {
		t.Fatalf("a profile that fails to restore: err %v, closed %d, saved %d", err, bad.closed.Load(), bad.saved.Load())
	}

	m.Close()
	late := &fakeProfile{}
	if _, err := m.Create(context.Background(), opts(late)); !errors.Is(err, ErrClosed) || late.closed.Load() != 1 {
		t.Fatalf("Create after Close: err %v, profile closed %d times", err, late.closed.Load())
	}
}
