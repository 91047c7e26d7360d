#!/usr/bin/env bash
# The README's commands in a clean clone of HEAD, as a new user runs them: `./just up` twice (the
# second must install nothing), a score posted and read back through the API, `./just tools
# test` (what `./just test` installs before it tests), `./just down`. `just` and every tool this
# project installs are hidden from PATH, so a missing install step fails here. `just test` runs
# this; `./just test` in the clone is not run again (it would run every test twice): the
# outer `just test` already runs with PATH limited the same way (deploy/tools/env.sh).
#
# The clone's stack uses its own database, Redis namespace and ports, so a running `just up`
# is left alone; its build goes to target/fresh-clone (seeded from target/debug: see below).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ledgerboard-fresh.XXXXXX")
tag="fresh_$(basename "$tmp" | tr -dc 'a-zA-Z0-9' | tr 'A-Z' 'a-z')"
clone="$tmp/ledgerboard"
git clone -q "$root" "$clone"

# Every daemon binds a port of its own choice (`127.0.0.1:0`, a projector base of 0) and logs
# it; the API's is read from its log after `./just up`. A port found free here would only be
# bound after the clone's first build (minutes), time enough for another process to take it.
export LEDGERBOARD__DATABASE__URL="postgres://postgres@127.0.0.1:5432/$tag"
export LEDGERBOARD__REDIS__URL=redis://127.0.0.1:6379
export LEDGERBOARD__REDIS__NAMESPACE="$tag"
export LEDGERBOARD__API__LISTEN=127.0.0.1:0
export LEDGERBOARD__API__ADMIN_LISTEN=127.0.0.1:0
export LEDGERBOARD__RECONCILER__ADMIN_LISTEN=127.0.0.1:0
export LEDGERBOARD__DISPATCHER__ADMIN_LISTEN=127.0.0.1:0
export LEDGERBOARD_PROJECTOR_PORT_BASE=0
export CARGO_TARGET_DIR="$root/target/fresh-clone"
# The clone starts from the artifacts of the outer `cargo build --workspace --bins` (`just
# test` runs it first). deps/ (gigabytes) is hard-linked: cargo and the linker replace a file,
# never write into it. The fingerprints and build-script outputs (megabytes), which cargo
# rewrites in place, are copied with their times (a newer copy would make every dependency
# with a build script look changed). Dependency hashes do not depend on where the workspace
# is, so the registry crates are fresh. When the outer tree is exactly HEAD (a clean checkout,
# as CI's), the clone's files and folders take the commit's time: they are the very sources
# the outer build compiled, so ledgerboard's crates are fresh too, and a file the commit lacks
# still fails the build (cargo's dep-info lists every source file). With local changes the
# clone's crates compile anew, from HEAD.
if [ ! -d "$CARGO_TARGET_DIR/debug" ] && [ -d "$root/target/debug/deps" ]; then
    mkdir -p "$CARGO_TARGET_DIR/debug"
    # `just test` runs clippy in target/ meanwhile: a temporary file rustc removes during the
    # copy is not copied (what is missing is only compiled again).
    cp -al "$root/target/debug/deps" "$CARGO_TARGET_DIR/debug/" 2>/dev/null || true
    cp -a "$root/target/debug/build" "$root/target/debug/.fingerprint" "$CARGO_TARGET_DIR/debug/" \
        2>/dev/null || true
fi
if [ -z "$(git -C "$root" status --porcelain --untracked-files=no)" ]; then
    committed=$(git -C "$clone" log -1 --format=%ct)
    find "$clone" -path "$clone/.git" -prune -o -exec touch -h -d "@$committed" {} +
fi
# A new user's PATH: a new machine's tools only (just, the venv and the installed tools hidden).
user_path="$root/.local/tools/path"
[ -d "$user_path" ] || { echo "source deploy/tools/env.sh first (no $user_path)" >&2; exit 1; }
export LB_HIDE=just

