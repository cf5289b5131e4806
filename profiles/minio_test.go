package profiles

import (
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/profiles/miniotest"
)

const minioBucket = "profiles-test"

// testMinIO is one MinIO server shared by the package's tests, started on
// first use and stopped by TestMain.
var testMinIO struct {
	once   sync.Once
	server *miniotest.Server
	err    error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if testMinIO.server != nil {
		testMinIO.server.Close()
	}
	os.Exit(code)
}

// newTestS3 returns an S3 store with its own client (as a separate Trawler
// process would have) and a prefix no other test uses.
func newTestS3(t *testing.T, prefix string) *S3 {
	t.Helper()
	testMinIO.once.Do(func() { testMinIO.server, testMinIO.err = miniotest.New(minioBucket) })
	require.NoError(t, testMinIO.err)
	client, err := testMinIO.server.Client()
	require.NoError(t, err)
	return NewS3(client, minioBucket, prefix)
}
