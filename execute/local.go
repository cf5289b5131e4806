package execute

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// local runs programs as local processes (Mode Node): node or bash, in a
// directory of their own under Dir, in a process group of their own that
// is killed at the end of the run, whatever it left running.
type local struct {
	node, bash, playwright string
	dir                    string // runs/ and cache/ are under it
	runner                 string // the runner's path
	hide                   func(addr string) func()
}

func newLocal(cfg Config) (*local, error) {
	if cfg.Dir == "" {
		return nil, errors.New("execute: mode node needs a directory")
	}
	l := &local{dir: cfg.Dir, hide: cfg.Hide}
	var err error
	if l.node, err = exec.LookPath(or(cfg.Node, "node")); err != nil {
		return nil, fmt.Errorf("TRAWLER_EXECUTE=node needs Node.js: %w (apt-get install nodejs)", err)
	}
	if l.bash, err = exec.LookPath(or(cfg.Bash, "bash")); err != nil {
		return nil, fmt.Errorf("TRAWLER_EXECUTE=node needs bash: %w", err)
	}
	l.playwright = cfg.Playwright
	if l.playwright == "" {
		if l.playwright, err = findPlaywright(l.node); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(filepath.Join(l.playwright, "package.json")); err != nil {
		return nil, fmt.Errorf("TRAWLER_EXECUTE_PLAYWRIGHT %s is not the directory of the playwright-core package: %w", l.playwright, err)
	}
	if err := os.MkdirAll(filepath.Join(l.dir, "runs"), 0o700); err != nil {
		return nil, err
	}
	// Runs left by a service that died with them.
	if old, err := os.ReadDir(filepath.Join(l.dir, "runs")); err == nil {
		for _, e := range old {
			os.RemoveAll(filepath.Join(l.dir, "runs", e.Name()))
		}
	}
	l.runner = filepath.Join(l.dir, "runner.cjs")
	if err := os.WriteFile(l.runner, []byte(runnerJS), 0o644); err != nil {
		return nil, err
	}
	return l, nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// findPlaywright asks node where playwright-core is, from the working
// directory and from node's global modules.
func findPlaywright(node string) (string, error) {
	const script = `const path = require('path');
const global = path.resolve(path.dirname(process.execPath), '..', 'lib', 'node_modules');
console.log(path.dirname(require.resolve('playwright-core/package.json', {paths: [process.cwd(), global]})));`
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, "-e", script).Output()
	if err != nil {
		return "", errors.New("TRAWLER_EXECUTE=node needs the playwright-core package, which node finds neither from the working directory nor in its global modules: install it (npm install playwright-core) or set TRAWLER_EXECUTE_PLAYWRIGHT to its directory")
	}
	return strings.TrimSpace(string(out)), nil
}

func (l *local) run(ctx context.Context, p *program, stdout, stderr io.Writer) (int, error) {
	home := filepath.Join(l.dir, "runs", p.id)
	bin := filepath.Join(home, ".trawler", "bin")
	if err := os.MkdirAll(bin, 0o700); err != nil {
		return 0, err
	}
	defer os.RemoveAll(home)
	argv, err := l.writeProgram(home, bin, p)
	if err != nil {
		return 0, err
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	if l.hide != nil {
		defer l.hide(ln.Addr().String())()
	}
	srv := serveCDP(ln, p.endpoint)
	defer srv.Close()

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = home
	cmd.Env = []string{
		"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + home,
		"TMPDIR=" + home, // Playwright's artifacts directory goes with the run
		"LANG=C.UTF-8",
		"TRAWLER_CDP_URL=ws://" + ln.Addr().String() + "/" + p.token,
		"TRAWLER_PAGE_TARGET=" + p.target,
		"TRAWLER_PLAYWRIGHT=" + l.playwright,
		"TRAWLER_COMPILE_CACHE=" + filepath.Join(l.dir, "cache"),
	}
	return runGroup(ctx, cmd, stdout, stderr)
}

// writeProgram writes the run's browser command into bin and its code
// under home, and returns the command line that runs the code.
func (l *local) writeProgram(home, bin string, p *program) ([]string, error) {
	if err := os.WriteFile(filepath.Join(bin, "browser"), []byte(browserCommand(l.bash, l.node, l.runner)), 0o700); err != nil {
		return nil, err
	}
	var argv []string
	switch p.language {
	case LangNode:
		file := filepath.Join(home, ".trawler", "code.js")
		if err := os.WriteFile(file, []byte(p.code), 0o600); err != nil {
			return nil, err
		}
		argv = []string{l.node, l.runner, "node", file}
	case LangBash:
		file := filepath.Join(home, ".trawler", "code.sh")
		if err := os.WriteFile(file, []byte(p.code), 0o600); err != nil {
			return nil, err
		}
		argv = []string{l.bash, file}
	}
	return argv, nil
}

// runGroup runs cmd in a process group of its own, copying its output to
// stdout and stderr, until it exits or ctx ends; then what it left running
// in its group is killed. It returns the program's exit code (128 plus the
// signal's number for one killed by a signal), KilledExitCode when ctx
// ended it.
func runGroup(ctx context.Context, cmd *exec.Cmd, stdout, stderr io.Writer) (int, error) {
	// The output pipes are the run's own, copied here, so that the program's
	// exit is seen at once even while something it started holds them.
	outR, outW, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer outR.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		outW.Close()
		return 0, err
	}
	defer errR.Close()
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		return 0, fmt.Errorf("starting %s: %w", cmd.Args[0], err)
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		done := make(chan struct{})
		go func() { io.Copy(stderr, errR); close(done) }()
		io.Copy(stdout, outR)
		<-done
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var waitErr error
	killed := false
	select {
	case waitErr = <-exited:
	case <-ctx.Done():
		killed = true
	}
	// What the program left running in its group goes with it.
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if killed {
		waitErr = <-exited
	}
	select {
	case <-copied:
	case <-time.After(time.Second):
		// A process that left the group holds a pipe: the output ends here.
		outR.Close()
		errR.Close()
		<-copied
	}
	if killed {
		return KilledExitCode, ctx.Err()
	}
	return exitCode(waitErr)
}

// exitCode is the exit code of a program that ended with err (from Wait).
func exitCode(err error) (int, error) {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee):
		if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			return 128 + int(st.Signal()), nil
		}
		return ee.ExitCode(), nil
	default:
		return 0, err
	}
}
