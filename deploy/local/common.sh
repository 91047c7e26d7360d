# Shared by up.sh and down.sh: where the local stack keeps its state, and the URLs it uses.
# The URLs are the daemons' own settings, so one environment drives both.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
STATE="$ROOT/.local"
RUN="$STATE/run"
LOG="$STATE/log"
export LEDGERBOARD__DATABASE__URL=${LEDGERBOARD__DATABASE__URL:-postgres://postgres@127.0.0.1:5432/ledgerboard}
export LEDGERBOARD__REDIS__URL=${LEDGERBOARD__REDIS__URL:-redis://127.0.0.1:6379}
export LEDGERBOARD__API__LISTEN=${LEDGERBOARD__API__LISTEN:-127.0.0.1:8080}
# A pass every 10 s locally (300 s is the default), so a planted drift shows up quickly.
export LEDGERBOARD__RECONCILER__INTERVAL_MS=${LEDGERBOARD__RECONCILER__INTERVAL_MS:-10000}
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
