package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/trawler-dev/trawler/netguard"
	"github.com/trawler-dev/trawler/store"
)

const (
	// tryTimeout bounds one POST, connection included.
	tryTimeout = 10 * time.Second
	// concurrency is how many jobs' events are in flight at once.
	concurrency = 8
	// pollInterval is how often Run looks for due events without a Notify or
	// a retry timer waking it: events left by a previous run come back this way.
	pollInterval = time.Second
	// maxBackoff caps the default backoff.
	maxBackoff = time.Minute
	// markTimeout bounds recording an outcome, which is done even while Run
	// is stopping so that a delivered event is not sent again.
	markTimeout = 5 * time.Second
	// claimLease is how long a claimed event stays out of every other
	// dispatcher's reach, on this node or another sharing the database. A
	// try is started as soon as its event is claimed and records its outcome
	// within tryTimeout+markTimeout (15 s); the 5 s more are for a slow
	// database and the nodes' clocks (kept in step by NTP, they differ by
	// far less). Only when a node dies mid-try does the event wait this
	// long to be sent again; a node whose clock runs ahead by more may send
	// an event twice, which at-least-once delivery allows.
	claimLease = 20 * time.Second
)

const (
	// SignatureHeader carries the HMAC of the body, under Firecrawl's name so
	// that existing receivers verify it unchanged.
	SignatureHeader = "X-Firecrawl-Signature"
	// UserAgent is the User-Agent of every delivery.
	UserAgent = "Trawler-Webhook/1"
)

// Dispatcher delivers stored webhook events. A job's events go out strictly in
// order: the next one is sent only once the previous one is delivered or has
// failed for good. Different jobs progress concurrently. A try that gets no
// 2xx answer within 10 s is retried after a backoff, up to MaxAttempts tries;
// a target the client's guard refuses fails at once. Since events are rows, a
// new Dispatcher on the same store carries on where a stopped one left off.
// Dispatchers of several nodes may share one database: each event is claimed
// by one of them for its try (see store.ClaimWebhookEvents), and a job's
// next event is claimable only once the previous one is done.
type Dispatcher struct {
	// Store holds the events.
	Store *store.Store
	// Client sends the POSTs; it should come from netguard.Guard.Client so
	// that private targets are refused. Nil means a guard that allows no
	// private network.
	Client *http.Client
	// Secret returns team's signing secret, "" for none. Nil means no team
	// has one.
	Secret func(team string) string
	// Log receives delivery failures; nil means slog.Default().
	Log *slog.Logger
	// MaxAttempts is how many times an event is tried before it fails:
	// 0 means 5, and fewer than 3 means 3.
	MaxAttempts int
	// Backoff is the wait after the attempt-th failed try (attempt >= 1);
	// nil means 1 s, 2 s, 4 s ... up to a minute.
	Backoff func(attempt int) time.Duration

	initOnce sync.Once
	wake     chan struct{} // buffered 1: Notify never blocks

	mu      sync.Mutex
	busy    map[string]int64 // job -> the ID of its event in flight
	changed chan struct{}    // closed (and replaced) whenever an event's state changes
}

func (d *Dispatcher) init() {
	d.initOnce.Do(func() {
		d.wake = make(chan struct{}, 1)
		d.busy = map[string]int64{}
		d.changed = make(chan struct{})
	})
}

// Notify tells a running Dispatcher that an event was stored, so that it is
// sent now rather than at the next poll.
func (d *Dispatcher) Notify() {
	d.init()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers due events until ctx ends, then waits for the tries in flight
// to stop. A try cut short by ctx is not counted: the event is sent again by
// the next Run. Store errors are logged and the next poll tries again.
func (d *Dispatcher) Run(ctx context.Context) {
	d.init()
	client := d.redirectSafeClient()
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		case <-timer.C:
		}
		d.dispatch(ctx, client, sem, &wg)
		timer.Reset(pollInterval)
	}
}

// dispatch claims as many due events as there is room for and starts a try
// of each.
func (d *Dispatcher) dispatch(ctx context.Context, client *http.Client, sem chan struct{}, wg *sync.WaitGroup) {
	// Only dispatch adds to sem, so the room seen here is there until the
	// tries are started: a claimed event is not left waiting for its lease.
	room := cap(sem) - len(sem)
	if room == 0 {
		return // full: a finishing try wakes Run
	}
	due, err := d.Store.ClaimWebhookEvents(ctx, time.Now(), claimLease, room)
	if err != nil {
		if ctx.Err() == nil {
			d.log().Error("reading due webhook events", "err", err)
		}
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range due {
		// The store hands out a job's next event only once the previous
		// one's outcome is recorded, so a job still marked busy here is
		// either finishing that event (its try has recorded the outcome and
		// only has to clear the mark) or, should a try outlast the lease,
		// has this very event in flight: that try records its outcome.
		if id, ok := d.busy[e.JobID]; ok && id == e.ID {
			continue
		}
		sem <- struct{}{} // never blocks: see room
		d.busy[e.JobID] = e.ID
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.try(ctx, client, e)
			<-sem
			d.mu.Lock()
			if id, ok := d.busy[e.JobID]; ok && id == e.ID {
				delete(d.busy, e.JobID) // unless the job's next event has started
			}
			close(d.changed)
			d.changed = make(chan struct{})
			d.mu.Unlock()
			d.Notify() // the job's next event, or another job's, may go now
		}()
	}
}

