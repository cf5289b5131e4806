package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/test/polltest"
)

// trawler monitor, against a running server: a monitor of a page is added
// and listed, a check run now reports the page new and, once it changed,
// changed with its diff; the checks are listed; the mistakes a user makes
// are told in words that name what to fix.
func TestMonitorCommand(t *testing.T) {
	var mu sync.Mutex
	price, delay := "64", time.Duration(0)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		p, d := price, delay
		mu.Unlock()
		time.Sleep(d)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<html><head><title>Lantern</title></head><body><main><h1>Lantern</h1><p>%s</p><p>The lantern costs %s euros.</p></main></body></html>`,
			strings.Repeat("A brass lantern for the garden. ", 10), p)
	}))
	defer site.Close()
	page := site.URL + "/lantern"
	p := startBinary(t, t.TempDir(), freeAddr(t), "TRAWLER_ALLOW_PRIVATE_NETWORKS=true", "TRAWLER_MONITOR_MIN_INTERVAL=1s")
	server := []string{"TRAWLER_URL=http://" + p.addr, "TRAWLER_API_KEY=acme-key-0001"}
	run := func(env []string, args ...string) (string, string, error) {
		cmd := exec.Command(binary, append([]string{"monitor"}, args...)...)
		cmd.Env = append(os.Environ(), "TRAWLER_URL=", "TRAWLER_API_KEY=")
		cmd.Env = append(cmd.Env, env...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	ok := func(args ...string) string {
		t.Helper()
		out, stderr, err := run(server, args...)
		require.NoError(t, err, "trawler monitor %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), out, stderr)
		return out
	}

	// A daily check twelve hours away: no scheduled check joins the test's.
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	cron := fmt.Sprintf("0 %d * * *", (time.Now().In(berlin).Hour()+12)%24)
	out := ok("add", "--name", "lantern price", "--cron", cron, "--timezone", "Europe/Berlin", page)
	m := regexp.MustCompile(`^monitor (\S+) created: ` + regexp.QuoteMeta(cron) + ` \(Europe/Berlin\), next check 20\d\d-`).FindStringSubmatch(out)
	require.NotNil(t, m, "add printed %q", out)
	id := m[1]

	out = ok("list")
	assert.Regexp(t, `(?m)^`+id+` +lantern price +`+regexp.QuoteMeta(cron)+` Europe/Berlin +20\S+ +none yet$`, out, "list")

	out = ok("run", id, "--wait")
	assert.Regexp(t, `^check \S+ completed: 1 page \(1 new\)\n`, out, "the first check")
	assert.Contains(t, out, "\n  new      "+page+"\n", "the first check")

	mu.Lock()
	price = "58"
	mu.Unlock()
	out = ok("run", "--wait", id)
	assert.Regexp(t, `^check (\S+) completed: 1 page \(1 changed\)\n`, out, "the check after the change")
	assert.Contains(t, out, "\n  changed  "+page+"\n", "the check after the change")
	assert.Contains(t, out, "\n      -The lantern costs 64 euros.\n", "the diff, indented under its page")
	assert.Contains(t, out, "\n      +The lantern costs 58 euros.\n", "the diff, indented under its page")
	second := regexp.MustCompile(`^check (\S+)`).FindStringSubmatch(out)[1]

	out = ok("checks", id)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, "checks: a header and two checks\n%s", out)
	assert.Regexp(t, `^ID +STATUS +TRIGGER +SCHEDULED FOR +SUMMARY$`, lines[0])
	assert.Regexp(t, `^`+second+` +completed +manual +- +1 page \(1 changed\)$`, lines[1], "newest first")
	assert.Regexp(t, `^\S+ +completed +manual +- +1 page \(1 new\)$`, lines[2])
	out = ok("checks", id, second)
	assert.Contains(t, out, "\n      +The lantern costs 58 euros.\n", "one check, shown with its pages")
	assert.Regexp(t, `(?m)^`+id+` .* 1 page \(1 changed\)$`, ok("list"), "list shows the last check's summary")

	// A check while another runs is refused with the server's reason.
	mu.Lock()
	delay = 2 * time.Second
	mu.Unlock()
	assert.Regexp(t, `^check \S+ queued \(trawler monitor checks `+id+` \S+ shows it\)\n$`, ok("run", id))
	_, stderr, err := run(server, "run", id)
	assert.Error(t, err)
	assert.Contains(t, stderr, "trawler monitor: a check of this monitor is already queued or running")

	for _, c := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"no name", server, []string{"add", "--every", "30 minutes", page}, "trawler monitor: --name is required\n"},
		{"no server", nil, []string{"list"}, "trawler monitor: no Trawler server to talk to: give --url URL or set TRAWLER_URL"},
		{"the server's refusal", server, []string{"add", "--name", "x", "--every", "30 minutes", "--timezone", "Mars/Base", page},
			`trawler monitor: schedule.timezone "Mars/Base" is not an IANA time zone`},
		{"no key", []string{"TRAWLER_URL=http://" + p.addr}, []string{"list"}, "missing API key: send Authorization: Bearer <API key> (set TRAWLER_API_KEY)"},
		{"unknown monitor", server, []string{"checks", "nope"}, "trawler monitor: monitor not found\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, stderr, err := run(c.env, c.args...)
			assert.Error(t, err, "stdout: %s", out)
			assert.Contains(t, stderr, c.want)
		})
	}

	assert.Equal(t, "monitor "+id+" deleted\n", ok("delete", id))
	_, stderr, err = run(server, "list")
	assert.NoError(t, err)
	assert.Equal(t, "no monitors\n", stderr)
}

// scheduledChecks lists the scheduled checks of monitor id, oldest first,
// with their due times.
func scheduledChecks(t *testing.T, p *proc, id string) (checks []map[string]any, due []time.Time) {
	t.Helper()
	r := p.call(t, "GET", "/v2/monitor/"+id+"/checks?limit=100")
	list, _ := r["data"].([]any)
	for i := len(list) - 1; i >= 0; i-- {
		c := list[i].(map[string]any)
		if c["trigger"] != "scheduled" {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, c["scheduledFor"].(string))
		require.NoError(t, err)
		checks, due = append(checks, c), append(due, at)
	}
	return checks, due
}

// TestMonitorScheduleSurvivesKill kills the service with SIGKILL between
// two due times and keeps it down across two more: the restarted service
// runs the missed time once, marked late, then keeps to the schedule; no
// due time runs twice.
func TestMonitorScheduleSurvivesKill(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<html><body><main><h1>Steady</h1><p>%s</p></main></body></html>`, strings.Repeat("Nothing changes here. ", 10))
	}))
	defer site.Close()
	dataDir, addr := t.TempDir(), freeAddr(t)
	env := []string{"TRAWLER_ALLOW_PRIVATE_NETWORKS=true", "TRAWLER_MONITOR_MIN_INTERVAL=1s"}
	p := startBinary(t, dataDir, addr, env...)
	const every = 3 * time.Second
	m := p.post(t, "/v2/monitor", map[string]any{"name": "steady", "schedule": map[string]any{"cron": "*/3 * * * * *"},
		"targets": []any{map[string]any{"type": "scrape", "urls": []string{site.URL + "/"}}}})
	id, _ := m["data"].(map[string]any)["id"].(string)
	require.NotEmpty(t, id, "%v", m)

	// Killed just after a check finished, well before the next due time.
	var killed time.Time
	polltest.Until(t, 30*time.Second, "two checks done, then a quiet moment", func() bool {
		checks, due := scheduledChecks(t, p, id)
		if len(checks) < 2 || checks[len(checks)-1]["status"] != "completed" {
			return false
		}
		if time.Until(due[len(due)-1].Add(every)) < 1500*time.Millisecond {
			return false
		}
		p.cmd.Process.Signal(syscall.SIGKILL)
		p.cmd.Wait()
		killed = time.Now()
		return true
	})
	time.Sleep(2*every + time.Second)
	p2 := startBinary(t, dataDir, addr, env...)
	restarted := time.Now()
	t.Cleanup(func() {
		p2.cmd.Process.Signal(syscall.SIGTERM)
		p2.cmd.Wait()
	})
	var checks []map[string]any
	var due []time.Time
	polltest.Until(t, 30*time.Second, "two checks after the restart", func() bool {
		checks, due = scheduledChecks(t, p2, id)
		n := 0
		for i, c := range checks {
			if due[i].After(killed) && c["status"] == "completed" {
				n++
			}
		}
		return n >= 2
	})
	seen := map[time.Time]bool{}
	var before, after []int
	for i, at := range due {
		assert.False(t, seen[at], "due time %s run twice", at)
		seen[at] = true
		assert.Zero(t, at.Sub(due[0])%every, "%s is a due time", at)
		if at.Before(killed) {
			before = append(before, i)
		} else {
			after = append(after, i)
		}
	}
	require.NotEmpty(t, before)
	require.GreaterOrEqual(t, len(after), 2)
	late := checks[after[0]]
	assert.Equal(t, true, late["late"], "the missed run is marked late: %v", late)
	assert.Equal(t, due[before[len(before)-1]].Add(every), due[after[0]], "the first missed due time is the one run")
	assert.Greater(t, due[after[1]], restarted, "the other missed times are not replayed")
	for _, i := range after[1:] {
		assert.Equal(t, false, checks[i]["late"], "%v", checks[i])
	}
	for i := 1; i < len(before); i++ {
		assert.Equal(t, every, due[before[i]].Sub(due[before[i-1]]), "no due time lost before the kill")
	}
}
