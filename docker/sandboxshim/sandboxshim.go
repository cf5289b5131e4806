// Package sandboxshim is the program that runs in each execute sandbox
// container (cmd/trawler-sandbox, the sandbox image's entrypoint) and its
// counterpart in Trawler. Like a browser container (package docker/shim),
// a sandbox has a network namespace with nothing in it but loopback, so the
// container's standard streams, which Trawler attaches to through the Docker
// engine, are its only way in or out. Over them the two sides run one yamux
// session:
//
//   - Trawler opens three streams, in order: the job stream, on which it
//     sends the Job and then reads the program's standard output; the
//     stderr stream, which carries the program's standard error; and the
//     status stream, on which the sandbox reports the program's exit code
//     once both outputs have been sent in full;
//   - every connection the program makes to the loopback port the Job names
//     becomes a stream the sandbox opens, which Trawler serves (with one
//     browser session's CDP, for the execute sandbox).
//
// The sandbox exits when Trawler ends the session, or when Trawler goes away.
package sandboxshim

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/trawler-dev/trawler/docker/shim"
)

// Job is what the sandbox runs.
type Job struct {
	// Argv is the program and its arguments.
	Argv []string `json:"argv"`
	// Env is the program's whole environment, NAME=value.
	Env []string `json:"env"`
	// Dir is the program's working directory, created when missing.
	Dir string `json:"dir"`
	// Files are written before the program starts.
	Files []File `json:"files"`
	// Port is the loopback port the sandbox listens on for the program;
	// each connection to it is carried to Trawler. 0 listens on none.
	Port int `json:"port"`
}

// File is a file of a Job.
type File struct {
	Path string      `json:"path"`
	Mode os.FileMode `json:"mode"`
	Data string      `json:"data"`
}

// status is the last message of a run, on the status stream.
type status struct {
	ExitCode int    `json:"exitCode"`
	Error    string `json:"error,omitempty"`
}

// Main runs the sandbox's side over stdin and stdout; its own complaints go
// to stderr. It returns the process's exit code: 0 once Trawler has the
// program's outcome, 1 if the session failed before.
func Main(stdin io.Reader, stdout, stderr io.Writer) int {
	sess, err := yamux.Server(shim.Stdio{Reader: stdin, Writer: stdout}, shim.YamuxConfig(stderr))
	if err != nil {
		fmt.Fprintln(stderr, "trawler-sandbox:", err)
		return 1
	}
	if err := serve(sess); err != nil {
		fmt.Fprintln(stderr, "trawler-sandbox:", err)
		return 1
	}
	return 0
}

func serve(sess *yamux.Session) error {
	jobStream, err := sess.Accept()
	if err != nil {
		return fmt.Errorf("waiting for the job: %w", err)
	}
	errStream, err := sess.Accept()
	if err != nil {
		return fmt.Errorf("waiting for the stderr stream: %w", err)
	}
	statusStream, err := sess.Accept()
	if err != nil {
		return fmt.Errorf("waiting for the status stream: %w", err)
	}
	var job Job
	if err := json.NewDecoder(bufio.NewReader(jobStream)).Decode(&job); err != nil {
		return fmt.Errorf("reading the job: %w", err)
	}
	code, runErr := run(sess, job, jobStream, errStream)
	st := status{ExitCode: code}
	if runErr != nil {
		st.Error = runErr.Error()
	}
	json.NewEncoder(statusStream).Encode(st)
	statusStream.Close()
	// Frames still queued would be lost if the process exited now: wait
	// for Trawler to end the session, which it does once it has read the
	// status.
	select {
	case <-sess.CloseChan():
	case <-time.After(10 * time.Second):
	}
	return nil
}

