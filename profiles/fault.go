package profiles

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"

	"github.com/minio/minio-go/v7"
)

// StoreError is a profile store that failed for its own state, not for
// the profile asked for: its disk is full, or it cannot be reached (an
// object store down, or answering 5xx). Sessions that need a profile are
// refused with it rather than started without their state.
type StoreError struct {
	// Full says the store has no room.
	Full bool
	Err  error
}

func (e *StoreError) Error() string {
	if e.Full {
		return "the profile store is full: " + e.Err.Error()
	}
	return "the profile store is unavailable: " + e.Err.Error()
}

func (e *StoreError) Unwrap() error { return e.Err }

// storeFault wraps err in a *StoreError when it is the store's fault.
func storeFault(err error) error {
	if err == nil || errors.Is(err, ErrNotFound) || errors.Is(err, ErrLocked) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var se *StoreError
	if errors.As(err, &se) {
		return err
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return &StoreError{Full: true, Err: err}
	}
	if r := minio.ToErrorResponse(err); r.Code == "XMinioStorageFull" || r.StatusCode == 507 {
		return &StoreError{Full: true, Err: err}
	} else if r.StatusCode >= 500 {
		return &StoreError{Err: err}
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) {
		return &StoreError{Err: err}
	}
	return err
}

// Faults is st whose every failure that is the store's own fault comes
// back as a *StoreError.
func Faults(st Store) Store { return faultStore{st} }

type faultStore struct{ s Store }

func (f faultStore) Load(ctx context.Context, team, name string) ([]byte, error) {
	b, err := f.s.Load(ctx, team, name)
	return b, storeFault(err)
}

func (f faultStore) Save(ctx context.Context, team, name string, lock *Lock, data []byte) error {
	return storeFault(f.s.Save(ctx, team, name, lock, data))
}

func (f faultStore) Lock(ctx context.Context, team, name, owner string, ttl time.Duration) (*Lock, error) {
	l, err := f.s.Lock(ctx, team, name, owner, ttl)
	return l, storeFault(err)
}

func (f faultStore) Renew(ctx context.Context, l *Lock, ttl time.Duration) error {
	return storeFault(f.s.Renew(ctx, l, ttl))
}

func (f faultStore) Unlock(ctx context.Context, l *Lock) error {
	return storeFault(f.s.Unlock(ctx, l))
}

func (f faultStore) List(ctx context.Context, team string) ([]Info, error) {
	infos, err := f.s.List(ctx, team)
	return infos, storeFault(err)
}

func (f faultStore) Delete(ctx context.Context, team, name string) error {
	return storeFault(f.s.Delete(ctx, team, name))
}
