package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/netguard"
	"github.com/trawler-dev/trawler/store"
	"github.com/trawler-dev/trawler/test/logtest"
	"github.com/trawler-dev/trawler/test/polltest"
)

// delivery is one request a receiver got.
type delivery struct {
	job    string
	n      int // the event's sequence number within its job
	header http.Header
	body   []byte
}

// receiver is an httptest webhook endpoint that records every request and
// answers with whatever answer returns (200 when nil).
type receiver struct {
	*httptest.Server
	answer func(d delivery, try int) int

	mu    sync.Mutex
	got   []delivery
	tries map[string]int // job/n -> requests so far
}

func newReceiver(t *testing.T, answer func(d delivery, try int) int) *receiver {
	t.Helper()
	r := &receiver{answer: answer, tries: map[string]int{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		raw, _ := io.ReadAll(req.Body)
		var p struct {
			ID   string `json:"id"`
			Data []struct {
				N int `json:"n"`
			} `json:"data"`
		}
		if err := json.Unmarshal(raw, &p); err != nil || len(p.Data) != 1 {
			t.Errorf("unexpected body %s", raw)
			return
		}
		d := delivery{job: p.ID, n: p.Data[0].N, header: req.Header.Clone(), body: raw}
		r.mu.Lock()
		key := fmt.Sprint(d.job, "/", d.n)
		r.tries[key]++
		try := r.tries[key]
		r.got = append(r.got, d)
		r.mu.Unlock()
		code := http.StatusOK
		if r.answer != nil {
			code = r.answer(d, try)
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(r.Close)
	return r
}

// sequence lists, in arrival order, the numbers of job's requests.
func (r *receiver) sequence(job string) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int
	for _, d := range r.got {
		if d.job == job {
			out = append(out, d.n)
		}
	}
	return out
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

func openStore(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "db"))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// newDispatcher returns a dispatcher with millisecond backoffs that reaches
// loopback (unless guard says otherwise).
func newDispatcher(s *store.Store, guard *netguard.Guard) *Dispatcher {
	if guard == nil {
		guard = &netguard.Guard{AllowPrivate: true}
	}
	return &Dispatcher{
		Store:   s,
		Client:  guard.Client(10*time.Second, netguard.VerifyTLS),
		Log:     slog.New(slog.DiscardHandler),
		Backoff: func(int) time.Duration { return 20 * time.Millisecond },
	}
}

// start runs d until the test ends or the returned stop is called; stop
// returns once Run has.
func start(t *testing.T, d *Dispatcher) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(ctx)
	}()
	stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(stop)
	return stop
}

// enqueue stores page events numbered from..to for job and notifies d.
func enqueue(t *testing.T, d *Dispatcher, team, job string, spec *Spec, from, to int) {
	t.Helper()
	for n := from; n <= to; n++ {
		doc := json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))
		e := Event(team, job, spec, Payload("crawl", "page", job, spec, []json.RawMessage{doc}, ""))
		require.NoError(t, d.Store.AddWebhookEvent(context.Background(), e))
	}
	d.Notify()
}

func flush(t *testing.T, d *Dispatcher, jobs ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, job := range jobs {
		require.NoError(t, d.Flush(ctx, job), "flushing %s", job)
	}
}

// states lists job's stored events as state/attempts.
func states(t *testing.T, s *store.Store, job string) []string {
	t.Helper()
	events, err := s.WebhookEvents(context.Background(), job)
	require.NoError(t, err)
	var out []string
	for _, e := range events {
		out = append(out, fmt.Sprint(e.State, "/", e.Attempts))
	}
	return out
}

