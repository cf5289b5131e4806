package profiles

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/trawler-dev/trawler/cdp"
)

// Use is one browser's use of a profile, from the load of its last saved version to the save of the
// browser's state (for a writer) and the release of the lock. A writer holds the profile's lock for
// the whole use and renews it in the background; a reader holds nothing and never writes.
type Use struct {
	store       Store
	team, name  string
	write       bool
	ttl         time.Duration
	state       *snapshot     // the last saved version, once decoded
	decoded     chan struct{} // closed once state or decodeErr is set
	decodeErr   error
	blobSize    int
	lock        *Lock
	tracker     *Tracker
	browser     *cdp.Mux
	contextID   string
	stopRenew   chan struct{}
	renewDone   chan struct{}
	mu          sync.Mutex // guards lock against the renewer
	lost        error      // why the lock was lost, if it was
	closeOnce   sync.Once
	closeResult error
}

// Access says whether a use of a profile writes it.
type Access int

const (
	// ReadOnly loads the profile's last saved version and never writes it.
	ReadOnly Access = iota
	// ReadWrite also holds the profile's lock for the whole use, so that the
	// browser's state can be saved as the profile's new version at Close.
	ReadWrite
)

// AccessFor is the access of a request's saveChanges option: ReadWrite
// when the browser's changes are to be saved, else ReadOnly.
func AccessFor(saveChanges bool) Access {
	if saveChanges {
		return ReadWrite
	}
	return ReadOnly
}

// Open starts a use of the profile team/name: a writer (ReadWrite) takes the lock (ErrLocked when
// another live writer holds it) for ttl, renewed every ttl/3 until Close; everyone loads the last
// saved version (an empty state when the profile was never saved). The version is decoded in the
// background, while the caller readies a browser: a version that cannot be read (ErrInvalidState)
// fails Apply, before it touches the browser's state.
func Open(ctx context.Context, st Store, team, name, owner string, access Access, ttl time.Duration) (*Use, error) {
	if err := validate(team, name); err != nil {
		return nil, err
	}
	write := access == ReadWrite
	u := &Use{store: st, team: team, name: name, write: write, ttl: ttl, decoded: make(chan struct{})}
	if write {
		l, err := st.Lock(ctx, team, name, owner, ttl)
		if err != nil {
			return nil, err
		}
		u.lock = l
	}
	data, err := st.Load(ctx, team, name)
	switch {
	case errors.Is(err, ErrNotFound):
		u.state = &snapshot{}
		close(u.decoded)
	case err != nil:
		u.release()
		return nil, fmt.Errorf("loading profile %q: %w", name, err)
	default:
		// The version is decoded while the caller readies a browser, and while Apply opens the
		// helper tab: a version that cannot be read fails Apply.
		u.blobSize = len(data)
		go func() {
			defer close(u.decoded)
			if u.state, u.decodeErr = decodeSnapshot(data); u.decodeErr != nil {
				u.decodeErr = fmt.Errorf("reading profile %q: %w", name, u.decodeErr)
			}
		}()
	}
	if write {
		u.stopRenew, u.renewDone = make(chan struct{}), make(chan struct{})
		go u.renew()
	}
	return u, nil
}

// Name is the profile's name.
func (u *Use) Name() string { return u.name }

// Writes reports whether the use saves the browser's state at its end.
func (u *Use) Writes() bool { return u.write }

// renew keeps the lock alive until Close.
func (u *Use) renew() {
	defer close(u.renewDone)
	t := time.NewTicker(u.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-u.stopRenew:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), u.ttl/3)
		u.mu.Lock()
		err := u.store.Renew(ctx, u.lock, u.ttl)
		if errors.Is(err, ErrLocked) {
			u.lost = fmt.Errorf("the lock on profile %q was taken over: %w", u.name, err)
		}
		u.mu.Unlock()
		cancel()
		if errors.Is(err, ErrLocked) {
			return
		}
	}
}

