#!/usr/bin/env bash
# lbchaos against the local stack's settings (the same URLs `just up` uses). Builds every binary
# first: `lbchaos experiment` and `lbchaos chaos` run the daemons that sit next to lbchaos.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$ROOT"
cargo build -q --workspace --bins
exec "${CARGO_TARGET_DIR:-$ROOT/target}/debug/lbchaos" "$@"
