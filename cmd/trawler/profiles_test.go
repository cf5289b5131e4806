package main

import (
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/docker/dockertest"
	"github.com/trawler-dev/trawler/profiles/miniotest"
	"github.com/trawler-dev/trawler/test/polltest"
)

// envList turns settings into NAME=value strings.
func envList(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}

const writerBody = `{"profile": {"name": "shop-login", "saveChanges": true}}`

// Two services sharing one MinIO respect one lock: of two writers started
// at once on different services exactly one wins; when the winner's service
// is killed, its lock is taken over only after it expires.
func TestProfileLockAcrossProcesses(t *testing.T) {
	m := miniotest.Start(t)
	env := append(envList(m.Env("trawler-profiles")), "TRAWLER_PROFILE_LOCK_TTL=5s")
	dirA, dirB := t.TempDir(), t.TempDir()
	// The killed service leaves its browsers behind: stop them before the
	// data directories go.
	t.Cleanup(func() {
		for _, pid := range append(browserPIDs(dirA), browserPIDs(dirB)...) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		polltest.Until(t, 15*time.Second, "the killed browsers to exit", func() bool {
			return len(browserPIDs(dirA))+len(browserPIDs(dirB)) == 0
		})
	})
	a := startBinary(t, dirA, freeAddr(t), append(env, "TRAWLER_INSTANCE=a")...)
	b := startBinary(t, dirB, freeAddr(t), append(env, "TRAWLER_INSTANCE=b")...)

	type result struct {
		p      *proc
		status int
		body   map[string]any
	}
	results := make([]result, 2)
	var wg sync.WaitGroup
	for i, p := range []*proc{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, body := p.send(t, "POST", "/v2/browser", writerBody)
			results[i] = result{p, status, body}
		}()
	}
	wg.Wait()
	var winner, loser result
	switch {
	case results[0].status == 200 && results[1].status == 409:
		winner, loser = results[0], results[1]
	case results[1].status == 200 && results[0].status == 409:
		winner, loser = results[1], results[0]
	default:
		t.Fatalf("two writers on two services: %d %v and %d %v, want one 200 and one 409", results[0].status, results[0].body,
			results[1].status, results[1].body)
	}
	require.Equal(t, "PROFILE_LOCKED", loser.body["code"], "the loser's answer: %v", loser.body)

	// The winner's service dies with the lock held: its lock lives on until
	// it expires (no renewals any more), then the other service takes over.
	killed := time.Now()
	winner.p.cmd.Process.Signal(syscall.SIGKILL)
	winner.p.cmd.Wait()
	status, body := loser.p.send(t, "POST", "/v2/browser", writerBody)
	require.Equal(t, 409, status, "a writer right after the holder died, until the lock expires: %v", body)
	var id string
	polltest.Until(t, 20*time.Second, "the expired lock to be taken over", func() bool {
		status, body := loser.p.send(t, "POST", "/v2/browser", writerBody)
		if status == 200 {
			id, _ = body["id"].(string)
			return true
		}
		return false
	})
	if waited := time.Since(killed); waited < 2*time.Second {
		t.Fatalf("the lock was taken over %s after its holder died; it had seconds left", waited)
	}
	status, body = loser.p.send(t, "DELETE", "/v2/browser/"+id, "")
	require.Equal(t, 200, status, "ending the new writer: %v", body)
	_, list := loser.p.send(t, "GET", "/v2/profiles", "")
	if !strings.Contains(fmt.Sprint(list), "shop-login") || !strings.Contains(fmt.Sprint(list), "locked:false") {
		t.Fatalf("profiles after the takeover's save: %v", list)
	}
}

// After kill -9 of a service on the docker runtime its browser containers
// keep running; the restarted service removes them.
func TestRestartAfterKillRemovesOrphanedContainers(t *testing.T) {
	dockertest.RequireEngine(t)
	instance := "test-" + uuid.NewString()[:8]
	t.Cleanup(func() {
		for _, c := range dockertest.InstanceContainers(t, instance) {
			exec.Command("docker", "rm", "-f", c).Run()
		}
	})
	dataDir, addr := t.TempDir(), freeAddr(t)
	env := []string{"TRAWLER_RUNTIME=docker", "TRAWLER_INSTANCE=" + instance}
	p := startBinary(t, dataDir, addr, env...)
	s := p.call(t, "POST", "/v2/browser")
	id, _ := s["id"].(string)
	require.NotEmpty(t, id, "POST /v2/browser: %v", s)
	polltest.Until(t, 30*time.Second, "the warm browser's and the session's containers", func() bool {
		return len(dockertest.InstanceContainers(t, instance)) >= 2
	})
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()
	orphans := dockertest.InstanceContainers(t, instance)
	require.GreaterOrEqual(t, len(orphans), 2, "containers after kill -9: %v; the test cannot show their removal", orphans)

	p2 := startBinary(t, dataDir, addr, env...)
	left := map[string]bool{}
	for _, c := range dockertest.InstanceContainers(t, instance) {
		left[c] = true
	}
	for _, c := range orphans {
		assert.False(t, left[c], "orphaned container %s still exists after the restart", c[:12])
	}
	g := p2.call(t, "GET", "/v2/browser/"+id)
	if g["status"] != "destroyed" || g["endReason"] != "service restarted" {
		t.Fatalf("the killed run's session after restart: %v", g)
	}
	// The new run works on the docker runtime.
	s2 := p2.call(t, "POST", "/v2/browser")
	require.Equal(t, true, s2["success"], "a session after the restart: %v", s2)
}
