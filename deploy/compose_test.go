// Package deploy_test brings up the docker-compose rig of
// deploy/docker-compose.yml (Trawler on the docker runtime, MinIO, browser
// containers) and drives it with the Firecrawl SDK and Playwright.
package deploy_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trawler-dev/trawler/docker/dockertest"
	"github.com/trawler-dev/trawler/test/polltest"
)

func run(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	start := time.Now()
	defer func() {
		t.Logf("%s %s took %s", name, strings.Join(args, " "), time.Since(start).Round(100*time.Millisecond))
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestComposeRig(t *testing.T) {
	for _, tool := range []string{"docker-compose", "node"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (make test-deps installs it)", tool)
		}
	}
	if _, err := os.Stat("../test/node/node_modules/@mendable/firecrawl-js"); err != nil {
		t.Fatal("the Node clients are not installed: run make test-deps")
	}
	run(t, nil, "bash", "../scripts/start-dockerd.sh")
	run(t, nil, "bash", "../scripts/images.sh", "all")

	// The site lives on the host's loopback; the rig's browsers share the
	// host's network, so they reach it as a local Chromium would.
	site := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.URL.Path == "/login" {
			http.SetCookie(w, &http.Cookie{Name: "rig", Value: "member", Path: "/", HttpOnly: true})
			fmt.Fprint(w, "<title>login</title><p>welcome</p>")
			return
		}
		state := "signed out"
		if c, err := r.Cookie("rig"); err == nil && c.Value == "member" {
			state = "signed in"
		}
		fmt.Fprintf(w, "<title>rig</title><main><h1>Hello from the rig</h1><p>%s</p></main>", state)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go site.Serve(ln)
	defer site.Close()

	project := "trawlerrig" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	port := freePort(t)
	env := []string{
		"COMPOSE_PROJECT_NAME=" + project,
		fmt.Sprintf("TRAWLER_PORT=%d", port),
		fmt.Sprintf("MINIO_PORT=%d", freePort(t)),
		fmt.Sprintf("MINIO_CONSOLE_PORT=%d", freePort(t)),
		"TRAWLER_API_KEYS=rig:rig-secret-key",
		"TRAWLER_ALLOW_PRIVATE_NETWORKS=true",
		"TRAWLER_POOL_SIZE=3",
	}
	compose := func(args ...string) string {
		return run(t, env, "docker-compose", append([]string{"-f", "docker-compose.yml"}, args...)...)
	}
	downed := false
	t.Cleanup(func() {
		if !downed {
			if t.Failed() {
				out, _ := exec.Command("docker-compose", "-f", "docker-compose.yml", "-p", project, "logs", "--tail", "80").CombinedOutput()
				t.Logf("rig logs:\n%s", out)
			}
			exec.Command("docker-compose", "-f", "docker-compose.yml", "-p", project, "down", "-v", "-t", "30").Run()
		}
		for _, c := range dockertest.InstanceContainers(t, project) {
			exec.Command("docker", "rm", "-f", c).Run()
		}
	})
	compose("up", "-d")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	polltest.UntilState(t, 90*time.Second, "the rig's Trawler to answer /healthz", func() bool {
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}, func() string { return "\n" + compose("ps") })
	// docker-compose's own view: both services up and healthy.
	var ps string
	polltest.UntilEvery(t, 60*time.Second, time.Second, "the rig's services both to be healthy", func() bool {
		ps = compose("ps")
		return strings.Count(ps, "(healthy)") >= 2
	}, func() string { return "\n" + ps })
	if n := len(dockertest.InstanceContainers(t, project)); n < 1 {
		t.Fatalf("the rig's Trawler runs no browser container (want its warm browser)")
	}

	cmd := exec.Command("node", "../test/node/compose-rig.mjs")
	cmd.Env = append(os.Environ(), "TRAWLER_URL="+base, "TRAWLER_KEY=rig-secret-key", "SITE_URL=http://"+ln.Addr().String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("driving the rig: %v\n%s", err, out)
	} else {
		t.Logf("%s", out)
	}

	compose("down", "-v", "-t", "30")
	downed = true
	if left := dockertest.InstanceContainers(t, project); len(left) > 0 {
		t.Fatalf("browser containers left after docker-compose down: %v", left)
	}
	if left := dockertest.Containers(t, "label=com.docker.compose.project="+project); len(left) > 0 {
		t.Fatalf("rig containers left after docker-compose down: %v", left)
	}
}
