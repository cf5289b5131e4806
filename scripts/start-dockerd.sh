#!/usr/bin/env bash
# Makes sure a Docker engine answers. Exits at once if `docker info` works;
# otherwise starts dockerd in the background (log in /tmp/dockerd.log) and
# waits up to 30 seconds for it. Safe to run again and again.
set -euo pipefail
if ! command -v docker >/dev/null 2>&1; then
  echo "start-dockerd: docker is not installed (Debian: apt-get install docker.io)" >&2
  exit 1
fi
docker info >/dev/null 2>&1 && exit 0

sudo=""
[ "$(id -u)" -ne 0 ] && sudo=sudo
# A dockerd that runs but does not answer is still starting (or refusing this
# user): wait for it rather than start a second one.
if ! pgrep -x dockerd >/dev/null 2>&1; then
  if ! command -v dockerd >/dev/null 2>&1; then
    echo "start-dockerd: the docker client is installed but dockerd is not (Debian: apt-get install docker.io)" >&2
    exit 1
  fi
  echo "start-dockerd: starting dockerd (log in /tmp/dockerd.log)" >&2
  # setsid: the engine outlives the shell, test binary or make that asked for it.
  $sudo setsid dockerd </dev/null >/tmp/dockerd.log 2>&1 &
fi
for _ in $(seq 60); do
  docker info >/dev/null 2>&1 && exit 0
  sleep 0.5
done
echo "start-dockerd: the Docker engine did not answer within 30 s:" >&2
docker info 2>&1 | tail -3 >&2 || true
echo "last lines of /tmp/dockerd.log:" >&2
tail -15 /tmp/dockerd.log >&2 2>/dev/null || true
exit 1
