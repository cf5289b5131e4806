package dockertest

import (
	"fmt"
	"os/exec"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

var (
	sandboxOnce sync.Once
	sandboxErr  error
)

// RequireSandboxImage makes sure a Docker engine answers and the execute
// sandbox image is built (scripts/images.sh sandbox, skipped when it is
// current), once per test binary.
func RequireSandboxImage(t testing.TB) {
	t.Helper()
	RequireEngine(t)
	sandboxOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			sandboxErr = err
			return
		}
		cmd := exec.Command("bash", "scripts/images.sh", "sandbox")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			sandboxErr = fmt.Errorf("scripts/images.sh sandbox: %v\n%s", err, out)
		}
	})
	require.NoError(t, sandboxErr)
}
