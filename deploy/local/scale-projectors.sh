#!/usr/bin/env bash
# `just scale-projectors N`: runs exactly N local projector processes beside a running
# `just up` stack: starts the missing ones (admin ports 9111, 9112, ...), stops the extra ones.
set -euo pipefail
source "$(dirname "$0")/common.sh"
want=${1:?usage: scale-projectors.sh N}
[[ $want =~ ^[0-9]+$ ]] && [ "$want" -le 64 ] || { echo "N must be 0 to 64" >&2; exit 1; }
[ -f "$RUN/api.pid" ] || { echo "the local stack is not running: just up" >&2; exit 1; }
cd "$ROOT"
# The same profile's binaries as `just up` (LEDGERBOARD_PROFILE), built if out of date.
cargo_flags=()
[ "$PROFILE" = release ] && cargo_flags=(--release)
cargo build -q "${cargo_flags[@]}" -p ledgerboard-projector
for f in "$RUN"/projector-*.pid; do
    [ -e "$f" ] || continue
    i=${f##*/projector-}; i=${i%.pid}
    if [ "$i" -gt "$want" ]; then stop_pid_file "$f"; echo "stopped projector $i"; fi
done
for i in $(seq "$want"); do
    if [ -f "$RUN/projector-$i.pid" ] && kill -0 "$(cat "$RUN/projector-$i.pid")" 2>/dev/null; then
        continue
    fi
    start_projector "$i"
    wait_started "projector-$i" ledgerboard-projector
    echo "started projector $i: http://$(logged_addr "projector-$i" "admin server (healthz")/metrics"
done
echo "$want projector(s) running"
