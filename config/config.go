// Package config owns Trawler's settings: one typed Config that FromEnv
// reads from the environment and Validate checks at start, with messages
// that name the setting. Every setting of the service is read here: the
// TRAWLER_ variables, and the few names of a Firecrawl self-host .env
// taken as fallbacks (OPENAI_API_KEY, OLLAMA_BASE_URL and others, see
// Config.LLM). Elsewhere a setting is only named, in a message or in the
// overrides that cmd/trawler's local commands pass to FromEnv, with one
// exception where there is no Config yet: cmd/trawler reads TRAWLER_ADDR
// for its healthcheck command, and TRAWLER_DATA_DIR to choose the data
// directory of its local commands (scrape, crawl, search). The TRAWLER_
// variables that execute sets for the code it runs are that code's, not
// settings.
package config

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/docker/go-units"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/egress"
	"github.com/trawler-dev/trawler/model"
	"github.com/trawler-dev/trawler/search/provider"
)

// Config is everything the service needs to start.
type Config struct {
	// Addr is the listen address of the API, the CDP proxy and the live view
	// (TRAWLER_ADDR, default 127.0.0.1:3002).
	Addr string
	// APIKeys maps each configured key to its team (TRAWLER_API_KEYS,
	// "team:key,team:key"). Empty means local mode: one team "local" and any
	// or no bearer token accepted.
	APIKeys []TeamKey
	// AllowPublicLocalMode lets local mode listen on a non-loopback address
	// (TRAWLER_ALLOW_PUBLIC_LOCAL_MODE). Off by default: local mode has no
	// authentication at all.
	AllowPublicLocalMode bool
	// DataDir holds the database and the browsers' user-data directories
	// (TRAWLER_DATA_DIR, default ./data).
	DataDir string
	// DatabaseURL is a PostgreSQL database (TRAWLER_DATABASE_URL,
	// postgres://user:password@host:port/name) that holds what the SQLite
	// database in DataDir holds otherwise. It may carry a password: log it
	// only as url.URL.Redacted gives it.
	DatabaseURL string
	// AllowPrivateNetworks lets scrapes, crawls and webhooks reach loopback and
	// private addresses (TRAWLER_ALLOW_PRIVATE_NETWORKS, default false).
	AllowPrivateNetworks bool
	// Proxies are the upstream proxies browsers' traffic leaves through
	// (TRAWLER_PROXIES: tier[:country]=URL, comma-separated, e.g.
	// basic=http://user:pw@10.0.0.5:3128,enhanced:de=socks5://10.0.0.6:1080).
	// None: the egress proxy dials every site itself.
	Proxies []*egress.Upstream
	// SharedCache lets one team's scrapes be answered from pages another
	// team fetched (TRAWLER_SHARED_CACHE, default false: each team's cache
	// is its own). Only pages fetched from public addresses are shared,
	// never one that reached a loopback or private address, and never a
	// page fetched with headers, actions or a profile (those are not cached).
	SharedCache bool
	// PublicURL is the base of the absolute URLs handed to clients
	// (TRAWLER_PUBLIC_URL). Empty: built from each request's scheme and Host.
	PublicURL *url.URL
	// TrustedProxies are the networks whose X-Forwarded-Proto and
	// X-Forwarded-Host headers are honoured (TRAWLER_TRUSTED_PROXIES, CIDRs).
	TrustedProxies []netip.Prefix
	// MaxConnsPerAddress is how many connections one client address may
	// hold open at once, WebSockets included (TRAWLER_MAX_CONNS_PER_ADDRESS,
	// default 512); the next is answered 429 and closed. It is generous
	// because clients behind one NAT, or one proxy, share an address: it is
	// there so that one client cannot take every descriptor of the process.
	MaxConnsPerAddress int
	// ParseMemoryMB is the memory one document may be estimated to take
	// while it is read (TRAWLER_PARSE_MEMORY_MB, default 256), and
	// ParseMemoryTotalMB what all documents read at once may take together
	// (TRAWLER_PARSE_MEMORY_TOTAL_MB, default 512); see parse's budget.
	ParseMemoryMB, ParseMemoryTotalMB int

	// ChromiumPath is the browser binary (TRAWLER_CHROMIUM_PATH, default the
	// first of chromium, chromium-browser, google-chrome on PATH).
	ChromiumPath string
	// ChromiumFlags are extra command-line flags for every browser
	// (TRAWLER_CHROMIUM_FLAGS, separated by spaces), e.g.
	// --host-resolver-rules="MAP *.test 127.0.0.1".
	ChromiumFlags []string
	// PoolSize is the most browsers that run at once, warm or leased
	// (TRAWLER_POOL_SIZE, default 8).
	PoolSize int
	// WarmBrowsers is how many idle browsers the pool keeps started so that a
	// lease does not wait for a cold start (TRAWLER_WARM_BROWSERS, default 1).
	WarmBrowsers int
	// ScrapesPerBrowser is how many single scrapes may render in one browser
	// at once, each in a browser context of its own
	// (TRAWLER_SCRAPES_PER_BROWSER, default 4).
	ScrapesPerBrowser int
	// ReuseTabs lets a team's single scrapes reuse a tab an earlier one of
	// the team's used, cleared of everything it left (scrape/recycle.go),
	// instead of opening a browser context each (TRAWLER_REUSE_TABS,
	// default true).
	ReuseTabs bool
	// SpareTabs is how many blank tabs, each in a fresh browser context,
	// are kept ready for single scrapes on browsers only jobs use, made
	// while the browsers are quiet; with warm browsers, a browser with them
	// is prepared at start (TRAWLER_SPARE_TABS, default 4; 0 for none).
	SpareTabs int
	// TeamConcurrency is how many browsers one team may lease at once
	// (TRAWLER_TEAM_CONCURRENCY, default 4).
	TeamConcurrency int
	// QueueWait bounds how long a request waits for a browser when the pool or
	// the team is full before it is refused with 429 (TRAWLER_QUEUE_WAIT,
	// a Go duration, default 10s).
	QueueWait time.Duration
	// BrowserStartTimeout bounds one browser start (TRAWLER_BROWSER_START_TIMEOUT,
	// default 30s).
	BrowserStartTimeout time.Duration
	// Bwrap is bubblewrap, which confines each browser of the process
	// runtime in namespaces of its own (TRAWLER_BWRAP, default bwrap on
	// PATH; see browsers.Confinement).
	Bwrap string
	// BrowserUID is the unprivileged user the process runtime's browsers
	// run as when Trawler runs as root (TRAWLER_BROWSER_UID, default
	// 65532; its group has the same number).
	BrowserUID int
	// AllowUnconfinedSessions lets browser sessions start where browsers
	// cannot be confined (no bubblewrap, no user namespaces): their clients
	// then stand only behind the CDP proxy's policy
	// (TRAWLER_ALLOW_UNCONFINED_SESSIONS, default false: such a host
	// refuses sessions with 503).
	AllowUnconfinedSessions bool

	// TeamFeatures are the options enabled per team (TRAWLER_TEAM_FEATURES,
	// "team:feature+feature,team:feature"; features zeroDataRetention and
	// ignoreRobotsTxt). The local team of local mode has every feature.
	TeamFeatures map[string]Features
	// TeamCredits are the credits each listed team may use per calendar
	// month, UTC (TRAWLER_TEAM_CREDITS, "team:credits,team:credits"). A
	// team that reaches its limit is refused billable requests with 402; a
	// team not listed has no limit.
	TeamCredits map[string]int64
	// ResultRetention is how long scrape and job results stay retrievable
	// (TRAWLER_RESULT_RETENTION, default 24h).
	ResultRetention time.Duration
	// CacheRetention is how long a fetched page stays in the cache, and so
	// in the search index (TRAWLER_CACHE_RETENTION, default 720h: 30 days).
	CacheRetention time.Duration
	// MonitorMinInterval is the shortest interval between two runs of a
	// monitor's schedule (TRAWLER_MONITOR_MIN_INTERVAL, default 5m, as
	// Firecrawl's).
	MonitorMinInterval time.Duration
	// SearchProviders are where POST /v2/search takes results from, in
	// order (TRAWLER_SEARCH_PROVIDERS, default the embedded index alone; see
	// package search/provider for the syntax).
	SearchProviders []provider.Spec
	// SearchIndex keeps the embedded search index of fetched pages
	// (TRAWLER_SEARCH_INDEX, default true). Off, search has only the live
	// providers, and the index entry of SearchProviders is skipped.
	SearchIndex bool

	// JobWorkers is how many pages crawls and batch scrapes work on at once,
	// across all teams (TRAWLER_JOB_WORKERS; default half the pool, at least
	// 1). It stays below the pool size so that interactive sessions and
	// single scrapes always find a browser.
	JobWorkers int
	// HostConcurrency is how many pages of one host jobs fetch at once
	// (TRAWLER_HOST_CONCURRENCY, default 8): politeness towards the target.
	HostConcurrency int
	// WebhookSecrets are the teams' webhook signing secrets
	// (TRAWLER_WEBHOOK_SECRETS, "team:secret,team:secret"). A team with a
	// secret gets X-Firecrawl-Signature on every webhook delivery.
	WebhookSecrets map[string]string

	// LogLevel is debug, info, warn or error (TRAWLER_LOG_LEVEL, default info).
	LogLevel string

	// Instance names this service among others sharing a Docker engine or a
	// profile store (TRAWLER_INSTANCE; default the host name and a digest of
	// the data directory). Its browser containers carry it, so that a
	// restarted service removes only its own orphans.
	Instance string
	// NodeLease is how long a node holds a job without renewing its lease
	// when several nodes share TRAWLER_DATABASE_URL (TRAWLER_NODE_LEASE,
	// default 15s): a node that dies has its jobs taken over by another
	// node within it (plus a third of it, the renewal period), and its
	// sessions ended. Each node is named by its Instance.
	NodeLease time.Duration
	// NodeURL is where the other nodes sharing the database reach this
	// one (TRAWLER_NODE_URL, http://host:port), and NodeSecret what they
	// prove themselves with (TRAWLER_NODE_SECRET, at least 16 characters):
	// with both set, a session's request (CDP, live view, delete, execute)
	// that lands on another node is forwarded to its own. Browsers never
	// reach any node's URL.
	NodeURL    string
	NodeSecret string
	// Runtime is where browsers run: "process" (the default, local Chromium
	// processes) or "docker" (one container per browser) (TRAWLER_RUNTIME).
	Runtime string
	// Docker holds the settings of the docker runtime.
	Docker Docker
	// Execute holds where the execute endpoint runs node and bash code
	// (TRAWLER_EXECUTE and friends; see execute.go).
	Execute Execute

	// Profiles is where browser profiles are kept (TRAWLER_PROFILES): a
	// directory (default DATA_DIR/profiles) or s3://bucket/prefix, with the
	// S3 settings below.
	Profiles string
	// S3 is the object store of s3:// profiles.
	S3 S3
	// Recordings is where the events of recorded sessions are kept
	// (TRAWLER_RECORDINGS): "" (the default) in the database, or
	// s3://bucket/prefix in an object store, with the S3 settings, the
	// database then holding their index only.
	Recordings string
	// ProfileLockTTL is how long a profile writer's lock lives unless
	// renewed (TRAWLER_PROFILE_LOCK_TTL, default 1m). A session renews it
	// every third of that; a crashed writer's lock is taken over once it
	// expires.
	ProfileLockTTL time.Duration

	// LLM is the language model of the model-backed formats (json,
	// summary, question, onlyCleanContent), crawl prompts and extract
	// jobs: any server of the OpenAI-compatible Chat Completions protocol
	// (OpenAI, Ollama, vLLM, LM Studio, llama.cpp's llama-server). An empty
	// BaseURL means no model, and the formats that need one are refused.
	// Read from TRAWLER_LLM_BASE_URL (else OPENAI_BASE_URL, else
	// OLLAMA_BASE_URL, as a Firecrawl self-host .env sets them; else
	// https://api.openai.com/v1 when only an API key is set),
	// TRAWLER_LLM_API_KEY (else OPENAI_API_KEY), TRAWLER_LLM_MODEL (else
	// MODEL_NAME; gpt-4o-mini for OpenAI's own server),
	// TRAWLER_LLM_CONCURRENCY (default 4), TRAWLER_LLM_TIMEOUT (default
	// 2m), TRAWLER_LLM_CONTEXT_TOKENS (default 32768) and
	// TRAWLER_LLM_OUTPUT_TOKENS (default 4096).
	LLM model.Config
}

