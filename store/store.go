// Package store owns Trawler's persistence: one database, SQLite through
// modernc.org/sqlite (pure Go, WAL) or PostgreSQL through pgx
// (postgres.go), each with versioned migrations, holding
//   - teams and their hashed API keys (teams.go);
//   - browser session history (sessions.go) and the teams' activity log
//     (activity.go);
//   - the page cache, as fetched and before any transform, and the scrape
//     results kept for retrieval by id (pages.go);
//   - crawl and batch-scrape jobs with their URLs, documents and error
//     states, so that a restarted service resumes them (jobs.go);
//   - webhook events awaiting delivery or retry (webhooks.go);
//   - the token usage of every language-model call (usage.go);
//   - change tracking's page versions (changes.go);
//   - the credit ledger: every billable event, once (credits.go).
//
// Records that outlive their retention are deleted by the Prune methods.
// The SQL that differs between the two is held by a dialect (dialect.go;
// PostgreSQL's in postgres.go).
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// ErrNotFound is returned when a record does not exist (or belongs to
// another team, which callers must not be able to tell apart).
var ErrNotFound = errors.New("not found")

// Store is the database.
type Store struct {
	db      *sql.DB
	dialect *dialect
	// node is the service this store serves, when several share one
	// database (nodes.go): it owns the jobs and sessions it creates.
	node    string
	nodeURL string
	lease   time.Duration
	// notices are PostgreSQL's job change notices (notices.go); nil on
	// SQLite.
	notices *notices
	// faults is what the store's connections saw of its database
	// (fault.go).
	faults *faults
}

