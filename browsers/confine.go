package browsers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/trawler-dev/trawler/docker/shim"
)

// Confinement is the wall the process runtime puts around each browser, so
// that a browser which obeys every command a client sends (the CDP proxy's
// policy gone) still reaches nothing of the host:
//
//   - it runs as an unprivileged user (UID) when Trawler runs as root,
//     with Chromium's own sandbox on;
//   - in bubblewrap's namespaces: a mount namespace that shows it the
//     system's programs, libraries and fonts read-only and a private /tmp
//     that holds its profile, and nothing else (not Trawler's data
//     directory, not another browser's files, not the host's /etc); a
//     network namespace with nothing but loopback, where Trawler's egress
//     proxy is the only way out (a listening socket Trawler holds, see
//     launch); pid, IPC and UTS namespaces of its own;
//   - with a minimal environment: no TRAWLER_* variable, no secret.
//
// Where the host cannot give that (no bubblewrap, no user namespaces), the
// browsers run as Chromium processes of Trawler's own user, the way the
// egress proxy and the CDP policy alone protect the host; Reason says why.
type Confinement struct {
	// Confined: browsers run in bubblewrap's namespaces as described (or,
	// on the docker runtime, in containers that wall them in alike).
	Confined bool
	// Wall names what confines them.
	Wall string
	// Sandbox: Chromium's own sandbox is on (no --no-sandbox).
	Sandbox bool
	// UID and GID are the user browsers run as.
	UID, GID int
	// Bwrap is the bubblewrap program when Confined.
	Bwrap string
	// Reason says why browsers are not Confined (or have no Sandbox).
	Reason string
}

// DefaultBrowserUID is the user browsers run as when Trawler runs as root:
// one that owns no file on the host (the uid distroless images name
// nonroot).
const DefaultBrowserUID = 65532

// UserDataDir is a browser's --user-data-dir when it is confined (and in
// the docker runtime's containers): on the private /tmp, so that a
// browser's profile never touches the host's disk and disappears with it.
const UserDataDir = "/tmp/trawler-user-data"

// Probe finds out how browsers can be confined on this host: bwrap (a path,
// or "" to look for it on PATH) must run a sandbox of the kind Start makes,
// and a user namespace must open inside it, as Chromium's own sandbox
// opens one. uid and gid are the user browsers run as when Trawler is root.
func Probe(ctx context.Context, bwrap string, uid, gid int) Confinement {
	c := Confinement{UID: os.Getuid(), GID: os.Getgid()}
	if c.UID == 0 {
		if uid <= 0 || gid <= 0 {
			c.Reason = "the browser user must not be root"
			return c
		}
		c.UID, c.GID = uid, gid
	}
	if bwrap == "" {
		bwrap = "bwrap"
	}
	path, err := exec.LookPath(bwrap)
	if err != nil {
		c.Reason = "bubblewrap (" + bwrap + ") is not installed (Debian: apt-get install bubblewrap)"
		c.UID, c.GID = os.Getuid(), os.Getgid()
		c.Sandbox = c.UID != 0 && probeUserNS(ctx) == nil
		return c
	}
	c.Bwrap = path
	if err := c.probe(ctx); err != nil {
		c.Reason = err.Error()
		c.Bwrap = ""
		c.UID, c.GID = os.Getuid(), os.Getgid()
		c.Sandbox = c.UID != 0 && probeUserNS(ctx) == nil
		return c
	}
	c.Confined, c.Sandbox = true, true
	c.Wall = "bubblewrap namespaces (only the system's programs and fonts, a private /tmp, loopback-only network, its own processes)"
	return c
}

// String says in one line how browsers run, for the log and the health
// answer.
func (c Confinement) String() string {
	switch {
	case c.Confined:
		return fmt.Sprintf("confined: %s, Chromium's sandbox on, uid %d", c.Wall, c.UID)
	case c.Sandbox:
		return fmt.Sprintf("not confined (%s): Chromium's sandbox on, uid %d, the host's files and network visible to the browser process", c.Reason, c.UID)
	}
	return fmt.Sprintf("not confined (%s): no sandbox (--no-sandbox), uid %d, the host's files and network visible to every browser process", c.Reason, c.UID)
}

