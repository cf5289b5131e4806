package browsers

import (
	"context"
	"errors"

	"github.com/trawler-dev/trawler/cdp"
)

// Runtime starts browsers. The pool is written against it alone, so the
// local-process runtime and the Docker runtime are interchangeable.
type Runtime interface {
	// Start launches a browser named id and returns once it answers over
	// its DevTools pipe.
	Start(ctx context.Context, id string) (Browser, error)
	// Reap stops and removes every browser that an earlier run of the service
	// left behind (after a kill -9, say) and returns how many it found.
	Reap(ctx context.Context) (int, error)
}

// Browser is one running browser.
type Browser interface {
	// ID is the name given to Start.
	ID() string
	// CDP is the browser's one DevTools connection, a pipe that no page and
	// no other process can reach (the browser listens on no port); every
	// client opens its own channel on it.
	CDP() *cdp.Mux
	// Done is closed once the browser has exited, for whatever reason.
	Done() <-chan struct{}
	// Err says why the browser exited; nil before Done is closed.
	Err() error
	// Close stops the browser, waits for it to exit and removes what it left
	// on disk. It is safe to call more than once.
	Close() error
}

// ErrBrowserExited is the cause of a lease whose browser exited on its own.
var ErrBrowserExited = errors.New("browser exited unexpectedly")
