package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// OpenURL opens the PostgreSQL database at url (postgres://...) and
// migrates it; services that start at once against one database migrate
// it one at a time.
func OpenURL(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		// pgx's message repeats the URL with its password redacted.
		return nil, fmt.Errorf("reading the database URL: %w", err)
	}
	where := fmt.Sprintf("%s/%s", cfg.Host, cfg.Database)
	f := &faults{}
	db := sql.OpenDB(observedConnector{rebindConnector{stdlib.GetConnector(*cfg)}, f})
	// Every node holds up to this many connections; PostgreSQL allows 100
	// by default across all of them.
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(4)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connecting to the database at %s: %w", where, err)
	}
	s := &Store{db: db, dialect: postgresDialect, notices: newNotices(cfg), faults: f}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("migrating the database at %s: %w", where, err)
	}
	return s, nil
}

var postgresDialect = &dialect{
	name:       "postgres",
	migrations: postgresMigrations,
	// One lock for every node that shares the database; a transaction
	// lock is released by its commit or rollback, whatever happens to the
	// node.
	migrationLock: `SELECT pg_advisory_xact_lock(hashtext('trawler.store.migrations'))`,
	// is_called is false until the sequence hands out its first value.
	lastIndexSeq: `SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM index_log_seq`,
	creditMonth:  `to_char(to_timestamp(created_at / 1000) AT TIME ZONE 'UTC', 'YYYY-MM')`,
	lockJob:      `SELECT 1 FROM jobs WHERE id = ? FOR NO KEY UPDATE`,
	lockPlace:    `SELECT pg_advisory_xact_lock(hashtext('trawler.host ' || ?))`,
	indexLogLock: `SELECT pg_advisory_xact_lock(hashtext('trawler.store.index_log'))`,
	uniqueViolation: func(err error) bool {
		var pgErr *pgconn.PgError
		return errors.As(err, &pgErr) && pgErr.Code == "23505" // unique_violation
	},
}

