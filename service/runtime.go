package service

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawler-dev/trawler/browsers"
	"github.com/trawler-dev/trawler/config"
	"github.com/trawler-dev/trawler/docker"
	"github.com/trawler-dev/trawler/docker/shim"
	"github.com/trawler-dev/trawler/egress"
	"github.com/trawler-dev/trawler/netguard"
	"github.com/trawler-dev/trawler/profiles"
	"github.com/trawler-dev/trawler/recording"
	"github.com/trawler-dev/trawler/scrape"
	"github.com/trawler-dev/trawler/store"
)

// egressProxy is the egress proxy.
type egressProxy struct {
	proxy *egress.Proxy
}

func (e egressProxy) Close() { e.proxy.Close() }

// confinement is how cfg's runtime walls in each browser.
func confinement(ctx context.Context, cfg *config.Config) browsers.Confinement {
	if cfg.Runtime == "docker" {
		return browsers.Confinement{Confined: true, Sandbox: true, UID: docker.BrowserUID,
			Wall: "a container of its own (no network, no capability, nothing of the host mounted, a private /tmp)"}
	}
	return browsers.Probe(ctx, cfg.Bwrap, cfg.BrowserUID, cfg.BrowserUID)
}

// newEgress starts the egress proxy every browser's requests go through,
// with TRAWLER_ADDR denied to them.
func newEgress(cfg *config.Config, conf browsers.Confinement, guard *netguard.Guard, report func(egress.Binding, int64, int64), log *slog.Logger) (egressProxy, error) {
	rules, err := egress.HostRulesFromFlags(cfg.ChromiumFlags)
	if err != nil {
		return egressProxy{}, fmt.Errorf("TRAWLER_CHROMIUM_FLAGS: %w", err)
	}
	ec := egress.Config{Guard: guard, Rules: rules, Upstreams: cfg.Proxies, Report: report, Log: log}
	if conf.Confined {
		// A confined browser reaches the proxy at the one port of its own
		// network namespace (a container's shim streams it over; Trawler
		// holds a local sandbox's listener); an unconfined one through a
		// loopback port of its own on the host.
		ec.StreamPort = shim.ProxyPort
	}
	p := egress.New(ec)
	p.Deny(cfg.Addr)
	return egressProxy{proxy: p}, nil
}

// egressCollector exports the egress proxy's bytes by team.
type egressCollector struct {
	p    *egress.Proxy
	desc *prometheus.Desc
}

func (c *egressCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *egressCollector) Collect(ch chan<- prometheus.Metric) {
	for _, t := range c.p.TeamBytes() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(t.In), t.Team, "in")
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(t.Out), t.Team, "out")
	}
}

// routedRuntime ends a browser's egress routes when the browser has gone,
// and shows each new browser to started once it is set.
type routedRuntime struct {
	browsers.Runtime
	egress  *egress.Proxy
	started atomic.Pointer[func(browsers.Browser)]
}

func (r *routedRuntime) Start(ctx context.Context, id string) (browsers.Browser, error) {
	b, err := r.Runtime.Start(ctx, id)
	if err != nil {
		r.egress.ForgetBrowser(id)
		return nil, err
	}
	if f := r.started.Load(); f != nil {
		// Before the browser is anyone's: a job lane that finds the user
		// agent known takes its pages without a browser of its own.
		(*f)(b)
	}
	go func() {
		<-b.Done()
		r.egress.ForgetBrowser(id)
	}()
	return b, nil
}

// chromiumVersioner is implemented by the runtimes that can tell their
// Chromium's version without starting a browser: browsers.ProcessRuntime
// and docker.Runtime.
type chromiumVersioner interface {
	ChromiumVersion(ctx context.Context) (string, error)
}

var (
	_ chromiumVersioner = (*browsers.ProcessRuntime)(nil)
	_ chromiumVersioner = (*docker.Runtime)(nil)
)

// assumeUserAgent gives ua the user agent of rt's Chromium by its version,
// so that the first scrapes need not wait for a browser to say it. A
// --user-agent of TRAWLER_CHROMIUM_FLAGS is what the browsers say instead,
// and a version that cannot be read leaves ua to the first browser.
func assumeUserAgent(ctx context.Context, cfg *config.Config, rt browsers.Runtime, ua *scrape.UserAgent, log *slog.Logger) {
	v, ok := rt.(chromiumVersioner)
	if !ok || slices.ContainsFunc(cfg.ChromiumFlags, func(f string) bool { return strings.SplitN(f, "=", 2)[0] == "--user-agent" }) {
		return
	}
	version, err := v.ChromiumVersion(ctx)
	if err == nil && !ua.Assume(version) {
		err = fmt.Errorf("no user agent for Chromium %q", version)
	}
	if err != nil {
		log.Info("the browsers' user agent is learnt from the first browser", "err", err)
	}
}