// Docker are the settings of the docker runtime.
type Docker struct {
	// Image is the browser image (TRAWLER_DOCKER_IMAGE, default
	// trawler/browser:latest, built by make images).
	Image string
	// Memory, CPUs, Pids and Shm limit each browser container
	// (TRAWLER_DOCKER_MEMORY, default 2g; TRAWLER_DOCKER_CPUS, default 1;
	// TRAWLER_DOCKER_PIDS, default 1024; TRAWLER_DOCKER_SHM, default 256m).
	Memory int64
	CPUs   float64
	Pids   int64
	Shm    int64
}

// S3 are the settings of an S3-compatible profile store such as MinIO.
type S3 struct {
	// Endpoint is host:port, or a URL whose scheme says whether to use TLS
	// (TRAWLER_S3_ENDPOINT; http:// means no TLS; a bare host:port uses TLS).
	Endpoint string
	// Secure is whether to speak TLS to the endpoint.
	Secure bool
	// AccessKey and SecretKey are the credentials (TRAWLER_S3_ACCESS_KEY,
	// TRAWLER_S3_SECRET_KEY).
	AccessKey, SecretKey string
	// Region is the bucket's region (TRAWLER_S3_REGION, optional).
	Region string
}

// Features are options an operator enables per team.
type Features struct {
	ZeroDataRetention bool
	IgnoreRobotsTxt   bool
	// SearchZDR and SearchAnon allow the search enterprise values zdr and
	// anon (features searchZdr, searchAnon).
	SearchZDR, SearchAnon bool
	// RecordSessions records the team's browser sessions unless a session
	// asks otherwise (feature recordSessions).
	RecordSessions bool
}

