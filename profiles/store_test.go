package profiles

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// backends are the stores every behaviour runs against; each call gives a store no other test shares.
var backends = []struct {
	name string
	open func(t *testing.T) Store
}{
	{"fs", func(t *testing.T) Store { return NewFS(t.TempDir()) }},
	{"s3", func(t *testing.T) Store {
		return newTestS3(t, uniquePrefix(t))
	}},
}

const (
	team  = "team-a"
	other = "team-b"
	ttl   = time.Minute
	// short is the ttl of locks a test lets expire.
	short = 300 * time.Millisecond
)

// behaviours are what a caller of any Store relies on.
var behaviours = []struct {
	name string
	run  func(t *testing.T, ctx context.Context, s Store)
}{
	{"round trip", func(t *testing.T, ctx context.Context, s Store) {
		l := mustLock(t, ctx, s, team, "shop", "w1", ttl)
		for _, v := range []string{"first version", "second version"} {
			require.NoError(t, s.Save(ctx, team, "shop", l, []byte(v)))
			require.Equal(t, v, mustLoad(t, ctx, s, team, "shop"), "Load")
		}
	}},
	{"load never saved", func(t *testing.T, ctx context.Context, s Store) {
		_, err := s.Load(ctx, team, "nothing")
		require.ErrorIs(t, err, ErrNotFound, "Load")
		// Holding a lock does not make a profile exist.
		mustLock(t, ctx, s, team, "nothing", "w1", ttl)
		_, err = s.Load(ctx, team, "nothing")
		require.ErrorIs(t, err, ErrNotFound, "Load while locked")
	}},
	{"save without a lock", func(t *testing.T, ctx context.Context, s Store) {
		require.ErrorIs(t, s.Save(ctx, team, "shop", nil, []byte("x")), ErrLocked, "Save(nil lock)")
		_, err := s.Load(ctx, team, "shop")
		require.ErrorIs(t, err, ErrNotFound, "Load after refused save")
	}},
	{"save with another profile's lock", func(t *testing.T, ctx context.Context, s Store) {
		mine := mustLock(t, ctx, s, team, "mine", "w1", ttl)
		mustLock(t, ctx, s, team, "theirs", "w2", ttl)
		require.ErrorIs(t, s.Save(ctx, team, "theirs", mine, []byte("x")), ErrLocked, "Save with another profile's lock")
	}},
	{"save with a taken-over lock", func(t *testing.T, ctx context.Context, s Store) {
		old := mustLock(t, ctx, s, team, "shop", "w1", short)
		time.Sleep(short + 100*time.Millisecond) // the lock expires
		cur := mustLock(t, ctx, s, team, "shop", "w2", ttl)
		require.NoError(t, s.Save(ctx, team, "shop", cur, []byte("new owner")))
		require.ErrorIs(t, s.Save(ctx, team, "shop", old, []byte("stale")), ErrLocked, "Save with taken-over lock")
		require.Equal(t, "new owner", mustLoad(t, ctx, s, team, "shop"), "Load: want the new owner's save")
	}},
	{"concurrent lock has one winner", func(t *testing.T, ctx context.Context, s Store) {
		var wins, locked atomic.Int32
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				_, err := s.Lock(ctx, team, "shop", fmt.Sprintf("w%d", i), ttl)
				switch {
				case err == nil:
					wins.Add(1)
				case errors.Is(err, ErrLocked):
					locked.Add(1)
				default:
					t.Errorf("Lock: %v", err)
				}
			})
		}
		wg.Wait()
		require.Equal(t, int32(1), wins.Load(), "wins")
		require.Equal(t, int32(19), locked.Load(), "ErrLocked")
	}},
	{"concurrent takeover of an expired lock has one winner", func(t *testing.T, ctx context.Context, s Store) {
		mustLock(t, ctx, s, team, "shop", "dead", short)
		time.Sleep(short + 100*time.Millisecond) // the lock expires
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				_, err := s.Lock(ctx, team, "shop", fmt.Sprintf("w%d", i), ttl)
				if err == nil {
					wins.Add(1)
				} else if !errors.Is(err, ErrLocked) {
					t.Errorf("Lock: %v", err)
				}
			})
		}
		wg.Wait()
		require.Equal(t, int32(1), wins.Load(), "wins")
	}},
	{"live lock refuses a second writer", func(t *testing.T, ctx context.Context, s Store) {
		mustLock(t, ctx, s, team, "shop", "w1", ttl)
		_, err := s.Lock(ctx, team, "shop", "w2", ttl)
		require.ErrorIs(t, err, ErrLocked, "second Lock")
	}},
	{"expired lock is taken over and its renew fails", func(t *testing.T, ctx context.Context, s Store) {
		old := mustLock(t, ctx, s, team, "shop", "w1", short)
		time.Sleep(short + 100*time.Millisecond) // the lock expires
		cur := mustLock(t, ctx, s, team, "shop", "w2", ttl)
		require.Equal(t, "w2", cur.Owner, "takeover lock owner")
		require.True(t, cur.Expires.After(time.Now()), "takeover lock = %+v", cur)
		require.ErrorIs(t, s.Renew(ctx, old, ttl), ErrLocked, "Renew after takeover")
		require.ErrorIs(t, s.Unlock(ctx, old), ErrLocked, "Unlock after takeover")
		// The stale holder's failed calls must not have disturbed the new holder.
		_, err := s.Lock(ctx, team, "shop", "w3", ttl)
		require.ErrorIs(t, err, ErrLocked, "Lock after stale unlock")
	}},
	{"renew keeps a lock alive", func(t *testing.T, ctx context.Context, s Store) {
		// Long enough that a renewal slowed by a busy machine still comes
		// before the expiry.
		const life = 2 * time.Second
		l := mustLock(t, ctx, s, team, "shop", "w1", life)
		for range 3 {
			time.Sleep(life / 2) // half the lock's life passes between renewals
			require.NoError(t, s.Renew(ctx, l, life))
		}
		_, err := s.Lock(ctx, team, "shop", "w2", ttl)
		require.ErrorIs(t, err, ErrLocked, "Lock after renewals")
		require.NoError(t, s.Save(ctx, team, "shop", l, []byte("still mine")))
	}},
	{"unlock frees the profile", func(t *testing.T, ctx context.Context, s Store) {
		l := mustLock(t, ctx, s, team, "shop", "w1", ttl)
		require.NoError(t, s.Save(ctx, team, "shop", l, []byte("v1")))
		require.NoError(t, s.Unlock(ctx, l))
		require.ErrorIs(t, s.Save(ctx, team, "shop", l, []byte("after unlock")), ErrLocked, "Save after Unlock")
		l2 := mustLock(t, ctx, s, team, "shop", "w2", ttl)
		require.NoError(t, s.Save(ctx, team, "shop", l2, []byte("v2")))
		require.Equal(t, "v2", mustLoad(t, ctx, s, team, "shop"), "Load")
	}},
	{"delete", func(t *testing.T, ctx context.Context, s Store) {
		require.ErrorIs(t, s.Delete(ctx, team, "shop"), ErrNotFound, "Delete of absent profile")
		l := mustLock(t, ctx, s, team, "shop", "w1", ttl)
		require.NoError(t, s.Save(ctx, team, "shop", l, []byte("v1")))
		require.ErrorIs(t, s.Delete(ctx, team, "shop"), ErrLocked, "Delete while locked")
		require.Equal(t, "v1", mustLoad(t, ctx, s, team, "shop"), "Load after refused delete")
		require.NoError(t, s.Unlock(ctx, l))
		require.NoError(t, s.Delete(ctx, team, "shop"))
		_, err := s.Load(ctx, team, "shop")
		require.ErrorIs(t, err, ErrNotFound, "Load after Delete")
		require.ErrorIs(t, s.Delete(ctx, team, "shop"), ErrNotFound, "second Delete")
		// The name is free to use again.
		l = mustLock(t, ctx, s, team, "shop", "w2", ttl)
		require.NoError(t, s.Save(ctx, team, "shop", l, []byte("reborn")))
	}},
	{"list", func(t *testing.T, ctx context.Context, s Store) {
		infos, err := s.List(ctx, team)
		require.NoError(t, err, "List of empty team")
		require.Empty(t, infos, "List of empty team")
		before := time.Now().Add(-2 * time.Second) // object stores keep whole seconds
		held := mustLock(t, ctx, s, team, "b-held", "w1", ttl)
		require.NoError(t, s.Save(ctx, team, "b-held", held, []byte("12345")))
		free := mustLock(t, ctx, s, team, "a-free", "w1", ttl)
		require.NoError(t, s.Save(ctx, team, "a-free", free, []byte("123")))
		require.NoError(t, s.Unlock(ctx, free))
		mustLock(t, ctx, s, team, "c-never-saved", "w1", ttl)
		infos, err = s.List(ctx, team)
		require.NoError(t, err)
		want := []Info{{Name: "a-free", Size: 3}, {Name: "b-held", Size: 5, Locked: true}}
		require.Len(t, infos, len(want), "List")
		for i, w := range want {
			got := infos[i]
			if got.Name != w.Name || got.Size != w.Size || got.Locked != w.Locked || got.SavedAt.Before(before) {
				t.Errorf("List[%d] = %+v, want %+v saved after %v", i, got, w, before)
			}
		}
	}},
	{"names validated", func(t *testing.T, ctx context.Context, s Store) {
		for _, bad := range []string{"", ".hidden", "a/b", "../escape", strings.Repeat("x", 129), "sp ace"} {
			if _, err := s.Lock(ctx, team, bad, "w1", ttl); err == nil || errors.Is(err, ErrLocked) {
				t.Errorf("Lock(%q) = %v, want a validation error", bad, err)
			}
			if _, err := s.Load(ctx, team, bad); err == nil || errors.Is(err, ErrNotFound) {
				t.Errorf("Load(%q) = %v, want a validation error", bad, err)
			}
			if err := s.Delete(ctx, team, bad); err == nil || errors.Is(err, ErrNotFound) {
				t.Errorf("Delete(%q) = %v, want a validation error", bad, err)
			}
		}
		for _, badTeam := range []string{"", "..", "a/b"} {
			_, err := s.List(ctx, badTeam)
			assert.Error(t, err, "List(team %q) succeeded, want a validation error", badTeam)
		}
		mustLock(t, ctx, s, team, strings.Repeat("x", 128), "w1", ttl)
	}},
	{"teams isolated", func(t *testing.T, ctx context.Context, s Store) {
		la := mustLock(t, ctx, s, team, "shop", "w1", ttl)
		lb := mustLock(t, ctx, s, other, "shop", "w2", ttl) // same name, other team: not locked
		require.NoError(t, s.Save(ctx, team, "shop", la, []byte("a")))
		require.ErrorIs(t, s.Save(ctx, other, "shop", la, []byte("cross")), ErrLocked, "Save with another team's lock")
		_, err := s.Load(ctx, other, "shop")
		require.ErrorIs(t, err, ErrNotFound, "Load in other team")
		require.NoError(t, s.Save(ctx, other, "shop", lb, []byte("b")))
		require.Equal(t, "a", mustLoad(t, ctx, s, team, "shop"), "team a Load")
		require.Equal(t, "b", mustLoad(t, ctx, s, other, "shop"), "team b Load")
		for _, tm := range []string{team, other} {
			infos, err := s.List(ctx, tm)
			require.NoError(t, err, "List(%s)", tm)
			require.Len(t, infos, 1, "List(%s): want one profile", tm)
		}
	}},
	{"large blob", func(t *testing.T, ctx context.Context, s Store) {
		data := bytes.Repeat([]byte("0123456789abcdef"), 5<<20/16) // the 5 MB storage of the benchmark
		l := mustLock(t, ctx, s, team, "big", "w1", ttl)
		require.NoError(t, s.Save(ctx, team, "big", l, data))
		got, err := s.Load(ctx, team, "big")
		require.NoError(t, err, "Load")
		require.True(t, bytes.Equal(got, data), "Load = %d bytes; want %d bytes back", len(got), len(data))
	}},
}

