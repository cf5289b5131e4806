package deploy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/trawler-dev/trawler/docker/dockertest"
	"github.com/trawler-dev/trawler/test/polltest"
)

// clusterSite is the loopback site the rig's nodes and browsers reach:
// /title/NAME, a page titled "rig NAME"; /c/N, a chain of shortPages pages
// each linking to the next two (a short crawl); /k/N, a chain of longPages
// pages answering after longDelay each (the crawl a node is killed in).
// Pages past a chain answer 404.
type clusterSite struct {
	URL  string
	mu   sync.Mutex
	hits map[string]int
}

const (
	shortPages = 8
	longPages  = 40
	longDelay  = 200 * time.Millisecond
	// The Playwright sessions, and the CDP connections made to each.
	rigSessions = 4
	rigConnects = 3
)

func startClusterSite(t *testing.T) *clusterSite {
	s := &clusterSite{hits: map[string]int{}}
	chain := func(w http.ResponseWriter, prefix string, i, n int) {
		if i < 0 || i >= n {
			http.NotFound(w, nil)
			return
		}
		fmt.Fprintf(w, `<!doctype html><html><head><title>Chained page %d</title></head><body><main><h1>Chained page %d</h1>
<p>%s</p><a href="/%s/%d">next</a> <a href="/%s/%d">after</a></main></body></html>`,
			i, i, strings.Repeat("Words on a chained page of the cluster rig. ", 8), prefix, i+1, prefix, i+2)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		var i int
		switch {
		case strings.HasPrefix(r.URL.Path, "/title/"):
			fmt.Fprintf(w, "<!doctype html><title>rig %s</title><p>a page of the cluster rig</p>", strings.TrimPrefix(r.URL.Path, "/title/"))
		case scan(r.URL.Path, "/c/%d", &i):
			chain(w, "c", i, shortPages)
		case scan(r.URL.Path, "/k/%d", &i):
			time.Sleep(longDelay)
			chain(w, "k", i, longPages)
		default:
			http.NotFound(w, r)
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	s.URL = "http://" + ln.Addr().String()
	return s
}

func scan(path, format string, i *int) bool {
	n, err := fmt.Sscanf(path, format, i)
	return err == nil && n == 1 && fmt.Sprintf(format, *i) == path
}

// distinctPorts returns n free loopback ports, no two the same.
func distinctPorts(t *testing.T, n int) []int {
	var ports []int
	for len(ports) < n {
		if p := freePort(t); !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	return ports
}

// imageExists tells whether the engine has the image.
func imageExists(image string) bool {
	return exec.Command("docker", "image", "inspect", image).Run() == nil
}

// TestClusterRig brings up deploy/cluster.compose.yml (HAProxy in front of
// two Trawler nodes on the docker runtime, PostgreSQL, MinIO) and drives it
// through the load balancer only: Playwright sessions whose CDP connections
// land on both nodes, the live view's status, a Firecrawl SDK crawl, and a
// crawl whose node is killed with SIGKILL halfway, which the other node
// finishes with every page once. It skips where the rig's images cannot be
// had (make test-cluster builds them), so that a plain go test ./... runs it
// only on a machine that has them.
func TestClusterRig(t *testing.T) {
	// It runs alone (make test-cluster), not among every package's tests:
	// two nodes, their browsers, PostgreSQL and MinIO want the machine.
	if os.Getenv("TRAWLER_TEST_CLUSTER") == "" {
		t.Skip("make test-cluster runs the multi-node rig (TRAWLER_TEST_CLUSTER=1)")
	}
	for _, tool := range []string{"docker", "docker-compose", "node"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (make test-deps installs it)", tool)
		}
	}
	for _, pkg := range []string{"@mendable/firecrawl-js", "playwright-core"} {
		if _, err := os.Stat("../test/node/node_modules/" + pkg); err != nil {
			t.Skipf("the Node clients are not installed (%s): run make test-deps", pkg)
		}
	}
	run(t, nil, "bash", "../scripts/start-dockerd.sh")
	for _, image := range []string{"trawler/postgres:latest", "trawler/haproxy:latest"} {
		if !imageExists(image) {
			t.Skipf("%s is not built: make test-cluster builds it (scripts/images.sh postgres haproxy)", image)
		}
	}
	// The service image is rebuilt from this source; the browser and MinIO
	// images only when their files changed.
	run(t, nil, "bash", "../scripts/images.sh", "browser", "minio", "trawler")
	testStart := time.Now()

	site := startClusterSite(t)
	project := "trawlercluster" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	ports := distinctPorts(t, 6)
	lbPort, node1Port, node2Port := ports[0], ports[1], ports[2]
	const (
		key      = "rig-cluster-key"
		pgSecret = "rig-postgres-secret"
		lease    = 3 * time.Second
	)
	env := []string{
		"COMPOSE_PROJECT_NAME=" + project,
		fmt.Sprintf("TRAWLER_PORT=%d", lbPort),
		fmt.Sprintf("NODE1_PORT=%d", node1Port),
		fmt.Sprintf("NODE2_PORT=%d", node2Port),
		fmt.Sprintf("POSTGRES_PORT=%d", ports[3]),
		fmt.Sprintf("MINIO_PORT=%d", ports[4]),
		fmt.Sprintf("MINIO_CONSOLE_PORT=%d", ports[5]),
		"POSTGRES_PASSWORD=" + pgSecret,
		"TRAWLER_API_KEYS=rig:" + key,
		"TRAWLER_NODE_SECRET=rig-cluster-node-secret-" + uuid.NewString()[:8],
		"TRAWLER_NODE_LEASE=" + lease.String(),
		"TRAWLER_ALLOW_PRIVATE_NETWORKS=true",
		// Four sessions may all land on one node, and the crawl's lanes
		// lease places in the pool too.
		"TRAWLER_POOL_SIZE=6",
		"TRAWLER_TEAM_CONCURRENCY=8",
	}
	dbURL := fmt.Sprintf("postgres://trawler:%s@127.0.0.1:%d/trawler?sslmode=disable", pgSecret, ports[3])
	instances := map[string]string{"node1": project + "-node1", "node2": project + "-node2"}
	composeArgs := func(args ...string) []string {
		return append([]string{"-f", "cluster.compose.yml", "-p", project}, args...)
	}
	compose := func(args ...string) string {
		return run(t, env, "docker-compose", composeArgs(args...)...)
	}
	downed := false
	t.Cleanup(func() {
		if !downed {
			if t.Failed() {
				cmd := exec.Command("docker-compose", composeArgs("logs", "--no-color", "--tail", "60")...)
				cmd.Env = append(os.Environ(), env...)
				out, _ := cmd.CombinedOutput()
				t.Logf("rig logs:\n%s", out)
			}
			cmd := exec.Command("docker-compose", composeArgs("down", "-v", "-t", "30")...)
			cmd.Env = append(os.Environ(), env...)
			cmd.Run()
		}
		for _, inst := range instances {
			for _, c := range dockertest.InstanceContainers(t, inst) {
				exec.Command("docker", "rm", "-f", c).Run()
			}
		}
	})

	up := time.Now()
	compose("up", "-d")
	lb := fmt.Sprintf("http://127.0.0.1:%d", lbPort)
	waitHealthy := func(what string, n int) {
		var ps string
		polltest.UntilEvery(t, 90*time.Second, time.Second, fmt.Sprintf("%s: %d services healthy", what, n), func() bool {
			cmd := exec.Command("docker-compose", composeArgs("ps")...)
			cmd.Env = append(os.Environ(), env...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("docker-compose ps: %v\n%s", err, out)
			}
			ps = string(out)
			return strings.Count(ps, "(healthy)") >= n
		}, func() string { return "\n" + ps })
	}
	waitHealthy("the rig", 5)
	// Each node learns the others' URLs at its heartbeat (a third of the lease).
	time.Sleep(lease/3 + time.Second)
	t.Logf("the rig was up and healthy %.1f s after docker-compose up", time.Since(up).Seconds())
	for name, inst := range instances {
		if n := len(dockertest.InstanceContainers(t, inst)); n < 1 {
			t.Fatalf("%s runs no browser container (want its warm browser)", name)
		}
	}

	// (1) and (2): Playwright sessions and an SDK crawl, through the
	// balancer only.
	drive := time.Now()
	cmd := exec.Command("node", "../test/node/cluster-rig.mjs")
	cmd.Env = append(os.Environ(), "TRAWLER_URL="+lb, "TRAWLER_KEY="+key, "SITE_URL="+site.URL,
		fmt.Sprintf("SESSIONS=%d", rigSessions), fmt.Sprintf("CONNECTS=%d", rigConnects), fmt.Sprintf("CRAWL_PAGES=%d", shortPages))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("driving the rig: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	t.Logf("the clients took %.1f s", time.Since(drive).Seconds())
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var driven struct {
		Sessions []string `json:"sessions"`
		Idle     string   `json:"idle"`
		Crawl    string   `json:"crawl"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &driven); err != nil {
		t.Fatalf("the client's last line is not its summary: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	db, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("connecting to the rig's database: %v", err)
	}
	defer db.Close(context.Background())
	nodeOf := func(table, id string) string {
		var node string
		if err := db.QueryRow(ctx, "SELECT node FROM "+table+" WHERE id = $1", id).Scan(&node); err != nil {
			t.Fatalf("the node of %s %s: %v", table, id, err)
		}
		return node
	}
	// Which node served each CDP connection (the balancer's log) against
	// the node each session ran on (the database): both nodes ran sessions,
	// and connections reached sessions both on their own node and through
	// the other.
	logs := compose("logs", "--no-color", "haproxy")
	served := regexp.MustCompile(`nodes/(node[12]) \S+ (\d+) .*"GET" "/cdp/([0-9a-f-]+)"`)
	ran := map[string]int{}
	local, forwarded := 0, 0
	sessionNode := map[string]string{}
	for _, id := range driven.Sessions {
		sessionNode[id] = nodeOf("browser_sessions", id)
		ran[sessionNode[id]]++
	}
	for _, m := range served.FindAllStringSubmatch(logs, -1) {
		owner, ok := sessionNode[m[3]]
		if !ok {
			continue
		}
		if m[2] != "101" {
			t.Errorf("a CDP connection to session %s through %s was answered %s", m[3], m[1], m[2])
		}
		if owner == instances[m[1]] {
			local++
		} else {
			forwarded++
		}
	}
	t.Logf("sessions per node: %v; CDP connections to a session on its own node: %d, through the other node: %d", ran, local, forwarded)
	if len(ran) != 2 {
		t.Errorf("the balancer did not spread the sessions over both nodes: %v", ran)
	}
	if forwarded == 0 || local == 0 {
		t.Errorf("want CDP connections both on a session's node and through the other one: %d local, %d forwarded", local, forwarded)
	}
	if want := rigSessions * rigConnects; local+forwarded != want {
		t.Errorf("the balancer logged %d CDP connections, want %d", local+forwarded, want)
	}
	// The idle session's connections alternated between the nodes: some
	// reached it through the node it did not run on.
	idleNode := nodeOf("browser_sessions", driven.Idle)
	idleVia := map[string]int{}
	for _, m := range served.FindAllStringSubmatch(logs, -1) {
		if m[3] == driven.Idle {
			idleVia[m[1]]++
		}
	}
	t.Logf("the idle session ran on %s; its CDP connections by the node they reached: %v", idleNode, idleVia)
	if len(idleVia) != 2 {
		t.Errorf("want the idle session's connections on both nodes, its own and the other: %v", idleVia)
	}
	t.Logf("the SDK's crawl %s ran on %s", driven.Crawl, nodeOf("jobs", driven.Crawl))

	// (3): a node killed with SIGKILL in the middle of a crawl.
	api := func(method, path string, body any) (int, map[string]any) {
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = strings.NewReader(string(b))
		}
		req, _ := http.NewRequestWithContext(ctx, method, lb+path, rd)
		req.Header.Set("Authorization", "Bearer "+key)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s through the balancer: %v", method, path, err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	code, started := api("POST", "/v2/crawl", map[string]any{"url": site.URL + "/k/0", "sitemap": "skip",
		"crawlEntireDomain": true, "limit": 100})
	id, _ := started["id"].(string)
	if code != 200 || id == "" {
		t.Fatalf("starting the crawl through the balancer: %d %v", code, started)
	}
	var before float64
	var st map[string]any
	polltest.UntilState(t, 60*time.Second, "the crawl to get a quarter of the way", func() bool {
		_, st = api("GET", "/v2/crawl/"+id, nil)
		before, _ = st["completed"].(float64)
		if before < longPages/4 && st["status"] != "scraping" {
			t.Fatalf("the crawl did not get a quarter of the way: %v", st)
		}
		return before >= longPages/4
	}, func() string { return fmt.Sprint(st) })
	holder := nodeOf("jobs", id)
	var victim, survivor string
	for name, inst := range instances {
		if inst == holder {
			victim = name
		} else {
			survivor = name
		}
	}
	if victim == "" {
		t.Fatalf("the crawl is held by %q, not by either node %v", holder, instances)
	}
	orphans := dockertest.InstanceContainers(t, instances[victim])
	compose("kill", "-s", "KILL", victim)
	killed := time.Now()
	t.Logf("killed %s (which ran the crawl) with %v of %d pages recorded", victim, before, longPages)
	failures := 0
	polltest.UntilEvery(t, 90*time.Second, 250*time.Millisecond, "the crawl to end after the kill", func() bool {
		code, st = api("GET", "/v2/crawl/"+id+"?limit=1000", nil)
		if code != 200 {
			failures++
			return false
		}
		return st["status"] != "scraping"
	}, func() string { return fmt.Sprint(code, " ", st) })
	t.Logf("the crawl ended %.1f s after the kill (lease %s); %d polls through the balancer were not answered 200", time.Since(killed).Seconds(), lease, failures)
	if failures > 0 {
		t.Errorf("the balancer answered %d polls with an error after the kill (want them sent to the living node)", failures)
	}
	if st["status"] != "completed" {
		t.Fatalf("the crawl's status: %v", st)
	}
	if _, more := st["next"].(string); more {
		t.Errorf("the crawl's results are paged despite limit=1000: next %v", st["next"])
	}
	data, _ := st["data"].([]any)
	seen := map[string]int{}
	for _, d := range data {
		md, _ := d.(map[string]any)["metadata"].(map[string]any)
		u, _ := md["sourceURL"].(string)
		seen[u]++
	}
	const want = longPages + 2 // the last pages link to two that answer 404: documents too
	for i := 0; i < want; i++ {
		u := fmt.Sprintf("%s/k/%d", site.URL, i)
		if seen[u] != 1 {
			t.Errorf("%s is in the results %d times, want once", u, seen[u])
		}
	}
	if len(data) != want {
		t.Errorf("the crawl has %d documents, want %d", len(data), want)
	}
	if c, _ := st["creditsUsed"].(float64); c != want {
		t.Errorf("the crawl's creditsUsed is %v, want %d", st["creditsUsed"], want)
	}
	if now := nodeOf("jobs", id); now != instances[survivor] {
		t.Errorf("the crawl ended held by %q, want the surviving node %q", now, instances[survivor])
	}

	// The killed node's browser containers outlive it, orphaned: the
	// surviving node, which shares the engine, removes them once the
	// killed node has missed its heartbeat for a lease.
	if len(orphans) == 0 {
		t.Errorf("the killed %s had no browser container", victim)
	}
	// Polled by hand: containers left at the deadline are an error, and
	// the test goes on to restart the node.
	for deadline := killed.Add(lease + 30*time.Second); ; {
		left := 0
		for _, c := range dockertest.InstanceContainers(t, instances[victim]) {
			if slices.Contains(orphans, c) {
				left++
			}
		}
		if left == 0 {
			t.Logf("the killed node's %d browser containers were removed %.1f s after the kill", len(orphans), time.Since(killed).Seconds())
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("%d of the killed %s's %d browser containers are still there %.0f s after the kill", left, victim,
				len(orphans), time.Since(killed).Seconds())
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	compose("start", victim)
	waitHealthy("the restarted node", 5)
	if code, _ := api("GET", "/v2/crawl/"+id, nil); code != 200 {
		t.Errorf("the crawl's status after the restart: %d", code)
	}

	// What the nodes warned of and the balancer's error answers, for the log.
	var notes []string
	errorAnswer := regexp.MustCompile(`nodes/\S+ \S+ [5]\d\d `)
	for _, l := range strings.Split(compose("logs", "--no-color", "node1", "node2", "haproxy"), "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") || errorAnswer.MatchString(l) {
			notes = append(notes, l)
		}
	}
	t.Logf("%d warnings and errors in the nodes' and the balancer's logs:\n%s", len(notes), strings.Join(notes, "\n"))

	down := time.Now()
	compose("down", "-v", "-t", "30")
	downed = true
	t.Logf("docker-compose down took %.1f s; the rig ran %.1f s from up to down", time.Since(down).Seconds(), down.Sub(up).Seconds())
	for name, inst := range instances {
		if left := dockertest.InstanceContainers(t, inst); len(left) > 0 {
			t.Errorf("browser containers of %s left after docker-compose down: %v", name, left)
		}
	}
	if left := dockertest.Containers(t, "label=com.docker.compose.project="+project); len(left) > 0 {
		t.Errorf("rig containers left after docker-compose down: %v", left)
	}
	if out, _ := exec.Command("docker", "volume", "ls", "-q", "--filter", "label=com.docker.compose.project="+project).Output(); len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("rig volumes left after docker-compose down -v: %s", out)
	}
	t.Logf("the test took %.1f s after the images were ready", time.Since(testStart).Seconds())
}
