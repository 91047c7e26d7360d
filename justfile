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

# Format check, clippy with warnings denied, the alert rules and their unit tests (promtool),
# the quick benchmark (so the harness cannot rot), and every test against the real servers.
test:
    cargo fmt --all --check
    cargo clippy --workspace --all-targets -- -D warnings
    promtool check rules deploy/observability/alerts.yaml
    promtool test rules deploy/observability/alerts.test.yaml
    cargo build -q -p ledgerboard-bench -p ledgerboard-cli -p ledgerboard-reconciler
    target/debug/ledgerboard-bench --quick --out target/bench-quick > /dev/null
    cargo test --workspace

# Apply the schema migrations to the configured database.
migrate:
    deploy/local/lbctl.sh migrate

# Schema version and outbox state (pending, parked, oldest pending age).
status:
    deploy/local/lbctl.sh status

# Benchmarks against pgbench and a pipelined Redis client, in one run (`just bench --quick`
# for a short one); the report goes to target/bench/report.md.
bench *ARGS:
    cargo build -q --release -p ledgerboard-bench -p ledgerboard-cli -p ledgerboard-reconciler
    target/release/ledgerboard-bench {{ARGS}}

# Follow the logs of the local stack.
logs:
    tail -n 50 -F .local/log/*.log