func TestStores(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range behaviours {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					s := b.open(t)
					tc.run(t, t.Context(), s)
				})
			}
		})
	}
}

// uniquePrefix gives a test its own key prefix in the shared bucket, also across -count runs.
func uniquePrefix(t *testing.T) string {
	return strings.ReplaceAll(t.Name(), "/", "-") + "-" + rand.Text()[:8]
}

// TestS3TwoProcesses checks that two stores with their own clients, as two Trawler processes would
// have, respect one lock in one bucket.
func TestS3TwoProcesses(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	prefix := uniquePrefix(t)
	a := newTestS3(t, prefix)
	b := newTestS3(t, prefix)

	// Long enough for the checks below to run before it expires on a
	// loaded machine (300 ms was not, under -race in CI).
	const aTTL = 3 * time.Second
	locked := time.Now()
	la := mustLock(t, ctx, a, team, "shop", "process-a", aTTL)
	_, err := b.Lock(ctx, team, "shop", "process-b", ttl)
	require.ErrorIs(t, err, ErrLocked, "process b Lock")
	require.ErrorIs(t, b.Delete(ctx, team, "shop"), ErrLocked, "process b Delete")
	require.NoError(t, a.Save(ctx, team, "shop", la, []byte("from a")))
	require.Equal(t, "from a", mustLoad(t, ctx, b, team, "shop"), "process b Load")
	infos, err := b.List(ctx, team)
	require.NoError(t, err, "process b List")
	require.Len(t, infos, 1, "process b List")
	require.True(t, infos[0].Locked, "process b List = %+v; want shop locked", infos)

	// Process a stops renewing (as if killed); b takes over once the lock expires.
	time.Sleep(time.Until(locked.Add(aTTL + 100*time.Millisecond))) // a's lock expires
	lb := mustLock(t, ctx, b, team, "shop", "process-b", ttl)
	require.ErrorIs(t, a.Renew(ctx, la, ttl), ErrLocked, "process a Renew after takeover")
	require.ErrorIs(t, a.Save(ctx, team, "shop", la, []byte("stale")), ErrLocked, "process a Save after takeover")
	require.NoError(t, b.Save(ctx, team, "shop", lb, []byte("from b")))
	require.Equal(t, "from b", mustLoad(t, ctx, a, team, "shop"), "process a Load")
}

