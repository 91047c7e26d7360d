# Sourced by ./just, deploy/local/*.sh and the justfile's test recipe, never run on its own:
#   source deploy/tools/env.sh just|up|test
# Installs what that purpose needs and this machine lacks, idempotently, then limits PATH to a
# new machine's tools plus the ones declared here, so a recipe that needs an undeclared tool
# fails on every machine, not only on a new user's. A run that finds everything says so in one
# line. Everything but Debian packages lands in .local/tools of this checkout.

LB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
LB_TOOLS="$LB_ROOT/.local/tools"
LB_TOOLS_DIR="$LB_ROOT/deploy/tools"

# Debian packages per purpose. up: the servers `just up` reuses or starts, and their clients.
# test adds: pgbench (postgresql-contrib) and redis-benchmark (redis-tools), the benchmark's
# limits; promtool (prometheus) for the alert rules; pgbouncer, which
# crates/api/tests/it/pgbouncer.rs starts as its own (the package's service is not needed);
# kubectl, which renders the Kubernetes overlays; the DejaVu font of the benchmark's lag plot;
# chromium and chromium-driver: the console's browser tests, crates/system-tests/tests/it/console.rs,
# drive chromium through chromedriver; mono-mcs and mono-devel: the C# SDK (sdks/csharp) is
# compiled with mcs and its tests run under mono (crates/system-tests/tests/it/sdks.rs).
LB_APT_UP=(postgresql postgresql-client redis-server redis-tools)
LB_APT_TEST=("${LB_APT_UP[@]}" postgresql-contrib prometheus pgbouncer kubectl fonts-dejavu-core
    chromium chromium-driver mono-mcs mono-devel)
# The executables those packages give the recipes and tests, by name: the only ones of theirs
# on the limited PATH (a package that a new machine lacks is otherwise hidden).
LB_APT_BINS=(psql pg_isready pg_ctlcluster redis-server redis-cli pgbench redis-benchmark
    promtool pgbouncer kubectl chromium chromedriver mcs mono)

lb_say() { echo "tools: $*" >&2; }

lb_as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"
    elif command -v sudo >/dev/null; then sudo "$@"
    else lb_say "need root to run: $*"; return 1; fi
}

lb_installed=()

lb_ensure_apt() { # package...
    local missing=() p
    for p in "$@"; do
        [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" = installed ] || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    lb_say "apt-get install ${missing[*]}"
    lb_as_root apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive lb_as_root apt-get install -y -q --no-install-recommends \
        "${missing[@]}" >/dev/null
    lb_installed+=("${missing[@]}")
}

# Python tools in a virtual environment of this checkout, pinned by a requirements file; a
# stamp with the file's digest makes the second run a no-op and an edited pin a reinstall.
lb_ensure_pip() { # requirements-file
    local req=$1 stamp digest
    stamp="$LB_TOOLS/venv/.installed-$(basename "$req")"
    # Every requirements file: the test file includes the just file.
    digest=$(cat "$LB_TOOLS_DIR"/requirements-*.txt | sha256sum | cut -d' ' -f1)
    [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$digest" ] && return 0
    [ -x "$LB_TOOLS/venv/bin/python3" ] || python3 -m venv "$LB_TOOLS/venv"
    lb_say "pip install -r ${req#"$LB_ROOT"/}"
    "$LB_TOOLS/venv/bin/python3" -m pip install -q --disable-pip-version-check -r "$req"
    echo "$digest" >"$stamp"
    lb_installed+=("$(basename "$req")")
}

lb_ensure_rust_components() {
    if ! cargo clippy --version >/dev/null 2>&1 || ! cargo fmt --version >/dev/null 2>&1; then
        lb_say "rustup component add clippy rustfmt"
        rustup component add clippy rustfmt >/dev/null
        lb_installed+=(clippy rustfmt)
    fi
}

# PostgreSQL 15 at 127.0.0.1:5432 and Redis 7 at 127.0.0.1:6379 are what the tests use; the
# machine starts them, and this starts them the same way when they are down.
lb_ensure_servers() {
    if ! pg_isready -q -h 127.0.0.1 -p 5432; then
        lb_say "starting PostgreSQL"
        lb_as_root pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n 1)" main start
    fi
    if [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" != PONG ]; then
        lb_say "starting Redis"
        mkdir -p /var/lib/redis /var/log/redis
        redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
            --dir /var/lib/redis --logfile /var/log/redis/ci.log
    fi
    local _
    for _ in $(seq 60); do
        pg_isready -q -h 127.0.0.1 -p 5432 && [ "$(redis-cli -h 127.0.0.1 ping 2>/dev/null)" = PONG ] && return 0
        sleep 1
    done
    lb_say "PostgreSQL or Redis did not answer within 60 s"; return 1
}

# PATH = this checkout's venv, links to the declared Debian executables, then a new machine's
# tools (hermetic_path.py). LB_HIDE names more tools to hide (the fresh-clone check hides just).
lb_limit_path() {
    local bin="$LB_TOOLS/bin" name found hide=() h
    mkdir -p "$bin"
    for name in "${LB_APT_BINS[@]}"; do
        # Looked up where Debian puts them: PATH may already be a limited one.
        found=$(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin command -v "$name" || true)
        [ -n "$found" ] && [ "$found" != "$bin/$name" ] && ln -sfn "$found" "$bin/$name"
    done
    for h in ${LB_HIDE:-}; do hide+=(--hide "$h"); done
    local counts
    counts=$(python3 "$LB_TOOLS_DIR/hermetic_path.py" "$LB_TOOLS/path" "$LB_TOOLS_DIR/fresh-machine.txt" "${hide[@]}")
    LB_PATH_COUNTS=$counts
    export PATH="$LB_TOOLS/venv/bin:$bin:$LB_TOOLS/path"
}

lb_tools() { # just|up|test
    local purpose=$1 started=$SECONDS
    export PATH="$HOME/.cargo/bin:$PATH"
    mkdir -p "$LB_TOOLS"
    case $purpose in
        just) lb_ensure_pip "$LB_TOOLS_DIR/requirements-just.txt"; return 0 ;;
        up) lb_ensure_apt "${LB_APT_UP[@]}"; lb_ensure_pip "$LB_TOOLS_DIR/requirements-just.txt" ;;
        test)
            lb_ensure_apt "${LB_APT_TEST[@]}"
            lb_ensure_pip "$LB_TOOLS_DIR/requirements-test.txt"
            lb_ensure_rust_components
            lb_ensure_servers ;;
        *) lb_say "unknown purpose $purpose (just, up or test)"; return 1 ;;
    esac
    lb_limit_path
    if [ ${#lb_installed[@]} -eq 0 ]; then
        lb_say "nothing to install for $purpose; PATH: .local/tools and a new machine's tools (${LB_PATH_COUNTS% *} linked, ${LB_PATH_COUNTS#* } hidden)"
    else
        lb_say "installed ${lb_installed[*]} in $((SECONDS - started)) s"
    fi
}

lb_tools "${1:?usage: source deploy/tools/env.sh just|up|test}"
