package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The connections one client address may hold default to a number a NAT
// full of clients stays under, and take any whole number from 1.
func TestMaxConnsPerAddress(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, value string
		want        int
		err         string
	}{
		{"default", "", 512, ""},
		{"set", "8", 8, ""},
		{"one", "1", 1, ""},
		{"zero", "0", 0, "TRAWLER_MAX_CONNS_PER_ADDRESS must be at least 1, got 0"},
		{"negative", "-5", 0, "TRAWLER_MAX_CONNS_PER_ADDRESS must be at least 1, got -5"},
		{"not a number", "many", 0, `TRAWLER_MAX_CONNS_PER_ADDRESS must be a whole number, got "many"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := FromEnv(env(map[string]string{"TRAWLER_CHROMIUM_PATH": "/bin/sh", "TRAWLER_MAX_CONNS_PER_ADDRESS": tc.value}))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, c.MaxConnsPerAddress)
		})
	}
}
