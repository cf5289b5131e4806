package profiles

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

const (
	minioUser     = "trawler-test"
	minioPassword = "trawler-test-secret"
	minioBucket   = "profiles-test"
)

// testMinIO is one MinIO server shared by the package's tests, started on first use and stopped by
// TestMain.
var testMinIO struct {
	once     sync.Once
	cmd      *exec.Cmd
	dir      string
	endpoint string
	skip     string // why S3 tests skip, if they do
	err      error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if testMinIO.cmd != nil {
		testMinIO.cmd.Process.Kill()
		testMinIO.cmd.Wait()
	}
	if testMinIO.dir != "" {
		os.RemoveAll(testMinIO.dir)
	}
	os.Exit(code)
}

// minioBinary finds the MinIO server built by `go install github.com/minio/minio@...`.
func minioBinary() (string, bool) {
	gopath, err := exec.Command("go", "env", "GOPATH").Output()
	if err != nil {
		return "", false
	}
	bin := filepath.Join(strings.TrimSpace(string(gopath)), "bin", "minio")
	if _, err := os.Stat(bin); err != nil {
		return bin, false
	}
	return bin, true
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startMinIO() {
	bin, ok := minioBinary()
	if !ok {
		testMinIO.skip = fmt.Sprintf("MinIO server not found at %s; build it once with "+
			"`go install github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c`", bin)
		return
	}
	dir, err := os.MkdirTemp("", "trawler-minio-")
	if err != nil {
		testMinIO.err = err
		return
	}
	testMinIO.dir = dir
	port, err := freePort()
	if err != nil {
		testMinIO.err = err
		return
	}
	console, err := freePort()
	if err != nil {
		testMinIO.err = err
		return
	}
	testMinIO.endpoint = fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "server", filepath.Join(dir, "data"),
		"--address", testMinIO.endpoint, "--console-address", fmt.Sprintf("127.0.0.1:%d", console), "--quiet")
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+minioUser, "MINIO_ROOT_PASSWORD="+minioPassword,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off")
	logf, err := os.Create(filepath.Join(dir, "minio.log"))
	if err != nil {
		testMinIO.err = err
		return
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		testMinIO.err = fmt.Errorf("starting minio: %w", err)
		return
	}
	testMinIO.cmd = cmd
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + testMinIO.endpoint + "/minio/health/live")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "minio.log"))
			testMinIO.err = fmt.Errorf("minio not live after 30s: %s", log)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	client, err := newMinIOClient()
	if err != nil {
		testMinIO.err = err
		return
	}
	if err := client.MakeBucket(context.Background(), minioBucket, minio.MakeBucketOptions{}); err != nil {
		testMinIO.err = fmt.Errorf("creating bucket: %w", err)
	}
}

// newMinIOClient returns a fresh client, as a separate Trawler process would have.
func newMinIOClient() (*minio.Client, error) {
	return minio.New(testMinIO.endpoint, &minio.Options{
		Creds: credentials.NewStaticV4(minioUser, minioPassword, ""),
	})
}

// newTestS3 returns an S3 store with its own client and a prefix no other test uses, skipping the test
// when no MinIO binary is built.
func newTestS3(t *testing.T, prefix string) *S3 {
	t.Helper()
	testMinIO.once.Do(startMinIO)
	if testMinIO.skip != "" {
		t.Skip(testMinIO.skip)
	}
	if testMinIO.err != nil {
		t.Fatal(testMinIO.err)
	}
	client, err := newMinIOClient()
	if err != nil {
		t.Fatal(err)
	}
	return NewS3(client, minioBucket, prefix)
}
