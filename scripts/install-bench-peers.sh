#!/usr/bin/env bash
# Install the load bench's Rust peer: `mcp-proxy` (crates.io), an MCP gateway
# built on tower, pinned to one version and built with its own Cargo.lock
# (`cargo install --locked`), into tests/peers/.cargo-bench/bin. The load bench
# (`cargo bench --bench load`) runs this before its sweep; the test suite does
# not need it. The first build takes several minutes; later runs find the
# binary and do nothing. nginx and haproxy, the bench's other references, come
# from scripts/install-peers.sh.
set -euo pipefail

VERSION=0.6.0
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="$ROOT/tests/peers/.cargo-bench"
BIN="$DEST/bin/mcp-proxy"

step() { printf '[install-bench-peers] %s\n' "$*"; }

if [[ -x $BIN ]] && [[ "$(cat "$DEST/.version" 2>/dev/null)" == "$VERSION" ]]; then
    exit 0
fi
command -v cargo >/dev/null || { echo "cargo not found" >&2; exit 1; }
step "building mcp-proxy $VERSION from crates.io (cargo install --locked; several minutes the first time) …"
rm -f "$DEST/.version"
# Its own target folder, outside the project's, so the bench's build is untouched.
timeout --kill-after=10 3600 cargo install --locked --quiet mcp-proxy --version "$VERSION" \
    --root "$DEST" --target-dir "$DEST/build"
rm -rf "$DEST/build"
echo "$VERSION" >"$DEST/.version"
step "mcp-proxy $VERSION installed: $BIN"
