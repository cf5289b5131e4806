package store

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Nodes starting at once against one database store the same keys
// together: none fails, and the stored set is theirs.
func TestReplaceKeysConcurrently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	open := testDB(t)
	first, err := open(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { first.Close() })

	var keys []KeyRecord
	for i := range 30 {
		keys = append(keys, KeyRecord{Hash: fmt.Appendf(nil, "hash-%02d", i), Team: fmt.Sprint("team-", i%4)})
	}
	// An earlier start stored a key since removed and another key under a
	// team it has since moved from.
	earlier := append([]KeyRecord{{Hash: []byte("removed"), Team: "team-0"}}, keys[:10]...)
	earlier[1] = KeyRecord{Hash: keys[0].Hash, Team: "team-old"}
	require.NoError(t, first.ReplaceKeys(ctx, earlier))

	var stores []*Store
	for range 6 {
		s, err := open(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		stores = append(stores, s)
	}
	begin := make(chan struct{})
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() {
			<-begin
			for range 3 {
				if err := s.ReplaceKeys(ctx, keys); err != nil {
					t.Errorf("store %d: %v", i, err)
					return
				}
			}
		})
	}
	close(begin)
	wg.Wait()
	got, err := first.Keys(ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, keys, got, "the keys after the concurrent starts")

	// A later start without a key removes it.
	require.NoError(t, stores[0].ReplaceKeys(ctx, keys[1:]))
	got, err = first.Keys(ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, keys[1:], got, "the keys after a start without the first")

	require.NoError(t, stores[1].ReplaceKeys(ctx, nil))
	got, err = first.Keys(ctx)
	require.NoError(t, err)
	require.Empty(t, got, "the keys after a start with none")
}
