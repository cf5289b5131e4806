package docker

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/google/uuid"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/docker/shim"
	"github.com/trawler-dev/trawler/egress"
	"github.com/trawler-dev/trawler/netguard"
)

var (
	setupOnce sync.Once
	setupErr  error
)

// requireEngine makes sure a Docker engine answers and the browser image is
// built, once per test binary. A machine without Docker fails the tests
// rather than skipping them: CI installs it.
func requireEngine(t testing.TB) {
	t.Helper()
	setupOnce.Do(func() {
		if _, err := exec.LookPath("docker"); err != nil {
			setupErr = fmt.Errorf("docker is not installed (Debian: apt-get install docker.io); these tests need a real engine")
			return
		}
		for _, script := range [][]string{{"../scripts/start-dockerd.sh"}, {"../scripts/images.sh", "browser"}} {
			out, err := exec.Command("bash", script...).CombinedOutput()
			if err != nil {
				setupErr = fmt.Errorf("%s: %v\n%s", strings.Join(script, " "), err, out)
				return
			}
		}
	})
	if setupErr != nil {
		t.Fatal(setupErr)
	}
}

// newRuntime returns a runtime of its own instance, so that parallel tests
// and earlier runs never see each other's containers; whatever a test leaves
// behind is reaped at its end.
func newRuntime(t testing.TB, cfg Config) *Runtime {
	t.Helper()
	requireEngine(t)
	if cfg.Instance == "" {
		cfg.Instance = "test-" + uuid.NewString()[:8]
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = time.Minute // two CPUs, parallel tests
	}
	if cfg.Egress == nil {
		// Loopback test sites are the only sites here.
		out := egress.New(&netguard.Guard{AllowPrivate: true}, nil, nil)
		t.Cleanup(func() { out.Close() })
		cfg.Egress = out.ServeConn
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := r.Reap(context.Background()); err != nil {
			t.Error(err)
		}
		r.Close()
	})
	return r
}

