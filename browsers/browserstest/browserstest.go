// Package browserstest starts pools of real local Chromium browsers for
// tests: the pool's own and those of the packages above it.
package browserstest

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/docker/shim"
	"github.com/trawler-dev/trawler/egress"
	"github.com/trawler-dev/trawler/netguard"
)

// Chromium is the browser binary on PATH; the test fails without one.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium on PATH: install it with apt-get install chromium")
	return ""
}

// Confinement is how this host confines browsers (browsers.Probe, asked
// once); a test fails where it cannot, as Trawler's browsers must be.
func Confinement(t testing.TB) browsers.Confinement {
	t.Helper()
	confOnce.Do(func() {
		conf = browsers.Probe(context.Background(), "", browsers.DefaultBrowserUID, browsers.DefaultBrowserUID)
	})
	if !conf.Confined {
		t.Fatalf("this host cannot confine browsers (%s): install bubblewrap (apt-get install bubblewrap)", conf.Reason)
	}
	return conf
}

var (
	confOnce sync.Once
	conf     browsers.Confinement
)

// Runtime returns a runtime of confined local browsers with their
// directories in dir, whose requests leave through an egress proxy that
// lets them reach loopback sites (closed when the test ends).
func Runtime(t testing.TB, dir string) *browsers.ProcessRuntime {
	t.Helper()
	out := egress.New(egress.Config{Guard: &netguard.Guard{AllowPrivate: true}, StreamPort: shim.ProxyPort})
	t.Cleanup(func() { out.Close() })
	return &browsers.ProcessRuntime{Chromium: Chromium(t), Dir: dir, StartTimeout: 30 * time.Second,
		Confinement: Confinement(t), Egress: out.ServeStream}
}

// NewPool returns a pool of confined local browsers (Runtime) with their
// directories in a temporary one, closed when the test ends.
func NewPool(t testing.TB, o browsers.PoolOptions) (*browsers.Pool, *browsers.ProcessRuntime) {
	t.Helper()
	rt := Runtime(t, t.TempDir())
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	rt.Log = o.Log
	p := browsers.NewPool(rt, o)
	t.Cleanup(p.Close)
	return p, rt
}

// PID is the main process of browser b of runtime rt (bubblewrap's, for a
// confined browser), as recorded in its directory.
func PID(t testing.TB, rt *browsers.ProcessRuntime, b browsers.Browser) int {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(rt.Dir, b.ID(), "trawler.pid"))
	require.NoError(t, err, "reading the browser's pid")
	f := strings.Fields(string(raw))
	require.NotEmpty(t, f, "the browser's pid file is empty")
	pid, err := strconv.Atoi(f[0])
	require.NoError(t, err)
	return pid
}
