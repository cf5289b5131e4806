package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/trawler-dev/trawler/cdp"
)

const (
	recordingPages  = 24 // page visits of each run
	recordingRounds = 2  // runs of each kind, alternating
)

// recordingCost measures what recording a session costs, on the warm
// service:
//   - recording_overhead: the CPU (the session browser's process group,
//     its exited renderers included, plus this process, which runs the
//     service and so the recorder) per page visit of a recorded session,
//     against the same visits in an unrecorded one. A visit opens a page
//     of the test site (articles and script-built app pages in turn),
//     scrolls it three times and changes its DOM once. Runs of the two
//     kinds alternate (ABBA, after a warm-up run), recordingRounds of each, so that drift in the
//     machine's load hits both alike; the CPU of each kind is summed.
//   - recording_bytes_per_minute: what the recorded runs stored (the
//     recording's gzip-compressed chunks, GET /v2/browser/{id}/replay's
//     bytes) per minute of those runs.
func (b *bench) recordingCost(ctx context.Context, in *instance) error {
	var cpu [2]time.Duration
	var bytes, visits int
	var recordedFor time.Duration
	// A warm-up run: the test site's pages and the browser's caches are
	// then as warm for the first measured run as for the others.
	if _, _, _, err := b.recordingRun(ctx, in, false); err != nil {
		return err
	}
	for round := 0; round < 2*recordingRounds; round++ {
		recorded := round%2 == 1
		if (round/2)%2 == 1 {
			recorded = !recorded // ABBA: neither kind always goes first
		}
		used, stored, took, err := b.recordingRun(ctx, in, recorded)
		if err != nil {
			return err
		}
		k := 0
		if recorded {
			k = 1
			bytes += stored
			recordedFor += took
		}
		cpu[k] += used
		visits += recordingPages
		logf("recording: a %s run of %d visits used %s of CPU in %s, stored %d bytes",
			map[bool]string{false: "plain", true: "recorded"}[recorded], recordingPages, used.Round(time.Millisecond), took.Round(time.Millisecond), stored)
	}
	per := func(d time.Duration) float64 { return ms(d) / float64(recordingPages*recordingRounds) }
	logf("recording: CPU per visit %.1f ms unrecorded, %.1f ms recorded", per(cpu[0]), per(cpu[1]))
	figure("recording_overhead", float64(cpu[1])/float64(cpu[0]), "x")
	figure("recording_bytes_per_minute", float64(bytes)/recordedFor.Minutes(), "bytes")
	return nil
}

// recordingRun runs one session's visits and returns the CPU they used,
// the bytes its recording stored (0 unrecorded) and how long they took.
func (b *bench) recordingRun(ctx context.Context, in *instance, recorded bool) (used time.Duration, stored int, took time.Duration, err error) {
	var c created
	body := fmt.Sprintf(`{"ttl":600,"activityTtl":600,"recording":%t}`, recorded)
	if err := in.do(ctx, "POST", "/v2/browser", []byte(body), &c); err != nil {
		return 0, 0, 0, err
	}
	s, err := in.session(ctx, c.ID)
	if err != nil {
		in.remove(context.Background(), c.ID)
		return 0, 0, 0, err
	}
	pgid, _, err := browserPID(in.browsersDir(), s.BrowserID())
	if err != nil {
		in.remove(context.Background(), c.ID)
		return 0, 0, 0, err
	}
	tab, err := openPage(ctx, s.CDP(), b.siteURL()+"/articles/0")
	if err != nil {
		in.remove(context.Background(), c.ID)
		return 0, 0, 0, err
	}
	cpu0, self0, t0 := groupCPU(pgid), selfCPU(), time.Now()
	for i := 1; i <= recordingPages; i++ {
		u := fmt.Sprintf("%s/articles/%d", b.siteURL(), i)
		if i%2 == 0 {
			u = fmt.Sprintf("%s/app/%d", b.siteURL(), i)
		}
		if err = visit(ctx, tab, u); err != nil {
			break
		}
	}
	tab.Conn.Close()
	// The browser's CPU is read while it runs; the service's after the
	// session's end, which is the recording's last write.
	browserCPU := groupCPU(pgid) - cpu0
	if err == nil {
		err = in.remove(ctx, c.ID)
	} else {
		in.remove(context.Background(), c.ID)
	}
	took = time.Since(t0)
	service := selfCPU() - self0
	used = browserCPU + service
	logf("recording: the session's browser used %s of CPU, this process (the service) %s", browserCPU.Round(time.Millisecond), service.Round(time.Millisecond))
	if err != nil || !recorded {
		return used, 0, took, err
	}
	var replay struct {
		Pages []struct {
			Bytes int `json:"bytes"`
		} `json:"pages"`
	}
	if err := in.do(ctx, "GET", "/v2/browser/"+c.ID+"/replay", nil, &replay); err != nil {
		return 0, 0, 0, err
	}
	for _, p := range replay.Pages {
		stored += p.Bytes
	}
	if stored == 0 {
		return 0, 0, 0, fmt.Errorf("the recorded session stored nothing")
	}
	return used, stored, took, nil
}

// visit navigates tab to u, waits for it, scrolls it three times and
// adds a paragraph, as a person reading it might.
func visit(ctx context.Context, tab cdp.Session, u string) error {
	if err := tab.Call(ctx, "Page.navigate", map[string]any{"url": u}, nil); err != nil {
		return err
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		state, err := evaluate(ctx, tab, "location.href + ' ' + document.readyState")
		if err == nil && strings.HasPrefix(state, u+" ") && strings.HasSuffix(state, "complete") {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the page %s did not load", u)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i := 0; i < 3; i++ {
		time.Sleep(100 * time.Millisecond)
		if _, err := evaluate(ctx, tab, "scrollBy(0, 400), 1"); err != nil {
			return err
		}
	}
	_, err := evaluate(ctx, tab, "document.body.append(Object.assign(document.createElement('p'), {textContent: 'read'})), 1")
	return err
}
