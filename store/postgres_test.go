package store

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRebind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		{"none", `SELECT 1`, `SELECT 1`},
		{"in order", `SELECT a FROM t WHERE b = ? AND c IN (?, ?)`, `SELECT a FROM t WHERE b = $1 AND c IN ($2, $3)`},
		{"quoted", `SELECT '?', "?x", 'it''s ?' FROM t WHERE a = ?`, `SELECT '?', "?x", 'it''s ?' FROM t WHERE a = $1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, rebind(tc.in))
		})
	}
}

// Services that start at once against an empty PostgreSQL database all
// come up, and the schema is migrated once: each version recorded once,
// every table there.
func TestPostgresMigratesOnceWhenServicesRace(t *testing.T) {
	if os.Getenv(testDatabaseURL) == "" {
		t.Skip(testDatabaseURL + " is not set: no PostgreSQL server to race on (scripts/pgtest.sh starts one)")
	}
	t.Parallel()
	ctx := context.Background()
	u := newPostgresDatabase(t)
	const services = 6
	stores := make([]*Store, services)
	errs := make([]error, services)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range services {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = OpenURL(ctx, u)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "service %d", i)
		defer stores[i].Close()
	}
	var rows, versions, newest int
	require.NoError(t, stores[0].db.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT version), MAX(version)
		FROM schema_migrations`).Scan(&rows, &versions, &newest))
	require.Equal(t, len(postgresMigrations), rows, "migrations recorded")
	require.Equal(t, len(postgresMigrations), versions, "distinct versions recorded")
	require.Equal(t, len(postgresMigrations), newest, "the newest version")
	var tables int
	require.NoError(t, stores[0].db.QueryRow(`SELECT COUNT(*) FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_name IN ('teams', 'page_cache', 'jobs', 'egress_usage')`).
		Scan(&tables))
	require.Equal(t, 4, tables, "tables of the first and last parts of the schema")
	// Each service works on the shared schema.
	for i, s := range stores {
		require.NoError(t, s.EnsureTeam(ctx, "acme"), "service %d", i)
	}
}
