package store

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMediaRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTemp(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	live := Media{ID: "m1", Team: "acme", Kind: "audio", ContentType: "audio/mpeg", Size: 12345,
		FileName: "tone.mp3", File: "m1.mp3", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	expired := Media{ID: "m2", Team: "acme", Kind: "video", ContentType: "video/mp4", Size: 99,
		FileName: "bars.mp4", File: "m2.mp4", CreatedAt: now.Add(-2 * time.Hour), ExpiresAt: now.Add(-time.Hour)}
	require.NoError(t, s.PutMedia(ctx, live))
	require.NoError(t, s.PutMedia(ctx, expired))
	require.Error(t, s.PutMedia(ctx, live), "an id is recorded once")

	got, err := s.Media(ctx, "acme", "m1")
	require.NoError(t, err)
	require.Equal(t, live, got)
	_, err = s.Media(ctx, "globex", "m1")
	require.ErrorIs(t, err, ErrNotFound, "another team's media")
	_, err = s.Media(ctx, "acme", "nope")
	require.ErrorIs(t, err, ErrNotFound, "an unknown id")
	_, err = s.Media(ctx, "acme", "m2")
	require.ErrorIs(t, err, ErrNotFound, "expired media, not yet pruned")

	files, err := s.PruneMedia(ctx, now)
	require.NoError(t, err)
	require.Equal(t, []string{"m2.mp4"}, files, "the expired record's file, for the caller to delete")
	files, err = s.PruneMedia(ctx, now)
	require.NoError(t, err)
	require.Empty(t, files, "pruned once")
	_, err = s.Media(ctx, "acme", "m1")
	require.NoError(t, err, "live media survives the prune")
	files, err = s.PruneMedia(ctx, now.Add(2*time.Hour))
	require.NoError(t, err)
	require.Equal(t, []string{"m1.mp3"}, files)
}
