package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/trawler-dev/trawler/config"
	"github.com/trawler-dev/trawler/service"
)

// localService starts the service inside a command (scrape, crawl), the
// way serve starts it, so that every TRAWLER_* setting (the runtime among
// them) applies; overrides take precedence over the environment. Its data
// lives in TRAWLER_DATA_DIR (an override of "" means none) or, when that is
// unset, in a temporary directory that the returned stop removes. It logs
// warnings to stderr. Like serve, it reaps the browsers and resumes the jobs
// it finds in its data directory: never point it at a running server's.
func localService(ctx context.Context, command string, stderr io.Writer, overrides map[string]string) (svc *service.Service, stop func(), err error) {
	dataDir, set := overrides["TRAWLER_DATA_DIR"]
	if !set {
		dataDir = os.Getenv("TRAWLER_DATA_DIR")
	}
	removeDir := func() {}
	if dataDir == "" {
		d, err := os.MkdirTemp("", "trawler-"+command)
		if err != nil {
			return nil, nil, err
		}
		dataDir, removeDir = d, func() { os.RemoveAll(d) }
	}
	cfg, err := config.FromEnv(func(k string) string {
		if k == "TRAWLER_DATA_DIR" {
			return dataDir
		}
		if v, ok := overrides[k]; ok {
			return v
		}
		return os.Getenv(k)
	})
	if err != nil {
		removeDir()
		return nil, nil, fmt.Errorf("configuration:\n%w", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if svc, err = service.New(ctx, cfg, log); err != nil {
		removeDir()
		return nil, nil, err
	}
	return svc, func() {
		svc.Close()
		removeDir()
	}, nil
}
