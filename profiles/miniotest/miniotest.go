// Package miniotest runs a real MinIO server on a loopback port for a test,
// as net/http/httptest runs an HTTP server. The server is the one built by
// `go install github.com/minio/minio@...` (scripts/install-deps.sh test
// builds it), found in $(go env GOPATH)/bin or at $MINIO_BIN.
package miniotest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/stretchr/testify/require"
)

// Credentials of every test server.
const (
	AccessKey = "trawler-test"
	SecretKey = "trawler-test-secret"
)

// Server is one running MinIO server.
type Server struct {
	// Endpoint is host:port on 127.0.0.1, spoken to without TLS.
	Endpoint string
	cmd      *exec.Cmd
	dir      string
}

// Binary is the MinIO server's path; the error says how to build it.
func Binary() (string, error) {
	if bin := os.Getenv("MINIO_BIN"); bin != "" {
		return bin, nil
	}
	gopath, err := exec.Command("go", "env", "GOPATH").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOPATH: %w", err)
	}
	bin := filepath.Join(strings.TrimSpace(string(gopath)), "bin", "minio")
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("MinIO server not found at %s: build it once with "+
			"`go install github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c` (make test-deps does)", bin)
	}
	return bin, nil
}

// Start runs a server for t with the given buckets and stops it when t
// ends.
func Start(t testing.TB, buckets ...string) *Server {
	t.Helper()
	s, err := New(buckets...)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// New runs a server with the given buckets; the caller closes it (a
// package's TestMain, for a server its tests share).
func New(buckets ...string) (*Server, error) {
	s, err := start()
	if err != nil {
		return nil, err
	}
	client, err := s.Client()
	if err != nil {
		s.Close()
		return nil, err
	}
	for _, b := range buckets {
		if err := client.MakeBucket(context.Background(), b, minio.MakeBucketOptions{}); err != nil {
			s.Close()
			return nil, fmt.Errorf("creating bucket %s: %w", b, err)
		}
	}
	return s, nil
}

func start() (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "trawler-minio-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir}
	ports, err := freePorts(2)
	if err != nil {
		s.Close()
		return nil, err
	}
	s.Endpoint = fmt.Sprintf("127.0.0.1:%d", ports[0])
	cmd := exec.Command(bin, "server", filepath.Join(dir, "data"),
		"--address", s.Endpoint, "--console-address", fmt.Sprintf("127.0.0.1:%d", ports[1]), "--quiet")
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+AccessKey, "MINIO_ROOT_PASSWORD="+SecretKey,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off")
	logf, err := os.Create(filepath.Join(dir, "minio.log"))
	if err != nil {
		s.Close()
		return nil, err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		s.Close()
		return nil, fmt.Errorf("starting minio: %w", err)
	}
	s.cmd = cmd
	// Live is not enough: a live server may still refuse S3 calls ("Server
	// not initialized yet"). Ready is, and a bucket listing proves it.
	deadline := time.Now().Add(60 * time.Second)
	client, err := s.Client()
	if err != nil {
		s.Close()
		return nil, err
	}
	for {
		resp, err := http.Get("http://" + s.Endpoint + "/minio/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err = client.ListBuckets(ctx)
				cancel()
				if err == nil {
					return s, nil
				}
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "minio.log"))
			s.Close()
			return nil, fmt.Errorf("minio not ready after 60s: %s", log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freePorts returns n distinct free ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Client returns a new client of the server, as a separate process would
// have.
func (s *Server) Client() (*minio.Client, error) {
	return minio.New(s.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(AccessKey, SecretKey, "")})
}

// Env is the Trawler configuration of a profile store in bucket on this
// server.
func (s *Server) Env(bucket string) map[string]string {
	return map[string]string{
		"TRAWLER_PROFILES":      "s3://" + bucket + "/profiles",
		"TRAWLER_S3_ENDPOINT":   "http://" + s.Endpoint,
		"TRAWLER_S3_ACCESS_KEY": AccessKey,
		"TRAWLER_S3_SECRET_KEY": SecretKey,
	}
}

// Close stops the server and removes its data.
func (s *Server) Close() {
	if s.cmd != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
	}
	os.RemoveAll(s.dir)
}