// TeamKey is one configured API key and the team it belongs to.
type TeamKey struct {
	Team string
	Key  string
}

// LocalTeam is the only team in local mode.
const LocalTeam = "local"

// LocalMode reports whether no API keys are configured.
func (c *Config) LocalMode() bool { return len(c.APIKeys) == 0 }

// FromEnv reads the configuration from getenv (os.Getenv in production) and
// validates it. Every malformed setting is reported, not only the first.
func FromEnv(getenv func(string) string) (*Config, error) {
	c := defaults()
	e := &envReader{getenv: getenv}
	e.str("TRAWLER_ADDR", &c.Addr)
	e.str("TRAWLER_DATA_DIR", &c.DataDir)
	e.databaseURL(c)
	e.chromium(c)
	e.str("TRAWLER_LOG_LEVEL", &c.LogLevel)
	e.str("TRAWLER_INSTANCE", &c.Instance)
	e.duration("TRAWLER_NODE_LEASE", &c.NodeLease)
	e.nodeURL(c)
	e.str("TRAWLER_RUNTIME", &c.Runtime)
	e.docker(&c.Docker)
	e.execute(&c.Execute)
	e.profiles(c)
	e.boolean("TRAWLER_ALLOW_PRIVATE_NETWORKS", &c.AllowPrivateNetworks)
	if v := e.get("TRAWLER_PROXIES"); v != "" {
		var err error
		if c.Proxies, err = egress.ParseUpstreams(v); err != nil {
			e.fail("TRAWLER_PROXIES: %v", err)
		}
	}
	e.boolean("TRAWLER_SHARED_CACHE", &c.SharedCache)
	e.boolean("TRAWLER_ALLOW_PUBLIC_LOCAL_MODE", &c.AllowPublicLocalMode)
	e.limits(c)
	e.teams(c)
	e.publicURL(c)
	e.llm(&c.LLM)
	if err := errors.Join(e.errs...); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// defaults is the configuration with no TRAWLER_ variable set.
func defaults() *Config {
	return &Config{
		Addr:                "127.0.0.1:3002",
		DataDir:             "./data",
		PoolSize:            8,
		WarmBrowsers:        1,
		ScrapesPerBrowser:   4,
		ReuseTabs:           true,
		SpareTabs:           4,
		TeamConcurrency:     4,
		QueueWait:           10 * time.Second,
		BrowserStartTimeout: 30 * time.Second,
		BrowserUID:          browsers.DefaultBrowserUID,
		LogLevel:            "info",
		ResultRetention:     24 * time.Hour,
		MonitorMinInterval:  5 * time.Minute,
		CacheRetention:      30 * 24 * time.Hour,
		SearchProviders:     []provider.Spec{{Kind: "index"}},
		SearchIndex:         true,
		HostConcurrency:     8,
		MaxConnsPerAddress:  512,
		ParseMemoryMB:       256,
		ParseMemoryTotalMB:  512,
		Runtime:             "process",
		ProfileLockTTL:      time.Minute,
		NodeLease:           15 * time.Second,
		LLM:                 model.Config{Concurrency: 4, Timeout: 2 * time.Minute, ContextTokens: 32768, OutputTokens: 4096},
		Docker: Docker{Image: "trawler/browser:latest", Memory: 2 << 30, CPUs: 1,
			Pids: 1024, Shm: 256 << 20},
	}
}

// envReader reads settings from the environment, collecting an error for each
// malformed one; an unset or blank variable leaves its setting alone.
type envReader struct {
	getenv func(string) string
	errs   []error
}

// get is name's value without surrounding space.
func (e *envReader) get(name string) string { return strings.TrimSpace(e.getenv(name)) }

func (e *envReader) fail(format string, args ...any) {
	e.errs = append(e.errs, fmt.Errorf(format, args...))
}

func (e *envReader) str(name string, dst *string) {
	if v := e.get(name); v != "" {
		*dst = v
	}
}

func (e *envReader) boolean(name string, dst *bool) {
	read(e, name, dst, strconv.ParseBool, "true or false")
}

func (e *envReader) integer(name string, dst *int) {
	read(e, name, dst, strconv.Atoi, "a whole number")
}

func (e *envReader) duration(name string, dst *time.Duration) {
	read(e, name, dst, time.ParseDuration, "a duration such as 10s or 500ms")
}

// size reads a byte size such as 512m or 2g.
func (e *envReader) size(name string, dst *int64) {
	read(e, name, dst, units.RAMInBytes, "a size such as 512m or 2g")
}

// read sets *dst to name's value as parse reads it; a value parse refuses
// is reported as not being what (e.g. "a whole number").
func read[T any](e *envReader, name string, dst *T, parse func(string) (T, error), what string) {
	v := e.get(name)
	if v == "" {
		return
	}
	x, err := parse(v)
	if err != nil {
		e.fail("%s must be %s, got %q", name, what, v)
		return
	}
	*dst = x
}

// chromium reads the browser binary and its extra flags, refusing the
// flags Trawler sets itself.
func (e *envReader) chromium(c *Config) {
	e.str("TRAWLER_CHROMIUM_PATH", &c.ChromiumPath)
	e.str("TRAWLER_BWRAP", &c.Bwrap)
	e.integer("TRAWLER_BROWSER_UID", &c.BrowserUID)
	e.boolean("TRAWLER_ALLOW_UNCONFINED_SESSIONS", &c.AllowUnconfinedSessions)
	v := e.get("TRAWLER_CHROMIUM_FLAGS")
	if v == "" {
		return
	}
	for _, f := range splitFlags(v) {
		if !strings.HasPrefix(f, "--") {
			e.fail("TRAWLER_CHROMIUM_FLAGS must be flags starting with --, separated by spaces, got %q", f)
			continue
		}
		if browsers.ReservedFlag(f) {
			e.fail("TRAWLER_CHROMIUM_FLAGS must not set %s: Trawler sets it for each browser (DevTools on a pipe, every request through its egress proxy)", strings.SplitN(f, "=", 2)[0])
			continue
		}
		c.ChromiumFlags = append(c.ChromiumFlags, f)
	}
}

// docker reads the settings of the docker runtime.
func (e *envReader) docker(d *Docker) {
	e.str("TRAWLER_DOCKER_IMAGE", &d.Image)
	e.size("TRAWLER_DOCKER_MEMORY", &d.Memory)
	e.size("TRAWLER_DOCKER_SHM", &d.Shm)
	read(e, "TRAWLER_DOCKER_CPUS", &d.CPUs, func(v string) (float64, error) { return strconv.ParseFloat(v, 64) },
		"a number of CPUs such as 1 or 0.5")
	pids := int(d.Pids)
	e.integer("TRAWLER_DOCKER_PIDS", &pids)
	d.Pids = int64(pids)
}

// profiles reads where profiles are kept, the S3 store's settings and the
// writers' lock lifetime.
func (e *envReader) profiles(c *Config) {
	e.str("TRAWLER_PROFILES", &c.Profiles)
	e.str("TRAWLER_RECORDINGS", &c.Recordings)
	e.str("TRAWLER_S3_ACCESS_KEY", &c.S3.AccessKey)
	e.str("TRAWLER_S3_SECRET_KEY", &c.S3.SecretKey)
	e.str("TRAWLER_S3_REGION", &c.S3.Region)
	if v := e.get("TRAWLER_S3_ENDPOINT"); v != "" {
		c.S3.Endpoint, c.S3.Secure = v, true
		if u, err := url.Parse(v); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
			c.S3.Endpoint, c.S3.Secure = u.Host, u.Scheme == "https"
		}
	}
	e.duration("TRAWLER_PROFILE_LOCK_TTL", &c.ProfileLockTTL)
}

