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
			if err := s.Save(ctx, team, "shop", l, []byte(v)); err != nil {
				t.Fatal(err)
			}
			if got := mustLoad(t, ctx, s, team, "shop"); got != v {
				t.Fatalf("Load = %q, want %q", got, v)
			}
		}
	}},
	{"load never saved", func(t *testing.T, ctx context.Context, s Store) {
		if _, err := s.Load(ctx, team, "nothing"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Load = %v, want ErrNotFound", err)
		}
		// Holding a lock does not make a profile exist.
		mustLock(t, ctx, s, team, "nothing", "w1", ttl)
		if _, err := s.Load(ctx, team, "nothing"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Load while locked = %v, want ErrNotFound", err)
		}
	}},
	{"save without a lock", func(t *testing.T, ctx context.Context, s Store) {
		if err := s.Save(ctx, team, "shop", nil, []byte("x")); !errors.Is(err, ErrLocked) {
			t.Fatalf("Save(nil lock) = %v, want ErrLocked", err)
		}
		if _, err := s.Load(ctx, team, "shop"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Load after refused save = %v, want ErrNotFound", err)
		}
	}},
	{"save with another profile's lock", func(t *testing.T, ctx context.Context, s Store) {
		mine := mustLock(t, ctx, s, team, "mine", "w1", ttl)
		mustLock(t, ctx, s, team, "theirs", "w2", ttl)
		if err := s.Save(ctx, team, "theirs", mine, []byte("x")); !errors.Is(err, ErrLocked) {
			t.Fatalf("Save with another profile's lock = %v, want ErrLocked", err)
		}
	}},
	{"save with a taken-over lock", func(t *testing.T, ctx context.Context, s Store) {
		old := mustLock(t, ctx, s, team, "shop", "w1", short)
		time.Sleep(short + 100*time.Millisecond)
		cur := mustLock(t, ctx, s, team, "shop", "w2", ttl)
		if err := s.Save(ctx, team, "shop", cur, []byte("new owner")); err != nil {
			t.Fatal(err)
		}
		if err := s.Save(ctx, team, "shop", old, []byte("stale")); !errors.Is(err, ErrLocked) {
			t.Fatalf("Save with taken-over lock = %v, want ErrLocked", err)
		}
		if got := mustLoad(t, ctx, s, team, "shop"); got != "new owner" {
			t.Fatalf("Load = %q, want the new owner's save", got)
		}
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
		if wins.Load() != 1 || locked.Load() != 19 {
			t.Fatalf("wins = %d, ErrLocked = %d; want 1 and 19", wins.Load(), locked.Load())
		}
	}},
	{"concurrent takeover of an expired lock has one winner", func(t *testing.T, ctx context.Context, s Store) {
		mustLock(t, ctx, s, team, "shop", "dead", short)
		time.Sleep(short + 100*time.Millisecond)
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
		if wins.Load() != 1 {
			t.Fatalf("wins = %d, want 1", wins.Load())
		}
	}},
	{"live lock refuses a second writer", func(t *testing.T, ctx context.Context, s Store) {
		mustLock(t, ctx, s, team, "shop", "w1", ttl)
		if _, err := s.Lock(ctx, team, "shop", "w2", ttl); !errors.Is(err, ErrLocked) {
			t.Fatalf("second Lock = %v, want ErrLocked", err)
		}
	}},
	{"expired lock is taken over and its renew fails", func(t *testing.T, ctx context.Context, s Store) {
		old := mustLock(t, ctx, s, team, "shop", "w1", short)
		time.Sleep(short + 100*time.Millisecond)
		cur := mustLock(t, ctx, s, team, "shop", "w2", ttl)
		if cur.Owner != "w2" || !cur.Expires.After(time.Now()) {
			t.Fatalf("takeover lock = %+v", cur)
		}
		if err := s.Renew(ctx, old, ttl); !errors.Is(err, ErrLocked) {
			t.Fatalf("Renew after takeover = %v, want ErrLocked", err)
		}
		if err := s.Unlock(ctx, old); !errors.Is(err, ErrLocked) {
			t.Fatalf("Unlock after takeover = %v, want ErrLocked", err)
		}
		// The stale holder's failed calls must not have disturbed the new holder.
		if _, err := s.Lock(ctx, team, "shop", "w3", ttl); !errors.Is(err, ErrLocked) {
			t.Fatalf("Lock after stale unlock = %v, want ErrLocked", err)
		}
	}},
	{"renew keeps a lock alive", func(t *testing.T, ctx context.Context, s Store) {
		// Long enough that a renewal slowed by a busy machine still comes
		// before the expiry.
		const life = 2 * time.Second
		l := mustLock(t, ctx, s, team, "shop", "w1", life)
		for range 3 {
			time.Sleep(life / 2)
			if err := s.Renew(ctx, l, life); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Lock(ctx, team, "shop", "w2", ttl); !errors.Is(err, ErrLocked) {
			t.Fatalf("Lock after renewals = %v, want ErrLocked", err)
		}
		if err := s.Save(ctx, team, "shop", l, []byte("still mine")); err != nil {
			t.Fatal(err)
		}
	}},
	{"unlock frees the profile", func(t *testing.T, ctx context.Context, s Store) {
		l := mustLock(t, ctx, s, team, "shop", "w1", ttl)
		if err := s.Save(ctx, team, "shop", l, []byte("v1")); err != nil {
			t.Fatal(err)
		}
		if err := s.Unlock(ctx, l); err != nil {
			t.Fatal(err)
		}
		if err := s.Save(ctx, team, "shop", l, []byte("after unlock")); !errors.Is(err, ErrLocked) {
			t.Fatalf("Save after Unlock = %v, want ErrLocked", err)
		}
		l2 := mustLock(t, ctx, s, team, "shop", "w2", ttl)
		if err := s.Save(ctx, team, "shop", l2, []byte("v2")); err != nil {
			t.Fatal(err)
		}
		if got := mustLoad(t, ctx, s, team, "shop"); got != "v2" {
			t.Fatalf("Load = %q, want v2", got)
		}
	}},
	{"delete", func(t *testing.T, ctx context.Context, s Store) {
		if err := s.Delete(ctx, team, "shop"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Delete of absent profile = %v, want ErrNotFound", err)
		}
		l := mustLock(t, ctx, s, team, "shop", "w1", ttl)
		if err := s.Save(ctx, team, "shop", l, []byte("v1")); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, team, "shop"); !errors.Is(err, ErrLocked) {
			t.Fatalf("Delete while locked = %v, want ErrLocked", err)
		}
		if got := mustLoad(t, ctx, s, team, "shop"); got != "v1" {
			t.Fatalf("Load after refused delete = %q, want v1", got)
		}
		if err := s.Unlock(ctx, l); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, team, "shop"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Load(ctx, team, "shop"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Load after Delete = %v, want ErrNotFound", err)
		}
		if err := s.Delete(ctx, team, "shop"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("second Delete = %v, want ErrNotFound", err)
		}
		// The name is free to use again.
		l = mustLock(t, ctx, s, team, "shop", "w2", ttl)
		if err := s.Save(ctx, team, "shop", l, []byte("reborn")); err != nil {
			t.Fatal(err)
		}
	}},
	{"list", func(t *testing.T, ctx context.Context, s Store) {
		if infos, err := s.List(ctx, team); err != nil || len(infos) != 0 {
			t.Fatalf("List of empty team = %v, %v", infos, err)
		}
		before := time.Now().Add(-2 * time.Second) // object stores keep whole seconds
		held := mustLock(t, ctx, s, team, "b-held", "w1", ttl)
		if err := s.Save(ctx, team, "b-held", held, []byte("12345")); err != nil {
			t.Fatal(err)
		}
		free := mustLock(t, ctx, s, team, "a-free", "w1", ttl)
		if err := s.Save(ctx, team, "a-free", free, []byte("123")); err != nil {
			t.Fatal(err)
		}
		if err := s.Unlock(ctx, free); err != nil {
			t.Fatal(err)
		}
		mustLock(t, ctx, s, team, "c-never-saved", "w1", ttl)
		infos, err := s.List(ctx, team)
		if err != nil {
			t.Fatal(err)
		}
		want := []Info{{Name: "a-free", Size: 3}, {Name: "b-held", Size: 5, Locked: true}}
		if len(infos) != len(want) {
			t.Fatalf("List = %+v, want %d profiles", infos, len(want))
		}
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
			if _, err := s.List(ctx, badTeam); err == nil {
				t.Errorf("List(team %q) succeeded, want a validation error", badTeam)
			}
		}
		mustLock(t, ctx, s, team, strings.Repeat("x", 128), "w1", ttl)
	}},
	{"teams isolated", func(t *testing.T, ctx context.Context, s Store) {
		la := mustLock(t, ctx, s, team, "shop", "w1", ttl)
		lb := mustLock(t, ctx, s, other, "shop", "w2", ttl) // same name, other team: not locked
		if err := s.Save(ctx, team, "shop", la, []byte("a")); err != nil {
			t.Fatal(err)
		}
		if err := s.Save(ctx, other, "shop", la, []byte("cross")); !errors.Is(err, ErrLocked) {
			t.Fatalf("Save with another team's lock = %v, want ErrLocked", err)
		}
		if _, err := s.Load(ctx, other, "shop"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Load in other team = %v, want ErrNotFound", err)
		}
		if err := s.Save(ctx, other, "shop", lb, []byte("b")); err != nil {
			t.Fatal(err)
		}
		if got := mustLoad(t, ctx, s, team, "shop"); got != "a" {
			t.Fatalf("team a Load = %q", got)
		}
		if got := mustLoad(t, ctx, s, other, "shop"); got != "b" {
			t.Fatalf("team b Load = %q", got)
		}
		for _, tm := range []string{team, other} {
			infos, err := s.List(ctx, tm)
			if err != nil || len(infos) != 1 {
				t.Fatalf("List(%s) = %+v, %v; want one profile", tm, infos, err)
			}
		}
	}},
	{"large blob", func(t *testing.T, ctx context.Context, s Store) {
		data := bytes.Repeat([]byte("0123456789abcdef"), 5<<20/16) // the 5 MB storage of the benchmark
		l := mustLock(t, ctx, s, team, "big", "w1", ttl)
		if err := s.Save(ctx, team, "big", l, data); err != nil {
			t.Fatal(err)
		}
		got, err := s.Load(ctx, team, "big")
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("Load = %d bytes, %v; want %d bytes back", len(got), err, len(data))
		}
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
	if _, err := b.Lock(ctx, team, "shop", "process-b", ttl); !errors.Is(err, ErrLocked) {
		t.Fatalf("process b Lock = %v, want ErrLocked", err)
	}
	if err := b.Delete(ctx, team, "shop"); !errors.Is(err, ErrLocked) {
		t.Fatalf("process b Delete = %v, want ErrLocked", err)
	}
	if err := a.Save(ctx, team, "shop", la, []byte("from a")); err != nil {
		t.Fatal(err)
	}
	if got := mustLoad(t, ctx, b, team, "shop"); got != "from a" {
		t.Fatalf("process b Load = %q", got)
	}
	infos, err := b.List(ctx, team)
	if err != nil || len(infos) != 1 || !infos[0].Locked {
		t.Fatalf("process b List = %+v, %v; want shop locked", infos, err)
	}

	// Process a stops renewing (as if killed); b takes over once the lock expires.
	time.Sleep(time.Until(locked.Add(aTTL + 100*time.Millisecond)))
	lb := mustLock(t, ctx, b, team, "shop", "process-b", ttl)
	if err := a.Renew(ctx, la, ttl); !errors.Is(err, ErrLocked) {
		t.Fatalf("process a Renew after takeover = %v, want ErrLocked", err)
	}
	if err := a.Save(ctx, team, "shop", la, []byte("stale")); !errors.Is(err, ErrLocked) {
		t.Fatalf("process a Save after takeover = %v, want ErrLocked", err)
	}
	if err := b.Save(ctx, team, "shop", lb, []byte("from b")); err != nil {
		t.Fatal(err)
	}
	if got := mustLoad(t, ctx, a, team, "shop"); got != "from b" {
		t.Fatalf("process a Load = %q", got)
	}
}

