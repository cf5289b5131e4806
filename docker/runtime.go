// Package docker runs Trawler's browsers in Docker containers, one container
// per browser, as the alternative to local Chromium processes
// (browsers.ProcessRuntime). It owns those containers: their resource limits,
// the labels that tie them to one service instance, and their removal. It
// runs the execute endpoint's sandboxes too, one short-lived container per
// run (Sandboxes, sandbox.go).
package docker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/cdp"
	"github.com/trawler-dev/trawler/docker/shim"
)

// Config describes the browser containers. Zero fields take the defaults
// named in their comments.
type Config struct {
	// Image is the browser image (default trawler/browser:latest, built by
	// scripts/images.sh browser or from deploy/browser.Dockerfile).
	Image string
	// Command is the Chromium binary inside the image (default
	// /usr/lib/chromium/chromium).
	Command string
	// Shim is the image's entrypoint, cmd/trawler-shim (default
	// /trawler-shim), which starts Command.
	Shim string
	// Egress receives every connection a browser makes to its proxy, with
	// the browser's id and the loopback address it dialled in its container
	// (the egress proxy's ServeStream). Nil leaves the browsers without
	// network.
	Egress func(browser string, to netip.Addr, c net.Conn)
	// Instance names the service instance that owns the containers (default
	// "default"). Every container carries it in the dev.trawler.instance
	// label and Reap removes only the containers with the same value, so two
	// services sharing one engine must set different values.
	Instance string
	// Memory is each browser's memory limit in bytes, swap included
	// (default 2 GiB).
	Memory int64
	// CPUs is how many CPUs each browser may use (default 1.0).
	CPUs float64
	// PidsLimit bounds the processes and threads of each browser (default
	// 1024): a page cannot fork-bomb the host.
	PidsLimit int64
	// ShmSize is the size of each browser's /dev/shm in bytes (default
	// 256 MiB).
	ShmSize int64
	// StartTimeout bounds how long Start waits for the browser to answer
	// (default 30s).
	StartTimeout time.Duration
	// ExtraFlags are added after browsers.ChromiumFlags
	// (TRAWLER_CHROMIUM_FLAGS), e.g. --lang.
	ExtraFlags []string
	// Log receives the runtime's warnings and, at debug level, the browsers'
	// own output. Nil discards them.
	Log *slog.Logger
}

// Defaults of Config.
const (
	DefaultImage        = "trawler/browser:latest"
	DefaultCommand      = "/usr/lib/chromium/chromium"
	DefaultShim         = "/trawler-shim"
	DefaultInstance     = "default"
	DefaultMemory       = 2 << 30
	DefaultCPUs         = 1.0
	DefaultPidsLimit    = 1024
	DefaultShmSize      = 256 << 20
	DefaultStartTimeout = 30 * time.Second
)

