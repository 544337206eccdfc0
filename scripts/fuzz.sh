#!/usr/bin/env bash
# Fuzz the pure core for a bounded time per target (cargo-fuzz, libFuzzer).
#
#   scripts/fuzz.sh                     # every target, 60 s each
#   FUZZ_SECS=300 scripts/fuzz.sh sse_parse
#   FUZZ_NO_BUILD=1 scripts/fuzz.sh        # reuse the targets built last
#
# Targets: jsonrpc_classify (crates/wire/src/jsonrpc.rs), sse_parse (crates/wire/src/sse.rs),
# overlay_load (crates/overlay/src/overlay/load.rs), rewrite_tools_list (crates/rewrite/src/plan.rs,
# crates/rewrite/src/rewrite/tools.rs). Seed corpora come from the repository (tests/golden,
# overlays/, fuzz/seeds) and grow in fuzz/corpus/<target> (not committed).
# Prints execs, execs/s, corpus size and crashes per target; exits 1 when a
# target crashed, naming the artifact (fuzz/artifacts/<target>/crash-*), which
# `cargo +nightly fuzz run -O <target> <artifact>` replays. Logs: fuzz/artifacts/<target>.log.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
SECS=${FUZZ_SECS:-60}
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(jsonrpc_classify sse_parse overlay_load rewrite_tools_list)

if ! rustup toolchain list | grep -q '^nightly'; then
    echo "fuzz: installing the nightly toolchain (cargo-fuzz needs it)"
    timeout 900 rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz"
    timeout 900 cargo install cargo-fuzz --locked
fi

# Seed corpora, rebuilt from the repository on every run (the grown corpus is kept).
seed() { # target name < content
    mkdir -p "fuzz/corpus/$1"
    cat > "fuzz/corpus/$1/seed-$2"
}
envelope() { # file -> a JSON-RPC response carrying the file as its result
    printf '{"jsonrpc":"2.0","id":1,"result":'
    cat "$1"
    printf '}'
}
for f in tests/golden/input/*.json tests/golden/expected/*.json; do
    name=$(basename "$f" .json)
    envelope "$f" | seed jsonrpc_classify "$name"
    { printf '\000'; envelope "$f"; } | seed rewrite_tools_list "$name"
done
for f in fuzz/seeds/jsonrpc_classify/*; do seed jsonrpc_classify "$(basename "$f")" < "$f"; done
for f in fuzz/seeds/sse_parse/*; do seed sse_parse "$(basename "$f")" < "$f"; done
for f in fuzz/seeds/overlay_load/*; do seed overlay_load "$(basename "$f")" < "$f"; done
# overlay_load: mount file, then widget.toml, entry HTML, app.js, style.css, NUL-separated.
widget_parts() { # mount-file widget-dir
    cat "$1"
    for part in widget.toml index.html app.js style.css; do
        printf '\000'
        if [ -f "$2/$part" ]; then cat "$2/$part"; fi
    done
}
widget_parts overlays/demo.toml overlays/widgets/task-board | seed overlay_load demo
for m in tests/golden/overlays/*.toml tests/golden/overlays/*.json; do
    for w in tests/golden/overlays/widgets/*/; do
        widget_parts "$m" "$w" | seed overlay_load "$(basename "$m")-$(basename "$w")"
    done
done

cd fuzz
echo "fuzz: building ${TARGETS[*]}"
if [ -n "${FUZZ_NO_BUILD:-}" ]; then
    echo "fuzz: FUZZ_NO_BUILD set; using the targets built last"
elif [ $# -eq 0 ]; then
    timeout 3600 cargo +nightly fuzz build -O
else
    for target in "${TARGETS[@]}"; do
        timeout 3600 cargo +nightly fuzz build -O "$target"
    done
fi
BIN="$ROOT/fuzz/target/x86_64-unknown-linux-gnu/release"
SUMMARY=()
FAILED=0
for target in "${TARGETS[@]}"; do
    log="$ROOT/fuzz/artifacts/$target.log"
    mkdir -p "$ROOT/fuzz/artifacts/$target"
    echo "fuzz: $target for ${SECS} s"
    start=$(date +%s)
    status=0
    timeout $((SECS + 300)) "$BIN/$target" "$ROOT/fuzz/corpus/$target" \
        -artifact_prefix="$ROOT/fuzz/artifacts/$target/" \
        -max_total_time="$SECS" -print_final_stats=1 -max_len=65536 -timeout=10 \
        >"$log" 2>&1 || status=$?
    took=$(( $(date +%s) - start ))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    corpus=$(find "$ROOT/fuzz/corpus/$target" -type f | wc -l)
    artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
    if [ "$status" -eq 0 ]; then
        verdict="ok"
    elif [ "$status" -eq 124 ] && [ -z "$artifact" ]; then
        FAILED=1
        verdict="STOPPED by the wall-clock guard ($((SECS + 300)) s), no crash; see $log"
    else
        FAILED=1
        verdict="CRASH (exit $status) ${artifact:-see $log}"
        tail -n 40 "$log"
    fi
    SUMMARY+=("$(printf '%-20s %6ss %12s execs %8s/s %6s corpus  %s' \
        "$target" "$took" "${execs:-?}" "${rate:-?}" "$corpus" "$verdict")")
done
rm -rf /dev/shm/mcp-ui-gateway-fuzz-overlay-* 2>/dev/null || true

echo
echo "fuzz summary ($(date -u +%Y-%m-%dT%H:%MZ), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), ${SECS} s per target)"
printf '%s\n' "${SUMMARY[@]}"
exit "$FAILED"
