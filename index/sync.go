package index

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trawler-dev/trawler/store"
)

// Convert turns a cache entry into the document the index takes; ok is
// false for a page that is not to be found by search (an error page, a
// body with no text).
type Convert func(ctx context.Context, p store.CachedPage) (d Doc, ok bool, err error)

// logBatch is how many log rows one index batch applies.
const logBatch = 200

// Syncer keeps the index in step with the store's cache: it applies the
// index log in order, rebuilds the index from the cache when it is missing
// or cannot be caught up, and prunes the log rows the index has persisted.
type Syncer struct {
	Index   Backend
	Store   *store.Store
	Convert Convert
	Log     *slog.Logger

	notify  chan struct{}
	urgent  chan struct{} // a search waits for the index
	applied atomic.Int64  // the last log row applied
	mu      sync.Mutex
	moved   chan struct{} // closed and replaced each time applied moves
	stat    status
	// offered are documents the scrape already made of the page it cached,
	// by log row: applying that row then reads and converts nothing.
	offered map[int64]Doc
	// direct are the documents offered to a shared index, to write at
	// once; directCh tells writeOffered of them.
	direct   []Doc
	directCh chan struct{}
	// pending counts, by log row, the offered documents not yet written
	// (or failed): apply stops short of the first, which this node is
	// about to write itself.
	pending map[int64]int
}

// maxOffered bounds the documents held for rows not yet applied; past it,
// rows are converted from the store as after a restart.
const maxOffered = 2000

// status is what a search says about an index that is not complete.
type status struct {
	rebuilding  atomic.Bool
	done, total atomic.Int64
}

// NewSyncer returns a syncer; Run starts it.
func NewSyncer(ix Backend, st *store.Store, convert Convert, log *slog.Logger) *Syncer {
	return &Syncer{Index: ix, Store: st, Convert: convert, Log: log, notify: make(chan struct{}, 1),
		urgent: make(chan struct{}, 1), moved: make(chan struct{}), offered: map[int64]Doc{}, directCh: make(chan struct{}, 1),
		pending: map[int64]int{}}
}

// Offer hands over the document of the page that log row seq cached, as
// the scrape made it, and tells the syncer of the row.
func (s *Syncer) Offer(seq int64, d Doc) {
	d.seq = seq
	s.mu.Lock()
	if s.Index.shared() {
		// Written at once (writeOffered), so that the other nodes find
		// the page there and do not convert it themselves.
		if len(s.direct) < maxOffered {
			s.direct = append(s.direct, d)
			s.pending[seq]++
		}
		s.mu.Unlock()
		select {
		case s.directCh <- struct{}{}:
		default:
		}
		return
	}
	if len(s.offered) < maxOffered && seq > s.applied.Load() {
		s.offered[seq] = d
	}
	s.mu.Unlock()
	s.Notify()
}

// writeOffered writes the offered documents to a shared index as they
// come, until ctx ends. A document it could not write is left to the log:
// the row's page is then converted from the store.
func (s *Syncer) writeOffered(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.directCh:
		}
		s.mu.Lock()
		docs := s.direct
		s.direct = nil
		s.mu.Unlock()
		if err := s.writeDirect(ctx, docs); err != nil && ctx.Err() == nil {
			s.Log.Warn("writing the pages this node cached to the search index; the log will bring them", "err", err)
		}
		s.mu.Lock()
		for _, d := range docs {
			if s.pending[d.seq]--; s.pending[d.seq] <= 0 {
				delete(s.pending, d.seq)
			}
		}
		s.mu.Unlock()
		s.Notify()
	}
}

// writeDirect writes docs under the apply lock, so that no node applying
// their rows meanwhile converts them as well.
func (s *Syncer) writeDirect(ctx context.Context, docs []Doc) error {
	unlock, err := s.Index.lockApply(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return s.Index.Put(docs, nil, 0)
}

// firstPending returns the first log row whose offered document is not
// written yet, or 0.
func (s *Syncer) firstPending() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := int64(0)
	for seq := range s.pending {
		if first == 0 || seq < first {
			first = seq
		}
	}
	return first
}

// takeOffered removes and returns the documents offered for rows.
func (s *Syncer) takeOffered(rows []store.IndexEntry) map[int64]Doc {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int64]Doc{}
	for _, r := range rows {
		if d, ok := s.offered[r.Seq]; ok {
			out[r.Seq] = d
			delete(s.offered, r.Seq)
		}
	}
	return out
}