// run starts the job's program with its output on the two streams, carries
// its connections to the loopback port, and returns its exit code once it
// has exited and its output has been sent.
func run(sess *yamux.Session, job Job, stdout, stderr net.Conn) (int, error) {
	defer stdout.Close()
	defer stderr.Close()
	if len(job.Argv) == 0 {
		return 127, errors.New("the job names no program")
	}
	for _, f := range job.Files {
		if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
			return 127, err
		}
		if err := os.WriteFile(f.Path, []byte(f.Data), f.Mode.Perm()); err != nil {
			return 127, err
		}
	}
	if job.Dir != "" {
		if err := os.MkdirAll(job.Dir, 0o755); err != nil {
			return 127, err
		}
	}
	if job.Port != 0 {
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(job.Port))
		if err != nil {
			return 127, fmt.Errorf("listening on the loopback port: %w", err)
		}
		defer ln.Close()
		go forward(sess, ln)
	}
	cmd := exec.Command(job.Argv[0], job.Argv[1:]...)
	cmd.Env, cmd.Dir = job.Env, job.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	outR, outW, err := os.Pipe()
	if err != nil {
		return 127, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return 127, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return 127, fmt.Errorf("starting %s: %w", job.Argv[0], err)
	}
	var copies sync.WaitGroup
	copies.Add(2)
	go func() { defer copies.Done(); io.Copy(stdout, outR) }()
	go func() { defer copies.Done(); io.Copy(stderr, errR) }()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var waitErr error
	select {
	case waitErr = <-exited:
	case <-sess.CloseChan():
		// Trawler went away: so does the program.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		waitErr = <-exited
	}
	// What the program left running in its group goes with it, so that
	// nothing holds the output pipes open.
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	drained := make(chan struct{})
	go func() { copies.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(2 * time.Second):
		// A process that left the group still holds a pipe: the output
		// ends here anyway.
		outR.Close()
		errR.Close()
	}
	return shim.ExitCode(waitErr), nil
}

// forward carries every connection to ln over a stream of its own.
func forward(sess *yamux.Session, ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			s, err := sess.Open()
			if err != nil {
				c.Close()
				return
			}
			shim.Splice(c, s)
		}()
	}
}

// Run is Trawler's end of one sandbox: over conn (the container's attached
// streams: stdout to read, stdin to write) it sends job, copies the
// program's output to stdout and stderr, and serves each connection the
// program makes to job.Port with serve. It returns the program's exit code
// once the program has exited and its output has been copied; when ctx
// ends first, it returns ctx's error at once (the caller then stops the
// container). It closes conn before it returns.
func Run(ctx context.Context, conn io.ReadWriteCloser, job Job, serve func(net.Conn), stdout, stderr io.Writer, log io.Writer) (int, error) {
	sess, err := yamux.Client(conn, shim.YamuxConfig(log))
	if err != nil {
		conn.Close()
		return 0, err
	}
	// The copies write to the caller's writers: they end, with the
	// session, before Run returns.
	var copies sync.WaitGroup
	defer func() {
		sess.Close()
		copies.Wait()
	}()
	var streams [3]net.Conn
	for i := range streams {
		if streams[i], err = sess.Open(); err != nil {
			return 0, fmt.Errorf("opening the sandbox's streams: %w", err)
		}
	}
	go func() {
		for {
			s, err := sess.Accept()
			if err != nil {
				return
			}
			if serve == nil {
				s.Close()
				continue
			}
			go serve(s)
		}
	}()
	if err := json.NewEncoder(streams[0]).Encode(job); err != nil {
		return 0, fmt.Errorf("sending the job: %w", err)
	}
	streams[0].Close() // the job is all the sandbox reads on it
	copies.Add(2)
	go func() { defer copies.Done(); io.Copy(stdout, streams[0]) }()
	go func() { defer copies.Done(); io.Copy(stderr, streams[1]) }()
	done := make(chan status, 1)
	go func() {
		var st status
		if err := json.NewDecoder(streams[2]).Decode(&st); err != nil {
			st = status{ExitCode: -1, Error: "the sandbox ended without reporting the program's exit: " + err.Error()}
		}
		// The status comes after both outputs in the sandbox's order of
		// writes, but each stream is read on its own: wait for both.
		copies.Wait()
		done <- st
	}()
	select {
	case st := <-done:
		if st.Error != "" {
			return st.ExitCode, errors.New(st.Error)
		}
		return st.ExitCode, nil
	case <-sess.CloseChan():
		select {
		case st := <-done:
			if st.Error != "" {
				return st.ExitCode, errors.New(st.Error)
			}
			return st.ExitCode, nil
		case <-time.After(time.Second):
			return 0, errors.New("the sandbox's streams ended before it reported the program's exit")
		}
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}
