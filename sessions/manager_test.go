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

	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/browsers/browserstest"
	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/profiles"
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

func (p *fakeProfile) Close(ctx context.Context, changes profiles.Changes) error {
	p.closed.Add(1)
	if changes == profiles.Save {
		p.saved.Add(1)
	}
	return nil
}

func newManager(t *testing.T, o browsers.PoolOptions) (*Manager, *browsers.Pool) {
	t.Helper()
	pool, _ := browserstest.NewPool(t, o)
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "trawler.db"))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	m, err := NewManager(context.Background(), pool, st, log)
	require.NoError(t, err)
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
	require.NoError(t, err)
	// The pool is full: the next Create fails and must release its profile.
	busy := &fakeProfile{}
	_, err = m.Create(context.Background(), opts(busy))
	require.Error(t, err, "a second session on a pool of one was created")
	require.Equal(t, int32(1), busy.closed.Load(), "times the profile of a refused session was closed")
	require.Zero(t, busy.saved.Load(), "times the profile of a refused session was saved")
	s.End(Deleted)
	require.Equal(t, int32(1), ok.applied.Load(), "times the profile of an ended session was applied")
	require.Equal(t, int32(1), ok.closed.Load(), "times the profile of an ended session was closed")
	require.Equal(t, int32(1), ok.saved.Load(), "times the profile of an ended session was saved")

	bad := &fakeProfile{applyErr: errors.New("restore failed")}
	_, err = m.Create(context.Background(), opts(bad))
	require.Error(t, err, "a profile that fails to restore")
	require.Equal(t, int32(1), bad.closed.Load(), "times a profile that fails to restore was closed")
	require.Zero(t, bad.saved.Load(), "times a profile that fails to restore was saved")

	m.Close()
	late := &fakeProfile{}
	_, err = m.Create(context.Background(), opts(late))
	require.ErrorIs(t, err, ErrClosed, "Create after Close")
	require.Equal(t, int32(1), late.closed.Load(), "times the profile was closed after Close")
}
