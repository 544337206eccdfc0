#!/usr/bin/env bash
# Instructions per relayed `tools/call`, counted by valgrind callgrind: the
# repeatable figure of BENCHMARKS.md ("misses"), whatever else runs on the box.
#
#   scripts/callgrind.sh [--calls N] [--conns C] [--bin PATH] [--keep] [--cache-sim]
#
# Builds (release) the gateway and the load bench of the tree this script is in;
# the bench binary doubles as the fast HTTP upstream (`__upstream-http`). --bin
# measures another gateway binary (e.g. a baseline worktree's) against the same
# upstream. The gateway runs under callgrind uninstrumented, one worker thread;
# after an MCP handshake and a warm-up, instrumentation is switched on for
# exactly N `tools/call` POSTs (wrk, C keep-alive connections, one session) and
# off again. Startup, handshake, warm-up, /metrics and shutdown are not counted;
# accepting wrk's C new connections is (spread over the N calls).
# --keep keeps the work directory (callgrind dump, logs) for callgrind_annotate.
# --cache-sim also simulates the caches (valgrind's model of this CPU's) and
# prints first-level instruction and data misses and last-level misses per call.
set -euo pipefail

CALLS=2000 CONNS=4 WARM=400 BIN="" KEEP=0 SIM=no
while [[ $# -gt 0 ]]; do
  case $1 in
    --calls) CALLS=$2; shift 2 ;;
    --conns) CONNS=$2; shift 2 ;;
    --bin) BIN=$(realpath "$2"); shift 2 ;;
    --keep) KEEP=1; shift ;;
    --cache-sim) SIM=yes; shift ;;
    -h|--help) sed -n 2,17p "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
for t in cargo valgrind callgrind_control wrk curl jq; do
  command -v "$t" >/dev/null || { echo "needs $t (apt-get install -y valgrind wrk curl jq)" >&2; exit 2; }
done
PER=$((CALLS / CONNS)); CALLS=$((PER * CONNS))   # wrk counts per connection
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d /tmp/callgrind.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [[ $KEEP = 1 ]]; then echo "kept $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Wait (bounded) until FILE has a line matching REGEX; print the first match.
wait_for() { # FILE REGEX SECS WHAT
  local end=$((SECONDS + $3)) m=""
  until m=$(grep -m1 -oE "$2" "$1" 2>/dev/null | head -1); [[ -n $m ]]; do
    (( SECONDS < end )) || { echo "no $4 within $3 s; see $1:" >&2; tail -n 5 "$1" >&2; exit 1; }
    sleep 0.2
  done
  echo "$m"
}

# 1. Build (cargo is a no-op when fresh). The load bench binary is the
#    upstream. The gateway is built on its own, as shipped: built with the
#    bench, cargo would give it the dev-dependencies' features (tokio
#    test-util, rmcp client; it measured ~1 % fewer). Both builds (even when
#    fresh) write target/release/mcp-ui-gateway, so the gateway is copied out
#    first; cargo's JSON names the executables.
GW=$TMP/mcp-ui-gateway
[[ -z $BIN ]] || cp "$BIN" "$GW"   # before cargo can replace it (same path)
echo "building (release) in $ROOT ..." >&2
exe() { jq -r --arg t "$1" 'select(.reason=="compiler-artifact" and .target.name==$t and .executable) | .executable' | tail -1; }
LOAD=$(cd "$ROOT" && cargo build --release --bench load --message-format=json-render-diagnostics | exe load)
if [[ -z $BIN ]]; then
  BIN=$(cd "$ROOT" && cargo build --release --bin mcp-ui-gateway --message-format=json-render-diagnostics | exe mcp-ui-gateway)
  cp "$BIN" "$GW"
fi
[[ -x $LOAD && -x $GW ]] || { echo "no load bench ($LOAD) or gateway ($BIN) binary" >&2; exit 1; }

# 2. The fast upstream, not under valgrind: it prints `listening PORT`. Two
#    tools are enough (the default 1,000 only slows its start).
cd "$TMP"   # no config/gateway.toml here: built-in defaults
"$LOAD" __upstream-http --tools 2 >up.out 2>up.log </dev/null & PIDS+=($!)
UPORT=$(wait_for up.out 'listening [0-9]+' 30 "upstream port" | cut -d' ' -f2)

# 3. The gateway under callgrind, uninstrumented until `callgrind_control -i on`
#    (fast start; -i is the switch callgrind_control has: with
#    --collect-atstart=no instead, nothing is ever counted). One worker: one event
#    loop, one upstream pool (callgrind serialises threads anyway). An empty
#    overlay directory: the call is relayed unchanged. Port 0: it prints its URL.
mkdir overlays
env -u RUST_LOG valgrind --tool=callgrind --instr-atstart=no --cache-sim=$SIM \
  --callgrind-out-file="$TMP/callgrind.out" --log-file="$TMP/valgrind.log" \
  "$GW" serve --listen 127.0.0.1:0 --workers 1 --overlays "$TMP/overlays" \
  --name bench --upstream "http://127.0.0.1:$UPORT/mcp" >gw.out 2>gw.log </dev/null & GWPID=$!
