#!/usr/bin/env bash
# The SDKs' build steps (docs/sdks.md). Node.js and npm, and mono's mcs for build-csharp:
#   sdks/sdk.sh install             npm ci in sdks/typescript, unless package-lock.json is installed already
#   sdks/sdk.sh generate            regenerate both SDKs' generated files from sdks/openapi.json
#   sdks/sdk.sh check               fail when regenerating would change a committed generated file
#   sdks/sdk.sh build-csharp DIR    compile the C# SDK and its test runner with mcs into DIR
set -euo pipefail

SDKS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TS=$SDKS/typescript
CS=$SDKS/csharp
# The generated files, relative to their SDK's folder.
TS_TYPES=src/generated/openapi.ts
CS_MODELS=Runtime/Generated/Models.g.cs

install() {
    local stamp=$TS/node_modules/.lb-installed digest
    digest=$(cat "$TS/package.json" "$TS/package-lock.json" | sha256sum | cut -d' ' -f1)
    [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$digest" ] && return 0
    echo "sdks: npm ci in sdks/typescript" >&2
    (cd "$TS" && npm ci --no-audit --no-fund --loglevel=error >&2)
    echo "$digest" >"$stamp"
}

# Writes both generated files under $1, at their paths relative to sdks/.
generate_into() {
    local out=$1
    install
    mkdir -p "$out/typescript/$(dirname "$TS_TYPES")" "$out/csharp/$(dirname "$CS_MODELS")"
    # The pinned openapi-typescript (package-lock.json). Objects without properties (metadata)
    # are any object, not an empty one.
    (cd "$TS" && node_modules/.bin/openapi-typescript "$SDKS/openapi.json" --empty-objects-unknown \
        --output "$out/typescript/$TS_TYPES" >/dev/null)
    node "$CS/codegen/generate.mjs" "$SDKS/openapi.json" "$out/csharp/$CS_MODELS"
}

case ${1:-} in
    install) install ;;
    generate)
        generate_into "$SDKS"
        echo "sdks: regenerated typescript/$TS_TYPES and csharp/$CS_MODELS from openapi.json" >&2 ;;
    check)
        tmp=$(mktemp -d)
        trap 'rm -rf "$tmp"' EXIT
        generate_into "$tmp"
        status=0
        for f in "typescript/$TS_TYPES" "csharp/$CS_MODELS"; do
            if ! cmp -s "$tmp/$f" "$SDKS/$f"; then
                echo "sdks/$f is not what sdks/openapi.json generates:" >&2
                diff -u "$SDKS/$f" "$tmp/$f" | head -n 40 >&2 || true
                status=1
            fi
        done
        if [ $status -ne 0 ]; then
            echo "Regenerate with \`just openapi\` (the document, then sdks/sdk.sh generate) and commit the result." >&2
            exit 1
        fi
        echo "sdks: the generated files are what sdks/openapi.json generates" >&2 ;;
    build-csharp)
        out=${2:?usage: sdks/sdk.sh build-csharp DIR}
        mkdir -p "$out"
        # C# 7.2, the newest mcs takes (Unity 2021.2+ compiles C# 9); warnings are errors.
        # Runtime: the base library and System.Net.Http (the default transport) only.
        mapfile -t runtime < <(find "$CS/Runtime" -name '*.cs' | LC_ALL=C sort)
        mcs -langversion:7.2 -warnaserror -nologo -target:library -r:System.Net.Http.dll \
            -out:"$out/Ledgerboard.Client.dll" "${runtime[@]}"
        mapfile -t tests < <(find "$CS/Tests~" -name '*.cs' | LC_ALL=C sort)
        mcs -langversion:7.2 -warnaserror -nologo -target:exe -r:System.Net.Http.dll \
            -r:"$out/Ledgerboard.Client.dll" -out:"$out/Ledgerboard.Client.Tests.exe" "${tests[@]}" ;;
    *)
        sed -n '2,6p' "$0" >&2
        exit 2 ;;
esac
