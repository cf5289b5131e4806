package config

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err := FromEnv(env(map[string]string{"TRAWLER_CHROMIUM_PATH": "/bin/sh"}))
	require.NoError(t, err)
	if c.Addr != "127.0.0.1:3002" || !c.LocalMode() || c.PoolSize != 8 || c.WarmBrowsers != 1 || c.ScrapesPerBrowser != 4 || c.SpareTabs != 4 || !c.PreparesScrapeBrowser() ||
		c.TeamConcurrency != 4 || c.QueueWait != 10*time.Second || c.AllowPrivateNetworks || c.SharedCache || c.PublicURL != nil {
		t.Fatalf("defaults: %+v", c)
	}
	require.True(t, strings.HasSuffix(c.DataDir, "/data") && strings.HasPrefix(c.DataDir, "/"), "data dir %q should be ./data made absolute", c.DataDir)
}

func TestSettings(t *testing.T) {
	t.Parallel()
	c, err := FromEnv(env(map[string]string{
		"TRAWLER_ADDR":                   "0.0.0.0:9000",
		"TRAWLER_API_KEYS":               "acme:key-aaaaaaaa, globex:key-bbbbbbbb",
		"TRAWLER_PUBLIC_URL":             "https://trawler.example.com/",
		"TRAWLER_ALLOW_PRIVATE_NETWORKS": "true",
		"TRAWLER_SHARED_CACHE":           "true",
		"TRAWLER_TRUSTED_PROXIES":        "10.0.0.0/8, 127.0.0.1",
		"TRAWLER_POOL_SIZE":              "3",
		"TRAWLER_WARM_BROWSERS":          "2",
		"TRAWLER_TEAM_CONCURRENCY":       "2",
		"TRAWLER_QUEUE_WAIT":             "1500ms",
		"TRAWLER_CHROMIUM_PATH":          "sh",
		"TRAWLER_PROXIES":                "basic=http://u:p@10.0.0.5:3128, enhanced:de=socks5://10.0.0.6:1080",
	}))
	require.NoError(t, err)
	if c.LocalMode() || len(c.APIKeys) != 2 || c.APIKeys[1] != (TeamKey{"globex", "key-bbbbbbbb"}) {
		t.Fatalf("keys: %+v", c.APIKeys)
	}
	if c.PublicURL.String() != "https://trawler.example.com" || !c.AllowPrivateNetworks || !c.SharedCache || len(c.TrustedProxies) != 2 ||
		c.PoolSize != 3 || c.WarmBrowsers != 2 || c.TeamConcurrency != 2 || c.QueueWait != 1500*time.Millisecond {
		t.Fatalf("settings: %+v", c)
	}
	require.True(t, strings.HasPrefix(c.ChromiumPath, "/"), "chromium path %q not resolved on PATH", c.ChromiumPath)
	require.Len(t, c.Proxies, 2)
	require.Equal(t, "enhanced", c.Proxies[1].Tier)
	require.Equal(t, "DE", c.Proxies[1].Country)
}