// withDefaults returns c with its zero fields set to the defaults.
func (c Config) withDefaults() Config {
	if c.Image == "" {
		c.Image = DefaultImage
	}
	if c.Command == "" {
		c.Command = DefaultCommand
	}
	if c.Shim == "" {
		c.Shim = DefaultShim
	}
	if c.Instance == "" {
		c.Instance = DefaultInstance
	}
	if c.Memory == 0 {
		c.Memory = DefaultMemory
	}
	if c.CPUs == 0 {
		c.CPUs = DefaultCPUs
	}
	if c.PidsLimit == 0 {
		c.PidsLimit = DefaultPidsLimit
	}
	if c.ShmSize == 0 {
		c.ShmSize = DefaultShmSize
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = DefaultStartTimeout
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports every field that cannot work, zero fields counting as
// their defaults.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	// The engine refuses less than 6 MiB; Chromium needs far more anyway.
	if c.Memory < 64<<20 {
		errs = append(errs, fmt.Errorf("memory limit %d bytes is below 64 MiB", c.Memory))
	}
	if c.CPUs < 0.01 || math.IsNaN(c.CPUs) || math.IsInf(c.CPUs, 0) {
		errs = append(errs, fmt.Errorf("CPUs must be at least 0.01, got %v", c.CPUs))
	}
	if c.PidsLimit < 0 {
		errs = append(errs, fmt.Errorf("pids limit must be positive, got %d", c.PidsLimit))
	}
	if c.ShmSize < 0 {
		errs = append(errs, fmt.Errorf("shm size must be positive, got %d", c.ShmSize))
	}
	if c.StartTimeout < 0 {
		errs = append(errs, fmt.Errorf("start timeout must be positive, got %s", c.StartTimeout))
	}
	for _, f := range c.ExtraFlags {
		if browsers.ReservedFlag(f) {
			errs = append(errs, fmt.Errorf("extra flag %s is set by the runtime for each browser", f))
		}
	}
	return errors.Join(errs...)
}

// Labels on every browser container. Reap finds a crashed service's
// containers by them; an operator can too: docker ps --filter
// label=dev.trawler.instance=NAME.
const (
	labelBrowser  = "dev.trawler.browser"
	labelInstance = "dev.trawler.instance"
	labelID       = "dev.trawler.id"
)

// BrowserUID is the unprivileged user (and group) every browser container
// runs as, whatever user its image names.
const BrowserUID = 1000

// validID is what a container name allows after the "trawler-browser-"
// prefix; the pool's ids are UUIDs.
var validID = regexp.MustCompile(`^[a-zA-Z0-9_.-]+$`)

// Runtime runs each browser in its own container on the local Docker engine,
// with a network namespace of its own that holds nothing but loopback: the
// browser's DevTools pipe and its proxy connections travel over the
// container's attached standard streams (package docker/shim), so neither
// a page nor another container can reach the browser, and the browser
// reaches the network only through Trawler's egress proxy.
type Runtime struct {
	cfg Config
	cli *client.Client

	present   sync.Once
	presented []string // browsers.PresentedFlags, found out at the first start
}

var _ browsers.Runtime = (*Runtime)(nil)

// New validates cfg and connects to the Docker engine named by the
// environment (DOCKER_HOST, else the local socket). It does not contact the
// engine yet: Start and Reap report an unreachable one.
func New(cfg Config) (*Runtime, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("docker runtime: %w", err)
	}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	return &Runtime{cfg: cfg.withDefaults(), cli: cli}, nil
}

// Close releases the connection to the engine. It leaves the browsers
// running: closing them is their owner's job.
func (r *Runtime) Close() error { return r.cli.Close() }

// ChromiumVersion is the version of the image's Chromium, known without
// starting a container: scripts/images.sh tags each image it builds
// trawler/browser:<that version>. An image with no such tag (one built
// from deploy/browser.Dockerfile) does not tell it.
func (r *Runtime) ChromiumVersion(ctx context.Context) (string, error) {
	img, err := r.cli.ImageInspect(ctx, r.cfg.Image)
	if err != nil {
		return "", fmt.Errorf("inspecting image %s: %w", r.cfg.Image, err)
	}
	for _, ref := range img.RepoTags {
		tag := ref[strings.LastIndexByte(ref, ':')+1:]
		if v := browsers.VersionIn(tag); v != "" && v == tag {
			return v, nil
		}
	}
	return "", fmt.Errorf("image %s names no Chromium version in its tags %v", r.cfg.Image, img.RepoTags)
}