// TestFSInterruptedSave checks that the leftovers of a save that crashed before its rename neither
// replace nor hide the last good version.
func TestFSInterruptedSave(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	s := NewFS(dir)
	l := mustLock(t, ctx, s, team, "shop", "w1", ttl)
	require.NoError(t, s.Save(ctx, team, "shop", l, []byte("good")))
	partial := filepath.Join(dir, team, "shop", ".tmp-data-crashed")
	require.NoError(t, os.WriteFile(partial, []byte("half a tar"), 0o600))
	require.Equal(t, "good", mustLoad(t, ctx, s, team, "shop"), "Load: want the last good version")
	require.NoError(t, s.Save(ctx, team, "shop", l, []byte("better")))
	require.Equal(t, "better", mustLoad(t, ctx, s, team, "shop"), "Load after a later save")
}

// TestS3InterruptedSave checks that an upload cut off half way (the process saving died, or its
// connection did) leaves the last good version readable: an object appears only when complete.
func TestS3InterruptedSave(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newTestS3(t, uniquePrefix(t))
	l := mustLock(t, ctx, s, team, "shop", "w1", ttl)
	require.NoError(t, s.Save(ctx, team, "shop", l, []byte("good")))
	big := make([]byte, 256<<20)
	cut, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	require.Error(t, s.Save(cut, team, "shop", l, big), "a 256 MB save finished within 100 ms; the test cannot cut it off")
	got := mustLoad(t, ctx, s, team, "shop")
	require.True(t, got == "good", "Load after an interrupted save = %d bytes, want the last good version", len(got))
}