// limits reads the sizes and timeouts of the pool and the jobs, and the
// connections a client may hold.
func (e *envReader) limits(c *Config) {
	e.integer("TRAWLER_POOL_SIZE", &c.PoolSize)
	e.integer("TRAWLER_WARM_BROWSERS", &c.WarmBrowsers)
	e.integer("TRAWLER_SCRAPES_PER_BROWSER", &c.ScrapesPerBrowser)
	e.boolean("TRAWLER_REUSE_TABS", &c.ReuseTabs)
	e.integer("TRAWLER_SPARE_TABS", &c.SpareTabs)
	e.integer("TRAWLER_TEAM_CONCURRENCY", &c.TeamConcurrency)
	e.duration("TRAWLER_QUEUE_WAIT", &c.QueueWait)
	e.duration("TRAWLER_BROWSER_START_TIMEOUT", &c.BrowserStartTimeout)
	e.duration("TRAWLER_RESULT_RETENTION", &c.ResultRetention)
	e.duration("TRAWLER_CACHE_RETENTION", &c.CacheRetention)
	e.duration("TRAWLER_MONITOR_MIN_INTERVAL", &c.MonitorMinInterval)
	e.boolean("TRAWLER_SEARCH_INDEX", &c.SearchIndex)
	if v := e.get("TRAWLER_SEARCH_PROVIDERS"); v != "" {
		specs, err := provider.ParseSpecs(v)
		if err != nil {
			e.errs = append(e.errs, err)
		}
		c.SearchProviders = specs
	}
	e.integer("TRAWLER_JOB_WORKERS", &c.JobWorkers)
	e.integer("TRAWLER_HOST_CONCURRENCY", &c.HostConcurrency)
	e.integer("TRAWLER_MAX_CONNS_PER_ADDRESS", &c.MaxConnsPerAddress)
	e.integer("TRAWLER_PARSE_MEMORY_MB", &c.ParseMemoryMB)
	e.integer("TRAWLER_PARSE_MEMORY_TOTAL_MB", &c.ParseMemoryTotalMB)
}

