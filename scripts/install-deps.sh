#!/usr/bin/env bash
# Installs what Trawler needs on a Debian machine, skipping what is present.
#   install-deps.sh run    Chromium
#   install-deps.sh test   Chromium, Node.js, npm, python3.11-doc (a real site the crawl tests serve)
#                          and the MinIO server (built once with go install, kept in GOPATH/bin)
#   install-deps.sh bench  Chromium and python3.11-doc (the transform corpus)
set -euo pipefail
want=(chromium)
[ "${1:-run}" = test ] && want+=(nodejs npm python3.11-doc)
[ "${1:-run}" = bench ] && want+=(python3.11-doc)
missing=()
for p in "${want[@]}"; do
  case "$p" in
    chromium) command -v chromium >/dev/null 2>&1 || missing+=(chromium) ;;
    nodejs) command -v node >/dev/null 2>&1 || missing+=(nodejs) ;;
    npm) command -v npm >/dev/null 2>&1 || missing+=(npm) ;;
    python3.11-doc) [ -d /usr/share/doc/python3.11/html ] || missing+=(python3.11-doc) ;;
  esac
done
if [ "${1:-run}" = test ]; then
  minio="$(go env GOPATH)/bin/minio"
  if [ ! -x "$minio" ]; then
    echo "building the MinIO server for the profile store tests (about 5 minutes, once)" >&2
    go install github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c
  fi
fi
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -ne 0 ] && sudo=sudo
echo "installing ${missing[*]} with apt-get" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
