// Package browserstest starts pools of real local Chromium browsers for
// tests: the pool's own and those of the packages above it.
package browserstest

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/browsers"
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

// NewPool returns a pool of local browsers with their directories in a
// temporary one, closed when the test ends.
func NewPool(t testing.TB, o browsers.PoolOptions) (*browsers.Pool, *browsers.ProcessRuntime) {
	t.Helper()
	rt := &browsers.ProcessRuntime{Chromium: Chromium(t), Dir: t.TempDir(), StartTimeout: 30 * time.Second}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	p := browsers.NewPool(rt, o)
	t.Cleanup(p.Close)
	return p, rt
}

// PID is the main process of browser b of runtime rt, as recorded in its
// user-data directory.
func PID(t testing.TB, rt *browsers.ProcessRuntime, b browsers.Browser) int {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(rt.Dir, b.ID(), "trawler.pid"))
	require.NoError(t, err, "reading the browser's pid")
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	require.NoError(t, err)
	return pid
}
