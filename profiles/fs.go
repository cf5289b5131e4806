package profiles

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"
)

var _ Store = (*FS)(nil)

// FS keeps profiles on the local filesystem, under DIR/<team>/<name>/:
//
//   - data: the last saved blob, written to a temporary file, synced, then renamed over, so a crash
//     mid-save leaves the previous version in place;
//   - lock: the writer lock, JSON {owner, expires, token}, created with O_EXCL when absent;
//   - .mutex: an empty file that is never removed; every change of lock state (take, take over, renew,
//     unlock) and every save and delete happens while holding flock(2) on it.
//
// The flock makes an expired lock's takeover race-free between processes on one host (and between
// goroutines, since each call opens its own descriptor): reading the expired lock and replacing it
// is one critical section, so two takers can never both win. flock is advisory and local, so the
// directory must not be shared between hosts over NFS.
type FS struct {
	dir string
}

// NewFS returns a store rooted at dir, which is created on first save.
func NewFS(dir string) *FS { return &FS{dir: dir} }

func (s *FS) profileDir(team, name string) string { return filepath.Join(s.dir, team, name) }

// withMutex runs fn while holding the profile's flock, creating the profile's directory if needed.
func (s *FS) withMutex(team, name string, fn func(dir string) error) error {
	dir := s.profileDir(team, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating profile directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, ".mutex"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("opening profile mutex: %w", err)
	}
	defer f.Close()
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("locking profile mutex: %w", err)
	}
	// Closing the descriptor releases the flock.
	return fn(dir)
}

// readLock returns the lock record in dir, or nil if there is none.
func readLock(dir string) (*lockRecord, error) {
	b, err := os.ReadFile(filepath.Join(dir, "lock"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading lock: %w", err)
	}
	var rec lockRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		// A torn lock file cannot come from writeFileAtomic or O_EXCL plus one write unless the
		// machine crashed between create and write; treat it as expired so the profile is not
		// locked forever.
		return &lockRecord{}, nil
	}
	return &rec, nil
}

