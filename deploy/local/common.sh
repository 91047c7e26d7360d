# Shared by up.sh and down.sh: where the local stack keeps its state, and the URLs it uses.
# The URLs are the daemons' own settings, so one environment drives both.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
STATE="$ROOT/.local"
RUN="$STATE/run"
LOG="$STATE/log"
export LEDGERBOARD__DATABASE__URL=${LEDGERBOARD__DATABASE__URL:-postgres://postgres@127.0.0.1:5432/ledgerboard}
export LEDGERBOARD__REDIS__URL=${LEDGERBOARD__REDIS__URL:-redis://127.0.0.1:6379}
export LEDGERBOARD__API__LISTEN=${LEDGERBOARD__API__LISTEN:-127.0.0.1:8080}
# The api's /healthz, /readyz and /metrics (never on the public port).
export LEDGERBOARD__API__ADMIN_LISTEN=${LEDGERBOARD__API__ADMIN_LISTEN:-127.0.0.1:9100}
# No load balancer in front of the local api: `just down` need not wait for a drain.
export LEDGERBOARD__API__DRAIN_DELAY_MS=${LEDGERBOARD__API__DRAIN_DELAY_MS:-0}
# A pass every 10 s locally (300 s is the default), so a planted drift shows up quickly.
export LEDGERBOARD__RECONCILER__INTERVAL_MS=${LEDGERBOARD__RECONCILER__INTERVAL_MS:-10000}
# The local stack's one token (scope admin): send `Authorization: Bearer local-dev-token`.
# Only its SHA-256 digest is configured (`lbctl token hash`).
export LEDGERBOARD__AUTH__TOKENS=${LEDGERBOARD__AUTH__TOKENS:-local=0cd48eed49739dfdd99efaef37d251aae5a80866e5954763c6597943fff5ce9b@admin}
PROFILE=${LEDGERBOARD_PROFILE:-debug}
# Projector replicas `just up` starts (they share the outbox through SKIP LOCKED).
PROJECTORS=${LEDGERBOARD_PROJECTORS:-2}

# host and port of a URL like scheme://user@host:port/path
url_host() { local a=${1#*://}; a=${a#*@}; a=${a%%/*}; echo "${a%%:*}"; }
url_port() { local a=${1#*://}; a=${a#*@}; a=${a%%/*}; [[ $a == *:* ]] && echo "${a##*:}" || echo "$2"; }
url_dbname() { local a=${1#*://}; a=${a#*/}; echo "${a%%\?*}"; }

# Runs a command as the postgres user when we are root (initdb and postgres refuse root).
as_postgres() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_bin() {
    local dir
    dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    [ -n "$dir" ] || { echo "no PostgreSQL server binaries found (apt-get install postgresql)" >&2; exit 1; }
    echo "$dir"
}

# The daemons' binaries, as `cargo build` leaves them.
bin="${CARGO_TARGET_DIR:-$ROOT/target}/$PROFILE"

start_daemon() { # name binary [VAR=value ...]
    local name=$1 binary=$2; shift 2
    env "$@" nohup "$bin/$binary" >"$LOG/$name.log" 2>&1 &
    echo $! >"$RUN/$name.pid"
}

wait_started() { # name binary
    for _ in $(seq 300); do
        if grep -q "$2 started" "$LOG/$1.log" 2>/dev/null; then return 0; fi
        if ! kill -0 "$(cat "$RUN/$1.pid")" 2>/dev/null; then break; fi
        sleep 0.1
    done
    echo "$2 ($1) did not start within 30 s:" >&2; tail -n 20 "$LOG/$1.log" >&2; exit 1
}

# Each projector gets its own admin port (/healthz, /readyz, /metrics): 9111, 9112, ...
# (LEDGERBOARD_PROJECTOR_PORT_BASE + i). A base of 0 gives every projector `127.0.0.1:0`: each
# binds a port of its own choice and logs it (`logged_addr`). The fresh-clone check uses that,
# so no port it found free can be taken by another process before a daemon binds it.
projector_admin() {
    local base=${LEDGERBOARD_PROJECTOR_PORT_BASE:-9110}
    if [ "$base" = 0 ]; then echo "127.0.0.1:0"; else echo "127.0.0.1:$((base + $1))"; fi
}

logged_addr() { # name message: the `addr=` of the daemon's first log line with message, i.e.
    # the address it bound (`ledgerboard-api started`, `admin server (healthz`)
    grep -m 1 -F "$2" "$LOG/$1.log" | sed -n 's/.* addr=\([^ ]*\).*/\1/p'
}

start_projector() { # index
    start_daemon "projector-$1" ledgerboard-projector \
        "LEDGERBOARD__PROJECTOR__ADMIN_LISTEN=$(projector_admin "$1")"
}

stop_pid_file() { # SIGTERM, then SIGKILL after 10 s
    local file=$1 pid
    [ -f "$file" ] || return 0
    pid=$(cat "$file")
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid"
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    fi
    rm -f "$file"
}
