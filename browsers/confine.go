package browsers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
//     network namespace with nothing but loopback, whose one way out is a
//     listening socket on the proxy port that Trawler holds (see
//     handOff); pid, IPC and UTS namespaces of its own;
//   - with a minimal environment: no TRAWLER_* variable, no secret.
//
// Where the host cannot give that (no bubblewrap, no user namespaces), the
// browsers run as Chromium processes of Trawler's own user, behind the
// egress proxy and the CDP policy alone; Reason says why.
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

	// launcher: the proxy listener is made by the launcher inside the
	// sandbox rather than by Trawler (see handOff).
	launcher bool
}

// DefaultBrowserUID is the user browsers run as when Trawler runs as root:
// one that owns no file on the host (the uid distroless images name
// nonroot).
const DefaultBrowserUID = 65532

// UserDataDir is a browser's --user-data-dir when it is confined (and in
// the docker runtime's containers): on the private /tmp, so that a
// browser's profile never touches the host's disk and disappears with it.
const UserDataDir = "/tmp/trawler-user-data"

var (
	probeMu sync.Mutex
	probed  = map[string]Confinement{}
)

// Probe finds out how browsers can be confined on this host, once per
// bwrap and user: bwrap (a path, or "" to look for it on PATH) must run a
// sandbox of the kind Start makes, and user, pid and network namespaces
// must open inside it, as Chromium's own sandbox opens them for its
// renderers. uid and gid are the user browsers run as when Trawler is
// root.
func Probe(ctx context.Context, bwrap string, uid, gid int) Confinement {
	key := fmt.Sprintf("%s %d %d", bwrap, uid, gid)
	probeMu.Lock()
	defer probeMu.Unlock()
	if c, ok := probed[key]; ok {
		return c
	}
	c := probe(ctx, bwrap, uid, gid)
	probed[key] = c
	return c
}