// writeFileAtomic writes data to a temporary file in dir, syncs it, and renames it over name.
func writeFileAtomic(dir, name string, data []byte) error {
	tmp, err := os.CreateTemp(dir, ".tmp-"+name+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return err
	}
	// Sync the directory so the rename itself survives a crash.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Load returns the profile's last saved blob.
func (s *FS) Load(ctx context.Context, team, name string) ([]byte, error) {
	if err := validate(team, name); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(s.profileDir(team, name), "data"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("loading profile %s: %w", name, err)
	}
	return b, nil
}

// Save replaces the profile's blob if lock is a live lock on it.
func (s *FS) Save(ctx context.Context, team, name string, lock *Lock, data []byte) error {
	if err := validate(team, name); err != nil {
		return err
	}
	if lock == nil || lock.Team != team || lock.Name != name {
		return ErrLocked
	}
	return s.withMutex(team, name, func(dir string) error {
		rec, err := readLock(dir)
		if err != nil {
			return err
		}
		if rec == nil || rec.Token != lock.token || !lock.live(time.Now()) {
			return ErrLocked
		}
		if err := writeFileAtomic(dir, "data", data); err != nil {
			return fmt.Errorf("saving profile %s: %w", name, err)
		}
		return nil
	})
}

// Lock takes the profile's writer lock, creating the lock file with O_EXCL or replacing an expired one.
func (s *FS) Lock(ctx context.Context, team, name, owner string, ttl time.Duration) (*Lock, error) {
	if err := validate(team, name); err != nil {
		return nil, err
	}
	if err := checkTTL(ttl); err != nil {
		return nil, err
	}
	var l *Lock
	err := s.withMutex(team, name, func(dir string) error {
		rec, err := readLock(dir)
		if err != nil {
			return err
		}
		now := time.Now()
		if rec != nil && now.Before(rec.Expires) {
			return ErrLocked
		}
		next := lockRecord{Owner: owner, Expires: now.Add(ttl), Token: rand.Text()}
		b, err := json.Marshal(next)
		if err != nil {
			return err
		}
		if rec == nil {
			err = createExclusive(filepath.Join(dir, "lock"), b)
		} else {
			// Takeover of an expired lock: safe to overwrite because we hold the mutex.
			err = writeFileAtomic(dir, "lock", b)
		}
		if err != nil {
			return fmt.Errorf("writing lock: %w", err)
		}
		l = &Lock{Team: team, Name: name, Owner: owner, Expires: next.Expires, token: next.Token}
		return nil
	})
	return l, err
}

// createExclusive creates path with O_EXCL and writes b to it.
func createExclusive(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Renew extends l to ttl from now if the lock file is still ours.
func (s *FS) Renew(ctx context.Context, l *Lock, ttl time.Duration) error {
	if err := checkTTL(ttl); err != nil {
		return err
	}
	return s.withOwnLock(l, func(dir string, rec *lockRecord) error {
		rec.Expires = time.Now().Add(ttl)
		b, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		if err := writeFileAtomic(dir, "lock", b); err != nil {
			return fmt.Errorf("renewing lock: %w", err)
		}
		l.Expires = rec.Expires
		return nil
	})
}

// withOwnLock runs fn under the profile's mutex with l's lock record, or
// returns ErrLocked if the lock file is no longer l's.
func (s *FS) withOwnLock(l *Lock, fn func(dir string, rec *lockRecord) error) error {
	if l == nil {
		return ErrLocked
	}
	return s.withMutex(l.Team, l.Name, func(dir string) error {
		rec, err := readLock(dir)
		if err != nil {
			return err
		}
		if rec == nil || rec.Token != l.token {
			return ErrLocked
		}
		return fn(dir, rec)
	})
}

// Unlock removes the lock file if it is still ours.
func (s *FS) Unlock(ctx context.Context, l *Lock) error {
	return s.withOwnLock(l, func(dir string, _ *lockRecord) error {
		if err := os.Remove(filepath.Join(dir, "lock")); err != nil {
			return fmt.Errorf("removing lock: %w", err)
		}
		l.Expires = time.Time{}
		return nil
	})
}

// List returns the team's saved profiles; directories left behind by deleted profiles are skipped.
func (s *FS) List(ctx context.Context, team string) ([]Info, error) {
	if err := validTeam(team); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(filepath.Join(s.dir, team))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing profiles: %w", err)
	}
	now := time.Now()
	var out []Info
	for _, e := range entries {
		if !e.IsDir() || ValidName(e.Name()) != nil {
			continue
		}
		dir := filepath.Join(s.dir, team, e.Name())
		st, err := os.Stat(filepath.Join(dir, "data"))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing profile %s: %w", e.Name(), err)
		}
		rec, err := readLock(dir)
		if err != nil {
			return nil, err
		}
		out = append(out, Info{
			Name:    e.Name(),
			Size:    st.Size(),
			SavedAt: st.ModTime(),
			Locked:  rec != nil && now.Before(rec.Expires),
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Delete removes the profile's blob and any expired lock. The directory and its .mutex stay: removing
// them could let a process that already opened the old .mutex and one that creates a new one both
// believe they hold the mutex.
func (s *FS) Delete(ctx context.Context, team, name string) error {
	if err := validate(team, name); err != nil {
		return err
	}
	if _, err := os.Stat(s.profileDir(team, name)); errors.Is(err, fs.ErrNotExist) {
		return ErrNotFound // do not create a directory just to find nothing
	}
	return s.withMutex(team, name, func(dir string) error {
		rec, err := readLock(dir)
		if err != nil {
			return err
		}
		if rec != nil && time.Now().Before(rec.Expires) {
			return ErrLocked
		}
		err = os.Remove(filepath.Join(dir, "data"))
		if errors.Is(err, fs.ErrNotExist) {
			return ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("deleting profile %s: %w", name, err)
		}
		if rec != nil {
			os.Remove(filepath.Join(dir, "lock"))
		}
		return nil
	})
}
