package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// testDatabaseURL names a PostgreSQL server the tests run on instead of
// SQLite (scripts/pgtest.sh starts a throwaway one); each test gets a
// database of its own there, created from template1 and dropped after it.
const testDatabaseURL = "TRAWLER_TEST_DATABASE_URL"

// testDB returns a function that opens one fresh database of t's, again
// each time it is called (to test a reopen): on PostgreSQL when
// TRAWLER_TEST_DATABASE_URL is set, else SQLite in t's temporary directory.
func testDB(t *testing.T) func(ctx context.Context) (*Store, error) {
	t.Helper()
	if os.Getenv(testDatabaseURL) == "" {
		path := filepath.Join(t.TempDir(), "t.db")
		return func(ctx context.Context) (*Store, error) { return Open(ctx, path) }
	}
	u := newPostgresDatabase(t)
	return func(ctx context.Context) (*Store, error) { return OpenURL(ctx, u) }
}

// openTemp opens a fresh store for t (see testDB), closed when t ends.
func openTemp(t *testing.T) *Store {
	t.Helper()
	s, err := testDB(t)(context.Background())
	require.NoError(t, err)
	t.Logf("store on %s", s.dialect.name)
	t.Cleanup(func() { s.Close() })
	return s
}

// postgresAdmin is the connection to TRAWLER_TEST_DATABASE_URL's own
// database that creates and drops the tests' databases.
var postgresAdmin = sync.OnceValues(func() (*sql.DB, error) {
	return sql.Open("pgx", os.Getenv(testDatabaseURL))
})

// newPostgresDatabase creates an empty database for t on the test server,
// dropped when t ends, and returns its URL.
func newPostgresDatabase(t *testing.T) string {
	t.Helper()
	admin, err := postgresAdmin()
	require.NoError(t, err, "connecting to %s", testDatabaseURL)
	u, err := url.Parse(os.Getenv(testDatabaseURL))
	require.NoError(t, err, "reading %s", testDatabaseURL)
	name := "trawler_test_" + strings.ToLower(rand.Text())
	_, err = admin.Exec(`CREATE DATABASE ` + name)
	require.NoError(t, err, "creating database %s", name)
	// Registered first, so run last: after the test's stores are closed.
	t.Cleanup(func() {
		if _, err := admin.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`); err != nil {
			t.Errorf("dropping database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}
