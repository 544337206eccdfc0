#!/usr/bin/env bash
# The whole test suite, as CI runs it: install the pinned real peers
# (idempotent, fast when already installed), check the module graph has no
# cycle, the deployment files (scripts/check-deploy.sh), formatting and lints,
# then every Rust test: each crate's unit tests and the integration tests, one
# binary (tests/gateway.rs): in-process (rmcp fixtures) and against the real
# peers (the scale-out test behind HAProxy among them).
set -euo pipefail
case "${1:-}" in
    -h|--help)
        cat <<'USAGE'
scripts/test-all.sh [CARGO TEST ARGUMENTS...]

The whole test suite, as CI runs it (.ci/run): installs the pinned test peers
(scripts/install-peers.sh: npm and Python peers from their lock files, Node 22,
and Debian's chromium, nginx and haproxy with apt-get, which needs root), checks
the module graph, the deployment files, formatting and lints, then runs every
Rust test. Arguments go to `cargo test --all-targets --locked`, e.g.
`scripts/test-all.sh --no-fail-fast` or `scripts/test-all.sh -- --nocapture`.

Needs: Linux on x86_64 with apt-get (Debian or Ubuntu) as root, Rust 1.88+ with
rustfmt and clippy, Node.js 20+ with npm, Python 3.11+ with venv and pip, and
network access to the npm registry, PyPI and the Debian mirrors.
USAGE
        exit 0
        ;;
esac
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
