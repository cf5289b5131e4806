package store

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/test/disktest"
	"github.com/trawler-dev/trawler/test/relay"
)

// A store whose disk fills says so: the write fails with a *FaultError
// (Full), nothing of the transaction is kept (the result with its charge,
// or neither), Health reports the state, and once there is room again
// the same write succeeds and Health says ok.
func TestStoreFullDisk(t *testing.T) {
	t.Parallel()
	dir := disktest.Small(t, 8<<20)
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(dir, "trawler.db"))
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, StateOK, s.Health(ctx).State)

	free := disktest.Fill(t, dir)
	now := time.Now()
	doc := []byte(`"` + rand.Text() + fmt.Sprintf("%0*d", 256<<10, 0) + `"`)
	var fault *FaultError
	var failed []string
	for i := range 8 {
		id := fmt.Sprintf("s%d", i)
		err := s.PutScrape(ctx, id, "t", now, now.Add(time.Hour), doc, &Charge{Team: "t", Request: id, Kind: CreditScrape, Credits: 1, At: now})
		if err == nil {
			// The first may still fit in space SQLite had claimed before.
			continue
		}
		require.ErrorAs(t, err, &fault, "a full disk is a store fault: %v", err)
		require.True(t, fault.Full, "a full disk is reported as full: %v", err)
		failed = append(failed, id)
	}
	require.NotEmpty(t, failed, "no write failed on a full disk")
	h := s.Health(ctx)
	assert.Equal(t, StateFull, h.State)
	assert.Positive(t, h.Full)
	for _, id := range failed {
		_, err := s.Scrape(ctx, "t", id)
		assert.ErrorIs(t, err, ErrNotFound, "a scrape that failed to store is not half there")
	}
	used, err := s.CreditsUsed(ctx, "t", now.Add(-time.Minute), now.Add(time.Minute))
	require.NoError(t, err, "reads work on a full disk")
	assert.Equal(t, int64(8-len(failed)), used, "a charge is kept exactly with its stored result")

	free()
	assert.Eventually(t, func() bool { return s.Health(ctx).State == StateOK }, 10*time.Second, 500*time.Millisecond,
		"the store reports ok once there is room")
	for _, id := range failed {
		require.NoError(t, s.PutScrape(ctx, id, "t", now, now.Add(time.Hour), doc, &Charge{Team: "t", Request: id, Kind: CreditScrape, Credits: 1, At: now}))
	}
	used, err = s.CreditsUsed(ctx, "t", now.Add(-time.Minute), now.Add(time.Minute))
	require.NoError(t, err)
	assert.Equal(t, int64(8), used)
}

// A PostgreSQL store whose database cannot be reached fails with a
// *FaultError (unavailable), reports it, and recovers when the database
// is back. The database is reached through a relay the test cuts.
func TestStoreUnavailableDatabase(t *testing.T) {
	if os.Getenv(testDatabaseURL) == "" {
		t.Skip("needs PostgreSQL (" + testDatabaseURL + ", see scripts/pgtest.sh)")
	}
	t.Parallel()
	u := newPostgresDatabase(t)
	host, withHost, ok := cutHost(u)
	require.True(t, ok, "reading the host of %s", u)
	relay := relay.Start(t, host)
	ctx := context.Background()
	s, err := OpenURL(ctx, withHost(relay.Addr))
	require.NoError(t, err)
	defer s.Close()
	now := time.Now()
	require.NoError(t, s.AddCharge(ctx, Charge{Team: "t", Request: "r0", Kind: CreditScrape, Credits: 1, At: now}))

	relay.Cut()
	err = s.AddCharge(ctx, Charge{Team: "t", Request: "r1", Kind: CreditScrape, Credits: 1, At: now})
	var fault *FaultError
	require.ErrorAs(t, err, &fault, "a lost database is a store fault: %v", err)
	assert.False(t, fault.Full)
	assert.Equal(t, StateUnavailable, s.Health(ctx).State)

	relay.Restore()
	assert.Eventually(t, func() bool { return s.Health(ctx).State == StateOK }, 15*time.Second, 500*time.Millisecond)
	require.NoError(t, s.AddCharge(ctx, Charge{Team: "t", Request: "r1", Kind: CreditScrape, Credits: 1, At: now}))
}

// cutHost splits a database URL into its host:port and a function that
// puts another host:port in its place.
func cutHost(dbURL string) (string, func(string) string, bool) {
	u, err := url.Parse(dbURL)
	if err != nil || u.Host == "" {
		return "", nil, false
	}
	return u.Host, func(h string) string {
		v := *u
		v.Host = h
		return v.String()
	}, true
}
