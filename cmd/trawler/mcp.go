package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trawler-dev/trawler/mcpserver"
	"github.com/trawler-dev/trawler/service"
)

// mcpCmd serves Trawler's MCP tools over stdio (for hosts that start a
// local process): to the Trawler at --url (or TRAWLER_URL) with
// TRAWLER_API_KEY, or, without one, to a Trawler started in this process,
// listening on a loopback port of its own so that its sessions' cdpUrl and
// liveViewUrl can be reached. Its log goes to stderr: stdout is the
// protocol's.
func mcpCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("url", os.Getenv("TRAWLER_URL"), "the Trawler to serve the tools of (default: one started in this process)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (usage: trawler mcp [--url URL])", fs.Arg(0))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *base == "" {
		svc, close, err := localService(ctx, "mcp", stderr, nil)
		if err != nil {
			return err
		}
		defer close()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		svc.Listening(ln.Addr().String())
		srv := service.Server(svc.Handler())
		go srv.Serve(ln)
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			srv.Shutdown(sctx)
		}()
		*base = "http://" + ln.Addr().String()
	}
	auth := ""
	if key := os.Getenv("TRAWLER_API_KEY"); key != "" {
		auth = "Bearer " + key
	}
	// No client timeout: a crawl followed to its end takes as long as it
	// takes; the calls end with their context.
	server := mcpserver.NewServer(mcpserver.Remote(*base, &http.Client{}), mcpserver.Options{Version: version, Auth: auth})
	err := server.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}})
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