// Start creates and starts a browser container named after id and returns
// once its browser answers over the DevTools pipe. On any failure it
// removes the container again.
func (r *Runtime) Start(ctx context.Context, id string) (browsers.Browser, error) {
	if !validID.MatchString(id) {
		return nil, fmt.Errorf("browser id %q cannot name a container", id)
	}
	began := time.Now()
	profile, err := browserSeccomp()
	if err != nil {
		return nil, fmt.Errorf("the browser containers' seccomp profile: %w", err)
	}
	conf, host := r.containerConfig(id, profile)
	created, err := r.cli.ContainerCreate(ctx, conf, host, nil, nil, "trawler-browser-"+id)
	if err != nil && ctx.Err() != nil {
		// The engine may have created the container after all.
		removeByName(r.cli, "trawler-browser-"+id)
	}
	if cerrdefs.IsNotFound(err) {
		return nil, fmt.Errorf("creating browser container: image %s not found (build it with scripts/images.sh browser or deploy/browser.Dockerfile): %w", r.cfg.Image, err)
	}
	if err != nil {
		return nil, fmt.Errorf("creating browser container: %w", err)
	}

	b := &browser{
		id:          id,
		containerID: created.ID,
		cli:         r.cli,
		log:         r.cfg.Log,
		done:        make(chan struct{}),
		tail:        &browsers.LineTail{},
	}
	// Attached before it starts, so that nothing the shim writes is lost.
	hj, err := r.cli.ContainerAttach(ctx, created.ID, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		removeByName(r.cli, created.ID)
		return nil, fmt.Errorf("attaching to browser container: %w", err)
	}
	b.attached = hj.Conn
	stdout, stdoutW := io.Pipe()
	b.logs.Add(1)
	go b.demux(hj.Reader, stdoutW)
	if err := r.cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		hj.Close()
		b.logs.Wait()
		removeByName(r.cli, created.ID)
		return nil, fmt.Errorf("starting browser container: %w", err)
	}

	// The watchers belong to the browser, not to the caller: they outlive
	// Start's ctx and stop in Close.
	var wctx context.Context
	wctx, b.stopWatch = context.WithCancel(context.WithoutCancel(ctx))
	go b.watch(wctx)

	startCtx, cancel := context.WithTimeout(ctx, r.cfg.StartTimeout)
	defer cancel()
	err = b.connect(startCtx, stdout, r.cfg.Egress)
	switch {
	case err == nil:
		b.log.Debug("browser container started", "browser", id, "container", shortID(created.ID), "took", time.Since(began).Round(time.Millisecond))
		return b, nil
	case errors.Is(err, errExited):
		b.Close()
		return nil, fmt.Errorf("chromium exited before it answered on its DevTools pipe (%v): %s", b.Err(), b.tail.String())
	case ctx.Err() != nil:
		b.Close()
		return nil, ctx.Err()
	default:
		b.Close()
		return nil, fmt.Errorf("chromium did not answer on its DevTools pipe within %s (%v): %s", r.cfg.StartTimeout, err, b.tail.String())
	}
}

// containerConfig is the container of browser id: the shim and Chromium
// as an unprivileged user, with the limits of the configuration, no
// network, no capability and nothing of the host (profile is the seccomp
// profile).
func (r *Runtime) containerConfig(id, profile string) (*container.Config, *container.HostConfig) {
	pids := r.cfg.PidsLimit
	yes := true
	conf := &container.Config{
		Image:      r.cfg.Image,
		User:       strconv.Itoa(BrowserUID) + ":" + strconv.Itoa(BrowserUID),
		Entrypoint: []string{r.cfg.Shim},
		Cmd:        r.args(),
		// The profile and Chromium's caches under $HOME go to the tmpfs.
		// Nothing of Trawler's environment goes in.
		Env: []string{"HOME=/tmp", "TZ=" + browsers.Timezone()},
		// The shim's stdin and stdout carry the DevTools pipe and the
		// proxy connections.
		OpenStdin: true, AttachStdin: true, AttachStdout: true, AttachStderr: true,
		Labels: labels(labelBrowser, r.cfg.Instance, id),
	}
	host := &container.HostConfig{
		// A namespace of its own with loopback only: no route to the
		// host, other containers or the network but the shim's streams.
		NetworkMode: "none",
		// Nothing to keep: the stdout is DevTools traffic, which must
		// not pile up in the engine's log files.
		LogConfig: container.LogConfig{Type: "none"},
		// docker-init as PID 1 reaps Chromium's zombie helpers and
		// forwards the stop signal.
		Init: &yes,
		Resources: container.Resources{
			Memory:     r.cfg.Memory,
			MemorySwap: r.cfg.Memory, // no swap on top of the limit
			NanoCPUs:   int64(r.cfg.CPUs * 1e9),
			PidsLimit:  &pids,
		},
		ShmSize: r.cfg.ShmSize,
		Tmpfs:   map[string]string{"/tmp": "rw,nosuid,nodev,mode=1777"},
		// No capability, none to gain: Chromium's own sandbox (on) needs
		// none, only the namespaces browserSeccomp lets it open.
		CapDrop:     []string{"ALL"},
		SecurityOpt: []string{"no-new-privileges", "seccomp=" + profile},
		// Nothing of the host is mounted: not the data directory, not a
		// profile, not a socket. The browser's files are on /tmp.
	}
	return conf, host
}