// teams reads the per-team settings: webhook secrets, features and API keys.
func (e *envReader) teams(c *Config) {
	if v := e.get("TRAWLER_WEBHOOK_SECRETS"); v != "" {
		c.WebhookSecrets = map[string]string{}
		for _, entry := range strings.Split(v, ",") {
			team, secret, ok := strings.Cut(strings.TrimSpace(entry), ":")
			if !ok || strings.TrimSpace(team) == "" || secret == "" {
				e.fail("TRAWLER_WEBHOOK_SECRETS must be a comma-separated list of team:secret entries, got %q", entry)
				continue
			}
			c.WebhookSecrets[strings.TrimSpace(team)] = secret
		}
	}
	if v := e.get("TRAWLER_TEAM_FEATURES"); v != "" {
		f, err := parseFeatures(v)
		if err != nil {
			e.errs = append(e.errs, err)
		}
		c.TeamFeatures = f
	}
	if v := e.get("TRAWLER_TEAM_CREDITS"); v != "" {
		credits, err := parseCredits(v)
		if err != nil {
			e.errs = append(e.errs, err)
		}
		c.TeamCredits = credits
	}
	if v := e.get("TRAWLER_API_KEYS"); v != "" {
		keys, err := parseKeys(v)
		if err != nil {
			e.errs = append(e.errs, err)
		}
		c.APIKeys = keys
	}
}

// llm reads the language model's settings, falling back on the variables
// of a Firecrawl self-host .env when Trawler's own are unset.
func (e *envReader) llm(l *model.Config) {
	first := func(names ...string) string {
		for _, n := range names {
			if v := e.get(n); v != "" {
				return v
			}
		}
		return ""
	}
	l.BaseURL = first("TRAWLER_LLM_BASE_URL", "OPENAI_BASE_URL")
	l.APIKey = first("TRAWLER_LLM_API_KEY", "OPENAI_API_KEY")
	l.Model = first("TRAWLER_LLM_MODEL", "MODEL_NAME")
	if l.BaseURL == "" {
		if v := e.get("OLLAMA_BASE_URL"); v != "" {
			// Firecrawl's Ollama provider takes the native API's base
			// (…/api); the OpenAI-compatible one is beside it.
			l.BaseURL = strings.TrimSuffix(strings.TrimRight(v, "/"), "/api")
		} else if l.APIKey != "" {
			l.BaseURL = "https://api.openai.com/v1"
			if l.Model == "" {
				l.Model = "gpt-4o-mini"
			}
		}
	}
	e.integer("TRAWLER_LLM_CONCURRENCY", &l.Concurrency)
	e.duration("TRAWLER_LLM_TIMEOUT", &l.Timeout)
	e.integer("TRAWLER_LLM_CONTEXT_TOKENS", &l.ContextTokens)
	e.integer("TRAWLER_LLM_OUTPUT_TOKENS", &l.OutputTokens)
}

// validateLLM checks the model's settings.
func validateLLM(l model.Config) []error {
	var errs []error
	if l.BaseURL != "" {
		if u, err := url.Parse(l.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("TRAWLER_LLM_BASE_URL must be an absolute http or https URL such as http://127.0.0.1:11434, got %q", l.BaseURL))
		}
		if l.Model == "" {
			errs = append(errs, errors.New("TRAWLER_LLM_MODEL must name the model when TRAWLER_LLM_BASE_URL is set (MODEL_NAME is read too)"))
		}
	}
	if l.Concurrency < 1 || l.Concurrency > 1000 {
		errs = append(errs, fmt.Errorf("TRAWLER_LLM_CONCURRENCY must be between 1 and 1000, got %d", l.Concurrency))
	}
	if l.Timeout < time.Second {
		errs = append(errs, fmt.Errorf("TRAWLER_LLM_TIMEOUT must be at least 1s, got %s", l.Timeout))
	}
	if l.ContextTokens < 1024 {
		errs = append(errs, fmt.Errorf("TRAWLER_LLM_CONTEXT_TOKENS must be at least 1024, got %d", l.ContextTokens))
	}
	if l.OutputTokens < 64 || l.OutputTokens >= l.ContextTokens {
		errs = append(errs, fmt.Errorf("TRAWLER_LLM_OUTPUT_TOKENS must be at least 64 and below TRAWLER_LLM_CONTEXT_TOKENS (%d), got %d", l.ContextTokens, l.OutputTokens))
	}
	return errs
}

// databaseURL reads TRAWLER_DATABASE_URL. A malformed value is not
// repeated in the error, since it may hold a password.
func (e *envReader) databaseURL(c *Config) {
	v := e.get("TRAWLER_DATABASE_URL")
	if v == "" {
		return
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		e.fail("TRAWLER_DATABASE_URL must be a postgres:// or postgresql:// URL")
		return
	}
	c.DatabaseURL = v
}

