package service

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"

	"github.com/trawler-dev/trawler/config"
	"github.com/trawler-dev/trawler/docker"
	"github.com/trawler-dev/trawler/execute"
)

var _ execute.Containers = (*docker.Sandboxes)(nil)

// newExecute returns the runner of the execute endpoint's node and bash
// code that cfg selects (TRAWLER_EXECUTE), reaching sessions through cdp
// (the CDP proxy), and a function that waits for its runs and releases
// what it holds. In mode docker it first removes the sandboxes an earlier
// run of this instance left. hide makes a local run's CDP endpoint
// unreachable from the browsers' pages. In mode docker it also returns
// the sandboxes, whose ReapInstance clears a dead node's.
func newExecute(ctx context.Context, cfg *config.Config, cdp http.Handler, hide func(string) func(), log *slog.Logger) (*execute.Service, func(), instanceReaper, error) {
	ec := execute.Config{Mode: execute.Mode(cfg.Execute.Mode), CDP: cdp, MaxRuns: cfg.PoolSize, QueueWait: cfg.QueueWait, Log: log}
	closeAll := func() {}
	var reaper instanceReaper
	switch ec.Mode {
	case execute.Docker:
		boxes, err := docker.NewSandboxes(docker.SandboxConfig{Image: cfg.Execute.Image, Instance: cfg.Instance, Log: log})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("TRAWLER_EXECUTE=docker: %w", err)
		}
		if n, err := boxes.Reap(ctx); err != nil {
			log.Warn("reaping execute sandboxes of an earlier run", "err", err)
		} else if n > 0 {
			log.Warn("reaped execute sandboxes left by an earlier run", "sandboxes", n)
		}
		ec.Containers = boxes
		reaper = boxes
		closeAll = func() { boxes.Close() }
	case execute.Node:
		ec.Dir = filepath.Join(cfg.DataDir, "execute")
		ec.Playwright = cfg.Execute.Playwright
		ec.Hide = hide
	}
	svc, err := execute.New(ec)
	if err != nil {
		closeAll()
		return nil, nil, nil, err
	}
	return svc, func() {
		svc.Close()
		closeAll()
	}, reaper, nil
}