// migrations are SQLite's, applied in order, each once; never edit a
// released one, append a new one (and its PostgreSQL counterpart to
// postgresMigrations).
var migrations = []string{
	`CREATE TABLE teams (
		id TEXT PRIMARY KEY,
		created_at INTEGER NOT NULL
	);
	CREATE TABLE api_keys (
		key_hash BLOB PRIMARY KEY,
		team_id TEXT NOT NULL REFERENCES teams(id),
		created_at INTEGER NOT NULL
	);
	CREATE TABLE browser_sessions (
		id TEXT PRIMARY KEY,
		team_id TEXT NOT NULL,
		status TEXT NOT NULL,
		stream_web_view INTEGER NOT NULL,
		ttl_s INTEGER NOT NULL,
		activity_ttl_s INTEGER NOT NULL,
		cdp_token TEXT NOT NULL,
		view_token TEXT NOT NULL,
		interact_token TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		expires_at INTEGER NOT NULL,
		last_activity INTEGER NOT NULL,
		destroyed_at INTEGER,
		end_reason TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX browser_sessions_team ON browser_sessions(team_id, status, created_at);
	CREATE TABLE activity (
		id TEXT NOT NULL,
		team_id TEXT NOT NULL,
		endpoint TEXT NOT NULL,
		api_version TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		target TEXT NOT NULL,
		PRIMARY KEY (team_id, created_at, id)
	);`,
	`CREATE TABLE page_cache (
		key TEXT PRIMARY KEY,
		url TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		status_code INTEGER NOT NULL,
		final_url TEXT NOT NULL,
		content_type TEXT NOT NULL,
		body BLOB NOT NULL,
		screenshot TEXT NOT NULL DEFAULT '',
		engine TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX page_cache_created ON page_cache(created_at);
	CREATE TABLE scrapes (
		id TEXT PRIMARY KEY,
		team_id TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		expires_at INTEGER NOT NULL,
		document BLOB NOT NULL
	);
	CREATE INDEX scrapes_expires ON scrapes(expires_at);`,
	`CREATE TABLE jobs (
		id TEXT PRIMARY KEY,
		team_id TEXT NOT NULL,
		kind TEXT NOT NULL,
		status TEXT NOT NULL,
		url TEXT NOT NULL,
		request BLOB NOT NULL,
		idempotency_key TEXT NOT NULL DEFAULT '',
		created_at INTEGER NOT NULL,
		completed_at INTEGER,
		expires_at INTEGER NOT NULL,
		credits INTEGER NOT NULL DEFAULT 0,
		error TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX jobs_team ON jobs(team_id, kind, status, created_at);
	CREATE INDEX jobs_status ON jobs(status);
	CREATE INDEX jobs_expires ON jobs(expires_at);
	CREATE UNIQUE INDEX jobs_idempotency ON jobs(team_id, idempotency_key) WHERE idempotency_key != '';
	CREATE TABLE job_urls (
		job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
		url_key TEXT NOT NULL,
		url TEXT NOT NULL,
		depth INTEGER NOT NULL,
		seq INTEGER NOT NULL,
		state TEXT NOT NULL,
		done_seq INTEGER,
		document BLOB,
		error_code TEXT NOT NULL DEFAULT '',
		error TEXT NOT NULL DEFAULT '',
		updated_at INTEGER NOT NULL,
		PRIMARY KEY (job_id, url_key)
	);
	CREATE INDEX job_urls_state ON job_urls(job_id, state, seq);
	CREATE INDEX job_urls_done ON job_urls(job_id, done_seq) WHERE done_seq IS NOT NULL;
	CREATE TABLE webhook_events (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		job_id TEXT NOT NULL,
		team_id TEXT NOT NULL,
		target BLOB NOT NULL,
		payload BLOB NOT NULL,
		state TEXT NOT NULL,
		attempts INTEGER NOT NULL DEFAULT 0,
		next_at INTEGER NOT NULL,
		last_error TEXT NOT NULL DEFAULT '',
		created_at INTEGER NOT NULL
	);
	CREATE INDEX webhook_events_pending ON webhook_events(state, job_id, id);`,
	// The cache belongs to the team that fetched each page, and remembers
	// whether the page came from a non-public address. Earlier entries know
	// neither, so they are dropped: it is only a cache.
	`DROP TABLE page_cache;
	CREATE TABLE page_cache (
		team_id TEXT NOT NULL,
		key TEXT NOT NULL,
		url TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		status_code INTEGER NOT NULL,
		final_url TEXT NOT NULL,
		content_type TEXT NOT NULL,
		body BLOB NOT NULL,
		screenshot TEXT NOT NULL DEFAULT '',
		engine TEXT NOT NULL DEFAULT '',
		private INTEGER NOT NULL,
		PRIMARY KEY (team_id, key)
	);
	CREATE INDEX page_cache_created ON page_cache(created_at);
	CREATE INDEX page_cache_key ON page_cache(key, created_at);`,
	// The search index follows the cache through this log: every entry
	// written or deleted appends a row, and the index remembers the last
	// row it applied, so that it catches up after a crash.
	`CREATE TABLE index_log (
		seq INTEGER PRIMARY KEY AUTOINCREMENT,
		team_id TEXT NOT NULL,
		key TEXT NOT NULL,
		final_url TEXT NOT NULL,
		deleted INTEGER NOT NULL
	);
	CREATE INDEX page_cache_final ON page_cache(team_id, final_url, created_at);`,
	// Every language-model call, for the teams' token usage and the
	// activity entry of the request that made it.
	`CREATE TABLE model_usage (
		seq INTEGER PRIMARY KEY AUTOINCREMENT,
		team_id TEXT NOT NULL,
		request_id TEXT NOT NULL,
		purpose TEXT NOT NULL,
		model TEXT NOT NULL,
		input_tokens INTEGER NOT NULL,
		output_tokens INTEGER NOT NULL,
		attempts INTEGER NOT NULL,
		duration_ms INTEGER NOT NULL,
		created_at INTEGER NOT NULL,
		error TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX model_usage_team ON model_usage(team_id, created_at);
	CREATE INDEX model_usage_request ON model_usage(team_id, request_id);`,
	// Extract jobs: the request, the batch that scrapes their pages and,
	// once the model answered, the result; a restarted service resumes
	// those still processing.
	`CREATE TABLE extracts (
		id TEXT PRIMARY KEY,
		team_id TEXT NOT NULL,
		status TEXT NOT NULL,
		request BLOB NOT NULL,
		batch_id TEXT NOT NULL DEFAULT '',
		result BLOB,
		sources TEXT NOT NULL DEFAULT '[]',
		warning TEXT NOT NULL DEFAULT '',
		error TEXT NOT NULL DEFAULT '',
		created_at INTEGER NOT NULL,
		expires_at INTEGER NOT NULL,
		credits INTEGER NOT NULL DEFAULT 0
	);
	CREATE INDEX extracts_status ON extracts(status);
	CREATE INDEX extracts_expires ON extracts(expires_at);`,
	// Change tracking's history (changes.go): each scrape that asked for
	// changeTracking, per team, normalised URL and tag, with its Markdown
	// (compressed) and, in the json mode, what the model extracted from it.
	`CREATE TABLE page_versions (
		seq INTEGER PRIMARY KEY AUTOINCREMENT,
		team_id TEXT NOT NULL,
		url_key TEXT NOT NULL,
		tag TEXT NOT NULL,
		scraped_at INTEGER NOT NULL,
		status_code INTEGER NOT NULL,
		markdown BLOB NOT NULL,
		extraction_key TEXT NOT NULL DEFAULT '',
		extraction BLOB
	);
	CREATE INDEX page_versions_page ON page_versions(team_id, url_key, tag, scraped_at);
	CREATE INDEX page_versions_scraped ON page_versions(scraped_at);`,
	// The audio and video formats' files (media.go): each converted file
	// of a team, kept under the media directory until it expires with the
	// scrape's result.
	`CREATE TABLE media (
		id TEXT PRIMARY KEY,
		team_id TEXT NOT NULL,
		kind TEXT NOT NULL,
		content_type TEXT NOT NULL,
		size INTEGER NOT NULL,
		filename TEXT NOT NULL,
		file TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		expires_at INTEGER NOT NULL
	);
	CREATE INDEX media_expires ON media(expires_at);`,
	// The credit ledger (credits.go): every billable event once, written
	// in the transaction that makes its result durable. (request_id, item)
	// is unique, so that a write repeated after a crash bills nothing more.
	`CREATE TABLE credit_ledger (
		seq INTEGER PRIMARY KEY AUTOINCREMENT,
		team_id TEXT NOT NULL,
		request_id TEXT NOT NULL,
		item TEXT NOT NULL,
		kind TEXT NOT NULL,
		credits INTEGER NOT NULL,
		created_at INTEGER NOT NULL
	);
	CREATE UNIQUE INDEX credit_ledger_item ON credit_ledger(request_id, item);
	CREATE INDEX credit_ledger_team ON credit_ledger(team_id, created_at);`,
	// The bytes each request's browser contexts moved through the egress
	// proxy (egress.go), for its activity entry.
	`CREATE TABLE egress_usage (
		seq INTEGER PRIMARY KEY AUTOINCREMENT,
		team_id TEXT NOT NULL,
		request_id TEXT NOT NULL,
		bytes_in INTEGER NOT NULL,
		bytes_out INTEGER NOT NULL,
		created_at INTEGER NOT NULL
	);
	CREATE INDEX egress_usage_request ON egress_usage(team_id, request_id);
	CREATE INDEX egress_usage_created ON egress_usage(created_at);`,
	// Several nodes on one database (nodes.go): each job is held by a node
	// under a lease, each session belongs to the node running its browser,
	// and each node says it is alive.
	`ALTER TABLE jobs ADD COLUMN node TEXT NOT NULL DEFAULT '';
	ALTER TABLE jobs ADD COLUMN lease_until INTEGER NOT NULL DEFAULT 0;
	CREATE INDEX jobs_lease ON jobs(status, lease_until);
	ALTER TABLE browser_sessions ADD COLUMN node TEXT NOT NULL DEFAULT '';
	CREATE INDEX browser_sessions_node ON browser_sessions(status, node);
	ALTER TABLE extracts ADD COLUMN node TEXT NOT NULL DEFAULT '';
	ALTER TABLE extracts ADD COLUMN lease_until INTEGER NOT NULL DEFAULT 0;
	CREATE TABLE nodes (
		id TEXT PRIMARY KEY,
		started_at INTEGER NOT NULL,
		seen_at INTEGER NOT NULL,
		index_seq INTEGER NOT NULL DEFAULT 0,
		url TEXT NOT NULL DEFAULT ''
	);
	CREATE TABLE node_counts (
		node TEXT NOT NULL,
		kind TEXT NOT NULL,
		key TEXT NOT NULL,
		held INTEGER NOT NULL,
		PRIMARY KEY (node, kind, key)
	);`,
	// PostgreSQL's job change notices (notices.go); one node alone needs none.
	`SELECT 1`,
	// PostgreSQL's LZ4 compression of pages and documents; SQLite stores
	// them as they are.
	`SELECT 1`,
	// PostgreSQL's search index; on SQLite the index is bleve's files.
	`SELECT 1`,
	// Politeness per host across nodes (places.go).
	`CREATE TABLE host_places (
		host TEXT NOT NULL,
		node TEXT NOT NULL,
		held INTEGER NOT NULL,
		until INTEGER NOT NULL,
		PRIMARY KEY (host, node)
	);`,
	// Team limits count places too (places.go), no longer what each node
	// published at its heartbeat.
	`DROP TABLE node_counts;`,
	// The row Health writes to learn whether a full store has room again.
	`CREATE TABLE store_probe (id INTEGER PRIMARY KEY, at INTEGER NOT NULL);`,
	// Session recordings (recordings.go): a chunk of a tab's events per
	// row, its bytes here or, with an object store, there.
	`ALTER TABLE browser_sessions ADD COLUMN recording INTEGER NOT NULL DEFAULT 0;
	CREATE TABLE recording_chunks (
		session_id TEXT NOT NULL,
		page_id TEXT NOT NULL,
		seq INTEGER NOT NULL,
		team_id TEXT NOT NULL,
		url TEXT NOT NULL,
		title TEXT NOT NULL,
		first_at INTEGER NOT NULL,
		last_at INTEGER NOT NULL,
		events INTEGER NOT NULL,
		bytes INTEGER NOT NULL,
		data BLOB,
		object TEXT NOT NULL DEFAULT '',
		expires_at INTEGER NOT NULL,
		PRIMARY KEY (session_id, page_id, seq)
	);
	CREATE INDEX recording_chunks_expires ON recording_chunks(expires_at);`,
	// Monitors (monitors.go): the definitions and schedules, their checks,
	// each check's pages, and the last version of each page a monitor saw.
	`CREATE TABLE monitors (
		id TEXT PRIMARY KEY,
		team_id TEXT NOT NULL,
		name TEXT NOT NULL,
		status TEXT NOT NULL,
		spec BLOB NOT NULL,
		next_run_at INTEGER NOT NULL,
		last_run_at INTEGER NOT NULL,
		current_check TEXT NOT NULL,
		summary BLOB,
		failures INTEGER NOT NULL,
		created_at INTEGER NOT NULL,
		updated_at INTEGER NOT NULL
	);
	CREATE INDEX monitors_team ON monitors(team_id, created_at);
	CREATE INDEX monitors_due ON monitors(status, next_run_at);
	CREATE TABLE monitor_checks (
		id TEXT PRIMARY KEY,
		monitor_id TEXT NOT NULL,
		team_id TEXT NOT NULL,
		status TEXT NOT NULL,
		trigger_kind TEXT NOT NULL,
		scheduled_for INTEGER NOT NULL,
		late INTEGER NOT NULL,
		started_at INTEGER NOT NULL,
		finished_at INTEGER NOT NULL,
		summary BLOB,
		detail BLOB,
		owner TEXT NOT NULL,
		lease_until INTEGER NOT NULL,
		created_at INTEGER NOT NULL,
		updated_at INTEGER NOT NULL,
		expires_at INTEGER NOT NULL
	);
	CREATE INDEX monitor_checks_monitor ON monitor_checks(monitor_id, created_at);
	CREATE INDEX monitor_checks_open ON monitor_checks(status, lease_until);
	CREATE INDEX monitor_checks_expires ON monitor_checks(expires_at);
	CREATE TABLE monitor_pages (
		check_id TEXT NOT NULL,
		seq INTEGER NOT NULL,
		status TEXT NOT NULL,
		body BLOB NOT NULL,
		PRIMARY KEY (check_id, seq)
	);
	CREATE TABLE monitor_snapshots (
		monitor_id TEXT NOT NULL,
		target_id TEXT NOT NULL,
		url_key TEXT NOT NULL,
		url TEXT NOT NULL,
		markdown TEXT NOT NULL,
		status_code INTEGER NOT NULL,
		check_id TEXT NOT NULL,
		scraped_at INTEGER NOT NULL,
		PRIMARY KEY (monitor_id, target_id, url_key)
	);`,
}

