#!/usr/bin/env bash
# The whole test suite, as CI runs it: install the pinned real peers
# (idempotent, fast when already installed), then every Rust test: unit,
# in-process integration (rmcp fixtures) and the real-peer tests.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

echo "[test-all] installing pinned peers"
scripts/install-peers.sh

echo "[test-all] cargo test"
cargo test --all-targets --locked "$@"
