#!/usr/bin/env bash
# Builds Trawler's container images from this machine's files, offline, with
# `docker import` (no base image, no registry):
#   images.sh browser   trawler/browser:<chromium version> and :latest, a
#                       self-contained root filesystem around /usr/lib/chromium
#                       with cmd/trawler-shim as its entrypoint (skipped when
#                       that Chromium and that shim are already built)
#   images.sh trawler   trawler/trawler:latest, the static service binary
#                       (rebuilt every time: the source changes)
#   images.sh minio     trawler/minio:latest from $(go env GOPATH)/bin/minio
#                       (skipped when present)
#   images.sh sandbox   trawler/sandbox:latest, the execute sandbox: Node.js,
#                       playwright-core (from test/node/node_modules: make
#                       test-deps), bash and a few tools, with
#                       cmd/trawler-sandbox as its entrypoint (skipped when
#                       built from the same files)
#   images.sh all       the four (the default; the sandbox only once
#                       playwright-core is installed)
#   images.sh postgres  trawler/postgres:latest, Debian's PostgreSQL server from
#                       /usr/lib/postgresql/<newest>: initdb into its volume at
#                       the first start, then the server on 127.0.0.1 only
#                       (skipped when built from the same files)
#   images.sh haproxy   trawler/haproxy:latest, Debian's /usr/sbin/haproxy, its
#                       configuration from $HAPROXY_CONFIG (skipped when built
#                       from the same files)
# Several targets may be named at once: images.sh browser trawler postgres.
# The multi-node rig (deploy/cluster.compose.yml) needs browser, trawler,
# minio, postgres and haproxy; `all` stays the single-node rig's four.
# With a registry at hand, deploy/*.Dockerfile build the same images the usual way.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 0 ] && set -- all
for what in "$@"; do
  case "$what" in
    browser|trawler|minio|sandbox|all|postgres|haproxy) ;;
    *) echo "usage: $0 [browser|trawler|minio|sandbox|all|postgres|haproxy]..." >&2; exit 2 ;;
  esac
done
bash scripts/start-dockerd.sh

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# place FILE ROOT copies FILE into ROOT at its canonical directory, under the
# name it was asked for, following symlinks: a library named by its soname
# (libfoo.so.1 -> libfoo.so.1.2.3) lands as a regular file libfoo.so.1, and
# /lib/x86_64-linux-gnu/... lands in usr/lib/... behind the root's own
# merged-/usr symlinks (see usrlinks).
place() {
  local dir
  dir="$(realpath "$(dirname "$1")")"
  mkdir -p "$2$dir"
  cp -L --preserve=mode,timestamps "$1" "$2$dir/$(basename "$1")"
}

# usrlinks ROOT repeats the host's /bin, /lib, /lib64 and /sbin symlinks
# (Debian's merged /usr), so that the dynamic loader's fixed path
# /lib64/ld-linux-x86-64.so.2 resolves inside ROOT.
usrlinks() {
  local l
  for l in /bin /lib /lib32 /lib64 /libx32 /sbin; do
    [ -L "$l" ] && ln -sfn "$(readlink "$l")" "$1$l"
  done
  return 0
}

# libs FILE... prints the shared libraries the files need, transitively (ldd
# resolves the whole closure), and the dynamic loader; it fails on a library
# that cannot be found.
libs() {
  local f out
  for f in "$@"; do
    out="$(ldd "$f" 2>&1)" || continue # not dynamic: nothing to add
    if grep -q 'not found' <<<"$out"; then
      echo "images.sh: $f needs libraries this machine lacks:" >&2
      grep 'not found' <<<"$out" >&2
      return 1
    fi
    awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' <<<"$out"
  done | sort -u
}

# basefs ROOT writes what every image needs besides its program: a minimal
# user database (root, and trawler as uid 1000 for the browser) and /tmp.
basefs() {
  mkdir -p "$1/etc" "$1/tmp"
  chmod 1777 "$1/tmp"
  printf 'root:x:0:0:root:/root:/sbin/nologin\ntrawler:x:1000:1000:trawler:/tmp:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' >"$1/etc/passwd"
  printf 'root:x:0:\ntrawler:x:1000:\nnogroup:x:65534:\n' >"$1/etc/group"
  # Names resolve from /etc/hosts and DNS only: the host's nsswitch.conf may
  # name modules (mdns, systemd) the image does not carry.
  printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$1/etc/nsswitch.conf"
}