// newRuntime returns the browser runtime cfg selects and a function that
// releases what the runtime holds (the Docker client).
func newRuntime(cfg *config.Config, conf browsers.Confinement, out egressProxy, log *slog.Logger) (*routedRuntime, func(), error) {
	if cfg.Runtime == "docker" {
		rt, err := docker.New(docker.Config{
			Image: cfg.Docker.Image, Instance: cfg.Instance,
			Memory: cfg.Docker.Memory, CPUs: cfg.Docker.CPUs, PidsLimit: cfg.Docker.Pids, ShmSize: cfg.Docker.Shm,
			StartTimeout: cfg.BrowserStartTimeout, ExtraFlags: cfg.ChromiumFlags, Egress: out.proxy.ServeStream, Log: log,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("TRAWLER_RUNTIME=docker: %w", err)
		}
		return &routedRuntime{Runtime: rt, egress: out.proxy}, func() { rt.Close() }, nil
	}
	rt := &browsers.ProcessRuntime{Chromium: cfg.ChromiumPath, Dir: filepath.Join(cfg.DataDir, "browsers"),
		ExtraFlags: cfg.ChromiumFlags, StartTimeout: cfg.BrowserStartTimeout, Log: log, Confinement: conf}
	if conf.Confined {
		rt.Egress = out.proxy.ServeStream
	} else {
		rt.ProxyFor = out.proxy.ProxyFor
	}
	return &routedRuntime{Runtime: rt, egress: out.proxy}, func() {}, nil
}

// newProfileStore opens the profile store cfg names: a directory, or an S3
// bucket.
func newProfileStore(ctx context.Context, cfg *config.Config) (profiles.Store, error) {
	if !strings.HasPrefix(cfg.Profiles, "s3://") {
		return profiles.Faults(profiles.NewFS(cfg.Profiles)), nil
	}
	client, bucket, prefix, err := openBucket(ctx, cfg, "TRAWLER_PROFILES", cfg.Profiles)
	if err != nil {
		return nil, err
	}
	return profiles.Faults(profiles.NewS3(client, bucket, prefix)), nil
}

// newRecordings returns the archive of session recordings: their events in
// the database, or in the S3 bucket TRAWLER_RECORDINGS names.
func newRecordings(ctx context.Context, cfg *config.Config, st *store.Store, log *slog.Logger) (*recording.Archive, error) {
	a := &recording.Archive{Store: st, Retention: cfg.ResultRetention, Log: log}
	if cfg.Recordings == "" {
		return a, nil
	}
	client, bucket, prefix, err := openBucket(ctx, cfg, "TRAWLER_RECORDINGS", cfg.Recordings)
	if err != nil {
		return nil, err
	}
	a.Objects = recording.NewS3(client, bucket, prefix)
	return a, nil
}

// openBucket reaches the S3 bucket of the s3://bucket/prefix setting
// named name, creating it when missing, so that a fresh MinIO works at
// once.
func openBucket(ctx context.Context, cfg *config.Config, name, setting string) (*minio.Client, string, string, error) {
	bucket, prefix, err := profiles.ParseS3URL(setting)
	if err != nil {
		return nil, "", "", fmt.Errorf("%s: %w", name, err)
	}
	client, err := minio.New(cfg.S3.Endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(cfg.S3.AccessKey, cfg.S3.SecretKey, ""),
		Secure: cfg.S3.Secure, Region: cfg.S3.Region,
	})
	if err != nil {
		return nil, "", "", fmt.Errorf("TRAWLER_S3_ENDPOINT: %w", err)
	}
	// An object store started alongside the service (docker-compose) may
	// take a while to answer: wait up to 30 s while it is unreachable or
	// says it is not ready (5xx); a refusal (bad credentials) stops at once.
	var ok bool
	for deadline := time.Now().Add(30 * time.Second); ; {
		if ok, err = client.BucketExists(ctx, bucket); err == nil {
			break
		}
		status := minio.ToErrorResponse(err).StatusCode
		if (status != 0 && status < 500) || time.Now().After(deadline) || ctx.Err() != nil {
			return nil, "", "", fmt.Errorf("%s %s: reaching the bucket at %s: %w", name, setting, cfg.S3.Endpoint, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !ok {
		// Nodes starting together race to create it: one that finds it made
		// meanwhile (by itself, on another node) goes on.
		if err := client.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: cfg.S3.Region}); err != nil &&
			minio.ToErrorResponse(err).Code != "BucketAlreadyOwnedByYou" {
			return nil, "", "", fmt.Errorf("%s %s: creating the bucket: %w", name, setting, err)
		}
	}
	return client, bucket, prefix, nil
}
