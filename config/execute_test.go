package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TRAWLER_EXECUTE defaults to the sandbox on the docker runtime and to off
// on the process runtime, and a value it does not know names the setting.
func TestExecuteSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]string
		mode string
	}{
		{"process runtime", map[string]string{}, "off"},
		{"docker runtime", map[string]string{"TRAWLER_RUNTIME": "docker"}, "docker"},
		{"node opt-in", map[string]string{"TRAWLER_EXECUTE": "node"}, "node"},
		{"sandbox on the process runtime", map[string]string{"TRAWLER_EXECUTE": "docker"}, "docker"},
		{"off on the docker runtime", map[string]string{"TRAWLER_RUNTIME": "docker", "TRAWLER_EXECUTE": "off"}, "off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.env["TRAWLER_CHROMIUM_PATH"] = "/bin/sh"
			c, err := FromEnv(env(tc.env))
			require.NoError(t, err)
			assert.Equal(t, tc.mode, c.Execute.Mode)
			assert.Equal(t, "trawler/sandbox:latest", c.Execute.Image)
		})
	}
	_, err := FromEnv(env(map[string]string{"TRAWLER_CHROMIUM_PATH": "/bin/sh", "TRAWLER_EXECUTE": "python"}))
	require.ErrorContains(t, err, `TRAWLER_EXECUTE must be off, node (a local process, no sandbox) or docker (a sandbox container per run), got "python"`)
}