cleanup() {
    (cd "$clone" && PATH="$user_path" ./just down >/dev/null 2>&1) || true
    psql -q "postgres://postgres@127.0.0.1:5432/postgres" -c "DROP DATABASE IF EXISTS \"$tag\" WITH (FORCE)" || true
    redis-cli -h 127.0.0.1 --scan --pattern "$tag:*" | xargs -r -n 500 redis-cli -h 127.0.0.1 DEL >/dev/null || true
    rm -rf "$tmp"
    # CI builds once on a machine it leaves: the clone's build (gigabytes) is not kept there.
    if [ "${CI:-}" = true ]; then rm -rf "$CARGO_TARGET_DIR"; fi
}
trap cleanup EXIT

run() { # label command...: runs it in the clone with the new user's PATH, prints its time
    local label=$1 start=$SECONDS; shift
    if ! (cd "$clone" && PATH="$user_path" "$@") >"$tmp/$label.log" 2>&1; then
        echo "fresh clone: '$*' failed:" >&2; tail -n 30 "$tmp/$label.log" >&2; exit 1
    fi
    times+=("$label $((SECONDS - start)) s")
}
times=()

if (cd "$clone" && PATH="$user_path" command -v just) >/dev/null 2>&1; then
    echo "fresh clone: just is still on the new user's PATH" >&2; exit 1
fi
run "up" ./just up
run "up-again" ./just up
if ! grep -q "tools: nothing to install for up" "$tmp/up-again.log"; then
    echo "fresh clone: the second ./just up installed something:" >&2; cat "$tmp/up-again.log" >&2; exit 1
fi

# The README's example: a score command, then the board read back through the API, at the
# address the second `./just up`'s api bound.
api=$(grep -m 1 -F "ledgerboard-api started" "$clone/.local/log/api.log" | sed -n 's/.* addr=\([^ ]*\).*/\1/p')
[ -n "$api" ] || { echo "fresh clone: the api logged no address: $(tail -n 20 "$clone/.local/log/api.log")" >&2; exit 1; }
body='{"event_id":"0b9a3c52-4f5e-4c1e-9d7a-2f1e8b6c4d3a","user_id":"user-a","delta":10}'
code=$(curl -s -o "$tmp/post.json" -w '%{http_code}' --max-time 10 -X POST \
    "http://$api/v1/boards/weekly/scores" -H 'Authorization: Bearer local-dev-token' \
    -H 'Content-Type: application/json' -d "$body")
[ "$code" = 201 ] || { echo "fresh clone: POST answered $code: $(cat "$tmp/post.json")" >&2; exit 1; }
for _ in $(seq 50); do
    curl -s --max-time 5 "http://$api/v1/boards/weekly/top?limit=10&consistency=eventual" >"$tmp/top.json" || true
    grep -q '"user_id":"user-a","score":10' "$tmp/top.json" && break
    sleep 0.1
done
grep -q '"user_id":"user-a","score":10' "$tmp/top.json" \
    || { echo "fresh clone: the score never reached the projection: $(cat "$tmp/top.json")" >&2; exit 1; }

# Probes and metrics on the api's admin port, none on its public one.
admin=$(grep -m 1 -F "admin server (healthz" "$clone/.local/log/api.log" | sed -n 's/.* addr=\([^ ]*\).*/\1/p')
[ -n "$admin" ] || { echo "fresh clone: the api logged no admin address" >&2; exit 1; }
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://$admin/readyz")
[ "$code" = 200 ] || { echo "fresh clone: the api's /readyz answered $code" >&2; exit 1; }
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://$api/metrics")
[ "$code" = 404 ] || { echo "fresh clone: the api's public port answered $code to /metrics" >&2; exit 1; }

run "tools-test" ./just tools test
run "down" ./just down
echo "fresh clone: README's commands passed with just and installed tools hidden (${times[*]})"
