package store

import (
	"math"
	"strings"
)

// dialect holds the SQL that differs between SQLite and PostgreSQL. Every
// query outside it is written once, with ? placeholders, in the subset
// both accept: ON CONFLICT instead of INSERT OR IGNORE/REPLACE, RETURNING
// instead of LastInsertId, TRUE and FALSE for booleans (SQLite stores them
// as 1 and 0).
type dialect struct {
	// name is the database's name, for logs and tests.
	name string
	// migrations are applied in order, each once; never edit a released
	// one, append a new one.
	migrations []string
	// migrationLock, when set, runs first in each migration's transaction
	// and holds every other node's migration until that transaction ends,
	// so that nodes starting at once against an empty database do not
	// migrate it together.
	migrationLock string
	// lastIndexSeq reads the highest seq index_log ever handed out, 0 when
	// none: it must not go back when the log is pruned.
	lastIndexSeq string
	// creditMonth is credit_ledger.created_at (milliseconds) as its UTC
	// calendar month, YYYY-MM.
	creditMonth string
	// lockJob, when set, runs first in a transaction that numbers a job's
	// results (one argument: the job's id), so that concurrent writers of
	// one job take their numbers one after the other. SQLite needs none:
	// it has one writer at a time.
	lockJob string
	// lockPlace, when set, runs first in a transaction that takes a place
	// (one argument: its key), so that nodes taking places of one key
	// count them one after the other. SQLite needs none.
	lockPlace string
	// indexLogLock, when set, runs in a transaction just before it adds
	// to index_log, and holds every other such transaction until it ends:
	// the index applies the log in seq order, so a row must not be
	// committed after one with a higher seq (PostgreSQL hands out seq at
	// the insert, not at the commit). SQLite needs none: it has one writer
	// at a time.
	indexLogLock string
	// uniqueViolation reports whether err is a write refused by a UNIQUE
	// index or primary key.
	uniqueViolation func(err error) bool
}

// noLimit is the LIMIT of a query that wants every row: SQLite reads a
// negative limit as none, PostgreSQL refuses one.
const noLimit = math.MaxInt64

var sqliteDialect = &dialect{
	name:         "sqlite",
	migrations:   migrations,
	lastIndexSeq: `SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'index_log'), 0)`,
	creditMonth:  `strftime('%Y-%m', created_at / 1000, 'unixepoch')`,
	uniqueViolation: func(err error) bool {
		return strings.Contains(err.Error(), "UNIQUE")
	},
}