// try sends e once and records the outcome.
func (d *Dispatcher) try(ctx context.Context, client *http.Client, e store.WebhookEvent) {
	attempt := e.Attempts + 1
	host, err := d.post(ctx, client, e)
	mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), markTimeout)
	defer cancel()
	if err != nil && ctx.Err() != nil {
		// Cut by shutdown: not a try. The event is given back as it was
		// (due now) rather than left to its lease, so that the next Run,
		// here or on another node, sends it at once.
		if err := d.Store.MarkWebhookRetry(mctx, e.ID, e.Attempts, time.Now(), e.LastError); err != nil {
			d.log().Error("giving back a webhook event", "job", e.JobID, "event", e.ID, "err", err)
		}
		return
	}
	log := d.log().With("job", e.JobID, "event", e.ID, "host", host, "attempt", attempt)
	var blocked *netguard.BlockedError
	switch {
	case err == nil:
		err = d.Store.MarkWebhookDelivered(mctx, e.ID, attempt)
	case errors.As(err, &blocked):
		log.Warn("webhook target refused; not retrying", "reason", blocked.Error())
		err = d.Store.MarkWebhookFailed(mctx, e.ID, attempt, err.Error())
	case attempt >= d.maxAttempts():
		log.Warn("webhook delivery failed; giving up", "err", err)
		err = d.Store.MarkWebhookFailed(mctx, e.ID, attempt, err.Error())
	default:
		wait := d.backoff(attempt)
		log.Info("webhook delivery failed; will retry", "err", err, "in", wait)
		err = d.Store.MarkWebhookRetry(mctx, e.ID, attempt, time.Now().Add(wait), err.Error())
		// Wake Run when the retry is due. The timer's goroutine only does a
		// non-blocking send, so it cannot outlive anything it needs.
		time.AfterFunc(wait, d.Notify)
	}
	if err != nil {
		log.Error("recording a webhook delivery", "err", err)
	}
}

// post sends e once: nil error means a 2xx answer. It returns the target's
// host for the logs (the full URL may hold a token).
func (d *Dispatcher) post(ctx context.Context, client *http.Client, e store.WebhookEvent) (string, error) {
	var t target
	if err := json.Unmarshal(e.Target, &t); err != nil {
		return "", fmt.Errorf("reading the stored target: %w", err)
	}
	host := t.URL
	if u, err := url.Parse(t.URL); err == nil {
		host = u.Host
	}
	ctx, cancel := context.WithTimeout(ctx, tryTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(e.Payload))
	if err != nil {
		return host, fmt.Errorf("building the request to %s: %w", host, err)
	}
	// The user's headers first: what Trawler sets about the body and itself
	// (and the signature, which only Trawler can make) wins.
	for k, v := range t.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Del(SignatureHeader)
	if d.Secret != nil {
		if secret := d.Secret(e.Team); secret != "" {
			req.Header.Set(SignatureHeader, Sign(secret, e.Payload))
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		// url.Error quotes the whole URL, which may hold a token: keep only
		// the host.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return host, fmt.Errorf("posting to %s: %w", host, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return host, fmt.Errorf("%s answered %s", host, resp.Status)
	}
	return host, nil
}

// Sign returns the X-Firecrawl-Signature value of body: "sha256=" and the hex
// HMAC-SHA256 of the raw body under secret.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Flush waits until jobID has no pending events, or until ctx ends. It only
// waits: a running Run does the delivering.
func (d *Dispatcher) Flush(ctx context.Context, jobID string) error {
	d.init()
	// Wakes on every outcome this Dispatcher records; the ticker covers
	// another Dispatcher on the same store.
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		d.mu.Lock()
		changed := d.changed
		d.mu.Unlock()
		events, err := d.Store.WebhookEvents(ctx, jobID)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("flushing the webhooks of job %s: %w", jobID, err)
		}
		pending := false
		for _, e := range events {
			pending = pending || e.State == store.WebhookPending
		}
		if !pending {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		case <-tick.C:
		}
	}
}

// redirectSafeClient is the client with redirects limited to 307 and 308,
// the only ones that resend the POST body: after a 301, 302 or 303 the
// receiver would get a bare GET and the event would count as delivered.
func (d *Dispatcher) redirectSafeClient() *http.Client {
	c := d.Client
	if c == nil {
		c = (&netguard.Guard{}).Client(tryTimeout, netguard.VerifyTLS)
	}
	cp := *c
	next := c.CheckRedirect
	cp.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if code := req.Response.StatusCode; code != http.StatusTemporaryRedirect && code != http.StatusPermanentRedirect {
			return http.ErrUseLastResponse
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &cp
}

func (d *Dispatcher) maxAttempts() int {
	switch {
	case d.MaxAttempts == 0:
		return 5
	case d.MaxAttempts < 3:
		return 3
	}
	return d.MaxAttempts
}

func (d *Dispatcher) backoff(attempt int) time.Duration {
	if d.Backoff != nil {
		return d.Backoff(attempt)
	}
	if attempt > 6 {
		return maxBackoff
	}
	return min(time.Second<<(attempt-1), maxBackoff)
}

func (d *Dispatcher) log() *slog.Logger {
	if d.Log != nil {
		return d.Log
	}
	return slog.Default()
}
