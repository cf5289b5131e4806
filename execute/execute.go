// Package execute runs the code that clients send to a browser session's
// execute endpoint (POST /v2/browser/{id}/execute) in the languages node
// and bash: a program with Playwright's browser, context and page attached
// to the session (node), or a shell whose PATH has a `browser` command that
// drives the session's active page (bash). JavaScript evaluated in the page
// itself (language js) is the sessions package's, not this one's.
//
// Each run reaches its session, and nothing else of Trawler's, through a
// CDP endpoint served for that run only: a loopback URL with a secret path
// that Trawler forwards to the CDP proxy with the session's own token, so
// the run is a CDP client like any other (its messages count as activity,
// the proxy's command policy applies). Where it runs is the Mode:
//
//   - Docker: a short-lived container per run (docker.Sandboxes) with no
//     network, whose only way out is a loopback port carried over the
//     container's attached streams to that endpoint; limits on memory, CPU,
//     processes and time.
//   - Node: a local process (node, or bash), for the process runtime, only
//     when the operator enables it (TRAWLER_EXECUTE=node): it runs with
//     Trawler's user and sees the host, so it suits a single-user machine.
//
// Every run has a timeout, after which it is killed (Result.Killed), and
// its standard output and error are each kept up to OutputLimit bytes.
package execute

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/trawler-dev/trawler/docker/sandboxshim"
	"github.com/trawler-dev/trawler/sessions"
)

// runnerJS is the Node.js side of every run (the node language's wrapper
// and the bash sandbox's browser command), written next to each run's code.
//
//go:embed runner.cjs
var runnerJS string

// Mode is where runs happen.
type Mode string

// Modes, as TRAWLER_EXECUTE names them.
const (
	// Off refuses node and bash.
	Off Mode = "off"
	// Node runs each program as a local process.
	Node Mode = "node"
	// Docker runs each program in a sandbox container.
	Docker Mode = "docker"
)

// Languages this package runs.
const (
	LangNode = "node"
	LangBash = "bash"
)

// OutputLimit is how much of its standard output, and of its standard
// error, a run keeps: 1 MiB each; what comes after is counted and dropped,
// and a truncation marker ends the text.
const OutputLimit = 1 << 20

// KilledExitCode is the exit code reported for a run killed at its timeout
// (128 + SIGKILL, as a shell reports it).
const KilledExitCode = 137

// Result is the outcome of a run.
type Result struct {
	Stdout, Stderr string
	// Truncated says that stdout or stderr went past OutputLimit.
	Truncated bool
	ExitCode  int
	// Killed says that the run was killed at its timeout.
	Killed   bool
	Duration time.Duration
}

// Errors callers branch on.
var (
	// ErrDisabled: node and bash are not enabled on this service.
	ErrDisabled = errors.New("node and bash execution is not enabled")
	// ErrBusy: too many runs at once.
	ErrBusy = errors.New("too many executions are running")
)

// UnavailableError is a sandbox that could not run the code (its image
// missing, the engine down); the message says why.
type UnavailableError struct{ Err error }

func (e *UnavailableError) Error() string {
	return "the execute sandbox could not run: " + e.Err.Error()
}
func (e *UnavailableError) Unwrap() error { return e.Err }

// Containers runs sandbox containers; it is implemented by
// *docker.Sandboxes.
type Containers interface {
	Run(ctx context.Context, id string, job sandboxshim.Job, serve func(net.Conn), stdout, stderr io.Writer) (int, error)
}

// Config configures a Service.
type Config struct {
	// Mode says where runs happen (Off when empty).
	Mode Mode
	// CDP is the CDP proxy's handler (of /cdp/{id}...): every run reaches
	// its session through it.
	CDP http.Handler
	// Containers runs the sandboxes of Mode Docker.
	Containers Containers
	// Node is the node binary of Mode Node (default node on PATH).
	Node string
	// Bash is the shell of Mode Node (default bash on PATH).
	Bash string
	// Playwright is the directory of the playwright-core package of Mode
	// Node (default: found by node from the working directory, then in
	// node's global modules).
	Playwright string
	// Dir is where Mode Node keeps its runs' directories and its compile
	// cache (required for Mode Node).
	Dir string
	// Hide, when set, makes a run's loopback CDP endpoint (Mode Node)
	// unreachable from every browser's pages while it lasts (the egress
	// proxy's Hide): only the run's own program may connect.
	Hide func(addr string) (unhide func())
	// MaxRuns bounds the runs at once (default 4); one more waits up to
	// QueueWait, then is refused with ErrBusy.
	MaxRuns   int
	QueueWait time.Duration
	Log       *slog.Logger
}

// Service runs code in the sessions' sandboxes.
type Service struct {
	cfg   Config
	slots chan struct{}
	run   func(ctx context.Context, p *program, stdout, stderr io.Writer) (int, error)
	wg    sync.WaitGroup
}

