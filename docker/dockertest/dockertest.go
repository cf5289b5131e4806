// Package dockertest readies a real Docker engine and the browser image for
// the tests that run browsers in containers, and lists the containers a
// runtime instance left.
package dockertest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// instanceLabel is the label the docker runtime puts on each browser
// container, naming the service instance that owns it.
const instanceLabel = "dev.trawler.instance"

var (
	setupOnce sync.Once
	setupErr  error
)

// RequireEngine makes sure a Docker engine answers and the browser image is
// built, once per test binary. A machine without Docker fails the test
// rather than skipping it: CI installs it.
func RequireEngine(t testing.TB) {
	t.Helper()
	setupOnce.Do(func() { setupErr = setup() })
	require.NoError(t, setupErr)
}

func setup() error {
	if _, err := exec.LookPath("docker"); err != nil {
		return errors.New("docker is not installed (Debian: apt-get install docker.io); these tests need a real engine")
	}
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	for _, script := range [][]string{{"scripts/start-dockerd.sh"}, {"scripts/images.sh", "browser"}} {
		cmd := exec.Command("bash", script...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v\n%s", strings.Join(script, " "), err, out)
		}
	}
	return nil
}

// moduleRoot is the directory of go.mod above the test's working directory
// (its package's directory), where the scripts are.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// Containers lists the full ids of the containers, running or not, that
// match a docker ps filter, such as label=NAME=VALUE.
func Containers(t testing.TB, filter string) []string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-aq", "--no-trunc", "--filter", filter).Output()
	require.NoError(t, err, "docker ps")
	return strings.Fields(string(out))
}

// InstanceContainers lists the containers that the docker runtime labelled
// with instance.
func InstanceContainers(t testing.TB, instance string) []string {
	t.Helper()
	return Containers(t, "label="+instanceLabel+"="+instance)
}
