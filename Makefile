# Trawler's two front-door commands are `make run` and `make test` (README).
SHELL := /bin/bash
GO ?= go
BIN := bin/trawler
export PUPPETEER_SKIP_DOWNLOAD := 1
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD := 1

.PHONY: run build deps test-deps test test-go test-fuzz test-node test-docker test-cluster test-postgres test-postgres-all bench images clean

build:
	$(GO) build -o $(BIN) ./cmd/trawler

# deps installs what the service needs to run: Chromium from Debian.
deps:
	@scripts/install-deps.sh run

# test-deps adds what the tests need: Node.js, the pinned npm clients
# (npm ci, when test/node/node_modules differs from the lock) and, after
# them, the images (the sandbox's takes playwright-core from there).
test-deps:
	@scripts/install-deps.sh test

run: deps build
	./$(BIN) serve

test: test-deps build test-go test-postgres test-fuzz test-node test-docker test-cluster

test-go:
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 25m ./...
	$(GO) test -count=1 -run '^TestRelevanceOnPythonDocs$$' ./index

# test-fuzz runs each document parser's fuzz target, and the CDP proxy's
# (cdp:FuzzParseCommand: its strict reading of a client's frames against a
# lenient one of the kind Chromium's is), briefly on top of the committed
# corpus (testdata/fuzz), which plain go test replays. Each
# runs a number of inputs, some seconds' worth on a 2-core machine,
# not a duration: Go 1.26's fuzzing coordinator can fail a run that ends on
# a deadline while a worker is mid-input ("context deadline exceeded" with no
# failing input, golang/go#75804, fixed in Go 1.27). FUZZ_TIME=10s (or any
# -fuzztime) overrides every count.
FUZZ_TARGETS := FuzzPDF:300x FuzzContentStream:20000x FuzzDOCX:300x FuzzODT:300x FuzzRTF:20000x FuzzDOC:1000x FuzzXLSX:300x FuzzXLS:3000x cdp:FuzzParseCommand:20000x
FUZZ_TIME ?=
test-fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=parse; case $$t in cdp:*) pkg=cdp; t=$${t#cdp:};; esac; \
		f=$${t%%:*}; n=$${FUZZ_TIME:-$${t#*:}}; \
		echo "fuzzing $$f for $$n"; \
		$(GO) test ./$$pkg -run '^$$' -fuzz "^$$f$$" -fuzztime $$n || exit 1; \
	done

# test-postgres runs the store's tests on PostgreSQL instead of SQLite, and
# two nodes sharing one database (a kill -9 failover among them, a team's
# limit counted across them), on a throwaway cluster that scripts/pgtest.sh
# starts on loopback and removes.
test-postgres:
	scripts/pgtest.sh bash -c '$(GO) test -race -count=1 ./store/... && \
		$(GO) test -count=1 ./index && \
		$(GO) test -count=1 -run "^(TestNodesShareJobsAndSessions|TestNodesShareHostPoliteness|TestMonitorScheduleSurvivesKill)$$" ./cmd/trawler && \
		$(GO) test -count=1 -run "^(TestTeamLimitHoldsAcrossNodes|TestExtractMovesToAnotherNode|TestDatabaseDown|TestRecordingServedByAnyNode|TestSessionRecording|TestMonitorOnTwoNodes|TestMonitorPagesAndSite)$$" ./service'

# test-postgres-all runs the whole Go suite on PostgreSQL: every service a
# test starts gets a database of its own there (test/pgdb). It takes as long
# as the suite itself, so make test runs test-postgres instead.
test-postgres-all:
	scripts/pgtest.sh $(GO) test -count=1 -timeout 30m ./...

# The Node suite's language model is test/fakellm, an OpenAI-compatible
# test server (no model weights can be had offline).
test-node: build
	$(GO) build -o bin/fakellm ./test/fakellm
	cd test/node && TRAWLER_BIN=$(CURDIR)/$(BIN) FAKELLM_BIN=$(CURDIR)/bin/fakellm node --test --test-concurrency=1

# test-docker runs the session suites (Go and Node: lifecycle, proxy,
# limits, crashes, expiry, shutdown, profiles, execute) again with every browser in
# its own container (TRAWLER_RUNTIME=docker).
DOCKER_GO_TESTS := TestRenderedScrapesLookOrdinary|TestRenderedCrawlLooksOrdinary|TestPagesReachNeitherBrowsersNorTrawler|TestCDPProxyRefusesBypasses|TestConfinedBrowsersReachNothing|TestScrapesLeaveThroughUpstreamProxies|TestServiceWorkersAndWebSocketsAreGuarded|TestSessionLifecycleWithChromedp|TestAuthenticationAndTeamIsolation|TestLocalModeAcceptsAnyCaller|TestDiscoveryEndpointsAndManyClients|TestRateLimitAndQueue|TestPoolFullQueues|TestBrowserCrashDestroysSession|TestActivityTTLAndTTLExpiry|TestProfilesInMinIO
test-docker: build
	bash scripts/images.sh sandbox
	TRAWLER_TEST_RUNTIME=docker $(GO) test -race -count=1 -timeout 10m -run '^($(DOCKER_GO_TESTS))$$' ./service
	cd test/node && TRAWLER_TEST_RUNTIME=docker TRAWLER_BIN=$(CURDIR)/$(BIN) node --test --test-concurrency=1 \
		playwright.test.mjs puppeteer.test.mjs stealth.test.mjs confinement.test.mjs expiry.test.mjs shutdown.test.mjs team-limits.test.mjs profiles.test.mjs execute.test.mjs recording.test.mjs

# test-cluster brings up the multi-node rig of deploy/cluster.compose.yml
# (HAProxy in front of two nodes on the docker runtime, PostgreSQL, MinIO),
# drives it through the load balancer with Playwright and the Firecrawl SDK,
# kills the node running a crawl, and tears it down (TestClusterRig, which
# runs only here: TRAWLER_TEST_CLUSTER=1).
test-cluster:
	bash scripts/images.sh browser trawler minio postgres haproxy
	TRAWLER_TEST_CLUSTER=1 $(GO) test -count=1 -run '^TestClusterRig$$' -timeout 10m ./deploy

bench: deps build
	@scripts/install-deps.sh bench
	scripts/pgtest.sh $(GO) run ./cmd/bench -page docs/performance.md

# images builds the browser, service and MinIO images offline with docker
# import (scripts/images.sh); deploy/*.Dockerfile are the registry route.
images:
	bash scripts/images.sh all

clean:
	rm -rf bin data
