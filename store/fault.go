package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
)

// FaultError is a store operation that failed for the store's own state,
// not for what it was asked: its disk is full, or its database cannot be
// reached. Callers answer it as such (507 or 503) instead of as a bug, and
// must not hand out what they could not record.
type FaultError struct {
	// Full says the database's disk (or its quota) is full; otherwise the
	// database is unavailable.
	Full bool
	Err  error
}

func (e *FaultError) Error() string {
	if e.Full {
		return "the store is full: " + e.Err.Error()
	}
	return "the store is unavailable: " + e.Err.Error()
}

func (e *FaultError) Unwrap() error { return e.Err }

// Store states, as Health reports them.
const (
	StateOK          = "ok"
	StateFull        = "full"
	StateUnavailable = "unavailable"
)

// Health is what the store last saw of its database.
type Health struct {
	// State is StateOK, StateFull or StateUnavailable.
	State string `json:"state"`
	// Since is when the store entered State (zero for ok since it opened).
	Since time.Time `json:"since,omitzero"`
	// Detail is the last fault's error, while not ok.
	Detail string `json:"detail,omitempty"`
	// Full and Unavailable count every fault since the store opened.
	Full        int64 `json:"fullFailures"`
	Unavailable int64 `json:"unavailableFailures"`
}

// faults tracks the store's state from every statement its connections
// run, so that a full disk is seen wherever it first bites, and a write
// that succeeds again ends it.
type faults struct {
	full, unavailable atomic.Int64
	// room, when set, says whether the database's filesystem has room:
	// a full SQLite database still takes some writes (into pages and WAL
	// frames it already has), which alone must not say it has room again.
	room func() bool

	// faulted is set while state is not ok, so that the statements of a
	// healthy store pass without taking mu.
	faulted atomic.Bool

	mu     sync.Mutex
	state  string
	since  time.Time
	detail string
	probed time.Time
}

// classify wraps err in a *FaultError when it is the database's fault,
// and records it.
func (f *faults) classify(err error) error { return f.classifyOn(err, nil) }

// classifyOn is classify for an error conn returned: one that left the
// connection unusable (pgx's "conn closed" after the server went away)
// means the database was lost.
func (f *faults) classifyOn(err error, conn driver.Conn) error {
	if err == nil {
		return nil
	}
	var fe *FaultError
	if errors.As(err, &fe) {
		return err
	}
	full, unavailable := faultOf(err)
	if v, ok := conn.(driver.Validator); ok && !full && !unavailable && !v.IsValid() &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		unavailable = true
	}
	if !full && !unavailable {
		return err
	}
	state := StateUnavailable
	if full {
		state = StateFull
		f.full.Add(1)
	} else {
		f.unavailable.Add(1)
	}
	f.mu.Lock()
	if f.state != state {
		f.state, f.since = state, time.Now()
	}
	f.faulted.Store(true)
	f.detail = err.Error()
	f.mu.Unlock()
	return &FaultError{Full: full, Err: err}
}

// ok records that a statement succeeded. A read says the database is
// reachable; only a write says there is room in it again.
func (f *faults) ok(write bool) {
	if !f.faulted.Load() {
		return
	}
	f.mu.Lock()
	if f.state == StateUnavailable || (write && f.state == StateFull && (f.room == nil || f.room())) {
		f.state, f.since, f.detail = StateOK, time.Now(), ""
		f.faulted.Store(false)
	}
	f.mu.Unlock()
}

func (f *faults) health() Health {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := Health{State: f.state, Since: f.since, Detail: f.detail, Full: f.full.Load(), Unavailable: f.unavailable.Load()}
	if h.State == "" {
		h.State = StateOK
	}
	return h
}

// faultOf tells a full disk and an unreachable database from every other
// failure, on SQLite and on PostgreSQL.
func faultOf(err error) (full, unavailable bool) {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false, false // the caller gave up; the database may be fine
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case 13: // SQLITE_FULL
			return true, false
		case 10, 14, 8: // SQLITE_IOERR, SQLITE_CANTOPEN, SQLITE_READONLY
			return errors.Is(err, syscall.ENOSPC), !errors.Is(err, syscall.ENOSPC)
		}
		return false, false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "53100": // disk_full
			return true, false
		// too_many_connections, a connection exception (class 08), or a
		// server shutting down or not taking connections yet.
		case pe.Code == "53300", strings.HasPrefix(pe.Code, "08"),
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03":
			return false, true
		}
		return false, false
	}
	if errors.Is(err, syscall.ENOSPC) {
		return true, false
	}
	var ne net.Error
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) {
		return false, true
	}
	return false, false
}

// Health reports the store's state. While it is not ok, it tries a small
// write (at most every two seconds), so that a store that has room again
// says so without waiting for other work to write.
func (s *Store) Health(ctx context.Context) Health {
	s.faults.mu.Lock()
	probe := s.faults.state != "" && s.faults.state != StateOK && time.Since(s.faults.probed) > 2*time.Second
	if probe {
		s.faults.probed = time.Now()
	}
	s.faults.mu.Unlock()
	if probe {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		// The outcome is recorded by the connection, as any statement's.
		s.db.ExecContext(ctx, `INSERT INTO store_probe(id, at) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET at = excluded.at`, millis(time.Now()))
	}
	return s.faults.health()
}

