package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"time"
)

const executeRounds = 15 // per runtime

// executeNode times POST /v2/browser/{id}/execute of a trivial node script
// (the title of the session's page, through Playwright) on a warm session:
// on the docker runtime (TRAWLER_RUNTIME=docker, whose execute sandbox is a
// container per run from trawler/sandbox:latest) and on the process runtime
// with TRAWLER_EXECUTE=node (a local node process). One uncounted run on
// each first, then executeRounds samples each, alternating; p50s.
func (b *bench) executeNode(ctx context.Context, _ *instance) error {
	if out, err := exec.CommandContext(ctx, "bash", "scripts/start-dockerd.sh").CombinedOutput(); err != nil {
		return fmt.Errorf("the Docker engine: %v: %s", err, out)
	}
	for _, image := range []string{"browser", "sandbox"} {
		if out, err := exec.CommandContext(ctx, "bash", "scripts/images.sh", image).CombinedOutput(); err != nil {
			return fmt.Errorf("the %s image: %v: %s", image, err, out)
		}
	}
	playwright, err := filepath.Abs("test/node/node_modules/playwright-core")
	if err != nil {
		return err
	}
	local, err := b.startWith(ctx, "execute-process", 1, poolSize, map[string]string{
		"TRAWLER_EXECUTE": "node", "TRAWLER_EXECUTE_PLAYWRIGHT": playwright})
	if err != nil {
		return err
	}
	defer local.Close()
	sandboxed, err := b.startWith(ctx, "execute-docker", 1, poolSize, map[string]string{
		"TRAWLER_RUNTIME": "docker", "TRAWLER_INSTANCE": "bench-execute"})
	if err != nil {
		return err
	}
	defer sandboxed.Close()

	ins := []*instance{sandboxed, local}
	ids := make([]string, len(ins))
	for i, in := range ins {
		s, err := in.create(ctx)
		if err != nil {
			return err
		}
		defer in.remove(context.WithoutCancel(ctx), s.ID)
		ids[i] = s.ID
		if _, err := in.executeNode(ctx, s.ID); err != nil { // warm-up
			return fmt.Errorf("%s: %w", in.name, err)
		}
	}
	samples := make([][]time.Duration, len(ins))
	for range executeRounds {
		for i, in := range ins {
			d, err := in.executeNode(ctx, ids[i])
			if err != nil {
				return fmt.Errorf("%s: %w", in.name, err)
			}
			samples[i] = append(samples[i], d)
		}
	}
	logf("execute node docker ms: %s", msList(samples[0]))
	logf("execute node process ms: %s", msList(samples[1]))
	figure("execute_node_p50_ms", ms(median(samples[0])), "ms")
	figure("execute_node_process_p50_ms", ms(median(samples[1])), "ms")
	return nil
}

// executeNode runs the trivial node script once in session id and times
// the request.
func (in *instance) executeNode(ctx context.Context, id string) (time.Duration, error) {
	body, _ := json.Marshal(map[string]any{"language": "node", "code": "return await page.title()", "timeout": 60})
	var res struct {
		Success bool   `json:"success"`
		Stderr  string `json:"stderr"`
	}
	began := time.Now()
	if err := in.do(ctx, http.MethodPost, "/v2/browser/"+id+"/execute", body, &res); err != nil {
		return 0, err
	}
	d := time.Since(began)
	if !res.Success {
		return 0, fmt.Errorf("the trivial script failed: %s", res.Stderr)
	}
	return d, nil
}