# pack ROOT IMAGE [--change ...] packs ROOT as root-owned files into IMAGE.
pack() {
  local root="$1" image="$2"
  shift 2
  tar -C "$root" --format=posix --numeric-owner --owner=0 --group=0 -cf - . | docker import "$@" - "$image" >/dev/null
}

report() {
  local size
  size="$(docker image inspect -f '{{.Size}}' "$1")"
  echo "built $1: $((size / 1024 / 1024)) MiB in $(($(date +%s) - $2)) s" >&2
}

browser() {
  local chromium=/usr/lib/chromium/chromium version image root start key
  if [ ! -x "$chromium" ]; then
    echo "images.sh: $chromium is missing (make deps installs Debian's chromium)" >&2
    return 1
  fi
  version="$("$chromium" --version | awk '{print $2}')"
  image="trawler/browser:$version"
  # The shim carries the DevTools pipe and the proxy connections over the
  # container's streams (docker/shim); the image is rebuilt when it changes.
  mkdir -p "$work/shim"
  CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$work/shim/trawler-shim" ./cmd/trawler-shim
  # WebGL runs on Mesa's software rasterizer through ANGLE
  # (browsers.ChromiumFlags), which loads it with dlopen: ldd does not list
  # it.
  local gl=() f
  for f in /usr/lib/*/libEGL.so.1 /usr/lib/*/libEGL_mesa.so.0 /usr/lib/*/dri/swrast_dri.so; do
    [ -e "$f" ] && gl+=("$f")
  done
  if [ "${#gl[@]}" -ne 3 ]; then
    echo "images.sh: Mesa's EGL is missing (make deps installs libegl-mesa0 and libgl1-mesa-dri)" >&2
    return 1
  fi
  key="$version-$(cat "$work/shim/trawler-shim" "${gl[@]}" | sha256sum | cut -c1-16)"
  if [ "$(docker image inspect -f '{{index .Config.Labels "dev.trawler.key"}}' "$image" 2>/dev/null)" = "$key" ]; then
    docker tag "$image" trawler/browser:latest
    echo "$image is already built" >&2
    return 0
  fi
  start="$(date +%s)"
  root="$work/browser"
  mkdir -p "$root"
  usrlinks "$root"
  basefs "$root"

  mkdir -p "$root/usr/lib"
  cp -a /usr/lib/chromium "$root/usr/lib/"
  # NSS loads its crypto modules with dlopen, so ldd does not list them; TLS
  # needs them.
  local nss nssdir
  nssdir="$(dirname "$(libs "$chromium" | grep '/libnss3\.so' | head -1)")"
  nss=()
  for f in "$nssdir"/lib{softokn3,freebl3,freeblpriv3,nssckbi,nssdbm3}.{so,chk}; do
    [ -e "$f" ] && nss+=("$f")
  done
  local list
  list="$(libs "$chromium" /usr/lib/chromium/chrome_crashpad_handler \
    $(find /usr/lib/chromium -name '*.so*' ! -name '*.TOC') "${nss[@]}" "${gl[@]}")"
  for f in $list "${nss[@]}" "${gl[@]}" /usr/share/glvnd/egl_vendor.d/50_mesa.json; do
    place "$f" "$root"
  done

  # Fonts: fontconfig's configuration, every font it knows and its cache.
  # The cache stays valid only if each font directory keeps its modification
  # time; otherwise every browser start would rescan the fonts.
  mkdir -p "$root/etc"
  cp -rL /etc/fonts "$root/etc/"
  local fonts d
  fonts="$(fc-list --format '%{file}\n' | sort -u)"
  while read -r f; do
    [ -n "$f" ] && cp --preserve=timestamps --parents "$f" "$root"
  done <<<"$fonts"
  while read -r f; do
    d="$(dirname "$f")"
    while [ "$d" != / ]; do
      touch -r "$d" "$root$d"
      d="$(dirname "$d")"
    done
  done <<<"$fonts"
  [ -d /var/cache/fontconfig ] && mkdir -p "$root/var/cache" && cp -a /var/cache/fontconfig "$root/var/cache/"
  # GLib looks up its settings schemas at start and complains without them.
  [ -f /usr/share/glib-2.0/schemas/gschemas.compiled ] && place /usr/share/glib-2.0/schemas/gschemas.compiled "$root"
  # The C.UTF-8 locale, so that text is UTF-8 without a full locales package.
  [ -d /usr/lib/locale/C.utf8 ] && mkdir -p "$root/usr/lib/locale" && cp -a /usr/lib/locale/C.utf8 "$root/usr/lib/locale/"

  cp "$work/shim/trawler-shim" "$root/trawler-shim"

  pack "$root" "$image" \
    --change 'USER 1000:1000' \
    --change 'ENV HOME=/tmp' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'WORKDIR /tmp' \
    --change 'LABEL dev.trawler.image=browser' \
    --change "LABEL dev.trawler.key=$key" \
    --change 'ENTRYPOINT ["/trawler-shim"]'
  docker tag "$image" trawler/browser:latest
  # The build it replaced, if any, is left untagged: remove it.
  docker image prune -f --filter label=dev.trawler.image=browser >/dev/null
  report "$image" "$start"
}

trawler() {
  local root="$work/trawler" start
  start="$(date +%s)"
  mkdir -p "$root/data"
  basefs "$root"
  CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$root/trawler" ./cmd/trawler
  mkdir -p "$root/etc/ssl/certs"
  cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
  # TRAWLER_ADDR listens on every interface, so that a published port
  # reaches the service; config refuses that without TRAWLER_API_KEYS (or
  # TRAWLER_ALLOW_PUBLIC_LOCAL_MODE=true).
  pack "$root" trawler/trawler:latest \
    --change 'ENV TRAWLER_DATA_DIR=/data' \
    --change 'ENV TRAWLER_ADDR=0.0.0.0:3002' \
    --change 'EXPOSE 3002' \
    --change 'VOLUME /data' \
    --change 'WORKDIR /data' \
    --change 'ENTRYPOINT ["/trawler"]' \
    --change 'CMD ["serve"]'
  report trawler/trawler:latest "$start"
}

minio() {
  local bin root="$work/minio" start f
  bin="$(go env GOPATH)/bin/minio"
  if [ ! -x "$bin" ]; then
    echo "images.sh: $bin is missing (make test-deps builds it)" >&2
    return 1
  fi
  if [ ! -x /bin/busybox ]; then
    echo "images.sh: /bin/busybox is missing (apt-get install busybox-static): the MinIO image's health check runs its wget" >&2
    return 1
  fi
  # The image is rebuilt when the server binary changes.
  local key
  key="$(sha256sum "$bin" | cut -c1-16)-busybox"
  if [ "$(docker image inspect -f '{{index .Config.Labels "dev.trawler.key"}}' trawler/minio:latest 2>/dev/null)" = "$key" ]; then
    echo "trawler/minio:latest is already built" >&2
    return 0
  fi
  start="$(date +%s)"
  mkdir -p "$root/data"
  usrlinks "$root"
  basefs "$root"
  cp "$bin" "$root/minio"
  cp /bin/busybox "$root/busybox"
  local list
  list="$(libs "$bin")"
  for f in $list; do
    place "$f" "$root"
  done
  pack "$root" trawler/minio:latest \
    --change 'ENTRYPOINT ["/minio"]' \
    --change 'CMD ["server", "/data"]' \
    --change 'EXPOSE 9000' \
    --change 'VOLUME /data' \
    --change "LABEL dev.trawler.key=$key"
  report trawler/minio:latest "$start"
}

# sandbox builds the execute sandbox (package execute, docker/sandbox.go):
# no network and a read-only root in the container, so everything it runs is
# in the image, and the V8 code cache of playwright-core (see
# execute/runner.cjs) is made here, once, by the same node binary.
sandbox() {
  local node pw image=trawler/sandbox:latest root start key f list tools=()
  node="$(readlink -f "$(command -v node || echo /usr/bin/node)")"
  pw=test/node/node_modules/playwright-core
  if [ ! -x "$node" ]; then
    echo "images.sh: node is missing (make test-deps installs Debian's nodejs)" >&2
    return 1
  fi
  if [ ! -f "$pw/package.json" ]; then
    echo "images.sh: $pw is missing (make test-deps installs it with npm ci in test/node)" >&2
    return 1
  fi
  mkdir -p "$work/sandbox-bin"
  CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$work/sandbox-bin/trawler-sandbox" ./cmd/trawler-sandbox
  key="$(cat "$work/sandbox-bin/trawler-sandbox" "$node" "$pw/package.json" execute/runner.cjs /usr/bin/bash | sha256sum | cut -c1-16)"
  if [ "$(docker image inspect -f '{{index .Config.Labels "dev.trawler.key"}}' "$image" 2>/dev/null)" = "$key" ]; then
    echo "$image is already built" >&2
    return 0
  fi
  start="$(date +%s)"
  root="$work/sandbox"
  mkdir -p "$root/usr/bin" "$root/opt/trawler/node_modules"
  usrlinks "$root"
  basefs "$root"
  # The shell's tools: what scripts around the browser command reach for.
  for f in cat head tail grep sed ls wc tr cut sort uniq base64 env mkdir rm cp mv date sleep tee seq \
      xargs printf true false basename dirname find awk jq; do
    [ -x "/usr/bin/$f" ] && tools+=("/usr/bin/$f")
  done
  list="$(libs "$node" /usr/bin/bash "${tools[@]}")"
  for f in $list; do
    place "$f" "$root"
  done
  cp -L --preserve=mode "$node" "$root/usr/bin/node"
  for f in /usr/bin/bash "${tools[@]}"; do
    cp -L --preserve=mode "$f" "$root$f"
  done
  ln -s bash "$root/usr/bin/sh"
  [ -d /usr/lib/locale/C.utf8 ] && mkdir -p "$root/usr/lib/locale" && cp -a /usr/lib/locale/C.utf8 "$root/usr/lib/locale/"
  cp -a "$pw" "$root/opt/trawler/node_modules/"
  TRAWLER_PLAYWRIGHT="$(realpath "$root/opt/trawler/node_modules/playwright-core")" \
    TRAWLER_COMPILE_CACHE="$root/opt/trawler/cache" "$node" execute/runner.cjs warm
  cp "$work/sandbox-bin/trawler-sandbox" "$root/trawler-sandbox"
  pack "$root" "$image" \
    --change 'USER 1000:1000' \
    --change 'ENV HOME=/tmp' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'WORKDIR /tmp' \
    --change 'LABEL dev.trawler.image=sandbox' \
    --change "LABEL dev.trawler.key=$key" \
    --change 'ENTRYPOINT ["/trawler-sandbox"]'
  docker image prune -f --filter label=dev.trawler.image=sandbox >/dev/null
  report "$image" "$start"
}

# postgres_image builds trawler/postgres from Debian's PostgreSQL server (the
# newest /usr/lib/postgresql/*): the server, initdb and pg_isready with their
# libraries, the modules initdb and the server load (JIT left out: jit=off),
# the share directory, the time zones, and busybox for the entrypoint's
# shell. The entrypoint (written below) runs initdb into $PGDATA, the
# volume, when it holds no cluster, then the server on 127.0.0.1 only, as
# the postgres user (PostgreSQL refuses root).
postgres_image() {
  local pg bin lib share image=trawler/postgres:latest root start key f list mods=()
  pg="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
  pg="${pg%/bin}"
  if [ -z "$pg" ] || [ ! -x "$pg/bin/postgres" ] || [ ! -x "$pg/bin/initdb" ]; then
    echo "images.sh: Debian's PostgreSQL server is missing (apt-get install postgresql)" >&2
    return 1
  fi
  if [ ! -x /bin/busybox ]; then
    echo "images.sh: /bin/busybox is missing (apt-get install busybox-static): the PostgreSQL image's entrypoint runs its shell" >&2
    return 1
  fi
  bin="$pg/bin"
  lib="$pg/lib"
  share="/usr/share/postgresql/$(basename "$pg")"
  for f in "$lib"/*.so; do
    case "$(basename "$f")" in llvmjit*) ;; *) mods+=("$f") ;; esac
  done
  mkdir -p "$work/postgres-conf"
  cat >"$work/postgres-conf/entrypoint.sh" <<ENTRY
#!/bin/sh
# trawler/postgres: initdb into \$PGDATA when it holds no cluster, then the
# server on 127.0.0.1:\$PGPORT only, as the postgres user. Settings:
# POSTGRES_USER (superuser, default postgres), POSTGRES_PASSWORD (required:
# password authentication over TCP; trust on the container's own Unix
# socket), POSTGRES_DB (created at initdb when not postgres), PGPORT (5432).
# Extra arguments go to the server (-c name=value).
set -eu
bin=$bin
PGDATA="\${PGDATA:-/var/lib/postgresql/data}"
PGPORT="\${PGPORT:-5432}"
user="\${POSTGRES_USER:-postgres}"
db="\${POSTGRES_DB:-\$user}"
mkdir -p "\$PGDATA" /run/postgresql
chown postgres:postgres "\$PGDATA" /run/postgresql
chmod 700 "\$PGDATA"
# su ends its options at --: what follows the user is the command's.
as_postgres() { su -s /bin/sh -c 'exec "\$0" "\$@"' -- postgres "\$@"; }
if [ ! -s "\$PGDATA/PG_VERSION" ]; then
  if [ -z "\${POSTGRES_PASSWORD:-}" ]; then
    echo "trawler/postgres: set POSTGRES_PASSWORD" >&2
    exit 1
  fi
  pw="\$(mktemp)"
  printf '%s\n' "\$POSTGRES_PASSWORD" >"\$pw"
  chown postgres "\$pw"
  as_postgres "\$bin/initdb" -D "\$PGDATA" -U "\$user" --pwfile="\$pw" -E UTF8 --no-locale \\
    --auth-host=scram-sha-256 --auth-local=trust
  rm -f "\$pw"
  if [ "\$db" != postgres ]; then
    echo "CREATE DATABASE \\"\$db\\";" | as_postgres "\$bin/postgres" --single -D "\$PGDATA" -c jit=off postgres >/dev/null
  fi
fi
exec su -s /bin/sh -c 'exec "\$0" "\$@"' -- postgres "\$bin/postgres" -D "\$PGDATA" \\
  -c listen_addresses=127.0.0.1 -p "\$PGPORT" -k /run/postgresql -c jit=off "\$@"
ENTRY
  key="$(cat "$bin/postgres" "$bin/initdb" "$bin/pg_isready" "${mods[@]}" /bin/busybox "$work/postgres-conf/entrypoint.sh" \
    | sha256sum | cut -c1-16)"
  if [ "$(docker image inspect -f '{{index .Config.Labels "dev.trawler.key"}}' "$image" 2>/dev/null)" = "$key" ]; then
    echo "$image is already built" >&2
    return 0
  fi
  start="$(date +%s)"
  root="$work/postgres"
  mkdir -p "$root/usr/bin" "$root$bin" "$root$lib" "$root/var/lib/postgresql/data" "$root/run/postgresql" "$root/usr/share"
  usrlinks "$root"
  basefs "$root"
  printf 'postgres:x:999:999:PostgreSQL:/var/lib/postgresql:/bin/sh\n' >>"$root/etc/passwd"
  printf 'postgres:x:999:\n' >>"$root/etc/group"
  list="$(libs "$bin/postgres" "$bin/initdb" "$bin/pg_isready" "${mods[@]}")"
  for f in $list; do
    place "$f" "$root"
  done
  for f in postgres initdb pg_isready; do
    cp -L --preserve=mode "$bin/$f" "$root$bin/$f"
  done
  cp -L --preserve=mode "${mods[@]}" "$root$lib/"
  mkdir -p "$root$share"
  for f in "$share"/*; do
    [ "$(basename "$f")" = man ] || cp -rL "$f" "$root$share/"
  done
  # Debian's server reads the system's time zone database.
  cp -a /usr/share/zoneinfo "$root/usr/share/"
  cp /bin/busybox "$root/usr/bin/busybox"
  ln -s busybox "$root/usr/bin/sh"
  ln -s busybox "$root/usr/bin/su"
  for f in chown chmod mkdir mktemp rm cat; do
    ln -s busybox "$root/usr/bin/$f"
  done
  cp "$work/postgres-conf/entrypoint.sh" "$root/entrypoint.sh"
  chmod 755 "$root/entrypoint.sh"
  pack "$root" "$image" \
    --change 'ENV PGDATA=/var/lib/postgresql/data' \
    --change 'ENV TZ=UTC' \
    --change "ENV PATH=$bin:/usr/bin" \
    --change 'VOLUME /var/lib/postgresql/data' \
    --change 'EXPOSE 5432' \
    --change 'LABEL dev.trawler.image=postgres' \
    --change "LABEL dev.trawler.key=$key" \
    --change 'ENTRYPOINT ["/entrypoint.sh"]'
  docker image prune -f --filter label=dev.trawler.image=postgres >/dev/null
  report "$image" "$start"
}

# haproxy_image builds trawler/haproxy from Debian's /usr/sbin/haproxy and its
# libraries, with busybox for the entrypoint's shell and health checks
# (/busybox wget). The configuration is the text of $HAPROXY_CONFIG when set
# (a compose file can carry it), else a file mounted at
# /etc/haproxy/haproxy.cfg; it is checked before the proxy starts in the
# foreground.
haproxy_image() {
  local bin=/usr/sbin/haproxy image=trawler/haproxy:latest root start key f list
  if [ ! -x "$bin" ]; then
    echo "images.sh: $bin is missing (apt-get install haproxy)" >&2
    return 1
  fi
  if [ ! -x /bin/busybox ]; then
    echo "images.sh: /bin/busybox is missing (apt-get install busybox-static): the HAProxy image's entrypoint runs its shell" >&2
    return 1
  fi
  mkdir -p "$work/haproxy-conf"
  cat >"$work/haproxy-conf/entrypoint.sh" <<'ENTRY'
#!/bin/sh
# trawler/haproxy: the configuration from $HAPROXY_CONFIG when set, else
# /etc/haproxy/haproxy.cfg; checked, then HAProxy in the foreground.
set -eu
cfg=/etc/haproxy/haproxy.cfg
if [ -n "${HAPROXY_CONFIG:-}" ]; then
  cfg=/tmp/haproxy.cfg
  printf '%s\n' "$HAPROXY_CONFIG" >"$cfg"
fi
/usr/sbin/haproxy -c -q -f "$cfg"
exec /usr/sbin/haproxy -db -f "$cfg" "$@"
ENTRY
  key="$(cat "$bin" /bin/busybox "$work/haproxy-conf/entrypoint.sh" | sha256sum | cut -c1-16)"
  if [ "$(docker image inspect -f '{{index .Config.Labels "dev.trawler.key"}}' "$image" 2>/dev/null)" = "$key" ]; then
    echo "$image is already built" >&2
    return 0
  fi
  start="$(date +%s)"
  root="$work/haproxy"
  mkdir -p "$root/usr/sbin" "$root/usr/bin" "$root/etc/haproxy" "$root/run/haproxy"
  usrlinks "$root"
  basefs "$root"
  list="$(libs "$bin")"
  for f in $list; do
    place "$f" "$root"
  done
  cp -L --preserve=mode "$bin" "$root/usr/sbin/haproxy"
  cp /bin/busybox "$root/busybox"
  ln -s ../../busybox "$root/usr/bin/sh"
  cp "$work/haproxy-conf/entrypoint.sh" "$root/entrypoint.sh"
  chmod 755 "$root/entrypoint.sh"
  pack "$root" "$image" \
    --change 'LABEL dev.trawler.image=haproxy' \
    --change "LABEL dev.trawler.key=$key" \
    --change 'ENTRYPOINT ["/entrypoint.sh"]'
  docker image prune -f --filter label=dev.trawler.image=haproxy >/dev/null
  report "$image" "$start"
}

for what in "$@"; do
  case "$what" in
    browser) browser ;;
    trawler) trawler ;;
    minio) minio ;;
    sandbox) sandbox ;;
    postgres) postgres_image ;;
    haproxy) haproxy_image ;;
    all)
      browser; minio
      # The sandbox takes playwright-core from test/node, which
      # install-deps.sh installs (npm ci) before it builds the images; run
      # alone, before that, this leaves the sandbox for the next run.
      if [ -f test/node/node_modules/playwright-core/package.json ]; then
        sandbox
      else
        echo "images.sh: trawler/sandbox skipped: test/node/node_modules/playwright-core is missing (make test-deps installs it)" >&2
      fi
      trawler ;;
  esac
done
