# ledgerboard: `just --list` shows every recipe.

set shell := ["bash", "-euo", "pipefail", "-c"]

# List the recipes.
default:
    @just --list

# Run the local stack: reuse or start PostgreSQL and Redis, migrate, start the three daemons.
up:
    deploy/local/up.sh

# Stop the daemons, and the local PostgreSQL and Redis if `just up` started them.
down:
    deploy/local/down.sh

# The quick benchmark only checks that the harness still runs; its figures are not for reading.
# Format check, clippy, alert rules, k8s manifests, quick benchmark, every test on real servers.
test:
    cargo fmt --all --check
    cargo clippy --workspace --all-targets -- -D warnings
    promtool check rules deploy/observability/alerts.yaml
    promtool test rules deploy/observability/alerts.test.yaml
    deploy/k8s/validate.sh
    cargo build -q --workspace --bins
    target/debug/ledgerboard-bench --quick --out target/bench-quick > /dev/null
    cargo test --workspace

# Starts the missing ones (admin ports 9111, 9112, ...) and stops the extra ones.
# Run exactly N local projector processes beside a running `just up` stack.
scale-projectors N:
    deploy/local/scale-projectors.sh {{N}}

# Apply the schema migrations to the configured database.
migrate:
    deploy/local/lbctl.sh migrate

# Schema version and outbox state (pending, parked, oldest pending age).
status:
    deploy/local/lbctl.sh status

# Stages: duplicate, stopped projector, hand edit in Redis, repair; own database and namespace.
# The reference failure experiment: prints its table, report in target/experiment/.
experiment:
    deploy/local/lbctl.sh experiment

# Faults: killed projectors, Redis flushed and crashed, sessions terminated, corrupted data.
# Commands under faults for SECONDS, then the contract checked; report in target/chaos/.
chaos SECONDS="180":
    deploy/local/lbctl.sh chaos --duration-secs {{SECONDS}}

# `just bench --quick` for a short run; `--without-telemetry` to measure telemetry's cost.
# Benchmarks against pgbench and redis-benchmark in one run; report in target/bench/report.md.
bench *ARGS:
    cargo build -q --release -p ledgerboard-bench -p ledgerboard-cli -p ledgerboard-reconciler
    target/release/ledgerboard-bench {{ARGS}}

# Follow the logs of the local stack.
logs:
    tail -n 50 -F .local/log/*.log