// args are the shim's arguments: Chromium and its flags, with the DevTools
// pipe and the shim's loopback proxy.
func (r *Runtime) args() []string {
	args := make([]string, 0, len(browsers.ChromiumFlags)+len(r.cfg.ExtraFlags)+8)
	args = append(args, "-proxy-port", strconv.Itoa(shim.ProxyPort), "--", r.cfg.Command)
	r.present.Do(func() { r.presented = browsers.PresentedFlags(context.Background(), r) })
	own, extra := browsers.WithExtra(r.cfg.ExtraFlags)
	args = append(args, own...)
	args = append(args, r.presented...)
	args = append(args, browsers.ProxyFlags("http://127.0.0.1:"+strconv.Itoa(shim.ProxyPort))...)
	args = append(args, "--user-data-dir="+browsers.UserDataDir)
	args = append(args, extra...)
	return append(args, "about:blank")
}

var errExited = errors.New("browser container exited")

// connect starts Trawler's end of the shim's session over the attached
// streams and waits until the browser answers on its DevTools pipe.
func (b *browser) connect(ctx context.Context, stdout io.Reader, egress func(string, netip.Addr, net.Conn)) error {
	var serve func(netip.Addr, net.Conn)
	if egress != nil {
		serve = func(to netip.Addr, c net.Conn) { egress(b.id, to, c) }
	}
	sess, err := shim.Connect(attachedConn{stdout, b.attached}, serve, io.Discard)
	if err != nil {
		return err
	}
	b.sess = sess
	pipe := sess.CDP()
	// Closing the session closes the pipe and every proxy stream with it.
	b.mux = cdp.NewMux(pipe, pipe, sess, cdp.MuxOptions{DownloadDir: browsers.UserDataDir + "/Downloads"})
	ready := make(chan error, 1)
	go func() { ready <- b.mux.Start(ctx) }()
	select {
	case err := <-ready:
		if err != nil {
			select {
			case <-b.done:
				return errExited
			case <-time.After(500 * time.Millisecond):
			}
		}
		return err
	case <-b.done:
		return errExited
	}
}

// attachedConn is the shim's session seen from Trawler: the container's
// stdout to read, its stdin to write.
type attachedConn struct {
	io.Reader
	w net.Conn
}

func (c attachedConn) Write(p []byte) (int, error) { return c.w.Write(p) }
func (c attachedConn) Close() error                { return c.w.Close() }

// demux splits the attached stream: stdout (the shim's session) to
// stdout, stderr (the shim's and Chromium's messages) to the log and the
// tail kept for error messages.
func (b *browser) demux(attached io.Reader, stdout *io.PipeWriter) {
	defer b.logs.Done()
	pr, pw := io.Pipe()
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			b.tail.Add(sc.Text())
			b.log.Debug("chromium", "browser", b.id, "line", sc.Text())
		}
		io.Copy(io.Discard, pr)
	}()
	_, err := stdcopy.StdCopy(stdout, pw, attached)
	if err == nil {
		err = io.EOF
	}
	stdout.CloseWithError(err)
	pw.Close()
	<-scanned
}

// Reap force-removes every browser container of this Instance, running or
// not, and returns how many it removed. It is meant for the service's start,
// before it runs browsers of its own: it would remove those too.
func (r *Runtime) Reap(ctx context.Context) (int, error) {
	return r.ReapInstance(ctx, r.cfg.Instance)
}

// ReapInstance force-removes every browser container of the service
// instance named instance on this engine: another node's, once that node is
// known to be dead (its containers are orphans nobody will stop).
func (r *Runtime) ReapInstance(ctx context.Context, instance string) (int, error) {
	return reapLabelled(ctx, r.cli, "browser", labelBrowser, instance)
}

// labels mark a container of one kind (label) as instance's, named by id:
// what reapLabelled finds it by.
func labels(label, instance, id string) map[string]string {
	return map[string]string{label: "1", labelInstance: instance, labelID: id}
}

// reapLabelled force-removes the containers of one kind (what, for errors)
// that carry label=1 and instance's labelInstance, and returns how many it
// removed.
func reapLabelled(ctx context.Context, cli *client.Client, what, label, instance string) (int, error) {
	list, err := cli.ContainerList(ctx, container.ListOptions{
		All: true,
		Filters: filters.NewArgs(
			filters.Arg("label", label+"=1"),
			filters.Arg("label", labelInstance+"="+instance),
		),
	})
	if err != nil {
		return 0, fmt.Errorf("listing %s containers: %w", what, err)
	}
	n := 0
	var errs []error
	for _, c := range list {
		err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
		switch {
		case err == nil:
			n++
		case cerrdefs.IsNotFound(err), cerrdefs.IsConflict(err): // gone, or going, meanwhile
		default:
			errs = append(errs, fmt.Errorf("removing %s container %s: %w", what, shortID(c.ID), err))
		}
	}
	return n, errors.Join(errs...)
}

