#!/usr/bin/env bash
# Installs what Trawler needs on a Debian machine, skipping what is present.
#   install-deps.sh run    Chromium, bubblewrap (which confines each browser: see
#                          docs/security.md), ffmpeg (the audio and video formats convert with it);
#                          with TRAWLER_RUNTIME=docker also the Docker engine (started) and the
#                          browser image, and with the execute sandbox on (TRAWLER_EXECUTE=docker,
#                          the docker runtime's default) Node.js, npm, test/node's pinned clients
#                          (playwright-core goes into it) and the sandbox image
#   install-deps.sh test   Chromium, bubblewrap, ffmpeg, Node.js, npm, python3.11-doc (a real site the crawl tests serve),
#                          the pinned npm clients of test/node (npm ci, when what is installed
#                          differs from package-lock.json),
#                          the Docker engine and docker-compose (started, with Trawler's images
#                          built offline), busybox-static (health checks inside those images),
#                          the MinIO server (built once with go install, kept in GOPATH/bin),
#                          Tesseract with English (OCR of scanned PDF pages), poppler-utils and
#                          three Debian documentation packages with PDF manuals (bash-doc,
#                          debian-faq, xorg-docs: real PDFs the parse tests compare with pdftotext),
#                          tinyproxy and microsocks (real HTTP and SOCKS5 upstream proxies for the egress
#                          proxy's tests), HAProxy and PostgreSQL (the multi-node tests and rig: scripts/pgtest.sh
#                          runs throwaway clusters, scripts/images.sh builds their images from them)
#   install-deps.sh bench  Chromium, bubblewrap, ffmpeg, python3.11-doc (the transform corpus), the Docker engine
#                          with the browser and sandbox images (the docker and execute phases), Node.js, npm and
#                          test/node's pinned clients (the execute phase's Playwright), poppler-utils and the PDF
#                          manuals (the parse phase), tinyproxy (the egress phase)
# The images are built after npm ci: the sandbox image takes playwright-core from test/node.
set -euo pipefail
# libegl-mesa0 and libgl1-mesa-dri give the browsers WebGL on Mesa's software
# rasterizer, as a desktop without a GPU has it (docs/stealth.md).
want=(chromium libegl-mesa0 libgl1-mesa-dri bubblewrap ffmpeg)
manuals=(poppler-utils bash-doc debian-faq xorg-docs)
[ "${1:-run}" = test ] && want+=(nodejs npm python3.11-doc docker.io docker-compose busybox-static tesseract-ocr tesseract-ocr-eng tinyproxy microsocks haproxy postgresql "${manuals[@]}")
[ "${1:-run}" = bench ] && want+=(nodejs npm python3.11-doc docker.io busybox-static tinyproxy "${manuals[@]}")
# images: what this mode needs built; clients: whether test/node's npm clients are.
images=()
clients=""
case "${1:-run}" in
  test) images=(all); clients=1 ;;
  bench) images=(browser sandbox); clients=1 ;;
  run)
    execute="${TRAWLER_EXECUTE:-}"
    if [ "${TRAWLER_RUNTIME:-process}" = docker ]; then
      want+=(docker.io)
      images+=(browser)
      execute="${execute:-docker}"
    fi
    if [ "$execute" = docker ]; then
      want+=(docker.io nodejs npm)
      images+=(sandbox)
      clients=1
    fi
    ;;
esac
missing=()
for p in "${want[@]}"; do
  case "$p" in
    chromium) command -v chromium >/dev/null 2>&1 || missing+=(chromium) ;;
    libegl-mesa0) compgen -G '/usr/lib/*/libEGL_mesa.so.0' >/dev/null || missing+=(libegl-mesa0) ;;
    libgl1-mesa-dri) compgen -G '/usr/lib/*/dri/swrast_dri.so' >/dev/null || missing+=(libgl1-mesa-dri) ;;
    bubblewrap) command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap) ;;
    ffmpeg) command -v ffmpeg >/dev/null 2>&1 && command -v ffprobe >/dev/null 2>&1 || missing+=(ffmpeg) ;;
    nodejs) command -v node >/dev/null 2>&1 || missing+=(nodejs) ;;
    npm) command -v npm >/dev/null 2>&1 || missing+=(npm) ;;
    python3.11-doc) [ -d /usr/share/doc/python3.11/html ] || missing+=(python3.11-doc) ;;
    docker.io) command -v dockerd >/dev/null 2>&1 || missing+=(docker.io) ;;
    docker-compose) command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose) ;;
    busybox-static) [ -x /bin/busybox ] || missing+=(busybox-static) ;;
    tesseract-ocr) command -v tesseract >/dev/null 2>&1 || missing+=(tesseract-ocr) ;;
    tesseract-ocr-eng) compgen -G '/usr/share/tesseract-ocr/*/tessdata/eng.traineddata' >/dev/null || missing+=(tesseract-ocr-eng) ;;
    poppler-utils) command -v pdftotext >/dev/null 2>&1 || missing+=(poppler-utils) ;;
    bash-doc) [ -f /usr/share/doc/bash/bashref.pdf ] || missing+=(bash-doc) ;;
    debian-faq) [ -f /usr/share/doc/debian/FAQ/debian-faq.en.pdf.gz ] || missing+=(debian-faq) ;;
    tinyproxy) command -v tinyproxy >/dev/null 2>&1 || missing+=(tinyproxy) ;;
    microsocks) command -v microsocks >/dev/null 2>&1 || missing+=(microsocks) ;;
    haproxy) [ -x /usr/sbin/haproxy ] || missing+=(haproxy) ;;
    postgresql) ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql) ;;
    xorg-docs) [ -f /usr/share/doc/xorg-docs/icccm/icccm.pdf.gz ] || missing+=(xorg-docs) ;;
  esac
done
if [ "${1:-run}" = test ]; then
  minio="$(go env GOPATH)/bin/minio"
  if [ ! -x "$minio" ]; then
    echo "building the MinIO server for the profile store tests (about 5 minutes, once)" >&2
    go install github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c
  fi
fi
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  echo "installing ${missing[*]} with apt-get" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# clients_current says whether test/node/node_modules holds what
# package-lock.json pins: npm ci writes the tree it installed to
# node_modules/.package-lock.json, which must list every package of the
# lock (optional ones may be left out) at the same version and integrity,
# and no other.
clients_current() {
  [ -f test/node/node_modules/.package-lock.json ] || return 1
  (cd test/node && node -e '
const want = require("./package-lock.json").packages, have = require("./node_modules/.package-lock.json").packages;
for (const [k, v] of Object.entries(want)) {
  if (k === "") continue;
  const h = have[k];
  if (!h) { if (v.optional) continue; process.exit(1); }
  if (h.version !== v.version || (v.integrity && h.integrity !== v.integrity)) process.exit(1);
}
for (const k of Object.keys(have)) if (!(k in want)) process.exit(1);
')
}
cd "$(dirname "$0")/.."
if [ -n "$clients" ] && ! clients_current; then
  echo "installing test/node's npm clients (npm ci)" >&2
  (cd test/node && PUPPETEER_SKIP_DOWNLOAD=1 PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund)
fi
if [ ${#images[@]} -gt 0 ]; then
  # The Docker runtime's tests and benchmarks need a running engine and the
  # images, built offline (scripts/images.sh skips what is up to date).
  scripts/start-dockerd.sh
  bash scripts/images.sh "${images[@]}"
fi