// nodeURL reads how the other nodes reach this one.
func (e *envReader) nodeURL(c *Config) {
	c.NodeSecret = e.get("TRAWLER_NODE_SECRET")
	if c.NodeSecret != "" && len(c.NodeSecret) < 16 {
		e.fail("TRAWLER_NODE_SECRET must be at least 16 characters long")
	}
	v := e.get("TRAWLER_NODE_URL")
	if v == "" {
		return
	}
	u, err := url.Parse(strings.TrimRight(v, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		e.fail("TRAWLER_NODE_URL must be an absolute http or https URL without a path, got %q", v)
		return
	}
	if c.NodeSecret == "" {
		e.fail("TRAWLER_NODE_URL needs TRAWLER_NODE_SECRET: the nodes prove themselves to each other with it")
		return
	}
	c.NodeURL = u.Scheme + "://" + u.Host
}

// publicURL reads how the URLs handed to clients are built: the public base
// URL and the proxies whose forwarded headers are trusted.
func (e *envReader) publicURL(c *Config) {
	if v := e.get("TRAWLER_PUBLIC_URL"); v != "" {
		u, err := url.Parse(strings.TrimRight(v, "/"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			e.fail("TRAWLER_PUBLIC_URL must be an absolute http or https URL, got %q", v)
		} else {
			c.PublicURL = u
		}
	}
	v := e.get("TRAWLER_TRUSTED_PROXIES")
	if v == "" {
		return
	}
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				e.fail("TRAWLER_TRUSTED_PROXIES must list IP addresses or CIDR prefixes, got %q", s)
				continue
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		c.TrustedProxies = append(c.TrustedProxies, p)
	}
}

func parseKeys(v string) ([]TeamKey, error) {
	var keys []TeamKey
	seen := map[string]bool{}
	for _, pair := range strings.Split(v, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		team, key, ok := strings.Cut(pair, ":")
		team, key = strings.TrimSpace(team), strings.TrimSpace(key)
		if !ok || team == "" || key == "" {
			return nil, fmt.Errorf("TRAWLER_API_KEYS must be a comma-separated list of team:key pairs, got an entry without a team or a key")
		}
		if len(key) < 8 {
			return nil, fmt.Errorf("TRAWLER_API_KEYS: the key of team %q must be at least 8 characters", team)
		}
		if seen[key] {
			return nil, fmt.Errorf("TRAWLER_API_KEYS: a key is listed twice")
		}
		seen[key] = true
		keys = append(keys, TeamKey{Team: team, Key: key})
	}
	return keys, nil
}

func parseFeatures(v string) (map[string]Features, error) {
	out := map[string]Features{}
	for _, entry := range strings.Split(v, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		team, list, ok := strings.Cut(entry, ":")
		team = strings.TrimSpace(team)
		if !ok || team == "" {
			return nil, fmt.Errorf("TRAWLER_TEAM_FEATURES must be a comma-separated list of team:feature+feature entries, got %q", entry)
		}
		f := out[team]
		for _, name := range strings.Split(list, "+") {
			switch strings.TrimSpace(name) {
			case "zeroDataRetention":
				f.ZeroDataRetention = true
			case "ignoreRobotsTxt":
				f.IgnoreRobotsTxt = true
			case "searchZdr":
				f.SearchZDR = true
			case "searchAnon":
				f.SearchAnon = true
			case "recordSessions":
				f.RecordSessions = true
			default:
				return nil, fmt.Errorf("TRAWLER_TEAM_FEATURES: unknown feature %q for team %q (known: zeroDataRetention, ignoreRobotsTxt, searchZdr, searchAnon, recordSessions)", name, team)
			}
		}
		out[team] = f
	}
	return out, nil
}

// parseCredits reads TRAWLER_TEAM_CREDITS: team:credits entries, each
// team once, each limit a whole number of credits of at least 1.
func parseCredits(v string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, entry := range strings.Split(v, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		team, limit, ok := strings.Cut(entry, ":")
		team, limit = strings.TrimSpace(team), strings.TrimSpace(limit)
		if !ok || team == "" || limit == "" {
			return nil, fmt.Errorf("TRAWLER_TEAM_CREDITS must be a comma-separated list of team:credits entries, got %q", entry)
		}
		n, err := strconv.ParseInt(limit, 10, 64)
		if err != nil || n < 1 || n > maxTeamCredits {
			return nil, fmt.Errorf("TRAWLER_TEAM_CREDITS: the credits of team %q must be a whole number between 1 and %d, got %q", team, int64(maxTeamCredits), limit)
		}
		if _, dup := out[team]; dup {
			return nil, fmt.Errorf("TRAWLER_TEAM_CREDITS: team %q is listed twice", team)
		}
		out[team] = n
	}
	return out, nil
}

// maxTeamCredits bounds a team's credit limit: past it, the limit would
// not fit the numbers clients read it into.
const maxTeamCredits = 1e15

// Validate checks every setting and names the one at fault.
func (c *Config) Validate() error {
	var errs []error
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		errs = append(errs, fmt.Errorf("TRAWLER_ADDR must be host:port, got %q", c.Addr))
	} else if c.LocalMode() && !c.AllowPublicLocalMode && !isLoopbackHost(host) {
		errs = append(errs, fmt.Errorf("TRAWLER_ADDR %q is not a loopback address and no TRAWLER_API_KEYS are set: local mode accepts any caller, so set keys or TRAWLER_ALLOW_PUBLIC_LOCAL_MODE=true", c.Addr))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("TRAWLER_DATA_DIR must not be empty"))
	}
	errs = append(errs, c.validateLimits()...)
	if c.BrowserUID <= 0 {
		errs = append(errs, fmt.Errorf("TRAWLER_BROWSER_UID must be a user other than root, got %d", c.BrowserUID))
	}
	if c.BrowserStartTimeout < time.Second {
		errs = append(errs, fmt.Errorf("TRAWLER_BROWSER_START_TIMEOUT must be at least 1s, got %s", c.BrowserStartTimeout))
	}
	if c.ResultRetention < time.Minute {
		errs = append(errs, fmt.Errorf("TRAWLER_RESULT_RETENTION must be at least 1m, got %s", c.ResultRetention))
	}
	if c.MonitorMinInterval < time.Second {
		errs = append(errs, fmt.Errorf("TRAWLER_MONITOR_MIN_INTERVAL must be at least 1s, got %s", c.MonitorMinInterval))
	}
	if c.CacheRetention < time.Minute {
		errs = append(errs, fmt.Errorf("TRAWLER_CACHE_RETENTION must be at least 1m, got %s", c.CacheRetention))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("TRAWLER_LOG_LEVEL must be debug, info, warn or error, got %q", c.LogLevel))
	}
	if c.NodeLease < time.Second || c.NodeLease > 10*time.Minute {
		errs = append(errs, fmt.Errorf("TRAWLER_NODE_LEASE must be between 1s and 10m, got %s", c.NodeLease))
	}
	if c.ProfileLockTTL < time.Second || c.ProfileLockTTL > time.Hour {
		errs = append(errs, fmt.Errorf("TRAWLER_PROFILE_LOCK_TTL must be between 1s and 1h, got %s", c.ProfileLockTTL))
	}
	errs = append(errs, c.validateProfiles()...)
	errs = append(errs, validateLLM(c.LLM)...)
	errs = append(errs, c.validateExecute()...)
	errs = append(errs, c.validateRuntime()...)
	c.fillDerived()
	return errors.Join(errs...)
}