func TestErrorsNameTheSetting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"local mode on a public address", map[string]string{"TRAWLER_ADDR": "0.0.0.0:3002"}, "TRAWLER_ADDR \"0.0.0.0:3002\" is not a loopback address and no TRAWLER_API_KEYS"},
		{"bad address", map[string]string{"TRAWLER_ADDR": "3002"}, "TRAWLER_ADDR must be host:port"},
		{"key without team", map[string]string{"TRAWLER_API_KEYS": ":abcdefghij"}, "TRAWLER_API_KEYS must be a comma-separated list of team:key pairs"},
		{"short key", map[string]string{"TRAWLER_API_KEYS": "acme:short"}, "TRAWLER_API_KEYS: the key of team \"acme\" must be at least 8 characters"},
		{"duplicate key", map[string]string{"TRAWLER_API_KEYS": "a:samekey1,b:samekey1"}, "a key is listed twice"},
		{"public URL", map[string]string{"TRAWLER_PUBLIC_URL": "trawler.example.com"}, "TRAWLER_PUBLIC_URL must be an absolute http or https URL"},
		{"boolean", map[string]string{"TRAWLER_ALLOW_PRIVATE_NETWORKS": "yes please"}, "TRAWLER_ALLOW_PRIVATE_NETWORKS must be true or false"},
		{"shared cache", map[string]string{"TRAWLER_SHARED_CACHE": "sometimes"}, "TRAWLER_SHARED_CACHE must be true or false"},
		{"upstream proxy tier", map[string]string{"TRAWLER_PROXIES": "premium=http://10.0.0.5:3128"}, "TRAWLER_PROXIES: \"premium=http://10.0.0.5:3128\": the tier must be basic or enhanced"},
		{"pool size", map[string]string{"TRAWLER_POOL_SIZE": "0"}, "TRAWLER_POOL_SIZE must be between 1 and 1000"},
		{"pool size text", map[string]string{"TRAWLER_POOL_SIZE": "many"}, "TRAWLER_POOL_SIZE must be a whole number"},
		{"warm over size", map[string]string{"TRAWLER_POOL_SIZE": "2", "TRAWLER_WARM_BROWSERS": "3"}, "TRAWLER_WARM_BROWSERS must be between 0 and TRAWLER_POOL_SIZE (2)"},
		{"scrapes per browser", map[string]string{"TRAWLER_SCRAPES_PER_BROWSER": "0"}, "TRAWLER_SCRAPES_PER_BROWSER must be between 1 and 100"},
		{"spare tabs", map[string]string{"TRAWLER_SPARE_TABS": "-1"}, "TRAWLER_SPARE_TABS must be between 0 and 64"},
		{"team concurrency", map[string]string{"TRAWLER_TEAM_CONCURRENCY": "0"}, "TRAWLER_TEAM_CONCURRENCY must be at least 1"},
		{"queue wait", map[string]string{"TRAWLER_QUEUE_WAIT": "10"}, "TRAWLER_QUEUE_WAIT must be a duration"},
		{"trusted proxies", map[string]string{"TRAWLER_TRUSTED_PROXIES": "proxy.local"}, "TRAWLER_TRUSTED_PROXIES must list IP addresses or CIDR prefixes"},
		{"chromium", map[string]string{"TRAWLER_CHROMIUM_PATH": "/nonexistent/chromium"}, "TRAWLER_CHROMIUM_PATH \"/nonexistent/chromium\" is not an executable file"},
		{"log level", map[string]string{"TRAWLER_LOG_LEVEL": "loud"}, "TRAWLER_LOG_LEVEL must be debug, info, warn or error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, ok := tc.env["TRAWLER_CHROMIUM_PATH"]; !ok {
				tc.env["TRAWLER_CHROMIUM_PATH"] = "/bin/sh"
			}
			_, err := FromEnv(env(tc.env))
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// A PostgreSQL URL is taken as it is; anything else is refused with a
// message that names the setting and does not repeat the password.
func TestDatabaseURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, value, want string
	}{
		{"unset: SQLite", "", ""},
		{"postgres", "postgres://trawler:s3cret@db.internal:5432/trawler?sslmode=require", ""},
		{"postgresql", "postgresql://trawler:s3cret@db.internal/trawler", ""},
		{"another database", "mysql://trawler:s3cret@db.internal/trawler", "TRAWLER_DATABASE_URL must be a postgres:// or postgresql:// URL"},
		{"not a URL", "postgres://trawler:s3cret@db.internal:port/trawler", "TRAWLER_DATABASE_URL must be a postgres:// or postgresql:// URL"},
		{"a file", "/var/lib/trawler/trawler.db", "TRAWLER_DATABASE_URL must be a postgres:// or postgresql:// URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := FromEnv(env(map[string]string{"TRAWLER_CHROMIUM_PATH": "/bin/sh", "TRAWLER_DATABASE_URL": tc.value}))
			if tc.want != "" {
				require.ErrorContains(t, err, tc.want)
				require.NotContains(t, err.Error(), "s3cret", "the error repeats the password")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.value, c.DatabaseURL)
		})
	}
}