// TestFSInterruptedSave checks that the leftovers of a save that crashed before its rename neither
// replace nor hide the last good version.
func TestFSInterruptedSave(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	s := NewFS(dir)
	l := mustLock(t, ctx, s, team, "shop", "w1", ttl)
	if err := s.Save(ctx, team, "shop", l, []byte("good")); err != nil {
		t.Fatal(err)
	}
	partial := filepath.Join(dir, team, "shop", ".tmp-data-crashed")
	if err := os.WriteFile(partial, []byte("half a tar"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := mustLoad(t, ctx, s, team, "shop"); got != "good" {
		t.Fatalf("Load = %q, want the last good version", got)
	}
	if err := s.Save(ctx, team, "shop", l, []byte("better")); err != nil {
		t.Fatal(err)
	}
	if got := mustLoad(t, ctx, s, team, "shop"); got != "better" {
		t.Fatalf("Load = %q after a later save", got)
	}
}

// TestS3InterruptedSave checks that an upload cut off half way (the process saving died, or its
// connection did) leaves the last good version readable: an object appears only when complete.
func TestS3InterruptedSave(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newTestS3(t, uniquePrefix(t))
	l := mustLock(t, ctx, s, team, "shop", "w1", ttl)
	if err := s.Save(ctx, team, "shop", l, []byte("good")); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 256<<20)
	cut, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := s.Save(cut, team, "shop", l, big); err == nil {
		t.Fatal("a 256 MB save finished within 100 ms; the test cannot cut it off")
	}
	if got := mustLoad(t, ctx, s, team, "shop"); got != "good" {
		t.Fatalf("Load after an interrupted save = %d bytes, want the last good version", len(got))
	}
}

// TestFSTwoProcesses checks that two FS stores over one directory (each call takes its own flock, as
// a second process would) respect one lock.
func TestFSTwoProcesses(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	a, b := NewFS(dir), NewFS(dir)
	la := mustLock(t, ctx, a, team, "shop", "process-a", ttl)
	if _, err := b.Lock(ctx, team, "shop", "process-b", ttl); !errors.Is(err, ErrLocked) {
		t.Fatalf("process b Lock = %v, want ErrLocked", err)
	}
	if err := a.Save(ctx, team, "shop", la, []byte("from a")); err != nil {
		t.Fatal(err)
	}
	if got := mustLoad(t, ctx, b, team, "shop"); got != "from a" {
		t.Fatalf("process b Load = %q", got)
	}
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
				if err != nil {
					t.Fatalf("ValidName(%q) = %v, want nil", tc.name, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("ValidName(%q) = %v, want an error mentioning %q", tc.name, err, tc.wantErr)
			}
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
				if err == nil {
					t.Fatalf("ParseS3URL(%q) = %q, %q; want an error", tc.raw, bucket, prefix)
				}
				return
			}
			if err != nil || bucket != tc.bucket || prefix != tc.prefix {
				t.Fatalf("ParseS3URL(%q) = %q, %q, %v; want %q, %q", tc.raw, bucket, prefix, err, tc.bucket, tc.prefix)
			}
		})
	}
}

func mustLock(t *testing.T, ctx context.Context, s Store, team, name, owner string, ttl time.Duration) *Lock {
	t.Helper()
	l, err := s.Lock(ctx, team, name, owner, ttl)
	if err != nil {
		t.Fatalf("Lock(%s/%s) for %s: %v", team, name, owner, err)
	}
	return l
}

func mustLoad(t *testing.T, ctx context.Context, s Store, team, name string) string {
	t.Helper()
	b, err := s.Load(ctx, team, name)
	if err != nil {
		t.Fatalf("Load(%s/%s): %v", team, name, err)
	}
	return string(b)
}
