#!/usr/bin/env bash
# Soak the release gateway: 1,000 sessions for 10 minutes (after a 60 s
# warm-up) with mixed calls and overlay reloads, all on 127.0.0.1.
# See examples/soak/ for what it drives and checks.
#
#   scripts/soak.sh                          # 1,000 sessions, 600 s
#   SOAK_SESSIONS=100 SOAK_SECS=30 SOAK_WARMUP_SECS=10 scripts/soak.sh   # a quick run
#
# Other knobs: SOAK_RATE (calls/s, default 100), SOAK_STDIO_PERCENT (default 5),
# SOAK_RELOAD_SECS (default 5). Extra arguments go to the driver.
# Prints the report; exits non-zero when any call failed or the gateway's RSS
# grew by more than 10 % from start to end.
set -euo pipefail

cd "$(dirname "$0")/.."
SESSIONS=${SOAK_SESSIONS:-1000}
SECS=${SOAK_SECS:-600}
WARMUP=${SOAK_WARMUP_SECS:-60}
RATE=${SOAK_RATE:-100}
STDIO=${SOAK_STDIO_PERCENT:-5}
RELOAD=${SOAK_RELOAD_SECS:-5}

echo "soak: building the release gateway, fixture server and driver"
timeout 3600 cargo build --release --locked --bins --example soak

# Each session holds connections; stdio sessions also hold a child's pipes.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

echo "soak: commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u +%Y-%m-%dT%H:%MZ)"
exec timeout $((SECS + WARMUP + 600)) target/release/examples/soak \
    --sessions "$SESSIONS" --secs "$SECS" --warmup-secs "$WARMUP" --rate "$RATE" \
    --stdio-percent "$STDIO" --reload-secs "$RELOAD" \
    --gateway-bin target/release/mcp-ui-gateway \
    --fixture-bin target/release/mcp-fixture-server \
    --overlays overlays "$@"