func TestDeliveryInOrderUnderRetries(t *testing.T) {
	t.Parallel()
	// Event 2's first try fails: event 3 must wait for its retry.
	r := newReceiver(t, func(d delivery, try int) int {
		if d.n == 2 && try == 1 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	d := newDispatcher(openStore(t), nil)
	start(t, d)
	enqueue(t, d, "acme", "job-a", &Spec{URL: r.URL + "/hook"}, 1, 3)
	flush(t, d, "job-a")

	require.Equal(t, []int{1, 2, 2, 3}, r.sequence("job-a"), "arrivals")
	require.Equal(t, []string{"delivered/1", "delivered/2", "delivered/1"}, states(t, d.Store, "job-a"), "stored")
	// A retry sends the same bytes: the receiver can deduplicate on webhookId.
	all := r.deliveries()
	require.Equal(t, string(all[1].body), string(all[2].body), "the retry's body differs")
}

func TestJobsProgressConcurrently(t *testing.T) {
	t.Parallel()
	bDone := make(chan struct{})
	var once sync.Once
	// job-a's first event is held until job-b's events have all arrived:
	// with jobs delivered one after another this would never finish.
	r := newReceiver(t, func(d delivery, _ int) int {
		switch {
		case d.job == "job-a" && d.n == 1:
			select {
			case <-bDone:
			case <-time.After(8 * time.Second):
				t.Error("job-b made no progress while job-a's event was in flight")
			}
		case d.job == "job-b" && d.n == 3:
			once.Do(func() { close(bDone) })
		}
		return http.StatusOK
	})
	d := newDispatcher(openStore(t), nil)
	start(t, d)
	spec := &Spec{URL: r.URL}
	enqueue(t, d, "acme", "job-a", spec, 1, 3)
	enqueue(t, d, "acme", "job-b", spec, 1, 3)
	flush(t, d, "job-a", "job-b")
	for _, job := range []string{"job-a", "job-b"} {
		assert.Equal(t, []int{1, 2, 3}, r.sequence(job), "%s arrivals", job)
	}
}

func TestSignatureAndHeaders(t *testing.T) {
	t.Parallel()
	r := newReceiver(t, nil)
	d := newDispatcher(openStore(t), nil)
	d.Secret = func(team string) string {
		if team == "acme" {
			return "s3cret"
		}
		return ""
	}
	start(t, d)
	headers := map[string]string{"Authorization": "Bearer abc", "X-Custom": "42",
		"Content-Type": "text/plain", SignatureHeader: "forged"}
	enqueue(t, d, "acme", "signed", &Spec{URL: r.URL, Headers: headers}, 1, 1)
	enqueue(t, d, "globex", "unsigned", &Spec{URL: r.URL, Headers: headers}, 1, 1)
	flush(t, d, "signed", "unsigned")

	got := map[string]delivery{}
	for _, del := range r.deliveries() {
		got[del.job] = del
	}
	for _, job := range []string{"signed", "unsigned"} {
		h := got[job].header
		assert.Equal(t, "Bearer abc", h.Get("Authorization"), "%s: custom header Authorization", job)
		assert.Equal(t, "42", h.Get("X-Custom"), "%s: custom header X-Custom", job)
		assert.Equal(t, "application/json", h.Get("Content-Type"), "%s: Content-Type", job)
		assert.Equal(t, UserAgent, h.Get("User-Agent"), "%s: User-Agent", job)
	}
	// The receiver verifies as a Firecrawl receiver does: HMAC-SHA256 of the
	// raw body under the shared secret.
	signed := got["signed"]
	if sig := signed.header.Get(SignatureHeader); sig != Sign("s3cret", signed.body) || !strings.HasPrefix(sig, "sha256=") || len(sig) != 7+64 {
		t.Errorf("signature %q does not verify", sig)
	}
	assert.NotContains(t, got["unsigned"].header, SignatureHeader, "a team without a secret got a signature")
}

func TestGivesUpAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		maxAttempts, tries int
	}{
		{maxAttempts: 4, tries: 4},
		{maxAttempts: 1, tries: 3}, // never fewer than 3 tries
	} {
		t.Run(fmt.Sprint("MaxAttempts=", tc.maxAttempts), func(t *testing.T) {
			t.Parallel()
			r := newReceiver(t, func(d delivery, _ int) int {
				if d.n == 1 {
					return http.StatusServiceUnavailable
				}
				return http.StatusNoContent
			})
			d := newDispatcher(openStore(t), nil)
			d.MaxAttempts = tc.maxAttempts
			start(t, d)
			enqueue(t, d, "acme", "job", &Spec{URL: r.URL}, 1, 2)
			flush(t, d, "job")

			require.Equal(t, append(slices.Repeat([]int{1}, tc.tries), 2), r.sequence("job"), "arrivals")
			events, _ := d.Store.WebhookEvents(context.Background(), "job")
			if e := events[0]; e.State != store.WebhookFailed || e.Attempts != tc.tries || !strings.Contains(e.LastError, "503") {
				t.Fatalf("the given-up event: %+v", e)
			}
			if e := events[1]; e.State != store.WebhookDelivered || e.Attempts != 1 {
				t.Fatalf("the next event: %+v", e)
			}
		})
	}
}

func TestGuardRefusesLoopbackAtOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		allowPrivate bool
		want         []string
		requests     int
	}{
		{"refused", false, []string{"failed/1", "failed/1"}, 0},
		{"allowed", true, []string{"delivered/1", "delivered/1"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newReceiver(t, nil)
			d := newDispatcher(openStore(t), &netguard.Guard{AllowPrivate: tc.allowPrivate})
			d.Backoff = func(int) time.Duration { return time.Hour } // a retry would hang the test
			start(t, d)
			enqueue(t, d, "acme", "job", &Spec{URL: r.URL}, 1, 2)
			flush(t, d, "job")
			require.Equal(t, tc.want, states(t, d.Store, "job"), "stored")
			require.Len(t, r.deliveries(), tc.requests, "requests the receiver got")
			if !tc.allowPrivate {
				events, _ := d.Store.WebhookEvents(context.Background(), "job")
				require.Contains(t, events[0].LastError, "not allowed", "the last error does not give the reason")
			}
		})
	}
}

func TestRedirects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code     int
		want     []string
		requests int
	}{
		// 301, 302 and 303 turn the POST into a bare GET: not a delivery.
		{http.StatusFound, []string{"failed/3"}, 0},
		{http.StatusSeeOther, []string{"failed/3"}, 0},
		// 307 and 308 resend the body.
		{http.StatusTemporaryRedirect, []string{"delivered/1"}, 1},
		{http.StatusPermanentRedirect, []string{"delivered/1"}, 1},
	} {
		t.Run(fmt.Sprint(tc.code), func(t *testing.T) {
			t.Parallel()
			r := newReceiver(t, nil)
			redirect := httptest.NewServer(http.RedirectHandler(r.URL, tc.code))
			t.Cleanup(redirect.Close)
			d := newDispatcher(openStore(t), nil)
			d.MaxAttempts = 3
			start(t, d)
			enqueue(t, d, "acme", "job", &Spec{URL: redirect.URL}, 1, 1)
			flush(t, d, "job")
			require.Equal(t, tc.want, states(t, d.Store, "job"), "stored")
			require.Len(t, r.deliveries(), tc.requests, "requests the redirect target got")
		})
	}
}

func TestRestartContinuesInOrder(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	const job = "job"
	sixArrived := make(chan struct{})
	var once sync.Once
	release := make(chan struct{})
	// Event 6's first request hangs until the first dispatcher stops: it is
	// cut mid-flight, the one case where an event may arrive twice.
	r := newReceiver(t, func(d delivery, try int) int {
		if d.n == 6 && try == 1 {
			once.Do(func() { close(sixArrived) })
			<-release
		}
		return http.StatusOK
	})
	var releaseOnce sync.Once
	releaseSix := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(releaseSix) // before the receiver's Close, which waits for the handler
	spec := &Spec{URL: r.URL}

	first := newDispatcher(s, nil)
	stop := start(t, first)
	enqueue(t, first, "acme", job, spec, 1, 10)
	select {
	case <-sixArrived:
	case <-time.After(20 * time.Second):
		t.Fatal("event 6 never arrived")
	}
	stop()
	releaseSix()
	want := append(slices.Repeat([]string{"delivered/1"}, 5), slices.Repeat([]string{"pending/0"}, 5)...)
	require.Equal(t, want, states(t, s, job), "after the first dispatcher stopped")

	second := newDispatcher(s, nil)
	start(t, second)
	flush(t, second, job)
	require.Equal(t, []int{1, 2, 3, 4, 5, 6, 6, 7, 8, 9, 10}, r.sequence(job), "arrivals")
	require.Equal(t, slices.Repeat([]string{"delivered/1"}, 10), states(t, s, job), "after the restart")
}

func TestRunSurvivesStoreErrors(t *testing.T) {
	t.Parallel()
	s, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "db"))
	require.NoError(t, err)
	s.Close() // every query now fails
	var logs logtest.Buffer
	d := newDispatcher(s, nil)
	d.Log = slog.New(slog.NewTextHandler(&logs, nil))
	stop := start(t, d)
	d.Notify()
	d.Notify()
	polltest.Until(t, 10*time.Second, "the store error to be logged", func() bool {
		return strings.Contains(logs.String(), "reading due webhook events")
	})
	stop() // returns: Run did not die or hang on the errors
}
