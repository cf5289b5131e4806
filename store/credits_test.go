package store

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every writer of results writes its charge with the result, once: a job
// page recorded twice, a scrape's charge written again, an extract or a
// session ended twice each bill once, and each team sees only its own.
func TestCreditLedger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTemp(t)
	now := time.Now()
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	used := func(team string) int64 {
		t.Helper()
		n, err := s.CreditsUsed(ctx, team, month, month.AddDate(0, 1, 0))
		require.NoError(t, err)
		return n
	}

	// A job's page: its charge is the job's, once.
	require.NoError(t, s.CreateJob(ctx, Job{ID: "j1", Team: "acme", Kind: "batch", Status: "scraping", Request: []byte(`{}`),
		CreatedAt: now, ExpiresAt: now.Add(time.Hour)}, []JobURL{{Key: "a", URL: "http://a.test/", Seq: 1, State: URLQueued}}, nil))
	page := JobURL{Key: "a", URL: "http://a.test/", State: URLDone, Document: []byte(`{}`)}
	for range 2 {
		_, err := s.FinishJobURL(ctx, "j1", page, true, nil, 3, nil)
		require.NoError(t, err)
	}
	j, err := s.Job(ctx, "acme", "batch", "j1")
	require.NoError(t, err)
	assert.Equal(t, 3, j.Credits, "the job's credits count the page once")
	charges, err := s.Charges(ctx, "j1")
	require.NoError(t, err)
	require.Len(t, charges, 1, "the page's charges")
	assert.Equal(t, Charge{Team: "acme", Request: "j1", Item: "a", Kind: CreditBatch, Credits: 3, At: charges[0].At}, charges[0])

	// A stored scrape and its charge, in one transaction; the charge again
	// alone bills nothing more.
	scrape := Charge{Team: "acme", Request: "s1", Kind: CreditScrape, Credits: 5}
	require.NoError(t, s.PutScrape(ctx, "s1", "acme", now, now.Add(time.Hour), []byte(`{}`), &scrape))
	require.NoError(t, s.AddCharge(ctx, scrape))
	// A charge of no credits is not written.
	require.NoError(t, s.AddCharge(ctx, Charge{Team: "acme", Request: "free", Kind: CreditSearch}))

	// An extract bills what the extraction adds, once.
	require.NoError(t, s.CreateExtract(ctx, Extract{ID: "x1", Team: "acme", Status: "processing", Request: []byte(`{}`),
		CreatedAt: now, ExpiresAt: now.Add(time.Hour)}))
	done := Extract{ID: "x1", Status: "completed", Credits: 7, Charged: 4, ExpiresAt: now.Add(time.Hour)}
	require.NoError(t, s.FinishExtract(ctx, done))
	require.ErrorIs(t, s.FinishExtract(ctx, done), ErrNotFound, "second end")

	// A session is billed when it ends, once.
	require.NoError(t, s.InsertSession(ctx, Session{ID: "b1", Team: "globex", Status: "active", CreatedAt: now,
		ExpiresAt: now.Add(time.Hour), LastActivity: now}))
	require.NoError(t, s.EndSession(ctx, "b1", now, now, "deleted", 2))
	require.NoError(t, s.EndSession(ctx, "b1", now, now, "deleted", 2))

	assert.EqualValues(t, 3+5+4, used("acme"), "acme's credits this month")
	assert.EqualValues(t, 2, used("globex"), "globex's credits this month")
	assert.EqualValues(t, 0, used("initech"), "a team with no charges")

	history, err := s.CreditHistory(ctx, "acme")
	require.NoError(t, err)
	assert.Equal(t, []CreditMonth{{Start: month, Credits: 12}}, history, "acme's history")

	last, err := s.LastCharge(ctx, "acme")
	require.NoError(t, err)
	assert.WithinDuration(t, now, last, time.Second, "acme's last charge")
	last, err = s.LastCharge(ctx, "globex")
	require.NoError(t, err)
	assert.True(t, last.IsZero(), "browser time is no content: %v", last)
}
