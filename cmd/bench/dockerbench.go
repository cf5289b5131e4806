package main

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// dockerRuntime compares the docker runtime with the process runtime:
// session creation with and without a warm browser, and the memory one
// idle browser costs.
func (b *bench) dockerRuntime(ctx context.Context, warm *instance) error {
	if out, err := exec.CommandContext(ctx, "bash", "scripts/start-dockerd.sh").CombinedOutput(); err != nil {
		return fmt.Errorf("the Docker engine: %v: %s", err, out)
	}
	if out, err := exec.CommandContext(ctx, "bash", "scripts/images.sh", "browser").CombinedOutput(); err != nil {
		return fmt.Errorf("the browser image: %v: %s", err, out)
	}
	docker := func(instance string) map[string]string {
		return map[string]string{"TRAWLER_RUNTIME": "docker", "TRAWLER_INSTANCE": instance}
	}
	cold, err := b.start(ctx, "process-cold", 0)
	if err != nil {
		return err
	}
	defer cold.Close()
	dwarm, err := b.startWith(ctx, "docker-warm", 1, poolSize, docker("bench-docker-warm"))
	if err != nil {
		return err
	}
	defer dwarm.Close()
	dcold, err := b.startWith(ctx, "docker-cold", 0, poolSize, docker("bench-docker-cold"))
	if err != nil {
		return err
	}
	defer dcold.Close()

	samples, _, err := createSamples(ctx, []pool{{warm, 1}, {cold, 0}, {dwarm, 1}, {dcold, 0}})
	if err != nil {
		return err
	}
	pw, pc, dw, dc := median(samples[0]), median(samples[1]), median(samples[2]), median(samples[3])
	logf("create process warm ms: %s", msList(samples[0]))
	logf("create process cold ms: %s", msList(samples[1]))
	logf("create docker warm ms: %s", msList(samples[2]))
	logf("create docker cold ms: %s", msList(samples[3]))
	figure("session_create_docker_warm_p50_ms", ms(dw), "ms")
	figure("session_create_docker_cold_p50_ms", ms(dc), "ms")
	figure("session_create_docker_warm_over_process_warm", float64(dw)/float64(pw), "x")
	figure("session_create_docker_cold_over_process_cold", float64(dc)/float64(pc), "x")

	procPSS, err := idlePSS(ctx, warm, func(in *instance, id string) (int64, error) {
		s, err := in.session(ctx, id)
		if err != nil {
			return 0, err
		}
		pid, _, err := browserPID(in.browsersDir(), s.BrowserID())
		if err != nil {
			return 0, err
		}
		pss, _, _, err := groupMemory(pid)
		return pss, err
	})
	if err != nil {
		return err
	}
	contPSS, err := idlePSS(ctx, dwarm, func(in *instance, id string) (int64, error) {
		s, err := in.session(ctx, id)
		if err != nil {
			return 0, err
		}
		return containerPSS(ctx, "trawler-browser-"+s.BrowserID())
	})
	if err != nil {
		return err
	}
	logf("idle browser PSS: process %.1f MB, container %.1f MB", kbMB(procPSS), kbMB(contPSS))
	figure("container_overhead_rss_mb", kbMB(contPSS-procPSS), "MB")
	return nil
}

// idlePSS is the mean memory of three idle sessions' browsers on in, as
// measure reads it, once they have finished starting.
func idlePSS(ctx context.Context, in *instance, measure func(*instance, string) (int64, error)) (int64, error) {
	const n = 3
	var ids []string
	defer func() {
		for _, id := range ids {
			in.remove(context.Background(), id)
		}
	}()
	for range n {
		c, err := in.create(ctx)
		if err != nil {
			return 0, err
		}
		ids = append(ids, c.ID)
	}
	time.Sleep(3 * time.Second) // let the browsers finish their start-up work
	var total int64
	for _, id := range ids {
		kb, err := measure(in, id)
		if err != nil {
			return 0, err
		}
		total += kb
	}
	return total / n, nil
}

// containerPSS sums the PSS of a container's processes and of the
// containerd shim that runs it: everything that exists because the browser
// runs in a container.
func containerPSS(ctx context.Context, name string) (int64, error) {
	out, err := exec.CommandContext(ctx, "docker", "inspect", "-f", "{{.State.Pid}}", name).Output()
	if err != nil {
		return 0, fmt.Errorf("docker inspect %s: %w", name, err)
	}
	initPID, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || initPID == 0 {
		return 0, fmt.Errorf("container %s has no process", name)
	}
	procs := listProcs()
	children := map[int][]int{}
	root := initPID
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p.pid)
		if p.pid == initPID && p.ppid > 1 {
			root = p.ppid // the shim
		}
	}
	var total int64
	var walk func(pid int)
	walk = func(pid int) {
		if kb, err := pssKB(pid); err == nil {
			total += kb
		}
		for _, c := range children[pid] {
			walk(c)
		}
	}
	walk(root)
	return total, nil
}
