#!/usr/bin/env bash
# Generates the dev overlay's bearer token: writes its auth.tokens entry (name `dev`, scope
# admin; only the SHA-256 digest, as `lbctl token new` prints it) to tokens.env beside this
# script, which the overlay's secretGenerator reads, and prints the token once. tokens.env is
# git-ignored: every checkout has a token of its own, never a known one.
#   deploy/k8s/overlays/dev/new-token.sh     (or: just k8s-dev-token)
# Python 3 standard library only, so that it runs before anything is built.
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)/tokens.env"
python3 - "$out" <<'PY'
import hashlib, os, secrets, sys
# 240 random bits from the OS, in the `lb_` form of `lbctl token new`.
token = "lb_" + secrets.token_hex(30)
digest = hashlib.sha256(token.encode()).hexdigest()
path = sys.argv[1]
fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
with os.fdopen(fd, "w") as f:
    f.write(f"LEDGERBOARD__AUTH__TOKENS=dev={digest}@admin\n")
os.replace(path + ".tmp", path)
print(f"token (shown once; send `Authorization: Bearer <token>`): {token}")
print(f"written: {path} (apply the overlay again to roll it out)")
PY
