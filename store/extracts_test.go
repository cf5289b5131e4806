package store

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestExtractRecordLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTemp(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	e := Extract{ID: "x1", Team: "acme", Status: "processing", Request: []byte(`{"urls":["https://a.test/"]}`),
		CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	require.NoError(t, s.CreateExtract(ctx, e))

	_, err := s.Extract(ctx, "globex", "x1")
	require.ErrorIs(t, err, ErrNotFound, "another team's extract")
	running, err := s.ClaimExtracts(ctx, true, now, now.Add(time.Minute))
	require.NoError(t, err)
	require.Len(t, running, 1)
	require.JSONEq(t, `[]`, string(running[0].Sources))

	require.NoError(t, s.SetExtractBatch(ctx, "x1", "b1", "1 page was left out"))
	got, err := s.Extract(ctx, "acme", "x1")
	require.NoError(t, err)
	require.Equal(t, "b1", got.BatchID)
	require.Equal(t, "1 page was left out", got.Warning)
	require.Nil(t, got.Result)

	done := Extract{ID: "x1", Status: "completed", Result: []byte(`{"a":1}`), Sources: json.RawMessage(`{"a":["https://a.test/"]}`),
		Warning: "w", Credits: 5, ExpiresAt: now.Add(-time.Minute)}
	require.NoError(t, s.FinishExtract(ctx, done))
	require.ErrorIs(t, s.FinishExtract(ctx, done), ErrNotFound, "an extract ends once")
	require.ErrorIs(t, s.SetExtractBatch(ctx, "x1", "b2", ""), ErrNotFound, "an ended extract keeps its batch")
	_, err = s.Extract(ctx, "acme", "x1")
	require.ErrorIs(t, err, ErrNotFound, "an expired extract")

	require.NoError(t, s.PruneExtracts(ctx, now))
	var n int
	require.NoError(t, s.db.QueryRow(`SELECT COUNT(*) FROM extracts`).Scan(&n))
	require.Equal(t, 0, n, "pruned")
}