// Open opens (creating if needed) the SQLite database at path and migrates
// it.
func Open(ctx context.Context, path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating database directory: %w", err)
	}
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"
	f := &faults{room: roomIn(filepath.Dir(path))}
	conn, err := sqliteConnector(dsn, f)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	db := sql.OpenDB(conn)
	// SQLite has one writer; a small pool keeps readers concurrent while
	// busy_timeout serialises writers.
	db.SetMaxOpenConns(4)
	s := &Store{db: db, dialect: sqliteDialect, faults: f}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error {
	s.notices.close()
	return s.db.Close()
}

// migrate applies the migrations the database lacks, one transaction
// each.
func (s *Store) migrate(ctx context.Context) error {
	for {
		done, err := s.migrateOne(ctx)
		if err != nil || done {
			return err
		}
	}
}

// migrateOne applies the next migration the database lacks and reports
// whether there was none. The version is read inside the transaction,
// after the dialect's migration lock, so that of several services starting
// at once each migration is applied by one and skipped by the others.
func (s *Store) migrateOne(ctx context.Context) (done bool, err error) {
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if s.dialect.migrationLock != "" {
			if _, err := tx.ExecContext(ctx, s.dialect.migrationLock); err != nil {
				return fmt.Errorf("locking the schema: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)`); err != nil {
			return fmt.Errorf("creating schema_migrations: %w", err)
		}
		var have int
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
			return fmt.Errorf("reading schema version: %w", err)
		}
		if have >= len(s.dialect.migrations) {
			done = true
			return nil
		}
		v := have + 1
		if _, err := tx.ExecContext(ctx, s.dialect.migrations[v-1]); err != nil {
			return fmt.Errorf("applying migration %d: %w", v, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations(version) VALUES (?)`, v); err != nil {
			return fmt.Errorf("recording migration %d: %w", v, err)
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	return done, nil
}

func millis(t time.Time) int64 { return t.UnixMilli() }

func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// scanAll reads every row of rows with scan, and closes rows.
func scanAll[T any](rows *sql.Rows, scan func(row interface{ Scan(...any) error }) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// inTx runs f in a transaction, committed when f returns nil.
func (s *Store) inTx(ctx context.Context, f func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}