// postgresMigrations are PostgreSQL's, applied like SQLite's migrations
// (each once, never edited once released). The first is SQLite's schema as
// its migrations left it: INTEGER is BIGINT (SQLite's integers are 64-bit),
// BLOB is BYTEA, the flags SQLite keeps as 0 or 1 are BOOLEAN, AUTOINCREMENT
// is an identity column. page_cache has a rowid column, which SQLite gives
// every table, for Pages to walk it by.
var postgresMigrations = []string{
	`CREATE TABLE teams (
		id TEXT PRIMARY KEY,
		created_at BIGINT NOT NULL
	);
	CREATE TABLE api_keys (
		key_hash BYTEA PRIMARY KEY,
		team_id TEXT NOT NULL REFERENCES teams(id),
		created_at BIGINT NOT NULL
	);
	CREATE TABLE browser_sessions (
		id TEXT PRIMARY KEY,
		team_id TEXT NOT NULL,
		status TEXT NOT NULL,
		stream_web_view BOOLEAN NOT NULL,
		ttl_s BIGINT NOT NULL,
		activity_ttl_s BIGINT NOT NULL,
		cdp_token TEXT NOT NULL,
		view_token TEXT NOT NULL,
		interact_token TEXT NOT NULL,
		created_at BIGINT NOT NULL,
		expires_at BIGINT NOT NULL,
		last_activity BIGINT NOT NULL,
		destroyed_at BIGINT,
		end_reason TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX browser_sessions_team ON browser_sessions(team_id, status, created_at);
	CREATE TABLE activity (
		id TEXT NOT NULL,
		team_id TEXT NOT NULL,
		endpoint TEXT NOT NULL,
		api_version TEXT NOT NULL,
		created_at BIGINT NOT NULL,
		target TEXT NOT NULL,
		PRIMARY KEY (team_id, created_at, id)
	);
	CREATE TABLE page_cache (
		rowid BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
		team_id TEXT NOT NULL,
		key TEXT NOT NULL,
		url TEXT NOT NULL,
		created_at BIGINT NOT NULL,
		status_code BIGINT NOT NULL,
		final_url TEXT NOT NULL,
		content_type TEXT NOT NULL,
		body BYTEA NOT NULL,
		screenshot TEXT NOT NULL DEFAULT '',
		engine TEXT NOT NULL DEFAULT '',
		private BOOLEAN NOT NULL,
		PRIMARY KEY (team_id, key)
	);
	CREATE INDEX page_cache_created ON page_cache(created_at);
	CREATE INDEX page_cache_key ON page_cache(key, created_at);
	CREATE INDEX page_cache_final ON page_cache(team_id, final_url, created_at);
	CREATE TABLE scrapes (
		id TEXT PRIMARY KEY,
		team_id TEXT NOT NULL,
		created_at BIGINT NOT NULL,
		expires_at BIGINT NOT NULL,
		document BYTEA NOT NULL
	);
	CREATE INDEX scrapes_expires ON scrapes(expires_at);
	CREATE TABLE jobs (
		id TEXT PRIMARY KEY,
		team_id TEXT NOT NULL,
		kind TEXT NOT NULL,
		status TEXT NOT NULL,
		url TEXT NOT NULL,
		request BYTEA NOT NULL,
		idempotency_key TEXT NOT NULL DEFAULT '',
		created_at BIGINT NOT NULL,
		completed_at BIGINT,
		expires_at BIGINT NOT NULL,
		credits BIGINT NOT NULL DEFAULT 0,
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
		depth BIGINT NOT NULL,
		seq BIGINT NOT NULL,
		state TEXT NOT NULL,
		done_seq BIGINT,
		document BYTEA,
		error_code TEXT NOT NULL DEFAULT '',
		error TEXT NOT NULL DEFAULT '',
		updated_at BIGINT NOT NULL,
		PRIMARY KEY (job_id, url_key)
	);
	CREATE INDEX job_urls_state ON job_urls(job_id, state, seq);
	CREATE INDEX job_urls_done ON job_urls(job_id, done_seq) WHERE done_seq IS NOT NULL;
	CREATE TABLE webhook_events (
		id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
		job_id TEXT NOT NULL,
		team_id TEXT NOT NULL,
		target BYTEA NOT NULL,
		payload BYTEA NOT NULL,
		state TEXT NOT NULL,
		attempts BIGINT NOT NULL DEFAULT 0,
		next_at BIGINT NOT NULL,
		last_error TEXT NOT NULL DEFAULT '',
		created_at BIGINT NOT NULL
	);
	CREATE INDEX webhook_events_pending ON webhook_events(state, job_id, id);
	CREATE TABLE index_log (
		seq BIGINT GENERATED BY DEFAULT AS IDENTITY (SEQUENCE NAME index_log_seq) PRIMARY KEY,
		team_id TEXT NOT NULL,
		key TEXT NOT NULL,
		final_url TEXT NOT NULL,
		deleted BOOLEAN NOT NULL
	);
	CREATE TABLE model_usage (
		seq BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
		team_id TEXT NOT NULL,
		request_id TEXT NOT NULL,
		purpose TEXT NOT NULL,
		model TEXT NOT NULL,
		input_tokens BIGINT NOT NULL,
		output_tokens BIGINT NOT NULL,
		attempts BIGINT NOT NULL,
		duration_ms BIGINT NOT NULL,
		created_at BIGINT NOT NULL,
		error TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX model_usage_team ON model_usage(team_id, created_at);
	CREATE INDEX model_usage_request ON model_usage(team_id, request_id);
	CREATE TABLE extracts (
		id TEXT PRIMARY KEY,
		team_id TEXT NOT NULL,
		status TEXT NOT NULL,
		request BYTEA NOT NULL,
		batch_id TEXT NOT NULL DEFAULT '',
		result BYTEA,
		sources TEXT NOT NULL DEFAULT '[]',
		warning TEXT NOT NULL DEFAULT '',
		error TEXT NOT NULL DEFAULT '',
		created_at BIGINT NOT NULL,
		expires_at BIGINT NOT NULL,
		credits BIGINT NOT NULL DEFAULT 0
	);
	CREATE INDEX extracts_status ON extracts(status);
	CREATE INDEX extracts_expires ON extracts(expires_at);
	CREATE TABLE page_versions (
		seq BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
		team_id TEXT NOT NULL,
		url_key TEXT NOT NULL,
		tag TEXT NOT NULL,
		scraped_at BIGINT NOT NULL,
		status_code BIGINT NOT NULL,
		markdown BYTEA NOT NULL,
		extraction_key TEXT NOT NULL DEFAULT '',
		extraction BYTEA
	);
	CREATE INDEX page_versions_page ON page_versions(team_id, url_key, tag, scraped_at);
	CREATE INDEX page_versions_scraped ON page_versions(scraped_at);
	CREATE TABLE media (
		id TEXT PRIMARY KEY,
		team_id TEXT NOT NULL,
		kind TEXT NOT NULL,
		content_type TEXT NOT NULL,
		size BIGINT NOT NULL,
		filename TEXT NOT NULL,
		file TEXT NOT NULL,
		created_at BIGINT NOT NULL,
		expires_at BIGINT NOT NULL
	);
	CREATE INDEX media_expires ON media(expires_at);
	CREATE TABLE credit_ledger (
		seq BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
		team_id TEXT NOT NULL,
		request_id TEXT NOT NULL,
		item TEXT NOT NULL,
		kind TEXT NOT NULL,
		credits BIGINT NOT NULL,
		created_at BIGINT NOT NULL
	);
	CREATE UNIQUE INDEX credit_ledger_item ON credit_ledger(request_id, item);
	CREATE INDEX credit_ledger_team ON credit_ledger(team_id, created_at);
	CREATE TABLE egress_usage (
		seq BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
		team_id TEXT NOT NULL,
		request_id TEXT NOT NULL,
		bytes_in BIGINT NOT NULL,
		bytes_out BIGINT NOT NULL,
		created_at BIGINT NOT NULL
	);
	CREATE INDEX egress_usage_request ON egress_usage(team_id, request_id);
	CREATE INDEX egress_usage_created ON egress_usage(created_at);`,
	`ALTER TABLE jobs ADD COLUMN node TEXT NOT NULL DEFAULT '';
	ALTER TABLE jobs ADD COLUMN lease_until BIGINT NOT NULL DEFAULT 0;
	CREATE INDEX jobs_lease ON jobs(status, lease_until);
	ALTER TABLE browser_sessions ADD COLUMN node TEXT NOT NULL DEFAULT '';
	CREATE INDEX browser_sessions_node ON browser_sessions(status, node);
	ALTER TABLE extracts ADD COLUMN node TEXT NOT NULL DEFAULT '';
	ALTER TABLE extracts ADD COLUMN lease_until BIGINT NOT NULL DEFAULT 0;
	CREATE TABLE nodes (
		id TEXT PRIMARY KEY,
		started_at BIGINT NOT NULL,
		seen_at BIGINT NOT NULL,
		index_seq BIGINT NOT NULL DEFAULT 0,
		url TEXT NOT NULL DEFAULT ''
	);
	CREATE TABLE node_counts (
		node TEXT NOT NULL,
		kind TEXT NOT NULL,
		key TEXT NOT NULL,
		held BIGINT NOT NULL,
		PRIMARY KEY (node, kind, key)
	);`,
	// Job change notices (notices.go): a page with a document recorded, a
	// job ended. NOTIFY delivers them at the commit, once per job and
	// transaction.
	`CREATE FUNCTION trawler_job_changed() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		IF TG_TABLE_NAME = 'jobs' THEN
			PERFORM pg_notify('` + jobsChannel + `', NEW.id);
		ELSE
			PERFORM pg_notify('` + jobsChannel + `', NEW.job_id);
		END IF;
		RETURN NULL;
	END $$;
	CREATE TRIGGER job_urls_done AFTER UPDATE OF done_seq ON job_urls FOR EACH ROW
		WHEN (NEW.done_seq IS NOT NULL) EXECUTE FUNCTION trawler_job_changed();
	CREATE TRIGGER jobs_ended AFTER UPDATE OF status ON jobs FOR EACH ROW
		WHEN (OLD.status = 'scraping' AND NEW.status <> 'scraping') EXECUTE FUNCTION trawler_job_changed();`,
	// Pages and documents are stored compressed with LZ4 rather than
	// PostgreSQL's default pglz: a crawl writes a page's HTML and its
	// document (tens of KB each) at every page, and pglz spent most of the
	// server's CPU on them. (Values written before keep pglz; both read.)
	`ALTER TABLE page_cache ALTER COLUMN body SET COMPRESSION lz4;
	ALTER TABLE scrapes ALTER COLUMN document SET COMPRESSION lz4;
	ALTER TABLE job_urls ALTER COLUMN document SET COMPRESSION lz4;
	ALTER TABLE webhook_events ALTER COLUMN payload SET COMPRESSION lz4;
	ALTER TABLE extracts ALTER COLUMN result SET COMPRESSION lz4;
	ALTER TABLE page_versions ALTER COLUMN markdown SET COMPRESSION lz4;`,
	// The search index (package index, pg.go): a row per page and per
	// image of a page, its words as a tsvector of the index's own analysis
	// (each prefixed with its field's letter, A-D), its pairs of words as
	// another, and each word's count per field (JSON), which scoring reads.
	`CREATE TABLE search_docs (
		team_id TEXT NOT NULL,
		id TEXT NOT NULL,
		kind TEXT NOT NULL,
		page_url TEXT NOT NULL,
		url TEXT NOT NULL,
		hosts TEXT[] NOT NULL,
		ext TEXT[] NOT NULL,
		categories TEXT[] NOT NULL,
		link_hosts TEXT[] NOT NULL,
		title TEXT NOT NULL,
		description TEXT NOT NULL,
		body TEXT NOT NULL,
		image_url TEXT NOT NULL,
		alt TEXT NOT NULL,
		width BIGINT NOT NULL,
		height BIGINT NOT NULL,
		fetched BIGINT NOT NULL,
		published BIGINT,
		date BIGINT NOT NULL,
		private BOOLEAN NOT NULL,
		lengths INTEGER[] NOT NULL,
		terms TSVECTOR NOT NULL,
		pairs TSVECTOR NOT NULL,
		term_counts JSONB NOT NULL,
		src_seq BIGINT NOT NULL,
		PRIMARY KEY (team_id, id)
	);
	ALTER TABLE search_docs ALTER COLUMN body SET COMPRESSION lz4;
	ALTER TABLE search_docs ALTER COLUMN term_counts SET COMPRESSION lz4;
	CREATE INDEX search_docs_page ON search_docs(team_id, page_url);
	CREATE INDEX search_docs_kind ON search_docs(team_id, kind);
	CREATE INDEX search_docs_terms ON search_docs USING GIN (terms);
	CREATE INDEX search_docs_pairs ON search_docs USING GIN (pairs);
	CREATE INDEX search_docs_hosts ON search_docs USING GIN (hosts);
	CREATE TABLE search_state (
		id INTEGER PRIMARY KEY,
		applied BIGINT NOT NULL
	);
	INSERT INTO search_state (id, applied) VALUES (1, 0);`,
	// Politeness per host across nodes (places.go).
	`CREATE TABLE host_places (
		host TEXT NOT NULL,
		node TEXT NOT NULL,
		held BIGINT NOT NULL,
		until BIGINT NOT NULL,
		PRIMARY KEY (host, node)
	);`,
	// Team limits count places too (places.go), no longer what each node
	// published at its heartbeat.
	`DROP TABLE node_counts;`,
	`CREATE TABLE store_probe (id BIGINT PRIMARY KEY, at BIGINT NOT NULL);`,
	`ALTER TABLE browser_sessions ADD COLUMN recording BOOLEAN NOT NULL DEFAULT FALSE;
	CREATE TABLE recording_chunks (
		session_id TEXT NOT NULL,
		page_id TEXT NOT NULL,
		seq BIGINT NOT NULL,
		team_id TEXT NOT NULL,
		url TEXT NOT NULL,
		title TEXT NOT NULL,
		first_at BIGINT NOT NULL,
		last_at BIGINT NOT NULL,
		events BIGINT NOT NULL,
		bytes BIGINT NOT NULL,
		data BYTEA,
		object TEXT NOT NULL DEFAULT '',
		expires_at BIGINT NOT NULL,
		PRIMARY KEY (session_id, page_id, seq)
	);
	CREATE INDEX recording_chunks_expires ON recording_chunks(expires_at);`,
	`CREATE TABLE monitors (
		id TEXT PRIMARY KEY,
		team_id TEXT NOT NULL,
		name TEXT NOT NULL,
		status TEXT NOT NULL,
		spec BYTEA NOT NULL,
		next_run_at BIGINT NOT NULL,
		last_run_at BIGINT NOT NULL,
		current_check TEXT NOT NULL,
		summary BYTEA,
		failures BIGINT NOT NULL,
		created_at BIGINT NOT NULL,
		updated_at BIGINT NOT NULL
	);
	CREATE INDEX monitors_team ON monitors(team_id, created_at);
	CREATE INDEX monitors_due ON monitors(status, next_run_at);
	CREATE TABLE monitor_checks (
		id TEXT PRIMARY KEY,
		monitor_id TEXT NOT NULL,
		team_id TEXT NOT NULL,
		status TEXT NOT NULL,
		trigger_kind TEXT NOT NULL,
		scheduled_for BIGINT NOT NULL,
		late BOOLEAN NOT NULL,
		started_at BIGINT NOT NULL,
		finished_at BIGINT NOT NULL,
		summary BYTEA,
		detail BYTEA,
		owner TEXT NOT NULL,
		lease_until BIGINT NOT NULL,
		created_at BIGINT NOT NULL,
		updated_at BIGINT NOT NULL,
		expires_at BIGINT NOT NULL
	);
	CREATE INDEX monitor_checks_monitor ON monitor_checks(monitor_id, created_at);
	CREATE INDEX monitor_checks_open ON monitor_checks(status, lease_until);
	CREATE INDEX monitor_checks_expires ON monitor_checks(expires_at);
	CREATE TABLE monitor_pages (
		check_id TEXT NOT NULL,
		seq BIGINT NOT NULL,
		status TEXT NOT NULL,
		body BYTEA NOT NULL,
		PRIMARY KEY (check_id, seq)
	);
	CREATE TABLE monitor_snapshots (
		monitor_id TEXT NOT NULL,
		target_id TEXT NOT NULL,
		url_key TEXT NOT NULL,
		url TEXT NOT NULL,
		markdown TEXT NOT NULL,
		status_code BIGINT NOT NULL,
		check_id TEXT NOT NULL,
		scraped_at BIGINT NOT NULL,
		PRIMARY KEY (monitor_id, target_id, url_key)
	);`,
}