// browser is one browser container.
type browser struct {
	id, containerID string
	cli             *client.Client
	log             *slog.Logger
	done            chan struct{}
	stopWatch       context.CancelFunc
	attached        net.Conn       // the container's attached streams
	sess            *shim.Session  // the shim's session over them
	mux             *cdp.Mux       // the DevTools pipe in that session
	logs            sync.WaitGroup // the stream demultiplexer
	tail            *browsers.LineTail

	mu  sync.Mutex
	err error

	closeOnce sync.Once
	closeErr  error
}

func (b *browser) ID() string            { return b.id }
func (b *browser) CDP() *cdp.Mux         { return b.mux }
func (b *browser) Done() <-chan struct{} { return b.done }

func (b *browser) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// Close stops the container with a short grace period, removes it and waits
// for Done. Later and concurrent calls wait for the first and return its
// result.
func (b *browser) Close() error {
	b.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		select {
		case <-b.done:
		default:
			grace := 2 // seconds; the profile is thrown away, so little to flush
			err := b.cli.ContainerStop(ctx, b.containerID, container.StopOptions{Timeout: &grace})
			if err != nil && !cerrdefs.IsNotFound(err) {
				b.log.Warn("stopping browser container", "browser", b.id, "container", shortID(b.containerID), "err", err)
			}
		}
		b.closeErr = b.remove()
		// An engine that no longer answers would leave the watcher waiting
		// for ever.
		select {
		case <-b.done:
		case <-time.After(10 * time.Second):
		}
		b.stopWatch()
		<-b.done
		if b.mux != nil {
			b.mux.Close()
		}
		b.attached.Close()
		b.logs.Wait()
	})
	return b.closeErr
}

func (b *browser) remove() error { return removeByName(b.cli, b.containerID) }

// removeByName force-removes a container, named or by id, with a context of
// its own: it cleans up after a caller whose context may have ended.
func removeByName(cli *client.Client, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	err := cli.ContainerRemove(ctx, name, container.RemoveOptions{Force: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("removing browser container %s: %w", shortID(name), err)
	}
	return nil
}

// watch waits for the container to stop, records why and closes done.
func (b *browser) watch(ctx context.Context) {
	err := b.wait(ctx)
	b.mu.Lock()
	b.err = err
	b.mu.Unlock()
	close(b.done)
}

func (b *browser) wait(ctx context.Context) error {
	const attempts = 3
	var err error
	for range attempts {
		resC, errC := b.cli.ContainerWait(ctx, b.containerID, container.WaitConditionNotRunning)
		select {
		case res := <-resC:
			return b.exitError(ctx, res)
		case err = <-errC:
		}
		if ctx.Err() != nil || cerrdefs.IsNotFound(err) {
			break
		}
		// The connection to the engine broke (a daemon restart, say): ask
		// again before giving the browser up.
		b.log.Warn("waiting for browser container", "browser", b.id, "container", shortID(b.containerID), "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return fmt.Errorf("lost track of browser container: %w", err)
}

func (b *browser) exitError(ctx context.Context, res container.WaitResponse) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	oom := false
	// The container may be gone already (Close removes it); the exit code
	// then says enough.
	if info, err := b.cli.ContainerInspect(ctx, b.containerID); err == nil && info.State != nil {
		oom = info.State.OOMKilled
	}
	msg := describeExit(res.StatusCode, oom)
	if res.Error != nil && res.Error.Message != "" {
		msg += ": " + res.Error.Message
	}
	return errors.New(msg)
}

// describeExit explains a container's exit code: above 128 it is the signal
// that ended docker-init, 137 (SIGKILL) being the usual one for both
// docker kill and the kernel's out-of-memory killer.
func describeExit(code int64, oomKilled bool) string {
	msg := fmt.Sprintf("browser container exited with code %d", code)
	switch {
	case oomKilled:
		msg += " (killed: out of memory)"
	case code > 128 && code < 128+65:
		msg += " (" + syscall.Signal(code-128).String() + ")"
	}
	return msg
}

func shortID(id string) string { return id[:min(12, len(id))] }