// Failures counts the faults seen since the store opened, by kind.
func (s *Store) Failures() (full, unavailable int64) {
	return s.faults.full.Load(), s.faults.unavailable.Load()
}

// observedConnector hands out connections whose every failure passes
// through faults (which wraps a full disk or a lost database in a
// *FaultError) and whose successes end a fault.
type observedConnector struct {
	driver.Connector
	faults *faults
}

func (c observedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, c.faults.classify(err)
	}
	return &observedConn{c: conn, f: c.faults}, nil
}

// observedConn implements what both drivers' connections implement, so
// that database/sql uses it as it would them; what the inner connection
// lacks is answered as database/sql expects (driver.ErrSkip).
type observedConn struct {
	c driver.Conn
	f *faults
	// inTx and wrote are the open transaction's: whether there is one,
	// and whether it wrote. (database/sql uses a connection from one
	// goroutine at a time.)
	inTx, wrote bool
}

var (
	_ driver.Conn               = (*observedConn)(nil)
	_ driver.ConnPrepareContext = (*observedConn)(nil)
	_ driver.ConnBeginTx        = (*observedConn)(nil)
	_ driver.ExecerContext      = (*observedConn)(nil)
	_ driver.QueryerContext     = (*observedConn)(nil)
	_ driver.Pinger             = (*observedConn)(nil)
	_ driver.SessionResetter    = (*observedConn)(nil)
	_ driver.Validator          = (*observedConn)(nil)
	_ driver.NamedValueChecker  = (*observedConn)(nil)
)

func (o *observedConn) Prepare(query string) (driver.Stmt, error) {
	st, err := o.c.Prepare(query)
	return st, o.f.classify(err)
}

func (o *observedConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if pc, ok := o.c.(driver.ConnPrepareContext); ok {
		st, err := pc.PrepareContext(ctx, query)
		return st, o.f.classify(err)
	}
	return o.Prepare(query)
}

func (o *observedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	ec, ok := o.c.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	res, err := ec.ExecContext(ctx, query, args)
	switch {
	case err == nil && o.inTx:
		o.wrote = true // a transaction's writes reach the disk at its commit
	case err == nil:
		o.f.ok(true)
	}
	return res, o.f.classifyOn(err, o.c)
}

func (o *observedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	qc, ok := o.c.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	rows, err := qc.QueryContext(ctx, query, args)
	if err == nil {
		o.f.ok(false)
	}
	return rows, o.f.classifyOn(err, o.c)
}

func (o *observedConn) Close() error { return o.c.Close() }

func (o *observedConn) Begin() (driver.Tx, error) {
	return o.BeginTx(context.Background(), driver.TxOptions{})
}

func (o *observedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	var tx driver.Tx
	var err error
	if bc, ok := o.c.(driver.ConnBeginTx); ok {
		tx, err = bc.BeginTx(ctx, opts)
	} else {
		tx, err = o.c.Begin() //nolint:staticcheck // the driver has nothing else
	}
	if err != nil {
		return nil, o.f.classifyOn(err, o.c)
	}
	o.inTx, o.wrote = true, false
	return observedTx{tx, o}, nil
}

func (o *observedConn) Ping(ctx context.Context) error {
	if p, ok := o.c.(driver.Pinger); ok {
		return o.f.classify(p.Ping(ctx))
	}
	return nil
}

func (o *observedConn) ResetSession(ctx context.Context) error {
	if r, ok := o.c.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (o *observedConn) IsValid() bool {
	if v, ok := o.c.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

func (o *observedConn) CheckNamedValue(v *driver.NamedValue) error {
	if c, ok := o.c.(driver.NamedValueChecker); ok {
		return c.CheckNamedValue(v)
	}
	return driver.ErrSkip
}

// observedTx sees a commit fail, which is where SQLite finds its disk full.
type observedTx struct {
	driver.Tx
	c *observedConn
}

func (t observedTx) Commit() error {
	err := t.Tx.Commit()
	t.c.inTx = false
	if err == nil {
		t.c.f.ok(t.c.wrote)
	}
	return t.c.f.classifyOn(err, t.c.c)
}

func (t observedTx) Rollback() error {
	t.c.inTx = false
	return t.Tx.Rollback()
}

// minRoom is the free space below which a SQLite store that found its disk
// full is still taken as full.
const minRoom = 1 << 20

// roomIn says whether the filesystem of dir has minRoom free.
func roomIn(dir string) func() bool {
	return func() bool {
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil {
			return true // no way to tell: the writes say
		}
		return st.Bavail*uint64(st.Bsize) >= minRoom
	}
}

// sqliteConnector is modernc's connector for dsn, observed.
func sqliteConnector(dsn string, f *faults) (driver.Connector, error) {
	c, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	return observedConnector{c, f}, nil
}
