package docker

import (
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
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/docker/dockertest"
	"github.com/trawler-dev/trawler/docker/shim"
	"github.com/trawler-dev/trawler/egress"
	"github.com/trawler-dev/trawler/netguard"
	"github.com/trawler-dev/trawler/scrape/tabs"
	"github.com/trawler-dev/trawler/test/logtest"
	"github.com/trawler-dev/trawler/test/polltest"
)

// newRuntime returns a runtime of its own instance, so that parallel tests
// and earlier runs never see each other's containers; whatever a test leaves
// behind is reaped at its end.
func newRuntime(t testing.TB, cfg Config) *Runtime {
	t.Helper()
	dockertest.RequireEngine(t)
	if cfg.Instance == "" {
		cfg.Instance = "test-" + uuid.NewString()[:8]
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = time.Minute // two CPUs, parallel tests
	}
	if cfg.Egress == nil {
		// Loopback test sites are the only sites here.
		out := egress.New(egress.Config{Guard: &netguard.Guard{AllowPrivate: true}, StreamPort: shim.ProxyPort})
		t.Cleanup(func() { out.Close() })
		cfg.Egress = out.ServeStream
	}
	r, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := r.Reap(context.Background())
		assert.NoError(t, err)
		r.Close()
	})
	return r
}

func start(t testing.TB, r *Runtime) browsers.Browser {
	t.Helper()
	b, err := r.Start(context.Background(), uuid.NewString())
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	return b
}

func containerID(b browsers.Browser) string { return b.(*browser).containerID }

func exists(t *testing.T, r *Runtime, id string) bool {
	t.Helper()
	_, err := r.cli.ContainerInspect(context.Background(), id)
	if cerrdefs.IsNotFound(err) {
		return false
	}
	require.NoError(t, err)
	return true
}

func TestStart(t *testing.T) {
	t.Parallel()
	var logs logtest.Buffer
	cfg := Config{
		Memory: 1 << 30, CPUs: 0.5, PidsLimit: 512, ShmSize: 128 << 20,
		Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	r := newRuntime(t, cfg)
	b := start(t, r)
	ctx := context.Background()

	t.Run("answers CDP", func(t *testing.T) {
		conn, err := b.CDP().Dial(ctx)
		require.NoError(t, err)
		defer conn.Close()
		var v struct {
			Product string `json:"product"`
		}
		require.NoError(t, conn.Call(ctx, "", "Browser.getVersion", nil, &v))
		assert.Contains(t, v.Product, "Chrome/", "product")
		// What the runtime tells of the image without a container gives
		// the user agent of scrapes before the first browser starts.
		version, err := r.ChromiumVersion(ctx)
		require.NoError(t, err)
		assert.True(t, strings.HasSuffix(v.Product, "/"+version), "the image's Chromium is %s, the runtime says %s", v.Product, version)
		derived, ok := browsers.ReducedUserAgent(version)
		require.True(t, ok, "no user agent for Chromium %q", version)
		reported, err := tabs.BrowserUserAgent(ctx, conn)
		require.NoError(t, err)
		assert.Equal(t, reported, derived, "user agent")
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
		require.NoError(t, err)
		defer conn.Close()
		var created struct {
			TargetID string `json:"targetId"`
		}
		require.NoError(t, conn.Call(ctx, "", "Target.createTarget", map[string]any{"url": srv.URL + "/page"}, &created))
		polltest.Until(t, 20*time.Second, "the browser to request "+srv.URL+"/page", func() bool { return hits.Load() > 0 })
	})

	t.Run("logs the container's output at debug level", func(t *testing.T) {
		polltest.UntilState(t, 10*time.Second, "the shim's first line in the log",
			func() bool { return strings.Contains(logs.String(), shim.Protocol) },
			func() string { return "the log:\n" + logs.String() })
	})

	t.Run("container settings", func(t *testing.T) {
		info, err := r.cli.ContainerInspect(ctx, containerID(b))
		require.NoError(t, err)
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
				assert.Equal(t, tc.want, tc.got)
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
			assert.NoError(t, b.Close())
		})
	}
	wg.Wait()
	select {
	case <-b.Done():
	default:
		t.Fatal("Done is open after Close returned")
	}
	assert.Error(t, b.Err(), "Err is nil after Close")
	t.Log(b.Err())
	assert.False(t, exists(t, r, id), "the container is still there after Close")
	assert.NoError(t, b.Close(), "second Close")
}

func TestKilledFromOutside(t *testing.T) {
	t.Parallel()
	r := newRuntime(t, Config{})
	b := start(t, r)
	out, err := exec.Command("docker", "kill", containerID(b)).CombinedOutput()
	require.NoError(t, err, "docker kill: %s", out)
	select {
	case <-b.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("Done stayed open after docker kill")
	}
	assert.ErrorContains(t, b.Err(), "exited with code 137 (killed)", "Err after docker kill")
	assert.NoError(t, b.Close())
	assert.False(t, exists(t, r, containerID(b)), "the container is still there after Close")
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
	require.NoError(t, err)
	assert.Equal(t, len(left), n, "containers Reap removed")
	for _, b := range left {
		assert.False(t, exists(t, restarted, containerID(b)), "container of %s survived Reap", b.ID())
		select {
		case <-b.Done():
		case <-time.After(30 * time.Second):
			t.Errorf("Done of %s stayed open after Reap removed its container", b.ID())
		}
	}
	assert.True(t, exists(t, restarted, containerID(other)), "Reap removed the container of another instance")
	select {
	case <-other.Done():
		t.Errorf("the other instance's browser exited: %v", other.Err())
	default:
	}
	n, err = restarted.Reap(context.Background())
	assert.NoError(t, err, "second Reap")
	assert.Zero(t, n, "containers the second Reap removed")
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
			assert.ErrorContains(t, err, tc.want)
			assert.Empty(t, dockertest.InstanceContainers(t, r.cfg.Instance), "containers left behind")
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
			assert.Equal(t, tc.want, describeExit(tc.code, tc.oom), "describeExit(%d, %v)", tc.code, tc.oom)
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
				assert.NoError(t, err, "Validate()")
				return
			}
			assert.ErrorContains(t, err, tc.want, "Validate()")
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
		require.NoError(b, err)
		took = append(took, time.Since(began))
		require.NoError(b, br.Close())
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	b.ReportMetric(float64(took[len(took)/2].Milliseconds()), "ms/start-median")
}
