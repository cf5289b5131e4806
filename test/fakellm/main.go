// Command fakellm runs modeltest's OpenAI-compatible test server as a
// process, for the Node.js end-to-end tests: Trawler, under test, calls it
// as its language model, and the test scripts it through the control API
// under /_test/ (see modeltest.Server.ControlHandler).
//
// Usage:
//
//	fakellm [-addr 127.0.0.1:0] [-api-key KEY] [-models a,b] [-no-json-schema] [-latency 50ms]
//
// It prints "fakellm listening on http://127.0.0.1:PORT" once it listens,
// and serves until SIGTERM or SIGINT.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/trawler-dev/trawler/model/modeltest"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "fakellm:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fakellm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "listening address, on a loopback interface")
	apiKey := fs.String("api-key", "", "require this bearer key (none when empty)")
	models := fs.String("models", modeltest.DefaultModel, "comma-separated models served")
	noJSONSchema := fs.Bool("no-json-schema", false, "refuse json_schema response formats as llama-server does")
	latency := fs.Duration("latency", 0, "least time every answer takes")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}

	opts := []modeltest.Option{modeltest.WithAddr(*addr), modeltest.WithControlAPI(), modeltest.WithLatency(*latency)}
	if *apiKey != "" {
		opts = append(opts, modeltest.WithAPIKey(*apiKey))
	}
	var names []string
	for _, m := range strings.Split(*models, ",") {
		if m = strings.TrimSpace(m); m != "" {
			names = append(names, m)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("-models names no model")
	}
	opts = append(opts, modeltest.WithModels(names...))
	if *noJSONSchema {
		opts = append(opts, modeltest.WithoutJSONSchema())
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	s, err := modeltest.New(opts...)
	if err != nil {
		return err
	}
	defer s.Close()
	// The harness reads this line for the URL: keep its form.
	fmt.Fprintf(stdout, "fakellm listening on %s\n", s.URL)
	<-ctx.Done()
	return nil
}