// A node's URL needs the nodes' secret, and neither may be malformed; the
// lease has bounds.
func TestNodeSettings(t *testing.T) {
	t.Parallel()
	const secret = "0123456789abcdef"
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"none", map[string]string{}, ""},
		{"url and secret", map[string]string{"TRAWLER_NODE_URL": "http://10.0.0.5:3002/", "TRAWLER_NODE_SECRET": secret}, ""},
		{"url without secret", map[string]string{"TRAWLER_NODE_URL": "http://10.0.0.5:3002"}, "TRAWLER_NODE_URL needs TRAWLER_NODE_SECRET"},
		{"short secret", map[string]string{"TRAWLER_NODE_SECRET": "short"}, "TRAWLER_NODE_SECRET must be at least 16 characters long"},
		{"url with a path", map[string]string{"TRAWLER_NODE_URL": "http://10.0.0.5:3002/trawler", "TRAWLER_NODE_SECRET": secret},
			"TRAWLER_NODE_URL must be an absolute http or https URL without a path"},
		{"not http", map[string]string{"TRAWLER_NODE_URL": "10.0.0.5:3002", "TRAWLER_NODE_SECRET": secret},
			"TRAWLER_NODE_URL must be an absolute http or https URL"},
		{"lease too short", map[string]string{"TRAWLER_NODE_LEASE": "500ms"}, "TRAWLER_NODE_LEASE must be between 1s and 10m, got 500ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.env["TRAWLER_CHROMIUM_PATH"] = "/bin/sh"
			c, err := FromEnv(env(tc.env))
			if tc.want != "" {
				require.ErrorContains(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			if tc.env["TRAWLER_NODE_URL"] != "" {
				require.Equal(t, "http://10.0.0.5:3002", c.NodeURL)
			}
			require.Equal(t, 15*time.Second, c.NodeLease)
		})
	}
}

func TestPublicLocalModeNeedsExplicitConsent(t *testing.T) {
	t.Parallel()
	_, err := FromEnv(env(map[string]string{"TRAWLER_ADDR": "0.0.0.0:3002", "TRAWLER_ALLOW_PUBLIC_LOCAL_MODE": "true", "TRAWLER_CHROMIUM_PATH": "/bin/sh"}))
	require.NoError(t, err, "explicitly allowed public local mode")
}

func TestChromiumFlags(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "TRAWLER_CHROMIUM_FLAGS" {
				return v
			}
			if k == "TRAWLER_CHROMIUM_PATH" {
				return "/bin/sh"
			}
			return ""
		}
	}
	c, err := FromEnv(env(`--host-resolver-rules="MAP *.crawl.test 127.0.0.1"  --lang=fr`))
	require.NoError(t, err)
	assert.Equal(t, []string{"--host-resolver-rules=MAP *.crawl.test 127.0.0.1", "--lang=fr"}, c.ChromiumFlags, "flags")
	for v, want := range map[string]string{"lang=fr": "must be flags starting with --", "--user-data-dir=/x": "must not set --user-data-dir"} {
		_, err := FromEnv(env(v))
		assert.ErrorContains(t, err, want, v)
	}
}