func probe(ctx context.Context, bwrap string, uid, gid int) Confinement {
	c := Confinement{UID: os.Getuid(), GID: os.Getgid(), launcher: os.Getuid() != 0}
	if c.UID == 0 {
		if uid <= 0 || gid <= 0 {
			c.Reason = "the browser user must not be root"
			return c
		}
		c.UID, c.GID = uid, gid
	}
	unconfined := func(why string) Confinement {
		u := Confinement{UID: os.Getuid(), GID: os.Getgid(), Reason: why}
		u.Sandbox = u.UID != 0 && probeUserNS(ctx) == nil
		return u
	}
	if bwrap == "" {
		bwrap = "bwrap"
	}
	path, err := exec.LookPath(bwrap)
	if err != nil {
		return unconfined("bubblewrap (" + bwrap + ") is not installed (Debian: apt-get install bubblewrap)")
	}
	c.Bwrap = path
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	// A bubblewrap in the sandbox opens the namespaces Chromium's sandbox
	// will.
	args := append(c.bwrapArgs(), "--", path, "--unshare-user", "--unshare-pid", "--unshare-net", "--ro-bind", "/", "/", "true")
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = browserEnv()
	cmd.SysProcAttr = c.procAttr()
	if out, err := cmd.CombinedOutput(); err != nil {
		return unconfined(fmt.Sprintf("bubblewrap cannot confine a browser here (%v): %s", err, strings.TrimSpace(string(out))))
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

// procAttr starts bubblewrap (or Chromium, unconfined) as the browser user,
// leading its own process group.
func (c Confinement) procAttr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if os.Getuid() == 0 && c.UID != 0 {
		attr.Credential = &syscall.Credential{Uid: uint32(c.UID), Gid: uint32(c.GID)}
	}
	return attr
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
	args = append(args, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--chdir", "/tmp", "--clearenv")
	return append(args, setenvArgs(browserEnv())...)
}

// browserEnv is the environment a browser gets: a home on its private /tmp
// and the locale and time zone of Trawler's, nothing else (no TRAWLER_*
// setting, no credential).
func browserEnv() []string {
	env := []string{"HOME=/tmp", "PATH=/usr/bin:/bin", "TZ=" + Timezone()}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "LANG" || k == "LANGUAGE" || strings.HasPrefix(k, "LC_") {
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

// Marker names a confined browser on its command line (bubblewrap's and
// Chromium's, as a switch Chromium ignores): the browsers' root directory,
// hashed so that no host path shows inside the sandbox, then the browser's
// id. Tests and the bench find a service's browsers by it.
func Marker(root, id string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(root)))
	return "trawler-browsers-" + hex.EncodeToString(sum[:8]) + "/" + id
}

// sandboxed is a confined browser's command before it starts: bubblewrap
// around Chromium, with the files to inherit after the DevTools pipe (fds
// 3 and 4), and handOff, which gives Trawler the browser's proxy listener
// once the sandbox exists (and lets the browser go on).
type sandboxed struct {
	cmd *exec.Cmd
	// files are inherited from fd 5 on; parentEnds are those of them the
	// parent closes once the command started.
	files, parentEnds []*os.File
	handOff           func(time.Duration) (net.Listener, error)
	cleanup           func() // after a failed start
}

// command is chromium with args in a sandbox. Where Trawler runs as root it
// makes the browser's proxy listener itself, in the sandbox's network
// namespace, while bubblewrap waits before starting Chromium (--info-fd,
// --block-fd). Otherwise (an unprivileged Trawler may not enter the
// namespace) a launcher does: this same program, started in the sandbox
// through an inherited descriptor of its executable, which listens, hands
// the listener over and becomes Chromium.
func (c Confinement) command(chromium string, args []string) (*sandboxed, error) {
	if c.launcher {
		return c.launcherCommand(chromium, args)
	}
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	blockR, blockW, err := os.Pipe()
	if err != nil {
		infoR.Close()
		infoW.Close()
		return nil, err
	}
	bw := append(c.bwrapArgs(), "--info-fd", "5", "--block-fd", "6", "--", chromium)
	s := &sandboxed{cmd: exec.Command(c.Bwrap, append(bw, args...)...), files: []*os.File{infoW, blockR}}
	s.parentEnds = s.files
	s.cleanup = func() {
		infoR.Close()
		blockW.Close()
	}
	s.handOff = func(timeout time.Duration) (net.Listener, error) {
		defer s.cleanup()
		infoR.SetReadDeadline(time.Now().Add(timeout))
		var info struct {
			ChildPID int `json:"child-pid"`
		}
		if err := json.NewDecoder(infoR).Decode(&info); err != nil || info.ChildPID <= 0 {
			return nil, fmt.Errorf("reading the sandbox's pid from bubblewrap: %v", err)
		}
		ln, err := listenIn(fmt.Sprintf("/proc/%d/ns/net", info.ChildPID))
		if err != nil {
			return nil, err
		}
		if _, err := blockW.Write([]byte{1}); err != nil {
			ln.Close()
			return nil, fmt.Errorf("letting the sandbox go on: %w", err)
		}
		return ln, nil
	}
	return s, nil
}

// listenIn listens on the proxy port in the network namespace at nsPath.
// The socket is made on a thread that enters the namespace for that call
// alone; Go makes no new thread from a locked one, so nothing else of
// Trawler's ever runs there.
func listenIn(nsPath string) (net.Listener, error) {
	ns, err := unix.Open(nsPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the sandbox's network namespace: %w", err)
	}
	defer unix.Close(ns)
	type result struct {
		ln  net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		own, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{err: err}
			return
		}
		defer unix.Close(own)
		if err := unix.Setns(ns, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- result{err: fmt.Errorf("entering the sandbox's network namespace: %w", err)}
			return
		}
		ln, err := net.Listen("tcp4", "0.0.0.0:"+strconv.Itoa(shim.ProxyPort))
		if unix.Setns(own, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		} // else the thread stays locked, and ends with this goroutine
		done <- result{ln, err}
	}()
	r := <-done
	if r.err != nil {
		return nil, fmt.Errorf("listening in the sandbox: %w", r.err)
	}
	return r.ln, nil
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

// selfExe is a path descriptor of this program's executable, opened once:
// it stays valid when the file is replaced by an upgrade.
var selfExe = sync.OnceValues(func() (*os.File, error) {
	fd, err := unix.Open("/proc/self/exe", unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening this program's executable: %w", err)
	}
	return os.NewFile(uintptr(fd), "trawler-exe"), nil
})

func (c Confinement) launcherCommand(chromium string, args []string) (*sandboxed, error) {
	exe, err := selfExe()
	if err != nil {
		return nil, err
	}
	conn, end, err := socketPair()
	if err != nil {
		return nil, err
	}
	bw := append(c.bwrapArgs(), "--", exeInSandbox, launcherArg, "run", chromium)
	s := &sandboxed{cmd: exec.Command(c.Bwrap, append(bw, args...)...), files: []*os.File{exe, end}, parentEnds: []*os.File{end}}
	s.cleanup = func() { conn.Close() }
	s.handOff = func(timeout time.Duration) (net.Listener, error) {
		defer conn.Close()
		return receiveListener(conn, timeout)
	}
	return s, nil
}

// probeUserNS reports whether this process may open a user namespace, as
// Chromium's sandbox does, by starting the launcher's probe in one.
func probeUserNS(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/proc/self/exe", launcherArg, "probe")
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

// launcher is the first program in a browser's sandbox where an
// unprivileged Trawler starts it:
//
//	launcher run CHROMIUM ARGS...
//
// listens on *:3128 in the sandbox's network namespace, hands the listener
// to Trawler over fd 6, then becomes Chromium with fds 3 and 4, its
// DevTools pipe, and nothing else of Trawler's. (launcher probe exits at
// once: probeUserNS starts it in new namespaces.)
func launcher(args []string) int {
	if len(args) > 0 && args[0] == "probe" {
		return 0
	}
	if len(args) < 2 || args[0] != "run" {
		fmt.Fprintln(os.Stderr, "launcher: run CHROMIUM ARGS...")
		return 2
	}
	if err := run(args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "launcher:", err)
		return 1
	}
	return 0 // not reached: run returns only on failure
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
	if errors.Is(err, io.EOF) {
		err = errors.New("the launcher ended first")
	}
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