// rebind turns the ? placeholders of query into PostgreSQL's $1, $2, ...;
// a ? inside a quoted string or identifier is left as it is.
func rebind(query string) string {
	if !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	var quote byte
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case quote != 0:
			// A doubled quote inside a string closes and reopens it, which
			// comes to the same.
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// rebindConnector makes pgx's database/sql connections take the store's
// queries as written, with ? placeholders: the one place they are turned
// into PostgreSQL's, for *sql.DB, *sql.Tx and prepared statements alike.
type rebindConnector struct{ driver.Connector }

func (c rebindConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &rebindConn{conn.(*stdlib.Conn)}, nil
}

// rebindConn is a pgx connection whose queries are rebound first. It
// implements what *stdlib.Conn implements, so that database/sql uses it
// the same way.
type rebindConn struct{ c *stdlib.Conn }

var (
	_ driver.Conn               = (*rebindConn)(nil)
	_ driver.ConnPrepareContext = (*rebindConn)(nil)
	_ driver.ConnBeginTx        = (*rebindConn)(nil)
	_ driver.ExecerContext      = (*rebindConn)(nil)
	_ driver.QueryerContext     = (*rebindConn)(nil)
	_ driver.Pinger             = (*rebindConn)(nil)
	_ driver.SessionResetter    = (*rebindConn)(nil)
	_ driver.NamedValueChecker  = (*rebindConn)(nil)
	_ driver.Validator          = (*rebindConn)(nil)
)

func (r *rebindConn) Prepare(query string) (driver.Stmt, error) {
	return r.c.Prepare(rebind(query))
}

func (r *rebindConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return r.c.PrepareContext(ctx, rebind(query))
}

func (r *rebindConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return r.c.ExecContext(ctx, rebind(query), args)
}

func (r *rebindConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return r.c.QueryContext(ctx, rebind(query), args)
}

func (r *rebindConn) Close() error { return r.c.Close() }

func (r *rebindConn) Begin() (driver.Tx, error) { return r.c.Begin() }

func (r *rebindConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return r.c.BeginTx(ctx, opts)
}

func (r *rebindConn) Ping(ctx context.Context) error { return r.c.Ping(ctx) }

func (r *rebindConn) ResetSession(ctx context.Context) error { return r.c.ResetSession(ctx) }

func (r *rebindConn) CheckNamedValue(v *driver.NamedValue) error { return r.c.CheckNamedValue(v) }

// IsValid says whether the connection is still open: one the server (or
// the network) closed is not reused, and its last error is read as the
// database lost (fault.go).
func (r *rebindConn) IsValid() bool { return !r.c.Conn().IsClosed() }

// Postgres returns the database when s is on PostgreSQL, nil on SQLite:
// for the search index, which lives in PostgreSQL's own tables
// (search_docs) when the store does.
func (s *Store) Postgres() *sql.DB {
	if s.dialect != postgresDialect {
		return nil
	}
	return s.db
}