PIDS+=($GWPID)
URL=$(wait_for gw.out 'http://[^ ]+/mcp' 180 "gateway endpoint")   # the first URL on the line
BASE=${URL%/mcp}

# 4. An MCP session: initialize (the Mcp-Session-Id response header, sealed by
#    the gateway), notifications/initialized, and one checked call.
H=(-sS --max-time 60 -H 'Content-Type: application/json'
   -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2025-06-18')
curl "${H[@]}" -D init.hdr -o init.body "$URL" \
  -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"callgrind.sh","version":"0"}}}'
SESSION=$(grep -i '^mcp-session-id:' init.hdr | cut -d' ' -f2 | tr -d '\r')
[[ -n $SESSION ]] || { echo "no Mcp-Session-Id from initialize:" >&2; cat init.hdr init.body >&2; exit 1; }
H+=(-H "Mcp-Session-Id: $SESSION")
curl "${H[@]}" -o /dev/null "$URL" -d '{"jsonrpc":"2.0","method":"notifications/initialized"}'
BODY='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}'
curl "${H[@]}" "$URL" -d "$BODY" | grep -q '"hello"' || { echo "tools/call through the gateway failed" >&2; exit 1; }

# 5. wrk: one connection per thread, each stops after exactly PER answers
#    (response() counts; stop() ends its loop before another request is sent)
#    and leaves a file done.<thread>. wrk itself only ends at -d or on SIGINT,
#    so the script sends SIGINT once every thread is done. Distinct ids per
#    request, as a real client sends.
cat >calls.lua <<EOF
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2025-06-18"
wrk.headers["Mcp-Session-Id"] = "$SESSION"
local per = tonumber(os.getenv("PER"))
n, bad, id = 0, 0, 0
function request()
  id = id + 1
  return wrk.format(nil, nil, nil,
    '{"jsonrpc":"2.0","id":' .. id .. ',"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}')
end
function response(status, headers, body)
  n = n + 1
  if status ~= 200 or not body:find('"hello"', 1, true) then bad = bad + 1 end
  if n == per then
    wrk.thread:stop()
    io.open("done." .. tid, "w"):close()
  end
end
local threads = {}
function setup(t) table.insert(threads, t); t:set("tid", #threads) end
function done()
  local total, errs = 0, 0
  for _, t in ipairs(threads) do total = total + t:get("n"); errs = errs + t:get("bad") end
  io.write(string.format("answers %d bad %d\n", total, errs))
end
EOF
run_wrk() { # PER_CONNECTION
  rm -f done.*
  PER=$1 wrk -t"$CONNS" -c"$CONNS" -d300s --timeout 30s -s calls.lua "$URL" >wrk.out 2>&1 &
  local w=$! end=$((SECONDS + 300)); PIDS+=($w)
  while (( $(ls done.* 2>/dev/null | wc -l) < CONNS )) && (( SECONDS < end )) && kill -0 $w 2>/dev/null; do
    sleep 0.1
  done
  kill -INT $w 2>/dev/null || true
  wait $w || true
  grep -q "answers $(($1 * CONNS)) bad 0$" wrk.out || { echo "wrk did not get every answer right:" >&2; cat wrk.out >&2; exit 1; }
}
# The gateway's own count of relayed tools/call (every outcome), from /metrics.
relayed() {
  curl -sS --max-time 60 "$BASE/metrics" |
    awk '/^mcp_gateway_requests_total\{.*method="tools\/call"/ { s += $NF } END { print s + 0 }'
}
ctl() { timeout 120 callgrind_control "$@" "$GWPID" >>ctl.log 2>&1 || { echo "callgrind_control $* failed:" >&2; cat ctl.log >&2; exit 1; }; }

# 6. Warm-up (caches, allocator, the upstream pool's connections), then count
#    exactly the measured calls.
run_wrk $((WARM / CONNS))
before=$(relayed)
ctl -i on
run_wrk "$PER"
ctl -i off
after=$(relayed)
ctl -d
DUMP=$(ls -t "$TMP"/callgrind.out.* | head -1)
# totals: the sum of the dumped costs (summary: is zeroed by -i off).
IR=$(awk '/^totals:/ { print $2; exit }' "$DUMP")
N=$((after - before))
[[ $N = "$CALLS" ]] || echo "note: the gateway relayed $N tools/call, wrk asked for $CALLS" >&2
echo "total Ir $IR over $N calls; gateway $BIN" >&2
echo "instructions per tools/call: $((IR / N)) ($N calls, $CONNS connections, session on)"
if [[ $SIM = yes ]]; then
  # events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
  awk -v n="$N" '/^totals:/ { printf "per call: I1 misses %d, D1 misses %d, last-level misses %d\n", $5 / n, ($6 + $7) / n, ($8 + $9 + $10) / n; exit }' "$DUMP"
fi
