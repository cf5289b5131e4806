# The browser image of the docker runtime (TRAWLER_RUNTIME=docker): Debian's
# Chromium and a few fonts, run as an unprivileged user, behind
# cmd/trawler-shim. Build it from the repository root where a registry is
# reachable:
#   docker build -f deploy/browser.Dockerfile -t trawler/browser:latest .
# Offline, `make images` builds an equivalent image from this machine's
# Chromium (scripts/images.sh).
#
# The shim is the entrypoint: it starts Chromium with its DevTools on a pipe
# and carries that pipe, and every connection Chromium makes to its proxy,
# over the container's standard streams, since the container has no network
# but loopback (docker/shim). The runtime sets every Chromium flag and runs
# the container with no capability, no-new-privileges, a pids limit, no
# mount of the host and a seccomp profile that lets Chromium's own sandbox
# open its namespaces (docker/seccomp.go): Chromium runs with its sandbox on.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/trawler-shim ./cmd/trawler-shim

FROM debian:bookworm-slim
# fonts-noto-cjk adds Chinese, Japanese and Korean glyphs to screenshots at
# about 60 MB; text extraction does not need it.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      chromium fonts-liberation fonts-dejavu-core \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 1000 --user-group --home-dir /tmp --no-create-home --shell /usr/sbin/nologin trawler
COPY --from=build /out/trawler-shim /trawler-shim
ENV HOME=/tmp LANG=C.UTF-8
USER 1000:1000
WORKDIR /tmp
ENTRYPOINT ["/trawler-shim"]
