package docker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/trawler-dev/trawler/docker/sandboxshim"
)

// SandboxConfig describes the execute sandboxes: short-lived containers
// that run the code a client sends to a browser session (node, bash).
// Zero fields take the defaults named in their comments.
type SandboxConfig struct {
	// Image is the sandbox image (default trawler/sandbox:latest, built by
	// scripts/images.sh sandbox): cmd/trawler-sandbox as its entrypoint,
	// Node.js, playwright-core and a shell.
	Image string
	// Instance names the service instance that owns the containers (default
	// "default"), as Config.Instance does for browsers.
	Instance string
	// Memory is each sandbox's memory limit in bytes, swap included
	// (default 512 MiB).
	Memory int64
	// CPUs is how many CPUs each sandbox may use (default 1.0).
	CPUs float64
	// PidsLimit bounds each sandbox's processes and threads (default 256).
	PidsLimit int64
	// TmpSize is the size of each sandbox's /tmp, the only place it may
	// write (default 64 MiB).
	TmpSize int64
	// Log receives the sandboxes' own complaints. Nil discards them.
	Log *slog.Logger
}

// Defaults of SandboxConfig.
const (
	DefaultSandboxImage   = "trawler/sandbox:latest"
	DefaultSandboxMemory  = 512 << 20
	DefaultSandboxCPUs    = 1.0
	DefaultSandboxPids    = 256
	DefaultSandboxTmpSize = 64 << 20
)

// labelSandbox marks execute sandboxes, which carry labelInstance and
// labelID too.
const labelSandbox = "dev.trawler.sandbox"

func (c SandboxConfig) withDefaults() SandboxConfig {
	if c.Image == "" {
		c.Image = DefaultSandboxImage
	}
	if c.Instance == "" {
		c.Instance = DefaultInstance
	}
	if c.Memory == 0 {
		c.Memory = DefaultSandboxMemory
	}
	if c.CPUs == 0 {
		c.CPUs = DefaultSandboxCPUs
	}
	if c.PidsLimit == 0 {
		c.PidsLimit = DefaultSandboxPids
	}
	if c.TmpSize == 0 {
		c.TmpSize = DefaultSandboxTmpSize
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return c
}

// Sandboxes runs execute sandboxes on the local Docker engine: one
// container per run, with no network (loopback only: the program's
// connections to its loopback port travel over the container's attached
// streams, see package docker/sandboxshim), a read-only root, a small
// /tmp, no capabilities, and limits on memory, CPU and processes. Each
// carries the dev.trawler.sandbox and dev.trawler.instance labels, so that
// a restarted service removes those a crashed one left (Reap).
type Sandboxes struct {
	cfg SandboxConfig
	cli *client.Client
	wg  sync.WaitGroup // removals of ended sandboxes
}

// NewSandboxes connects to the Docker engine named by the environment
// (DOCKER_HOST, else the local socket). It does not contact the engine yet.
func NewSandboxes(cfg SandboxConfig) (*Sandboxes, error) {
	cfg = cfg.withDefaults()
	if cfg.Memory < 16<<20 {
		return nil, fmt.Errorf("sandbox memory limit %d bytes is below 16 MiB", cfg.Memory)
	}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	return &Sandboxes{cfg: cfg, cli: cli}, nil
}

// Close waits for the removal of ended sandboxes and releases the
// connection to the engine.
func (s *Sandboxes) Close() error {
	s.wg.Wait()
	return s.cli.Close()
}

// Run runs job in a new sandbox container named after id, serving each
// connection its program makes to job.Port with serve, and copying the
// program's output to stdout and stderr. It returns the program's exit
// code. When ctx ends first (the run's timeout), the container is killed
// and Run returns ctx's error. The container is removed in every case.
func (s *Sandboxes) Run(ctx context.Context, id string, job sandboxshim.Job, serve func(net.Conn), stdout, stderr io.Writer) (int, error) {
	if !validID.MatchString(id) {
		return 0, fmt.Errorf("sandbox id %q cannot name a container", id)
	}
	name := "trawler-sandbox-" + id
	conf, host := s.containerConfig(id)
	created, err := s.cli.ContainerCreate(ctx, conf, host, nil, nil, name)
	if err != nil && ctx.Err() != nil {
		removeByName(s.cli, name)
	}
	if cerrdefs.IsNotFound(err) {
		return 0, fmt.Errorf("creating sandbox container: image %s not found (build it with make images, or scripts/images.sh sandbox): %w", s.cfg.Image, err)
	}
	if err != nil {
		return 0, fmt.Errorf("creating sandbox container: %w", err)
	}
	// The engine removes the container once it exits (AutoRemove); one
	// whose run did not complete (its timeout, a failure) is removed by
	// force, which kills it.
	completed := false
	defer func() {
		if !completed {
			s.remove(created.ID)
		}
	}()

	hj, err := s.cli.ContainerAttach(ctx, created.ID, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		return 0, fmt.Errorf("attaching to sandbox container: %w", err)
	}
	defer hj.Close()
	sessionOut, sessionOutW := io.Pipe()
	complaints := &tailWriter{max: 4096}
	demuxed := make(chan struct{})
	go func() {
		defer close(demuxed)
		_, err := stdcopy.StdCopy(sessionOutW, complaints, hj.Reader)
		if err == nil {
			err = io.EOF
		}
		sessionOutW.CloseWithError(err)
	}()
	if err := s.cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		hj.Close()
		<-demuxed
		return 0, fmt.Errorf("starting sandbox container: %w", err)
	}
	conn := &attachedStreams{Reader: sessionOut, hj: hj.Conn}
	// When ctx ends (the run's timeout), the container is killed, and the
	// session ends with it once what the program wrote before has arrived;
	// an engine that does not kill it in time is not waited for.
	runCtx, cancelRun := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRun()
	stopKill := context.AfterFunc(ctx, func() {
		time.AfterFunc(3*time.Second, cancelRun)
		kctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.cli.ContainerKill(kctx, created.ID, "KILL"); err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
			s.cfg.Log.Warn("killing sandbox container", "container", shortID(created.ID), "err", err)
		}
	})
	defer stopKill()
	code, err := sandboxshim.Run(runCtx, conn, job, serve, stdout, stderr, io.Discard)
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	hj.Close()
	<-demuxed
	completed = err == nil
	if err != nil && ctx.Err() == nil {
		if msg := complaints.String(); msg != "" {
			err = fmt.Errorf("%w (the sandbox said: %s)", err, msg)
		}
	}
	return code, err
}

