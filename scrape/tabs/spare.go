package tabs

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/egress"
)

// spares keeps blank tabs ready, each in a fresh browser context with its
// renderer already started, on the browsers that jobs use. A context and
// its renderer are most of a one-off render's cost (bench phase
// rendercost), so they are made while the browser has nothing else to do,
// ready for the next scrapes. Only reusable job leases get such browsers
// from the pool, never an interactive session, so a spare is never seen by
// a user's CDP client. A spare was never navigated: any team may have it.
type spares struct {
	mu sync.Mutex
	m  map[string][]*Tab // browser id → its spare tabs (each on its own connection)
	// filling holds the browsers whose spares are being made.
	filling map[string]bool
	// active counts the scrapes working on each browser, and busy is when
	// one last started or ended there: spares are made once a browser has
	// had none for spareQuiet, not in a burst.
	active map[string]int
	busy   map[string]time.Time
	ua     string // the browsers' user agent, asked once
	// taken counts the scrapes a spare tab served.
	taken atomic.Int64
}

// spareQuiet is how long a browser has had no new scrape before a spare
// tab is made on it: making one costs a few hundred ms of CPU, which a
// burst of scrapes needs more.
const spareQuiet = time.Second

// begin notes that a scrape starts on browser id; end that it ended.
func (s *spares) begin(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.busy == nil {
		s.busy, s.active = map[string]time.Time{}, map[string]int{}
	}
	now := time.Now()
	for k, at := range s.busy {
		// Browsers long quiet (or gone) are forgotten: quiet they are.
		if s.active[k] == 0 && !s.filling[k] && now.Sub(at) > time.Minute {
			delete(s.busy, k)
		}
	}
	s.busy[id] = now
	s.active[id]++
}

func (s *spares) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.busy[id] = time.Now()
	if s.active[id]--; s.active[id] <= 0 {
		delete(s.active, id)
	}
}

// take returns a spare tab of browser id, if one is ready and alive.
func (s *spares) take(id string) *Tab {
	for {
		s.mu.Lock()
		ts := s.m[id]
		if len(ts) == 0 {
			s.mu.Unlock()
			return nil
		}
		t := ts[len(ts)-1]
		s.m[id] = ts[:len(ts)-1]
		s.mu.Unlock()
		select {
		case <-t.conn.Done():
			continue
		case <-t.crashed:
			t.conn.Close()
			continue
		default:
			s.taken.Add(1)
			return t
		}
	}
}

// start marks browser id as being filled; false if it already is.
func (s *spares) start(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.filling[id] {
		return false
	}
	if s.filling == nil {
		s.filling = map[string]bool{}
	}
	s.filling[id] = true
	return true
}

// refill makes spare tabs on a browser in the background, one at a time,
// each once the browser has been quiet for spareQuiet, until max are ready
// in all.
func (s *spares) refill(id string, browser *cdp.Mux, newRoute func(string) (*egress.Route, error), max int) {
	if max > 0 && s.start(id) {
		go s.fill(context.Background(), id, browser, newRoute, max, true)
	}
}

// fill makes spare tabs on browser id until max are ready in all, waiting
// before each for the browser to be quiet when quiet says so, and ends
// filling id (which start began).
func (s *spares) fill(ctx context.Context, id string, browser *cdp.Mux, newRoute func(string) (*egress.Route, error), max int, quiet bool) {
	defer func() {
		s.mu.Lock()
		delete(s.filling, id)
		s.mu.Unlock()
	}()
	for {
		s.mu.Lock()
		n := s.readyLocked()
		wait := spareQuiet - time.Since(s.busy[id])
		if s.active[id] > 0 {
			wait = spareQuiet
		}
		s.mu.Unlock()
		if n >= max {
			return
		}
		if quiet && wait > 0 {
			select {
			case <-time.After(wait):
				continue // a scrape may have started meanwhile
			case <-browser.Done():
				return
			case <-ctx.Done():
				return
			}
		}
		if !s.make(ctx, id, browser, newRoute) {
			return // the browser is gone or busy: scrapes open tabs themselves
		}
	}
}

// make opens one spare tab on browser id and keeps it until it is taken
// or its browser goes away.
func (s *spares) make(ctx context.Context, id string, browser *cdp.Mux, newRoute func(string) (*egress.Route, error)) bool {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	conn, err := browser.Dial(ctx)
	if err != nil {
		return false
	}
	route, err := newRoute(id)
	if err != nil {
		conn.Close()
		return false
	}
	t, err := blankTab(ctx, conn, route)
	if err != nil {
		conn.Close()
		return false
	}
	s.mu.Lock()
	if s.m == nil {
		s.m = map[string][]*Tab{}
	}
	s.m[id] = append(s.m[id], t)
	s.mu.Unlock()
	go func() {
		// Forget the spare when its connection ends (its browser went
		// away, or a scrape took it and is done with it).
		<-conn.Done()
		s.mu.Lock()
		defer s.mu.Unlock()
		if i := slices.Index(s.m[id], t); i >= 0 {
			s.m[id] = slices.Delete(s.m[id], i, i+1)
		}
		if len(s.m[id]) == 0 {
			delete(s.m, id)
		}
	}()
	return true
}

// readyLocked is how many spare tabs are ready, on all browsers.
func (s *spares) readyLocked() int {
	n := 0
	for _, ts := range s.m {
		n += len(ts)
	}
	return n
}

// userAgent returns the browsers' user agent, asking conn the first time.
func (s *spares) userAgent(ctx context.Context, conn *cdp.Conn) (string, error) {
	s.mu.Lock()
	ua := s.ua
	s.mu.Unlock()
	if ua != "" {
		return ua, nil
	}
	ua, err := BrowserUserAgent(ctx, conn)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	s.ua = ua
	s.mu.Unlock()
	return ua, nil
}