// Notify tells the syncer that the log has new rows.
func (s *Syncer) Notify() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// Run applies the log until ctx ends. It first rebuilds the index when the
// index holds nothing the store has, or when the rows it would need to
// catch up are gone.
func (s *Syncer) Run(ctx context.Context) {
	if s.Index.shared() {
		done := make(chan struct{})
		defer func() { <-done }()
		go func() {
			defer close(done)
			s.writeOffered(ctx)
		}()
	}
	marker, err := s.Index.marker()
	if err != nil {
		s.Log.Error("reading the search index's position; rebuilding it", "err", err)
	}
	s.setApplied(marker)
	if need, why := s.needsRebuild(ctx, marker); need {
		s.Log.Info("rebuilding the search index from the store", "why", why)
		if err := s.rebuild(ctx); err != nil {
			if ctx.Err() == nil {
				s.Log.Error("rebuilding the search index", "err", err)
			}
			return
		}
	}
	prunable := int64(0)
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		for {
			n, err := s.apply(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				s.Log.Error("updating the search index", "err", err)
				break
			}
			if n < logBatch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-s.notify:
			s.gather(ctx)
		case <-s.urgent:
		case <-tick.C:
			// The index persists its batches within seconds: the rows it
			// had applied a minute ago are safe to drop.
			if prunable > 0 {
				if err := s.Store.PruneIndexLog(ctx, prunable); err != nil {
					s.Log.Error("pruning the index log", "err", err)
				}
			}
			prunable = s.applied.Load()
		}
	}
}

// gatherWait is how long the syncer lets new rows gather before it applies
// them, unless a search is waiting: every batch is a segment the index
// writes, syncs and later merges, so a crawl's pages are far cheaper to
// index a few seconds' worth at a time than one by one (with 1 s, a crawl
// of python3.11-doc ran at 0.79 of its speed without the index; with 5 s,
// at 1.0).
const gatherWait = 5 * time.Second

// gather waits gatherWait, or less when a search waits for the index.
func (s *Syncer) gather(ctx context.Context) {
	t := time.NewTimer(gatherWait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-s.urgent:
	case <-t.C:
	}
}

// needsRebuild says whether the index cannot be caught up from the log.
func (s *Syncer) needsRebuild(ctx context.Context, marker int64) (bool, string) {
	last, err := s.Store.LastIndexSeq(ctx)
	if err != nil {
		return false, ""
	}
	switch {
	case marker > last:
		return true, "the index is ahead of the store"
	case marker == 0 && !s.Index.shared():
		n, err := s.Store.CountPages(ctx)
		return err == nil && n > 0, "the index is new or was lost"
	}
	// (A shared index is the database's own: new, it is caught up from the
	// log, which holds every page unless pruned; nodes writing the pages
	// they cache fill it meanwhile.)
	rows, err := s.Store.IndexLog(ctx, marker, 1)
	if err == nil && len(rows) > 0 && rows[0].Seq > marker+1 {
		return true, "the log rows the index needs were pruned"
	}
	return false, ""
}

// rebuild indexes every cache entry, then resumes the log from where it
// stood when the rebuild began.
func (s *Syncer) rebuild(ctx context.Context) error {
	last, err := s.Store.LastIndexSeq(ctx)
	if err != nil {
		return err
	}
	total, err := s.Store.CountPages(ctx)
	if err != nil {
		return err
	}
	s.stat.total.Store(int64(total))
	s.stat.done.Store(0)
	s.stat.rebuilding.Store(true)
	defer s.stat.rebuilding.Store(false)
	var cur store.PageCursor
	for {
		pages, next, err := s.Store.Pages(ctx, cur, logBatch)
		if err != nil {
			return err
		}
		if len(pages) == 0 {
			break
		}
		cur = next
		var docs []Doc
		for _, p := range pages {
			// Of several entries with one final URL, the newest is the page.
			newest, err := s.Store.NewestPage(ctx, p.Team, p.FinalURL)
			if err != nil || newest.Key != p.Key {
				continue
			}
			if d, ok := s.convert(ctx, p); ok {
				docs = append(docs, d)
			}
		}
		if err := s.Index.Put(docs, nil, 0); err != nil {
			return err
		}
		s.stat.done.Add(int64(len(pages)))
	}
	if err := s.Index.Put(nil, nil, last); err != nil {
		return err
	}
	s.setApplied(last)
	return nil
}

