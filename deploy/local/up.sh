#!/usr/bin/env bash
# `just up`: the local stack. Reuses PostgreSQL and Redis when they answer at the configured
# URLs, else starts local servers from the installed binaries with their data in .local/;
# applies migrations; builds and starts the four daemons; prints where the API listens.
set -euo pipefail
# What `just up` needs and a machine lacks is installed first (deploy/tools/env.sh).
source "$(dirname "$0")/../tools/env.sh" up
source "$(dirname "$0")/common.sh"
mkdir -p "$RUN" "$LOG"
cd "$ROOT"

db_url=$LEDGERBOARD__DATABASE__URL
db_host=$(url_host "$db_url"); db_port=$(url_port "$db_url" 5432); db_name=$(url_dbname "$db_url")
admin_url=${db_url%/*}/postgres

if pg_isready -q -d "$admin_url" -t 3; then
    echo "PostgreSQL answers at $db_host:$db_port"
else
    echo "PostgreSQL does not answer at $db_host:$db_port: starting a local one in .local/pg"
    pg_dir=$(pg_bin)
    mkdir -p "$STATE/pg" "$STATE/pg-socket"
    [ "$(id -u)" = 0 ] && chown postgres "$STATE/pg" "$STATE/pg-socket" "$LOG"
    if [ ! -f "$STATE/pg/PG_VERSION" ]; then
        as_postgres "$pg_dir/initdb" -D "$STATE/pg" -U postgres --auth=trust >"$LOG/initdb.log"
    fi
    as_postgres "$pg_dir/pg_ctl" -D "$STATE/pg" -l "$LOG/postgres.log" -w -t 30 \
        -o "-p $db_port -c listen_addresses=$db_host -k $STATE/pg-socket" start >/dev/null
    touch "$RUN/postgres.started"
fi
if ! psql "$admin_url" -tAc "SELECT 1 FROM pg_database WHERE datname = '$db_name'" | grep -q 1; then
    psql "$admin_url" -qc "CREATE DATABASE \"$db_name\""
    echo "created database $db_name"
fi

redis_url=$LEDGERBOARD__REDIS__URL
redis_port=$(url_port "$redis_url" 6379)
if [ "$(redis-cli -u "$redis_url" ping 2>/dev/null)" = PONG ]; then
    echo "Redis answers at $(url_host "$redis_url"):$redis_port"
else
    echo "Redis does not answer: starting a local one on port $redis_port"
    mkdir -p "$STATE/redis"
    redis-server --daemonize yes --bind "$(url_host "$redis_url")" --port "$redis_port" \
        --save "" --appendonly no --dir "$STATE/redis" \
        --logfile "$LOG/redis.log" --pidfile "$RUN/redis.pid"
    touch "$RUN/redis.started"
    for _ in $(seq 50); do [ "$(redis-cli -u "$redis_url" ping 2>/dev/null)" = PONG ] && break; sleep 0.1; done
fi

cargo_flags=()
[ "$PROFILE" = release ] && cargo_flags=(--release)
cargo build -q "${cargo_flags[@]}" --workspace --bins
"$bin/lbctl" migrate

# A second `just up` restarts the daemons rather than starting a second set.
"$(dirname "$0")/down.sh" --daemons-only
# Webhooks to http:// receivers and to receivers on this machine (loopback, private addresses)
# are allowed here, and only here (docs/dispatcher.md): the api accepts such subscriptions, the
# dispatcher delivers to them.
start_daemon api ledgerboard-api \
    "LEDGERBOARD__API__WEBHOOK_ALLOW_HTTP=${LEDGERBOARD__API__WEBHOOK_ALLOW_HTTP:-true}" \
    "LEDGERBOARD__API__WEBHOOK_ALLOW_PRIVATE_ADDRESSES=${LEDGERBOARD__API__WEBHOOK_ALLOW_PRIVATE_ADDRESSES:-true}"
for i in $(seq "$PROJECTORS"); do start_projector "$i"; done
start_daemon reconciler ledgerboard-reconciler
start_daemon dispatcher ledgerboard-dispatcher \
    "LEDGERBOARD__DISPATCHER__ALLOW_HTTP=${LEDGERBOARD__DISPATCHER__ALLOW_HTTP:-true}" \
    "LEDGERBOARD__DISPATCHER__ALLOW_PRIVATE_ADDRESSES=${LEDGERBOARD__DISPATCHER__ALLOW_PRIVATE_ADDRESSES:-true}"
wait_started api ledgerboard-api
for i in $(seq "$PROJECTORS"); do wait_started "projector-$i" ledgerboard-projector; done
wait_started reconciler ledgerboard-reconciler
wait_started dispatcher ledgerboard-dispatcher
echo "ledgerboard is up (logs: just logs; stop: just down)"
# The addresses the daemons bound, from their logs (a configured port 0 is theirs to choose).
admin="admin server (healthz"
echo "  API:        http://$(logged_addr api "ledgerboard-api started")"
echo "  api admin:  http://$(logged_addr api "$admin")/metrics  (probes: /healthz /readyz)"
for i in $(seq "$PROJECTORS"); do
    echo "  projector $i: http://$(logged_addr "projector-$i" "$admin")/metrics"
done
echo "  reconciler: http://$(logged_addr reconciler "$admin")/metrics"
echo "  dispatcher: http://$(logged_addr dispatcher "$admin")/metrics"
