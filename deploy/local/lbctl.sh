#!/usr/bin/env bash
# lbctl against the local stack's settings (the same URLs `just up` uses).
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$ROOT"
exec cargo run -q -p ledgerboard-cli -- "$@"