func start(t testing.TB, r *Runtime) browsers.Browser {
	t.Helper()
	b, err := r.Start(context.Background(), uuid.NewString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// lockedBuffer is a log destination that the log follower and the test may
// use at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func containerID(b browsers.Browser) string { return b.(*browser).containerID }

func exists(t *testing.T, r *Runtime, id string) bool {
	t.Helper()
	_, err := r.cli.ContainerInspect(context.Background(), id)
	if cerrdefs.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

func TestStart(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	cfg := Config{
		Memory: 1 << 30, CPUs: 0.5, PidsLimit: 512, ShmSize: 128 << 20,
		Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	r := newRuntime(t, cfg)
	b := start(t, r)
	ctx := context.Background()

	t.Run("answers CDP", func(t *testing.T) {
		conn, err := b.CDP().Dial(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		var v struct {
			Product string `json:"product"`
		}
		if err := conn.Call(ctx, "", "Browser.getVersion", nil, &v); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(v.Product, "Chrome/") {
			t.Errorf("product = %q, want Chrome/...", v.Product)
		}
	})

	t.Run("loads a page served on loopback", func(t *testing.T) {
		var hits atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/page" {
				hits.Add(1)
			}
			fmt.Fprint(w, "<title>hello</title>")
		}))
		defer srv.Close()
		conn, err := b.CDP().Dial(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		var created struct {
			TargetID string `json:"targetId"`
		}
		if err := conn.Call(ctx, "", "Target.createTarget", map[string]any{"url": srv.URL + "/page"}, &created); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for hits.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if hits.Load() == 0 {
			t.Fatalf("the browser never requested %s/page", srv.URL)
		}
	})

	t.Run("logs the container's output at debug level", func(t *testing.T) {
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(logs.String(), shim.Protocol) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if !strings.Contains(logs.String(), shim.Protocol) {
			t.Errorf("the log lacks the shim's first line:\n%s", logs.String())
		}
	})

	t.Run("container settings", func(t *testing.T) {
		info, err := r.cli.ContainerInspect(ctx, containerID(b))
		if err != nil {
			t.Fatal(err)
		}
		hc := info.HostConfig
		for _, tc := range []struct {
			name      string
			got, want any
		}{
			{"label browser", info.Config.Labels[labelBrowser], "1"},
			{"label instance", info.Config.Labels[labelInstance], r.cfg.Instance},
			{"label id", info.Config.Labels[labelID], b.ID()},
			{"name", info.Name, "/trawler-browser-" + b.ID()},
			{"network", string(hc.NetworkMode), "none"},
			{"log driver", hc.LogConfig.Type, "none"},
			{"stdin open", info.Config.OpenStdin, true},
			{"init", hc.Init != nil && *hc.Init, true},
			{"memory", hc.Memory, cfg.Memory},
			{"nano CPUs", hc.NanoCPUs, int64(500_000_000)},
			{"pids limit", hc.PidsLimit != nil && *hc.PidsLimit == cfg.PidsLimit, true},
			{"shm size", hc.ShmSize, cfg.ShmSize},
			{"capabilities dropped", slices.Contains(hc.CapDrop, "ALL"), true},
			{"running", info.State.Running, true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if tc.got != tc.want {
					t.Errorf("got %v, want %v", tc.got, tc.want)
				}
			})
		}
	})
}

func TestCloseRemovesContainer(t *testing.T) {
	t.Parallel()
	r := newRuntime(t, Config{})
	b := start(t, r)
	id := containerID(b)

	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if err := b.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	select {
	case <-b.Done():
	default:
		t.Fatal("Done is open after Close returned")
	}
	if b.Err() == nil {
		t.Error("Err is nil after Close")
	}
	t.Log(b.Err())
	if exists(t, r, id) {
		t.Error("the container is still there after Close")
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestKilledFromOutside(t *testing.T) {
	t.Parallel()
	r := newRuntime(t, Config{})
	b := start(t, r)
	if out, err := exec.Command("docker", "kill", containerID(b)).CombinedOutput(); err != nil {
		t.Fatalf("docker kill: %v\n%s", err, out)
	}
	select {
	case <-b.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("Done stayed open after docker kill")
	}
	if err := b.Err(); err == nil || !strings.Contains(err.Error(), "exited with code 137 (killed)") {
		t.Errorf("Err = %v, want the exit with code 137 (killed)", err)
	}
	if err := b.Close(); err != nil {
		t.Error(err)
	}
	if exists(t, r, containerID(b)) {
		t.Error("the container is still there after Close")
	}
}

func TestReap(t *testing.T) {
	t.Parallel()
	instance := "test-" + uuid.NewString()[:8]
	// crashed stands for a service that died and left its browsers running.
	crashed := newRuntime(t, Config{Instance: instance})
	left := []browsers.Browser{start(t, crashed), start(t, crashed)}
	neighbour := newRuntime(t, Config{})
	other := start(t, neighbour)

	restarted := newRuntime(t, Config{Instance: instance})
	n, err := restarted.Reap(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n != len(left) {
		t.Errorf("Reap removed %d containers, want %d", n, len(left))
	}
	for _, b := range left {
		if exists(t, restarted, containerID(b)) {
			t.Errorf("container of %s survived Reap", b.ID())
		}
		select {
		case <-b.Done():
		case <-time.After(30 * time.Second):
			t.Errorf("Done of %s stayed open after Reap removed its container", b.ID())
		}
	}
	if !exists(t, restarted, containerID(other)) {
		t.Error("Reap removed the container of another instance")
	}
	select {
	case <-other.Done():
		t.Errorf("the other instance's browser exited: %v", other.Err())
	default:
	}
	if n, err := restarted.Reap(context.Background()); n != 0 || err != nil {
		t.Errorf("second Reap = %d, %v; want 0, nil", n, err)
	}
}

func TestStartFailureRemovesContainer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		cfg     Config
		timeout time.Duration
		want    string
	}{
		// --version makes Chromium print its version and exit at once.
		{"chromium exits", Config{ExtraFlags: []string{"--version"}}, time.Minute, "Chromium 1"},
		{"context ends", Config{}, 200 * time.Millisecond, "context deadline exceeded"},
		{"start timeout", Config{StartTimeout: 300 * time.Millisecond}, time.Minute, "did not answer on its DevTools pipe within 300ms"},
		{"image missing", Config{Image: "trawler/no-such-image:latest"}, time.Minute, "image trawler/no-such-image:latest not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRuntime(t, tc.cfg)
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			b, err := r.Start(ctx, uuid.NewString())
			if err == nil {
				b.Close()
				t.Fatal("Start succeeded")
			}
			t.Log(err)
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %q, want it to contain %q", err, tc.want)
			}
			list, err := r.cli.ContainerList(context.Background(), container.ListOptions{
				All:     true,
				Filters: filters.NewArgs(filters.Arg("label", labelInstance+"="+r.cfg.Instance)),
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 0 {
				t.Errorf("%d containers left behind", len(list))
			}
		})
	}
}

func TestDescribeExit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code int64
		oom  bool
		want string
	}{
		{0, false, "browser container exited with code 0"},
		{1, false, "browser container exited with code 1"},
		{137, false, "browser container exited with code 137 (killed)"},
		{137, true, "browser container exited with code 137 (killed: out of memory)"},
		{143, false, "browser container exited with code 143 (terminated)"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if got := describeExit(tc.code, tc.oom); got != tc.want {
				t.Errorf("describeExit(%d, %v) = %q, want %q", tc.code, tc.oom, got, tc.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // empty: valid
	}{
		{"defaults", Config{}, ""},
		{"small memory", Config{Memory: 1 << 20}, "below 64 MiB"},
		{"negative CPUs", Config{CPUs: -1}, "CPUs must be at least 0.01"},
		{"port flag", Config{ExtraFlags: []string{"--remote-debugging-port=9222"}}, "set by the runtime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.want == "" {
				if err != nil {
					t.Errorf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// BenchmarkStart measures a cold start: container creation to a DevTools
// endpoint that answers, and the Close after it.
func BenchmarkStart(b *testing.B) {
	r := newRuntime(b, Config{})
	var took []time.Duration
	for b.Loop() {
		began := time.Now()
		br, err := r.Start(context.Background(), uuid.NewString())
		if err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(began))
		if err := br.Close(); err != nil {
			b.Fatal(err)
		}
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	b.ReportMetric(float64(took[len(took)/2].Milliseconds()), "ms/start-median")
}
