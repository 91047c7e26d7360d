# ledgerboard: `just --list` shows every recipe.

set shell := ["bash", "-euo", "pipefail", "-c"]

# List the recipes.
default:
    @just --list

# Run the local stack: reuse or start PostgreSQL and Redis, migrate, start the four daemons.
up:
    deploy/local/up.sh

# Stop the daemons, and the local PostgreSQL and Redis if `just up` started them.
down:
    deploy/local/down.sh

# The quick benchmark only checks that the harness still runs; its figures are not for reading.
# Tools, format check, clippy, module cycles, doc paths, alert rules, container files, k8s manifests,
# the fresh-clone check, quick benchmark, every test on real servers.
test:
    #!/usr/bin/env bash
    set -euo pipefail
    # Installs what is missing, starts PostgreSQL and Redis if they are down, and limits PATH
    # to a new machine's tools plus the declared ones (deploy/tools/env.sh).
    source deploy/tools/env.sh test
    # A CI run builds once from a fresh clone: incremental state would only take disk.
    if [ "${CI:-}" = true ]; then export CARGO_INCREMENTAL=0; fi
    step() { echo "== $*" >&2; "$@"; }
    step cargo fmt --all --check
    step python3 deploy/tools/check-module-cycles.py
    step python3 deploy/tools/check-doc-paths.py
    # The SDKs' generated files are what sdks/openapi.json generates (npm ci first when needed);
    # cargo test checks that the served document is sdks/openapi.json, then tests both SDKs.
    step sdks/sdk.sh check
    step promtool check rules deploy/observability/alerts.yaml
    step promtool test rules deploy/observability/alerts.test.yaml
    step hadolint deploy/docker/Dockerfile
    step check-jsonschema --builtin-schema vendor.compose-spec deploy/compose.yaml
    step deploy/k8s/validate.sh
    # Before the fresh-clone check, which starts from these artifacts (its dependencies).
    step cargo build -q --workspace --bins
    # The fresh-clone check and the quick benchmark mostly wait (daemons starting, installs,
    # fixed-length load phases): clippy runs beside them, on the cores they leave, and is
    # judged when they are done. (The clone builds in target/fresh-clone, clippy in target/.)
    echo "== cargo clippy --workspace --all-targets -- -D warnings (beside the next two)" >&2
    cargo clippy --workspace --all-targets -- -D warnings > target/clippy.log 2>&1 &
    clippy=$!
    trap 'kill "$clippy" 2>/dev/null || true' EXIT
    step deploy/tools/check-fresh-clone.sh
    step target/debug/ledgerboard-bench --quick --out target/bench-quick > /dev/null
    if ! wait "$clippy"; then cat target/clippy.log >&2; echo "clippy failed" >&2; exit 1; fi
    step cargo test --workspace

# Write the document the api serves to sdks/openapi.json (sorted keys, info.version = the release),
# then regenerate the SDKs' generated files from it (docs/sdks.md). Commit what changed.
openapi:
    LEDGERBOARD_WRITE_OPENAPI=1 cargo test -q -p ledgerboard-api --test it openapi::the_committed_document_is_the_served_one
    sdks/sdk.sh generate

# Install what PURPOSE (up or test) needs and is missing; prints one line when nothing is.
tools PURPOSE="test":
    #!/usr/bin/env bash
    set -euo pipefail
    source deploy/tools/env.sh {{PURPOSE}}

# Starts the missing ones (admin ports 9111, 9112, ...) and stops the extra ones.
# Run exactly N local projector processes beside a running `just up` stack.
scale-projectors N:
    deploy/local/scale-projectors.sh {{N}}

# Generate the k8s dev overlay's bearer token (digest in deploy/k8s/overlays/dev/tokens.env).
k8s-dev-token:
    deploy/k8s/overlays/dev/new-token.sh

# Apply the schema migrations to the configured database.
migrate:
    deploy/local/lbctl.sh migrate

# Schema version and outbox state (pending, parked, oldest pending age).
status:
    deploy/local/lbctl.sh status

# Stages: duplicate, stopped projector, hand edit in Redis, repair; own database and namespace.
# The reference failure experiment: prints its table, report in target/experiment/.
experiment:
    deploy/local/lbchaos.sh experiment

# Faults: killed projectors, Redis flushed and crashed, sessions terminated, corrupted data.
# Commands under faults for SECONDS, then the contract checked; report in target/chaos/.
chaos SECONDS="180":
    deploy/local/lbchaos.sh chaos --duration-secs {{SECONDS}}

# `just bench --quick` for a short run; `--without-telemetry` to measure telemetry's cost.
# Benchmarks against pgbench and redis-benchmark in one run; report in target/bench/report.md.
bench *ARGS:
    cargo build -q --release -p ledgerboard-bench -p ledgerboard-cli -p ledgerboard-reconciler -p ledgerboard-api
    target/release/ledgerboard-bench {{ARGS}}

# Follow the logs of the local stack.
logs:
    tail -n 50 -F .local/log/*.log
