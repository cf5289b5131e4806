package service

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/config"
	"github.com/trawler-dev/trawler/profiles/miniotest"
)

// Nodes that start together on an empty object store all create the
// profile bucket; every one of them starts.
func TestProfileBucketMadeByNodesStartingTogether(t *testing.T) {
	srv := miniotest.Start(t)
	env := map[string]string{"TRAWLER_CHROMIUM_PATH": "/bin/sh", "TRAWLER_PROFILES": "s3://made-together/profiles",
		"TRAWLER_S3_ENDPOINT": "http://" + srv.Endpoint, "TRAWLER_S3_ACCESS_KEY": miniotest.AccessKey,
		"TRAWLER_S3_SECRET_KEY": miniotest.SecretKey}
	cfg, err := config.FromEnv(func(k string) string { return env[k] })
	require.NoError(t, err)
	errs := make([]error, 8)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { _, errs[i] = newProfileStore(context.Background(), cfg) })
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "node %d", i)
	}
}
