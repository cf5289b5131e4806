// Package pgdb gives tests databases of their own on the PostgreSQL server
// that scripts/pgtest.sh starts (TRAWLER_TEST_DATABASE_URL), so that the
// suites that run a whole service run it on PostgreSQL too (make
// test-postgres-all).
package pgdb

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"sync"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// Env names the test server's URL.
const Env = "TRAWLER_TEST_DATABASE_URL"

var (
	mu      sync.Mutex
	admin   *sql.DB
	created = map[string]string{}
)

// Enabled reports whether a test server is there.
func Enabled() bool { return os.Getenv(Env) != "" }

// For returns the URL of the database of key (a service's data directory,
// say: a service restarted on it finds its database again), creating it
// the first time and dropping it when t ends; "" when no test server is
// there.
func For(t testing.TB, key string) string {
	t.Helper()
	if !Enabled() {
		return ""
	}
	mu.Lock()
	defer mu.Unlock()
	if u, ok := created[key]; ok {
		return u
	}
	if admin == nil {
		db, err := sql.Open("pgx", os.Getenv(Env))
		if err != nil {
			t.Fatalf("connecting to %s: %v", Env, err)
		}
		admin = db
	}
	sum := sha256.Sum256([]byte(t.Name() + "\x00" + key))
	name := "trawler_t_" + hex.EncodeToString(sum[:10])
	if _, err := admin.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`); err != nil {
		t.Fatalf("dropping an old %s: %v", name, err)
	}
	if _, err := admin.Exec(`CREATE DATABASE ` + name); err != nil {
		t.Fatalf("creating database %s: %v", name, err)
	}
	u, err := url.Parse(os.Getenv(Env))
	if err != nil {
		t.Fatalf("reading %s: %v", Env, err)
	}
	u.Path = "/" + name
	created[key] = u.String()
	t.Cleanup(func() {
		mu.Lock()
		delete(created, key)
		mu.Unlock()
		admin.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`)
	})
	return u.String()
}