// validateLimits checks the settings that bound how much runs at once:
// browsers and their tabs, jobs, connections, parse memory, the queue. It
// also gives TRAWLER_JOB_WORKERS its default, which depends on the pool.
func (c *Config) validateLimits() []error {
	var errs []error
	if c.PoolSize < 1 || c.PoolSize > 1000 {
		errs = append(errs, fmt.Errorf("TRAWLER_POOL_SIZE must be between 1 and 1000, got %d", c.PoolSize))
	}
	if c.WarmBrowsers < 0 || c.WarmBrowsers > c.PoolSize {
		errs = append(errs, fmt.Errorf("TRAWLER_WARM_BROWSERS must be between 0 and TRAWLER_POOL_SIZE (%d), got %d", c.PoolSize, c.WarmBrowsers))
	}
	if c.ScrapesPerBrowser < 1 || c.ScrapesPerBrowser > 100 {
		errs = append(errs, fmt.Errorf("TRAWLER_SCRAPES_PER_BROWSER must be between 1 and 100, got %d", c.ScrapesPerBrowser))
	}
	if c.SpareTabs < 0 || c.SpareTabs > 64 {
		errs = append(errs, fmt.Errorf("TRAWLER_SPARE_TABS must be between 0 and 64, got %d", c.SpareTabs))
	}
	if c.TeamConcurrency < 1 {
		errs = append(errs, fmt.Errorf("TRAWLER_TEAM_CONCURRENCY must be at least 1, got %d", c.TeamConcurrency))
	}
	errs = append(errs, c.validateTeamCredits()...)
	if c.JobWorkers == 0 {
		c.JobWorkers = max(1, c.PoolSize/2)
	}
	if c.JobWorkers < 1 || c.JobWorkers > c.PoolSize {
		errs = append(errs, fmt.Errorf("TRAWLER_JOB_WORKERS must be between 1 and TRAWLER_POOL_SIZE (%d), got %d", c.PoolSize, c.JobWorkers))
	}
	if c.HostConcurrency < 1 || c.HostConcurrency > 1000 {
		errs = append(errs, fmt.Errorf("TRAWLER_HOST_CONCURRENCY must be between 1 and 1000, got %d", c.HostConcurrency))
	}
	if c.MaxConnsPerAddress < 1 {
		errs = append(errs, fmt.Errorf("TRAWLER_MAX_CONNS_PER_ADDRESS must be at least 1, got %d", c.MaxConnsPerAddress))
	}
	if c.ParseMemoryMB < 32 || c.ParseMemoryMB > 1<<20 {
		errs = append(errs, fmt.Errorf("TRAWLER_PARSE_MEMORY_MB must be between 32 and 1048576, got %d", c.ParseMemoryMB))
	}
	if c.ParseMemoryTotalMB < c.ParseMemoryMB || c.ParseMemoryTotalMB > 1<<20 {
		errs = append(errs, fmt.Errorf("TRAWLER_PARSE_MEMORY_TOTAL_MB must be at least TRAWLER_PARSE_MEMORY_MB (%d) and at most 1048576, got %d", c.ParseMemoryMB, c.ParseMemoryTotalMB))
	}
	if c.QueueWait < 0 || c.QueueWait > 10*time.Minute {
		errs = append(errs, fmt.Errorf("TRAWLER_QUEUE_WAIT must be between 0s and 10m, got %s", c.QueueWait))
	}
	return errs
}