// New returns a service for cfg's mode; for Mode Node it finds node, bash
// and playwright-core and reports what is missing.
func New(cfg Config) (*Service, error) {
	if cfg.Mode == "" {
		cfg.Mode = Off
	}
	if cfg.MaxRuns <= 0 {
		cfg.MaxRuns = 4
	}
	if cfg.QueueWait <= 0 {
		cfg.QueueWait = 10 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	s := &Service{cfg: cfg, slots: make(chan struct{}, cfg.MaxRuns)}
	switch cfg.Mode {
	case Off:
	case Docker:
		if cfg.Containers == nil {
			return nil, errors.New("execute: mode docker needs a container runner")
		}
		s.run = s.runContainer
	case Node:
		local, err := newLocal(cfg)
		if err != nil {
			return nil, err
		}
		s.run = local.run
	default:
		return nil, fmt.Errorf("execute: unknown mode %q", cfg.Mode)
	}
	return s, nil
}

// Mode is where the service runs code.
func (s *Service) Mode() Mode { return s.cfg.Mode }

// Close waits for the runs in progress.
func (s *Service) Close() { s.wg.Wait() }

// program is one run, as the mode-specific runners see it.
type program struct {
	id       string
	language string
	code     string
	// target is the CDP target id of the session's active page ("" when
	// it has none).
	target string
	// endpoint serves the session's CDP at "/" + token.
	endpoint http.Handler
	token    string
}

// Run runs code in language (LangNode or LangBash) against session s for
// at most timeout. A program that fails is a Result with its exit code,
// not an error; errors are ErrDisabled, ErrBusy, an *UnavailableError, a
// *sessions.DestroyedError when the session ended during the run, and
// ctx's.
func (s *Service) Run(ctx context.Context, sess *sessions.Session, language, code string, timeout time.Duration) (Result, error) {
	if s.run == nil {
		return Result{}, ErrDisabled
	}
	if language != LangNode && language != LangBash {
		return Result{}, fmt.Errorf("execute: language %q is not node or bash", language)
	}
	wait := time.NewTimer(s.cfg.QueueWait)
	defer wait.Stop()
	select {
	case s.slots <- struct{}{}:
	case <-wait.C:
		return Result{}, ErrBusy
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	defer func() { <-s.slots }()
	s.wg.Add(1)
	defer s.wg.Done()

	sess.Touch()
	p := &program{id: uuid.NewString(), language: language, code: code, token: newToken()}
	p.endpoint = &endpoint{cdp: s.cfg.CDP, session: sess.ID(), cdpToken: sess.Record().CDPToken, token: p.token, version: sess.CDP().Version}
	pageCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	if page, err := sess.CDP().ActivePage(pageCtx); err == nil {
		p.target = page.TargetID
	}
	cancel()

	// The run ends at its timeout or with the session; while it lasts it
	// is the session's activity.
	runCtx, cancelRun := context.WithTimeout(ctx, timeout)
	defer cancelRun()
	go func() {
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-sess.Done():
				cancelRun()
				return
			case <-tick.C:
				sess.Touch()
			}
		}
	}()
	stdout, stderr := &capped{max: OutputLimit}, &capped{max: OutputLimit}
	began := time.Now()
	exit, err := s.run(runCtx, p, stdout, stderr)
	res := Result{ExitCode: exit, Duration: time.Since(began)}
	sess.Touch()
	select {
	case <-sess.Done():
		return Result{}, &sessions.DestroyedError{ID: sess.ID(), Reason: sess.Ended().Text}
	default:
	}
	switch {
	case errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		res.Killed, res.ExitCode = true, KilledExitCode
	case ctx.Err() != nil:
		return Result{}, ctx.Err()
	case err != nil:
		return Result{}, &UnavailableError{Err: err}
	}
	res.Stdout, res.Stderr = stdout.String(), stderr.String()
	res.Truncated = stdout.dropped > 0 || stderr.dropped > 0
	s.cfg.Log.Debug("execute run", "session", sess.ID(), "language", language, "exitCode", res.ExitCode,
		"killed", res.Killed, "took", res.Duration.Round(time.Millisecond))
	return res, nil
}

func newToken() string {
	b := make([]byte, 24)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// capped keeps the first max bytes written to it and counts the rest.
type capped struct {
	mu      sync.Mutex
	max     int
	buf     bytes.Buffer
	dropped int64
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.max - c.buf.Len()
	if room >= len(p) {
		c.buf.Write(p)
		return len(p), nil
	}
	if room > 0 {
		// Cut before a character that would be split.
		cut := room
		for cut > 0 && cut > room-utf8.UTFMax && !utf8.RuneStart(p[cut]) {
			cut--
		}
		c.buf.Write(p[:cut])
		c.dropped += int64(len(p) - cut)
		// What the cut left of the room stays unused: the text is cut once.
		c.max = c.buf.Len()
		return len(p), nil
	}
	c.dropped += int64(len(p))
	return len(p), nil
}

// String is what was kept, with a marker when something was dropped.
func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dropped == 0 {
		return c.buf.String()
	}
	return fmt.Sprintf("%s\n[output truncated by Trawler: %d more bytes not shown; the limit is %d bytes]\n",
		c.buf.String(), c.dropped, OutputLimit)
}