// TestFSTwoProcesses checks that two FS stores over one directory (each call takes its own flock, as
// a second process would) respect one lock.
func TestFSTwoProcesses(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	a, b := NewFS(dir), NewFS(dir)
	la := mustLock(t, ctx, a, team, "shop", "process-a", ttl)
	_, err := b.Lock(ctx, team, "shop", "process-b", ttl)
	require.ErrorIs(t, err, ErrLocked, "process b Lock")
	require.NoError(t, a.Save(ctx, team, "shop", la, []byte("from a")))
	require.Equal(t, "from a", mustLoad(t, ctx, b, team, "shop"), "process b Load")
}

func TestValidName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		wantErr string // substring; "" means valid
	}{
		{"shop-login", ""},
		{"a", ""},
		{"Profile_2.v1", ""},
		{strings.Repeat("x", 128), ""},
		{"", "empty"},
		{strings.Repeat("x", 129), "at most 128"},
		{".hidden", "start with '.'"},
		{"a/b", "only letters"},
		{"día", "only letters"},
		{"a b", "only letters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := ValidName(tc.name)
			if tc.wantErr == "" {
				require.NoError(t, err, "ValidName(%q)", tc.name)
				return
			}
			require.ErrorContains(t, err, tc.wantErr, "ValidName(%q)", tc.name)
		})
	}
}

func TestParseS3URL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw            string
		bucket, prefix string
		wantErr        bool
	}{
		{raw: "s3://profiles", bucket: "profiles"},
		{raw: "s3://profiles/", bucket: "profiles"},
		{raw: "s3://profiles/trawler/prod/", bucket: "profiles", prefix: "trawler/prod"},
		{raw: "http://profiles/x", wantErr: true},
		{raw: "s3:///x", wantErr: true},
		{raw: "s3://Bad_Bucket/x", wantErr: true},
		{raw: "profiles/x", wantErr: true},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			t.Parallel()
			bucket, prefix, err := ParseS3URL(tc.raw)
			if tc.wantErr {
				require.Error(t, err, "ParseS3URL(%q) = %q, %q; want an error", tc.raw, bucket, prefix)
				return
			}
			require.NoError(t, err, "ParseS3URL(%q)", tc.raw)
			require.Equal(t, tc.bucket, bucket, "ParseS3URL(%q): bucket", tc.raw)
			require.Equal(t, tc.prefix, prefix, "ParseS3URL(%q): prefix", tc.raw)
		})
	}
}

func mustLock(t *testing.T, ctx context.Context, s Store, team, name, owner string, ttl time.Duration) *Lock {
	t.Helper()
	l, err := s.Lock(ctx, team, name, owner, ttl)
	require.NoError(t, err, "Lock(%s/%s) for %s", team, name, owner)
	return l
}

func mustLoad(t *testing.T, ctx context.Context, s Store, team, name string) string {
	t.Helper()
	b, err := s.Load(ctx, team, name)
	require.NoError(t, err, "Load(%s/%s)", team, name)
	return string(b)
}
