#!/usr/bin/env bash
# `just down`: stops the daemons `just up` started, then the PostgreSQL and Redis it started
# (never servers it found already running). `--daemons-only` leaves the servers alone.
set -euo pipefail
source "$(dirname "$0")/common.sh"

for f in "$RUN"/*.pid; do
    [ "$f" = "$RUN/redis.pid" ] || stop_pid_file "$f"
done
[ "${1:-}" = --daemons-only ] && exit 0

if [ -f "$RUN/redis.started" ]; then
    stop_pid_file "$RUN/redis.pid"
    rm -f "$RUN/redis.started"
    echo "stopped the local Redis"
fi
if [ -f "$RUN/postgres.started" ]; then
    as_postgres "$(pg_bin)/pg_ctl" -D "$STATE/pg" -m fast -w stop >/dev/null || true
    rm -f "$RUN/postgres.started"
    echo "stopped the local PostgreSQL"
fi
echo "ledgerboard is down"
