package scrape

import (
	"context"
	"sync"
	"time"

	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/egress"
)

// spares keeps one blank tab, in a fresh browser context with its renderer
// already started, for each browser that jobs use. Starting a renderer is
// most of a warm scrape's cost (about 150 ms of 200 on a 2-core machine),
// so it is done after a scrape has answered, ready for the next one on that
// browser. Only reusable job leases get such browsers from the pool, never
// an interactive session, so a spare is never seen by a user's CDP client.
type spares struct {
	mu sync.Mutex
	m  map[string]*tab // browser id → its spare tab (on its own connection)
	// filling holds the browsers whose spare is being made: scrapes that
	// share a browser end together, and one spare is enough.
	filling map[string]bool
	ua      string // the browsers' user agent, asked once
}

// take returns the spare tab of browser id, if one is ready and alive.
func (s *spares) take(id string) *tab {
	s.mu.Lock()
	t := s.m[id]
	delete(s.m, id)
	s.mu.Unlock()
	if t == nil {
		return nil
	}
	select {
	case <-t.conn.Done():
		return nil
	case <-t.crashed:
		t.conn.Close()
		return nil
	default:
		return t
	}
}

// refill prepares a spare tab for a browser in the background.
func (s *spares) refill(id string, browser *cdp.Mux, newRoute func(string) (*egress.Route, error)) {
	s.mu.Lock()
	if s.m[id] != nil || s.filling[id] {
		s.mu.Unlock()
		return
	}
	if s.filling == nil {
		s.filling = map[string]bool{}
	}
	s.filling[id] = true
	s.mu.Unlock()
	go func() {
		done := func() {
			s.mu.Lock()
			delete(s.filling, id)
			s.mu.Unlock()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		conn, err := browser.DialOwn(ctx)
		if err != nil {
			cancel()
			done()
			return // the browser is gone or busy: the next scrape opens a tab itself
		}
		route, err := newRoute(id)
		if err != nil {
			cancel()
			conn.Close()
			done()
			return
		}
		t, err := blankTab(ctx, conn, route)
		cancel()
		if err != nil {
			conn.Close()
			done()
			return
		}
		s.mu.Lock()
		delete(s.filling, id)
		if s.m == nil {
			s.m = map[string]*tab{}
		}
		old := s.m[id]
		s.m[id] = t
		s.mu.Unlock()
		if old != nil {
			old.close()
			old.conn.Close()
		}
		// Forget the spare when its browser goes away.
		<-conn.Done()
		s.mu.Lock()
		if s.m[id] == t {
			delete(s.m, id)
		}
		s.mu.Unlock()
	}()
}

// userAgent returns the browsers' user agent, asking conn the first time.
func (s *spares) userAgent(ctx context.Context, conn *cdp.Conn) (string, error) {
	s.mu.Lock()
	ua := s.ua
	s.mu.Unlock()
	if ua != "" {
		return ua, nil
	}
	ua, err := browserUserAgent(ctx, conn)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	s.ua = ua
	s.mu.Unlock()
	return ua, nil
}