// Apply restores the loaded state into browserContextID ("" for the default context) of the browser
// browser, and for a writer starts recording the origins the browser visits, so that Close
// knows whose storage to save.
func (u *Use) Apply(ctx context.Context, browser *cdp.Mux, browserContextID string) error {
	u.browser, u.contextID = browser, browserContextID
	if u.write {
		t, err := Track(ctx, browser, browserContextID)
		if err != nil {
			return fmt.Errorf("watching the browser for profile %q: %w", u.name, err)
		}
		u.tracker = t
	}
	var loadErr error
	load := func(ctx context.Context) (*snapshot, error) {
		st, err := u.loaded(ctx)
		loadErr = err
		return st, err
	}
	if err := restore(ctx, browser, browserContextID, load, u.blobSize > speculateSize); err != nil {
		if loadErr != nil {
			return loadErr
		}
		return fmt.Errorf("restoring profile %q: %w", u.name, err)
	}
	return nil
}

// speculateSize is the size of a saved version above which Apply opens a helper tab before the
// version is decoded: cookies alone compress to much less, so a version this large most likely
// holds storage that needs the tab.
const speculateSize = 64 << 10

// loaded waits for the last saved version to be decoded.
func (u *Use) loaded(ctx context.Context) (*snapshot, error) {
	select {
	case <-u.decoded:
		return u.state, u.decodeErr
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Changes says what Close does with the browser's changes to a profile.
type Changes int

const (
	// Discard keeps the profile's last saved version: the browser died, or
	// the use never meant to write.
	Discard Changes = iota
	// Save captures a writer's still-running browser's state and saves it as
	// the profile's new version. A reader saves nothing either way.
	Save
)

// Close ends the use. A writer saves the browser's state first when
// changes is Save, then releases the lock; ctx bounds the capture and the
// save. Close is safe to call more than once; later calls return the first
// result.
func (u *Use) Close(ctx context.Context, changes Changes) error {
	u.closeOnce.Do(func() { u.closeResult = u.close(ctx, changes) })
	return u.closeResult
}

func (u *Use) close(ctx context.Context, changes Changes) error {
	if !u.write {
		return nil
	}
	close(u.stopRenew)
	<-u.renewDone
	var err error
	if changes == Save && u.browser != nil {
		err = u.save(ctx)
	}
	if u.tracker != nil {
		u.tracker.Close()
	}
	return errors.Join(err, u.release())
}

// save captures the browser's state, for every origin it visited or that the profile already held,
// and writes it.
func (u *Use) save(ctx context.Context) error {
	if u.lost != nil {
		return u.lost
	}
	state, err := u.loaded(ctx)
	if err != nil {
		return err
	}
	origins := state.originList()
	if u.tracker != nil {
		origins = append(origins, u.tracker.Origins()...)
	}
	slices.Sort(origins)
	st, err := capture(ctx, u.browser, u.contextID, slices.Compact(origins), true)
	if err != nil {
		return fmt.Errorf("capturing the browser's state for profile %q: %w", u.name, err)
	}
	// The storage is checked, on another core if there is one, while it is compressed.
	checked := make(chan error, 1)
	go func() { checked <- st.check() }()
	data, err := st.encode()
	if cerr := <-checked; cerr != nil {
		return fmt.Errorf("capturing the browser's state for profile %q: %w", u.name, cerr)
	}
	if err != nil {
		return err
	}
	if err := u.store.Save(ctx, u.team, u.name, u.lock, data); err != nil {
		return fmt.Errorf("saving profile %q: %w", u.name, err)
	}
	return nil
}

// release gives the lock back, if there is one.
func (u *Use) release() error {
	if u.lock == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := u.store.Unlock(ctx, u.lock)
	if errors.Is(err, ErrLocked) {
		return nil // taken over after expiry: nothing of ours to release
	}
	return err
}

// Opener opens uses of profiles on behalf of one service instance: the one
// place where lock owners and lock lifetimes are decided, for sessions,
// scrapes and jobs alike.
type Opener struct {
	Store Store
	// Instance names the service in lock records, so that an operator can
	// tell which process holds a profile.
	Instance string
	// LockTTL is how long a writer's lock lives between renewals.
	LockTTL time.Duration
}

// Open starts a use of team's profile name; see Open.
func (o *Opener) Open(ctx context.Context, team, name string, access Access) (*Use, error) {
	return Open(ctx, o.Store, team, name, o.Instance+"/"+uuid.NewString(), access, o.LockTTL)
}
