# The browser image of the docker runtime (TRAWLER_RUNTIME=docker): Debian's
# Chromium and a few fonts, run as an unprivileged user. Build it where a
# registry is reachable (no build context needed):
#   docker build -t trawler/browser:latest - < deploy/browser.Dockerfile
# Offline, `make images` builds an equivalent image from this machine's
# Chromium (scripts/images.sh).
#
# The runtime sets the entrypoint (/usr/lib/chromium/chromium) and every flag.
# Those include --no-sandbox even though the user is not root: the container
# (no capabilities, no-new-privileges, a pids limit) is the sandbox, and
# Chromium's own would need privileges the container does not grant.
FROM debian:bookworm-slim
# fonts-noto-cjk adds Chinese, Japanese and Korean glyphs to screenshots at
# about 60 MB; text extraction does not need it.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      chromium fonts-liberation fonts-dejavu-core \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 1000 --user-group --home-dir /tmp --no-create-home --shell /usr/sbin/nologin trawler
ENV HOME=/tmp LANG=C.UTF-8
USER 1000:1000
WORKDIR /tmp
