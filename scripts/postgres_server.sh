#!/usr/bin/env bash
# A throw-away PostgreSQL server for the history store's tests (tests/test_history_*.py run each store test on SQLite
# and on PostgreSQL) and for scripts/history_bench.py. Debian's server (apt-get install postgresql, when missing),
# run as the postgres user (initdb refuses root) in its own data folder, on 127.0.0.1 only, trusting local
# connections (the folder and the port are this machine's alone; no password to keep).
#
#   scripts/postgres_server.sh start [DIR] [PORT]   # prints the URL the tests read from ROOFLINE_TEST_POSTGRES
#   scripts/postgres_server.sh stop [DIR]
#
# DIR defaults to /tmp/roofline-postgres, PORT to 55432 (off the default 5432, so a system server is left alone).
set -euo pipefail
cmd=${1:-start}
dir=${2:-/tmp/roofline-postgres}
port=${3:-55432}

bin() {  # the newest installed server's folder of programs
  ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1
}

as_postgres() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "$cmd" in
  start)
    if [ -z "$(bin)" ]; then
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql > /dev/null
    fi
    pg=$(bin)
    if [ ! -f "$dir/PG_VERSION" ]; then
      mkdir -p "$dir"
      [ "$(id -u)" = 0 ] && chown postgres:postgres "$dir"
      as_postgres "$pg/initdb" -D "$dir" -U roofline -A trust -E UTF8 > /dev/null
    fi
    if ! as_postgres "$pg/pg_ctl" -D "$dir" status > /dev/null 2>&1; then
      as_postgres "$pg/pg_ctl" -D "$dir" -l "$dir/server.log" -w \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=on" start > /dev/null
    fi
    echo "postgresql://roofline@127.0.0.1:$port/postgres"
    ;;
  stop)
    pg=$(bin)
    if [ -n "$pg" ] && [ -f "$dir/PG_VERSION" ]; then
      as_postgres "$pg/pg_ctl" -D "$dir" -m fast -w stop > /dev/null || true
    fi
    ;;
  *)
    echo "usage: $0 start|stop [DIR] [PORT]" >&2
    exit 2
    ;;
esac