// apply applies the next rows of the log and returns how many it read.
func (s *Syncer) apply(ctx context.Context) (int, error) {
	if s.Index.shared() {
		// One node at a time: the rows another node applied are not
		// converted again.
		unlock, err := s.Index.lockApply(ctx)
		if err != nil {
			return 0, err
		}
		defer unlock()
		marker, err := s.Index.marker()
		if err != nil {
			return 0, err
		}
		if marker > s.applied.Load() {
			s.setApplied(marker) // (offered documents go straight to it: writeOffered)
		}
	}
	rows, err := s.Store.IndexLog(ctx, s.applied.Load(), logBatch)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	if first := s.firstPending(); first > 0 {
		// This node writes that row's page in a moment (writeOffered),
		// then tells the loop to go on.
		rows = slices.DeleteFunc(rows, func(r store.IndexEntry) bool { return r.Seq >= first })
		if len(rows) == 0 {
			return 0, nil
		}
	}
	// The last row of a page decides; earlier ones are superseded.
	type target struct{ team, url string }
	final := map[target]store.IndexEntry{}
	var order []target
	for _, r := range rows {
		t := target{r.Team, r.FinalURL}
		if _, ok := final[t]; !ok {
			order = append(order, t)
		}
		final[t] = r
	}
	offered := s.takeOffered(rows)
	finals := make([]store.IndexEntry, 0, len(order))
	for _, t := range order {
		finals = append(finals, final[t])
	}
	indexed, err := s.Index.indexed(ctx, finals)
	if err != nil {
		return 0, err
	}
	var docs []Doc
	var gone [][2]string
	for _, t := range order {
		r := final[t]
		if indexed[r.Seq] {
			continue // written from this row or a later one (by the node that cached it)
		}
		if d, ok := offered[r.Seq]; ok {
			docs = append(docs, d)
			continue
		}
		var p store.CachedPage
		if r.Deleted {
			// Another entry may still hold the page (fetched with other
			// options): it stays, from that entry.
			p, err = s.Store.NewestPage(ctx, r.Team, r.FinalURL)
		} else {
			p, err = s.Store.PageByKey(ctx, r.Team, r.Key)
		}
		switch {
		case errors.Is(err, store.ErrNotFound):
			gone = append(gone, [2]string{t.team, t.url})
			continue
		case err != nil:
			return 0, err
		}
		if d, ok := s.convert(ctx, p); ok {
			d.seq = r.Seq
			docs = append(docs, d)
		} else {
			gone = append(gone, [2]string{t.team, t.url})
		}
	}
	seq := rows[len(rows)-1].Seq
	if err := s.Index.Put(docs, gone, seq); err != nil {
		return 0, err
	}
	s.setApplied(seq)
	return len(rows), nil
}

// convert converts p, logging a failure: a page that cannot be read is
// not found by search, and does not hold up the pages after it.
func (s *Syncer) convert(ctx context.Context, p store.CachedPage) (Doc, bool) {
	d, ok, err := s.Convert(ctx, p)
	if err != nil {
		s.Log.Warn("indexing a page", "url", p.FinalURL, "err", err)
		return d, false
	}
	return d, ok
}

func (s *Syncer) setApplied(seq int64) {
	s.mu.Lock()
	s.applied.Store(seq)
	close(s.moved)
	s.moved = make(chan struct{})
	s.mu.Unlock()
}

// CatchUp waits until the index holds every page the store held when it
// was called, for at most wait. It returns a warning for the search's
// answer when the index is not complete: rebuilding, or still behind.
func (s *Syncer) CatchUp(ctx context.Context, wait time.Duration) string {
	if s.stat.rebuilding.Load() {
		return s.rebuildWarning()
	}
	last, err := s.Store.LastIndexSeq(ctx)
	if err != nil {
		return ""
	}
	select {
	case s.urgent <- struct{}{}:
	default:
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		applied, moved := s.applied.Load(), s.moved
		s.mu.Unlock()
		if applied >= last {
			return ""
		}
		select {
		case <-moved:
		case <-ctx.Done():
			return ""
		case <-deadline.C:
			if s.stat.rebuilding.Load() {
				return s.rebuildWarning()
			}
			return fmt.Sprintf("the search index is %d pages behind the store: the newest pages may be missing",
				last-applied)
		}
	}
}

func (s *Syncer) rebuildWarning() string {
	return fmt.Sprintf("the search index is being rebuilt from the store (%d of %d pages done): results may be incomplete",
		s.stat.done.Load(), s.stat.total.Load())
}
