#!/usr/bin/env bash
# lbctl against the local stack's settings (the same URLs `just up` uses). Builds every binary
# first, so lbctl matches the daemons `just up` runs.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$ROOT"
cargo build -q --workspace --bins
exec "${CARGO_TARGET_DIR:-$ROOT/target}/debug/lbctl" "$@"
