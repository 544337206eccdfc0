#!/usr/bin/env bash
# What tracing costs on the request path (BENCHMARKS.md "Tracing"): the bundled
# demo over HTTP as the upstream, an OTLP sink (tests/otlp/receiver.py
# --discard), and three release gateways of one worker each in front of the
# demo: tracing off, sampled at 100 % (always_on) and at 1 % (traceidratio
# 0.01). `cargo bench --bench load` then calls `tools/call list_tasks` through
# the three in turns, at each concurrency.
#
#   scripts/bench-tracing.sh                    # the measurement: --conc 1,8 --secs 3
#   scripts/bench-tracing.sh --conc 1 --secs 1  # a quick check that it runs
#
# Loopback only. Every process it starts is ended by its PID on exit; every
# wait is bounded. Run it on a quiet machine and compare the ratios to `off`.
set -euo pipefail
cd "$(dirname "$0")/.."

CONC=1,8
SECS=3
while [ $# -gt 0 ]; do
    case "$1" in
    --conc) CONC="$2"; shift 2 ;;
    --secs) SECS="$2"; shift 2 ;;
    *) echo "usage: $0 [--conc LIST] [--secs N]" >&2; exit 2 ;;
    esac
done

PYTHON=tests/peers/.venv/otlp/bin/python
if [ ! -x "$PYTHON" ]; then
    echo "$PYTHON is missing: run \`bash scripts/install-peers.sh\` first" >&2
    exit 1
fi

cargo build --release --locked --bin mcp-ui-gateway
GATEWAY=target/release/mcp-ui-gateway

WORK=$(mktemp -d)
PIDS=()
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${PIDS[@]}"; do
        # Bounded: 5 s each, then SIGKILL.
        for _ in $(seq 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Free loopback ports, chosen by the kernel.
read -r DEMO OFF_PORT ALL_PORT ONE_PORT < <("$PYTHON" - <<'EOF'
import socket
socks = [socket.socket() for _ in range(4)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))
EOF
)

# Wait (at most 30 s) until `url` answers.
wait_for() {
    for _ in $(seq 300); do
        curl -fsS -o /dev/null --max-time 1 "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "$1 did not answer within 30 s" >&2
    return 1
}

"$GATEWAY" demo-server --http "127.0.0.1:$DEMO" >"$WORK/demo.log" 2>&1 &
PIDS+=($!)

"$PYTHON" tests/otlp/receiver.py /dev/null --discard >"$WORK/receiver.log" 2>&1 &
PIDS+=($!)
SINK=
for _ in $(seq 300); do
    SINK=$(sed -n 's/^listening \([0-9]*\)$/\1/p' "$WORK/receiver.log")
    [ -n "$SINK" ] && break
    sleep 0.1
done
if [ -z "$SINK" ]; then
    echo "the OTLP receiver did not start:" >&2
    cat "$WORK/receiver.log" >&2
    exit 1
fi

G=(serve --overlays /nonexistent --upstream "http://127.0.0.1:$DEMO/mcp")
OTLP=(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$SINK")
env MCP_UI_GATEWAY_WORKERS=1 \
    "$GATEWAY" "${G[@]}" --listen "127.0.0.1:$OFF_PORT" >"$WORK/off.log" 2>&1 &
OFF=$!
PIDS+=($OFF)
env MCP_UI_GATEWAY_WORKERS=1 "${OTLP[@]}" OTEL_TRACES_SAMPLER=always_on \
    "$GATEWAY" "${G[@]}" --listen "127.0.0.1:$ALL_PORT" >"$WORK/on100.log" 2>&1 &
ALL=$!
PIDS+=($ALL)
env MCP_UI_GATEWAY_WORKERS=1 "${OTLP[@]}" OTEL_TRACES_SAMPLER=traceidratio OTEL_TRACES_SAMPLER_ARG=0.01 \
    "$GATEWAY" "${G[@]}" --listen "127.0.0.1:$ONE_PORT" >"$WORK/on1.log" 2>&1 &
ONE=$!
PIDS+=($ONE)

for port in $OFF_PORT $ALL_PORT $ONE_PORT; do
    if ! wait_for "http://127.0.0.1:$port/healthz"; then
        tail -n 20 "$WORK"/*.log >&2
        exit 1
    fi
done

# Bounded: the turns take about 3 targets x concurrencies x SECS, plus warm-up
# and, the first time, the bench's build.
timeout 1800 cargo bench --locked --bench load -- \
    --target "off=http://127.0.0.1:$OFF_PORT/mcp" \
    --target "on100=http://127.0.0.1:$ALL_PORT/mcp" \
    --target "on1=http://127.0.0.1:$ONE_PORT/mcp" \
    --pid "off=$OFF" --pid "on100=$ALL" --pid "on1=$ONE" \
    --call tools/call --params '{"name":"list_tasks","arguments":{}}' \
    --conc "$CONC" --secs "$SECS"

# Whether the 100 % gateway's queue kept up (dropped spans skew nothing on the
# request path, but say the sink or the export thread fell behind).
echo
echo "spans of the sampled gateways (mcp_gateway_otlp_spans_total):"
for t in "on100 $ALL_PORT" "on1 $ONE_PORT"; do
    set -- $t
    curl -fsS --max-time 5 "http://127.0.0.1:$2/metrics" |
        sed -n "s/^mcp_gateway_otlp_spans_total/  $1 /p"
done
