#!/usr/bin/env bash
# The whole test suite, as CI runs it: install the pinned real peers
# (idempotent, fast when already installed), check the module graph has no
# cycle, the deployment files (scripts/check-deploy.sh), formatting and lints,
# then every Rust test: unit, in-process integration (rmcp fixtures) and the
# real-peer tests (the scale-out test behind HAProxy among them).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# A run from scratch gains nothing from incremental compilation, whose cache
# would take gigabytes beside the build (set CARGO_INCREMENTAL=1 to keep it).
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

echo "[test-all] installing pinned peers"
scripts/install-peers.sh

echo "[test-all] module graph (no cycle)"
python3 scripts/module-graph.py

echo "[test-all] deploy/: Dockerfile lint, kustomize render, Kubernetes schemas"
scripts/check-deploy.sh

echo "[test-all] cargo fmt --check"
cargo fmt --all --check

echo "[test-all] cargo clippy (lints in Cargo.toml and clippy.toml)"
cargo clippy --all-targets --locked -- -D warnings

echo "[test-all] cargo test"
cargo test --all-targets --locked "$@"
