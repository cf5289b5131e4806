package index

import (
	"context"

	"github.com/trawler-dev/trawler/store"
)

// Backend is where the index lives: bleve's files (Index, the embedded
// default) or PostgreSQL's tables (PG, when the store is there), with the
// same documents, operators, team rules and scoring model.
type Backend interface {
	// Put indexes docs (replacing each page's earlier entry and images),
	// removes the pages of gone (team, URL) and records seq, when above
	// 0, as the last log row applied, all at once.
	Put(docs []Doc, gone [][2]string, seq int64) error
	// Search runs r and returns at most r.Limit hits, best first.
	Search(ctx context.Context, r Request) ([]Hit, error)
	// Count returns how many documents (pages and images) there are.
	Count() (uint64, error)
	Close() error
	// marker returns the last log row applied.
	marker() (int64, error)
	// shared reports whether other nodes apply the log to this index too.
	shared() bool
	// indexed returns the rows whose page the index holds already, made
	// from that row or a later one (another node wrote it): they need no
	// conversion.
	indexed(ctx context.Context, rows []store.IndexEntry) (map[int64]bool, error)
	// lockApply holds off the other nodes' syncers until unlock: one node
	// at a time reads, converts and applies the log's next rows, so that
	// no page is converted twice.
	lockApply(ctx context.Context) (unlock func(), err error)
}

var (
	_ Backend = (*Index)(nil)
	_ Backend = (*PG)(nil)
)

// shared: one node's own files.
func (ix *Index) shared() bool { return false }

func (ix *Index) lockApply(context.Context) (func(), error) { return func() {}, nil }

func (ix *Index) indexed(context.Context, []store.IndexEntry) (map[int64]bool, error) {
	return nil, nil
}