// probe runs the launcher's probe in a sandbox like a browser's.
func (c Confinement) probe(ctx context.Context) error {
	exe, err := selfExe()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	args := append(c.bwrapArgs(), "--", exeInSandbox, launcherArg, "probe")
	cmd := exec.CommandContext(ctx, c.Bwrap, args...)
	cmd.ExtraFiles = []*os.File{nil, nil, exe}
	cmd.Env = browserEnv()
	cmd.SysProcAttr = c.procAttr()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("bubblewrap cannot confine a browser here (%v): %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// procAttr starts bubblewrap (or Chromium, unconfined) as the browser user,
// leading its own process group.
func (c Confinement) procAttr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if os.Getuid() == 0 && c.UID != 0 {
		attr.Credential = &syscall.Credential{Uid: uint32(c.UID), Gid: uint32(c.GID)}
	}
	return attr
}

// The launcher is this same program, started inside the sandbox through an
// inherited descriptor of its executable (fd 5): Trawler's binary, or a
// test binary, in whatever directory, which the browser user may not be
// able to read. launcherArg, its first argument, selects it (see init).
const (
	launcherArg  = "__trawler-browser-launcher"
	exeInSandbox = "/proc/self/fd/5"
	// socketFD is the launcher's end of the socket the proxy listener is
	// handed back through.
	socketFD = 6
)

var (
	exeOnce sync.Once
	exeFile *os.File
	exeErr  error
)

// selfExe is a path descriptor of this program's executable, opened once:
// it stays valid when the file is replaced by an upgrade.
func selfExe() (*os.File, error) {
	exeOnce.Do(func() {
		fd, err := unix.Open("/proc/self/exe", unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			exeErr = fmt.Errorf("opening this program's executable: %w", err)
			return
		}
		exeFile = os.NewFile(uintptr(fd), "trawler-exe")
	})
	return exeFile, exeErr
}

// bwrapArgs are bubblewrap's options, before the command.
func (c Confinement) bwrapArgs() []string {
	args := []string{
		"--unshare-all", "--die-with-parent", "--hostname", "localhost",
		"--ro-bind", "/usr", "/usr",
	}
	// Debian's merged /usr makes /bin, /lib... symlinks into it; elsewhere
	// they are directories of their own.
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		if target, err := os.Readlink(d); err == nil {
			args = append(args, "--symlink", target, d)
		} else if st, err := os.Stat(d); err == nil && st.IsDir() {
			args = append(args, "--ro-bind", d, d)
		}
	}
	// What Chromium reads of /etc and /var: fonts, the library cache, the
	// time zone, certificates, the operator's Chromium policies. Nothing
	// else of the host (no passwd, hosts, or anyone's files).
	for _, p := range []string{"/etc/fonts", "/etc/ld.so.cache", "/etc/localtime", "/etc/ssl/certs",
		"/etc/ca-certificates", "/etc/alternatives", "/etc/chromium", "/etc/chromium.d", "/var/cache/fontconfig",
		"/sys/devices/system/cpu"} {
		args = append(args, "--ro-bind-try", p, p)
	}
	return append(args,
		"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--chdir", "/tmp",
		// The launcher's own environment; it gives Chromium the same.
		"--clearenv")
}

// browserEnv is the environment a browser gets: a home on its private /tmp
// and the locale and time zone of Trawler's, nothing else (no TRAWLER_*
// setting, no credential).
func browserEnv() []string {
	env := []string{"HOME=/tmp", "PATH=/usr/bin:/bin"}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "LANG" || k == "LANGUAGE" || k == "TZ" || strings.HasPrefix(k, "LC_") {
			env = append(env, kv)
		}
	}
	return env
}

// setenvArgs are bubblewrap's --setenv options for env.
func setenvArgs(env []string) []string {
	var args []string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		args = append(args, "--setenv", k, v)
	}
	return args
}

