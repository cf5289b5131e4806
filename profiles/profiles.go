// Package profiles owns named browser profiles: the browser's state captured and restored over CDP
// (State, Capture, Restore, Tracker: cookies, localStorage and IndexedDB), its storage as one blob per
// profile and team (State.Encode) plus a single-writer lock, kept either on the local filesystem (FS)
// or in any S3-compatible object store (S3), and a browser's use of a profile from load to save (Use).
//
// Locks carry an absolute expiry time, so every process sharing a store must have a roughly synchronised
// clock; a lock's time-to-live should be much longer than the expected clock skew.
package profiles

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

var (
	// ErrLocked reports that another writer holds the profile's lock, or that the caller's lock was
	// taken over or has expired.
	ErrLocked = errors.New("profile locked")
	// ErrNotFound reports that the profile was never saved (or was deleted).
	ErrNotFound = errors.New("profile not found")
)

// maxNameLen is the longest profile name accepted, in characters.
const maxNameLen = 128

// ValidName checks a profile name: 1..128 characters, each a letter, digit, '-', '_' or '.', not
// starting with '.'. The error names the rule that was broken.
func ValidName(name string) error {
	if name == "" {
		return errors.New("profile name must not be empty")
	}
	if len(name) > maxNameLen {
		return fmt.Errorf("profile name must be at most %d characters", maxNameLen)
	}
	if name[0] == '.' {
		return errors.New("profile name must not start with '.'")
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
		default:
			return fmt.Errorf("profile name may contain only letters, digits, '-', '_' and '.', not %q", r)
		}
	}
	return nil
}

// validTeam checks that a team id is safe as one path segment or key segment. Team ids come from the
// teams registry rather than from users, so the rule is looser than ValidName.
func validTeam(team string) error {
	if team == "" || len(team) > 256 || team[0] == '.' || strings.ContainsAny(team, "/\\\x00") {
		return fmt.Errorf("invalid team id %q", team)
	}
	return nil
}

// validate checks both halves of a profile's key.
func validate(team, name string) error {
	if err := validTeam(team); err != nil {
		return err
	}
	return ValidName(name)
}

// Store keeps named profiles per team: each profile is one blob plus a single-writer lock. It is
// implemented by *FS and *S3.
type Store interface {
	// Load returns the last saved version of the profile, or ErrNotFound if it was never saved.
	Load(ctx context.Context, team, name string) ([]byte, error)
	// Save replaces the profile atomically: a crash mid-save leaves the previous version readable.
	// Only the holder of a live lock may save; anyone else gets ErrLocked.
	Save(ctx context.Context, team, name string, lock *Lock, data []byte) error
	// Lock takes the profile's single-writer lock for owner for ttl. It returns ErrLocked if another
	// live lock exists; an expired lock is taken over.
	Lock(ctx context.Context, team, name, owner string, ttl time.Duration) (*Lock, error)
	// Renew extends a held lock to ttl from now; ErrLocked if it was taken over meanwhile.
	Renew(ctx context.Context, l *Lock, ttl time.Duration) error
	// Unlock releases the lock if it is still ours; ErrLocked if it was taken over meanwhile.
	Unlock(ctx context.Context, l *Lock) error
	// List returns the team's saved profiles, sorted by name.
	List(ctx context.Context, team string) ([]Info, error)
	// Delete removes a profile: ErrLocked while a live lock is held, ErrNotFound if it is absent.
	Delete(ctx context.Context, team, name string) error
}

// Lock is a held single-writer lock on one profile. A Lock is not safe for concurrent use: the
// session holding it renews, saves and unlocks from one goroutine, or serialises those calls.
type Lock struct {
	Team, Name, Owner string
	// Expires is when the lock lapses unless renewed.
	Expires time.Time
	// token identifies this holding of the lock: the lock file's random token (FS) or the lock
	// object's ETag (S3).
	token string
}

// live reports whether l is usable for a save at now.
func (l *Lock) live(now time.Time) bool { return l != nil && now.Before(l.Expires) }

// Info describes one saved profile.
type Info struct {
	Name    string
	Size    int64
	SavedAt time.Time
	// Locked reports whether a live writer lock is held on the profile.
	Locked bool
}

// lockRecord is the JSON body of a lock file or lock object.
type lockRecord struct {
	Owner   string    `json:"owner"`
	Expires time.Time `json:"expires"`
	// Token makes every lock write unique, so that two writes never share an ETag.
	Token string `json:"token"`
}

// checkTTL rejects lock lifetimes that would make a lock expire immediately.
func checkTTL(ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("lock ttl must be positive, got %s", ttl)
	}
	return nil
}