// containerConfig is the container of sandbox id: no network, no
// capability, a read-only root but for its /tmp, within the
// configuration's limits, removed by the engine once it exits.
func (s *Sandboxes) containerConfig(id string) (*container.Config, *container.HostConfig) {
	pids := s.cfg.PidsLimit
	yes := true
	conf := &container.Config{
		Image: s.cfg.Image,
		// The entrypoint's stdin and stdout carry the session.
		OpenStdin: true, StdinOnce: true, AttachStdin: true, AttachStdout: true, AttachStderr: true,
		Labels: labels(labelSandbox, s.cfg.Instance, id),
	}
	host := &container.HostConfig{
		NetworkMode: "none",
		LogConfig:   container.LogConfig{Type: "none"},
		// The engine removes the container once it exits; Reap removes
		// one whose service died before it did.
		AutoRemove: true,
		// docker-init as PID 1 reaps what the program leaves behind.
		Init: &yes,
		Resources: container.Resources{
			Memory:     s.cfg.Memory,
			MemorySwap: s.cfg.Memory,
			NanoCPUs:   int64(s.cfg.CPUs * 1e9),
			PidsLimit:  &pids,
		},
		ReadonlyRootfs: true,
		// exec: the browser command is a script written there for each run.
		Tmpfs:       map[string]string{"/tmp": fmt.Sprintf("rw,exec,nosuid,nodev,size=%d,mode=1777", s.cfg.TmpSize)},
		CapDrop:     []string{"ALL"},
		SecurityOpt: []string{"no-new-privileges"},
	}
	return conf, host
}

// remove force-removes a sandbox's container in the background, so that
// a run cut off by its timeout is answered without waiting for the engine.
func (s *Sandboxes) remove(id string) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		err := s.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true})
		if err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
			s.cfg.Log.Warn("removing sandbox container", "container", shortID(id), "err", err)
		}
	}()
}

// Reap force-removes every sandbox container of this Instance and returns
// how many it removed: those a service that died (kill -9) left running.
// It is meant for the service's start, before it runs sandboxes of its own.
func (s *Sandboxes) Reap(ctx context.Context) (int, error) {
	return s.ReapInstance(ctx, s.cfg.Instance)
}

// ReapInstance force-removes every sandbox container of the service
// instance named instance on this engine: another node's, once that node is
// known to be dead.
func (s *Sandboxes) ReapInstance(ctx context.Context, instance string) (int, error) {
	return reapLabelled(ctx, s.cli, "sandbox", labelSandbox, instance)
}

// attachedStreams is a sandbox's session seen from Trawler: the
// container's demultiplexed stdout to read, its stdin to write. Closing it
// closes only the stdin side, so that the container's output still drains.
type attachedStreams struct {
	io.Reader
	hj net.Conn
}

func (a *attachedStreams) Write(p []byte) (int, error) { return a.hj.Write(p) }

func (a *attachedStreams) Close() error {
	if c, ok := a.hj.(interface{ CloseWrite() error }); ok {
		return c.CloseWrite()
	}
	return a.hj.Close()
}

// tailWriter keeps the first max bytes written to it, for error messages.
type tailWriter struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if room := w.max - len(w.buf); room > 0 {
		w.buf = append(w.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}