// validateProfiles checks TRAWLER_PROFILES: a directory, or an S3 store
// with its endpoint and keys.
func (c *Config) validateProfiles() []error {
	var errs []error
	if strings.HasPrefix(c.Profiles, "s3://") {
		if c.S3.Endpoint == "" || c.S3.AccessKey == "" || c.S3.SecretKey == "" {
			errs = append(errs, fmt.Errorf("TRAWLER_PROFILES %q is an S3 store: set TRAWLER_S3_ENDPOINT, TRAWLER_S3_ACCESS_KEY and TRAWLER_S3_SECRET_KEY", c.Profiles))
		}
	} else if strings.Contains(c.Profiles, "://") {
		errs = append(errs, fmt.Errorf("TRAWLER_PROFILES must be a directory or s3://bucket/prefix, got %q", c.Profiles))
	}
	switch {
	case c.Recordings == "":
	case !strings.HasPrefix(c.Recordings, "s3://"):
		errs = append(errs, fmt.Errorf("TRAWLER_RECORDINGS must be unset (the database) or s3://bucket/prefix, got %q", c.Recordings))
	case c.S3.Endpoint == "" || c.S3.AccessKey == "" || c.S3.SecretKey == "":
		errs = append(errs, fmt.Errorf("TRAWLER_RECORDINGS %q is an S3 store: set TRAWLER_S3_ENDPOINT, TRAWLER_S3_ACCESS_KEY and TRAWLER_S3_SECRET_KEY", c.Recordings))
	}
	return errs
}

// validateRuntime checks TRAWLER_RUNTIME and the settings of the runtime
// it names.
func (c *Config) validateRuntime() []error {
	var errs []error
	switch c.Runtime {
	case "process":
		errs = append(errs, c.validateChromium()...)
	case "docker":
		errs = append(errs, c.validateDocker()...)
	default:
		errs = append(errs, fmt.Errorf("TRAWLER_RUNTIME must be process or docker, got %q", c.Runtime))
	}
	return errs
}

// validateDocker checks the docker runtime's container limits.
func (c *Config) validateDocker() []error {
	var errs []error
	if c.Docker.Image == "" {
		errs = append(errs, errors.New("TRAWLER_DOCKER_IMAGE must not be empty"))
	}
	if c.Docker.Memory < 128<<20 {
		errs = append(errs, fmt.Errorf("TRAWLER_DOCKER_MEMORY must be at least 128m, got %d bytes", c.Docker.Memory))
	}
	if c.Docker.CPUs <= 0 || c.Docker.CPUs > 1024 {
		errs = append(errs, fmt.Errorf("TRAWLER_DOCKER_CPUS must be above 0, got %g", c.Docker.CPUs))
	}
	if c.Docker.Pids < 64 {
		errs = append(errs, fmt.Errorf("TRAWLER_DOCKER_PIDS must be at least 64, got %d", c.Docker.Pids))
	}
	if c.Docker.Shm < 1<<20 {
		errs = append(errs, fmt.Errorf("TRAWLER_DOCKER_SHM must be at least 1m, got %d bytes", c.Docker.Shm))
	}
	return errs
}

// fillDerived sets what follows from the other settings: an absolute data
// directory, the profile directory under it, and an instance name stable
// across restarts of this host and data directory.
func (c *Config) fillDerived() {
	if c.DataDir != "" {
		if abs, err := filepath.Abs(c.DataDir); err == nil {
			c.DataDir = abs
		}
	}
	if c.Profiles == "" && c.DataDir != "" {
		c.Profiles = filepath.Join(c.DataDir, "profiles")
	}
	if c.Instance == "" {
		host, _ := os.Hostname()
		sum := sha256.Sum256([]byte(c.DataDir))
		c.Instance = fmt.Sprintf("%s-%x", host, sum[:4])
	}
}

// validateTeamCredits refuses a credit limit for a team that no key
// belongs to: a misspelt name would leave the real team without one.
func (c *Config) validateTeamCredits() []error {
	known := map[string]bool{}
	for _, k := range c.APIKeys {
		known[k.Team] = true
	}
	if c.LocalMode() {
		known[LocalTeam] = true
	}
	var errs []error
	for team := range c.TeamCredits {
		if known[team] {
			continue
		}
		if c.LocalMode() {
			errs = append(errs, fmt.Errorf("TRAWLER_TEAM_CREDITS names team %q, but in local mode (no TRAWLER_API_KEYS) the only team is %q", team, LocalTeam))
		} else {
			errs = append(errs, fmt.Errorf("TRAWLER_TEAM_CREDITS names team %q, which no key of TRAWLER_API_KEYS belongs to", team))
		}
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errs
}

// validateChromium finds the browser binary of the process runtime.
func (c *Config) validateChromium() []error {
	var errs []error
	if c.ChromiumPath == "" {
		c.ChromiumPath = findChromium()
	}
	if c.ChromiumPath == "" {
		errs = append(errs, errors.New("TRAWLER_CHROMIUM_PATH is not set and no chromium, chromium-browser or google-chrome is on PATH (install it with apt-get install chromium)"))
	} else if p, err := exec.LookPath(c.ChromiumPath); err != nil {
		errs = append(errs, fmt.Errorf("TRAWLER_CHROMIUM_PATH %q is not an executable file", c.ChromiumPath))
	} else {
		c.ChromiumPath = p
	}
	return errs
}

// splitFlags splits a flag list on spaces, keeping a double-quoted part
// (--host-resolver-rules="MAP *.test 127.0.0.1") in one flag without its
// quotes. Written here: the flags need nothing more than this, and no
// served library is worth a dependency for it.
func splitFlags(v string) []string {
	var out []string
	var cur strings.Builder
	quoted, started := false, false
	for _, r := range v {
		switch {
		case r == '"':
			quoted, started = !quoted, true
		case r == ' ' && !quoted:
			if started {
				out = append(out, cur.String())
				cur.Reset()
				started = false
			}
		default:
			cur.WriteRune(r)
			started = true
		}
	}
	if started {
		out = append(out, cur.String())
	}
	return out
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// PreparesScrapeBrowser reports whether the service prepares a browser
// for single scrapes at start, with SpareTabs tabs ready: only with warm
// browsers, and room in the pool for it beside them.
func (c *Config) PreparesScrapeBrowser() bool {
	return c.SpareTabs > 0 && c.WarmBrowsers > 0 && c.PoolSize > c.WarmBrowsers
}