// probeUserNS reports whether this process may open a user namespace, as
// Chromium's sandbox does, by starting the launcher's probe in one.
func probeUserNS(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/proc/self/exe", launcherArg, "probe-child")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("no user namespaces (%v): %s", err, out)
	}
	return nil
}

func init() {
	// The launcher runs before anything else of the program it is part of.
	if len(os.Args) > 1 && os.Args[1] == launcherArg {
		os.Exit(launcher(os.Args[2:]))
	}
}

// Marker is the argument that names a confined browser's sandbox on its
// command line (bubblewrap's, visible on the host): the browsers' root
// directory root, hashed so that no host path shows inside the sandbox,
// then the browser's id. Tests find a service's browsers by it.
func Marker(root, id string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(root)))
	return "trawler-browsers-" + hex.EncodeToString(sum[:8]) + "/" + id
}

// launcher is the first program in a browser's sandbox:
//
//	launcher probe          opens a user namespace as Chromium's sandbox would
//	launcher run MARKER -- ARGS
//	                        listens on *:3128 in the sandbox's network
//	                        namespace, hands the listener to Trawler over fd 6,
//	                        then becomes Chromium (ARGS) with fds 3 and 4, its
//	                        DevTools pipe, and nothing else of Trawler's
//
// Trawler accepts the browser's proxy connections on that listener itself,
// so the browser's only way out of its loopback-only network is Trawler's
// egress proxy, and nothing runs in the sandbox beside Chromium.
func launcher(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "launcher: no mode")
		return 2
	}
	switch args[0] {
	case "probe-child":
		return 0
	case "probe":
		// Chromium's namespace sandbox opens user, pid and network
		// namespaces of its own for its renderers.
		if err := probeUserNS(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "launcher:", err)
			return 1
		}
		return 0
	case "run":
		if len(args) < 4 || args[2] != "--" {
			fmt.Fprintln(os.Stderr, "launcher: run MARKER -- CHROMIUM ARGS...")
			return 2
		}
		if err := run(args[3:]); err != nil {
			fmt.Fprintln(os.Stderr, "launcher:", err)
			return 1
		}
	}
	fmt.Fprintln(os.Stderr, "launcher: unknown mode", args[0])
	return 2
}

// run hands the proxy listener to Trawler and executes Chromium; it returns
// only on failure.
func run(chromium []string) error {
	ln, err := net.Listen("tcp4", "0.0.0.0:"+strconv.Itoa(shim.ProxyPort))
	if err != nil {
		return fmt.Errorf("listening for the browser's proxy connections: %w", err)
	}
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		return err
	}
	if err := unix.Sendmsg(socketFD, []byte{0}, unix.UnixRights(int(f.Fd())), nil, 0); err != nil {
		return fmt.Errorf("handing the listener to Trawler: %w", err)
	}
	f.Close()
	ln.Close()
	// Only the DevTools pipe (3, 4) and the standard streams go on.
	unix.CloseOnExec(5)
	unix.CloseOnExec(socketFD)
	path, err := exec.LookPath(chromium[0])
	if err != nil {
		return err
	}
	return syscall.Exec(path, chromium, os.Environ())
}

// receiveListener waits for the listener the launcher hands over on conn.
func receiveListener(conn *net.UnixConn, timeout time.Duration) (net.Listener, error) {
	conn.SetReadDeadline(time.Now().Add(timeout))
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, fmt.Errorf("waiting for the sandbox's proxy listener: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, errors.New("the sandbox sent no proxy listener")
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil, errors.New("the sandbox sent no proxy listener")
	}
	f := os.NewFile(uintptr(fds[0]), "browser-proxy-listener")
	defer f.Close()
	return net.FileListener(f)
}

// socketPair returns the two ends of a Unix stream socket: Trawler's as a
// connection, the launcher's as a file to inherit.
func socketPair() (*net.UnixConn, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	ours := os.NewFile(uintptr(fds[0]), "launcher-socket")
	defer ours.Close()
	c, err := net.FileConn(ours)
	if err != nil {
		unix.Close(fds[1])
		return nil, nil, err
	}
	return c.(*net.UnixConn), os.NewFile(uintptr(fds[1]), "launcher-socket"), nil
}