// The model's settings are Trawler's own, else a Firecrawl self-host's
// variables; a bad one names the setting.
func TestLLMSettings(t *testing.T) {
	t.Parallel()
	base := map[string]string{"TRAWLER_CHROMIUM_PATH": "/bin/sh"}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	cases := []struct {
		name                string
		env                 map[string]string
		baseURL, key, model string
	}{
		{"none", nil, "", "", ""},
		{"trawler's", map[string]string{"TRAWLER_LLM_BASE_URL": "http://127.0.0.1:8080", "TRAWLER_LLM_MODEL": "qwen",
			"TRAWLER_LLM_API_KEY": "k", "OPENAI_BASE_URL": "http://other", "MODEL_NAME": "other"}, "http://127.0.0.1:8080", "k", "qwen"},
		{"firecrawl's openai", map[string]string{"OPENAI_API_KEY": "sk-1"}, "https://api.openai.com/v1", "sk-1", "gpt-4o-mini"},
		{"firecrawl's openai-compatible", map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1234/v1", "OPENAI_API_KEY": "x",
			"MODEL_NAME": "local"}, "http://127.0.0.1:1234/v1", "x", "local"},
		{"firecrawl's ollama", map[string]string{"OLLAMA_BASE_URL": "http://127.0.0.1:11434/api", "MODEL_NAME": "llama3.2"},
			"http://127.0.0.1:11434", "", "llama3.2"},
	}
	for _, tc := range cases {
		c, err := FromEnv(env(with(tc.env)))
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.baseURL, c.LLM.BaseURL, tc.name)
		assert.Equal(t, tc.key, c.LLM.APIKey, tc.name)
		assert.Equal(t, tc.model, c.LLM.Model, tc.name)
	}
	for msg, vars := range map[string]map[string]string{
		"TRAWLER_LLM_MODEL must name the model":         {"TRAWLER_LLM_BASE_URL": "http://127.0.0.1:8080"},
		"TRAWLER_LLM_BASE_URL must be an absolute":      {"TRAWLER_LLM_BASE_URL": "localhost:8080", "TRAWLER_LLM_MODEL": "m"},
		"TRAWLER_LLM_CONCURRENCY must be between":       {"TRAWLER_LLM_CONCURRENCY": "0"},
		"TRAWLER_LLM_TIMEOUT must be at least 1s":       {"TRAWLER_LLM_TIMEOUT": "10ms"},
		"TRAWLER_LLM_OUTPUT_TOKENS must be at least 64": {"TRAWLER_LLM_OUTPUT_TOKENS": "40000"},
		"TRAWLER_LLM_CONTEXT_TOKENS must be at least":   {"TRAWLER_LLM_CONTEXT_TOKENS": "100"},
		"TRAWLER_LLM_TIMEOUT must be a duration":        {"TRAWLER_LLM_TIMEOUT": "soon"},
	} {
		_, err := FromEnv(env(with(vars)))
		require.Error(t, err, msg)
		assert.Contains(t, err.Error(), msg)
	}
}

// TRAWLER_TEAM_CREDITS sets each team's monthly credit limit; a malformed
// entry, or one naming a team no key belongs to, stops the start with a
// message that names the setting.
func TestTeamCredits(t *testing.T) {
	t.Parallel()
	base := map[string]string{"TRAWLER_CHROMIUM_PATH": "/bin/sh", "TRAWLER_API_KEYS": "acme:key-aaaaaaaa,globex:key-bbbbbbbb"}
	with := func(v string, keys ...string) map[string]string {
		m := map[string]string{"TRAWLER_TEAM_CREDITS": v}
		for k, val := range base {
			m[k] = val
		}
		if len(keys) > 0 {
			m["TRAWLER_API_KEYS"] = keys[0]
		}
		return m
	}
	c, err := FromEnv(env(with(" acme:100000 , globex:500,")))
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"acme": 100000, "globex": 500}, c.TeamCredits)
	c, err = FromEnv(env(with("local:10", "")))
	require.NoError(t, err, "the local team in local mode")
	assert.Equal(t, map[string]int64{"local": 10}, c.TeamCredits)
	c, err = FromEnv(env(base))
	require.NoError(t, err)
	assert.Nil(t, c.TeamCredits, "no limits by default")

	for _, tc := range []struct {
		name, value, want string
		local             bool
	}{
		{"no limit", "acme", "TRAWLER_TEAM_CREDITS must be a comma-separated list of team:credits entries, got \"acme\"", false},
		{"no team", ":100", "TRAWLER_TEAM_CREDITS must be a comma-separated list of team:credits entries", false},
		{"not a number", "acme:lots", "TRAWLER_TEAM_CREDITS: the credits of team \"acme\" must be a whole number between 1 and", false},
		{"zero", "acme:0", "the credits of team \"acme\" must be a whole number between 1", false},
		{"negative", "acme:-5", "the credits of team \"acme\" must be a whole number between 1", false},
		{"fraction", "acme:1.5", "the credits of team \"acme\" must be a whole number", false},
		{"twice", "acme:1,acme:2", "TRAWLER_TEAM_CREDITS: team \"acme\" is listed twice", false},
		{"unknown team", "initech:100", "TRAWLER_TEAM_CREDITS names team \"initech\", which no key of TRAWLER_API_KEYS belongs to", false},
		{"local mode", "acme:100", "in local mode (no TRAWLER_API_KEYS) the only team is \"local\"", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := with(tc.value)
			if tc.local {
				delete(m, "TRAWLER_API_KEYS")
			}
			_, err := FromEnv(env(m))
			require.ErrorContains(t, err, tc.want)
		})
	}
}
