#!/usr/bin/env bash
# Runs a command against a throwaway PostgreSQL cluster:
#   scripts/pgtest.sh go test -count=1 ./store/...
# installs Debian's postgresql when no initdb is there, creates a cluster in a
# temporary directory, starts it on a free port of 127.0.0.1 (no other
# address; its Unix socket in that directory), runs the command with
# TRAWLER_TEST_DATABASE_URL set to the cluster's URL, then stops the cluster
# and removes it, whatever the command did. It exits with the command's
# status. PostgreSQL refuses to run as root, so as root the cluster belongs
# to the postgres user the package creates.
set -euo pipefail
if [ $# -eq 0 ]; then
  echo "usage: $0 COMMAND [ARG...]" >&2
  exit 2
fi

bindir() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  echo "pgtest: installing postgresql with apt-get" >&2
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
bin="$(bindir)"

dir="$(mktemp -d /tmp/trawler-pgtest.XXXXXX)"
chmod 755 "$dir"
run=()
if [ "$(id -u)" -eq 0 ]; then
  if ! id postgres >/dev/null 2>&1; then
    echo "pgtest: running as root and there is no postgres user to run the cluster as" >&2
    exit 1
  fi
  chown postgres: "$dir"
  run=(runuser -u postgres --)
fi
# as_owner runs a PostgreSQL program as the cluster's owner, from a
# directory it can read.
as_owner() { (cd "$dir" && "${run[@]}" "$@"); }

started=""
cleanup() {
  if [ -n "$started" ]; then
    as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The cluster's superuser has a password of its own, though it only
# listens on loopback for as long as the command runs.
password="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
printf '%s\n' "$password" >"$dir/pwfile"
chmod 644 "$dir/pwfile"
as_owner "$bin/initdb" -D "$dir/data" -U postgres --pwfile="$dir/pwfile" -E UTF8 --no-locale \
  --auth-host=scram-sha-256 --auth-local=peer >"$dir/initdb.log" 2>&1 || {
  cat "$dir/initdb.log" >&2
  exit 1
}
rm -f "$dir/pwfile"
mkdir "$dir/sock"
[ ${#run[@]} -gt 0 ] && chown postgres: "$dir/sock"

# A port nothing answers on; should another process take it before the
# server does, the start fails and the next port is tried.
for _ in $(seq 20); do
  port=$((20000 + RANDOM % 20000))
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    continue
  fi
  # Durability is not wanted from a cluster that lives for one test run.
  if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start -o \
    "-c listen_addresses=127.0.0.1 -p $port -k $dir/sock -c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
    >/dev/null; then
    started=1
    break
  fi
done
if [ -z "$started" ]; then
  echo "pgtest: the PostgreSQL server did not start:" >&2
  tail -n 20 "$dir/server.log" >&2 || true
  exit 1
fi

export TRAWLER_TEST_DATABASE_URL="postgres://postgres:$password@127.0.0.1:$port/postgres?sslmode=disable"
echo "pgtest: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') at postgres://postgres:***@127.0.0.1:$port/postgres" >&2
set +e
"$@"
status=$?
set -e
exit "$status"
